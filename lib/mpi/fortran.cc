// Fortran entry points, for Open MPI only. Open MPI's Fortran bindings
// (mpif.h, `use mpi`, `use mpi_f08`) call PMPI_* directly, so the C
// definitions never see Fortran calls: these names take their place. They
// convert the handles and the sentinels as Open MPI's own wrappers do, then
// share the C path (and its statistics). Every argument comes by reference;
// `ierr` may be absent (a null pointer) in the mpi_f08 bindings.
//
// gfortran names a subroutine mpi_allreduce_; other compilers and Open MPI
// builds use mpi_allreduce, mpi_allreduce__ or MPI_ALLREDUCE, so all four
// are defined. The mpi_f08 module calls mpi_allreduce_f08_, whose arguments
// are laid out the same way (a TYPE(MPI_Comm) is one INTEGER).
//
// MPICH (and the MPIs built from it) needs none of this: its Fortran
// wrappers turn its own sentinels into the C ones and then call the C
// MPI_Allreduce (not PMPI_Allreduce), which this library already defines.
// In libmpichfort, mpi_allreduce_ (mpif.h, `use mpi`; MPI_BOTTOM and
// MPI_IN_PLACE live in the common block MPIPRIV1) and mpi_allreduce_f08ts_
// (mpi_f08; the variables MPIR_F08_MPI_BOTTOM and MPIR_F08_MPI_IN_PLACE)
// both end in a call to MPI_Allreduce@plt. Defining the Fortran names there
// would take the place of MPICH's wrappers and see its sentinels as
// ordinary buffers: wrong data for MPI_IN_PLACE, a stray address for
// MPI_BOTTOM. So the names are defined where mpi.h says it is Open MPI.
#include <dlfcn.h>

#include <type_traits>
#include <vector>

#include "interposer.h"  // and mpi.h, which says which MPI this is

#if defined(OPEN_MPI)

namespace {

// Fortran's MPI_IN_PLACE and MPI_BOTTOM are common-block variables; a
// buffer argument is one of them when its address is theirs. The symbol
// that the program and libmpi share is found the way the dynamic linker
// finds it for them.
struct Sentinels {
    std::vector<const void*> in_place, bottom;
};

std::vector<const void*> lookup(const char* const* names) {
    std::vector<const void*> found;
    for (; *names; ++names)
        if (const void* p = dlsym(RTLD_DEFAULT, *names)) found.push_back(p);
    return found;
}

const Sentinels& sentinels() {
    static const Sentinels s = [] {
        static const char* const in_place[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place",
                                               "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE", nullptr};
        static const char* const bottom[] = {"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__",
                                             "MPI_FORTRAN_BOTTOM", nullptr};
        return Sentinels{lookup(in_place), lookup(bottom)};
    }();
    return s;
}

bool is_one_of(const void* p, const std::vector<const void*>& set) {
    for (const void* q : set)
        if (p == q) return true;
    return false;
}

void* buffer(void* p) { return is_one_of(p, sentinels().bottom) ? MPI_BOTTOM : p; }

void* send_buffer(void* p) { return is_one_of(p, sentinels().in_place) ? MPI_IN_PLACE : buffer(p); }

void set_ierr(MPI_Fint* ierr, int rc) {
    if (ierr) *ierr = static_cast<MPI_Fint>(rc);
}

void f_allreduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* op, MPI_Fint* comm,
                 MPI_Fint* ierr) {
    set_ierr(ierr, chorus_mpi::allreduce(send_buffer(sendbuf), buffer(recvbuf), *count, PMPI_Type_f2c(*type),
                                         PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm)));
}

void f_bcast(void* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr) {
    set_ierr(ierr, chorus_mpi::bcast(buffer(buf), *count, PMPI_Type_f2c(*type), *root, PMPI_Comm_f2c(*comm)));
}

