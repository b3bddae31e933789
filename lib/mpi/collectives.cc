// The intercepted MPI collectives. Each one opens the gate (policy, thread
// level), checks that Chorus computes exactly what MPI defines for the
// arguments every rank agrees on, and then runs the call through Chorus on
// the communicator's Chorus twin; anything else goes to the PMPI function.
//
// Reductions need the same (count, datatype, op) on every rank, so they are
// mapped element for element. Broadcast and all-gather only need matching
// type signatures, which may be spelled differently on different ranks, so
// they always move bytes: a predefined type in place, anything else packed
// and unpacked around the call. Either way every rank runs the same Chorus
// collective with the same byte count.
//
// While a rank waits for Chorus it also drives MPI's progress engine: a
// correct program may have a peer blocked in MPI_Recv for a message this
// rank sent with MPI_Isend before the collective, and over TCP or shared
// memory without single-copy that message moves only while the sender is
// inside MPI. The wait is the library's (spin, yield, nap: CHORUS_SPIN);
// the interposer's idle hook turns MPI's progress engine meanwhile.
#include <vector>

#include "intercept.h"

namespace chorus_mpi {

// allreduce's call handed to PMPI, each buffer through `st` (to_pmpi,
// quick_pmpi): made only where the call goes there.
auto allreduce_pmpi(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                    MPI_Request* request) {
    return [=](auto& st) {
        const size_t n = elems(count);
        void* r = st.view(recvbuf, n, type, sendbuf == MPI_IN_PLACE, true);
        const void* s = st.view(sendbuf, n, type, true, false);
        return st.failed() ? MPI_ERR_OTHER
                           : either(request, PMPI_Allreduce, PMPI_Iallreduce, s, r, count, type, op, comm);
    };
}

// allreduce and reduce_scatter_block: one count (of the result, on every
// rank) for both buffers, mapped element for element; in place, the input
// is in recvbuf (for reduce_scatter_block every block, the result landing
// at its start).
template <typename Blocking, typename Nonblocking, typename MakePmpi>
[[gnu::always_inline]] inline int reduction(Fn fn, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                                            MPI_Op op, MPI_Comm comm, MPI_Request* request, Blocking blocking,
                                            Nonblocking nonblocking, MakePmpi make_pmpi) {
    if (int rc; !request && quick_reduction(fn, comm, sendbuf, recvbuf, count, type, op, blocking, make_pmpi, &rc))
        return rc;  // the quick way (intercept.h)
    auto pmpi = make_pmpi(sendbuf, recvbuf, count, type, op, comm, request);
    return intercept(fn, comm, request, pmpi, [&](Call& call) -> int {
        chorus_datatype_t dt;
        chorus_op_t cop;
        if (count < 0 || !map_reduction(type, op, &dt, &cop)) return kPassThrough;
        Twin twin(fn, comm);
        if (!twin.ok) return twin.rc;
        if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
        if (!call.chorus_turn(twin.t, elems(count) * elem_bytes(dt), mpi_may_differ(dt, cop))) return kPassThrough;
        const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
        return call.run(twin.t, [&](chorus_request_t* r) {
            return either(r, blocking, nonblocking, send, recvbuf, static_cast<size_t>(count), dt, cop, twin.t.cc,
                          nullptr);
        });
    });
}

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
              MPI_Request* request) {
    return reduction(which(kAllreduce, request), sendbuf, recvbuf, count, type, op, comm, request, chorus_allreduce,
                     chorus_iallreduce, allreduce_pmpi);
}

