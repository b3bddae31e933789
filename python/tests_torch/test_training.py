"""Training loops over the chorus default group, against the same loops over Gloo in the same processes."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.distributed as dist
from helpers import data, same_on_every_rank
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4


def model() -> nn.Module:
    torch.manual_seed(1234)  # the same initial weights on every rank and for every backend
    return nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 8))


def batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    return data(rank, (16, 32), torch.float32, salt=500 + step), data(rank, (16, 8), torch.float32, salt=900 + step)


def train(net: nn.Module, rank: int, steps: int = STEPS) -> list[float]:
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(steps):
        x, y = batch(rank, step)
        loss = nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def ddp(group: dist.ProcessGroup | None, hook=None, state=None, bucket_mb: float = 0.01) -> DDP:
    # Small buckets by default: several all-reduces per step, their futures chained by the hooks.
    net = DDP(model(), process_group=group, bucket_cap_mb=bucket_mb)
    if hook is not None:
        net.register_comm_hook(state, hook)
    return net


def global_losses(losses: list[float], gloo: dist.ProcessGroup) -> torch.Tensor:
    t = torch.tensor(losses, dtype=torch.float64)
    dist.all_reduce(t, group=gloo)
    return t / dist.get_world_size()


def weights_same_everywhere(net: nn.Module, gloo: dist.ProcessGroup) -> None:
    for p in net.parameters():
        same_on_every_rank(p.detach(), gloo)


HOOKS = {
    "none": lambda: (None, None),
    "fp16": lambda: (default_hooks.fp16_compress_hook, None),
    "bf16": lambda: (default_hooks.bf16_compress_hook, None),
}


@pytest.mark.parametrize("hook", list(HOOKS))
def test_ddp_matches_gloo(hook, rank, gloo):
    fn, _ = HOOKS[hook]()
    over_chorus = ddp(None, fn, None)
    losses = train(over_chorus, rank)
    over_gloo = ddp(gloo, fn, gloo if fn else None)
    reference = train(over_gloo, rank)
    weights_same_everywhere(over_chorus, gloo)
    torch.testing.assert_close(global_losses(losses, gloo), global_losses(reference, gloo), rtol=0, atol=1e-4)
    for a, b in zip(over_chorus.parameters(), over_gloo.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-3 if fn else 1e-5)


def test_ddp_powersgd(rank, gloo):
    # PowerSGD: all-reduces of its P and Q factors started from future callbacks, which wait for them there, with
    # error feedback; vanilla all-reduce for the first steps. One bucket: over Gloo, whose callbacks run on its
    # worker threads, several buckets start their collectives in an order that differs by rank, and hang.
    def run(group):
        state = powerSGD_hook.PowerSGDState(process_group=group, matrix_approximation_rank=1,
                                            start_powerSGD_iter=2, min_compression_rate=0.5, random_seed=7)
        return ddp(group, powerSGD_hook.powerSGD_hook, state, bucket_mb=25)

    over_chorus = run(dist.group.WORLD)
    losses = train(over_chorus, rank, steps=5)
    reference = train(run(gloo), rank, steps=5)
    weights_same_everywhere(over_chorus, gloo)
    torch.testing.assert_close(global_losses(losses, gloo), global_losses(reference, gloo), rtol=0, atol=1e-4)


def test_fsdp2_matches_ddp_over_gloo(rank, size, gloo, tmp_path_factory):
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
    from torch.distributed.fsdp import fully_shard

    import torch.distributed.checkpoint as dcp

    net = model()
    for layer in net:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(net)
    losses = train(net, rank)
    reference = train(ddp(gloo), rank)
    torch.testing.assert_close(global_losses(losses, gloo), global_losses(reference, gloo), rtol=0, atol=1e-4)

    # torch.distributed.checkpoint: the sharded state saved by every rank, loaded into a fresh sharded model.
    where = [str(tmp_path_factory.mktemp("dcp")) if rank == 0 else None]
    dist.broadcast_object_list(where, src=0, group=gloo)
    dcp.save(get_model_state_dict(net), checkpoint_id=where[0])
    fresh = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 8))
    for layer in fresh:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(fresh)
    state = get_model_state_dict(fresh)
    dcp.load(state, checkpoint_id=where[0])
    set_model_state_dict(fresh, state)
    for a, b in zip(net.parameters(), fresh.parameters()):
        assert torch.equal(a.to_local(), b.to_local())
    x, _ = batch(rank, 99)
    assert torch.equal(net(x), fresh(x))


def test_pipeline_two_stages(rank, size, gloo):
    # Stage 0 on rank 0, stage 1 on rank 1: activations forward and their gradient back over send/recv, a few
    # micro-batches in flight; the result equals the whole model run on one rank.
    full = model()
    reference = copy.deepcopy(full)
    stage = [full[:2], full[2:]]
    micro = [batch(100 + m, 0) for m in range(3)]
    if rank == 0:
        outs = [stage[0](x) for x, _ in micro]
        for m, o in enumerate(outs):
            dist.send(o.detach(), dst=1, tag=m)
        for m, o in enumerate(outs):
            g = torch.empty_like(o)
            dist.recv(g, src=1, tag=m)
            o.backward(g)
    elif rank == 1:
        acts = []
        for m in range(len(micro)):
            a = torch.empty(16, 64)
            dist.recv(a, src=0, tag=m)
            acts.append(a.requires_grad_())
        for m in reversed(range(len(micro))):  # gradients sent in the reverse order: matched by tag
            loss = nn.functional.mse_loss(stage[1](acts[m]), micro[m][1])
            loss.backward()
            dist.send(acts[m].grad, dst=0, tag=m)
    if rank < 2:
        for x, y in micro:
            nn.functional.mse_loss(reference(x), y).backward()
        for p, q in zip(stage[rank].parameters(), reference[:2].parameters() if rank == 0 else reference[2:].parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
    dist.barrier(group=gloo)


def test_batch_isend_irecv_ring(rank, size):
    # Each rank sends to both neighbours and receives from both at once: no pair of sends waits for a receive.
    right, left = (rank + 1) % size, (rank - 1) % size
    big = 1 << 20
    out_r, out_l = data(rank, big, torch.float32, salt=1), data(rank, 7, torch.int64, salt=2)
    in_l, in_r = torch.empty(big), torch.empty(7, dtype=torch.int64)
    ops = [dist.P2POp(dist.isend, out_r, right), dist.P2POp(dist.isend, out_l, left),
           dist.P2POp(dist.irecv, in_l, left), dist.P2POp(dist.irecv, in_r, right)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert torch.equal(in_l, data(left, big, torch.float32, salt=1))
    assert torch.equal(in_r, data(right, 7, torch.int64, salt=2))