void f_reduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* op, MPI_Fint* root,
              MPI_Fint* comm, MPI_Fint* ierr) {
    set_ierr(ierr, chorus_mpi::reduce(send_buffer(sendbuf), buffer(recvbuf), *count, PMPI_Type_f2c(*type),
                                      PMPI_Op_f2c(*op), *root, PMPI_Comm_f2c(*comm)));
}

void f_reduce_scatter_block(void* sendbuf, void* recvbuf, MPI_Fint* recvcount, MPI_Fint* type, MPI_Fint* op,
                            MPI_Fint* comm, MPI_Fint* ierr) {
    set_ierr(ierr, chorus_mpi::reduce_scatter_block(send_buffer(sendbuf), buffer(recvbuf), *recvcount,
                                                    PMPI_Type_f2c(*type), PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm)));
}

// An INTEGER array of `n` entries as the int array the C path takes (the
// same memory when MPI_Fint is int). `significant`: false where MPI ignores
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

void f_reduce_scatter(void* sendbuf, void* recvbuf, MPI_Fint* recvcounts, MPI_Fint* type, MPI_Fint* op,
                      MPI_Fint* comm, MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    Ints counts;
    set_ierr(ierr, chorus_mpi::reduce_scatter(send_buffer(sendbuf), buffer(recvbuf), counts.get(recvcounts, c),
                                              PMPI_Type_f2c(*type), PMPI_Op_f2c(*op), c));
}

void f_allgather(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
                 MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr) {
    set_ierr(ierr, chorus_mpi::allgather(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), buffer(recvbuf),
                                         *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm)));
}

void f_allgatherv(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcounts,
                  MPI_Fint* displs, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    Ints counts, offsets;
    set_ierr(ierr,
             chorus_mpi::allgatherv(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), buffer(recvbuf),
                                    counts.get(recvcounts, c), offsets.get(displs, c), PMPI_Type_f2c(*recvtype), c));
}

void f_alltoall(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
                MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr) {
    set_ierr(ierr, chorus_mpi::alltoall(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), buffer(recvbuf),
                                        *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm)));
}

void f_alltoallv(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* sdispls, MPI_Fint* sendtype, void* recvbuf,
                 MPI_Fint* recvcounts, MPI_Fint* rdispls, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    void* s = send_buffer(sendbuf);
    const bool sends = s != MPI_IN_PLACE;
    Ints sc, sd, rc, rd;
    set_ierr(ierr, chorus_mpi::alltoallv(s, sc.get(sendcounts, c, sends), sd.get(sdispls, c, sends),
                                         PMPI_Type_f2c(*sendtype), buffer(recvbuf), rc.get(recvcounts, c),
                                         rd.get(rdispls, c), PMPI_Type_f2c(*recvtype), c));
}

void f_gather(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
              MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr) {
    set_ierr(ierr, chorus_mpi::gather(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), buffer(recvbuf),
                                      *recvcount, PMPI_Type_f2c(*recvtype), *root, PMPI_Comm_f2c(*comm)));
}

void f_gatherv(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcounts,
               MPI_Fint* displs, MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    const bool r = at_root(c, *root);
    Ints counts, offsets;
    set_ierr(ierr, chorus_mpi::gatherv(send_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), buffer(recvbuf),
                                       counts.get(recvcounts, c, r), offsets.get(displs, c, r),
                                       PMPI_Type_f2c(*recvtype), *root, c));
}

// A scatter's MPI_IN_PLACE is its receive buffer (on the root).
void f_scatter(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
               MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr) {
    set_ierr(ierr, chorus_mpi::scatter(buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), send_buffer(recvbuf),
                                       *recvcount, PMPI_Type_f2c(*recvtype), *root, PMPI_Comm_f2c(*comm)));
}

void f_scatterv(void* sendbuf, MPI_Fint* sendcounts, MPI_Fint* displs, MPI_Fint* sendtype, void* recvbuf,
                MPI_Fint* recvcount, MPI_Fint* recvtype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr) {
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    const bool r = at_root(c, *root);
    Ints counts, offsets;
    set_ierr(ierr, chorus_mpi::scatterv(buffer(sendbuf), counts.get(sendcounts, c, r), offsets.get(displs, c, r),
                                        PMPI_Type_f2c(*sendtype), send_buffer(recvbuf), *recvcount,
                                        PMPI_Type_f2c(*recvtype), *root, c));
}

