! chorus.F90 - the Fortran module of Chorus: `use chorus`.
!
! Every call of include/chorus.h but the memory and settings calls for tools
! (chorus_memory_kind, chorus_device_memory_possible, chorus_memcpy,
! chorus_has_cuda, chorus_setting), with
! the same names, arguments and order, as functions that return the
! chorus_result_t (CHORUS_SUCCESS is 0):
!
!   rc = chorus_allreduce(sendbuf, recvbuf, count, CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr)
!   rc = chorus_gatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, CHORUS_INT32, root, comm, c_null_ptr)
!
! Mapping from C:
!   - handles are derived types wrapping a type(c_ptr) (chorus_comm_t,
!     chorus_request_t); CHORUS_COMM_NULL and CHORUS_REQUEST_NULL are the
!     NULL handles, and a handle is NULL until created;
!   - buffers are assumed-type, assumed-rank (type(*), dimension(..)): any
!     integer, real, complex or logical scalar or array of any rank is
!     passed as it is. Blocking calls take any array; a non-contiguous one
!     (a strided section) is copied in and out by the compiler. Nonblocking
!     calls need contiguous buffers (they return CHORUS_ERR_INVALID_ARGUMENT
!     otherwise, since a copy would not outlive the call); give the actual
!     arrays the ASYNCHRONOUS (or TARGET) attribute so the compiler does not
!     move their accesses across chorus_wait/chorus_test. The datatype
!     argument says what the bytes are, as in C;
!   - a buffer or array that C lets a rank pass as NULL where it is ignored
!     (broadcast's and scatter(v)'s sendbuf, reduce's and gather(v)'s recvbuf
!     off the root, the root-only counts and displacements of gatherv and
!     scatterv, alltoallv's sendcounts and sdispls in place) is still an
!     argument: pass any array there, e.g. a zero-size one;
!   - counts are integer(c_size_t) (write int(n, c_size_t) or 10_c_size_t),
!     and so are the count and displacement arrays of the v-forms, one
!     entry per rank, displacements in elements from the start of the
!     buffer (from 0, as in C); datatypes, ops, roots and results are
!     integer(c_int);
!   - `stream` is a type(c_ptr) holding a cudaStream_t, c_null_ptr for none;
!   - chorus_comm_create takes a `use mpi` INTEGER communicator (converted
!     with MPI_Comm_f2c) or, when built with mpi_f08, a type(MPI_Comm);
!   - chorus_comm_set_label's label is a character string, passed without
!     its trailing blanks (NUL-terminated for C); absent or blank, it
!     removes the label (NULL or "" in C);
!   - chorus_test's `done` is a LOGICAL; chorus_wait, a chorus_test that
!     reports done, and chorus_comm_destroy set their handle to NULL;
!   - chorus_get_error_string and chorus_comm_last_error return
!     character(len=:), allocatable; chorus_comm_last_error's comm is
!     optional (absent: the error of a call that had no valid communicator).
!
! The pieces: chorus_core.F90 (constants, handles, communicators, requests),
! and two files that bindings.py generates at build time from its table of
! chorus.h's functions: chorus_collectives.f90 (the wrappers of every
! collective and its nonblocking twin) and chorus_c.f90 (the bind(C)
! interfaces through which both call C). This module puts them together.
!
! To add a collective of chorus.h (and its nonblocking twin), add its row to
! COLLECTIVES in bindings.py: its name and its arguments' names in C's order
! (a new argument name also gets an entry in ARGUMENTS there). Any other
! function: its interface in OTHERS there, its wrapper and its name in the
! `public` list of chorus_core.F90.
module chorus
  use chorus_core
  use chorus_collectives
  implicit none
  ! Shared by the pieces, not for callers.
  private :: contiguous_buffers
end module chorus
