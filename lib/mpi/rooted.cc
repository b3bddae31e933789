// The intercepted gather(v) and scatter(v): bytes moved as in movement.cc.
//
// The root's buffer, counts, displacements and datatype are significant on
// the root only; the others may pass anything there. So the decision to run
// a call through Chorus depends on the root and the communicator alone
// (and on arguments every rank must pass validly): each rank then reads only
// what is significant on it.
#include "intercept.h"

namespace chorus_mpi {

namespace {

// Which of a rooted call's buffers this rank hands to PMPI: the root's
// (recvbuf of a gather, sendbuf of a scatter, over `peers` blocks) and the
// one every other rank (and an intracommunicator's root) passes.
struct Sides {
    bool root = false, leaf = false;
    size_t peers = 0;
};

Sides sides_of(const NoStaging&, MPI_Comm, int) {
    return {};
}

Sides sides_of(HostStaging& st, MPI_Comm comm, int root) {
    Sides s;
    if (!st.enabled()) return s;
    if (st.refusing()) {  // intercommunicator: the root group passes MPI_ROOT or MPI_PROC_NULL
        int n = 0;
        PMPI_Comm_remote_size(comm, &n);
        s.peers = static_cast<size_t>(n);
        s.root = root == MPI_ROOT;
        s.leaf = root != MPI_ROOT && root != MPI_PROC_NULL;
        return s;
    }
    s.peers = size_of(comm);
    s.root = rank_of(comm) == root;
    s.leaf = true;
    return s;
}

// What a rooted call on an intracommunicator's Chorus twin needs to know.
struct Rooted {
    Twin twin;
    bool root_ok = false;  // false: hand the call to PMPI (MPI reports a bad root)
    bool is_root = false;
    size_t p = 0, me = 0;
    Rooted(Fn fn, MPI_Comm comm, int root) : twin(fn, comm) {
        if (!twin.ok) return;
        root_ok = root >= 0 && root < twin.t.size;
        is_root = twin.t.rank == root;
        p = static_cast<size_t>(twin.t.size);
        me = static_cast<size_t>(twin.t.rank);
    }
};

// The gathers: `shape` describes the root's receive buffer (the v form), or
// `regular` elements from every rank do (built only where blocks are packed).
int gather_any(Call& call, Fn fn, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               MPI_Datatype recvtype, int root, MPI_Comm comm, const Rooted& g, Shape shape, bool v, int regular) {
    const bool in_place = g.is_root && sendbuf == MPI_IN_PLACE;
    if (sendbuf == MPI_IN_PLACE && !g.is_root) return misuse(fn, comm, "MPI_IN_PLACE is valid on the root only");
    Layout su, ru;
    if (!in_place && (sendcount < 0 || !layout_of(sendtype, 1, &su))) return kPassThrough;
    if (g.is_root) {
        if (!layout_of(recvtype, 1, &ru)) return kPassThrough;
        if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
        if (shape.negative()) return misuse(fn, comm, "a receive count is negative");
    }
    // The block every rank agrees on (a v form's blocks are known at the
    // root only: those go through Chorus).
    if (v)
        count_intercepted(fn);
    else if (!call.chorus_turn(g.twin.t, g.is_root ? elems(regular) * ru.bytes : elems(sendcount) * su.bytes))
        return kPassThrough;
    chorus_comm_t cc = g.twin.t.cc;
    if (!v && (in_place || su.direct) && (!g.is_root || ru.direct)) {  // contiguous types: the user's bytes
        const size_t block = g.is_root ? elems(regular) * ru.bytes : 0;
        const size_t n = in_place ? block : elems(sendcount) * su.bytes;
        if (g.is_root && n != block)
            return mismatch(fn, comm, "sendcount * sendtype", n, "recvcount * recvtype", block);
        const void* own = in_place ? static_cast<const char*>(recvbuf) + g.me * block : sendbuf;
        void* all = g.is_root ? recvbuf : nullptr;
        return call.run(g.twin.t, [&](chorus_request_t* r) {
            return either(r, chorus_gather, chorus_igather, own, all, n, CHORUS_UINT8, root, cc, nullptr);
        });
    }
    if (!v && g.is_root) shape = Shape::regular(g.p, regular);
    Pending& b = call.pending();
    const Blocks& recv = b.recv;
    int rc;
    if (g.is_root &&
        (rc = b.recv.init(fn, comm, recvbuf, recvtype, ru, std::move(shape), in_place, true)) != MPI_SUCCESS)
        return rc;
    if ((rc = b.own_block(fn, comm, in_place, g.me, sendbuf, sendcount, sendtype, su)) != MPI_SUCCESS) return rc;
    const void* s = b.own();
    const size_t n = b.own_bytes();
    if (!v && g.is_root && n != recv.bytes(0))
        return mismatch(fn, comm, "sendcount * sendtype", n, "recvcount * recvtype", recv.bytes(0));
    char* all = g.is_root ? recv.base() : nullptr;
    const size_t* counts = g.is_root ? recv.counts() : nullptr;
    const size_t* displs = g.is_root ? recv.displs() : nullptr;
    return call.run(g.twin.t, [&](chorus_request_t* r) {
        if (v)
            return either(r, chorus_gatherv, chorus_igatherv, s, n, all, counts, displs, CHORUS_UINT8, root, cc,
                          nullptr);
        return either(r, chorus_gather, chorus_igather, s, all, n, CHORUS_UINT8, root, cc, nullptr);
    });
}

// The scatters: `shape` describes the root's send buffer (the v form), or
// `regular` elements for every rank do.
int scatter_any(Call& call, Fn fn, const void* sendbuf, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, const Rooted& g, Shape shape, bool v, int regular) {
    const bool in_place = g.is_root && recvbuf == MPI_IN_PLACE;
    if (recvbuf == MPI_IN_PLACE && !g.is_root) return misuse(fn, comm, "MPI_IN_PLACE is valid on the root only");
    Layout su, ru;
    if (!in_place && (recvcount < 0 || !layout_of(recvtype, 1, &ru))) return kPassThrough;
    if (g.is_root) {
        if (!layout_of(sendtype, 1, &su)) return kPassThrough;
        if (sendbuf == MPI_IN_PLACE) return misuse(fn, comm, "sendbuf cannot be MPI_IN_PLACE");
        if (shape.negative()) return misuse(fn, comm, "a send count is negative");
    }
    if (v)
        count_intercepted(fn);
    else if (!call.chorus_turn(g.twin.t, g.is_root ? elems(regular) * su.bytes : elems(recvcount) * ru.bytes))
        return kPassThrough;
    chorus_comm_t cc = g.twin.t.cc;
    if (!v && (!g.is_root || su.direct) && (in_place || ru.direct)) {  // contiguous types: the user's bytes
        const size_t block = g.is_root ? elems(regular) * su.bytes : 0;
        const size_t n = in_place ? block : elems(recvcount) * ru.bytes;
        if (g.is_root && n != block)
            return mismatch(fn, comm, "recvcount * recvtype", n, "sendcount * sendtype", block);
        char* r =
            in_place ? static_cast<char*>(const_cast<void*>(sendbuf)) + g.me * block : static_cast<char*>(recvbuf);
        const void* all = g.is_root ? sendbuf : nullptr;
        return call.run(g.twin.t, [&](chorus_request_t* req) {
            return either(req, chorus_scatter, chorus_iscatter, all, r, n, CHORUS_UINT8, root, cc, nullptr);
        });
    }
    if (!v && g.is_root) shape = Shape::regular(g.p, regular);
    Blocks& recv = call.pending().recv;
    Blocks& send = call.pending().send;
    int rc = MPI_SUCCESS;
    if (g.is_root && ((rc = send.init(fn, comm, sendbuf, sendtype, su, std::move(shape), true, false)) != MPI_SUCCESS ||
                      (rc = send.pack_all()) != MPI_SUCCESS))
        return rc;
    if (!in_place &&
        (rc = recv.init(fn, comm, recvbuf, recvtype, ru, Shape::one(recvcount), false, true)) != MPI_SUCCESS)
        return rc;
    // In place, the root's own block stays in its send buffer.
    char* r = in_place ? send.block(g.me) : recv.base();
    const size_t n = in_place ? send.bytes(g.me) : recv.bytes(0);
    if (!v && g.is_root && n != send.bytes(0))
        return mismatch(fn, comm, "recvcount * recvtype", n, "sendcount * sendtype", send.bytes(0));
    const char* all = g.is_root ? send.base() : nullptr;
    const size_t* counts = g.is_root ? send.counts() : nullptr;
    const size_t* displs = g.is_root ? send.displs() : nullptr;
    return call.run(g.twin.t, [&](chorus_request_t* req) {
        if (v)
            return either(req, chorus_scatterv, chorus_iscatterv, all, counts, displs, r, n, CHORUS_UINT8, root, cc,
                          nullptr);
        return either(req, chorus_scatter, chorus_iscatter, all, r, n, CHORUS_UINT8, root, cc, nullptr);
    });
}

}  // namespace

// gather's call handed to PMPI, each buffer through `st` (to_pmpi,
// quick_pmpi): made only where the call goes there.
auto gather_pmpi(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
    return [=](auto& st) {
        const Sides s = sides_of(st, comm, root);
        void* r =
            s.root ? st.view(recvbuf, elems(recvcount) * s.peers, recvtype, sendbuf == MPI_IN_PLACE, true) : recvbuf;
        const void* b = s.leaf ? st.view(sendbuf, elems(sendcount), sendtype, true, false) : sendbuf;
        return st.failed() ? MPI_ERR_OTHER
                           : either(request, PMPI_Gather, PMPI_Igather, b, sendcount, sendtype, r, recvcount, recvtype,
                                    root, comm);
    };
}

int gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
           MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kGather, request);
    if (!request && sendbuf != MPI_IN_PLACE && sendcount >= 0) {  // the quick way (intercept.h)
        Target t;
        size_t su;
        if (quick_target(comm, &t) && root >= 0 && root < t.size && (su = basic_size(sendtype)) != 0) {
            const size_t n = elems(sendcount) * su;
            const bool is_root = t.rank == root;
            const size_t ru = is_root && recvcount >= 0 && recvbuf != MPI_IN_PLACE ? basic_size(recvtype) : 0;
            if (!is_root || (ru != 0 && elems(recvcount) * ru == n)) {
                void* all = is_root ? recvbuf : nullptr;
                QuickWay way(fn, comm, t, n);
                if (way.to_mpi())
                    return quick_pmpi(
                        fn, comm,
                        gather_pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, nullptr));
                return quick_run(fn, comm, t,
                                 [&] { return chorus_gather(sendbuf, all, n, CHORUS_UINT8, root, t.cc, nullptr); });
            }
        }
    }
    auto pmpi = gather_pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
    return intercept(fn, comm, request, pmpi, [&](Call& call) -> int {
        Rooted g(fn, comm, root);
        if (!g.twin.ok) return g.twin.rc;
        if (!g.root_ok) return kPassThrough;
        if (g.is_root && recvcount < 0) return kPassThrough;
        return gather_any(call, fn, sendbuf, sendcount, sendtype, recvbuf, recvtype, root, comm, g, Shape(), false,
                          recvcount);
    });
}

int gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
            const int* displs, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kGatherv, request);
    return intercept(
        fn, comm, request,
        [&](HostStaging& st) {
            const Sides s = sides_of(st, comm, root);
            const size_t p = s.root && recvcounts && displs ? s.peers : 0;
            void* r = s.root ? view_blocks(st, recvbuf, Shape::of(p, recvcounts, displs), recvtype,
                                           sendbuf == MPI_IN_PLACE, true)
                             : recvbuf;
            const void* b = s.leaf ? st.view(sendbuf, elems(sendcount), sendtype, true, false) : sendbuf;
            return st.failed() ? MPI_ERR_OTHER
                               : either(request, PMPI_Gatherv, PMPI_Igatherv, b, sendcount, sendtype, r, recvcounts,
                                        displs, recvtype, root, comm);
        },
        [&](Call& call) -> int {
            Rooted g(fn, comm, root);
            if (!g.twin.ok) return g.twin.rc;
            if (!g.root_ok) return kPassThrough;
            if (g.is_root && (!recvcounts || !displs))
                return misuse(fn, comm, "recvcounts and displs cannot be NULL on the root");
            Shape shape = g.is_root ? Shape::of(g.p, recvcounts, displs) : Shape();
            return gather_any(call, fn, sendbuf, sendcount, sendtype, recvbuf, recvtype, root, comm, g,
                              std::move(shape), true, 0);
        });
}

