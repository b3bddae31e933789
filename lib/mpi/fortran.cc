// Fortran entry points of the collectives, blocking and nonblocking (see
// fortran.h): mpi_allreduce and mpi_iallreduce share one body, the
// nonblocking form handing back the request.
#include "fortran.h"

#include <dlfcn.h>

#include <type_traits>
#include <vector>

#if defined(OPEN_MPI)

namespace chorus_mpi::fortran {

namespace {

std::vector<const void*> lookup(const char* const* names) {
    std::vector<const void*> found;
    for (; *names; ++names)
        if (const void* p = dlsym(RTLD_DEFAULT, *names)) found.push_back(p);
    return found;
}

}  // namespace

const Sentinels& sentinels() {
    static const Sentinels s = [] {
        static const char* const in_place[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place",
                                               "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE", nullptr};
        static const char* const bottom[] = {"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__",
                                             "MPI_FORTRAN_BOTTOM", nullptr};
        static const char* const status[] = {"mpi_fortran_status_ignore_", "mpi_fortran_status_ignore",
                                             "mpi_fortran_status_ignore__", "MPI_FORTRAN_STATUS_IGNORE", nullptr};
        static const char* const statuses[] = {"mpi_fortran_statuses_ignore_", "mpi_fortran_statuses_ignore",
                                               "mpi_fortran_statuses_ignore__", "MPI_FORTRAN_STATUSES_IGNORE", nullptr};
        Sentinels out{lookup(in_place), lookup(bottom), lookup(status), lookup(statuses)};
        out.status_ignore.push_back(MPI_F_STATUS_IGNORE);
        out.statuses_ignore.push_back(MPI_F_STATUSES_IGNORE);
        return out;
    }();
    return s;
}

bool is_one_of(const void* p, const std::vector<const void*>& set) {
    for (const void* q : set)
        if (p == q) return true;
    return false;
}

}  // namespace chorus_mpi::fortran

namespace {

using namespace chorus_mpi::fortran;

void f_allreduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* op, MPI_Fint* comm,
                 MPI_Fint* request, MPI_Fint* ierr) {
    Request q(request);
    set_ierr(ierr, q.done(chorus_mpi::allreduce(send_buffer(sendbuf), buffer(recvbuf), *count, PMPI_Type_f2c(*type),
                                                PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm), q.c())));
}

void f_bcast(void* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* request,
             MPI_Fint* ierr) {
    Request q(request);
    set_ierr(ierr,
             q.done(chorus_mpi::bcast(buffer(buf), *count, PMPI_Type_f2c(*type), *root, PMPI_Comm_f2c(*comm), q.c())));
}

void f_reduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* op, MPI_Fint* root,
              MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) {
    Request q(request);
    set_ierr(ierr, q.done(chorus_mpi::reduce(send_buffer(sendbuf), buffer(recvbuf), *count, PMPI_Type_f2c(*type),
                                             PMPI_Op_f2c(*op), *root, PMPI_Comm_f2c(*comm), q.c())));
}

void f_reduce_scatter_block(void* sendbuf, void* recvbuf, MPI_Fint* recvcount, MPI_Fint* type, MPI_Fint* op,
                            MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) {
    Request q(request);
    set_ierr(ierr, q.done(chorus_mpi::reduce_scatter_block(send_buffer(sendbuf), buffer(recvbuf), *recvcount,
                                                           PMPI_Type_f2c(*type), PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm),
                                                           q.c())));
}

// An INTEGER array of `n` entries as the int array the C path takes (the
// same memory when MPI_Fint is int, as with Open MPI and MPICH by default;
// otherwise a copy that lives for the call only, which a nonblocking call
// handed to PMPI_I* would outlive). `significant`: false where MPI ignores
// the array (a rooted call's counts away from the root), left unread.
struct Ints {
    std::vector<int> converted;
    const int* get(const MPI_Fint* a, MPI_Comm comm, bool significant = true) {
        if constexpr (std::is_same<MPI_Fint, int>::value) {
            return a;
        } else {
            int n = 0;
            if (!significant || !a || comm == MPI_COMM_NULL) return nullptr;
            PMPI_Comm_size(comm, &n);  // the local group: intracommunicators are the ones intercepted
            converted.assign(a, a + n);
            return converted.data();
        }
    }
};

