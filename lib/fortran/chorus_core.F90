! chorus_core.F90 - the module `chorus` (chorus.F90; its header says how C
! maps to Fortran) but for the data-movement collectives of
! chorus_movement.f90: the constants, the handles, communicators, requests,
! the reductions and chorus_allgather, and what the wrappers share
! (contiguous_buffers, public for chorus_movement.f90 but not from `chorus`).
module chorus_core
  use, intrinsic :: iso_c_binding
  use chorus_c
#ifdef CHORUS_FORTRAN_MPI_F08
  use mpi_f08, only: MPI_Comm
#endif
  implicit none
  private

  ! ---------------------------------------------------------------- constants
  integer(c_int), parameter, public :: CHORUS_VERSION_MAJOR = 0
  integer(c_int), parameter, public :: CHORUS_VERSION_MINOR = 1
  integer(c_int), parameter, public :: CHORUS_VERSION_PATCH = 0

  ! chorus_result_t
  integer(c_int), parameter, public :: CHORUS_SUCCESS = 0
  integer(c_int), parameter, public :: CHORUS_ERR_INVALID_ARGUMENT = 1
  integer(c_int), parameter, public :: CHORUS_ERR_UNSUPPORTED = 2
  integer(c_int), parameter, public :: CHORUS_ERR_OUT_OF_MEMORY = 3
  integer(c_int), parameter, public :: CHORUS_ERR_TRANSPORT = 4
  integer(c_int), parameter, public :: CHORUS_ERR_CUDA = 5
  integer(c_int), parameter, public :: CHORUS_ERR_TIMEOUT = 6
  integer(c_int), parameter, public :: CHORUS_ERR_PEER_FAILED = 7
  integer(c_int), parameter, public :: CHORUS_ERR_COMM_FAILED = 8
  integer(c_int), parameter, public :: CHORUS_ERR_MISMATCH = 9
  integer(c_int), parameter, public :: CHORUS_ERR_INTERNAL = 10
  integer(c_int), parameter, public :: CHORUS_ERR_CONFIG = 11

  ! chorus_datatype_t. Fortran kinds: INT8..INT64 are integer(c_int8_t) ..
  ! integer(c_int64_t) (default INTEGER is INT32), FLOAT32 is real(c_float)
  ! (default REAL), FLOAT64 is real(c_double); unsigned and 16-bit floating
  ! types have no Fortran kind but can travel in integer arrays of their size.
  integer(c_int), parameter, public :: CHORUS_INT8 = 0
  integer(c_int), parameter, public :: CHORUS_UINT8 = 1
  integer(c_int), parameter, public :: CHORUS_INT16 = 2
  integer(c_int), parameter, public :: CHORUS_UINT16 = 3
  integer(c_int), parameter, public :: CHORUS_INT32 = 4
  integer(c_int), parameter, public :: CHORUS_UINT32 = 5
  integer(c_int), parameter, public :: CHORUS_INT64 = 6
  integer(c_int), parameter, public :: CHORUS_UINT64 = 7
  integer(c_int), parameter, public :: CHORUS_FLOAT16 = 8
  integer(c_int), parameter, public :: CHORUS_BFLOAT16 = 9
  integer(c_int), parameter, public :: CHORUS_FLOAT32 = 10
  integer(c_int), parameter, public :: CHORUS_FLOAT64 = 11
  integer(c_int), parameter, public :: CHORUS_NUM_DATATYPES = 12

  ! chorus_op_t
  integer(c_int), parameter, public :: CHORUS_SUM = 0
  integer(c_int), parameter, public :: CHORUS_PROD = 1
  integer(c_int), parameter, public :: CHORUS_MIN = 2
  integer(c_int), parameter, public :: CHORUS_MAX = 3
  integer(c_int), parameter, public :: CHORUS_AVG = 4
  integer(c_int), parameter, public :: CHORUS_BAND = 5
  integer(c_int), parameter, public :: CHORUS_BOR = 6
  integer(c_int), parameter, public :: CHORUS_BXOR = 7
  integer(c_int), parameter, public :: CHORUS_LAND = 8
  integer(c_int), parameter, public :: CHORUS_LOR = 9
  integer(c_int), parameter, public :: CHORUS_LXOR = 10
  integer(c_int), parameter, public :: CHORUS_NUM_OPS = 11

  ! ------------------------------------------------------------------ handles
  type, public :: chorus_comm_t
    type(c_ptr) :: ptr = c_null_ptr
  end type

  type, public :: chorus_request_t
    type(c_ptr) :: ptr = c_null_ptr
  end type

  type(chorus_comm_t), parameter, public :: CHORUS_COMM_NULL = chorus_comm_t(c_null_ptr)
  type(chorus_request_t), parameter, public :: CHORUS_REQUEST_NULL = chorus_request_t(c_null_ptr)

  ! ------------------------------------------------------------ public calls
  public :: chorus_get_error_string, chorus_comm_last_error
  public :: chorus_comm_create, chorus_comm_destroy, chorus_comm_abort, chorus_comm_set_label, chorus_comm_set_idle
  public :: chorus_comm_rank, chorus_comm_size
  public :: chorus_test, chorus_wait
  ! Collectives, each with its nonblocking twin.
  public :: chorus_allreduce, chorus_iallreduce
  public :: chorus_broadcast, chorus_ibroadcast
  public :: chorus_reduce, chorus_ireduce
  public :: chorus_reduce_scatter, chorus_ireduce_scatter
  public :: chorus_reduce_scatterv, chorus_ireduce_scatterv
  public :: chorus_allgather, chorus_iallgather
  ! For the wrappers of chorus_movement.f90.
  public :: contiguous_buffers

  interface chorus_comm_create
    module procedure chorus_comm_create_integer
