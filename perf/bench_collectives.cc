#include "bench_collectives.h"

namespace bench {

namespace {

int mpi_count(size_t n) {
    return static_cast<int>(n);
}

// Chorus's calls: the blocking one, or with `request` its nonblocking twin.
chorus_result_t chorus_allreduce_call(const Call& c) {
    if (c.request) return chorus_iallreduce(c.send, c.recv, c.count, c.type->dt, c.op->op, c.comm, c.stream, c.request);
    return chorus_allreduce(c.send, c.recv, c.count, c.type->dt, c.op->op, c.comm, c.stream);
}

// In place at the root, as MPI_Bcast works: both libraries do the same job
// (an out-of-place root would also copy its input to its output).
chorus_result_t chorus_broadcast_call(const Call& c) {
    void* buf = c.rank == c.root ? const_cast<void*>(c.send) : c.recv;
    if (c.request) return chorus_ibroadcast(c.send, buf, c.count, c.type->dt, c.root, c.comm, c.stream, c.request);
    return chorus_broadcast(c.send, buf, c.count, c.type->dt, c.root, c.comm, c.stream);
}

chorus_result_t chorus_reduce_call(const Call& c) {
    if (c.request)
        return chorus_ireduce(c.send, c.recv, c.count, c.type->dt, c.op->op, c.root, c.comm, c.stream, c.request);
    return chorus_reduce(c.send, c.recv, c.count, c.type->dt, c.op->op, c.root, c.comm, c.stream);
}

chorus_result_t chorus_reduce_scatter_call(const Call& c) {
    if (c.request)
        return chorus_ireduce_scatter(c.send, c.recv, c.count, c.type->dt, c.op->op, c.comm, c.stream, c.request);
    return chorus_reduce_scatter(c.send, c.recv, c.count, c.type->dt, c.op->op, c.comm, c.stream);
}

chorus_result_t chorus_allgather_call(const Call& c) {
    if (c.request) return chorus_iallgather(c.send, c.recv, c.count, c.type->dt, c.comm, c.stream, c.request);
    return chorus_allgather(c.send, c.recv, c.count, c.type->dt, c.comm, c.stream);
}

chorus_result_t chorus_allgatherv_call(const Call& c) {
    if (c.request)
        return chorus_iallgatherv(c.send, c.count, c.recv, c.counts, c.displs, c.type->dt, c.comm, c.stream, c.request);
    return chorus_allgatherv(c.send, c.count, c.recv, c.counts, c.displs, c.type->dt, c.comm, c.stream);
}

chorus_result_t chorus_alltoall_call(const Call& c) {
    if (c.request) return chorus_ialltoall(c.send, c.recv, c.count, c.type->dt, c.comm, c.stream, c.request);
    return chorus_alltoall(c.send, c.recv, c.count, c.type->dt, c.comm, c.stream);
}

chorus_result_t chorus_alltoallv_call(const Call& c) {
    if (c.request)
        return chorus_ialltoallv(c.send, c.counts, c.displs, c.recv, c.counts, c.displs, c.type->dt, c.comm, c.stream,
                                 c.request);
    return chorus_alltoallv(c.send, c.counts, c.displs, c.recv, c.counts, c.displs, c.type->dt, c.comm, c.stream);
}

chorus_result_t chorus_gather_call(const Call& c) {
    if (c.request) return chorus_igather(c.send, c.recv, c.count, c.type->dt, c.root, c.comm, c.stream, c.request);
    return chorus_gather(c.send, c.recv, c.count, c.type->dt, c.root, c.comm, c.stream);
}

chorus_result_t chorus_gatherv_call(const Call& c) {
    if (c.request)
        return chorus_igatherv(c.send, c.count, c.recv, c.counts, c.displs, c.type->dt, c.root, c.comm, c.stream,
                               c.request);
    return chorus_gatherv(c.send, c.count, c.recv, c.counts, c.displs, c.type->dt, c.root, c.comm, c.stream);
}

chorus_result_t chorus_scatter_call(const Call& c) {
    if (c.request) return chorus_iscatter(c.send, c.recv, c.count, c.type->dt, c.root, c.comm, c.stream, c.request);
    return chorus_scatter(c.send, c.recv, c.count, c.type->dt, c.root, c.comm, c.stream);
}

chorus_result_t chorus_scatterv_call(const Call& c) {
    if (c.request)
        return chorus_iscatterv(c.send, c.counts, c.displs, c.recv, c.count, c.type->dt, c.root, c.comm, c.stream,
                                c.request);
    return chorus_scatterv(c.send, c.counts, c.displs, c.recv, c.count, c.type->dt, c.root, c.comm, c.stream);
}

chorus_result_t chorus_barrier_call(const Call& c) {
    if (c.request) return chorus_ibarrier(c.comm, c.stream, c.request);
    return chorus_barrier(c.comm, c.stream);
}

// MPI's, likewise with `mpi_request`.
const void* in_place_send(const Call& c, bool root_only) {
    return c.in_place && (!root_only || c.rank == c.root) ? MPI_IN_PLACE : c.send;
}

int mpi_allreduce_call(const Call& c) {
    const void* s = in_place_send(c, false);
    if (c.mpi_request)
        return MPI_Iallreduce(s, c.recv, mpi_count(c.count), c.mpi_type, c.op->mpi, MPI_COMM_WORLD, c.mpi_request);
    return MPI_Allreduce(s, c.recv, mpi_count(c.count), c.mpi_type, c.op->mpi, MPI_COMM_WORLD);
}

int mpi_bcast_call(const Call& c) {
    void* buf = c.rank == c.root ? const_cast<void*>(c.send) : c.recv;
    if (c.mpi_request) return MPI_Ibcast(buf, mpi_count(c.count), c.mpi_type, c.root, MPI_COMM_WORLD, c.mpi_request);
    return MPI_Bcast(buf, mpi_count(c.count), c.mpi_type, c.root, MPI_COMM_WORLD);
}

int mpi_reduce_call(const Call& c) {
    const void* s = in_place_send(c, true);
    if (c.mpi_request)
        return MPI_Ireduce(s, c.recv, mpi_count(c.count), c.mpi_type, c.op->mpi, c.root, MPI_COMM_WORLD, c.mpi_request);
    return MPI_Reduce(s, c.recv, mpi_count(c.count), c.mpi_type, c.op->mpi, c.root, MPI_COMM_WORLD);
}

int mpi_reduce_scatter_call(const Call& c) {
    const void* s = in_place_send(c, false);
    if (c.mpi_request)
        return MPI_Ireduce_scatter_block(s, c.recv, mpi_count(c.count), c.mpi_type, c.op->mpi, MPI_COMM_WORLD,
                                         c.mpi_request);
    return MPI_Reduce_scatter_block(s, c.recv, mpi_count(c.count), c.mpi_type, c.op->mpi, MPI_COMM_WORLD);
}

int mpi_allgather_call(const Call& c) {
    const void* s = in_place_send(c, false);
    const int n = mpi_count(c.count);
    if (c.mpi_request) return MPI_Iallgather(s, n, c.mpi_type, c.recv, n, c.mpi_type, MPI_COMM_WORLD, c.mpi_request);
    return MPI_Allgather(s, n, c.mpi_type, c.recv, n, c.mpi_type, MPI_COMM_WORLD);
}

int mpi_allgatherv_call(const Call& c) {
    const void* s = in_place_send(c, false);
    const int n = mpi_count(c.count);
    if (c.mpi_request)
        return MPI_Iallgatherv(s, n, c.mpi_type, c.recv, c.mpi_counts, c.mpi_displs, c.mpi_type, MPI_COMM_WORLD,
                               c.mpi_request);
    return MPI_Allgatherv(s, n, c.mpi_type, c.recv, c.mpi_counts, c.mpi_displs, c.mpi_type, MPI_COMM_WORLD);
}

int mpi_alltoall_call(const Call& c) {
    const void* s = in_place_send(c, false);
    const int n = mpi_count(c.count);
    if (c.mpi_request) return MPI_Ialltoall(s, n, c.mpi_type, c.recv, n, c.mpi_type, MPI_COMM_WORLD, c.mpi_request);
    return MPI_Alltoall(s, n, c.mpi_type, c.recv, n, c.mpi_type, MPI_COMM_WORLD);
}

int mpi_alltoallv_call(const Call& c) {
    const void* s = in_place_send(c, false);
    if (c.mpi_request)
        return MPI_Ialltoallv(s, c.mpi_counts, c.mpi_displs, c.mpi_type, c.recv, c.mpi_counts, c.mpi_displs, c.mpi_type,
                              MPI_COMM_WORLD, c.mpi_request);
    return MPI_Alltoallv(s, c.mpi_counts, c.mpi_displs, c.mpi_type, c.recv, c.mpi_counts, c.mpi_displs, c.mpi_type,
                         MPI_COMM_WORLD);
}

int mpi_gather_call(const Call& c) {
    const void* s = in_place_send(c, true);
    const int n = mpi_count(c.count);
    if (c.mpi_request)
        return MPI_Igather(s, n, c.mpi_type, c.recv, n, c.mpi_type, c.root, MPI_COMM_WORLD, c.mpi_request);
    return MPI_Gather(s, n, c.mpi_type, c.recv, n, c.mpi_type, c.root, MPI_COMM_WORLD);
}

int mpi_gatherv_call(const Call& c) {
    const void* s = in_place_send(c, true);
    const int n = mpi_count(c.count);
    if (c.mpi_request)
        return MPI_Igatherv(s, n, c.mpi_type, c.recv, c.mpi_counts, c.mpi_displs, c.mpi_type, c.root, MPI_COMM_WORLD,
                            c.mpi_request);
    return MPI_Gatherv(s, n, c.mpi_type, c.recv, c.mpi_counts, c.mpi_displs, c.mpi_type, c.root, MPI_COMM_WORLD);
}

// A scatter's in-place form is its root's receive buffer.
void* in_place_recv(const Call& c) {
    return c.in_place && c.rank == c.root ? MPI_IN_PLACE : c.recv;
}

int mpi_scatter_call(const Call& c) {
    const int n = mpi_count(c.count);
    if (c.mpi_request)
        return MPI_Iscatter(c.send, n, c.mpi_type, in_place_recv(c), n, c.mpi_type, c.root, MPI_COMM_WORLD,
                            c.mpi_request);
    return MPI_Scatter(c.send, n, c.mpi_type, in_place_recv(c), n, c.mpi_type, c.root, MPI_COMM_WORLD);
}

int mpi_scatterv_call(const Call& c) {
    const int n = mpi_count(c.count);
    if (c.mpi_request)
        return MPI_Iscatterv(c.send, c.mpi_counts, c.mpi_displs, c.mpi_type, in_place_recv(c), n, c.mpi_type, c.root,
                             MPI_COMM_WORLD, c.mpi_request);
    return MPI_Scatterv(c.send, c.mpi_counts, c.mpi_displs, c.mpi_type, in_place_recv(c), n, c.mpi_type, c.root,
                        MPI_COMM_WORLD);
}

int mpi_barrier_call(const Call& c) {
    if (c.mpi_request) return MPI_Ibarrier(MPI_COMM_WORLD, c.mpi_request);
    return MPI_Barrier(MPI_COMM_WORLD);
}

const Collective kCollectives[] = {
    {"allreduce", "Allreduce", "chorus_allreduce", Kind::Allreduce, chorus_allreduce_call, mpi_allreduce_call, true,
     false},
    {"bcast", "Broadcast", "chorus_broadcast", Kind::Broadcast, chorus_broadcast_call, mpi_bcast_call, false, true},
    {"reduce", "Reduce", "chorus_reduce", Kind::Reduce, chorus_reduce_call, mpi_reduce_call, true, true},
    {"reduce_scatter", "Reduce_scatter", "chorus_reduce_scatter", Kind::ReduceScatter, chorus_reduce_scatter_call,
     mpi_reduce_scatter_call, true, false},
    {"allgather", "Allgather", "chorus_allgather", Kind::Allgather, chorus_allgather_call, mpi_allgather_call, false,
     false},
    {"allgatherv", "Allgatherv", "chorus_allgatherv", Kind::Allgatherv, chorus_allgatherv_call, mpi_allgatherv_call,
     false, false},
    {"alltoall", "Alltoall", "chorus_alltoall", Kind::Alltoall, chorus_alltoall_call, mpi_alltoall_call, false, false},
    {"alltoallv", "Alltoallv", "chorus_alltoallv", Kind::Alltoallv, chorus_alltoallv_call, mpi_alltoallv_call, false,
     false},
    {"gather", "Gather", "chorus_gather", Kind::Gather, chorus_gather_call, mpi_gather_call, false, true},
    {"gatherv", "Gatherv", "chorus_gatherv", Kind::Gatherv, chorus_gatherv_call, mpi_gatherv_call, false, true},
    {"scatter", "Scatter", "chorus_scatter", Kind::Scatter, chorus_scatter_call, mpi_scatter_call, false, true},
    {"scatterv", "Scatterv", "chorus_scatterv", Kind::Scatterv, chorus_scatterv_call, mpi_scatterv_call, false, true},
    {"barrier", "Barrier", "chorus_barrier", Kind::Barrier, chorus_barrier_call, mpi_barrier_call, false, false},
};

bool gathers(Kind k) {
    return k == Kind::Gather || k == Kind::Gatherv;
}
bool scatters(Kind k) {
    return k == Kind::Scatter || k == Kind::Scatterv;
}
bool all_gathers(Kind k) {
    return k == Kind::Allgather || k == Kind::Allgatherv;
}
bool all_to_all(Kind k) {
    return k == Kind::Alltoall || k == Kind::Alltoallv;
}

}  // namespace

const Collective* find_collective(const std::string& name) {
    for (const auto& c : kCollectives)
        if (name == c.name) return &c;
    return nullptr;
}

std::string collective_names() {
    std::string s;
    for (const auto& c : kCollectives) s += (s.empty() ? "" : " | ") + std::string(c.name);
    return s;
}

double bus_factor(Kind k, int n) {
    switch (k) {
        case Kind::Allreduce: return 2.0 * (n - 1) / n;
        case Kind::Broadcast:
        case Kind::Reduce:
        case Kind::Barrier: return 1.0;
        default: return static_cast<double>(n - 1) / n;
    }
}

Layout layout_for(Kind k, size_t bytes, size_t elem, int n) {
    Layout l;
    const size_t un = static_cast<size_t>(n);
    l.count = bytes / elem;
    if (k == Kind::ReduceScatter) {
        l.count = bytes / elem / un;
        l.send_elems = l.count * un;
        l.recv_elems = l.count;
        l.nccl_bytes = l.send_elems * elem;
    } else if (all_gathers(k) || gathers(k)) {  // each rank's block, gathered
        l.send_elems = l.count;
        l.recv_elems = l.count * un;
        l.nccl_bytes = l.recv_elems * elem;
    } else if (scatters(k)) {
        l.send_elems = l.count * un;
        l.recv_elems = l.count;
        l.nccl_bytes = l.send_elems * elem;
    } else if (all_to_all(k)) {  // the block for each peer
        l.send_elems = l.recv_elems = l.count * un;
        l.nccl_bytes = l.send_elems * elem;
    } else if (k == Kind::Barrier) {
        l.count = 0;
    } else {
        l.send_elems = l.recv_elems = l.count;
        l.nccl_bytes = l.count * elem;
    }
    return l;
}

bool reads_input(Kind k, int rank, int root) {
    return (k != Kind::Broadcast && !scatters(k)) || rank == root;
}
bool writes_output(Kind k, int rank, int root) {
    return (k != Kind::Reduce && !gathers(k)) || rank == root;
}

void place_buffers(Kind k, void* a_base, void* b_base, const Layout& l, size_t elem, Call& c) {
    auto* a = static_cast<unsigned char*>(a_base);
    const bool root = c.rank == c.root;
    c.send = a;
    c.recv = a;
    if (!c.in_place) {
        c.recv = b_base;
    } else if (all_gathers(k)) {
        c.send = a + static_cast<size_t>(c.rank) * l.count * elem;
    } else if (gathers(k) && root) {
        c.send = a + static_cast<size_t>(c.root) * l.count * elem;
    } else if (scatters(k) && root) {
        c.recv = a + static_cast<size_t>(c.root) * l.count * elem;
    }
}

size_t check_output(Kind k, const TypeInfo& t, chorus_op_t op, int rank, int n, int root, const Layout& l,
                    const void* out_base) {
    const auto* out = static_cast<const unsigned char*>(out_base);
    const size_t block = l.count * t.size, me = static_cast<size_t>(rank) * l.count;
    size_t bad = 0;
    switch (k) {
        case Kind::Broadcast: return check_copied(t, op, root, n, 0, out, l.count);
        case Kind::ReduceScatter: return check_reduced(t, op, n, me, out, l.count);
        case Kind::Allgather:
        case Kind::Allgatherv:
        case Kind::Gather:
        case Kind::Gatherv:  // block r: rank r's input
            for (int r = 0; r < n; ++r) bad += check_copied(t, op, r, n, 0, out + r * block, l.count);
            return bad;
        case Kind::Alltoall:
        case Kind::Alltoallv:  // block r: rank r's input for this rank
            for (int r = 0; r < n; ++r) bad += check_copied(t, op, r, n, me, out + r * block, l.count);
            return bad;
        case Kind::Scatter:
        case Kind::Scatterv: return check_copied(t, op, root, n, me, out, l.count);
        case Kind::Barrier: return 0;
        default: return check_reduced(t, op, n, 0, out, l.count);
    }
}

}  // namespace bench
