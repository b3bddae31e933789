#!/usr/bin/env python3
"""Train a small MLP with torch.distributed over Chorus or Gloo, as DDP or FSDP2.

Synthetic data from a fixed seed (the outputs of a fixed random "teacher" network on random inputs), a few steps of
AdamW, the global mean loss printed per step on rank 0. The same command line gives the same losses with either
backend and either launcher (up to floating-point summation order).

Usage:
    torchrun --nproc_per_node 2 examples/torch/train.py [--backend chorus|gloo] [--mode ddp|fsdp2]
    mpirun -np 2 python examples/torch/train.py [--backend chorus|gloo] [--mode ddp|fsdp2]
    options: [--device cpu|cuda] [--steps 10] [--batch 64] [--width 256] [--depth 3] [--lr 1e-3] [--seed 0]

Under torchrun the process group comes from torch's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT). Under mpirun those are missing; `import chorus.torch` fills them in from MPI, so the script imports
it whenever they are missing, for Gloo too. See README.md next to this file.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

TORCH_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def prepare_backend(backend: str) -> None:
    """Import chorus.torch when it is needed: to register the "chorus" backend, or to fill in torch's environment
    from MPI under mpirun (for Gloo too). Under torchrun with Gloo, Chorus is not imported at all."""
    env_missing = any(k not in os.environ for k in TORCH_ENV)
    if backend != "chorus" and not env_missing:
        return
    try:
        import chorus.torch  # noqa: F401  (registers "chorus"; under mpirun, sets RANK, WORLD_SIZE, ...)
    except ImportError as e:
        if backend == "chorus":
            sys.exit(f"--backend chorus needs the chorus package with chorus.torch: {e}")
        sys.exit(f"RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT are not set and chorus.torch, which sets them under "
                 f"mpirun, is not importable ({e}): launch with torchrun, or install chorus")


def make_model(width: int, depth: int, inputs: int, outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    n = inputs
    for _ in range(depth):
        layers += [nn.Linear(n, width), nn.Tanh()]
        n = width
    layers.append(nn.Linear(n, outputs))
    return nn.Sequential(*layers)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("chorus", "gloo"), default="chorus")
    p.add_argument("--mode", choices=("ddp", "fsdp2"), default="ddp")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--width", type=int, default=256, help="hidden layer width")
    p.add_argument("--depth", type=int, default=3, help="hidden layers")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    prepare_backend(args.backend)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("--device cuda: no CUDA device available")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        dist.init_process_group(args.backend, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    inputs, outputs = 32, 8

    # The same initial weights on every rank (DDP also broadcasts rank 0's; FSDP2 does not), and a fixed teacher.
    torch.manual_seed(args.seed)
    model = make_model(args.width, args.depth, inputs, outputs).to(device)
    teacher = make_model(64, 1, inputs, outputs).to(device).requires_grad_(False)

    if args.mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    else:
        from torch.distributed.fsdp import fully_shard  # FSDP2; 1-D mesh over the default group

        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer)
        fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)

    # Each rank draws its own shard of every global batch from one generator: data independent of the launcher.
    gen = torch.Generator().manual_seed(args.seed + 1)
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())  # FSDP2's DTensors count their global size
        print(f"backend={args.backend} mode={args.mode} device={device} world={world} params={params} "
              f"global batch={args.batch * world}", flush=True)
    for step in range(args.steps):
        x = torch.randn(world, args.batch, inputs, generator=gen)[rank].to(device)
        y = teacher(x)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)  # the global mean loss, for printing
        if rank == 0:
            print(f"step {step:3d}  loss {total.item() / world:.6f}", flush=True)

    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