// scatter's call handed to PMPI, each buffer through `st` (to_pmpi,
// quick_pmpi): made only where the call goes there.
auto scatter_pmpi(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
    return [=](auto& st) {
        const Sides s = sides_of(st, comm, root);
        const void* b = s.root ? st.view(sendbuf, elems(sendcount) * s.peers, sendtype, true, false) : sendbuf;
        void* r = s.leaf ? st.view(recvbuf, elems(recvcount), recvtype, false, true) : recvbuf;
        return st.failed() ? MPI_ERR_OTHER
                           : either(request, PMPI_Scatter, PMPI_Iscatter, b, sendcount, sendtype, r, recvcount,
                                    recvtype, root, comm);
    };
}

int scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kScatter, request);
    if (!request && recvbuf != MPI_IN_PLACE && recvcount >= 0) {  // the quick way (intercept.h)
        Target t;
        size_t ru;
        if (quick_target(comm, &t) && root >= 0 && root < t.size && (ru = basic_size(recvtype)) != 0) {
            const size_t n = elems(recvcount) * ru;
            const bool is_root = t.rank == root;
            const size_t su = is_root && sendcount >= 0 && sendbuf != MPI_IN_PLACE ? basic_size(sendtype) : 0;
            if (!is_root || (su != 0 && elems(sendcount) * su == n)) {
                const void* all = is_root ? sendbuf : nullptr;
                QuickWay way(fn, comm, t, n);
                if (way.to_mpi())
                    return quick_pmpi(
                        fn, comm,
                        scatter_pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, nullptr));
                return quick_run(fn, comm, t,
                                 [&] { return chorus_scatter(all, recvbuf, n, CHORUS_UINT8, root, t.cc, nullptr); });
            }
        }
    }
    auto pmpi = scatter_pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
    return intercept(fn, comm, request, pmpi, [&](Call& call) -> int {
        Rooted g(fn, comm, root);
        if (!g.twin.ok) return g.twin.rc;
        if (!g.root_ok) return kPassThrough;
        if (g.is_root && sendcount < 0) return kPassThrough;
        return scatter_any(call, fn, sendbuf, sendtype, recvbuf, recvcount, recvtype, root, comm, g, Shape(), false,
                           sendcount);
    });
}