// reduce's call handed to PMPI, each buffer through `st` (to_pmpi,
// quick_pmpi): made only where the call goes there.
auto reduce_pmpi(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                 MPI_Request* request) {
    return [=](auto& st) {
        // Intercommunicator: the root group passes MPI_ROOT or MPI_PROC_NULL.
        const bool inter = st.refusing();
        const bool is_root = inter ? root == MPI_ROOT : st.enabled() && rank_of(comm) == root;
        const bool sends = inter ? root != MPI_ROOT && root != MPI_PROC_NULL : true;
        const size_t n = elems(count);
        void* r = is_root ? st.view(recvbuf, n, type, sendbuf == MPI_IN_PLACE, true) : recvbuf;
        const void* s = sends ? st.view(sendbuf, n, type, true, false) : sendbuf;
        return st.failed() ? MPI_ERR_OTHER
                           : either(request, PMPI_Reduce, PMPI_Ireduce, s, r, count, type, op, root, comm);
    };
}

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
           MPI_Request* request) {
    const Fn fn = which(kReduce, request);
    if (!request && count >= 0) {  // the quick way (intercept.h)
        Target t;
        chorus_datatype_t dt;
        chorus_op_t cop;
        if (quick_target(comm, &t) && root >= 0 && root < t.size && map_reduction(type, op, &dt, &cop)) {
            const bool is_root = t.rank == root;
            if (is_root ? recvbuf != MPI_IN_PLACE : sendbuf != MPI_IN_PLACE) {
                const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
                void* recv = is_root ? recvbuf : nullptr;
                QuickWay way(fn, comm, t, t.tuner ? elems(count) * elem_bytes(dt) : 0, mpi_may_differ(dt, cop));
                if (way.to_mpi())
                    return quick_pmpi(fn, comm, reduce_pmpi(sendbuf, recvbuf, count, type, op, root, comm, nullptr));
                return quick_run(fn, comm, t, [&] {
                    return chorus_reduce(send, recv, static_cast<size_t>(count), dt, cop, root, t.cc, nullptr);
                });
            }
        }
    }
    auto pmpi = reduce_pmpi(sendbuf, recvbuf, count, type, op, root, comm, request);
    return intercept(fn, comm, request, pmpi, [&](Call& call) -> int {
        chorus_datatype_t dt;
        chorus_op_t cop;
        if (count < 0 || !map_reduction(type, op, &dt, &cop)) return kPassThrough;
        Twin twin(fn, comm);
        if (!twin.ok) return twin.rc;
        if (root < 0 || root >= twin.t.size) return kPassThrough;  // MPI reports it
        const bool is_root = twin.t.rank == root;
        if (sendbuf == MPI_IN_PLACE && !is_root) return misuse(fn, comm, "MPI_IN_PLACE is valid on the root only");
        if (is_root && recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
        if (!call.chorus_turn(twin.t, elems(count) * elem_bytes(dt), mpi_may_differ(dt, cop))) return kPassThrough;
        const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
        void* recv = is_root ? recvbuf : nullptr;
        return call.run(twin.t, [&](chorus_request_t* r) {
            return either(r, chorus_reduce, chorus_ireduce, send, recv, static_cast<size_t>(count), dt, cop, root,
                          twin.t.cc, nullptr);
        });
    });
}

// reduce_scatter_block's call handed to PMPI, each buffer through `st` (to_pmpi,
// quick_pmpi): made only where the call goes there.
auto reduce_scatter_block_pmpi(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op,
                               MPI_Comm comm, MPI_Request* request) {
    return [=](auto& st) {
        const size_t n = elems(recvcount), p = st.enabled() ? size_of(comm) : 0;
        const bool in_place = sendbuf == MPI_IN_PLACE;
        void* r = st.view(recvbuf, in_place ? n * p : n, type, in_place, true);
        const void* s = st.view(sendbuf, n * p, type, true, false);
        return st.failed() ? MPI_ERR_OTHER
                           : either(request, PMPI_Reduce_scatter_block, PMPI_Ireduce_scatter_block, s, r, recvcount,
                                    type, op, comm);
    };
}

int reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                         MPI_Request* request) {
    return reduction(which(kReduceScatterBlock, request), sendbuf, recvbuf, recvcount, type, op, comm, request,
                     chorus_reduce_scatter, chorus_ireduce_scatter, reduce_scatter_block_pmpi);
}

