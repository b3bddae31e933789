! What the Fortran tests share: this rank, the size and the failures seen
! here; the communicator under test (`comm`, whose last error a failed call
! reports); checks that count failures; the verdict over every rank; and,
! for the data-movement test, how a collective is completed (`complete`)
! and block layouts of the v-forms (`layout`, `extent`).
module fortran_checks
  use mpi
  use chorus
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: me, np, failures, comm, start, finish, check, ok_call, same_f64, same_f32
  public :: BLOCKING, WAIT, TEST, how, complete, layout, extent

  integer :: me = 0, np = 0, failures = 0
  type(chorus_comm_t) :: comm
  ! How a collective is completed: the blocking call, or its nonblocking
  ! twin and chorus_wait, or its twin and chorus_test until done.
  integer, parameter :: BLOCKING = 0, WAIT = 1, TEST = 2
  character(*), parameter :: how(0:2) = [character(16) :: 'blocking', 'i + chorus_wait', 'i + chorus_test']

contains

  subroutine start()
    integer :: ierr
    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    failures = 0
  end subroutine

  ! Rank 0 prints `what` passed or FAILED (on any rank); exit status 1 if
  ! it failed.
  subroutine finish(what)
    character(*), intent(in) :: what
    integer :: anyfail, ierr
    call MPI_Allreduce(failures, anyfail, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
    if (me == 0) print '(a, a, i0, a)', what, ' at np=', np, merge(' passed', ' FAILED', anyfail == 0)
    call MPI_Finalize(ierr)
    if (anyfail /= 0) stop 1
  end subroutine


  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (ok) return
    print '(a, i0, a, a)', 'rank ', me, ': FAIL ', what
    failures = failures + 1
  end subroutine

  ! Floating data compared bit for bit.
  logical function same_f64(a, b)
    real(c_double), intent(in) :: a(:), b(:)
    same_f64 = size(a) == size(b)
    if (same_f64) same_f64 = all(transfer(a, 0_c_int64_t, size(a)) == transfer(b, 0_c_int64_t, size(b)))
  end function

  logical function same_f32(a, b)
    real(c_float), intent(in) :: a(:), b(:)
    same_f32 = size(a) == size(b)
    if (same_f32) same_f32 = all(transfer(a, 0_c_int32_t, size(a)) == transfer(b, 0_c_int32_t, size(b)))
  end function

  ! A call that must succeed; the library's message (on `comm`) if it does not.
  subroutine ok_call(rc, what)
    integer(c_int), intent(in) :: rc
    character(*), intent(in) :: what
    if (rc == CHORUS_SUCCESS) return
    call check(.false., what // ': ' // chorus_get_error_string(rc) // ': ' // chorus_comm_last_error(comm))
  end subroutine

  ! The result of a call made in `mode`: for a nonblocking one, completes
  ! its request, which then is NULL.
  subroutine complete(rc, req, mode, what)
    integer(c_int), intent(in) :: rc
    type(chorus_request_t), intent(inout) :: req
    integer, intent(in) :: mode
    character(*), intent(in) :: what
    logical :: done
    integer(c_int) :: rc_test
    call ok_call(rc, what // ' (' // trim(how(mode)) // ')')
    if (mode == BLOCKING .or. rc /= CHORUS_SUCCESS) return
    if (mode == WAIT) then
      call ok_call(chorus_wait(req), what // ': chorus_wait')
    else
      done = .false.
      do while (.not. done)
        rc_test = chorus_test(req, done)
        call ok_call(rc_test, what // ': chorus_test')
        if (rc_test /= CHORUS_SUCCESS) exit
      end do
    end if
    call check(.not. c_associated(req%ptr), what // ': the completed request is NULL')
  end subroutine

  ! Displacements of blocks of `counts`, each after a gap of `gap`
  ! elements, in rank order or its reverse; the buffer ends with one more gap.
  function layout(counts, gap, reverse) result(displs)
    integer(c_size_t), intent(in) :: counts(:)
    integer, intent(in) :: gap
    logical, intent(in) :: reverse
    integer(c_size_t) :: displs(size(counts)), at
    integer :: k, i
    at = 0
    do k = 1, size(counts)
      i = merge(size(counts) + 1 - k, k, reverse)
      displs(i) = at + gap
      at = displs(i) + counts(i)
    end do
  end function

  integer function extent(counts, gap)
    integer(c_size_t), intent(in) :: counts(:)
    integer, intent(in) :: gap
    extent = int(sum(counts)) + gap * (size(counts) + 1)
  end function

end module
