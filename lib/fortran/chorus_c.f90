! chorus_c.f90 - the C entry points of include/chorus.h that the module
! binds (all but the memory and settings calls for tools), one bind(C)
! interface each, with handles and buffers as type(c_ptr). Internal to the
! module `chorus` (chorus.F90), whose pieces chorus_core.F90 and
! chorus_movement.f90 wrap each one for Fortran callers; a new function of
! chorus.h gets its interface here, named c_<name without the chorus_ prefix>.
module chorus_c
  use, intrinsic :: iso_c_binding
  implicit none

  interface
    function c_strlen(s) bind(C, name='strlen') result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function

    function c_get_error_string(result) bind(C, name='chorus_get_error_string') result(s)
      import :: c_int, c_ptr
      integer(c_int), value :: result
      type(c_ptr) :: s
    end function

    function c_comm_last_error(comm) bind(C, name='chorus_comm_last_error') result(s)
      import :: c_ptr
      type(c_ptr), value :: comm
      type(c_ptr) :: s
    end function

    ! lib/fortran/chorus_fortran.c: MPI_Comm_f2c, then chorus_comm_create.
    function c_comm_create_f(mpi_handle, comm) bind(C, name='chorus_comm_create_f') result(rc)
      import :: c_int, c_ptr
      integer(c_int), value :: mpi_handle
      type(c_ptr) :: comm
      integer(c_int) :: rc
    end function

    function c_comm_destroy(comm) bind(C, name='chorus_comm_destroy') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int) :: rc
    end function

    function c_comm_abort(comm) bind(C, name='chorus_comm_abort') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int) :: rc
    end function

    function c_comm_set_label(comm, label) bind(C, name='chorus_comm_set_label') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm, label
      integer(c_int) :: rc
    end function

    function c_comm_set_idle(comm, fn, arg) bind(C, name='chorus_comm_set_idle') result(rc)
      import :: c_int, c_ptr, c_funptr
      type(c_ptr), value :: comm
      type(c_funptr), value :: fn
      type(c_ptr), value :: arg
      integer(c_int) :: rc
    end function

    function c_comm_rank(comm, rank) bind(C, name='chorus_comm_rank') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int) :: rank
      integer(c_int) :: rc
    end function

    function c_comm_size(comm, size) bind(C, name='chorus_comm_size') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int) :: size
      integer(c_int) :: rc
    end function

    function c_test(request, done) bind(C, name='chorus_test') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: request
      integer(c_int) :: done
      integer(c_int) :: rc
    end function

    function c_wait(request) bind(C, name='chorus_wait') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: request
      integer(c_int) :: rc
    end function

    function c_allreduce(sendbuf, recvbuf, count, datatype, op, comm, stream) &
        bind(C, name='chorus_allreduce') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, op
      integer(c_int) :: rc
    end function

    function c_iallreduce(sendbuf, recvbuf, count, datatype, op, comm, stream, request) &
        bind(C, name='chorus_iallreduce') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, op
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_broadcast(sendbuf, recvbuf, count, datatype, root, comm, stream) &
        bind(C, name='chorus_broadcast') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, root
      integer(c_int) :: rc
    end function

    function c_ibroadcast(sendbuf, recvbuf, count, datatype, root, comm, stream, request) &
        bind(C, name='chorus_ibroadcast') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, root
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, stream) &
        bind(C, name='chorus_reduce') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, op, root
      integer(c_int) :: rc
    end function

    function c_ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, stream, request) &
        bind(C, name='chorus_ireduce') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, op, root
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_reduce_scatter(sendbuf, recvbuf, recvcount, datatype, op, comm, stream) &
        bind(C, name='chorus_reduce_scatter') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: recvcount
      integer(c_int), value :: datatype, op
      integer(c_int) :: rc
    end function

    function c_ireduce_scatter(sendbuf, recvbuf, recvcount, datatype, op, comm, stream, request) &
        bind(C, name='chorus_ireduce_scatter') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: recvcount
      integer(c_int), value :: datatype, op
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_reduce_scatterv(sendbuf, recvbuf, recvcounts, datatype, op, comm, stream) &
        bind(C, name='chorus_reduce_scatterv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), intent(in) :: recvcounts(*)
      integer(c_int), value :: datatype, op
      integer(c_int) :: rc
    end function

    function c_ireduce_scatterv(sendbuf, recvbuf, recvcounts, datatype, op, comm, stream, request) &
        bind(C, name='chorus_ireduce_scatterv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), intent(in) :: recvcounts(*)
      integer(c_int), value :: datatype, op
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_allgather(sendbuf, recvbuf, sendcount, datatype, comm, stream) &
        bind(C, name='chorus_allgather') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: sendcount
      integer(c_int), value :: datatype
      integer(c_int) :: rc
    end function

    function c_iallgather(sendbuf, recvbuf, sendcount, datatype, comm, stream, request) &
        bind(C, name='chorus_iallgather') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: sendcount
      integer(c_int), value :: datatype
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    ! Data movement.
    function c_allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, comm, stream) &
        bind(C, name='chorus_allgatherv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: sendcount
      integer(c_size_t), intent(in) :: recvcounts(*), displs(*)
      integer(c_int), value :: datatype
      integer(c_int) :: rc
    end function

    function c_iallgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, comm, stream, request) &
        bind(C, name='chorus_iallgatherv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: sendcount
      integer(c_size_t), intent(in) :: recvcounts(*), displs(*)
      integer(c_int), value :: datatype
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_alltoall(sendbuf, recvbuf, count, datatype, comm, stream) &
        bind(C, name='chorus_alltoall') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype
      integer(c_int) :: rc
    end function

    function c_ialltoall(sendbuf, recvbuf, count, datatype, comm, stream, request) &
        bind(C, name='chorus_ialltoall') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype, comm, stream) &
        bind(C, name='chorus_alltoallv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), intent(in) :: sendcounts(*), sdispls(*), recvcounts(*), rdispls(*)
      integer(c_int), value :: datatype
      integer(c_int) :: rc
    end function

    function c_ialltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype, comm, stream, &
        request) bind(C, name='chorus_ialltoallv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), intent(in) :: sendcounts(*), sdispls(*), recvcounts(*), rdispls(*)
      integer(c_int), value :: datatype
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_gather(sendbuf, recvbuf, count, datatype, root, comm, stream) &
        bind(C, name='chorus_gather') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, root
      integer(c_int) :: rc
    end function

    function c_igather(sendbuf, recvbuf, count, datatype, root, comm, stream, request) &
        bind(C, name='chorus_igather') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, root
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_gatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, root, comm, stream) &
        bind(C, name='chorus_gatherv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: sendcount
      integer(c_size_t), intent(in) :: recvcounts(*), displs(*)
      integer(c_int), value :: datatype, root
      integer(c_int) :: rc
    end function

    function c_igatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, root, comm, stream, request) &
        bind(C, name='chorus_igatherv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: sendcount
      integer(c_size_t), intent(in) :: recvcounts(*), displs(*)
      integer(c_int), value :: datatype, root
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_scatter(sendbuf, recvbuf, count, datatype, root, comm, stream) &
        bind(C, name='chorus_scatter') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, root
      integer(c_int) :: rc
    end function

    function c_iscatter(sendbuf, recvbuf, count, datatype, root, comm, stream, request) &
        bind(C, name='chorus_iscatter') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), value :: count
      integer(c_int), value :: datatype, root
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_scatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, datatype, root, comm, stream) &
        bind(C, name='chorus_scatterv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), intent(in) :: sendcounts(*), displs(*)
      integer(c_size_t), value :: recvcount
      integer(c_int), value :: datatype, root
      integer(c_int) :: rc
    end function

    function c_iscatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, datatype, root, comm, stream, request) &
        bind(C, name='chorus_iscatterv') result(rc)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm, stream
      integer(c_size_t), intent(in) :: sendcounts(*), displs(*)
      integer(c_size_t), value :: recvcount
      integer(c_int), value :: datatype, root
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function

    function c_barrier(comm, stream) bind(C, name='chorus_barrier') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm, stream
      integer(c_int) :: rc
    end function

    function c_ibarrier(comm, stream, request) bind(C, name='chorus_ibarrier') result(rc)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm, stream
      type(c_ptr) :: request
      integer(c_int) :: rc
    end function
  end interface

end module chorus_c
