"""Failures of whole processes, run without a launcher: the test starts the ranks itself (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT, as torchrun would set them) and watches them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pytest

WORKER = textwrap.dedent(
    """
    import datetime, os, signal, sys, time
    import torch, torch.distributed as dist
    import chorus.torch
    dist.init_process_group("chorus", timeout=datetime.timedelta(seconds=20))
    rank, size = dist.get_rank(), dist.get_world_size()
    t = torch.ones(1000)
    dist.all_reduce(t)
    assert t[0].item() == size
    if rank == size - 1:
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        for _ in range(100):
            dist.all_reduce(t)
            time.sleep(0.01)
    except dist.DistBackendError as e:
        print(f"rank {rank} raised after {time.monotonic() - start:.1f} s: {e}", flush=True)
        sys.exit(0)
    print(f"rank {rank}: no error", flush=True)
    sys.exit(1)
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("size", [2, 3])
def test_killed_rank(size):
    # The last rank dies (SIGKILL) after a first collective; every survivor raises DistBackendError within the
    # group's timeout, and exits.
    env = dict(os.environ, WORLD_SIZE=str(size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"):
        env.pop(k, None)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(size)]
    outputs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            out += "\n(killed after 60 s: hung)"
        outputs.append(out)
    assert procs[-1].returncode == -9
    for r in range(size - 1):
        assert procs[r].returncode == 0 and f"rank {r} raised" in outputs[r], f"rank {r}:\n{outputs[r]}"
