"""Inputs from per-rank seeds, and checks across ranks through Gloo."""

from __future__ import annotations

import torch
import torch.distributed as dist

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]


def data(rank: int, shape: tuple[int, ...] | int, dtype: torch.dtype, salt: int = 0, low: float = -2.0,
         high: float = 2.0) -> torch.Tensor:
    """Rank `rank`'s input: the same on every rank that computes it. Floats in [low, high) that round when summed;
    integers in [low, high]; bools at random."""
    g = torch.Generator().manual_seed(1_000_003 * (salt + 1) + rank)
    shape = (shape,) if isinstance(shape, int) else shape
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    if dtype.is_complex:
        real = torch.float32 if dtype == torch.complex64 else torch.float64
        return torch.complex(data(rank, shape, real, salt, low, high), data(rank, shape, real, salt + 7, low, high))
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low).to(dtype)
    return torch.randint(int(low), int(high) + 1, shape, generator=g).to(dtype)


def same_on_every_rank(t: torch.Tensor, gloo: dist.ProcessGroup) -> None:
    """Raise unless `t` holds the same bytes on every rank."""
    mine = t.detach().contiguous().view(-1).view(torch.uint8) if t.numel() else torch.zeros(0, dtype=torch.uint8)
    everyone = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine, group=gloo)
    for r, other in enumerate(everyone):
        assert torch.equal(other, everyone[0]), f"rank {r}'s result differs from rank 0's"


def assert_matches(got: torch.Tensor, want: torch.Tensor, scale: float = 2.0) -> None:
    """Exact for integers and bools; for floats, within the dtype's rounding of the partial sums (the reference is
    summed in float64 and rounded once): a few units in the last place of `scale`, the largest input."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.is_floating_point or got.dtype.is_complex:
        real = got.real.dtype if got.dtype.is_complex else got.dtype
        torch.testing.assert_close(got, want, rtol=2 * torch.finfo(real).eps, atol=4 * torch.finfo(real).eps * scale)
    else:
        assert torch.equal(got, want), f"{got} != {want}"