int scatterv(const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kScatterv, request);
    return intercept(
        fn, comm, request,
        [&](HostStaging& st) {
            const Sides s = sides_of(st, comm, root);
            const size_t p = s.root && sendcounts && displs ? s.peers : 0;
            const void* b =
                s.root ? view_blocks(st, sendbuf, Shape::of(p, sendcounts, displs), sendtype, true, false) : sendbuf;
            void* r = s.leaf ? st.view(recvbuf, elems(recvcount), recvtype, false, true) : recvbuf;
            return st.failed() ? MPI_ERR_OTHER
                               : either(request, PMPI_Scatterv, PMPI_Iscatterv, b, sendcounts, displs, sendtype, r,
                                        recvcount, recvtype, root, comm);
        },
        [&](Call& call) -> int {
            Rooted g(fn, comm, root);
            if (!g.twin.ok) return g.twin.rc;
            if (!g.root_ok) return kPassThrough;
            if (g.is_root && (!sendcounts || !displs))
                return misuse(fn, comm, "sendcounts and displs cannot be NULL on the root");
            Shape shape = g.is_root ? Shape::of(g.p, sendcounts, displs) : Shape();
            return scatter_any(call, fn, sendbuf, sendtype, recvbuf, recvcount, recvtype, root, comm, g,
                               std::move(shape), true, 0);
        });
}

}  // namespace chorus_mpi

extern "C" {

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
    return chorus_mpi::gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
    return chorus_mpi::gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
    return chorus_mpi::scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
    return chorus_mpi::scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

}  // extern "C"
