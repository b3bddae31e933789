// The intercepted all-gather of irregular blocks, all-to-all(v) and barrier.
//
// Like MPI_Allgather they move bytes: only the type signatures must match
// across ranks, and ranks may spell them differently, so every call with
// valid arguments runs through Chorus whatever its datatypes, a predefined
// type in place and any other one packed around the call (Blocks). Counts
// and displacements become bytes; the decision depends on nothing a rank
// could see differently from another.
#include <algorithm>

#include "intercept.h"

namespace chorus_mpi {

namespace {

// The peers a non-rooted call's block arrays describe, as PMPI sees them:
// the remote group of an intercommunicator.
size_t peers(const NoStaging&, MPI_Comm) {
    return 0;
}

size_t peers(HostStaging& st, MPI_Comm comm) {
    if (!st.enabled()) return 0;
    int n = 0;
    if (st.refusing()) PMPI_Comm_remote_size(comm, &n);
    return st.refusing() ? static_cast<size_t>(n) : size_of(comm);
}

}  // namespace

int allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
               const int* displs, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kAllgatherv, request);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    return intercept(
        fn, comm, request,
        [&](HostStaging& st) {
            const size_t p = recvcounts && displs ? peers(st, comm) : 0;
            void* r = view_blocks(st, recvbuf, Shape::of(p, recvcounts, displs), recvtype, in_place, true);
            const void* s = st.view(sendbuf, elems(sendcount), sendtype, true, false);
            return st.failed() ? MPI_ERR_OTHER
                               : either(request, PMPI_Allgatherv, PMPI_Iallgatherv, s, sendcount, sendtype, r,
                                        recvcounts, displs, recvtype, comm);
        },
        [&](Call& call) -> int {
            Layout ru, su;
            if (!layout_of(recvtype, 1, &ru) || (!in_place && (!layout_of(sendtype, 1, &su) || sendcount < 0)))
                return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            if (!recvcounts || !displs) return misuse(fn, comm, "recvcounts and displs cannot be NULL");
            const size_t p = static_cast<size_t>(twin.t.size), me = static_cast<size_t>(twin.t.rank);
            size_t total = 0;  // every rank has every count
            for (size_t i = 0; i < p; ++i) total += elems(recvcounts[i]) * ru.bytes;
            if (ru.direct && (in_place || su.direct)) {
                // Contiguous types: the user's bytes, the blocks in bytes from
                // the lowest displacement (Chorus takes unsigned ones).
                long long lo = 0;
                for (size_t i = 0; i < p; ++i) {
                    if (recvcounts[i] < 0) return misuse(fn, comm, "recvcounts holds a negative count");
                    lo = std::min<long long>(lo, displs[i]);
                }
                if (!call.chorus_turn(twin.t, total)) return kPassThrough;
                SmallVector<size_t, 16> bytes, offsets;
                bytes.resize(p);
                offsets.resize(p);
                for (size_t i = 0; i < p; ++i) {
                    bytes[i] = elems(recvcounts[i]) * ru.bytes;
                    offsets[i] = static_cast<size_t>(displs[i] - lo) * ru.bytes;
                }
                char* base = static_cast<char*>(recvbuf) + lo * static_cast<long long>(ru.bytes);
                const void* own = in_place ? base + offsets[me] : sendbuf;
                const size_t own_bytes = in_place ? bytes[me] : elems(sendcount) * su.bytes;
                return call.run(twin.t, [&](chorus_request_t* r) {
                    return either(r, chorus_allgatherv, chorus_iallgatherv, own, own_bytes, base, bytes.data(),
                                  offsets.data(), CHORUS_UINT8, twin.t.cc, nullptr);
                });
            }
            Shape shape = Shape::of(p, recvcounts, displs);
            if (shape.negative()) return misuse(fn, comm, "recvcounts holds a negative count");
            if (!call.chorus_turn(twin.t, total)) return kPassThrough;
            Pending& b = call.pending();
            int rc = b.recv.init(fn, comm, recvbuf, recvtype, ru, std::move(shape), in_place, true);
            if (rc != MPI_SUCCESS ||
                (rc = b.own_block(fn, comm, in_place, me, sendbuf, sendcount, sendtype, su)) != MPI_SUCCESS)
                return rc;
            return call.run(twin.t, [&](chorus_request_t* r) {
                return either(r, chorus_allgatherv, chorus_iallgatherv, b.own(), b.own_bytes(), b.recv.base(),
                              b.recv.counts(), b.recv.displs(), CHORUS_UINT8, twin.t.cc, nullptr);
            });
        });
}

// alltoall's call handed to PMPI, each buffer through `st` (to_pmpi,
// quick_pmpi): made only where the call goes there.
auto alltoall_pmpi(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    const bool in_place = sendbuf == MPI_IN_PLACE;
    return [=](auto& st) {
        const size_t p = peers(st, comm);
        void* r = st.view(recvbuf, elems(recvcount) * p, recvtype, in_place, true);
        const void* s = st.view(sendbuf, elems(sendcount) * p, sendtype, true, false);
        return st.failed() ? MPI_ERR_OTHER
                           : either(request, PMPI_Alltoall, PMPI_Ialltoall, s, sendcount, sendtype, r, recvcount,
                                    recvtype, comm);
    };
}

int alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kAlltoall, request);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    if (int rc; !request && quick_blocks(fn, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                         chorus_alltoall, alltoall_pmpi, &rc))
        return rc;  // the quick way (intercept.h)
    auto pmpi = alltoall_pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
    return intercept(fn, comm, request, pmpi, [&](Call& call) -> int {
        Layout ru, su;
        if (!regular_layouts(in_place, sendcount, sendtype, recvcount, recvtype, &su, &ru)) return kPassThrough;
        Twin twin(fn, comm);
        if (!twin.ok) return twin.rc;
        if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
        const size_t p = static_cast<size_t>(twin.t.size);
        size_t block = 0;
        if (const int rc = regular_block(fn, comm, in_place, sendcount, su, recvcount, ru, &block); rc != MPI_SUCCESS)
            return rc;
        if (!call.chorus_turn(twin.t, block)) return kPassThrough;
        chorus_comm_t cc = twin.t.cc;
        if (ru.direct && (in_place || su.direct))  // contiguous types: the user's bytes
            return call.run(twin.t, [&](chorus_request_t* r) {
                return either(r, chorus_alltoall, chorus_ialltoall, in_place ? recvbuf : sendbuf, recvbuf, block,
                              CHORUS_UINT8, cc, nullptr);
            });
        Blocks& recv = call.pending().recv;
        Blocks& send = call.pending().send;
        int rc = recv.init(fn, comm, recvbuf, recvtype, ru, Shape::regular(p, recvcount), in_place, true);
        if (rc != MPI_SUCCESS) return rc;
        // In place, the blocks to send are the receive buffer's own.
        if (in_place)
            rc = recv.pack_all();
        else if ((rc = send.init(fn, comm, sendbuf, sendtype, su, Shape::regular(p, sendcount), true, false)) ==
                 MPI_SUCCESS)
            rc = send.pack_all();
        if (rc != MPI_SUCCESS) return rc;
        const void* s = in_place ? recv.base() : send.base();
        return call.run(twin.t, [&](chorus_request_t* r) {
            return either(r, chorus_alltoall, chorus_ialltoall, s, recv.base(), block, CHORUS_UINT8, cc, nullptr);
        });
    });
}

int alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
              const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kAlltoallv, request);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    return intercept(
        fn, comm, request,
        [&](HostStaging& st) {
            const size_t p = peers(st, comm);
            void* r = view_blocks(st, recvbuf, Shape::of(recvcounts && rdispls ? p : 0, recvcounts, rdispls), recvtype,
                                  in_place, true);
            const void* s =
                in_place ? sendbuf
                         : view_blocks(st, sendbuf, Shape::of(sendcounts && sdispls ? p : 0, sendcounts, sdispls),
                                       sendtype, true, false);
            return st.failed() ? MPI_ERR_OTHER
                               : either(request, PMPI_Alltoallv, PMPI_Ialltoallv, s, sendcounts, sdispls, sendtype, r,
                                        recvcounts, rdispls, recvtype, comm);
        },
        [&](Call& call) -> int {
            Layout ru, su;
            if (!layout_of(recvtype, 1, &ru) || (!in_place && !layout_of(sendtype, 1, &su))) return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            if (!recvcounts || !rdispls || (!in_place && (!sendcounts || !sdispls)))
                return misuse(fn, comm, "the counts and displacements cannot be NULL");
            const size_t p = static_cast<size_t>(twin.t.size);
            Shape rshape = Shape::of(p, recvcounts, rdispls), sshape;
            if (!in_place) sshape = Shape::of(p, sendcounts, sdispls);
            if (rshape.negative() || sshape.negative()) return misuse(fn, comm, "a count is negative");
            count_intercepted(fn);
            chorus_comm_t cc = twin.t.cc;
            Blocks& recv = call.pending().recv;
            Blocks& send = call.pending().send;
            int rc = recv.init(fn, comm, recvbuf, recvtype, ru, std::move(rshape), in_place, true);
            if (rc != MPI_SUCCESS) return rc;
            if (in_place)
                rc = recv.pack_all();
            else if ((rc = send.init(fn, comm, sendbuf, sendtype, su, std::move(sshape), true, false)) == MPI_SUCCESS)
                rc = send.pack_all();
            if (rc != MPI_SUCCESS) return rc;
            // In place: the blocks to send are read from the receive buffer.
            const Blocks& from = in_place ? recv : send;
            const size_t* sc = in_place ? nullptr : send.counts();
            const size_t* sd = in_place ? nullptr : send.displs();
            return call.run(twin.t, [&](chorus_request_t* r) {
                return either(r, chorus_alltoallv, chorus_ialltoallv, from.base(), sc, sd, recv.base(), recv.counts(),
                              recv.displs(), CHORUS_UINT8, cc, nullptr);
            });
        });
}

// barrier's call handed to PMPI (nothing to stage).
auto barrier_pmpi(MPI_Comm comm, MPI_Request* request) {
    return [=](auto&) { return request ? PMPI_Ibarrier(comm, request) : PMPI_Barrier(comm); };
}

int barrier(MPI_Comm comm, MPI_Request* request) {
    const Fn fn = which(kBarrier, request);
    Target t;
    if (!request && quick_target(comm, &t))  // the quick way (intercept.h)
    {
        QuickWay way(fn, comm, t, 0);
        if (way.to_mpi()) return quick_pmpi(fn, comm, barrier_pmpi(comm, nullptr));
        return quick_run(fn, comm, t, [&] { return chorus_barrier(t.cc, nullptr); });
    }
    auto pmpi = barrier_pmpi(comm, request);
    return intercept(fn, comm, request, pmpi, [&](Call& call) -> int {
        Twin twin(fn, comm);
        if (!twin.ok) return twin.rc;
        if (!call.chorus_turn(twin.t, 0)) return kPassThrough;
        return call.run(twin.t, [&](chorus_request_t* r) {
            return either(r, chorus_barrier, chorus_ibarrier, twin.t.cc, nullptr);
        });
    });
}

}  // namespace chorus_mpi

extern "C" {

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    return chorus_mpi::allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
    return chorus_mpi::alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
    return chorus_mpi::alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int MPI_Barrier(MPI_Comm comm) {
    return chorus_mpi::barrier(comm);
}

}  // extern "C"