#ifdef CHORUS_FORTRAN_MPI_F08
    module procedure chorus_comm_create_f08
#endif
  end interface

  ! An error found here, before the library is called (a non-contiguous
  ! buffer given to a nonblocking call): its message, the communicator, and
  ! the library's message at that moment, so chorus_comm_last_error reports
  ! it until the library reports a newer failure on that communicator.
  character(len=:), allocatable, save :: local_error
  type(c_ptr), save :: local_error_comm = c_null_ptr
  character(len=:), allocatable, save :: local_error_shadow

contains

  ! ------------------------------------------------- strings, communicators

  ! A Fortran copy of a NUL-terminated C string.
  function from_c_string(s) result(str)
    type(c_ptr), intent(in) :: s
    character(len=:), allocatable :: str
    character(kind=c_char), pointer :: chars(:)
    integer(c_size_t) :: n, i
    n = 0
    if (c_associated(s)) n = c_strlen(s)
    allocate(character(len=n) :: str)
    if (n == 0) return
    call c_f_pointer(s, chars, [n])
    do i = 1, n
      str(i:i) = chars(i)
    end do
  end function

  function chorus_get_error_string(code) result(str)
    integer(c_int), intent(in) :: code
    character(len=:), allocatable :: str
    str = from_c_string(c_get_error_string(code))
  end function

  function chorus_comm_last_error(comm) result(str)
    type(chorus_comm_t), intent(in), optional :: comm
    character(len=:), allocatable :: str
    type(c_ptr) :: c
    c = c_null_ptr
    if (present(comm)) c = comm%ptr
    str = from_c_string(c_comm_last_error(c))
    if (allocated(local_error)) then
      if (c_associated(c, local_error_comm) .or. &
          (.not. c_associated(c) .and. .not. c_associated(local_error_comm))) then
        if (str == local_error_shadow) then
          str = local_error
        else
          deallocate(local_error)  ! the library has failed since
        end if
      end if
    end if
  end function

  integer(c_int) function chorus_comm_create_integer(mpi_handle, comm) result(rc)
    integer, intent(in) :: mpi_handle  ! a `use mpi` / mpif.h communicator
    type(chorus_comm_t), intent(out) :: comm
    rc = c_comm_create_f(int(mpi_handle, c_int), comm%ptr)
  end function

