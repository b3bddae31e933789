#!/usr/bin/env python3
"""torch.distributed collectives and training steps over Chorus and Gloo, side by side in one run.

Each measured backend gets its own process group over all ranks (`dist.new_group(backend=...)`); the default group
is always Gloo and only carries the barriers and the gathering of timings, never a timed call. Every measurement
alternates between the backends (blocks of calls, or single steps, in A B / B A order) with a barrier before each
block, so both see the same machine state.

Collectives mode (the default): for each of all_reduce, broadcast, all_gather_into_tensor, reduce_scatter_tensor
and all_to_all_single, and each size (float32; 4 B to 64 MiB in powers of 4 unless --sizes), one checked call per
backend, warm-up calls, then timed calls (--iters for sizes up to 64 KiB, fewer above, at least --min-iters).
Every call is timed alone (with a device synchronize on CUDA); a row gives each backend's median call time
(the largest of the ranks' medians, us), its bus bandwidth, and gloo_us / chorus_us (above 1: Chorus faster).

Sizes and bandwidths follow OSU and nccl-tests, as chorus-bench does: the size is the buffer for all_reduce and
broadcast, each rank's input for all_gather_into_tensor (output: nranks x size), the whole input for
reduce_scatter_tensor (output: size / nranks, at least one element), the block for each peer for all_to_all_single
(nranks x size each way). algbw = bytes / time, bytes being the buffer, the gathered output, the reduce-scatter
input or the all-to-all send buffer; busbw = algbw x 2(n-1)/n for all_reduce, 1 for broadcast, (n-1)/n otherwise.

Steps mode (--steps [N]): the step time (forward + backward + AdamW step) of an MLP of 19.9 M parameters
(1024 -> 2048, four 2048 x 2048 layers, -> 512) under DDP (DistributedDataParallel(process_group=...)) and FSDP2
(fully_shard(mesh=DeviceMesh.from_group(...)), each Linear then the root), one model per backend from one seed,
the backends stepping in turn; the median over N steps (default 20, after --warmup-steps) of the slowest rank's
step, and gloo / chorus. FSDP2 reduce-scatters float32 gradients with ReduceOp.AVG; --fsdp-sum makes it use SUM
and divide afterwards (set_force_sum_reduction_for_comms) for a backend without AVG.

Usage:
    torchrun --nproc_per_node 2 perf/torch_collectives.py [--backends chorus,gloo] [options]
    mpirun -np 2 python perf/torch_collectives.py [--backends chorus,gloo] [options]
    options:
      --collectives all_reduce,broadcast,...    a subset, in this order
      --sizes 4,64K,1M | --min-bytes 4 --max-bytes 64M    (K, M, G: powers of 1024)
      --iters 100 --min-iters 10 --rounds 10    calls per backend; blocks they are split into
      --device cpu|cuda --csv out.csv --plot out.png --no-check
      --steps [N] [--modes ddp,fsdp2] [--batch 32] [--warmup-steps 3] [--fsdp-sum]

Under torchrun, torch's environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) sets up the groups. Under mpirun
it is missing and `import chorus.torch` fills it in from MPI, so the script imports chorus.torch when "chorus" is
measured or when that environment is missing (for --backends gloo under mpirun too). Output only on rank 0.
Example: torchrun --nproc_per_node 2 perf/torch_collectives.py --backends gloo --max-bytes 64K
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn

COLLECTIVES = ("all_reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single")
KNOWN_BACKENDS = ("chorus", "gloo")
TORCH_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
DTYPE = torch.float32
SCALE_BYTES = 64 * 1024  # --iters holds up to this size; above it, iterations fall as 1/size


def bus_factor(collective: str, n: int) -> float:
    if collective == "all_reduce":
        return 2.0 * (n - 1) / n
    if collective == "broadcast":
        return 1.0
    return (n - 1) / n


def parse_bytes(text: str) -> int:
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text[:-1] if mult > 1 else text) * mult


def human(nbytes: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return str(nbytes)


def split_list(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    items = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in items if s not in allowed]
    if bad or not items or len(set(items)) != len(items):
        raise SystemExit(f"{what}: {text!r}; expected distinct names from {', '.join(allowed)}")
    return items


# --------------------------------------------------------------------------------------------------------------
# Setup


def prepare_env(backends: list[str]) -> None:
    """Import chorus.torch where needed: it registers backend "chorus" and, under mpirun, fills in torch's env."""
    env_missing = any(k not in os.environ for k in TORCH_ENV)
    if "chorus" not in backends and not env_missing:
        return
    try:
        import chorus.torch  # noqa: F401
    except ImportError as e:
        if "chorus" in backends:
            raise SystemExit(f"backend chorus needs the chorus package with chorus.torch: {e}")
        raise SystemExit(f"{'/'.join(TORCH_ENV)} are not set and chorus.torch, which sets them under mpirun, is "
                         f"not importable ({e}): launch with torchrun, or install chorus")


