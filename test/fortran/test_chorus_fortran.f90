! The Fortran module `chorus` under mpirun: every call of chorus.h from
! Fortran, against references computed from per-rank seeded inputs (chosen so
! every result is exact), on scalars, rank-1 and rank-2 arrays of integer and
! real kinds; nonblocking requests; and the error paths.
module idle_counter
  use, intrinsic :: iso_c_binding
  implicit none
  integer, save :: idle_calls = 0
contains
  subroutine count_idle(arg) bind(C)
    type(c_ptr), value :: arg
    if (.not. c_associated(arg)) idle_calls = idle_calls + 1
  end subroutine
end module

program test_chorus_fortran
  use mpi
  use chorus
  use fortran_checks
  use idle_counter
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: ierr

  ! Floating results are compared bit for bit: every input is chosen so the
  ! exact result is representable.
  interface same
    procedure :: same_f64, same_f64_scalar, same_f32
  end interface

  call start()
  call check(chorus_comm_create(MPI_COMM_WORLD, comm) == CHORUS_SUCCESS, 'chorus_comm_create')
  call test_constants()
  call test_comm_queries()
  call test_idle_hook()
  call test_allreduce()
  call test_broadcast()
  call test_reduce()
  call test_reduce_scatter()
  call test_allgather()
  call test_nonblocking()
  call test_errors()
  call test_split_comm()
  call check(chorus_comm_destroy(comm) == CHORUS_SUCCESS, 'chorus_comm_destroy')
  call check(.not. c_associated(comm%ptr), 'chorus_comm_destroy sets the handle to NULL')
  call check(chorus_comm_destroy(comm) == CHORUS_ERR_INVALID_ARGUMENT, 'destroying a NULL handle is an error')

  call finish('fortran module (use chorus)')

