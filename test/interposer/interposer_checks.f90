! What the Fortran (use mpi) interposer tests share: a failed expectation
! is printed and counted, and the verdict is agreed over the ranks.
module interposer_checks
  use mpi
  implicit none
  private
  public :: expect, verdict
  integer :: failures = 0

contains

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    integer :: rank, ierr
    if (ok) return
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    print '(a, i0, a, a)', 'rank ', rank, ': FAIL ', what
    failures = failures + 1
  end subroutine

  ! Rank 0 prints `label` with the verdict of every rank; then MPI_Finalize,
  ! and a failure stops every rank with status 1.
  subroutine verdict(label, calls)
    character(*), intent(in) :: label
    integer, intent(in) :: calls
    integer :: rank, np, anyfail, ierr
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    call MPI_Allreduce(failures, anyfail, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
    if (rank == 0) print '(a, a, i0, a, i0, a)', label, ': ', calls, ' calls at np=', np, &
                                                merge(' passed', ' FAILED', anyfail == 0)
    call MPI_Finalize(ierr)
    if (anyfail /= 0) stop 1
  end subroutine

end module
