! Fortran calls (use mpi) to the intercepted collectives, with MPI_IN_PLACE
! and MPI_BOTTOM, checked against references, and counted: every call counted
! in `calls` must have run through Chorus when libchorus_mpi.so is preloaded,
! and no other. Floating results are exact, so they are compared bit for bit.
! (mpif.h reaches the same entry points and sentinels as `use mpi`, in Open
! MPI and in MPICH alike.)
program fortran_calls
  use mpi
  use interposer_checks
  use iso_c_binding, only: c_long_long
  use iso_fortran_env, only: int32, int64
  implicit none
  interface
    function intercepted_calls() bind(C, name="interposer_intercepted_calls") result(n)
      import :: c_long_long
      integer(c_long_long) :: n
    end function
  end interface
  integer, parameter :: n = 6
  integer :: ierr, rank, np, i, r, calls
  integer :: ivals(n), iwant(n), counts(64), ones(128), got(4)
  integer :: vcounts(64), vdispls(64), vbuf(256), vwant(256), total
  double precision :: dvals(3), dwant(3)
  real :: rvals(4)
  logical :: flag, both
  integer(c_long_long) :: before, after
  integer, volatile :: bb(4)
  integer, allocatable, volatile :: gathered(:)
  integer :: btype, gtype
  integer(kind=MPI_ADDRESS_KIND) :: baddr(1), gaddr(1)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  calls = 0
  before = intercepted_calls()

  ! MPI_ALLREDUCE, integer sum, out of place
  ivals = [(rank * 10 + i, i = 1, n)]
  iwant = [(10 * np * (np - 1) / 2 + np * i, i = 1, n)]
  call MPI_Allreduce(ivals, counts, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(counts(1:n) == iwant), 'MPI_ALLREDUCE integer sum')

  ! MPI_ALLREDUCE in place, double precision max
  dvals = rank + [1d0, 2d0, 3d0]
  call MPI_Allreduce(MPI_IN_PLACE, dvals, 3, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  dwant = np - 1 + [1d0, 2d0, 3d0]
  call expect(ierr == MPI_SUCCESS .and. all(transfer(dvals, 0_int64, 3) == transfer(dwant, 0_int64, 3)), &
              'MPI_ALLREDUCE in place double precision max')

  ! MPI_ALLREDUCE on LOGICAL
  flag = rank == 0
  call MPI_Allreduce(flag, both, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. (both .eqv. (np == 1)), 'MPI_ALLREDUCE logical land')
  call MPI_Allreduce(flag, both, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. both, 'MPI_ALLREDUCE logical lor')

  ! MPI_BCAST from the last rank, integer and real
  ivals = rank
  call MPI_Bcast(ivals, n, MPI_INTEGER, np - 1, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(ivals == np - 1), 'MPI_BCAST integer')
  rvals = real(rank) + 0.5
  call MPI_Bcast(rvals, 4, MPI_REAL, 0, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(transfer(rvals, 0_int32, 4) == transfer(0.5, 0_int32)), 'MPI_BCAST real')

  ! MPI_REDUCE in place at the root
  ivals = rank + 1
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, ivals, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  else
    call MPI_Reduce(ivals, counts, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  end if
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. (rank /= 0 .or. all(ivals == np * (np + 1) / 2)), 'MPI_REDUCE in place')

  ! MPI_ALLGATHER in place
  counts = -1
  counts(rank + 1) = rank * rank
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, counts, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(counts(1:np) == [(r * r, r = 0, np - 1)]), 'MPI_ALLGATHER in place')

  ! MPI_REDUCE_SCATTER_BLOCK in place, and MPI_REDUCE_SCATTER with a zero block
  counts(1:np) = [(r + rank, r = 1, np)]
  call MPI_Reduce_scatter_block(MPI_IN_PLACE, counts, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. counts(1) == np * (rank + 1) + np * (np - 1) / 2, &
              'MPI_REDUCE_SCATTER_BLOCK in place')
  counts(1:np) = 2
  counts(1) = 0
  ones = 1
  got = -1
  call MPI_Reduce_scatter(ones, got, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(got(1:counts(rank + 1)) == np) .and. all(got(counts(rank + 1) + 1:) == -1), &
              'MPI_REDUCE_SCATTER')

  ! MPI_ALLGATHERV in place, rank r holds r elements (rank 0 none), blocks in reverse order
  total = 0
  do r = np - 1, 0, -1
    vcounts(r + 1) = r
    vdispls(r + 1) = total
    total = total + r
  end do
  vbuf = -1
  vwant = -1
  do r = 0, np - 1
    vwant(vdispls(r + 1) + 1:vdispls(r + 1) + r) = [(100 * r + i, i = 1, r)]
  end do
  vbuf(vdispls(rank + 1) + 1:vdispls(rank + 1) + rank) = [(100 * rank + i, i = 1, rank)]
  call MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, vbuf, vcounts, vdispls, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(vbuf == vwant), 'MPI_ALLGATHERV in place')

  ! MPI_ALLTOALL: block j of rank i is 10 * i + j
  ivals(1:np) = [(10 * rank + r, r = 0, np - 1)]
  call MPI_Alltoall(ivals, 1, MPI_INTEGER, counts, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(counts(1:np) == [(10 * r + rank, r = 0, np - 1)]), 'MPI_ALLTOALL')

  ! MPI_ALLTOALLV in place: rank i exchanges i + j elements with rank j
  total = 0
  do r = 0, np - 1
    vcounts(r + 1) = rank + r
    vdispls(r + 1) = total
    total = total + rank + r
  end do
  do r = 0, np - 1
    vbuf(vdispls(r + 1) + 1:vdispls(r + 1) + vcounts(r + 1)) = 1000 * rank + r
    vwant(vdispls(r + 1) + 1:vdispls(r + 1) + vcounts(r + 1)) = 1000 * r + rank
  end do
  call MPI_Alltoallv(MPI_IN_PLACE, vcounts, vdispls, MPI_DATATYPE_NULL, vbuf, vcounts, vdispls, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(vbuf(1:total) == vwant(1:total)), 'MPI_ALLTOALLV in place')

  ! MPI_GATHER in place at the last rank, MPI_GATHERV at rank 0 (r + 1 elements from rank r)
  counts = -1
  counts(rank + 1) = 7 * rank
  if (rank == np - 1) then
    call MPI_Gather(MPI_IN_PLACE, 1, MPI_INTEGER, counts, 1, MPI_INTEGER, np - 1, MPI_COMM_WORLD, ierr)
  else
    call MPI_Gather(counts(rank + 1), 1, MPI_INTEGER, got, 1, MPI_INTEGER, np - 1, MPI_COMM_WORLD, ierr)
  end if
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. (rank /= np - 1 .or. all(counts(1:np) == [(7 * r, r = 0, np - 1)])), &
              'MPI_GATHER in place')
  total = 0
  do r = 0, np - 1
    vcounts(r + 1) = r + 1
    vdispls(r + 1) = total
    total = total + r + 1
  end do
  ivals = 50 + rank
  vbuf = -1
  call MPI_Gatherv(ivals, rank + 1, MPI_INTEGER, vbuf, vcounts, vdispls, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  if (rank == 0) then
    do r = 0, np - 1
      vwant(vdispls(r + 1) + 1:vdispls(r + 1) + r + 1) = 50 + r
    end do
  end if
  call expect(ierr == MPI_SUCCESS .and. (rank /= 0 .or. all(vbuf(1:total) == vwant(1:total))), 'MPI_GATHERV')

  ! MPI_SCATTER in place at rank 0, MPI_SCATTERV from the last rank (the same blocks back)
  counts(1:np) = [(3 * r + 1, r = 0, np - 1)]
  got = -1
  if (rank == 0) then
    call MPI_Scatter(counts, 1, MPI_INTEGER, MPI_IN_PLACE, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    got(1) = counts(1)
  else
    call MPI_Scatter(counts, 1, MPI_INTEGER, got, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  end if
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. got(1) == 3 * rank + 1, 'MPI_SCATTER in place')
  ivals = -1
  vbuf(1:total) = [(i, i = 1, total)]
  call MPI_Scatterv(vbuf, vcounts, vdispls, MPI_INTEGER, ivals, rank + 1, MPI_INTEGER, np - 1, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(ivals(1:rank + 1) == [(vdispls(rank + 1) + i, i = 1, rank + 1)]), &
              'MPI_SCATTERV')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS, 'MPI_BARRIER')
  ! MPI_BOTTOM: datatypes that hold the absolute addresses of bb and of
  ! gathered. Broadcast and all-gather move any datatype through Chorus
  ! (packed and unpacked), which must get MPI_BOTTOM, not the address of
  ! Fortran's stand-in for it. bb and gathered are VOLATILE: the compiler
  ! cannot see that these calls read and write them.
  call MPI_Get_address(bb, baddr(1), ierr)
  call MPI_Type_create_hindexed(1, [4], baddr, MPI_INTEGER, btype, ierr)
  call MPI_Type_commit(btype, ierr)
  bb = [(100 * rank + i, i = 1, 4)]
  call MPI_Bcast(MPI_BOTTOM, 1, btype, np - 1, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(bb == [(100 * (np - 1) + i, i = 1, 4)]), 'MPI_BCAST at MPI_BOTTOM')
  bb = [(rank + i, i = 1, 4)]
  allocate(gathered(4 * np + 1))
  gathered = -1
  call MPI_Allgather(MPI_BOTTOM, 1, btype, gathered, 4, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. all(gathered(1:4 * np) == [((r + i, i = 1, 4), r = 0, np - 1)]) .and. &
              all(gathered(4 * np + 1:) == -1), 'MPI_ALLGATHER from MPI_BOTTOM')
  ! Into MPI_BOTTOM: rank r's block lands one extent (4 integers) after
  ! rank r-1's, from the address of gathered(2).
  call MPI_Get_address(gathered(2), gaddr(1), ierr)
  call MPI_Type_create_hindexed(1, [4], gaddr, MPI_INTEGER, gtype, ierr)
  call MPI_Type_commit(gtype, ierr)
  gathered = -1
  call MPI_Allgather(bb, 4, MPI_INTEGER, MPI_BOTTOM, 1, gtype, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  call expect(ierr == MPI_SUCCESS .and. gathered(1) == -1 .and. &
              all(gathered(2:4 * np + 1) == [((r + i, i = 1, 4), r = 0, np - 1)]), 'MPI_ALLGATHER into MPI_BOTTOM')
  call MPI_Type_free(btype, ierr)
  call MPI_Type_free(gtype, ierr)

  after = intercepted_calls()
  if (after < 0) then
    call expect(.false., 'libchorus_mpi.so is not loaded')
  else
    call expect(after - before == calls, 'interception count')
  end if

  call verdict('fortran (use mpi)', calls)

end program
