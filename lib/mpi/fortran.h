// What the Fortran entry points share (fortran.cc, fortran_requests.cc).
// Open MPI's Fortran bindings (mpif.h, `use mpi`, `use mpi_f08`) call
// PMPI_* directly, so the C definitions never see Fortran calls: these
// names take their place. They convert the handles and the sentinels as
// Open MPI's own wrappers do, then share the C path (and its statistics).
// Every argument comes by reference; `ierr` may be absent (a null pointer)
// in the mpi_f08 bindings.
//
// gfortran names a subroutine mpi_allreduce_; other compilers and Open MPI
// builds use mpi_allreduce, mpi_allreduce__ or MPI_ALLREDUCE, so all four
// are defined. The mpi_f08 module calls mpi_allreduce_f08_, whose arguments
// are laid out the same way (a TYPE(MPI_Comm), TYPE(MPI_Request) is one
// INTEGER, a TYPE(MPI_Status) is MPI_STATUS_SIZE of them).
//
// MPICH (and the MPIs built from it) needs none of this: its Fortran
// wrappers turn its own sentinels into the C ones and then call the C
// MPI_Allreduce, MPI_Wait, ... (not PMPI_*), which this library already
// defines. In libmpichfort, mpi_allreduce_ (mpif.h, `use mpi`; MPI_BOTTOM and
// MPI_IN_PLACE live in the common block MPIPRIV1) and mpi_allreduce_f08ts_
// (mpi_f08; the variables MPIR_F08_MPI_BOTTOM and MPIR_F08_MPI_IN_PLACE)
// both end in a call to MPI_Allreduce@plt. Defining the Fortran names there
// would take the place of MPICH's wrappers and see its sentinels as
// ordinary buffers: wrong data for MPI_IN_PLACE, a stray address for
// MPI_BOTTOM. So fortran.cc and fortran_requests.cc define them only where
// mpi.h says it is Open MPI.
#pragma once

#include <vector>

#include "interposer.h"

namespace chorus_mpi::fortran {

// Fortran's MPI_IN_PLACE, MPI_BOTTOM, MPI_STATUS_IGNORE and
// MPI_STATUSES_IGNORE are common-block variables; an argument is one of
// them when its address is theirs. The symbol that the program and libmpi
// share is found the way the dynamic linker finds it for them.
struct Sentinels {
    std::vector<const void*> in_place, bottom, status_ignore, statuses_ignore;
};
const Sentinels& sentinels();

bool is_one_of(const void* p, const std::vector<const void*>& set);

inline void* buffer(void* p) {
    return is_one_of(p, sentinels().bottom) ? MPI_BOTTOM : p;
}

inline void* send_buffer(void* p) {
    return is_one_of(p, sentinels().in_place) ? MPI_IN_PLACE : buffer(p);
}

inline void set_ierr(MPI_Fint* ierr, int rc) {
    if (ierr) *ierr = static_cast<MPI_Fint>(rc);
}

// The request of a nonblocking form (none for the blocking one, `f` null):
// the C one the call sets, handed back to Fortran if the call succeeded.
class Request {
public:
    explicit Request(MPI_Fint* f) : f_(f) {}
    MPI_Request* c() { return f_ ? &c_ : nullptr; }
    int done(int rc) {
        if (f_ && rc == MPI_SUCCESS) *f_ = PMPI_Request_c2f(c_);
        return rc;
    }

private:
    MPI_Fint* f_;
    MPI_Request c_ = MPI_REQUEST_NULL;
};

}  // namespace chorus_mpi::fortran

// Five spellings of each subroutine, all calling the one given.
#define CHORUS_FORTRAN(lower, upper, impl, params, args) \
    extern "C" void lower params {                       \
        impl args;                                       \
    }                                                    \
    extern "C" void lower##_ params {                    \
        impl args;                                       \
    }                                                    \
    extern "C" void lower##__ params {                   \
        impl args;                                       \
    }                                                    \
    extern "C" void lower##_f08_ params {                \
        impl args;                                       \
    }                                                    \
    extern "C" void upper params {                       \
        impl args;                                       \
    }
