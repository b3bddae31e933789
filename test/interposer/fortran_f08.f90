! The same through the mpi_f08 module, with MPI_IN_PLACE and MPI_BOTTOM,
! whose calls reach the library under other names (Open MPI:
! mpi_allreduce_f08_ ...; MPICH: the C MPI_Allreduce ...), and nonblocking
! calls completed by MPI_Wait and MPI_Waitall (Open MPI: mpi_wait_f08_ ...),
! mixed with point-to-point requests, with TYPE(MPI_Status) statuses and
! MPI_STATUSES_IGNORE.
program fortran_f08
  use mpi_f08
  use iso_c_binding, only: c_long_long
  use iso_fortran_env, only: int64
  implicit none
  interface
    function intercepted_calls() bind(C, name="interposer_intercepted_calls") result(n)
      import :: c_long_long
      integer(c_long_long) :: n
    end function
  end interface
  integer :: rank, np, i, r, failures, anyfail, left, right
  integer :: ivals(4), isum(4), msg(2), got(2)
  double precision :: d(2)
  integer(c_long_long) :: before, after
  integer, volatile :: bb(4)
  integer, allocatable, volatile :: gathered(:)
  integer(kind=MPI_ADDRESS_KIND) :: baddr(1)
  type(MPI_Datatype) :: btype, gtype
  type(MPI_Request) :: req, reqs(3)
  type(MPI_Status) :: status, statuses(3)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  failures = 0
  before = intercepted_calls()

  ivals = [(rank + i, i = 1, 4)]
  call MPI_Allreduce(ivals, isum, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (any(isum /= [(np * i + np * (np - 1) / 2, i = 1, 4)])) call fail('MPI_Allreduce')
  d = [dble(rank), -dble(rank)]
  call MPI_Allreduce(MPI_IN_PLACE, d, 2, MPI_DOUBLE_PRECISION, MPI_MIN, MPI_COMM_WORLD)
  if (any(transfer(d, 0_int64, 2) /= transfer([0d0, -dble(np - 1)], 0_int64, 2))) call fail('MPI_Allreduce in place')
  ivals = rank
  call MPI_Bcast(ivals, 4, MPI_INTEGER, np - 1, MPI_COMM_WORLD)
  if (any(ivals /= np - 1)) call fail('MPI_Bcast')

  ! MPI_BOTTOM with datatypes holding absolute addresses (bb and gathered are
  ! VOLATILE: the compiler cannot see these calls read and write them): the
  ! broadcast packs at the root and unpacks elsewhere, the all-gather unpacks
  ! each rank's block one extent after the last.
  call MPI_Get_address(bb, baddr(1))
  call MPI_Type_create_hindexed(1, [4], baddr, MPI_INTEGER, btype)
  call MPI_Type_commit(btype)
  bb = [(10 * rank + i, i = 1, 4)]
  call MPI_Bcast(MPI_BOTTOM, 1, btype, 0, MPI_COMM_WORLD)
  if (any(bb /= [(i, i = 1, 4)])) call fail('MPI_Bcast at MPI_BOTTOM')
  allocate(gathered(4 * np))
  call MPI_Get_address(gathered, baddr(1))
  call MPI_Type_create_hindexed(1, [4], baddr, MPI_INTEGER, gtype)
  call MPI_Type_commit(gtype)
  bb = [(rank + i, i = 1, 4)]
  gathered = -1
  call MPI_Allgather(bb, 4, MPI_INTEGER, MPI_BOTTOM, 1, gtype, MPI_COMM_WORLD)
  if (any(gathered /= [((r + i, i = 1, 4), r = 0, np - 1)])) call fail('MPI_Allgather into MPI_BOTTOM')
  call MPI_Type_free(btype)
  call MPI_Type_free(gtype)


  call MPI_Iallreduce(ivals, isum, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, status)
  if (any(isum /= np * (np - 1)) .or. req /= MPI_REQUEST_NULL) call fail('MPI_Iallreduce + MPI_Wait')
  if (status%MPI_SOURCE /= MPI_ANY_SOURCE .or. status%MPI_TAG /= MPI_ANY_TAG) call fail('MPI_Wait status')

  left = mod(rank + np - 1, np)
  right = mod(rank + 1, np)
  msg = [rank, -rank]
  got = 99
  ivals = merge(7, -1, rank == 0)
  call MPI_Irecv(got, 2, MPI_INTEGER, left, 3, MPI_COMM_WORLD, reqs(1))
  call MPI_Ibcast(ivals, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(2))
  call MPI_Isend(msg, 2, MPI_INTEGER, right, 3, MPI_COMM_WORLD, reqs(3))
  call MPI_Waitall(3, reqs, statuses)
  if (any(got /= [left, -left]) .or. any(ivals /= 7)) call fail('MPI_Waitall of MPI_Irecv, MPI_Ibcast, MPI_Isend')
  if (statuses(1)%MPI_SOURCE /= left .or. statuses(1)%MPI_TAG /= 3) call fail('MPI_Waitall: the receive''s status')
  if (statuses(2)%MPI_SOURCE /= MPI_ANY_SOURCE .or. statuses(2)%MPI_ERROR /= MPI_SUCCESS) &
    call fail('MPI_Waitall: the broadcast''s status')
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1))
  call MPI_Iallreduce(MPI_IN_PLACE, d, 2, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  if (any(transfer(d, 0_int64, 2) /= transfer([0d0, -dble(np - 1)], 0_int64, 2))) call fail('MPI_Waitall ignoring')

  ! MPICH's mpi_f08 barrier calls PMPI_Barrier itself (lib/mpi/fortran_mpich_f08.cc)
  call MPI_Barrier(MPI_COMM_WORLD)

  after = intercepted_calls()
  if (after - before /= 10) call fail('interception count')
  call MPI_Allreduce(failures, anyfail, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', 'fortran (use mpi_f08) at np=', np, merge(' passed', ' FAILED', anyfail == 0)
  call MPI_Finalize()
  if (anyfail /= 0) stop 1

contains

  subroutine fail(what)
    character(*), intent(in) :: what
    print '(a, i0, a, a)', 'rank ', rank, ': FAIL ', what
    failures = failures + 1
  end subroutine

end program
