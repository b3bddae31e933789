! The data-movement calls of the module `chorus` and chorus_comm_set_label
! under mpirun: each collective blocking, + chorus_wait and + chorus_test,
! against MPI's own collective on the same data or per-rank formulas;
! irregular blocks (zeros among them) out of rank order, with gaps that must
! stay untouched; every root; in place; zero-size arrays for root-only
! arguments off the root; several in flight at once; barriers that must
! wait for a late rank; and the error paths.
program test_chorus_movement
  use mpi
  use chorus
  use fortran_checks
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: ierr, mode

  call start()
  call check(chorus_comm_create(MPI_COMM_WORLD, comm) == CHORUS_SUCCESS, 'chorus_comm_create')
  call test_set_label()
  do mode = BLOCKING, TEST
    call test_allgatherv(mode)
    call test_alltoall(mode)
    call test_alltoallv(mode)
    call test_gather(mode)
    call test_gatherv(mode)
    call test_scatter(mode)
    call test_scatterv(mode)
    call test_barrier(mode)
  end do
  call test_in_flight()
  call test_errors()
  call check(chorus_comm_destroy(comm) == CHORUS_SUCCESS, 'chorus_comm_destroy')
  call finish('fortran data movement (use chorus)')

contains

  ! chorus_comm_set_label: the label reaches C without its trailing blanks
  ! (at most 255 characters: the 256th is refused, and the message counts
  ! them), absent or blank removes it, and a NULL communicator is refused.
  subroutine test_set_label()
    character(len=:), allocatable :: msg
    integer(c_int) :: rc
    type(chorus_request_t) :: req

    call ok_call(chorus_comm_set_label(comm, 'fortran data movement'), 'set_label')
    call ok_call(chorus_barrier(comm, c_null_ptr), 'barrier under a label')
    call ok_call(chorus_comm_set_label(comm, 'phase B' // repeat(' ', 293)), 'set_label of 7 characters and 293 blanks')
    call ok_call(chorus_comm_set_label(comm, repeat('x', 255)), 'set_label of 255 characters')
    call ok_call(chorus_comm_set_label(comm, repeat('x', 255) // '    '), 'set_label of 255 and trailing blanks')
    rc = chorus_comm_set_label(comm, repeat('x', 256))
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'set_label of 256 characters: CHORUS_ERR_INVALID_ARGUMENT')
    msg = chorus_comm_last_error(comm)
    call check(index(msg, 'label') > 0 .and. index(msg, '256') > 0, 'set_label of 256: the message says so: ' // msg)
    rc = chorus_comm_set_label(CHORUS_COMM_NULL, 'x')
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'set_label on CHORUS_COMM_NULL: CHORUS_ERR_INVALID_ARGUMENT')
    call check(len(chorus_comm_last_error()) > 0, 'set_label on CHORUS_COMM_NULL: a message without a communicator')
    call ok_call(chorus_comm_set_label(comm, ''), 'set_label of ""')
    call ok_call(chorus_comm_set_label(comm, '   '), 'set_label of blanks')
    call ok_call(chorus_comm_set_label(comm, 'nonblocking'), 'set_label again')
    call complete(chorus_ibarrier(comm, c_null_ptr, req), req, WAIT, 'ibarrier under a label')
    call ok_call(chorus_comm_set_label(comm), 'set_label with no label (NULL)')
    call ok_call(chorus_barrier(comm, c_null_ptr), 'barrier without a label')
  end subroutine

  ! Rank i's block has mod(3i + 1, 4) elements 1000i + k; blocks land in
  ! reverse rank order with gaps.
  subroutine test_allgatherv(mode)
    integer, intent(in) :: mode
    integer(c_int32_t), allocatable, asynchronous :: send(:), recv(:), ref(:)
    integer(c_size_t) :: counts(np), displs(np)
    integer(c_size_t) :: c, d
    type(chorus_request_t) :: req
    integer(c_int) :: rc
    integer :: i, k

    counts = [(int(mod(3 * i + 1, 4), c_size_t), i = 0, np - 1)]
    displs = layout(counts, 1, .true.)
    c = counts(me + 1)
    d = displs(me + 1)
    send = [(1000 * me + k, k = 1, int(c))]
    allocate(recv(extent(counts, 1)), ref(extent(counts, 1)))
    recv = -1
    ref = -1
    call MPI_Allgatherv(send, int(c), MPI_INTEGER, ref, int(counts), int(displs), MPI_INTEGER, MPI_COMM_WORLD, ierr)
    if (mode == BLOCKING) then
      rc = chorus_allgatherv(send, c, recv, counts, displs, CHORUS_INT32, comm, c_null_ptr)
    else
      rc = chorus_iallgatherv(send, c, recv, counts, displs, CHORUS_INT32, comm, c_null_ptr, req)
    end if
    call complete(rc, req, mode, 'allgatherv')
    call check(all(recv == ref), 'allgatherv as MPI_Allgatherv, gaps untouched (' // trim(how(mode)) // ')')

    ! In place: this rank's block is already at displs(me).
    recv = -1
    recv(d + 1:d + c) = send
    if (mode == BLOCKING) then
      rc = chorus_allgatherv(recv(d + 1:d + c), c, recv, counts, displs, CHORUS_INT32, comm, c_null_ptr)
    else
      rc = chorus_iallgatherv(recv(d + 1:d + c), c, recv, counts, displs, CHORUS_INT32, comm, c_null_ptr, req)
    end if
    call complete(rc, req, mode, 'allgatherv in place')
    call check(all(recv == ref), 'allgatherv in place as MPI_Allgatherv (' // trim(how(mode)) // ')')
  end subroutine

  ! Rank-2 buffers, one column per rank: column j of rank i's sendbuf holds
  ! 1000i + 10j + k + 1/2 and becomes column i of rank j's recvbuf.
  subroutine test_alltoall(mode)
    integer, intent(in) :: mode
    integer, parameter :: n = 3
    real(c_double), allocatable, asynchronous :: send(:, :), recv(:, :), ref(:, :), want(:, :)
    type(chorus_request_t) :: req
    integer(c_int) :: rc
    integer :: j, k

    allocate(send(n, np), recv(n, np), ref(n, np), want(n, np))
    send = reshape([((1000d0 * me + 10 * j + k + 0.5d0, k = 1, n), j = 0, np - 1)], [n, np])
    want = reshape([((1000d0 * j + 10 * me + k + 0.5d0, k = 1, n), j = 0, np - 1)], [n, np])
    recv = -1
    call MPI_Alltoall(send, n, MPI_DOUBLE_PRECISION, ref, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
    call check(same_f64([ref], [want]), 'MPI_Alltoall gives the formula')
    if (mode == BLOCKING) then
      rc = chorus_alltoall(send, recv, int(n, c_size_t), CHORUS_FLOAT64, comm, c_null_ptr)
    else
      rc = chorus_ialltoall(send, recv, int(n, c_size_t), CHORUS_FLOAT64, comm, c_null_ptr, req)
    end if
    call complete(rc, req, mode, 'alltoall')
    call check(same_f64([recv], [ref]), 'alltoall as MPI_Alltoall (' // trim(how(mode)) // ')')

    recv = send
    if (mode == BLOCKING) then
      rc = chorus_alltoall(recv, recv, int(n, c_size_t), CHORUS_FLOAT64, comm, c_null_ptr)
    else
      rc = chorus_ialltoall(recv, recv, int(n, c_size_t), CHORUS_FLOAT64, comm, c_null_ptr, req)
    end if
    call complete(rc, req, mode, 'alltoall in place')
    call check(same_f64([recv], [want]), 'alltoall in place: values (' // trim(how(mode)) // ')')
  end subroutine

  ! Rank i sends mod(i + 2j + 1, 4) elements 2**33 + 10**6 i + 1000j + k to
  ! rank j; send blocks in reverse order, receive blocks in order, with
  ! gaps of different widths.
  subroutine test_alltoallv(mode)
    integer, intent(in) :: mode
    integer(c_int64_t), allocatable, asynchronous :: send(:), recv(:), ref(:)
    integer(c_size_t) :: scounts(np), sdispls(np), rcounts(np), rdispls(np), none(0)
    type(chorus_request_t) :: req
    integer(c_int) :: rc
    integer :: i, j, k
    logical :: ok

    scounts = [(int(mod(me + 2 * j + 1, 4), c_size_t), j = 0, np - 1)]
    rcounts = [(int(mod(i + 2 * me + 1, 4), c_size_t), i = 0, np - 1)]
    sdispls = layout(scounts, 1, .true.)
    rdispls = layout(rcounts, 2, .false.)
    allocate(send(extent(scounts, 1)), recv(extent(rcounts, 2)), ref(extent(rcounts, 2)))
    send = -5
    do j = 0, np - 1
      send(sdispls(j + 1) + 1:sdispls(j + 1) + scounts(j + 1)) = &
          [(2_c_int64_t**33 + 10**6 * me + 1000 * j + k, k = 1, int(scounts(j + 1)))]
    end do
    recv = -1
    ref = -1
    call MPI_Alltoallv(send, int(scounts), int(sdispls), MPI_INTEGER8, ref, int(rcounts), int(rdispls), MPI_INTEGER8, &
        MPI_COMM_WORLD, ierr)
    if (mode == BLOCKING) then
      rc = chorus_alltoallv(send, scounts, sdispls, recv, rcounts, rdispls, CHORUS_INT64, comm, c_null_ptr)
    else
      rc = chorus_ialltoallv(send, scounts, sdispls, recv, rcounts, rdispls, CHORUS_INT64, comm, c_null_ptr, req)
    end if
    call complete(rc, req, mode, 'alltoallv')
    call check(all(recv == ref), 'alltoallv as MPI_Alltoallv, gaps untouched (' // trim(how(mode)) // ')')

    ! In place, with counts that agree both ways (mod(i + j + 1, 3)); the
    ! send counts and displacements are ignored: zero-size arrays.
    rcounts = [(int(mod(i + me + 1, 3), c_size_t), i = 0, np - 1)]
    rdispls = layout(rcounts, 1, .true.)
    deallocate(recv)
    allocate(recv(extent(rcounts, 1)))
    recv = -1
    do j = 0, np - 1
      recv(rdispls(j + 1) + 1:rdispls(j + 1) + rcounts(j + 1)) = [(10**6 * me + 1000 * j + k, k = 1, int(rcounts(j + 1)))]
    end do
    if (mode == BLOCKING) then
      rc = chorus_alltoallv(recv, none, none, recv, rcounts, rdispls, CHORUS_INT64, comm, c_null_ptr)
    else
      rc = chorus_ialltoallv(recv, none, none, recv, rcounts, rdispls, CHORUS_INT64, comm, c_null_ptr, req)
    end if
    call complete(rc, req, mode, 'alltoallv in place')
    ok = count(recv == -1) == extent(rcounts, 1) - sum(rcounts)
    do i = 0, np - 1
      ok = ok .and. all(recv(rdispls(i + 1) + 1:rdispls(i + 1) + rcounts(i + 1)) == &
          [(10**6 * i + 1000 * me + k, k = 1, int(rcounts(i + 1)))])
    end do
    call check(ok, 'alltoallv in place: values, gaps untouched (' // trim(how(mode)) // ')')
  end subroutine

  ! Every root. Off the root, recvbuf is a zero-size array (C's NULL), or an
  ! array that must stay untouched.
  subroutine test_gather(mode)
    integer, intent(in) :: mode
    integer, parameter :: n = 4
    integer(c_int32_t), asynchronous :: send(n)
    integer(c_int32_t), allocatable, asynchronous :: recv(:), ref(:)
    type(chorus_request_t) :: req
    integer(c_int) :: rc, root
    integer :: k

    do root = 0, np - 1
      send = [(100 * me + 10 * root + k, k = 1, n)]
      allocate(recv(n * np), ref(n * np))
      recv = -1
      call MPI_Gather(send, n, MPI_INTEGER, ref, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
      if (mode == BLOCKING) then
        rc = chorus_gather(send, recv, int(n, c_size_t), CHORUS_INT32, root, comm, c_null_ptr)
      else
        rc = chorus_igather(send, recv, int(n, c_size_t), CHORUS_INT32, root, comm, c_null_ptr, req)
      end if
      call complete(rc, req, mode, 'gather')
      if (me == root) then
        call check(all(recv == ref), 'gather as MPI_Gather at the root (' // trim(how(mode)) // ')')
      else
        call check(all(recv == -1), 'gather: recvbuf untouched off the root (' // trim(how(mode)) // ')')
      end if

      ! In place on the root; a zero-size recvbuf elsewhere.
      if (me /= root) recv = [integer(c_int32_t) ::]
      if (me == root) then
        recv = -1
        recv(root * n + 1:(root + 1) * n) = send
        if (mode == BLOCKING) then
          rc = chorus_gather(recv(root * n + 1:(root + 1) * n), recv, int(n, c_size_t), CHORUS_INT32, root, comm, &
              c_null_ptr)
        else
          rc = chorus_igather(recv(root * n + 1:(root + 1) * n), recv, int(n, c_size_t), CHORUS_INT32, root, comm, &
              c_null_ptr, req)
        end if
      else if (mode == BLOCKING) then
        rc = chorus_gather(send, recv, int(n, c_size_t), CHORUS_INT32, root, comm, c_null_ptr)
      else
        rc = chorus_igather(send, recv, int(n, c_size_t), CHORUS_INT32, root, comm, c_null_ptr, req)
      end if
      call complete(rc, req, mode, 'gather in place')
      if (me == root) call check(all(recv == ref), 'gather in place as MPI_Gather (' // trim(how(mode)) // ')')
      deallocate(recv, ref)
    end do
  end subroutine

  ! Every root; rank i sends mod(2i + 2, 3) elements, landing in reverse
  ! rank order with gaps. Off the root, recvbuf, recvcounts and displs are
  ! zero-size arrays.
  subroutine test_gatherv(mode)
    integer, intent(in) :: mode
    real(c_double), allocatable, asynchronous :: send(:), recv(:), ref(:)
    integer(c_size_t) :: counts(np), displs(np), c
    type(chorus_request_t) :: req
    integer(c_int) :: rc, root
    integer :: i, k, pass, nr
    logical :: in_place

    counts = [(int(mod(2 * i + 2, 3), c_size_t), i = 0, np - 1)]
    displs = layout(counts, 1, .true.)
    c = int(mod(2 * me + 2, 3), c_size_t)  ! counts(me + 1), which gfortran 12 -O3 takes for uninitialized here
    do root = 0, np - 1
      send = [(me + 0.25d0 * k + root, k = 1, int(c))]
      ! The reference is only significant at the root.
      allocate(ref(extent(counts, 1)))
      ref = -1
      call MPI_Gatherv(send, int(c), MPI_DOUBLE_PRECISION, ref, int(counts), int(displs), MPI_DOUBLE_PRECISION, root, &
          MPI_COMM_WORLD, ierr)
      nr = merge(np, 0, me == root)
      do pass = 0, 1
        in_place = pass == 1 .and. me == root
        allocate(recv(merge(extent(counts, 1), 0, me == root)))
        recv = -1
        if (in_place) recv(displs(me + 1) + 1:displs(me + 1) + c) = send
        if (in_place .and. mode == BLOCKING) then
          rc = chorus_gatherv(recv(displs(me + 1) + 1:displs(me + 1) + c), c, recv, counts, displs, CHORUS_FLOAT64, &
              root, comm, c_null_ptr)
        else if (in_place) then
          rc = chorus_igatherv(recv(displs(me + 1) + 1:displs(me + 1) + c), c, recv, counts, displs, CHORUS_FLOAT64, &
              root, comm, c_null_ptr, req)
        else if (mode == BLOCKING) then
          rc = chorus_gatherv(send, c, recv, counts(:nr), displs(:nr), CHORUS_FLOAT64, root, comm, c_null_ptr)
        else
          rc = chorus_igatherv(send, c, recv, counts(:nr), displs(:nr), CHORUS_FLOAT64, root, comm, c_null_ptr, req)
        end if
        call complete(rc, req, mode, 'gatherv')
        if (me == root .and. in_place) then
          call check(same_f64(recv, ref), 'gatherv in place as MPI_Gatherv at the root (' // trim(how(mode)) // ')')
        else if (me == root) then
          call check(same_f64(recv, ref), 'gatherv as MPI_Gatherv at the root, gaps untouched (' // trim(how(mode)) // ')')
        end if
        deallocate(recv)
      end do
      deallocate(ref)
    end do
  end subroutine

  ! Every root; block i of the root's sendbuf holds 100 root + 10i + k.
  ! Off the root, sendbuf is a zero-size array.
  subroutine test_scatter(mode)
    integer, intent(in) :: mode
    integer, parameter :: n = 3
    integer(c_int32_t), allocatable, asynchronous :: send(:)
    integer(c_int32_t), asynchronous :: recv(n), ref(n)
    type(chorus_request_t) :: req
    integer(c_int) :: rc, root
    integer :: i, k

    do root = 0, np - 1
      if (me == root) then
        send = [((100 * root + 10 * i + k, k = 1, n), i = 0, np - 1)]
      else
        allocate(send(0))
      end if
      recv = -1
      call MPI_Scatter(send, n, MPI_INTEGER, ref, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
      call check(all(ref == [(100 * root + 10 * me + k, k = 1, n)]), 'MPI_Scatter gives the formula')
      if (mode == BLOCKING) then
        rc = chorus_scatter(send, recv, int(n, c_size_t), CHORUS_INT32, root, comm, c_null_ptr)
      else
        rc = chorus_iscatter(send, recv, int(n, c_size_t), CHORUS_INT32, root, comm, c_null_ptr, req)
      end if
      call complete(rc, req, mode, 'scatter')
      call check(all(recv == ref), 'scatter as MPI_Scatter (' // trim(how(mode)) // ')')

      ! In place on the root: its own block stays in its sendbuf.
      recv = -1
      if (me == root .and. mode == BLOCKING) then
        rc = chorus_scatter(send, send(root * n + 1:(root + 1) * n), int(n, c_size_t), CHORUS_INT32, root, comm, &
            c_null_ptr)
      else if (me == root) then
        rc = chorus_iscatter(send, send(root * n + 1:(root + 1) * n), int(n, c_size_t), CHORUS_INT32, root, comm, &
            c_null_ptr, req)
      else if (mode == BLOCKING) then
        rc = chorus_scatter(send, recv, int(n, c_size_t), CHORUS_INT32, root, comm, c_null_ptr)
      else
        rc = chorus_iscatter(send, recv, int(n, c_size_t), CHORUS_INT32, root, comm, c_null_ptr, req)
      end if
      call complete(rc, req, mode, 'scatter in place')
      if (me == root) then
        call check(all(send == [((100 * root + 10 * i + k, k = 1, n), i = 0, np - 1)]), &
            'scatter in place: the root''s sendbuf unchanged (' // trim(how(mode)) // ')')
      else
        call check(all(recv == ref), 'scatter in place: values (' // trim(how(mode)) // ')')
      end if
      deallocate(send)
    end do
  end subroutine

  ! Every root; rank i receives mod(i + 2, 3) real(4) elements, taken in
  ! rank order with gaps of 2 from the root's sendbuf. Off the root,
  ! sendbuf, sendcounts and displs are zero-size arrays. The element after
  ! the received ones stays untouched.
  subroutine test_scatterv(mode)
    integer, intent(in) :: mode
    real(c_float), allocatable, asynchronous :: send(:), recv(:), ref(:)
    integer(c_size_t) :: counts(np), displs(np), c
    type(chorus_request_t) :: req
    integer(c_int) :: rc, root
    integer :: i, k, nr

    counts = [(int(mod(i + 2, 3), c_size_t), i = 0, np - 1)]
    displs = layout(counts, 2, .false.)
    c = counts(me + 1)
    allocate(recv(c + 1), ref(c + 1))
    do root = 0, np - 1
      nr = merge(np, 0, me == root)
      allocate(send(merge(extent(counts, 2), 0, me == root)))
      send = -3
      do i = 0, nr - 1
        send(displs(i + 1) + 1:displs(i + 1) + counts(i + 1)) = [(real(10 * root + i) + 0.5 * k, k = 1, &
            int(counts(i + 1)))]
      end do
      recv = -1
      ref = -1
      call MPI_Scatterv(send, int(counts), int(displs), MPI_REAL, ref, int(c), MPI_REAL, root, MPI_COMM_WORLD, ierr)
      if (mode == BLOCKING) then
        rc = chorus_scatterv(send, counts(:nr), displs(:nr), recv, c, CHORUS_FLOAT32, root, comm, c_null_ptr)
      else
        rc = chorus_iscatterv(send, counts(:nr), displs(:nr), recv, c, CHORUS_FLOAT32, root, comm, c_null_ptr, req)
      end if
      call complete(rc, req, mode, 'scatterv')
      call check(same_f32(recv, ref), 'scatterv as MPI_Scatterv, the element after untouched (' // trim(how(mode)) // ')')
      deallocate(send)
    end do
  end subroutine

  ! The last rank comes late and, just before its barrier, creates a file
  ! that every rank then must see: nobody may leave the barrier earlier.
  subroutine test_barrier(mode)
    integer, intent(in) :: mode
    character(len=64) :: flag
    double precision :: t0
    type(chorus_request_t) :: req
    integer(c_int) :: rc
    integer :: unit
    logical :: there

    write (flag, '(a, i0, a, i0, a)') 'chorus-fortran-barrier-np', np, '-', mode, '.flag'
    if (me == np - 1) then
      open(newunit=unit, file=flag, status='replace')
      close(unit, status='delete')
    end if
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    if (me == np - 1) then
      t0 = MPI_Wtime()
      do while (MPI_Wtime() - t0 < 0.2d0)
      end do
      open(newunit=unit, file=flag, status='new')
      close(unit)
    end if
    if (mode == BLOCKING) then
      rc = chorus_barrier(comm, c_null_ptr)
    else
      rc = chorus_ibarrier(comm, c_null_ptr, req)
    end if
    call complete(rc, req, mode, 'barrier')
    inquire(file=flag, exist=there)
    call check(there, 'barrier: the late rank has entered when it returns (' // trim(how(mode)) // ')')
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    if (me == np - 1) then
      open(newunit=unit, file=flag, status='old')
      close(unit, status='delete')
    end if
  end subroutine

  ! Five kinds in flight at once, completed in reverse order.
  subroutine test_in_flight()
    integer, parameter :: n = 2
    integer(c_int32_t), asynchronous :: a(n, np), b(n, np), g(n, np), s(n)
    integer(c_int32_t), allocatable, asynchronous :: v(:)
    integer(c_size_t) :: counts(np), displs(np)
    type(chorus_request_t) :: req(5)
    integer :: i, j, k

    a = reshape([((100 * me + 10 * j + k, k = 1, n), j = 0, np - 1)], [n, np])
    b = -1
    g = -1
    s = -1
    counts = [(int(mod(i, 2), c_size_t), i = 0, np - 1)]
    displs = layout(counts, 0, .false.)
    allocate(v(extent(counts, 0)))
    v = -1
    call ok_call(chorus_ialltoall(a, b, int(n, c_size_t), CHORUS_INT32, comm, c_null_ptr, req(1)), 'ialltoall')
    call ok_call(chorus_igather(a(:, 1), g, int(n, c_size_t), CHORUS_INT32, 0, comm, c_null_ptr, req(2)), 'igather')
    call ok_call(chorus_iscatter(a, s, int(n, c_size_t), CHORUS_INT32, np - 1, comm, c_null_ptr, req(3)), 'iscatter')
    call ok_call(chorus_iallgatherv(a(:, 1), counts(me + 1), v, counts, displs, CHORUS_INT32, comm, c_null_ptr, &
        req(4)), 'iallgatherv')
    call ok_call(chorus_ibarrier(comm, c_null_ptr, req(5)), 'ibarrier')
    do k = 5, 1, -1
      call ok_call(chorus_wait(req(k)), 'wait on several')
    end do
    call check(all(b == reshape([((100 * j + 10 * me + k, k = 1, n), j = 0, np - 1)], [n, np])), &
        'in flight: ialltoall values')
    if (me == 0) call check(all(g == reshape([((100 * j + k, k = 1, n), j = 0, np - 1)], [n, np])), &
        'in flight: igather values')
    call check(all(s == [(100 * (np - 1) + 10 * me + k, k = 1, n)]), 'in flight: iscatter values')
    call check(all(v == [((100 * j + k, k = 1, int(counts(j + 1))), j = 0, np - 1)]), 'in flight: iallgatherv values')
  end subroutine

  ! Bad arguments are refused on every rank with CHORUS_ERR_INVALID_ARGUMENT,
  ! and the communicator stays usable.
  subroutine test_errors()
    integer(c_int32_t), asynchronous :: x(8), y(8 * np), strided(16 * np)
    integer(c_size_t) :: counts(np), displs(np)
    type(chorus_request_t) :: req
    integer(c_int) :: rc
    integer :: k

    x = me
    counts = 1
    displs = [(int(k, c_size_t), k = 0, np - 1)]
    rc = chorus_gather(x, y, 8_c_size_t, CHORUS_INT32, int(np, c_int), comm, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'gather with root = size: CHORUS_ERR_INVALID_ARGUMENT')
    rc = chorus_scatterv(y, counts, displs, x, 1_c_size_t, CHORUS_INT32, -1_c_int, comm, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'scatterv with root -1')
    rc = chorus_allgatherv(x, 2_c_size_t, y, counts, displs, CHORUS_INT32, comm, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'allgatherv with sendcount /= recvcounts(rank)')
    rc = chorus_alltoall(x, y, 1_c_size_t, int(CHORUS_NUM_DATATYPES, c_int), comm, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'alltoall with a bad datatype')
    rc = chorus_barrier(CHORUS_COMM_NULL, c_null_ptr)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'barrier on CHORUS_COMM_NULL')
    rc = chorus_ibarrier(CHORUS_COMM_NULL, c_null_ptr, req)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT .and. .not. c_associated(req%ptr), &
        'ibarrier on CHORUS_COMM_NULL: refused, a NULL request')
    ! A strided section cannot be handed to a nonblocking call.
    rc = chorus_ialltoall(x, strided(1:16 * np:2), 1_c_size_t, CHORUS_INT32, comm, c_null_ptr, req)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT .and. .not. c_associated(req%ptr), &
        'ialltoall into a strided section: refused, a NULL request')
    call check(index(chorus_comm_last_error(comm), 'recvbuf is not contiguous') > 0, &
        'the refusal names recvbuf: ' // chorus_comm_last_error(comm))
    rc = chorus_iscatterv(strided(1:16 * np:2), counts, displs, x, 1_c_size_t, CHORUS_INT32, 0, comm, c_null_ptr, req)
    call check(rc == CHORUS_ERR_INVALID_ARGUMENT, 'iscatterv from a strided section: refused')
    call check(index(chorus_comm_last_error(comm), 'sendbuf is not contiguous') > 0, &
        'the refusal names sendbuf: ' // chorus_comm_last_error(comm))
    ! Still usable.
    call ok_call(chorus_allgatherv(x, 1_c_size_t, y, counts, displs, CHORUS_INT32, comm, c_null_ptr), &
        'allgatherv after errors')
    call check(all(y(1:np) == [(k, k = 0, np - 1)]), 'allgatherv after errors: values')
  end subroutine

end program