@dataclass
class World:
    rank: int
    size: int
    device: torch.device
    control: dist.ProcessGroup  # the default group (Gloo): barriers and timing reductions only
    groups: dict[str, dist.ProcessGroup] = field(default_factory=dict)

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def barrier(self) -> None:
        self.sync()
        dist.barrier(group=self.control)

    def max_over_ranks(self, values: list[float]) -> list[float]:
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.control)
        return t.tolist()

    def all_true(self, ok: bool) -> bool:
        t = torch.tensor([0 if ok else 1], dtype=torch.int32)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.control)
        return int(t.item()) == 0

    def say(self, *args: object) -> None:
        if self.rank == 0:
            print(*args, flush=True)


def setup(backends: list[str], device_name: str) -> World:
    prepare_env(backends)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device_name == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no CUDA device available")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group("gloo")
    control = dist.group.WORLD
    assert control is not None
    world = World(dist.get_rank(), dist.get_world_size(), device, control)
    for b in backends:  # every rank creates the groups in the same order
        world.groups[b] = dist.new_group(backend=b)
    return world


def orders(backends: list[str], rounds: int) -> list[list[str]]:
    """A B, B A, A B, ...: each backend goes first as often as the other."""
    return [backends if r % 2 == 0 else backends[::-1] for r in range(rounds)]


# --------------------------------------------------------------------------------------------------------------
# Collectives


@dataclass
class Case:
    """One collective at one size: its buffers, its call, and the bytes its bandwidth counts."""

    collective: str
    nbytes: int  # the size as the table and CSV give it (see the docstring)
    bw_bytes: int  # the bytes its bandwidth counts
    inp: torch.Tensor
    out: torch.Tensor
    run: Callable[[dist.ProcessGroup], object]
    fill: Callable[[], None]  # rank-dependent input for the check
    expect: Callable[[], torch.Tensor]