int reduce_scatter(const void* sendbuf, void* recvbuf, const int* recvcounts, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kReduceScatter, request);
    return intercept(
        fn, comm, request,
        [&](HostStaging& st) {
            size_t total = 0, mine = 0;
            if (st.enabled() && recvcounts) {
                const size_t p = size_of(comm), me = static_cast<size_t>(rank_of(comm));
                for (size_t i = 0; i < p; ++i) total += elems(recvcounts[i]);
                mine = me < p ? elems(recvcounts[me]) : 0;
            }
            const bool in_place = sendbuf == MPI_IN_PLACE;
            void* r = st.view(recvbuf, in_place ? total : mine, type, in_place, true);
            const void* s = st.view(sendbuf, total, type, true, false);
            return st.failed()
                       ? MPI_ERR_OTHER
                       : either(request, PMPI_Reduce_scatter, PMPI_Ireduce_scatter, s, r, recvcounts, type, op, comm);
        },
        [&](Call& call) -> int {
            chorus_datatype_t dt;
            chorus_op_t cop;
            if (!recvcounts || !map_reduction(type, op, &dt, &cop)) return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            SmallVector<size_t, 16> counts;
            counts.resize(static_cast<size_t>(twin.t.size));
            for (int i = 0; i < twin.t.size; ++i) {
                if (recvcounts[i] < 0) return kPassThrough;  // the same on every rank; MPI reports it
                counts[static_cast<size_t>(i)] = static_cast<size_t>(recvcounts[i]);
            }
            size_t total = 0;  // every rank has every count
            for (size_t c : counts) total += c;
            if (!call.chorus_turn(twin.t, total * elem_bytes(dt), mpi_may_differ(dt, cop))) return kPassThrough;
            const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
            // Chorus copies the counts when it starts the call.
            return call.run(twin.t, [&](chorus_request_t* r) {
                return either(r, chorus_reduce_scatterv, chorus_ireduce_scatterv, send, recvbuf, counts.data(), dt, cop,
                              twin.t.cc, nullptr);
            });
        });
}

// Broadcast and all-gather move bytes: a predefined type in place, any other
// one packed around the call (Blocks), as in movement.cc.
// bcast's call handed to PMPI, each buffer through `st` (to_pmpi,
// quick_pmpi): made only where the call goes there.
auto bcast_pmpi(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request) {
    return [=](auto& st) {
        bool reads, writes;
        if (st.refusing()) {
            reads = root == MPI_ROOT;
            writes = root != MPI_ROOT && root != MPI_PROC_NULL;
        } else {
            reads = st.enabled() && rank_of(comm) == root;
            writes = !reads;
        }
        void* b = reads || writes ? st.view(buffer, elems(count), type, reads, writes) : buffer;
        return st.failed() ? MPI_ERR_OTHER : either(request, PMPI_Bcast, PMPI_Ibcast, b, count, type, root, comm);
    };
}

int bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kBcast, request);
    if (!request && count >= 0 && buffer != MPI_IN_PLACE) {  // the quick way (intercept.h)
        Target t;
        size_t unit;
        if (quick_target(comm, &t) && root >= 0 && root < t.size && (unit = basic_size(type)) != 0) {
            const size_t bytes = elems(count) * unit;
            QuickWay way(fn, comm, t, bytes);
            if (way.to_mpi()) return quick_pmpi(fn, comm, bcast_pmpi(buffer, count, type, root, comm, nullptr));
            return quick_run(fn, comm, t, [&] {
                return chorus_broadcast(buffer, buffer, bytes, CHORUS_UINT8, root, t.cc, nullptr);
            });
        }
    }
    auto pmpi = bcast_pmpi(buffer, count, type, root, comm, request);
    return intercept(fn, comm, request, pmpi, [&](Call& call) -> int {
        Layout unit;
        if (count < 0 || !layout_of(type, 1, &unit)) return kPassThrough;
        Twin twin(fn, comm);
        if (!twin.ok) return twin.rc;
        if (buffer == MPI_IN_PLACE) return misuse(fn, comm, "buffer cannot be MPI_IN_PLACE");
        if (root < 0 || root >= twin.t.size) return kPassThrough;
        if (!call.chorus_turn(twin.t, elems(count) * unit.bytes)) return kPassThrough;
        if (unit.direct)  // a contiguous type: the user's bytes, nothing to describe or stage
            return call.run(twin.t, [&](chorus_request_t* r) {
                return either(r, chorus_broadcast, chorus_ibroadcast, buffer, buffer, elems(count) * unit.bytes,
                              CHORUS_UINT8, root, twin.t.cc, nullptr);
            });
        const bool is_root = twin.t.rank == root;
        Blocks& buf = call.pending().recv;
        int rc = buf.init(fn, comm, buffer, type, unit, Shape::one(count), is_root, !is_root);
        if (rc == MPI_SUCCESS && is_root) rc = buf.pack_all();
        if (rc != MPI_SUCCESS) return rc;
        return call.run(twin.t, [&](chorus_request_t* r) {
            return either(r, chorus_broadcast, chorus_ibroadcast, buf.base(), buf.base(), buf.bytes(0), CHORUS_UINT8,
                          root, twin.t.cc, nullptr);
        });
    });
}

