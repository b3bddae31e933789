"""The reductions (allreduce, reduce, reduce_scatter, reduce_scatterv) on
every dtype, in place and out of place, blocking and nonblocking, against
NumPy; results every rank holds are checked bit-identical across ranks."""

from __future__ import annotations

import numpy as np
import pytest

import chorus
from helpers import (
    BITWISE,
    DTYPES,
    FLOATS,
    OPS,
    Buf,
    assert_identical,
    check_reduction,
    complete,
    empty,
    rank_inputs,
    wrap,
)

N = 37  # odd: no block or vector width divides it
MODES = ["blocking", "nonblocking"]


def collective(comm, name, mode):
    return getattr(comm, ("i" if mode == "nonblocking" else "") + name)


def copy(buf: Buf) -> Buf:
    return wrap(buf.dtype, buf.np.copy())


def block(buf: Buf, start: int, count: int) -> Buf:
    return Buf(buf.dtype, buf.np[start : start + count], None)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "omitted", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_allreduce(comm, dtype, place, mode):
    inputs = rank_inputs(dtype, N, comm.size, ("allreduce", dtype, place, mode))
    x = copy(inputs[comm.rank])
    fn = collective(comm, "allreduce", mode)
    if place == "out":
        result = empty(dtype, N)
        ret = complete(fn(x.arg, result.arg))
        np.testing.assert_array_equal(x.np, inputs[comm.rank].np)  # the input is left alone
    elif place == "omitted":
        result = x
        ret = complete(fn(x.arg))
    else:
        result = x
        ret = complete(fn(chorus.IN_PLACE, x.arg))
    assert ret is result.arg
    check_reduction(result, inputs, "sum")
    assert_identical(comm, result.np)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_allreduce_ops(comm, dtype, op):
    inputs = rank_inputs(dtype, N, comm.size, ("ops", dtype, op), op)
    result = empty(dtype, N)
    if op in BITWISE and dtype in FLOATS:
        with pytest.raises(TypeError, match="integer"):
            comm.allreduce(inputs[comm.rank].arg, result.arg, op=op)
        return
    comm.allreduce(inputs[comm.rank].arg, result.arg, op=getattr(chorus.Op, op.upper()))
    check_reduction(result, inputs, op)
    assert_identical(comm, result.np)


def test_allreduce_large(comm):
    """Large enough for the pipelined algorithms."""
    n = 1 << 16
    inputs = rank_inputs("float32", n, comm.size, ("large",))
    result = empty("float32", n)
    comm.allreduce(inputs[comm.rank].arg, result.arg)
    check_reduction(result, inputs, "sum")
    assert_identical(comm, result.np)


@pytest.mark.parametrize("op", ["lor", "land", "lxor", "max", "min", "bxor"])
def test_allreduce_bool(comm, op):
    rng = np.random.default_rng(comm.rank)
    x = rng.integers(0, 2, N).astype(bool)
    every = np.zeros(N * comm.size, dtype=bool)
    comm.allgather(x, every)
    rows = every.reshape(comm.size, N)
    ref = {
        "lor": rows.any(0),
        "max": rows.any(0),
        "land": rows.all(0),
        "min": rows.all(0),
        "lxor": rows.sum(0) % 2 == 1,
        "bxor": rows.sum(0) % 2 == 1,
    }[op]
    np.testing.assert_array_equal(comm.allreduce(x, np.empty(N, bool), op=op), ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "omitted"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce(comm, dtype, place, mode):
    root = comm.size - 1
    inputs = rank_inputs(dtype, N, comm.size, ("reduce", dtype, place, mode))
    x = copy(inputs[comm.rank])
    fn = collective(comm, "reduce", mode)
    if place == "out":
        result = empty(dtype, N) if comm.rank == root else None
        ret = complete(fn(x.arg, result.arg if result else None, "sum", root))
        np.testing.assert_array_equal(x.np, inputs[comm.rank].np)
    else:
        result = x if comm.rank == root else None
        ret = complete(fn(x.arg, root=root))
    if comm.rank == root:
        assert ret is result.arg
        check_reduction(result, inputs, "sum")
    else:
        assert ret is None
        np.testing.assert_array_equal(x.np, inputs[comm.rank].np)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_scatter(comm, dtype, place, mode):
    count = 5
    inputs = rank_inputs(dtype, count * comm.size, comm.size, ("reduce_scatter", dtype, place, mode))
    fn = collective(comm, "reduce_scatter", mode)
    if place == "out":
        result = empty(dtype, count)
        complete(fn(inputs[comm.rank].arg, result.arg))
    else:
        buf = copy(inputs[comm.rank])
        complete(fn(chorus.IN_PLACE, buf.arg, op=chorus.Op.SUM))
        result = block(buf, 0, count)
    start = comm.rank * count
    check_reduction(result, [block(b, start, count) for b in inputs], "sum")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_scatterv(comm, dtype, place, mode):
    counts = [(7 * i + 3) % 5 for i in range(comm.size)]  # rank 1's block is empty
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    inputs = rank_inputs(dtype, sum(counts), comm.size, ("reduce_scatterv", dtype, place, mode))
    fn = collective(comm, "reduce_scatterv", mode)
    mine = counts[comm.rank]
    if place == "out":
        result = empty(dtype, mine)
        complete(fn(inputs[comm.rank].arg, result.arg, counts))
    else:
        buf = copy(inputs[comm.rank])
        complete(fn(chorus.IN_PLACE, buf.arg, np.array(counts)))
        result = block(buf, 0, mine)
    check_reduction(result, [block(b, starts[comm.rank], mine) for b in inputs], "sum")
