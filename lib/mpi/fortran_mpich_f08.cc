// MPICH's `use mpi_f08` calls that skip the C layer. Its other Fortran
// wrappers end in the C MPI_* functions, which this library defines (see
// fortran.h), but mpi_wait_f08_, mpi_test_f08_ and the rest of those
// families, mpi_request_free_f08_, mpi_request_get_status_f08_,
// mpi_barrier_f08_ and mpi_ibarrier_f08_ call PMPI_Wait and the rest
// themselves (libmpichfort of MPICH 4.0): a request of the interposer's
// waited for there would wait forever, and the barriers would not run
// through Chorus. These names take their place and call the
// library's C functions. Their arguments are C's, by reference: MPICH's
// TYPE(MPI_Request) is its integer handle, an MPI_Request; its
// TYPE(MPI_Status) is laid out as MPI_Status; MPI_STATUS_IGNORE and
// MPI_STATUSES_IGNORE are the objects MPIR_F08_MPI_STATUS(ES)_IGNORE_OBJ;
// `ierror` may be absent (a null pointer); indices are 1-based.
#include <dlfcn.h>

#include "interposer.h"  // and mpi.h, which says which MPI this is

#if defined(MPICH_NUMVERSION) && !defined(OPEN_MPI)

namespace {

MPI_Status* status_arg(MPI_Status* s) {
    static const void* const ignore = dlsym(RTLD_DEFAULT, "MPIR_F08_MPI_STATUS_IGNORE_OBJ");
    return ignore && s == ignore ? MPI_STATUS_IGNORE : s;
}

MPI_Status* statuses_arg(MPI_Status* s) {
    static const void* const ignore = dlsym(RTLD_DEFAULT, "MPIR_F08_MPI_STATUSES_IGNORE_OBJ");
    return ignore && s == ignore ? MPI_STATUSES_IGNORE : s;
}

void finish(int rc, int* ierror) {
    if (ierror) *ierror = rc;
}

int one_based(int index) {
    return index == MPI_UNDEFINED ? index : index + 1;
}

void one_based(int* outcount, int* indices) {
    if (*outcount == MPI_UNDEFINED) return;
    for (int i = 0; i < *outcount; ++i) ++indices[i];
}

}  // namespace

extern "C" {

void mpi_wait_f08_(MPI_Request* request, MPI_Status* status, int* ierror) {
    finish(MPI_Wait(request, status_arg(status)), ierror);
}

void mpi_test_f08_(MPI_Request* request, int* flag, MPI_Status* status, int* ierror) {
    int done = 0;
    const int rc = MPI_Test(request, &done, status_arg(status));
    *flag = done != 0;
    finish(rc, ierror);
}

void mpi_waitall_f08_(int* count, MPI_Request* requests, MPI_Status* statuses, int* ierror) {
    finish(MPI_Waitall(*count, requests, statuses_arg(statuses)), ierror);
}

void mpi_testall_f08_(int* count, MPI_Request* requests, int* flag, MPI_Status* statuses, int* ierror) {
    int done = 0;
    const int rc = MPI_Testall(*count, requests, &done, statuses_arg(statuses));
    *flag = done != 0;
    finish(rc, ierror);
}

void mpi_waitany_f08_(int* count, MPI_Request* requests, int* index, MPI_Status* status, int* ierror) {
    int i = MPI_UNDEFINED;
    const int rc = MPI_Waitany(*count, requests, &i, status_arg(status));
    *index = one_based(i);
    finish(rc, ierror);
}

void mpi_testany_f08_(int* count, MPI_Request* requests, int* index, int* flag, MPI_Status* status, int* ierror) {
    int i = MPI_UNDEFINED, done = 0;
    const int rc = MPI_Testany(*count, requests, &i, &done, status_arg(status));
    *index = one_based(i);
    *flag = done != 0;
    finish(rc, ierror);
}

void mpi_waitsome_f08_(int* incount, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses,
                       int* ierror) {
    const int rc = MPI_Waitsome(*incount, requests, outcount, indices, statuses_arg(statuses));
    one_based(outcount, indices);
    finish(rc, ierror);
}

void mpi_testsome_f08_(int* incount, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses,
                       int* ierror) {
    const int rc = MPI_Testsome(*incount, requests, outcount, indices, statuses_arg(statuses));
    one_based(outcount, indices);
    finish(rc, ierror);
}

void mpi_request_free_f08_(MPI_Request* request, int* ierror) {
    finish(MPI_Request_free(request), ierror);
}

void mpi_barrier_f08_(MPI_Comm* comm, int* ierror) {
    finish(MPI_Barrier(*comm), ierror);
}

void mpi_ibarrier_f08_(MPI_Comm* comm, MPI_Request* request, int* ierror) {
    finish(MPI_Ibarrier(*comm, request), ierror);
}

void mpi_request_get_status_f08_(MPI_Request* request, int* flag, MPI_Status* status, int* ierror) {
    int done = 0;
    const int rc = MPI_Request_get_status(*request, &done, status_arg(status));
    *flag = done != 0;
    finish(rc, ierror);
}

}  // extern "C"

#endif  // MPICH