// allgather's call handed to PMPI, each buffer through `st` (to_pmpi,
// quick_pmpi): made only where the call goes there.
auto allgather_pmpi(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    const bool in_place = sendbuf == MPI_IN_PLACE;
    return [=](auto& st) {
        const size_t p = st.enabled() ? size_of(comm) : 0;
        void* r = st.view(recvbuf, elems(recvcount) * p, recvtype, in_place, true);
        const void* s = st.view(sendbuf, elems(sendcount), sendtype, true, false);
        return st.failed() ? MPI_ERR_OTHER
                           : either(request, PMPI_Allgather, PMPI_Iallgather, s, sendcount, sendtype, r, recvcount,
                                    recvtype, comm);
    };
}

int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kAllgather, request);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    if (int rc; !request && quick_blocks(fn, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                         chorus_allgather, allgather_pmpi, &rc))
        return rc;  // the quick way (intercept.h)
    auto pmpi = allgather_pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
    return intercept(fn, comm, request, pmpi, [&](Call& call) -> int {
        Layout ru, su;
        if (!regular_layouts(in_place, sendcount, sendtype, recvcount, recvtype, &su, &ru)) return kPassThrough;
        Twin twin(fn, comm);
        if (!twin.ok) return twin.rc;
        if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
        const size_t p = static_cast<size_t>(twin.t.size), me = static_cast<size_t>(twin.t.rank);
        size_t block = 0;
        int rc = regular_block(fn, comm, in_place, sendcount, su, recvcount, ru, &block);
        if (rc != MPI_SUCCESS) return rc;
        if (!call.chorus_turn(twin.t, block)) return kPassThrough;
        if (ru.direct && (in_place || su.direct)) {  // contiguous types: the user's bytes
            const void* own = in_place ? static_cast<const char*>(recvbuf) + me * block : sendbuf;
            return call.run(twin.t, [&](chorus_request_t* r) {
                return either(r, chorus_allgather, chorus_iallgather, own, recvbuf, block, CHORUS_UINT8, twin.t.cc,
                              nullptr);
            });
        }
        Pending& b = call.pending();
        if ((rc = b.recv.init(fn, comm, recvbuf, recvtype, ru, Shape::regular(p, recvcount), in_place, true)) !=
                MPI_SUCCESS ||
            (rc = b.own_block(fn, comm, in_place, me, sendbuf, sendcount, sendtype, su)) != MPI_SUCCESS)
            return rc;
        return call.run(twin.t, [&](chorus_request_t* r) {
            return either(r, chorus_allgather, chorus_iallgather, b.own(), b.recv.base(), block, CHORUS_UINT8,
                          twin.t.cc, nullptr);
        });
    });
}

}  // namespace chorus_mpi

// ---------------------------------------------------------------------------
// The C entry points.

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    return chorus_mpi::allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    return chorus_mpi::bcast(buffer, count, datatype, root, comm);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
    return chorus_mpi::reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
    return chorus_mpi::reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
    return chorus_mpi::reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
    return chorus_mpi::allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

// Chorus communicators are collective to destroy: destroy them while every
// rank can still take part, in the same order everywhere.
int MPI_Finalize(void) {
    if (!chorus_mpi::inside_chorus()) chorus_mpi::teardown();
    return PMPI_Finalize();
}

}  // extern "C"