def make_case(collective: str, size: int, world: World) -> Case:
    n, r, dev = world.size, world.rank, world.device
    esize = torch.tensor([], dtype=DTYPE).element_size()
    c = max(1, size // esize)  # elements per block
    if collective in ("all_reduce", "broadcast"):
        inp_len, out_len, nbytes, bw = c, c, c * esize, c * esize
    elif collective == "all_gather_into_tensor":
        inp_len, out_len, nbytes, bw = c, n * c, c * esize, n * c * esize
    elif collective == "reduce_scatter_tensor":
        c = max(1, size // esize // n)
        inp_len, out_len, nbytes, bw = n * c, c, n * c * esize, n * c * esize
    else:  # all_to_all_single
        inp_len, out_len, nbytes, bw = n * c, n * c, c * esize, n * c * esize
    inp = torch.zeros(inp_len, dtype=DTYPE, device=dev)
    out = inp if collective in ("all_reduce", "broadcast") else torch.zeros(out_len, dtype=DTYPE, device=dev)

    def run(g: dist.ProcessGroup) -> object:
        if collective == "all_reduce":
            return dist.all_reduce(inp, group=g)
        if collective == "broadcast":
            return dist.broadcast(inp, src=0, group=g)
        if collective == "all_gather_into_tensor":
            return dist.all_gather_into_tensor(out, inp, group=g)
        if collective == "reduce_scatter_tensor":
            return dist.reduce_scatter_tensor(out, inp, group=g)
        return dist.all_to_all_single(out, inp, group=g)

    def fill() -> None:
        if collective in ("reduce_scatter_tensor", "all_to_all_single"):  # block j of rank r: r*n + j
            inp.copy_((torch.arange(n, dtype=DTYPE) + r * n).repeat_interleave(c))
        else:
            inp.fill_(r + 1)
        if out is not inp:
            out.fill_(-1)

    def expect() -> torch.Tensor:
        if collective == "all_reduce":
            return torch.full((c,), n * (n + 1) / 2, dtype=DTYPE)
        if collective == "broadcast":
            return torch.full((c,), 1, dtype=DTYPE)
        if collective == "all_gather_into_tensor":
            return (torch.arange(n, dtype=DTYPE) + 1).repeat_interleave(c)
        if collective == "reduce_scatter_tensor":  # sum over ranks s of s*n + r
            return torch.full((c,), n * n * (n - 1) / 2 + n * r, dtype=DTYPE)
        return (torch.arange(n, dtype=DTYPE) * n + r).repeat_interleave(c)  # block j from rank j: j*n + r

    return Case(collective, nbytes, bw, inp, out, run, fill, expect)


def iterations(nbytes: int, iters: int, min_iters: int) -> int:
    return max(min_iters, min(iters, iters * SCALE_BYTES // max(nbytes, 1)))


def check(case: Case, world: World, group: dist.ProcessGroup) -> bool:
    case.fill()
    case.run(group)
    world.sync()
    ok = torch.equal(case.out.cpu(), case.expect())
    ok = world.all_true(ok)
    case.inp.zero_()  # timed calls on zeros: all_reduce's repeated sums stay finite
    if case.out is not case.inp:
        case.out.zero_()
    return ok


def time_calls(case: Case, world: World, group: dist.ProcessGroup, calls: int, into: list[float]) -> None:
    run, sync, clock = case.run, world.sync, time.perf_counter_ns
    for _ in range(calls):
        t0 = clock()
        run(group)
        sync()
        into.append((clock() - t0) / 1e3)


def run_collectives(args: argparse.Namespace, world: World, backends: list[str]) -> list[dict[str, object]]:
    n = world.size
    if args.sizes:
        sizes = [parse_bytes(s) for s in args.sizes.split(",") if s.strip()]
    else:
        sizes, s = [], parse_bytes(args.min_bytes)
        while s <= parse_bytes(args.max_bytes):
            sizes.append(s)
            s *= 4
    ratio = "chorus" in backends and "gloo" in backends
    rows: list[dict[str, object]] = []
    world.say(f"# torch.distributed collectives: {', '.join(backends)}; {n} ranks, {world.device.type}, float32; "
              f"torch {torch.__version__}")
    world.say("# median call time (us), largest over ranks; busbw GB/s (nccl-tests); size as OSU")
    for collective in split_list(args.collectives, COLLECTIVES, "--collectives"):
        world.say(f"\n# {collective}")
        head = f"{'bytes':>10} {'iters':>6}"
        for b in backends:
            head += f" {b + '_us':>12} {b + '_busbw':>12}"
        world.say(head + (f" {'gloo/chorus':>12}" if ratio else ""))
        seen: set[int] = set()
        for size in sizes:
            world.barrier()
            case = make_case(collective, size, world)
            if case.nbytes in seen:  # sizes below one element per rank collapse onto the same case
                continue
            seen.add(case.nbytes)
            iters = iterations(case.bw_bytes, args.iters, args.min_iters)
            rounds = max(1, min(args.rounds, iters))
            valid = {}
            for b in backends:
                world.barrier()
                valid[b] = check(case, world, world.groups[b]) if args.check else True
            times: dict[str, list[float]] = {b: [] for b in backends}
            warm = max(1, iters // 10)
            for order in orders(backends, 2):
                for b in order:
                    world.barrier()
                    time_calls(case, world, world.groups[b], warm, [])
            for r, order in enumerate(orders(backends, rounds)):
                per_block = iters // rounds + (1 if r < iters % rounds else 0)
                for b in order:
                    world.barrier()
                    time_calls(case, world, world.groups[b], per_block, times[b])
            medians = world.max_over_ranks([statistics.median(times[b]) for b in backends])
            row: dict[str, object] = {"collective": collective, "ranks": n, "device": world.device.type,
                                      "dtype": "float32", "bytes": case.nbytes, "iters": iters}
            line = f"{case.nbytes:>10} {iters:>6}"
            for b, us in zip(backends, medians):
                busbw = case.bw_bytes / (us * 1e-6) / 1e9 * bus_factor(collective, n)
                row[f"{b}_median_us"] = round(us, 3)
                row[f"{b}_busbw_gbs"] = round(busbw, 4)
                row[f"{b}_valid"] = "ok" if valid[b] else "FAIL"
                line += f" {us:>12.2f} {busbw:>12.4f}" if valid[b] else f" {'FAIL':>12} {'-':>12}"
            if ratio:
                row["gloo_over_chorus"] = round(float(row["gloo_median_us"]) / float(row["chorus_median_us"]), 3)
                line += f" {row['gloo_over_chorus']:>12.2f}"
            world.say(line)
            rows.append(row)
            del case
    return rows


def write_csv(path: str, rows: list[dict[str, object]]) -> None:
    fields: list[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def plot(path: str, rows: list[dict[str, object]], backends: list[str]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--plot {path}: matplotlib is not installed; no plot (the CSV and table hold the same numbers)")
        return
    collectives = [c for c in COLLECTIVES if any(r["collective"] == c for r in rows)]
    fig, axes = plt.subplots(len(collectives), 2, figsize=(11, 3.2 * len(collectives)), squeeze=False)
    for (lat, bw), c in zip(axes, collectives):
        mine = [r for r in rows if r["collective"] == c]
        x = [int(r["bytes"]) for r in mine]  # type: ignore[call-overload]
        for b in backends:
            lat.plot(x, [r[f"{b}_median_us"] for r in mine], marker="o", label=b)
            bw.plot(x, [r[f"{b}_busbw_gbs"] for r in mine], marker="o", label=b)
        lat.set(xscale="log", yscale="log", ylabel="median us", title=f"{c}: latency")
        bw.set(xscale="log", ylabel="busbw GB/s", title=f"{c}: bus bandwidth")
        for ax in (lat, bw):
            ax.set_xlabel("bytes")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
    n = int(rows[0]["ranks"]) if rows else 0  # type: ignore[call-overload]
    fig.suptitle(f"torch.distributed, {n} ranks, {rows[0]['device'] if rows else ''}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


# --------------------------------------------------------------------------------------------------------------
# Training steps


def make_model() -> nn.Sequential:
    """19.9 M parameters: 1024 -> 2048, 4 x (2048 -> 2048), 2048 -> 512, ReLU between."""
    widths = [1024, 2048, 2048, 2048, 2048, 2048, 512]
    layers: list[nn.Module] = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def wrap(mode: str, world: World, group: dist.ProcessGroup, fsdp_sum: bool) -> nn.Module:
    torch.manual_seed(1234)  # the same initial model for every backend
    model = make_model().to(world.device)
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        ids = [world.device.index] if world.device.type == "cuda" else None
        return DDP(model, device_ids=ids, process_group=group)
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard

    mesh = DeviceMesh.from_group(group, world.device.type)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if fsdp_sum:
        model.set_force_sum_reduction_for_comms(True)  # type: ignore[operator]
    return model


def run_steps(args: argparse.Namespace, world: World, backends: list[str]) -> list[dict[str, object]]:
    gen = torch.Generator().manual_seed(99 + world.rank)  # each rank its own fixed batch
    x = torch.randn(args.batch, 1024, generator=gen).to(world.device)
    y = torch.randn(args.batch, 512, generator=gen).to(world.device)
    ratio = "chorus" in backends and "gloo" in backends
    world.say(f"# training step (forward + backward + AdamW), 19.9 M-parameter MLP, batch {args.batch} per rank; "
              f"{world.size} ranks, {world.device.type}; median of {args.steps} steps (slowest rank's), ms")
    world.say(f"{'mode':>6} " + " ".join(f"{b + '_ms':>12} {b + '_loss':>12}" for b in backends)
              + (f" {'gloo/chorus':>12}" if ratio else ""))
    rows: list[dict[str, object]] = []
    for mode in split_list(args.modes, ("ddp", "fsdp2"), "--modes"):
        models = {b: wrap(mode, world, world.groups[b], args.fsdp_sum) for b in backends}
        opts = {b: torch.optim.AdamW(m.parameters(), lr=1e-4) for b, m in models.items()}
        times: dict[str, list[float]] = {b: [] for b in backends}
        loss: dict[str, float] = {}
        for i, order in enumerate(orders(backends, args.warmup_steps + args.steps)):
            for b in order:
                world.barrier()
                t0 = time.perf_counter_ns()
                out = models[b](x)
                l = nn.functional.mse_loss(out, y)
                opts[b].zero_grad(set_to_none=True)
                l.backward()
                opts[b].step()
                world.sync()
                if i >= args.warmup_steps:
                    times[b].append((time.perf_counter_ns() - t0) / 1e6)
                loss[b] = float(l.item())
        steps = [world.max_over_ranks(times[b]) for b in backends]  # each step: its slowest rank
        med = {b: statistics.median(s) for b, s in zip(backends, steps)}
        row: dict[str, object] = {"mode": mode, "ranks": world.size, "device": world.device.type,
                                  "batch": args.batch, "steps": args.steps}
        for b in backends:
            row[f"{b}_median_ms"] = round(med[b], 3)
            row[f"{b}_last_loss"] = loss[b]  # rank 0's
        line = f"{mode:>6} " + " ".join(f"{med[b]:>12.2f} {loss[b]:>12.6f}" for b in backends)
        if ratio:
            row["gloo_over_chorus"] = round(med["gloo"] / med["chorus"], 3)
            line += f" {row['gloo_over_chorus']:>12.2f}"
        world.say(line)
        rows.append(row)
        del models, opts
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backends", default="chorus,gloo", help="comma list of chorus, gloo (default chorus,gloo)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--collectives", default=",".join(COLLECTIVES))
    p.add_argument("--sizes", default="", help="comma list of sizes in bytes (K, M, G suffixes)")
    p.add_argument("--min-bytes", default="4")
    p.add_argument("--max-bytes", default="64M")
    p.add_argument("--iters", type=int, default=100, help="timed calls per backend up to 64 KiB (default 100)")
    p.add_argument("--min-iters", type=int, default=10, help="timed calls per backend at least (default 10)")
    p.add_argument("--rounds", type=int, default=10, help="blocks the calls are split into, alternating backends")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the checked call per backend")
    p.add_argument("--csv", help="write the rows as CSV (rank 0)")
    p.add_argument("--plot", help="plot latency and bus bandwidth to this PNG (needs matplotlib)")
    p.add_argument("--steps", type=int, nargs="?", const=20, default=0,
                   help="steps mode: time N training steps (default 20) instead of the collectives")
    p.add_argument("--modes", default="ddp,fsdp2")
    p.add_argument("--batch", type=int, default=32, help="steps mode: samples per rank")
    p.add_argument("--warmup-steps", type=int, default=3)
    p.add_argument("--fsdp-sum", action="store_true", help="FSDP2: reduce-scatter with SUM instead of AVG")
    args = p.parse_args()
    backends = split_list(args.backends, KNOWN_BACKENDS, "--backends")
    if args.iters < 1 or args.min_iters < 1 or args.rounds < 1 or args.steps < 0:
        raise SystemExit("--iters, --min-iters, --rounds must be at least 1, --steps at least 0")

    world = setup(backends, args.device)
    if args.steps:
        rows = run_steps(args, world, backends)
    else:
        rows = run_collectives(args, world, backends)
    if world.rank == 0:
        if args.csv:
            write_csv(args.csv, rows)
            print(f"csv: {args.csv}")
        if args.plot and not args.steps:
            plot(args.plot, rows, backends)
        elif args.plot:
            print("--plot: only for the collectives mode")
    world.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
