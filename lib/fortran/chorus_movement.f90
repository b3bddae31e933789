! chorus_movement.f90 - the data-movement collectives of the module `chorus`
! (chorus.F90, whose header says how C maps to Fortran): chorus_allgatherv,
! chorus_alltoall(v), chorus_gather(v), chorus_scatter(v), chorus_barrier,
! each with its nonblocking twin, wrapped as chorus_core.F90 wraps the
! reductions.
!
! Blocking: buffers are `contiguous` (a strided section is copied in and
! out around the call). Nonblocking: buffers are passed as they are and
! must be contiguous. Count and displacement arrays are integer(c_size_t),
! one entry per rank, displacements in elements from the start of the
! buffer (from 0, as in C); the library copies them, so a compiler's copy of
! a section is fine even for a nonblocking call. A root-only buffer or
! array (gather's recvbuf, scatter's sendbuf, and their counts and
! displacements), and alltoallv's sendcounts and sdispls in place, may be
! any array where it is ignored, e.g. a zero-size one.
module chorus_movement
  use, intrinsic :: iso_c_binding
  use chorus_c
  use chorus_core, only: chorus_comm_t, chorus_request_t, contiguous_buffers
  implicit none
  private

  ! Each with its nonblocking twin.
  public :: chorus_allgatherv, chorus_iallgatherv
  public :: chorus_alltoall, chorus_ialltoall
  public :: chorus_alltoallv, chorus_ialltoallv
  public :: chorus_gather, chorus_igather
  public :: chorus_gatherv, chorus_igatherv
  public :: chorus_scatter, chorus_iscatter
  public :: chorus_scatterv, chorus_iscatterv
  public :: chorus_barrier, chorus_ibarrier

contains

  integer(c_int) function chorus_allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, comm, stream) &
      result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    integer(c_size_t), intent(in) :: sendcount
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:), displs(:)
    integer(c_int), intent(in) :: datatype
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_allgatherv(c_loc(sendbuf), sendcount, c_loc(recvbuf), recvcounts, displs, datatype, comm%ptr, stream)
  end function

  integer(c_int) function chorus_iallgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, comm, stream, &
      request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer(c_size_t), intent(in) :: sendcount
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:), displs(:)
    integer(c_int), intent(in) :: datatype
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_iallgatherv', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) &
        return
    rc = c_iallgatherv(c_loc(sendbuf), sendcount, c_loc(recvbuf), recvcounts, displs, datatype, comm%ptr, stream, &
        request%ptr)
  end function

  integer(c_int) function chorus_alltoall(sendbuf, recvbuf, count, datatype, comm, stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_alltoall(c_loc(sendbuf), c_loc(recvbuf), count, datatype, comm%ptr, stream)
  end function

  integer(c_int) function chorus_ialltoall(sendbuf, recvbuf, count, datatype, comm, stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_ialltoall', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) return
    rc = c_ialltoall(c_loc(sendbuf), c_loc(recvbuf), count, datatype, comm%ptr, stream, request%ptr)
  end function

  integer(c_int) function chorus_alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype, comm, &
      stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    integer(c_size_t), intent(in) :: sendcounts(:), sdispls(:)
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:), rdispls(:)
    integer(c_int), intent(in) :: datatype
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_alltoallv(c_loc(sendbuf), sendcounts, sdispls, c_loc(recvbuf), recvcounts, rdispls, datatype, comm%ptr, &
        stream)
  end function

  integer(c_int) function chorus_ialltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype, &
      comm, stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer(c_size_t), intent(in) :: sendcounts(:), sdispls(:)
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:), rdispls(:)
    integer(c_int), intent(in) :: datatype
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_ialltoallv', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) &
        return
    rc = c_ialltoallv(c_loc(sendbuf), sendcounts, sdispls, c_loc(recvbuf), recvcounts, rdispls, datatype, comm%ptr, &
        stream, request%ptr)
  end function

  integer(c_int) function chorus_gather(sendbuf, recvbuf, count, datatype, root, comm, stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_gather(c_loc(sendbuf), c_loc(recvbuf), count, datatype, root, comm%ptr, stream)
  end function

  integer(c_int) function chorus_igather(sendbuf, recvbuf, count, datatype, root, comm, stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_igather', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) return
    rc = c_igather(c_loc(sendbuf), c_loc(recvbuf), count, datatype, root, comm%ptr, stream, request%ptr)
  end function

  integer(c_int) function chorus_gatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, root, comm, &
      stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    integer(c_size_t), intent(in) :: sendcount
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:), displs(:)
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_gatherv(c_loc(sendbuf), sendcount, c_loc(recvbuf), recvcounts, displs, datatype, root, comm%ptr, stream)
  end function

  integer(c_int) function chorus_igatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, root, comm, &
      stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer(c_size_t), intent(in) :: sendcount
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:), displs(:)
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_igatherv', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) return
    rc = c_igatherv(c_loc(sendbuf), sendcount, c_loc(recvbuf), recvcounts, displs, datatype, root, comm%ptr, stream, &
        request%ptr)
  end function

  integer(c_int) function chorus_scatter(sendbuf, recvbuf, count, datatype, root, comm, stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_scatter(c_loc(sendbuf), c_loc(recvbuf), count, datatype, root, comm%ptr, stream)
  end function

  integer(c_int) function chorus_iscatter(sendbuf, recvbuf, count, datatype, root, comm, stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: count
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_iscatter', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) return
    rc = c_iscatter(c_loc(sendbuf), c_loc(recvbuf), count, datatype, root, comm%ptr, stream, request%ptr)
  end function

  integer(c_int) function chorus_scatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, datatype, root, comm, &
      stream) result(rc)
    type(*), dimension(..), intent(in), target, contiguous :: sendbuf
    integer(c_size_t), intent(in) :: sendcounts(:), displs(:)
    type(*), dimension(..), intent(inout), target, contiguous :: recvbuf
    integer(c_size_t), intent(in) :: recvcount
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_scatterv(c_loc(sendbuf), sendcounts, displs, c_loc(recvbuf), recvcount, datatype, root, comm%ptr, stream)
  end function

  integer(c_int) function chorus_iscatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, datatype, root, comm, &
      stream, request) result(rc)
    type(*), dimension(..), intent(in), target, asynchronous :: sendbuf
    integer(c_size_t), intent(in) :: sendcounts(:), displs(:)
    type(*), dimension(..), intent(inout), target, asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: recvcount
    integer(c_int), intent(in) :: datatype, root
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    if (.not. contiguous_buffers('chorus_iscatterv', comm, is_contiguous(sendbuf), is_contiguous(recvbuf), rc)) return
    rc = c_iscatterv(c_loc(sendbuf), sendcounts, displs, c_loc(recvbuf), recvcount, datatype, root, comm%ptr, stream, &
        request%ptr)
  end function

  integer(c_int) function chorus_barrier(comm, stream) result(rc)
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    rc = c_barrier(comm%ptr, stream)
  end function

  integer(c_int) function chorus_ibarrier(comm, stream, request) result(rc)
    type(chorus_comm_t), intent(in) :: comm
    type(c_ptr), intent(in) :: stream
    type(chorus_request_t), intent(out) :: request
    rc = c_ibarrier(comm%ptr, stream, request%ptr)
  end function

end module chorus_movement
