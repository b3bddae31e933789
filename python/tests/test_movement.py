"""The data-movement collectives (broadcast, allgather(v), alltoall(v),
gather(v), scatter(v)) and the barrier on every dtype, in place and out of
place, blocking and nonblocking. The v forms run with the blocks one after
another (blocking) and reversed with gaps (nonblocking): gaps must keep
their bytes."""

from __future__ import annotations

import numpy as np
import pytest

import chorus
from helpers import DTYPES, Buf, assert_identical, complete, empty, rank_inputs, wrap

MODES = ["blocking", "nonblocking"]


def collective(comm, name, mode):
    return getattr(comm, ("i" if mode == "nonblocking" else "") + name)


def v_counts(size: int) -> list[int]:
    return [(7 * i + 3) % 5 for i in range(size)]  # rank 1's block is empty


def v_displs(counts: list[int], mode: str):
    """None (the default layout) or the blocks in reverse order, two
    elements apart."""
    if mode == "blocking":
        return None
    displs, at = [0] * len(counts), 1
    for i in reversed(range(len(counts))):
        displs[i] = at
        at += counts[i] + 2
    return displs


def layout(counts, displs):
    if displs is None:
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
    return displs, max([d + c for d, c in zip(displs, counts)] + [0])


def placed(dtype: str, extent: int, blocks: dict[int, np.ndarray], displs) -> Buf:
    """A fill-patterned buffer of `extent` elements with blocks at displs."""
    out = empty(dtype, extent)
    for i, data in blocks.items():
        out.np[displs[i] : displs[i] + len(data)] = data
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "omitted"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast(comm, dtype, place, mode):
    n, root = 29, comm.size - 1
    data = rank_inputs(dtype, n, comm.size, ("broadcast", dtype, place, mode))[root]
    fn = collective(comm, "broadcast", mode)
    if place == "out":
        result = empty(dtype, n)
        ret = complete(fn(data.arg if comm.rank == root else None, result.arg, root))
    else:
        result = wrap(dtype, data.np.copy()) if comm.rank == root else empty(dtype, n)
        ret = complete(fn(result.arg, root=root))
    assert ret is result.arg
    np.testing.assert_array_equal(result.np, data.np)
    assert_identical(comm, result.np)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather(comm, dtype, place, mode):
    count = 5
    inputs = rank_inputs(dtype, count, comm.size, ("allgather", dtype, place, mode))
    fn = collective(comm, "allgather", mode)
    if place == "out":
        result = empty(dtype, count * comm.size)
        complete(fn(inputs[comm.rank].arg, result.arg))
    else:
        result = empty(dtype, count * comm.size)
        result.np[comm.rank * count : (comm.rank + 1) * count] = inputs[comm.rank].np
        complete(fn(chorus.IN_PLACE, result.arg))
    np.testing.assert_array_equal(result.np, np.concatenate([b.np for b in inputs]))
    assert_identical(comm, result.np)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_allgatherv(comm, dtype, place, mode):
    counts = v_counts(comm.size)
    displs, extent = layout(counts, v_displs(counts, mode))
    inputs = [rank_inputs(dtype, c, comm.size, ("allgatherv", dtype, place, mode))[i] for i, c in enumerate(counts)]
    expected = placed(dtype, extent, {i: b.np for i, b in enumerate(inputs)}, displs)
    fn = collective(comm, "allgatherv", mode)
    given = v_displs(counts, mode)
    if place == "out":
        result = empty(dtype, extent)
        complete(fn(inputs[comm.rank].arg, result.arg, counts, given))
    else:
        result = placed(dtype, extent, {comm.rank: inputs[comm.rank].np}, displs)
        complete(fn(chorus.IN_PLACE, result.arg, counts, displs=given))
    np.testing.assert_array_equal(result.np, expected.np)
    assert_identical(comm, result.np)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "omitted"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_alltoall(comm, dtype, place, mode):
    count = 3
    inputs = rank_inputs(dtype, count * comm.size, comm.size, ("alltoall", dtype, place, mode))
    fn = collective(comm, "alltoall", mode)
    if place == "out":
        result = empty(dtype, count * comm.size)
        ret = complete(fn(inputs[comm.rank].arg, result.arg))
    else:
        result = wrap(dtype, inputs[comm.rank].np.copy())
        ret = complete(fn(result.arg))
    assert ret is result.arg
    r = comm.rank
    expected = np.concatenate([b.np[r * count : (r + 1) * count] for b in inputs])
    np.testing.assert_array_equal(result.np, expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_alltoallv(comm, dtype, place, mode):
    # counts[i][j]: what rank i sends rank j; symmetric, as the in-place
    # form requires, with empty blocks where i + j is a multiple of 3.
    size, r = comm.size, comm.rank
    c = [[(i + j) % 3 for j in range(size)] for i in range(size)]
    inputs = [rank_inputs(dtype, sum(c[i]), size, ("alltoallv", dtype, place, mode))[i] for i in range(size)]
    send_displs = [layout(c[i], None)[0] for i in range(size)]  # every rank's send blocks, default layout
    recvcounts = [c[i][r] for i in range(size)]
    given = v_displs(recvcounts, mode)
    rdispls, extent = layout(recvcounts, given)

    def send_block(i, j):  # rank i's block for rank j
        return inputs[i].np[send_displs[i][j] : send_displs[i][j] + c[i][j]]

    expected = placed(dtype, extent, {i: send_block(i, r) for i in range(size)}, rdispls)
    fn = collective(comm, "alltoallv", mode)
    if place == "out":
        result = empty(dtype, extent)
        complete(fn(inputs[r].arg, result.arg, c[r], recvcounts, None, given))
    else:
        result = placed(dtype, extent, {j: send_block(r, j) for j in range(size)}, rdispls)
        complete(fn(chorus.IN_PLACE, result.arg, None, recvcounts, rdispls=given))
    np.testing.assert_array_equal(result.np, expected.np)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather(comm, dtype, place, mode):
    count, root = 4, comm.size - 1
    inputs = rank_inputs(dtype, count, comm.size, ("gather", dtype, place, mode))
    fn = collective(comm, "gather", mode)
    if comm.rank != root:
        assert complete(fn(inputs[comm.rank].arg, root=root)) is None
        return
    result = empty(dtype, count * comm.size)
    if place == "out":
        complete(fn(inputs[root].arg, result.arg, root))
    else:
        result.np[root * count :] = inputs[root].np
        complete(fn(chorus.IN_PLACE, result.arg, root))
    np.testing.assert_array_equal(result.np, np.concatenate([b.np for b in inputs]))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gatherv(comm, dtype, place, mode):
    root = comm.size - 1
    counts = v_counts(comm.size)
    given = v_displs(counts, mode)
    displs, extent = layout(counts, given)
    inputs = [rank_inputs(dtype, n, comm.size, ("gatherv", dtype, place, mode))[i] for i, n in enumerate(counts)]
    fn = collective(comm, "gatherv", mode)
    if comm.rank != root:
        assert complete(fn(inputs[comm.rank].arg, root=root)) is None
        return
    expected = placed(dtype, extent, {i: b.np for i, b in enumerate(inputs)}, displs)
    if place == "out":
        result = empty(dtype, extent)
        complete(fn(inputs[root].arg, result.arg, counts, given, root))
    else:
        result = placed(dtype, extent, {root: inputs[root].np}, displs)
        complete(fn(chorus.IN_PLACE, result.arg, recvcounts=counts, displs=given, root=root))
    np.testing.assert_array_equal(result.np, expected.np)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter(comm, dtype, place, mode):
    count, root = 4, comm.size - 1
    data = rank_inputs(dtype, count * comm.size, comm.size, ("scatter", dtype, place, mode))[root]
    fn = collective(comm, "scatter", mode)
    r = comm.rank
    if r == root and place == "IN_PLACE":
        before = data.np.copy()
        assert complete(fn(data.arg, chorus.IN_PLACE, root)) is data.arg
        np.testing.assert_array_equal(data.np, before)
        return
    result = empty(dtype, count)
    assert complete(fn(data.arg if r == root else None, result.arg, root)) is result.arg
    np.testing.assert_array_equal(result.np, data.np[r * count : (r + 1) * count])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("place", ["out", "IN_PLACE"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_scatterv(comm, dtype, place, mode):
    root, r = comm.size - 1, comm.rank
    counts = v_counts(comm.size)
    given = v_displs(counts, mode)
    displs, extent = layout(counts, given)
    data = rank_inputs(dtype, extent, comm.size, ("scatterv", dtype, place, mode))[root]
    fn = collective(comm, "scatterv", mode)
    if r == root and place == "IN_PLACE":
        before = data.np.copy()
        complete(fn(data.arg, chorus.IN_PLACE, counts, given, root))
        np.testing.assert_array_equal(data.np, before)
        return
    result = empty(dtype, counts[r])
    if r == root:
        complete(fn(data.arg, result.arg, counts, given, root=root))
    else:
        complete(fn(None, result.arg, root=root))
    np.testing.assert_array_equal(result.np, data.np[displs[r] : displs[r] + counts[r]])


@pytest.mark.parametrize("mode", MODES)
def test_barrier(comm, mode):
    assert complete(collective(comm, "barrier", mode)()) is None
