! The module with mpi_f08: chorus_comm_create takes a type(MPI_Comm).
program test_chorus_f08
  use mpi_f08
  use chorus
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: me, np, i, failures, anyfail
  type(chorus_comm_t) :: comm
  type(MPI_Comm) :: dup
  real(c_double) :: x(100), y(100)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  failures = 0
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  if (chorus_comm_create(dup, comm) /= CHORUS_SUCCESS) call fail('chorus_comm_create(type(MPI_Comm))')
  call MPI_Comm_free(dup)  ! Chorus keeps its own duplicate
  x = [(dble(me * i), i = 1, 100)]
  if (chorus_allreduce(x, y, 100_c_size_t, CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr) /= CHORUS_SUCCESS) &
    call fail('allreduce: ' // chorus_comm_last_error(comm))
  if (any(nint(y) /= [(i * (np * (np - 1) / 2), i = 1, 100)]) .or. any(abs(y - aint(y)) > 0)) &
    call fail('allreduce: values')
  if (chorus_comm_destroy(comm) /= CHORUS_SUCCESS) call fail('chorus_comm_destroy')
  call MPI_Allreduce(failures, anyfail, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  if (me == 0) print '(a, i0, a)', 'fortran module with mpi_f08 at np=', np, merge(' passed', ' FAILED', anyfail == 0)
  call MPI_Finalize()
  if (anyfail /= 0) stop 1

contains

  subroutine fail(what)
    character(*), intent(in) :: what
    print '(a, i0, a, a)', 'rank ', me, ': FAIL ', what
    failures = failures + 1
  end subroutine

end program
