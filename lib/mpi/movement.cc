// The intercepted all-gather of irregular blocks, all-to-all(v) and barrier.
//
// Like MPI_Allgather they move bytes: only the type signatures must match
// across ranks, and ranks may spell them differently, so every call with
// valid arguments runs through Chorus whatever its datatypes, a predefined
// type in place and any other one packed around the call (Blocks). Counts
// and displacements become bytes; the decision depends on nothing a rank
// could see differently from another.
#include "intercept.h"

namespace chorus_mpi {

namespace {

// The peers a non-rooted call's block arrays describe, as PMPI sees them:
// the remote group of an intercommunicator.
size_t peers(HostStaging& st, MPI_Comm comm) {
    if (!st.enabled()) return 0;
    int n = 0;
    if (st.refusing()) PMPI_Comm_remote_size(comm, &n);
    return st.refusing() ? static_cast<size_t>(n) : size_of(comm);
}

}  // namespace

int allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
               const int* displs, MPI_Datatype recvtype, MPI_Comm comm) {
    const Fn fn = kAllgatherv;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    return intercept(
        fn, comm,
        [&](HostStaging& st) {
            const size_t p = recvcounts && displs ? peers(st, comm) : 0;
            void* r = view_blocks(st, recvbuf, Shape::of(p, recvcounts, displs), recvtype, in_place, true);
            const void* s = st.view(sendbuf, elems(sendcount), sendtype, true, false);
            return st.failed() ? MPI_ERR_OTHER
                               : PMPI_Allgatherv(s, sendcount, sendtype, r, recvcounts, displs, recvtype, comm);
        },
        [&]() -> int {
            Layout ru, su;
            if (!layout_of(recvtype, 1, &ru) || (!in_place && (!layout_of(sendtype, 1, &su) || sendcount < 0)))
                return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            if (!recvcounts || !displs) return misuse(fn, comm, "recvcounts and displs cannot be NULL");
            const size_t p = static_cast<size_t>(twin.t.size), me = static_cast<size_t>(twin.t.rank);
            Shape shape = Shape::of(p, recvcounts, displs);
            if (shape.negative()) return misuse(fn, comm, "recvcounts holds a negative count");
            count_intercepted(fn);
            chorus_comm_t cc = twin.t.cc;
            Blocks recv, send;
            int rc = recv.init(fn, comm, recvbuf, recvtype, ru, std::move(shape), in_place, true);
            if (rc != MPI_SUCCESS) return rc;
            if (in_place)
                rc = recv.pack(me);
            else if ((rc = send.init(fn, comm, sendbuf, sendtype, su, Shape::one(sendcount), true, false)) ==
                     MPI_SUCCESS)
                rc = send.pack_all();
            if (rc != MPI_SUCCESS) return rc;
            const void* s = in_place ? recv.block(me) : send.base();
            const size_t n = in_place ? recv.bytes(me) : send.bytes(0);
            rc = run_chorus(fn, comm, cc, [&] {
                return chorus_allgatherv(s, n, recv.base(), recv.counts(), recv.displs(), CHORUS_UINT8, cc, nullptr);
            });
            return rc != MPI_SUCCESS ? rc : recv.unpack_all();
        });
}

int alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, MPI_Comm comm) {
    const Fn fn = kAlltoall;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    return intercept(
        fn, comm,
        [&](HostStaging& st) {
            const size_t p = peers(st, comm);
            void* r = st.view(recvbuf, elems(recvcount) * p, recvtype, in_place, true);
            const void* s = st.view(sendbuf, elems(sendcount) * p, sendtype, true, false);
            return st.failed() ? MPI_ERR_OTHER : PMPI_Alltoall(s, sendcount, sendtype, r, recvcount, recvtype, comm);
        },
        [&]() -> int {
            Layout ru, su;
            if (recvcount < 0 || !layout_of(recvtype, 1, &ru) ||
                (!in_place && (sendcount < 0 || !layout_of(sendtype, 1, &su))))
                return kPassThrough;
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            if (recvbuf == MPI_IN_PLACE) return misuse(fn, comm, "recvbuf cannot be MPI_IN_PLACE");
            const size_t p = static_cast<size_t>(twin.t.size);
            const size_t block = elems(recvcount) * ru.bytes;
            if (!in_place && elems(sendcount) * su.bytes != block)
                return mismatch(fn, comm, "sendcount * sendtype", elems(sendcount) * su.bytes, "recvcount * recvtype",
                                block);
            count_intercepted(fn);
            chorus_comm_t cc = twin.t.cc;
            Blocks recv, send;
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
            rc = run_chorus(fn, comm, cc,
                            [&] { return chorus_alltoall(s, recv.base(), block, CHORUS_UINT8, cc, nullptr); });
            return rc != MPI_SUCCESS ? rc : recv.unpack_all();
        });
}

int alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
              const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm) {
    const Fn fn = kAlltoallv;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    return intercept(
        fn, comm,
        [&](HostStaging& st) {
            const size_t p = peers(st, comm);
            void* r = view_blocks(st, recvbuf, Shape::of(recvcounts && rdispls ? p : 0, recvcounts, rdispls), recvtype,
                                  in_place, true);
            const void* s =
                in_place ? sendbuf
                         : view_blocks(st, sendbuf, Shape::of(sendcounts && sdispls ? p : 0, sendcounts, sdispls),
                                       sendtype, true, false);
            return st.failed()
                       ? MPI_ERR_OTHER
                       : PMPI_Alltoallv(s, sendcounts, sdispls, sendtype, r, recvcounts, rdispls, recvtype, comm);
        },
        [&]() -> int {
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
            Blocks recv, send;
            int rc = recv.init(fn, comm, recvbuf, recvtype, ru, std::move(rshape), in_place, true);
            if (rc != MPI_SUCCESS) return rc;
            if (in_place)
                rc = recv.pack_all();
            else if ((rc = send.init(fn, comm, sendbuf, sendtype, su, std::move(sshape), true, false)) == MPI_SUCCESS)
                rc = send.pack_all();
            if (rc != MPI_SUCCESS) return rc;
            rc = run_chorus(fn, comm, cc, [&] {
                if (in_place)
                    return chorus_alltoallv(recv.base(), nullptr, nullptr, recv.base(), recv.counts(), recv.displs(),
                                            CHORUS_UINT8, cc, nullptr);
                return chorus_alltoallv(send.base(), send.counts(), send.displs(), recv.base(), recv.counts(),
                                        recv.displs(), CHORUS_UINT8, cc, nullptr);
            });
            return rc != MPI_SUCCESS ? rc : recv.unpack_all();
        });
}

int barrier(MPI_Comm comm) {
    const Fn fn = kBarrier;
    return intercept(
        fn, comm, [&](HostStaging&) { return PMPI_Barrier(comm); },
        [&]() -> int {
            Twin twin(fn, comm);
            if (!twin.ok) return twin.rc;
            count_intercepted(fn);
            chorus_comm_t cc = twin.t.cc;
            return run_chorus(fn, comm, cc, [&] { return chorus_barrier(cc, nullptr); });
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
