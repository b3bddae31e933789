! cg.f90: the conjugate-gradient solver of cg.c, in Fortran with `use chorus`.
!
! 2D Poisson problem -laplace(u) = 2 (x (1 - x) + y (1 - y)) on the unit
! square (u = 0 on the boundary; solution u = x (1 - x) y (1 - y), which the
! stencil reproduces exactly), 5-point
! stencil on an N x N interior grid cut into strips of rows, one per rank;
! halo rows through MPI_Sendrecv, the two dot products of every iteration
! through chorus_allreduce of one real(8). The same solve runs again with
! MPI_Allreduce and both are printed side by side.
!
! --device: the dot products' all-reduce on device memory (a device real(8)
! for the local sum and one for the result, through cg_device.c); vectors
! and stencil stay on the host. A device address reaches chorus_allreduce
! as a Fortran pointer made by c_f_pointer (never dereferenced on the host).
!
! Exit status: 0 when both solves converged (also by the true residual
! |b - Ax| <= 2 tol |b|), with the same number of iterations and final
! residuals within a relative 1e-6; 1 otherwise; 2 on bad options; 77 with
! --device when some rank has no usable GPU.
program cg
  use mpi
  use chorus
  use, intrinsic :: iso_c_binding
  implicit none

  interface
    integer(c_int) function cg_device_init(local_rank, why, len) bind(C, name='cg_device_init')
      import :: c_int, c_char, c_size_t
      integer(c_int), value :: local_rank
      character(kind=c_char) :: why(*)
      integer(c_size_t), value :: len
    end function
    type(c_ptr) function cg_device_alloc(bytes) bind(C, name='cg_device_alloc')
      import :: c_ptr, c_size_t
      integer(c_size_t), value :: bytes
    end function
    subroutine cg_device_free(p) bind(C, name='cg_device_free')
      import :: c_ptr
      type(c_ptr), value :: p
    end subroutine
    integer(c_int) function cg_device_put(dst, src, bytes) bind(C, name='cg_device_put')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst, src
      integer(c_size_t), value :: bytes
    end function
    integer(c_int) function cg_device_get(dst, src, bytes) bind(C, name='cg_device_get')
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst, src
      integer(c_size_t), value :: bytes
    end function
  end interface

  real(8), parameter :: agreement_allowed = 1d-6
  integer :: n = 256, max_iter = 2000, me, np, ierr, row0, rows, up, down
  real(8) :: tol = 1d-8
  logical :: device = .false.
  type(chorus_comm_t) :: comm
  type(c_ptr) :: d_send = c_null_ptr, d_recv = c_null_ptr
  real(c_double), pointer, contiguous :: dev_send(:) => null(), dev_recv(:) => null()
  real(8), allocatable :: x_chorus(:, :), x_mpi(:, :)
  integer :: it_chorus, it_mpi
  real(8) :: res_chorus(2), res_mpi(2), t_chorus(2), t_mpi(2), dx, err, agreement
  logical :: converged, same
  character(len=:), allocatable :: where, identical

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  if (.not. parse_options()) then
    if (me == 0) write (0, '(a)') 'usage: cg-fortran [--n N] [--max-iter K] [--tol T] [--device]'
    call MPI_Finalize(ierr)
    stop 2
  end if
  if (n < np) then
    if (me == 0) write (0, '(a, i0, a, i0, a)') 'cg-fortran: --n ', n, ' gives some of the ', np, ' ranks no rows'
    call MPI_Finalize(ierr)
    stop 2
  end if
  row0 = int(int(n, 8) * me / np)
  rows = int(int(n, 8) * (me + 1) / np) - row0
  up = merge(me - 1, MPI_PROC_NULL, me > 0)
  down = merge(me + 1, MPI_PROC_NULL, me < np - 1)

  call check_rc(chorus_comm_create(MPI_COMM_WORLD, comm), 'chorus_comm_create')
  if (device) call setup_device()

  allocate(x_chorus(0:n - 1, 0:rows + 1), x_mpi(0:n - 1, 0:rows + 1))
  call solve(.true., x_chorus, it_chorus, res_chorus, t_chorus)
  call solve(.false., x_mpi, it_mpi, res_mpi, t_mpi)
  dx = maxval(abs(x_chorus(:, 1:rows) - x_mpi(:, 1:rows)))
  call MPI_Allreduce(MPI_IN_PLACE, dx, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  err = solution_error(x_mpi)

  agreement = abs(res_chorus(1) - res_mpi(1)) / res_mpi(1)
  converged = res_chorus(1) <= tol .and. res_mpi(1) <= tol .and. res_chorus(2) <= 2 * tol .and. res_mpi(2) <= 2 * tol
  same = it_chorus == it_mpi .and. agreement <= agreement_allowed
  if (me == 0) then
    where = 'host memory'
    if (device) where = "dot products' all-reduce on device memory"
    print '(a, i0, a, i0, a, i0, a, i0, a, i0, a, es7.1, a, a)', 'cg-fortran: 2D Poisson, ', n, ' x ', n, ' grid (', &
        n * n, ' unknowns), ', np, ' ranks (strips of ~', n / np, ' rows), tol ', tol, ', ', where
    print '(a22, 1x, a10, 4(1x, a14))', 'all-reduce' // repeat(' ', 22), 'iterations', 'residual', &
        'true residual', 'us/iteration', 'us/allreduce'
    call print_row('chorus_allreduce', it_chorus, res_chorus, t_chorus)
    call print_row('MPI_Allreduce', it_mpi, res_mpi, t_mpi)
    identical = ''
    if (dx <= 0) identical = ' (bit-identical)'
    print '(a, es9.3, a, a, es9.3)', 'max |x_chorus - x_mpi| = ', dx, identical, &
        '; max |x - u| = ', err
    if (.not. converged) print '(a, es7.1)', 'FAIL: a solve did not reach the tolerance ', tol
    if (.not. same) print '(a, i0, a, i0, a, es9.3, a)', 'FAIL: Chorus and MPI differ: ', it_chorus, ' vs ', it_mpi, &
        ' iterations, residuals ', agreement, ' apart (relative)'
    if (converged .and. same) print '(a, i0, a, es7.1, a, es7.1, a)', 'PASS: both converged in ', it_mpi, &
        ' iterations; residuals agree to ', agreement, ' relative (allowed ', agreement_allowed, ')'
  end if

  if (c_associated(d_send)) call cg_device_free(d_send)
  if (c_associated(d_recv)) call cg_device_free(d_recv)
  call check_rc(chorus_comm_destroy(comm), 'chorus_comm_destroy')
  call MPI_Finalize(ierr)
  if (.not. (converged .and. same)) stop 1

contains

  logical function parse_options()
    character(len=64) :: arg, val
    integer :: i, stat
    parse_options = .false.
    i = 1
    do while (i <= command_argument_count())
      call get_command_argument(i, arg)
      if (arg == '--device') then
        device = .true.
        i = i + 1
        cycle
      end if
      if (i == command_argument_count()) return
      call get_command_argument(i + 1, val)
      select case (arg)
      case ('--n')
        read (val, *, iostat=stat) n
      case ('--max-iter')
        read (val, *, iostat=stat) max_iter
      case ('--tol')
        read (val, *, iostat=stat) tol
      case default
        return
      end select
      if (stat /= 0) return
      i = i + 2
    end do
    parse_options = n > 0 .and. max_iter > 0 .and. tol > 0
  end function

  subroutine check_rc(rc, what)
    integer(c_int), intent(in) :: rc
    character(*), intent(in) :: what
    if (rc == CHORUS_SUCCESS) return
    write (0, '(5a)') 'cg-fortran: ', what, ': ', chorus_get_error_string(rc), ': ' // chorus_comm_last_error(comm)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine

  ! Every rank has a usable GPU, or every rank skips (exit 77).
  subroutine setup_device()
    integer :: node, local_rank, usable, all_usable
    character(kind=c_char, len=256) :: why
    call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, node, ierr)
    call MPI_Comm_rank(node, local_rank, ierr)
    call MPI_Comm_free(node, ierr)
    why = ''
    usable = cg_device_init(int(local_rank, c_int), why, int(len(why), c_size_t))
    if (usable /= 0) then
      d_send = cg_device_alloc(8_c_size_t)
      d_recv = cg_device_alloc(8_c_size_t)
      if (.not. (c_associated(d_send) .and. c_associated(d_recv))) usable = 0
      call c_f_pointer(d_send, dev_send, [1])
      call c_f_pointer(d_recv, dev_recv, [1])
    end if
    call MPI_Allreduce(usable, all_usable, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
    if (usable == 0) write (0, '(a, i0, a, a)') 'cg-fortran: rank ', me, ': --device: ', why(1:index(why, c_null_char) - 1)
    if (all_usable == 0) then
      if (me == 0) print '(a)', 'cg-fortran: --device: skipped, not every rank has a usable GPU'
      call check_rc(chorus_comm_destroy(comm), 'chorus_comm_destroy')
      call MPI_Finalize(ierr)
      stop 77
    end if
  end subroutine

  real(8) function global_sum(use_chorus, local, seconds)
    logical, intent(in) :: use_chorus
    real(8), intent(in), target :: local
    real(8), intent(inout) :: seconds
    real(8), target :: global
    real(8) :: t0
    global = 0
    t0 = MPI_Wtime()
    if (.not. use_chorus) then
      call MPI_Allreduce(local, global, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    else if (device) then
      if (cg_device_put(d_send, c_loc(local), 8_c_size_t) /= 0) call check_rc(CHORUS_ERR_CUDA, 'copy to the device')
      call check_rc(chorus_allreduce(dev_send, dev_recv, 1_c_size_t, CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr), &
          'chorus_allreduce (device)')
      if (cg_device_get(c_loc(global), d_recv, 8_c_size_t) /= 0) call check_rc(CHORUS_ERR_CUDA, 'copy from the device')
    else
      call check_rc(chorus_allreduce(local, global, 1_c_size_t, CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr), &
          'chorus_allreduce')
    end if
    seconds = seconds + (MPI_Wtime() - t0)
    global_sum = global
  end function

  ! q = A p on the owned rows, after the halo rows of p are exchanged.
  subroutine apply_laplacian(p, q)
    real(8), intent(inout) :: p(0:, 0:)
    real(8), intent(out) :: q(0:, 0:)
    integer :: i
    call MPI_Sendrecv(p(:, 1), n, MPI_DOUBLE_PRECISION, up, 0, p(:, rows + 1), n, MPI_DOUBLE_PRECISION, down, 0, &
        MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Sendrecv(p(:, rows), n, MPI_DOUBLE_PRECISION, down, 1, p(:, 0), n, MPI_DOUBLE_PRECISION, up, 1, &
        MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    q = 0
    do i = 1, rows
      q(:, i) = 4 * p(:, i) - p(:, i - 1) - p(:, i + 1)
      q(1:n - 1, i) = q(1:n - 1, i) - p(0:n - 2, i)  ! left neighbours
      q(0:n - 2, i) = q(0:n - 2, i) - p(1:n - 1, i)  ! right neighbours
    end do
  end subroutine

  ! res = [|r|/|b| from the recurrence, |b - Ax|/|b| recomputed through MPI];
  ! t = [seconds per iteration, seconds per all-reduce], maxima over ranks.
  subroutine solve(use_chorus, x, it, res, t)
    logical, intent(in) :: use_chorus
    real(8), intent(out) :: x(0:, 0:)
    integer, intent(out) :: it
    real(8), intent(out) :: res(2), t(2)
    real(8), allocatable :: b(:, :), r(:, :), p(:, :), q(:, :)
    real(8) :: h, bnorm, rr, rr_new, alpha, beta, t0, seconds, local, global
    integer :: i, j, calls

    allocate(b(0:n - 1, 0:rows + 1), r(0:n - 1, 0:rows + 1), p(0:n - 1, 0:rows + 1), q(0:n - 1, 0:rows + 1))
    h = 1d0 / (n + 1)
    b = 0
    do i = 1, rows
      do j = 0, n - 1
        b(j, i) = h * h * 2 * (u1((j + 1) * h) + u1((row0 + i) * h))
      end do
    end do
    x = 0
    r = b
    p = r
    do i = 1, 10  ! warm-up: first calls set up connections
      local = global_sum(use_chorus, 1d0, seconds)
    end do
    seconds = 0
    calls = 0

    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    t0 = MPI_Wtime()
    bnorm = sqrt(global_sum(use_chorus, sum(b(:, 1:rows)**2), seconds))
    rr = global_sum(use_chorus, sum(r(:, 1:rows)**2), seconds)
    calls = 2
    it = 0
    do while (it < max_iter .and. sqrt(rr) > tol * bnorm)
      call apply_laplacian(p, q)
      alpha = rr / global_sum(use_chorus, sum(p(:, 1:rows) * q(:, 1:rows)), seconds)
      x(:, 1:rows) = x(:, 1:rows) + alpha * p(:, 1:rows)
      r(:, 1:rows) = r(:, 1:rows) - alpha * q(:, 1:rows)
      rr_new = global_sum(use_chorus, sum(r(:, 1:rows)**2), seconds)
      beta = rr_new / rr
      p(:, 1:rows) = r(:, 1:rows) + beta * p(:, 1:rows)
      rr = rr_new
      it = it + 1
      calls = calls + 2
    end do
    t(1) = (MPI_Wtime() - t0) / max(it, 1)
    t(2) = seconds / calls

    p = x
    call apply_laplacian(p, q)
    local = sum((b(:, 1:rows) - q(:, 1:rows))**2)
    call MPI_Allreduce(local, global, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    res = [sqrt(rr) / bnorm, sqrt(global) / bnorm]
    call MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  end subroutine

  ! The solution is u1(x) u1(y).
  real(8) function u1(t)
    real(8), intent(in) :: t
    u1 = t * (1 - t)
  end function

  ! max |x - u| over the grid.
  real(8) function solution_error(x)
    real(8), intent(in) :: x(0:, 0:)
    real(8) :: h, e
    integer :: i, j
    h = 1d0 / (n + 1)
    e = 0
    do i = 1, rows
      do j = 0, n - 1
        e = max(e, abs(x(j, i) - u1((j + 1) * h) * u1((row0 + i) * h)))
      end do
    end do
    call MPI_Allreduce(e, solution_error, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  end function

  subroutine print_row(name, it, res, t)
    character(*), intent(in) :: name
    integer, intent(in) :: it
    real(8), intent(in) :: res(2), t(2)
    print '(a22, 1x, i10, 2(1x, es14.6), 2(1x, f14.2))', name // repeat(' ', 22), it, res, 1d6 * t
  end subroutine

end program