void f_barrier(MPI_Fint* comm, MPI_Fint* ierr) {
    set_ierr(ierr, chorus_mpi::barrier(PMPI_Comm_f2c(*comm)));
}

}  // namespace

// Five spellings of each subroutine, all calling the one above.
#define CHORUS_FORTRAN(lower, upper, impl, params, args)  \
    extern "C" void lower params { impl args; }          \
    extern "C" void lower##_ params { impl args; }       \
    extern "C" void lower##__ params { impl args; }      \
    extern "C" void lower##_f08_ params { impl args; }   \
    extern "C" void upper params { impl args; }

CHORUS_FORTRAN(mpi_allreduce, MPI_ALLREDUCE, f_allreduce,
               (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* e),
               (s, r, n, t, o, c, e))
CHORUS_FORTRAN(mpi_bcast, MPI_BCAST, f_bcast,
               (void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* root, MPI_Fint* c, MPI_Fint* e),
               (b, n, t, root, c, e))
CHORUS_FORTRAN(mpi_reduce, MPI_REDUCE, f_reduce,
               (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* root, MPI_Fint* c, MPI_Fint* e),
               (s, r, n, t, o, root, c, e))
CHORUS_FORTRAN(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, f_reduce_scatter_block,
               (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* e),
               (s, r, n, t, o, c, e))
CHORUS_FORTRAN(mpi_reduce_scatter, MPI_REDUCE_SCATTER, f_reduce_scatter,
               (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* e),
               (s, r, n, t, o, c, e))
CHORUS_FORTRAN(mpi_allgather, MPI_ALLGATHER, f_allgather,
               (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* c, MPI_Fint* e),
               (s, sn, st, r, rn, rt, c, e))
CHORUS_FORTRAN(mpi_allgatherv, MPI_ALLGATHERV, f_allgatherv,
               (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* d, MPI_Fint* rt, MPI_Fint* c,
                MPI_Fint* e),
               (s, sn, st, r, rn, d, rt, c, e))
CHORUS_FORTRAN(mpi_alltoall, MPI_ALLTOALL, f_alltoall,
               (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* c, MPI_Fint* e),
               (s, sn, st, r, rn, rt, c, e))
CHORUS_FORTRAN(mpi_alltoallv, MPI_ALLTOALLV, f_alltoallv,
               (void* s, MPI_Fint* sn, MPI_Fint* sd, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rd, MPI_Fint* rt,
                MPI_Fint* c, MPI_Fint* e),
               (s, sn, sd, st, r, rn, rd, rt, c, e))
CHORUS_FORTRAN(mpi_gather, MPI_GATHER, f_gather,
               (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* root, MPI_Fint* c,
                MPI_Fint* e),
               (s, sn, st, r, rn, rt, root, c, e))
CHORUS_FORTRAN(mpi_gatherv, MPI_GATHERV, f_gatherv,
               (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* d, MPI_Fint* rt, MPI_Fint* root,
                MPI_Fint* c, MPI_Fint* e),
               (s, sn, st, r, rn, d, rt, root, c, e))
CHORUS_FORTRAN(mpi_scatter, MPI_SCATTER, f_scatter,
               (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* root, MPI_Fint* c,
                MPI_Fint* e),
               (s, sn, st, r, rn, rt, root, c, e))
CHORUS_FORTRAN(mpi_scatterv, MPI_SCATTERV, f_scatterv,
               (void* s, MPI_Fint* sn, MPI_Fint* d, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* root,
                MPI_Fint* c, MPI_Fint* e),
               (s, sn, d, st, r, rn, rt, root, c, e))
CHORUS_FORTRAN(mpi_barrier, MPI_BARRIER, f_barrier, (MPI_Fint* c, MPI_Fint* e), (c, e))

#endif  // OPEN_MPI
