! Fortran (use mpi) nonblocking collectives and the calls that complete
! requests, under libchorus_mpi.so: MPI_IALLREDUCE + MPI_WAIT, arrays that
! mix them with MPI_ISEND/MPI_IRECV in MPI_WAITALL, and MPI_TEST, MPI_TESTALL,
! MPI_WAITANY, MPI_TESTANY, MPI_WAITSOME, MPI_TESTSOME,
! MPI_REQUEST_GET_STATUS and MPI_REQUEST_FREE. Open MPI's Fortran MPI_WAIT
! calls PMPI_Wait itself: without the library's Fortran entry points it would
! wait forever for a request of the interposer's. Every result is checked
! against a reference; every collective below must run through Chorus.
program fortran_requests
  use mpi
  use interposer_checks
  use iso_c_binding, only: c_long_long
  use iso_fortran_env, only: int64
  implicit none
  interface
    function intercepted_calls() bind(C, name="interposer_intercepted_calls") result(n)
      import :: c_long_long
      integer(c_long_long) :: n
    end function
    function tracked_requests() bind(C, name="interposer_tracked_requests") result(n)
      import :: c_long_long
      integer(c_long_long) :: n
    end function
  end interface
  integer, parameter :: n = 5
  integer :: ierr, rank, np, left, right, i, calls, idx, outcount
  integer :: a(n), b(n), c(n), msg(3), got(3), sendv(64), gathered(64), mine(2), indices(4)
  integer :: reqs(4), statuses(MPI_STATUS_SIZE, 4), status(MPI_STATUS_SIZE)
  double precision :: d(2)
  logical :: flag
  integer(c_long_long) :: before

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  left = mod(rank + np - 1, np)
  right = mod(rank + 1, np)
  calls = 0
  before = intercepted_calls()

  ! MPI_IALLREDUCE + MPI_WAIT
  a = [(rank * 10 + i, i = 1, n)]
  call MPI_Iallreduce(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call expect(ierr == MPI_SUCCESS .and. reqs(1) /= MPI_REQUEST_NULL, 'MPI_IALLREDUCE started')
  call MPI_Wait(reqs(1), status, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. reqs(1) == MPI_REQUEST_NULL, 'MPI_WAIT')
  call expect(all(b == [(10 * np * (np - 1) / 2 + np * i, i = 1, n)]), 'MPI_IALLREDUCE integer sum')
  call expect(status(MPI_SOURCE) == MPI_ANY_SOURCE .and. status(MPI_TAG) == MPI_ANY_TAG, &
              'MPI_WAIT status of a collective')

  ! MPI_WAITALL over point-to-point requests and collectives
  msg = [rank, 2 * rank, 3 * rank]
  got = -1
  c = merge([(100 + i, i = 1, n)], [(-1, i = 1, n)], rank == 0)
  d = [dble(rank), -dble(rank + 1)]
  call MPI_Irecv(got, 3, MPI_INTEGER, left, 7, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Ibcast(c, n, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Isend(msg, 3, MPI_INTEGER, right, 7, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Iallreduce(MPI_IN_PLACE, d, 2, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Waitall(4, reqs, statuses, ierr)
  calls = calls + 2
  call expect(ierr == MPI_SUCCESS .and. all(reqs == MPI_REQUEST_NULL), 'MPI_WAITALL')
  call expect(all(got == [left, 2 * left, 3 * left]), 'MPI_WAITALL: the message')
  call expect(statuses(MPI_SOURCE, 1) == left .and. statuses(MPI_TAG, 1) == 7, 'MPI_WAITALL: the receive''s status')
  call expect(all(c == [(100 + i, i = 1, n)]), 'MPI_IBCAST')
  call expect(all(transfer(d, 0_int64, 2) == transfer([dble(np - 1), -1d0], 0_int64, 2)), &
              'MPI_IALLREDUCE in place double precision max')
  call expect(statuses(MPI_SOURCE, 2) == MPI_ANY_SOURCE .and. statuses(MPI_ERROR, 2) == MPI_SUCCESS .and. &
              statuses(MPI_TAG, 4) == MPI_ANY_TAG, 'MPI_WAITALL: the collectives'' statuses')

  ! MPI_TEST until done, on a barrier
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1), ierr)
  flag = .false.
  do while (.not. flag .and. ierr == MPI_SUCCESS)
    call MPI_Test(reqs(1), flag, MPI_STATUS_IGNORE, ierr)
  end do
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. reqs(1) == MPI_REQUEST_NULL, 'MPI_IBARRIER by MPI_TEST')

  ! MPI_WAITANY, then MPI_TESTANY, on an all-to-all and a gather
  mine = [rank, -rank]
  sendv(1:np) = [(100 * rank + i - 1, i = 1, np)]
  call MPI_Ialltoall(sendv, 1, MPI_INTEGER, gathered, 1, MPI_INTEGER, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Igather(mine, 2, MPI_INTEGER, gathered(np + 1), 2, MPI_INTEGER, np - 1, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitany(2, reqs, idx, status, ierr)
  call expect(ierr == MPI_SUCCESS .and. (idx == 1 .or. idx == 2) .and. reqs(idx) == MPI_REQUEST_NULL, 'MPI_WAITANY')
  flag = .false.
  do while (.not. flag .and. ierr == MPI_SUCCESS)
    call MPI_Testany(2, reqs, idx, flag, status, ierr)
  end do
  call expect(ierr == MPI_SUCCESS .and. all(reqs(1:2) == MPI_REQUEST_NULL), 'MPI_TESTANY')
  calls = calls + 2
  call expect(all(gathered(1:np) == [(100 * (i - 1) + rank, i = 1, np)]), 'MPI_IALLTOALL')
  if (rank == np - 1) call expect(all(gathered(np + 1:3 * np:2) == [(i, i = 0, np - 1)]) .and. &
                                  all(gathered(np + 2:3 * np:2) == [(-i, i = 0, np - 1)]), 'MPI_IGATHER')

  ! MPI_TESTALL until done, then MPI_WAITSOME and MPI_TESTSOME until all are
  call MPI_Iallreduce(a, b, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(2), ierr)
  flag = .false.
  do while (.not. flag .and. ierr == MPI_SUCCESS)
    call MPI_Testall(2, reqs, flag, statuses, ierr)
  end do
  calls = calls + 2
  call expect(ierr == MPI_SUCCESS .and. all(b == [((np - 1) * 10 + i, i = 1, n)]), 'MPI_TESTALL')
  call MPI_Iallreduce(a, b, n, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Irecv(got, 3, MPI_INTEGER, left, 8, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Isend(msg, 3, MPI_INTEGER, right, 8, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Waitsome(4, reqs, outcount, indices, statuses, ierr)
  call expect(ierr == MPI_SUCCESS .and. outcount >= 1 .and. outcount <= 4, 'MPI_WAITSOME')
  if (outcount >= 1) call expect(reqs(indices(1)) == MPI_REQUEST_NULL, 'MPI_WAITSOME: the index')
  do while (any(reqs /= MPI_REQUEST_NULL) .and. ierr == MPI_SUCCESS)
    call MPI_Testsome(4, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
  end do
  calls = calls + 2
  call expect(ierr == MPI_SUCCESS .and. all(b == [(i, i = 1, n)]) .and. all(got == [left, 2 * left, 3 * left]), &
              'MPI_TESTSOME')

  ! MPI_REQUEST_GET_STATUS until complete; MPI_REQUEST_FREE on one in flight
  call MPI_Iallreduce(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  flag = .false.
  do while (.not. flag .and. ierr == MPI_SUCCESS)
    call MPI_Request_get_status(reqs(1), flag, status, ierr)
  end do
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  call expect(ierr == MPI_SUCCESS .and. b(1) == 10 * np * (np - 1) / 2 + np, 'MPI_REQUEST_GET_STATUS')
  c = -1
  call MPI_Iallreduce(a, c, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Request_free(reqs(1), ierr)
  call expect(ierr == MPI_SUCCESS .and. reqs(1) == MPI_REQUEST_NULL, 'MPI_REQUEST_FREE')
  do while (tracked_requests() > 0)
    call MPI_Test(reqs(1), flag, MPI_STATUS_IGNORE, ierr)  ! a null request: any call lets it progress
  end do
  calls = calls + 2
  call expect(all(c == b), 'MPI_IALLREDUCE freed in flight')

  call expect(intercepted_calls() - before == calls, 'interception count')
  call verdict('fortran requests (use mpi)', calls)

end program
