"""The package around the collectives: communicators, requests, kinds of
arrays, settings."""

from __future__ import annotations

import gc
import importlib.util
import itertools
import pathlib
import shutil
import tempfile
import threading
import time

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


def file_allgather(directory: pathlib.Path, rank: int, size: int):
    """An all-gather through files in a directory every rank sees: no MPI."""
    calls = itertools.count()

    def allgather(data: bytes) -> list[bytes]:
        k = next(calls)
        tmp = directory / f"{k}.{rank}.tmp"
        tmp.write_bytes(data)
        tmp.rename(directory / f"{k}.{rank}")
        deadline = time.monotonic() + 60
        parts = []
        for r in range(size):
            path = directory / f"{k}.{r}"
            while not path.exists():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"rank {r} wrote no part {k}")
                time.sleep(0.001)
            parts.append(path.read_bytes())
        return parts

    return allgather


def shared_directory(comm) -> pathlib.Path:
    """A new directory, made by rank 0, named to every rank (through comm)."""
    name = np.zeros(256, dtype=np.uint8)
    if comm.rank == 0:
        made = tempfile.mkdtemp(prefix="chorus-oob-").encode()
        name[: len(made)] = np.frombuffer(made, dtype=np.uint8)
    comm.broadcast(name)
    return pathlib.Path(bytes(name).rstrip(b"\0").decode())


