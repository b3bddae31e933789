"""Arguments Chorus cannot take: a clear TypeError or ValueError on the rank
that passed them (every rank passes the same here, so none is left
waiting), ChorusError for what only the library checks, and the
communicator stays usable."""

from __future__ import annotations

import numpy as np
import pytest

import chorus
from helpers import DLPackView

F32 = np.float32


def zeros(n, dtype=F32):
    return np.zeros(n, dtype=dtype)


def test_not_arrays(comm):
    with pytest.raises(TypeError, match="DLPack or the buffer protocol, not list"):
        comm.allreduce([1.0, 2.0])
    with pytest.raises(TypeError, match="recvbuf must be an array"):
        comm.allgather(zeros(1), "text")
    with pytest.raises(TypeError, match="recvbuf"):
        comm.reduce_scatter(zeros(comm.size), None)


def test_non_contiguous(comm):
    with pytest.raises(ValueError, match="not C-contiguous"):
        comm.allreduce(zeros(8)[::2])
    with pytest.raises(ValueError, match="sendbuf is not C-contiguous"):
        comm.allgather(np.zeros((2, 2), dtype=F32).T, zeros(4 * comm.size))


def test_read_only_outputs(comm):
    ro = zeros(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        comm.allreduce(ro)
    with pytest.raises(ValueError, match="recvbuf is read-only"):
        comm.allreduce(zeros(4), ro)
    with pytest.raises(ValueError, match="recvbuf is read-only"):
        comm.allgather(zeros(1), np.broadcast_to(F32(0), (comm.size,)))
    comm.allreduce(ro, zeros(4))  # a read-only input is fine


def test_wrong_sizes(comm):
    n = comm.size
    with pytest.raises(ValueError, match="sendbuf has 4 elements but recvbuf 3"):
        comm.allreduce(zeros(4), zeros(3))
    with pytest.raises(ValueError, match="not a multiple"):
        comm.alltoall(zeros(n + 1))
    with pytest.raises(ValueError, match="not a multiple"):
        comm.reduce_scatter(chorus.IN_PLACE, zeros(n + 1))
    with pytest.raises(ValueError, match="reduce_scatter: sendbuf has"):
        comm.reduce_scatter(zeros(2 * n + 1), zeros(2))
    with pytest.raises(ValueError, match="allgather: sendbuf has 2 elements"):
        comm.allgather(zeros(2), zeros(n))
    with pytest.raises(ValueError, match="broadcast: sendbuf has"):
        comm.broadcast(zeros(3), zeros(2), root=comm.rank)  # each rank its own root: checked before sending
    with pytest.raises(ValueError, match="gather: recvbuf is required on the root"):
        comm.gather(zeros(1), None, root=comm.rank)
    with pytest.raises(ValueError, match="scatter: recvbuf has"):
        comm.scatter(zeros(2 * n), zeros(3), root=comm.rank)


def test_bad_counts(comm):
    n = comm.size
    with pytest.raises(ValueError, match=f"recvcounts has {n + 1} entries; there are {n} ranks"):
        comm.reduce_scatterv(zeros(n + 1), zeros(1), [1] * (n + 1))
    with pytest.raises(ValueError, match=r"recvcounts\[0\] must be a non-negative count"):
        comm.allgatherv(zeros(1), zeros(n), [-1] + [1] * (n - 1))
    with pytest.raises(TypeError, match=r"recvcounts\[0\] is not an integer"):
        comm.allgatherv(zeros(1), zeros(n), [1.5] + [1] * (n - 1))
    with pytest.raises(TypeError, match="sequence of integers"):
        comm.allgatherv(zeros(1), zeros(n), 3)
    with pytest.raises(ValueError, match="allgatherv: recvbuf has 1 element; its blocks reach"):
        comm.allgatherv(zeros(1), zeros(1), [1] * n)
    with pytest.raises(ValueError, match=r"allgatherv: sendbuf has 2 elements but recvcounts\["):
        comm.allgatherv(zeros(2), zeros(n), [1] * n)
    with pytest.raises(ValueError, match="alltoallv: sendbuf has"):
        comm.alltoallv(zeros(1), zeros(n), [1] * n, [1] * n)
    with pytest.raises(TypeError, match="sendcounts is required"):
        comm.alltoallv(zeros(n), zeros(n), None, [1] * n)
    with pytest.raises(TypeError, match="recvcounts is required"):
        comm.gatherv(zeros(1), zeros(n), root=comm.rank)


def test_dtypes_and_ops(comm):
    with pytest.raises(TypeError, match="same element type: float32 and float64"):
        comm.allreduce(zeros(2), zeros(2, np.float64))
    with pytest.raises(TypeError, match="does not reduce complex64"):
        comm.allreduce(zeros(2, np.complex64))
    with pytest.raises(TypeError, match="integer"):
        comm.allreduce(zeros(2, np.float16), op=chorus.Op.BXOR)
    with pytest.raises(TypeError, match="byte order is not native"):
        comm.allreduce(zeros(2, ">f4"))
    with pytest.raises(TypeError, match="bool arrays"):
        comm.allreduce(zeros(2, bool), op="sum")
    with pytest.raises(ValueError, match="unknown op 'maximum'"):
        comm.allreduce(zeros(2), op="maximum")
    with pytest.raises(TypeError, match="op must be a chorus.Op"):
        comm.allreduce(zeros(2), op=3)


def test_roots_and_in_place(comm):
    for root in (-1, comm.size):
        with pytest.raises(ValueError, match=f"root {root} is out of range"):
            comm.broadcast(zeros(1), root=root)
    with pytest.raises(ValueError, match="IN_PLACE needs recvbuf"):
        comm.allreduce(chorus.IN_PLACE)
    # The root: recvbuf missing; elsewhere: IN_PLACE where only the root may.
    with pytest.raises(ValueError, match="gather: (recvbuf is required|IN_PLACE is for the root)"):
        comm.gather(chorus.IN_PLACE, None, root=0)
    with pytest.raises(TypeError, match="must be an array"):
        comm.allgather(zeros(1), chorus.IN_PLACE)


def test_devices_and_streams(comm):
    if not chorus.has_cuda():
        with pytest.raises(TypeError, match="built without CUDA"):
            comm.allreduce(DLPackView(zeros(4), code=2, bits=32, device_type=2))
    with pytest.raises(TypeError, match="DLPack device type 4"):
        comm.allreduce(DLPackView(zeros(4), code=2, bits=32, device_type=4))
    with pytest.raises(TypeError, match="stream must be None or a CUDA stream"):
        comm.allreduce(zeros(4), stream=5)


def test_library_errors_leave_the_communicator_usable(comm):
    # Overlapping buffers that are not the in-place form: only the library
    # sees it (the views are two arrays), on every rank, and nothing is sent.
    base = zeros(12)
    with pytest.raises(chorus.ChorusError, match="overlap") as e:
        comm.allreduce(base[0:8], base[4:12])
    assert e.value.code == chorus.Result.ERR_INVALID_ARGUMENT
    assert "allreduce" in e.value.message and e.value.description
    own = (comm.rank + 1) % comm.size  # inside recvbuf, but not this rank's block
    with pytest.raises(chorus.ChorusError, match="overlap"):
        comm.iallgather(base[own : own + 1], base[0 : comm.size])
    x = np.ones(3, dtype=np.int32)
    comm.allreduce(x)
    assert np.all(x == comm.size)
