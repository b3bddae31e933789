// One Call of the C API, blocking or nonblocking: the only place that names
// the collectives' C functions.
#include "binding.h"

namespace chorus_py {

chorus_result_t issue(const Call& c, chorus_comm_t comm, chorus_request_t* req) {
    const void* s = c.send;
    void* r = c.recv;
    const size_t* counts = c.counts.empty() ? nullptr : c.counts.data();
    const size_t* displs = c.displs.empty() ? nullptr : c.displs.data();
    const size_t* scounts = c.send_counts.empty() ? nullptr : c.send_counts.data();
    const size_t* sdispls = c.send_displs.empty() ? nullptr : c.send_displs.data();
    const auto dt = c.dtype;
    void* st = c.stream;
    switch (c.coll) {
        case Coll::Allreduce:
            return req ? chorus_iallreduce(s, r, c.count, dt, c.op, comm, st, req)
                       : chorus_allreduce(s, r, c.count, dt, c.op, comm, st);
        case Coll::Broadcast:
            return req ? chorus_ibroadcast(s, r, c.count, dt, c.root, comm, st, req)
                       : chorus_broadcast(s, r, c.count, dt, c.root, comm, st);
        case Coll::Reduce:
            return req ? chorus_ireduce(s, r, c.count, dt, c.op, c.root, comm, st, req)
                       : chorus_reduce(s, r, c.count, dt, c.op, c.root, comm, st);
        case Coll::ReduceScatter:
            return req ? chorus_ireduce_scatter(s, r, c.count, dt, c.op, comm, st, req)
                       : chorus_reduce_scatter(s, r, c.count, dt, c.op, comm, st);
        case Coll::ReduceScatterv:
            return req ? chorus_ireduce_scatterv(s, r, counts, dt, c.op, comm, st, req)
                       : chorus_reduce_scatterv(s, r, counts, dt, c.op, comm, st);
        case Coll::Allgather:
            return req ? chorus_iallgather(s, r, c.count, dt, comm, st, req)
                       : chorus_allgather(s, r, c.count, dt, comm, st);
        case Coll::Allgatherv:
            return req ? chorus_iallgatherv(s, c.count, r, counts, displs, dt, comm, st, req)
                       : chorus_allgatherv(s, c.count, r, counts, displs, dt, comm, st);
        case Coll::Alltoall:
            return req ? chorus_ialltoall(s, r, c.count, dt, comm, st, req)
                       : chorus_alltoall(s, r, c.count, dt, comm, st);
        case Coll::Alltoallv:
            return req ? chorus_ialltoallv(s, scounts, sdispls, r, counts, displs, dt, comm, st, req)
                       : chorus_alltoallv(s, scounts, sdispls, r, counts, displs, dt, comm, st);
        case Coll::Gather:
            return req ? chorus_igather(s, r, c.count, dt, c.root, comm, st, req)
                       : chorus_gather(s, r, c.count, dt, c.root, comm, st);
        case Coll::Gatherv:
            return req ? chorus_igatherv(s, c.count, r, counts, displs, dt, c.root, comm, st, req)
                       : chorus_gatherv(s, c.count, r, counts, displs, dt, c.root, comm, st);
        case Coll::Scatter:
            return req ? chorus_iscatter(s, r, c.count, dt, c.root, comm, st, req)
                       : chorus_scatter(s, r, c.count, dt, c.root, comm, st);
        case Coll::Scatterv:
            return req ? chorus_iscatterv(s, counts, displs, r, c.count, dt, c.root, comm, st, req)
                       : chorus_scatterv(s, counts, displs, r, c.count, dt, c.root, comm, st);
        case Coll::Barrier: return req ? chorus_ibarrier(comm, st, req) : chorus_barrier(comm, st);
    }
    return CHORUS_ERR_INTERNAL;
}

}  // namespace chorus_py
