"""Every collective of the backend against references computed from per-rank seeds, every rank's result the same."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.distributed as dist
from helpers import FLOATS, INTS, assert_matches, data, same_on_every_rank

R = dist.ReduceOp
N = 1000  # elements: not a multiple of the ranks, so chunks are uneven

CASES = (
    [(dt, op) for dt in FLOATS for op in ("SUM", "PRODUCT", "MIN", "MAX", "AVG", "PREMUL_SUM")]
    + [(dt, op) for dt in INTS for op in ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")]
    + [(torch.bool, op) for op in ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")]
    + [(torch.complex64, "SUM"), (torch.complex64, "AVG"), (torch.complex128, "PREMUL_SUM")]
)
FACTOR = 0.37


def torch_op(name: str) -> dist.ReduceOp:
    if name == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(FACTOR)
    return getattr(R, name)


def inputs_of(dtype: torch.dtype, op: str, size: int, n: int = N, salt: int = 0) -> list[torch.Tensor]:
    low, high = (0.5, 1.5) if op == "PRODUCT" and dtype.is_floating_point else (-2.0, 2.0)
    return [data(r, n, dtype, salt, low, high) for r in range(size)]


def reference(inputs: list[torch.Tensor], op: str) -> torch.Tensor:
    dtype = inputs[0].dtype
    if dtype == torch.bool:
        if op in ("SUM", "MAX", "BOR"):
            return functools.reduce(torch.logical_or, inputs)
        if op in ("PRODUCT", "MIN", "BAND"):
            return functools.reduce(torch.logical_and, inputs)
        return functools.reduce(torch.logical_xor, inputs)
    if op in ("BAND", "BOR", "BXOR"):
        fn = {"BAND": torch.bitwise_and, "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor}[op]
        return functools.reduce(fn, inputs)
    if op == "MIN":
        return functools.reduce(torch.minimum, inputs)
    if op == "MAX":
        return functools.reduce(torch.maximum, inputs)
    wide = torch.complex128 if dtype.is_complex else torch.float64 if dtype.is_floating_point else torch.int64
    if op == "PREMUL_SUM":
        inputs = [x * FACTOR for x in inputs]  # in the dtype, as the backend multiplies
    stacked = torch.stack([x.to(wide) for x in inputs])
    if op == "PRODUCT":
        return stacked.prod(0).to(dtype)
    total = stacked.sum(0)
    if op == "AVG":
        total = total / len(inputs)
    return total.to(dtype)


@pytest.mark.parametrize("dtype,op", CASES, ids=[f"{d}-{o}".replace("torch.", "") for d, o in CASES])
def test_all_reduce(dtype, op, rank, size, gloo):
    inputs = inputs_of(dtype, op, size)
    t = inputs[rank].clone()
    dist.all_reduce(t, op=torch_op(op))
    assert_matches(t, reference(inputs, op))
    same_on_every_rank(t, gloo)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_reduce(dtype, rank, size, gloo):
    inputs = inputs_of(dtype, "SUM", size)
    t = inputs[rank].clone()
    root = size - 1
    dist.reduce(t, dst=root, op=R.SUM)
    if rank == root:
        assert_matches(t, reference(inputs, "SUM"))
    else:
        assert torch.equal(t, inputs[rank]), "reduce changed a non-root's input"


@pytest.mark.parametrize("op", ["SUM", "AVG", "PREMUL_SUM", "MAX"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_reduce_scatter_tensor(dtype, op, rank, size, gloo):
    block = 333
    inputs = inputs_of(dtype, op, size, n=block * size, salt=1)
    out = torch.empty(block, dtype=dtype)
    dist.reduce_scatter_tensor(out, inputs[rank], op=torch_op(op))
    assert_matches(out, reference(inputs, op)[rank * block:(rank + 1) * block])
    assert torch.equal(inputs[rank], inputs_of(dtype, op, size, n=block * size, salt=1)[rank]), "input changed"


def test_reduce_scatter_list(rank, size, gloo):
    lengths = [5 + 3 * r for r in range(size)]
    inputs = [[data(src, n, torch.float32, salt=2 + dst) for dst, n in enumerate(lengths)] for src in range(size)]
    out = torch.empty(lengths[rank])
    dist.reduce_scatter(out, [t.clone() for t in inputs[rank]], op=R.SUM)
    assert_matches(out, reference([inputs[src][rank] for src in range(size)], "SUM"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8, torch.bool, torch.complex64])
def test_all_gather_into_tensor(dtype, rank, size, gloo):
    inputs = inputs_of(dtype, "SUM", size, n=77, salt=3)
    out = torch.empty(77 * size, dtype=dtype)
    dist.all_gather_into_tensor(out, inputs[rank])
    assert torch.equal(out, torch.cat(inputs))


def test_all_gather_list_uneven_views(rank, size):
    # Outputs that are views of one buffer, and a non-contiguous source made contiguous by the caller.
    inputs = [data(r, (4, 6), torch.float64, salt=4) for r in range(size)]
    outs = [torch.empty(4, 6, dtype=torch.float64) for _ in range(size)]
    dist.all_gather(outs, inputs[rank])
    for r in range(size):
        assert torch.equal(outs[r], inputs[r])


@pytest.mark.parametrize("dtype", [torch.float32, torch.uint8])
def test_broadcast(dtype, rank, size):
    root = 1 % size
    inputs = inputs_of(dtype, "SUM", size, salt=5)
    t = inputs[rank].clone()
    dist.broadcast(t, src=root)
    assert torch.equal(t, inputs[root])


def test_gather_scatter(rank, size):
    root = size - 1
    inputs = [data(r, 9, torch.int32, salt=6) for r in range(size)]
    outs = [torch.empty(9, dtype=torch.int32) for _ in range(size)] if rank == root else None
    dist.gather(inputs[rank], outs, dst=root)
    if rank == root:
        for r in range(size):
            assert torch.equal(outs[r], inputs[r])
    pieces = [data(100 + r, 11, torch.float32, salt=6) for r in range(size)]
    out = torch.empty(11)
    dist.scatter(out, pieces if rank == 0 else None, src=0)
    assert torch.equal(out, pieces[rank])


def test_all_to_all_single_even(rank, size):
    block = 10
    inputs = [data(r, block * size, torch.float32, salt=7) for r in range(size)]
    out = torch.empty(block * size)
    dist.all_to_all_single(out, inputs[rank])
    want = torch.cat([inputs[src][rank * block:(rank + 1) * block] for src in range(size)])
    assert torch.equal(out, want)


def test_all_to_all_single_uneven(rank, size):
    # The mixture-of-experts exchange: rank s sends rows to rank d by a count that differs per pair (some zero),
    # rows of a 2-D tensor.
    def rows(src: int, dst: int) -> int:
        return (3 * src + 5 * dst + 1) % 4

    width = 6
    inputs = [data(s, (sum(rows(s, d) for d in range(size)), width), torch.bfloat16, salt=8) for s in range(size)]
    in_splits = [rows(rank, d) for d in range(size)]
    out_splits = [rows(s, rank) for s in range(size)]
    out = torch.empty(sum(out_splits), width, dtype=torch.bfloat16)
    dist.all_to_all_single(out, inputs[rank], out_splits, in_splits)
    want = []
    for s in range(size):
        start = sum(rows(s, d) for d in range(rank))
        want.append(inputs[s][start:start + rows(s, rank)])
    assert torch.equal(out, torch.cat(want))


def test_alltoall_list(rank, size):
    inputs = [[data(s, d + 2, torch.int64, salt=9) for d in range(size)] for s in range(size)]
    outs = [torch.empty(rank + 2, dtype=torch.int64) for _ in range(size)]
    dist.all_to_all(outs, inputs[rank])
    for s in range(size):
        assert torch.equal(outs[s], inputs[s][rank])


def test_coalesced(rank, size, gloo):
    # DDP-style buckets and FSDP-style groups, coalesced into one Work.
    a = [data(rank, n, torch.float32, salt=10 + n) for n in (3, 1000, 17)]
    want = [reference([data(r, n, torch.float32, salt=10 + n) for r in range(size)], "SUM") for n in (3, 1000, 17)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for t in a:
            dist.all_reduce(t)
    cm.wait()
    for got, w in zip(a, want):
        assert_matches(got, w)
    ins = [data(rank, n, torch.float32, salt=20 + n) for n in (4, 8)]
    outs = [torch.empty(n * size) for n in (4, 8)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for o, i in zip(outs, ins):
            dist.all_gather_into_tensor(o, i)
    cm.wait()
    for o, n in zip(outs, (4, 8)):
        assert torch.equal(o, torch.cat([data(r, n, torch.float32, salt=20 + n) for r in range(size)]))


def test_async_future_and_barrier(rank, size, gloo):
    inputs = inputs_of(torch.float32, "SUM", size, salt=11)
    t = inputs[rank].clone()
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future().then(lambda f: f.value()[0] * 2)
    doubled = fut.wait()
    assert work.is_completed() and work.is_success()
    assert_matches(t, reference(inputs, "SUM"))
    assert torch.equal(doubled, t * 2)
    dist.barrier()
    # Many in flight at once, completed out of order.
    ts = [inputs[rank].clone() * (k + 1) for k in range(8)]
    works = [dist.all_reduce(x, async_op=True) for x in ts]
    for w in reversed(works):
        assert w.wait()
    for k, x in enumerate(ts):
        assert_matches(x, reference([i * (k + 1) for i in inputs], "SUM"))


def test_subgroups(rank, size, gloo):
    # new_group over every other rank (the backend maps group ranks itself), and split_group.
    evens = list(range(0, size, 2))
    g = dist.new_group(evens, backend="chorus")
    if rank in evens:
        t = torch.tensor([float(rank + 1)])
        dist.all_reduce(t, group=g)
        assert t.item() == sum(r + 1 for r in evens)
        b = torch.tensor([float(rank)])
        dist.broadcast(b, src=evens[-1], group=g)  # a global rank
        assert b.item() == evens[-1]
    halves = [list(range(0, (size + 1) // 2)), list(range((size + 1) // 2, size))]
    halves = [h for h in halves if h]
    sg = dist.split_group(split_ranks=halves)
    mine = next(h for h in halves if rank in h)
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t, group=sg)
    assert t.item() == sum(r + 1 for r in mine)
    dist.destroy_process_group(sg)
    dist.destroy_process_group(g) if rank in evens else None


def test_python_communicator_over_the_store(rank, size):
    # chorus.Communicator.from_oob over torch's Store, as python/README.md shows it.
    import itertools

    import numpy as np

    import chorus

    store = dist.PrefixStore("python-oob", dist.distributed_c10d._get_default_store())
    calls = itertools.count()

    def allgather(data: bytes) -> list[bytes]:
        k = next(calls)
        store.set(f"chorus/{k}/{rank}", data)
        return [store.get(f"chorus/{k}/{r}") for r in range(size)]

    with chorus.Communicator.from_oob(rank, size, allgather) as comm:
        assert (comm.rank, comm.size) == (rank, size)
        x = np.array([rank + 1.0])
        comm.allreduce(x)
        assert x[0] == size * (size + 1) / 2