#ifdef CHORUS_FORTRAN_MPI_F08
  integer(c_int) function chorus_comm_create_f08(mpi_handle, comm) result(rc)
    type(MPI_Comm), intent(in) :: mpi_handle
    type(chorus_comm_t), intent(out) :: comm
    rc = c_comm_create_f(int(mpi_handle%MPI_VAL, c_int), comm%ptr)
  end function
#endif

  integer(c_int) function chorus_comm_destroy(comm) result(rc)
    type(chorus_comm_t), intent(inout) :: comm
    rc = c_comm_destroy(comm%ptr)
    comm%ptr = c_null_ptr
  end function

  integer(c_int) function chorus_comm_abort(comm) result(rc)
    type(chorus_comm_t), intent(in) :: comm
    rc = c_comm_abort(comm%ptr)
  end function

  ! The label without its trailing blanks (as MPI's Fortran bindings take
  ! names); absent or blank removes it, as NULL or "" do in C.
  integer(c_int) function chorus_comm_set_label(comm, label) result(rc)
    type(chorus_comm_t), intent(in) :: comm
    character(*), intent(in), optional :: label
    character(kind=c_char), allocatable, target :: c_label(:)
    integer :: i, n
    if (.not. present(label)) then
      rc = c_comm_set_label(comm%ptr, c_null_ptr)
      return
    end if
    n = len_trim(label)
    allocate(c_label(n + 1))
    do i = 1, n
      c_label(i) = label(i:i)
    end do
    c_label(n + 1) = c_null_char
    rc = c_comm_set_label(comm%ptr, c_loc(c_label))
  end function

  ! fn: c_funloc of a subroutine(arg) bind(C) with type(c_ptr), value :: arg,
  ! or c_null_funptr to remove it.
  integer(c_int) function chorus_comm_set_idle(comm, fn, arg) result(rc)
    type(chorus_comm_t), intent(in) :: comm
    type(c_funptr), intent(in) :: fn
    type(c_ptr), intent(in) :: arg
    rc = c_comm_set_idle(comm%ptr, fn, arg)
  end function

  integer(c_int) function chorus_comm_rank(comm, rank) result(rc)
    type(chorus_comm_t), intent(in) :: comm
    integer(c_int), intent(out) :: rank
    rank = -1
    rc = c_comm_rank(comm%ptr, rank)
  end function

  integer(c_int) function chorus_comm_size(comm, size) result(rc)
    type(chorus_comm_t), intent(in) :: comm
    integer(c_int), intent(out) :: size
    size = 0
    rc = c_comm_size(comm%ptr, size)
  end function

  ! ---------------------------------------------------------------- requests

  integer(c_int) function chorus_test(request, done) result(rc)
    type(chorus_request_t), intent(inout) :: request
    logical, intent(out) :: done
    integer(c_int) :: d
    d = 0
    rc = c_test(request%ptr, d)
    done = d /= 0
    if (done) request%ptr = c_null_ptr
  end function

  integer(c_int) function chorus_wait(request) result(rc)
    type(chorus_request_t), intent(inout) :: request
    rc = c_wait(request%ptr)
    request%ptr = c_null_ptr
  end function

  ! A nonblocking call hands the library its buffers' addresses, which must
  ! stay valid until the request completes: a compiler's contiguous copy
  ! would not. False (and rc set, the message kept) if either is not.
  logical function contiguous_buffers(fn, comm, send_contiguous, recv_contiguous, rc)
    character(*), intent(in) :: fn
    type(chorus_comm_t), intent(in) :: comm
    logical, intent(in) :: send_contiguous, recv_contiguous
    integer(c_int), intent(out) :: rc
    contiguous_buffers = send_contiguous .and. recv_contiguous
    rc = CHORUS_SUCCESS
    if (contiguous_buffers) return
    rc = CHORUS_ERR_INVALID_ARGUMENT
    local_error = fn // ': ' // merge('sendbuf', 'recvbuf', .not. send_contiguous) // &
        ' is not contiguous (a nonblocking call needs the array itself, not a strided section)'
    local_error_comm = comm%ptr
    local_error_shadow = from_c_string(c_comm_last_error(comm%ptr))
  end function

  ! ------------------------------------------------------------ collectives
  ! Blocking: buffers are `contiguous` (a strided section is copied in and
  ! out around the call). Nonblocking: buffers are passed as they are and
  ! must be contiguous.

  integer(c_int) function chorus_allreduce(sendbuf, recvbuf, count, datatype, op, comm, stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, op
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_allreduce(c_loc(sendbuf), c_loc(recvbuf), count, datatype, op, comm%ptr, stream)
  end function

  integer(c_int) function chorus_iallreduce(sendbuf, recvbuf, count, datatype, op, comm, stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, op
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_iallreduce', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) return
    rc = c_iallreduce(c_loc(sendbuf), c_loc(recvbuf), count, datatype, op, comm%ptr, stream, request%ptr)
  end function

  integer(c_int) function chorus_broadcast(sendbuf, recvbuf, count, datatype, root, comm, stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_broadcast(c_loc(sendbuf), c_loc(recvbuf), count, datatype, root, comm%ptr, stream)
  end function

  integer(c_int) function chorus_ibroadcast(sendbuf, recvbuf, count, datatype, root, comm, stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_ibroadcast', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) return
    rc = c_ibroadcast(c_loc(sendbuf), c_loc(recvbuf), count, datatype, root, comm%ptr, stream, request%ptr)
  end function

  integer(c_int) function chorus_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, op, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_reduce(c_loc(sendbuf), c_loc(recvbuf), count, datatype, op, root, comm%ptr, stream)
  end function

  integer(c_int) function chorus_ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, op, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_ireduce', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) return
    rc = c_ireduce(c_loc(sendbuf), c_loc(recvbuf), count, datatype, op, root, comm%ptr, stream, request%ptr)
  end function

  integer(c_int) function chorus_reduce_scatter(sendbuf, recvbuf, recvcount, datatype, op, comm, stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: recvcount
    integer(c_int), intent(in) :: datatype, op
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_reduce_scatter(c_loc(sendbuf), c_loc(recvbuf), recvcount, datatype, op, comm%ptr, stream)
  end function

  integer(c_int) function chorus_ireduce_scatter(sendbuf, recvbuf, recvcount, datatype, op, comm, stream, request) &
      result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: recvcount
    integer(c_int), intent(in) :: datatype, op
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_ireduce_scatter', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), &
        rc)) return
    rc = c_ireduce_scatter(c_loc(sendbuf), c_loc(recvbuf), recvcount, datatype, op, comm%ptr, stream, request%ptr)
  end function

  integer(c_int) function chorus_reduce_scatterv(sendbuf, recvbuf, recvcounts, datatype, op, comm, stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:)  ! one per rank; copied by the library
    integer(c_int), intent(in) :: datatype, op
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_reduce_scatterv(c_loc(sendbuf), c_loc(recvbuf), recvcounts, datatype, op, comm%ptr, stream)
  end function

  integer(c_int) function chorus_ireduce_scatterv(sendbuf, recvbuf, recvcounts, datatype, op, comm, stream, request) &
      result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:)
    integer(c_int), intent(in) :: datatype, op
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_ireduce_scatterv', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), &
        rc)) return
    rc = c_ireduce_scatterv(c_loc(sendbuf), c_loc(recvbuf), recvcounts, datatype, op, comm%ptr, stream, request%ptr)
  end function

  integer(c_int) function chorus_allgather(sendbuf, recvbuf, sendcount, datatype, comm, stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: sendcount
    integer(c_int), intent(in) :: datatype
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_allgather(c_loc(sendbuf), c_loc(recvbuf), sendcount, datatype, comm%ptr, stream)
  end function

  integer(c_int) function chorus_iallgather(sendbuf, recvbuf, sendcount, datatype, comm, stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: sendcount
    integer(c_int), intent(in) :: datatype
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_iallgather', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) return
    rc = c_iallgather(c_loc(sendbuf), c_loc(recvbuf), sendcount, datatype, comm%ptr, stream, request%ptr)
  end function

end module chorus_core