bool at_root(MPI_Comm comm, MPI_Fint root) {
    int r = -1;
    return comm != MPI_COMM_NULL && PMPI_Comm_rank(comm, &r) == MPI_SUCCESS && r == root;
}

void f_reduce_scatter(void* sendbuf, void* recvbuf, MPI_Fint* recvcounts, MPI_Fint* type, MPI_Fint* op, MPI_Fint* comm,
                      MPI_Fint* request, MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    Ints counts;
    Request q(request);
    set_ierr(ierr, q.done(chorus_mpi::reduce_scatter(send_buffer(sendbuf), buffer(recvbuf), counts.get(recvcounts, c),
                                                     PMPI_Type_f2c(*type), PMPI_Op_f2c(*op), c, q.c())));
}

void f_allgather(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
                 MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) {
    Request q(request);
    set_ierr(ierr,
             q.done(chorus_mpi::allgather(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), buffer(recvbuf),
                                          *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm), q.c())));
}

void f_allgatherv(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcounts,
                  MPI_Fint* displs, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    Ints counts, offsets;
    Request q(request);
    set_ierr(ierr, q.done(chorus_mpi::allgatherv(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                                                 buffer(recvbuf), counts.get(recvcounts, c), offsets.get(displs, c),
                                                 PMPI_Type_f2c(*recvtype), c, q.c())));
}

void f_alltoall(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
                MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) {
    Request q(request);
    set_ierr(ierr,
             q.done(chorus_mpi::alltoall(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), buffer(recvbuf),
                                         *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm), q.c())));
}

void f_alltoallv(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype, void* recvbuf,
                 MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* request,
                 MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    void* s = send_buffer(sendbuf);
    const bool sends = s != MPI_IN_PLACE;
    Ints sc, sd, rc, rd;
    Request q(request);
    set_ierr(ierr, q.done(chorus_mpi::alltoallv(s, sc.get(sendcounts, c, sends), sd.get(sdispls, c, sends),
                                                PMPI_Type_f2c(*sendtype), buffer(recvbuf), rc.get(recvcounts, c),
                                                rd.get(rdispls, c), PMPI_Type_f2c(*recvtype), c, q.c())));
}

void f_gather(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
              MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) {
    Request q(request);
    set_ierr(ierr,
             q.done(chorus_mpi::gather(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), buffer(recvbuf),
                                       *recvcount, PMPI_Type_f2c(*recvtype), *root, PMPI_Comm_f2c(*comm), q.c())));
}

void f_gatherv(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcounts,
               MPI_Fint* displs, MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* request,
               MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    const bool r = at_root(c, *root);
    Ints counts, offsets;
    Request q(request);
    set_ierr(ierr, q.done(chorus_mpi::gatherv(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                                              buffer(recvbuf), counts.get(recvcounts, c, r), offsets.get(displs, c, r),
                                              PMPI_Type_f2c(*recvtype), *root, c, q.c())));
}

// A scatter's MPI_IN_PLACE is its receive buffer (on the root).
void f_scatter(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
               MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) {
    Request q(request);
    set_ierr(ierr,
             q.done(chorus_mpi::scatter(buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), send_buffer(recvbuf),
                                        *recvcount, PMPI_Type_f2c(*recvtype), *root, PMPI_Comm_f2c(*comm), q.c())));
}

void f_scatterv(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* displs, MPI_Fint* sendtype, void* recvbuf,
                MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* request,
                MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    const bool r = at_root(c, *root);
    Ints counts, offsets;
    Request q(request);
    set_ierr(ierr, q.done(chorus_mpi::scatterv(buffer(sendbuf), counts.get(sendcounts, c, r), offsets.get(displs, c, r),
                                               PMPI_Type_f2c(*sendtype), send_buffer(recvbuf), *recvcount,
                                               PMPI_Type_f2c(*recvtype), *root, c, q.c())));
}

