"""Errors: raised as Python exceptions on every rank, never a crash or a hang."""

from __future__ import annotations

import datetime
import os
import time

import pytest
import torch
import torch.distributed as dist


def test_unsupported_dtype_and_op(rank, size):
    x = torch.zeros(4, dtype=torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="cannot be reduced"):
        dist.all_reduce(x)
    with pytest.raises(TypeError, match="bitwise reductions need an integer dtype"):
        dist.all_reduce(torch.ones(3), op=dist.ReduceOp.BAND)
    # Moved as bytes, any dtype works; and the group still works after the errors, raised before any exchange.
    out = torch.empty(4 * size, dtype=torch.float8_e4m3fn)
    dist.all_gather_into_tensor(out, torch.full((4,), float(rank), dtype=torch.float8_e4m3fn))
    assert out.to(torch.float32).tolist() == [float(r) for r in range(size) for _ in range(4)]
    t = torch.ones(2)
    dist.all_reduce(t)
    assert t.tolist() == [float(size)] * 2


def test_wrong_shapes_raise_locally(rank, size):
    with pytest.raises(ValueError, match="chorus"):
        dist.all_gather_into_tensor(torch.empty(3 * size + 1), torch.ones(3))
    with pytest.raises(ValueError, match="chorus"):
        dist.reduce_scatter_tensor(torch.empty(2), torch.ones(2 * size + 1))
    with pytest.raises(ValueError, match="contiguous"):
        dist.all_reduce(torch.ones(4, 4).t())
    dist.barrier()


def test_mismatched_sizes_with_check(rank, size, monkeypatch):
    # CHORUS_CHECK=1 (read when a communicator is created): every rank raises, naming what each passed.
    monkeypatch.setenv("CHORUS_CHECK", "1")
    g = dist.new_group(backend="chorus")
    with pytest.raises(dist.DistBackendError, match="CHORUS_ERR_MISMATCH|mismatch|differ"):
        dist.all_reduce(torch.ones(3 + rank), group=g)
    dist.destroy_process_group(g)


def test_timeout_is_an_error_not_a_hang(rank, size, gloo):
    # Rank 0 calls a collective the others do not call in time: it raises after the group's timeout and aborts
    # the group. The others' late call may still complete (rank 0's part of it was there) or fail; their next
    # one, which rank 0 never joins, fails within the timeout too.
    g = dist.new_group(backend="chorus", timeout=datetime.timedelta(seconds=2))
    start = time.monotonic()
    if rank == 0:
        with pytest.raises(dist.DistBackendError, match="timed out"):
            dist.all_reduce(torch.ones(8), group=g)
        assert time.monotonic() - start < 10
    dist.barrier(group=gloo)
    if rank != 0:
        start = time.monotonic()
        with pytest.raises(dist.DistBackendError):
            for _ in range(2):
                dist.all_reduce(torch.ones(8), group=g)
        assert time.monotonic() - start < 10
    dist.barrier(group=gloo)
    dist.destroy_process_group(g)


def test_work_wait_timeout(rank, size, gloo):
    g = dist.new_group(backend="chorus")
    if rank == 0:
        work = dist.all_reduce(torch.ones(8), group=g, async_op=True)
        with pytest.raises(dist.DistBackendError, match="timed out after 500 ms"):
            work.wait(datetime.timedelta(milliseconds=500))
    dist.barrier(group=gloo)
    dist.destroy_process_group(g)
