"""The torch backend's tests, under mpirun or torchrun: every rank runs the
same tests in the same order on the "chorus" default group.

Every check that compares ranks goes through a Gloo group made beside it
(an independent transport). At the end of the session the ranks' failure
counts are summed over Gloo and each rank's exit status set from the total,
so that rank 0's summary and every rank's exit code agree.
"""

from __future__ import annotations

import datetime

import pytest
import torch
import torch.distributed as dist

import chorus.torch  # noqa: F401  (registers "chorus"; under mpirun, fills RANK, WORLD_SIZE, ...)

_GLOO: dist.ProcessGroup | None = None


def setup() -> dist.ProcessGroup:
    global _GLOO
    if _GLOO is None:
        dist.init_process_group("chorus", timeout=datetime.timedelta(seconds=60))
        _GLOO = dist.new_group(backend="gloo")
    return _GLOO


@pytest.fixture(scope="session")
def gloo() -> dist.ProcessGroup:
    return setup()


@pytest.fixture(scope="session")
def rank(gloo: dist.ProcessGroup) -> int:
    return dist.get_rank()


@pytest.fixture(scope="session")
def size(gloo: dist.ProcessGroup) -> int:
    return dist.get_world_size()


def pytest_sessionstart(session: pytest.Session) -> None:
    setup()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    gloo = setup()
    failed = torch.tensor([max(session.testsfailed, 1 if exitstatus not in (0, 5) else 0)], dtype=torch.int64)
    per_rank = [torch.zeros(1, dtype=torch.int64) for _ in range(dist.get_world_size())]
    dist.all_gather(per_rank, failed, group=gloo)
    bad = [r for r, n in enumerate(per_rank) if int(n)]
    if bad:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if dist.get_rank() == 0:
            print(f"\nfailures on ranks {bad}; their output shows which tests")
    dist.destroy_process_group()


def pytest_report_header(config: pytest.Config) -> str:
    setup()
    return f"torch {torch.__version__}, {dist.get_world_size()} ranks over chorus"
