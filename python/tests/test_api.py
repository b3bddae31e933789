"""The package around the collectives: communicators, requests, kinds of
arrays, settings."""

from __future__ import annotations

import gc
import importlib.util

import numpy as np
import pytest

import chorus
from helpers import assert_identical

HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None


def test_version_and_cuda():
    assert chorus.__version__.count(".") == 2
    assert isinstance(chorus.has_cuda(), bool)


def test_communicator(comm):
    assert 0 <= comm.rank < comm.size
    assert repr(comm) == f"<chorus.Communicator rank {comm.rank} of {comm.size}>"
    with chorus.Communicator() as c:
        assert (c.rank, c.size) == (comm.rank, comm.size)
        x = np.ones(3, dtype=np.int32)
        c.allreduce(x)
        assert x.tolist() == [comm.size] * 3
    assert c.closed and repr(c) == "<chorus.Communicator (closed)>"
    c.close()  # again: nothing to do
    with pytest.raises(chorus.ChorusError, match="closed") as e:
        c.allreduce(x)
    assert e.value.code == chorus.Result.ERR_INVALID_ARGUMENT
    assert isinstance(e.value, RuntimeError) and "closed" in e.value.message


@pytest.mark.skipif(not HAVE_MPI4PY, reason="mpi4py is not installed")
def test_mpi4py_subcommunicator(comm):
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    assert world.Get_rank() == comm.rank
    half = world.Split(comm.rank % 2, comm.rank)
    with chorus.Communicator(half) as c:
        assert (c.rank, c.size) == (half.Get_rank(), half.Get_size())
        x = np.array([comm.rank], dtype=np.int64)
        c.allreduce(x)
        assert x[0] == sum(r for r in range(comm.size) if r % 2 == comm.rank % 2)
    half.Free()
    with pytest.raises(ValueError, match="COMM_NULL"):
        chorus.Communicator(MPI.COMM_NULL)


def test_not_a_communicator():
    with pytest.raises(TypeError, match="mpi4py"):
        chorus.Communicator(42)


def test_request_keeps_arrays(comm):
    req = comm.iallreduce(np.full(1000, comm.rank + 1.0))  # only the request holds the array
    gc.collect()
    out = req.wait()
    assert np.all(out == comm.size * (comm.size + 1) / 2)
    assert req.done and req.wait() is out  # a completed request answers again


def test_request_test_polls(comm):
    x = np.full(10, comm.rank, dtype=np.int16)
    req = comm.iallreduce(x, op="max")
    while not req.test():
        pass
    assert req.done and req.test() and np.all(x == comm.size - 1)


def test_requests_complete_in_any_order(comm):
    xs = [np.full(5, comm.rank * k, dtype=np.int32) for k in range(6)]
    reqs = [comm.iallreduce(x) for x in xs]
    for k in reversed(range(6)):
        assert reqs[k].wait() is xs[k]
        assert np.all(xs[k] == k * comm.size * (comm.size - 1) // 2)


def test_close_completes_requests(comm):
    c = chorus.Communicator()
    x = np.ones(8, dtype=np.float64)
    kept = c.iallreduce(x)
    dropped = c.ibroadcast(np.arange(4.0) if c.rank == 0 else np.zeros(4))
    del dropped
    c.close()
    assert kept.done and np.all(kept.wait() == comm.size)


def test_shapes_and_kinds(comm):
    a = np.full((3, 4), comm.rank, dtype=np.float32)
    assert comm.allreduce(a).shape == (3, 4) and np.all(a == sum(range(comm.size)))
    empty = np.zeros(0, dtype=np.float64)
    assert comm.allreduce(empty, np.zeros(0)).size == 0
    b = bytearray([comm.rank + 1] * 4)  # the buffer protocol, not DLPack
    comm.allreduce(b)
    assert list(b) == [comm.size * (comm.size + 1) // 2 % 256] * 4
    scalar = np.array(comm.rank + 1, dtype=np.int64)  # zero-dimensional
    comm.allreduce(scalar, op=chorus.Op.PROD)
    assert int(scalar) == np.prod(np.arange(1, comm.size + 1))


def test_complex_moves_as_bytes(comm):
    x = np.array([comm.rank + 1j, -comm.rank - 2j], dtype=np.complex128)
    every = np.zeros(2 * comm.size, dtype=np.complex128)
    comm.allgather(x, every)
    assert every.tolist() == [v for r in range(comm.size) for v in (r + 1j, -r - 2j)]
    assert_identical(comm, every)
    counts = [1] * comm.size
    got = np.zeros(comm.size, dtype=np.complex64)
    comm.alltoallv(np.arange(comm.size, dtype=np.complex64) * (comm.rank + 1j), got, counts, counts)
    assert got.tolist() == [comm.rank * (r + 1j) for r in range(comm.size)]


@pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64"])
def test_torch_cpu_tensors(comm, dtype):
    import torch

    t = torch.full((4, 3), comm.rank + 1, dtype=getattr(torch, dtype))
    out = torch.empty_like(t)
    assert comm.allreduce(t, out) is out
    assert torch.all(out == comm.size * (comm.size + 1) // 2)
    comm.allreduce(t, op="max")  # in place
    assert torch.all(t == comm.size)


def test_ops_by_enum_and_name(comm):
    x = np.array([comm.rank + 1], dtype=np.int32)
    assert comm.allreduce(x, np.zeros(1, np.int32), chorus.Op.MAX)[0] == comm.size
    assert comm.allreduce(x, np.zeros(1, np.int32), "min")[0] == 1
    assert comm.allreduce(x, np.zeros(1, np.int32), op="avg")[0] == (comm.size + 1) // 2


def test_settings_and_label(comm):
    assert isinstance(chorus.setting("CHORUS_TIMEOUT_MS"), str)
    with pytest.raises(chorus.ChorusError) as e:
        chorus.setting("CHORUS_NO_SUCH_THING")
    assert e.value.code == chorus.Result.ERR_INVALID_ARGUMENT
    comm.set_label("python tests")
    comm.barrier()
    comm.set_label(None)
    with pytest.raises(TypeError):
        comm.set_label(3)