void f_barrier(MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr) {
    Request q(request);
    set_ierr(ierr, q.done(chorus_mpi::barrier(PMPI_Comm_f2c(*comm), q.c())));
}

}  // namespace

// Each collective twice: mpi_X(args..., ierr) and mpi_iX(args..., request, ierr).
#define CHORUS_WITH_IERR(...) (__VA_ARGS__, MPI_Fint * e)
#define CHORUS_WITH_REQUEST(...) (__VA_ARGS__, MPI_Fint * q, MPI_Fint * e)
#define CHORUS_BLOCKING(...) (__VA_ARGS__, nullptr, e)
#define CHORUS_NONBLOCKING(...) (__VA_ARGS__, q, e)
#define CHORUS_FORTRAN_TWINS(name, upper, impl, params, args)                                    \
    CHORUS_FORTRAN(mpi_##name, MPI_##upper, impl, CHORUS_WITH_IERR params, CHORUS_BLOCKING args) \
    CHORUS_FORTRAN(mpi_i##name, MPI_I##upper, impl, CHORUS_WITH_REQUEST params, CHORUS_NONBLOCKING args)

CHORUS_FORTRAN_TWINS(allreduce, ALLREDUCE, f_allreduce,
                     (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c), (s, r, n, t, o, c))
CHORUS_FORTRAN_TWINS(bcast, BCAST, f_bcast, (void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* root, MPI_Fint* c),
                     (b, n, t, root, c))
CHORUS_FORTRAN_TWINS(reduce, REDUCE, f_reduce,
                     (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* root, MPI_Fint* c),
                     (s, r, n, t, o, root, c))
CHORUS_FORTRAN_TWINS(reduce_scatter_block, REDUCE_SCATTER_BLOCK, f_reduce_scatter_block,
                     (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c), (s, r, n, t, o, c))
CHORUS_FORTRAN_TWINS(reduce_scatter, REDUCE_SCATTER, f_reduce_scatter,
                     (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c), (s, r, n, t, o, c))
CHORUS_FORTRAN_TWINS(allgather, ALLGATHER, f_allgather,
                     (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* c),
                     (s, sn, st, r, rn, rt, c))
CHORUS_FORTRAN_TWINS(allgatherv, ALLGATHERV, f_allgatherv,
                     (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* d, MPI_Fint* rt,
                      MPI_Fint* c),
                     (s, sn, st, r, rn, d, rt, c))
CHORUS_FORTRAN_TWINS(alltoall, ALLTOALL, f_alltoall,
                     (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* c),
                     (s, sn, st, r, rn, rt, c))
CHORUS_FORTRAN_TWINS(alltoallv, ALLTOALLV, f_alltoallv,
                     (void* s, MPI_Fint* sn, MPI_Fint* sd, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rd,
                      MPI_Fint* rt, MPI_Fint* c),
                     (s, sn, sd, st, r, rn, rd, rt, c))
CHORUS_FORTRAN_TWINS(gather, GATHER, f_gather,
                     (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* root,
                      MPI_Fint* c),
                     (s, sn, st, r, rn, rt, root, c))
CHORUS_FORTRAN_TWINS(gatherv, GATHERV, f_gatherv,
                     (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* d, MPI_Fint* rt,
                      MPI_Fint* root, MPI_Fint* c),
                     (s, sn, st, r, rn, d, rt, root, c))
CHORUS_FORTRAN_TWINS(scatter, SCATTER, f_scatter,
                     (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* root,
                      MPI_Fint* c),
                     (s, sn, st, r, rn, rt, root, c))
CHORUS_FORTRAN_TWINS(scatterv, SCATTERV, f_scatterv,
                     (void* s, MPI_Fint* sn, MPI_Fint* d, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt,
                      MPI_Fint* root, MPI_Fint* c),
                     (s, sn, d, st, r, rn, rt, root, c))
CHORUS_FORTRAN_TWINS(barrier, BARRIER, f_barrier, (MPI_Fint * c), (c))

#endif  // OPEN_MPI