contains

  logical function same_f64_scalar(a, b)
    real(c_double), intent(in) :: a(:), b
    same_f64_scalar = same_f64(a, spread(b, 1, size(a)))
  end function

  ! The module's parameters against chorus.h's values (c_constants.c).
  subroutine test_constants()
    interface
      integer(c_int) function chorus_test_c_constants(out, n) bind(C, name='chorus_test_c_constants')
        import :: c_int
        integer(c_int) :: out(*)
        integer(c_int), value :: n
      end function
    end interface
    integer(c_int) :: c(64), mine(40), n
    mine = [CHORUS_VERSION_MAJOR, CHORUS_VERSION_MINOR, CHORUS_VERSION_PATCH, CHORUS_SUCCESS, &
        CHORUS_ERR_INVALID_ARGUMENT, CHORUS_ERR_UNSUPPORTED, CHORUS_ERR_OUT_OF_MEMORY, CHORUS_ERR_TRANSPORT, &
        CHORUS_ERR_CUDA, CHORUS_ERR_TIMEOUT, CHORUS_ERR_PEER_FAILED, CHORUS_ERR_COMM_FAILED, &
        CHORUS_ERR_MISMATCH, CHORUS_ERR_INTERNAL, CHORUS_ERR_CONFIG, CHORUS_INT8, CHORUS_UINT8, &
        CHORUS_INT16, CHORUS_UINT16, CHORUS_INT32, CHORUS_UINT32, CHORUS_INT64, CHORUS_UINT64, &
        CHORUS_FLOAT16, CHORUS_BFLOAT16, CHORUS_FLOAT32, CHORUS_FLOAT64, CHORUS_NUM_DATATYPES, CHORUS_SUM, &
        CHORUS_PROD, CHORUS_MIN, CHORUS_MAX, CHORUS_AVG, CHORUS_BAND, CHORUS_BOR, CHORUS_BXOR, CHORUS_LAND, &
        CHORUS_LOR, CHORUS_LXOR, CHORUS_NUM_OPS]
    n = chorus_test_c_constants(c, int(size(c), c_int))
    call check(n == size(mine), 'c_constants.c and this list name the same constants')
    if (n == size(mine)) call check(all(c(1:n) == mine), 'the module''s constants have chorus.h''s values')
  end subroutine

  subroutine test_comm_queries()
    integer(c_int) :: r, s
    call ok_call(chorus_comm_rank(comm, r), 'chorus_comm_rank')
    call ok_call(chorus_comm_size(comm, s), 'chorus_comm_size')
    call check(r == me .and. s == np, 'rank and size agree with MPI')
    call check(CHORUS_VERSION_MAJOR == 0 .and. CHORUS_VERSION_MINOR >= 1, 'version constants')
  end subroutine

  ! The last rank comes late (busy, outside Chorus): the others' wait turns
  ! the idle hook; once removed, it turns no more.
  subroutine test_idle_hook()
    real(c_double) :: x, y
    double precision :: t0
    integer :: before
    type(c_funptr) :: hook
    hook = c_funloc(count_idle)
    call ok_call(chorus_comm_set_idle(comm, hook, c_null_ptr), 'chorus_comm_set_idle')
    x = 1
    if (me == np - 1) then
      t0 = MPI_Wtime()
      do while (MPI_Wtime() - t0 < 0.2d0)
      end do
    end if
    call ok_call(chorus_allreduce(x, y, 1_c_size_t, CHORUS_FLOAT64, CHORUS_SUM, comm, &
      c_null_ptr), 'allreduce with an idle hook')
    if (np > 1 .and. me /= np - 1) call check(idle_calls > 0, 'the idle hook turns while a peer is late')
    call ok_call(chorus_comm_set_idle(comm, c_null_funptr, c_null_ptr), 'chorus_comm_set_idle(NULL)')
    before = idle_calls
    call ok_call(chorus_allreduce(x, y, 1_c_size_t, CHORUS_FLOAT64, CHORUS_SUM, comm, &
      c_null_ptr), 'allreduce without')
    call check(idle_calls == before, 'a removed idle hook turns no more')
  end subroutine

  subroutine test_allreduce()
    integer, parameter :: n = 1000
    integer(c_int32_t) :: isend(n), irecv(n), iwant(n)
    integer(c_int64_t) :: lsend(n), lrecv(n), lwant(n)
    real(c_double) :: dsend(n), drecv(n), dwant(n), a(3, 4), awant(3, 4), s, t, strided(2 * n)
    real(c_float) :: fsend(n), frecv(n)
    integer :: i, r

    ! int32 sum: r*1000 + 7i - 3 summed over the ranks.
    isend = [(me * 1000 + 7 * i - 3, i = 1, n)]
    iwant = [(1000 * (np * (np - 1) / 2) + np * (7 * i - 3), i = 1, n)]
    call ok_call(chorus_allreduce(isend, irecv, int(n, c_size_t), CHORUS_INT32, CHORUS_SUM, comm, c_null_ptr), &
        'allreduce int32 sum')
    call check(all(irecv == iwant), 'allreduce int32 sum: values')

    ! int64 min beyond 32 bits.
    lsend = [(2_c_int64_t**40 * (me + 1) - i, i = 1, n)]
    lwant = [(2_c_int64_t**40 - i, i = 1, n)]
    call ok_call(chorus_allreduce(lsend, lrecv, int(n, c_size_t), CHORUS_INT64, CHORUS_MIN, comm, c_null_ptr), &
        'allreduce int64 min')
    call check(all(lrecv == lwant), 'allreduce int64 min: values')

    ! real(8) sum of quarters (exact) and max of a pattern that moves between ranks.
    dsend = [(0.25d0 * (me + 1) + 0.5d0 * i, i = 1, n)]
    dwant = [(0.25d0 * (np * (np + 1) / 2) + 0.5d0 * i * np, i = 1, n)]
    call ok_call(chorus_allreduce(dsend, drecv, int(n, c_size_t), CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr), &
        'allreduce float64 sum')
    call check(same(drecv, dwant), 'allreduce float64 sum: values')
    dsend = [(dble(mod(me * 5 + i, 7)) - 0.5d0 * me, i = 1, n)]
    do i = 1, n
      dwant(i) = maxval([(dble(mod(r * 5 + i, 7)) - 0.5d0 * r, r = 0, np - 1)])
    end do
    call ok_call(chorus_allreduce(dsend, drecv, int(n, c_size_t), CHORUS_FLOAT64, CHORUS_MAX, comm, c_null_ptr), &
        'allreduce float64 max')
    call check(same(drecv, dwant), 'allreduce float64 max: values')

    ! real(4) sum of small integers.
    fsend = [(real(me + i), i = 1, n)]
    call ok_call(chorus_allreduce(fsend, frecv, int(n, c_size_t), CHORUS_FLOAT32, CHORUS_SUM, comm, c_null_ptr), &
        'allreduce float32 sum')
    call check(same(frecv, [(real(np * i + np * (np - 1) / 2), i = 1, n)]), 'allreduce float32 sum: values')

    ! A rank-2 array in place, and a scalar.
    a = reshape([(dble(me + i), i = 1, 12)], [3, 4])
    awant = reshape([(dble(np * i + np * (np - 1) / 2), i = 1, 12)], [3, 4])
    call ok_call(chorus_allreduce(a, a, 12_c_size_t, CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr), &
        'allreduce rank-2 in place')
    call check(same(reshape(a, [12]), reshape(awant, [12])), 'allreduce rank-2 in place: values')
    s = dble(me + 1)
    call ok_call(chorus_allreduce(s, t, 1_c_size_t, CHORUS_FLOAT64, CHORUS_PROD, comm, c_null_ptr), &
        'allreduce scalar prod')
    call check(same([t], product([(dble(r + 1), r = 0, np - 1)])), 'allreduce scalar prod: value')

    ! A strided section: copied in and out around a blocking call.
    strided = -1d0
    strided(1:2 * n:2) = [(dble(me + i), i = 1, n)]
    call ok_call(chorus_allreduce(strided(1:2 * n:2), strided(1:2 * n:2), int(n, c_size_t), CHORUS_FLOAT64, &
        CHORUS_SUM, comm, c_null_ptr), 'allreduce strided section')
    call check(same(strided(1:2 * n:2), [(dble(np * i + np * (np - 1) / 2), i = 1, n)]) .and. &
        same(strided(2:2 * n:2), -1d0), 'allreduce strided section: values, gaps untouched')
  end subroutine

  subroutine test_broadcast()
    integer, parameter :: n = 777
    integer :: root, i
    integer(c_int32_t) :: buf(n), grid(5, 7)
    real(c_double) :: d(n)

    do root = 0, np - 1
      buf = -1
      if (me == root) buf = [(root * 10000 + i, i = 1, n)]
      call ok_call(chorus_broadcast(buf, buf, int(n, c_size_t), CHORUS_INT32, root, comm, c_null_ptr), 'broadcast')
      call check(all(buf == [(root * 10000 + i, i = 1, n)]), 'broadcast: values')
    end do
    ! Out of place at the root, a rank-2 receive buffer.
    root = np - 1
    d = [(0.125d0 * i, i = 1, n)]
    grid = 0
    call ok_call(chorus_broadcast([(i * 3, i = 1, 35)], grid, 35_c_size_t, CHORUS_INT32, root, comm, &
        c_null_ptr), 'broadcast into rank-2')
    call check(all(reshape(grid, [35]) == [(i * 3, i = 1, 35)]), 'broadcast into rank-2: values')
    if (me /= root) d = 0
    call ok_call(chorus_broadcast(d, d, int(n, c_size_t), CHORUS_FLOAT64, root, comm, c_null_ptr), 'broadcast float64')
    call check(same(d, [(0.125d0 * i, i = 1, n)]), 'broadcast float64: values')
  end subroutine

  subroutine test_reduce()
    integer, parameter :: n = 513
    integer :: root, i
    integer(c_int32_t) :: send(n), recv(n)

    root = mod(1, np)
    send = [(me * i - 2, i = 1, n)]
    recv = -7
    call ok_call(chorus_reduce(send, recv, int(n, c_size_t), CHORUS_INT32, CHORUS_SUM, root, comm, c_null_ptr), &
        'reduce')
    if (me == root) then
      call check(all(recv == [((np * (np - 1) / 2) * i - 2 * np, i = 1, n)]), 'reduce: values at the root')
    else
      call check(all(recv == -7), 'reduce: recvbuf untouched off the root')
    end if
  end subroutine

  subroutine test_reduce_scatter()
    integer, parameter :: n = 301
    real(c_double), allocatable :: send(:), recv(:), want(:)
    integer(c_size_t), allocatable :: counts(:)
    integer :: b, i, q, off

    ! Block b of rank q holds q + 10b + i/2.
    allocate(send(np * n), recv(n))
    do b = 0, np - 1
      send(b * n + 1:(b + 1) * n) = [(me + 10d0 * b + 0.5d0 * i, i = 1, n)]
    end do
    call ok_call(chorus_reduce_scatter(send, recv, int(n, c_size_t), CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr), &
        'reduce_scatter')
    call check(same(recv, [(np * (np - 1) / 2d0 + np * (10d0 * me + 0.5d0 * i), i = 1, n)]), &
        'reduce_scatter: values')

    ! Irregular blocks, zeros among them: block b has 2 * mod(b, 3) elements.
    allocate(counts(np))
    counts = [(int(2 * mod(b, 3), c_size_t), b = 0, np - 1)]
    deallocate(send, recv)
    allocate(send(sum(counts)), recv(max(1_c_size_t, counts(me + 1))), want(counts(me + 1)))
    off = 0
    do b = 0, np - 1
      do i = 1, int(counts(b + 1))
        send(off + i) = dble(100 * me + b + i)
      end do
      off = off + int(counts(b + 1))
    end do
    want = [(sum([(dble(100 * q + me + i), q = 0, np - 1)]), i = 1, int(counts(me + 1)))]
    call ok_call(chorus_reduce_scatterv(send, recv, counts, CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr), &
        'reduce_scatterv')
    call check(same(recv(1:counts(me + 1)), want), 'reduce_scatterv: values')
  end subroutine

  subroutine test_allgather()
    integer, parameter :: n = 64
    integer(c_int32_t) :: send(n)
    integer(c_int32_t), allocatable :: recv(:, :)
    integer :: i, r

    send = [(me * 100 + i, i = 1, n)]
    allocate(recv(n, np))
    recv = -1
    call ok_call(chorus_allgather(send, recv, int(n, c_size_t), CHORUS_INT32, comm, c_null_ptr), 'allgather')
    call check(all(recv == reshape([((r * 100 + i, i = 1, n), r = 0, np - 1)], [n, np])), 'allgather: values')
    ! In place: this rank's block is already in its column.
    recv = -1
    recv(:, me + 1) = send
    call ok_call(chorus_allgather(recv(:, me + 1), recv, int(n, c_size_t), CHORUS_INT32, comm, c_null_ptr), &
        'allgather in place')
    call check(all(recv == reshape([((r * 100 + i, i = 1, n), r = 0, np - 1)], [n, np])), &
        'allgather in place: values')
  end subroutine

  subroutine test_nonblocking()
    integer, parameter :: n = 4096
    real(c_double), asynchronous, allocatable :: a(:), b(:), c(:), g(:), rs(:), rsv(:), strided(:)
    integer(c_int32_t), asynchronous :: x(n), y(n)
    type(chorus_request_t) :: req(5)
    integer(c_size_t), allocatable :: counts(:)
    logical :: done
    integer :: i, k, r
    integer(c_int) :: rc

    allocate(a(n), b(n), c(n), g(n * np), rs(n * np), rsv(n * np), strided(2 * n))
    ! iallreduce + wait.
    a = [(dble(me + i), i = 1, n)]
    call ok_call(chorus_iallreduce(a, b, int(n, c_size_t), CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr, req(1)), &
        'iallreduce')
    call ok_call(chorus_wait(req(1)), 'wait')
    call check(.not. c_associated(req(1)%ptr), 'chorus_wait sets the request to NULL')
    call check(same(b, [(dble(np * i + np * (np - 1) / 2), i = 1, n)]), 'iallreduce + wait: values')

    ! iallreduce + test until done.
    x = [(me - i, i = 1, n)]
    call ok_call(chorus_iallreduce(x, y, int(n, c_size_t), CHORUS_INT32, CHORUS_MAX, comm, c_null_ptr, req(1)), &
        'iallreduce int32 max')
    done = .false.
    do while (.not. done)
      call ok_call(chorus_test(req(1), done), 'test')
    end do
    call check(.not. c_associated(req(1)%ptr), 'chorus_test done sets the request to NULL')
    call check(all(y == [(np - 1 - i, i = 1, n)]), 'iallreduce + test: values')

    ! Five kinds in flight at once, completed in reverse order.
    c = -1
    if (me == 0) c = [(0.5d0 * i, i = 1, n)]
    rs = [(dble(me), i = 1, n * np)]
    allocate(counts(np))
    counts = [(int(mod(r, 2) * 3 + 1, c_size_t), r = 0, np - 1)]
    rsv = dble(me + 1)
    a = [(dble(me + i), i = 1, n)]
    call ok_call(chorus_ibroadcast(c, c, int(n, c_size_t), CHORUS_FLOAT64, 0, comm, c_null_ptr, req(1)), 'ibroadcast')
    call ok_call(chorus_ireduce(a, b, int(n, c_size_t), CHORUS_FLOAT64, CHORUS_SUM, np - 1, comm, c_null_ptr, &
        req(2)), 'ireduce')
    call ok_call(chorus_iallgather(a, g, int(n, c_size_t), CHORUS_FLOAT64, comm, c_null_ptr, req(3)), 'iallgather')
    call ok_call(chorus_ireduce_scatter(rs, rs, int(n, c_size_t), CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr, &
        req(4)), 'ireduce_scatter in place')
    call ok_call(chorus_ireduce_scatterv(rsv, rsv, counts, CHORUS_FLOAT64, CHORUS_MAX, comm, c_null_ptr, req(5)), &
        'ireduce_scatterv in place')
    do k = 5, 1, -1
      call ok_call(chorus_wait(req(k)), 'wait on several')
    end do
    call check(same(c, [(0.5d0 * i, i = 1, n)]), 'ibroadcast: values')
    if (me == np - 1) call check(same(b, [(dble(np * i + np * (np - 1) / 2), i = 1, n)]), 'ireduce: values')
    call check(same(g, [((dble(r + i), i = 1, n), r = 0, np - 1)]), 'iallgather: values')
    call check(same(rs(1:n), dble(np * (np - 1) / 2)), 'ireduce_scatter in place: values')
    call check(same(rsv(1:counts(me + 1)), dble(np)), 'ireduce_scatterv in place: values')

    ! A strided section cannot be handed to a nonblocking call.
    rc = chorus_iallreduce(strided(1:2 * n:2), b, int(n, c_size_t), CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr, &
        req(1))
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'iallreduce on a strided section is refused')
    call check(index(chorus_comm_last_error(comm), 'not contiguous') > 0, &
        'the refusal is the last error: ' // chorus_comm_last_error(comm))
    call check(.not. c_associated(req(1)%ptr), 'a refused call returns a NULL request')
    ! A newer failure of the library replaces it.
    rc = chorus_allreduce(a, b, int(n, c_size_t), 99_c_int, CHORUS_SUM, comm, c_null_ptr)
    call check(index(chorus_comm_last_error(comm), 'not contiguous') == 0, 'a later failure replaces the refusal')
  end subroutine

  subroutine test_errors()
    real(c_double) :: d(8), e(8)
    integer(c_int) :: rc, code
    character(len=:), allocatable :: msg

    d = 1
    ! A root out of range is rejected on every rank before anything moves.
    rc = chorus_broadcast(d, d, 8_c_size_t, CHORUS_FLOAT64, int(np, c_int), comm, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'broadcast with root = size: CHORUS_ERR_INVALID_ARGUMENT')
    msg = chorus_comm_last_error(comm)
    call check(len(msg) > 0, 'chorus_comm_last_error after a bad root is not empty')
    if (me == 0) print '(a, a)', 'bad root: ', msg
    rc = chorus_reduce(d, e, 8_c_size_t, CHORUS_FLOAT64, CHORUS_SUM, -1_c_int, comm, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'reduce with root -1')
    rc = chorus_allreduce(d, e, 8_c_size_t, int(CHORUS_NUM_DATATYPES, c_int), CHORUS_SUM, comm, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'allreduce with a bad datatype')
    rc = chorus_allreduce(d, e, 8_c_size_t, CHORUS_FLOAT64, int(CHORUS_NUM_OPS, c_int), comm, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'allreduce with a bad op')
    rc = chorus_allreduce(d, e, 8_c_size_t, CHORUS_FLOAT64, CHORUS_BXOR, comm, c_null_ptr)
    call check(rc == CHORUS_ERR_UNSUPPORTED, 'bitwise op on float64: CHORUS_ERR_UNSUPPORTED')
    ! No communicator: the message is found without one.
    rc = chorus_allreduce(d, e, 8_c_size_t, CHORUS_FLOAT64, CHORUS_SUM, CHORUS_COMM_NULL, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'allreduce on CHORUS_COMM_NULL')
    call check(len(chorus_comm_last_error()) > 0, 'chorus_comm_last_error() after a NULL communicator')
    ! Every code has a description.
    do code = CHORUS_SUCCESS, CHORUS_ERR_CONFIG
      call check(len(chorus_get_error_string(code)) > 0, 'chorus_get_error_string')
    end do
    ! The communicator still works.
    call ok_call(chorus_allreduce(d, e, 8_c_size_t, CHORUS_FLOAT64, CHORUS_SUM, comm, c_null_ptr), &
        'allreduce after errors')
    call check(same(e, dble(np)), 'allreduce after errors: values')
  end subroutine

  ! A communicator made from a split MPI communicator (MPI_Comm_f2c of
  ! something other than MPI_COMM_WORLD).
  subroutine test_split_comm()
    integer :: half, hsize
    type(chorus_comm_t) :: sub
    integer(c_int) :: v, total

    call MPI_Comm_split(MPI_COMM_WORLD, mod(me, 2), me, half, ierr)
    call MPI_Comm_size(half, hsize, ierr)
    call ok_call(chorus_comm_create(half, sub), 'chorus_comm_create on a split communicator')
    v = me
    call ok_call(chorus_allreduce(v, total, 1_c_size_t, CHORUS_INT32, CHORUS_SUM, sub, c_null_ptr), &
        'allreduce on a split communicator')
    ! The ranks of parity mod(me, 2) are mod(me, 2), mod(me, 2) + 2, ...
    call check(total == hsize * mod(me, 2) + 2 * (hsize * (hsize - 1) / 2), 'allreduce on a split communicator: value')
    call ok_call(chorus_comm_destroy(sub), 'chorus_comm_destroy of the split one')
    call MPI_Comm_free(half, ierr)
  end subroutine

end program