def test_from_oob(comm):
    directory = shared_directory(comm)
    try:
        with chorus.Communicator.from_oob(comm.rank, comm.size, file_allgather(directory, comm.rank, comm.size)) as c:
            assert (c.rank, c.size) == (comm.rank, comm.size)
            x = np.arange(5, dtype=np.int64) * (comm.rank + 1)
            c.allreduce(x)
            assert x.tolist() == [i * comm.size * (comm.size + 1) // 2 for i in range(5)]
            everyone = np.empty(comm.size, dtype=np.int32)
            c.allgather(np.array([comm.rank * 7], dtype=np.int32), everyone)
            assert everyone.tolist() == [r * 7 for r in range(comm.size)]
    finally:
        comm.barrier()
        if comm.rank == 0:
            shutil.rmtree(directory)
    # One rank alone: its own bytes are everyone's (one joined bytes object).
    with chorus.Communicator.from_oob(0, 1, lambda data: data) as alone:
        y = np.array([3.5], dtype=np.float64)
        alone.allreduce(y)
        assert y[0] == 3.5


@pytest.mark.skipif(not HAVE_MPI4PY, reason="mpi4py is not installed")
def test_from_oob_over_mpi4py(comm):
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    for exchange in (world.allgather, lambda data: b"".join(world.allgather(data))):
        with chorus.Communicator.from_oob(world.Get_rank(), world.Get_size(), exchange) as c:
            x = np.array([comm.rank + 1], dtype=np.int32)
            c.allreduce(x, op="prod")
            assert x[0] == np.prod(np.arange(1, comm.size + 1))


def test_from_oob_errors(comm):
    with pytest.raises(ValueError, match="rank"):
        chorus.Communicator.from_oob(comm.size, comm.size, lambda d: [d] * comm.size)
    with pytest.raises(ValueError, match="size"):
        chorus.Communicator.from_oob(0, 0, lambda d: [])
    with pytest.raises(TypeError, match="callable"):
        chorus.Communicator.from_oob(0, 1, 42)

    # The exchange fails on every rank (nobody waits for a peer): a
    # ChorusError whose cause is the exchange's own exception.
    def down(data: bytes) -> list[bytes]:
        raise ConnectionError("the store is down")

    with pytest.raises(chorus.ChorusError, match="the store is down") as e:
        chorus.Communicator.from_oob(comm.rank, comm.size, down)
    assert e.value.code == chorus.Result.ERR_TRANSPORT
    assert isinstance(e.value.__cause__, ConnectionError)
    for wrong, cause, text in [
        (lambda d: [d] * (comm.size + 1), ValueError, "sequence of"),
        (lambda d: [d + b"x"] * comm.size, ValueError, "holds"),
        (lambda d: [42] * comm.size, TypeError, "bytes-like"),
        (lambda d: None, ValueError, "sequence of"),
    ]:
        with pytest.raises(chorus.ChorusError, match=text) as e:
            chorus.Communicator.from_oob(comm.rank, comm.size, wrong)
        assert isinstance(e.value.__cause__, cause), e.value.__cause__


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


def test_threads_on_their_own_communicators(comm):
    """Blocking calls release the GIL: each thread's collective waits for
    its peers' thread without holding up this process's other thread."""
    comms = [chorus.Communicator() for _ in range(2)]
    results = [None, None]

    def work(k):
        # Even ranks start on communicator 0, odd ones on 1: a thread that
        # kept the GIL while waiting would deadlock the two.
        if k != comm.rank % 2:
            time.sleep(0.05)
        x = np.zeros(1, dtype=np.int64)
        for i in range(200):
            x[0] = comm.rank + i
            comms[k].allreduce(x)
        results[k] = int(x[0])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for c in comms:
        c.close()
    assert results == [sum(range(comm.size)) + 199 * comm.size] * 2


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
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int8", "int64", "bool"])
def test_torch_cpu_tensors(comm, dtype):
    import torch

    n = comm.size
    t = torch.full((4, 3), comm.rank + 1, dtype=getattr(torch, dtype))
    if dtype == "bool":
        t = torch.full((4, 3), comm.rank == 0)
        assert torch.all(comm.allreduce(t, torch.empty_like(t), "lor")) and not torch.any(comm.allreduce(t, op="land"))
        return
    out = torch.empty_like(t)
    assert comm.allreduce(t, out) is out
    assert torch.all(out == n * (n + 1) // 2)
    req = comm.iallreduce(t, op="max")  # in place, nonblocking
    assert req.wait() is t and torch.all(t == n)
    every = comm.allgather(torch.full((2,), comm.rank, dtype=t.dtype), torch.empty(2 * n, dtype=t.dtype))
    assert every.tolist() == [r for r in range(n) for _ in range(2)]
    with pytest.raises(ValueError, match="not C-contiguous"):
        comm.allreduce(out.T)


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


def test_mapped_arrays_and_windows(comm):
    """Arrays in mapped memory: collectives on them (registered or not, some
    ranks plain), windows registered and deregistered, errors alike on
    every rank."""
    n = 1 << 18  # 1 MiB of float32: past CHORUS_MAPPED_MIN
    x = chorus.mapped_empty(n, np.float32)
    y = chorus.mapped_empty((2, n // 2), "float32")
    assert x.shape == (n,) and y.shape == (2, n // 2) and x.dtype == y.dtype == np.float32
    assert chorus.mapped_empty(0).size == 0
    rng = np.random.default_rng(comm.rank + 1)
    parts = np.empty(comm.size * n, dtype=np.float32)  # every rank's input, for the reference
    comm.allgather(rng.random(n, dtype=np.float32), parts)
    want = np.zeros(n, dtype=np.float32)
    for r in range(comm.size):
        want = want + parts.reshape(comm.size, n)[r]  # rank order: a fixed order of rounding
    for registered in (False, True):
        if registered:
            comm.register(x)
            comm.register(y)
        x[:] = parts.reshape(comm.size, n)[comm.rank]
        comm.allreduce(x, y.reshape(n))
        got = np.empty((comm.size, n), dtype=np.float32)
        comm.allgather(y.reshape(n), got)
        # Every rank has the same bits, and the reference's values.
        assert all(np.array_equal(got[0], got[r]) for r in range(comm.size))
        np.testing.assert_allclose(got[0], want, rtol=1e-5)
    # A plain array on rank 0: the same result.
    src = np.array(x) if comm.rank == 0 else x
    comm.allreduce(src, y.reshape(n))
    np.testing.assert_allclose(y.reshape(n), want, rtol=1e-5)
    comm.deregister(x)
    comm.deregister(y)
    with pytest.raises(chorus.ChorusError) as e:
        comm.register(np.zeros(16, dtype=np.float32))  # not mapped memory
    assert e.value.code == chorus.Result.ERR_INVALID_ARGUMENT
    with pytest.raises(chorus.ChorusError):
        comm.deregister(x)  # no window there any more
