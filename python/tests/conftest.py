"""Test setup under mpirun: every rank runs the same tests in the same order.

A test that fails on one rank fails the run on every rank: at the end of
the session the ranks' failure counts are summed (through Chorus itself)
and each rank's exit status is set from the total, so that rank 0's
summary and every rank's exit code agree.
"""

from __future__ import annotations

import numpy as np
import pytest

import chorus

_COMM: chorus.Communicator | None = None


def world() -> chorus.Communicator:
    global _COMM
    if _COMM is None:
        _COMM = chorus.Communicator()
    return _COMM


@pytest.fixture(scope="session")
def comm() -> chorus.Communicator:
    return world()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    c = world()
    failed = np.array([max(session.testsfailed, 1 if exitstatus not in (0, 5) else 0)], dtype=np.int64)
    per_rank = np.zeros(c.size, dtype=np.int64)
    c.allgather(failed, per_rank)
    bad = [r for r in range(c.size) if per_rank[r]]
    if bad:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if c.rank == 0:
            print(f"\nfailures on ranks {bad} (counts {per_rank.tolist()}); their output shows which tests")


def pytest_report_header(config: pytest.Config) -> str:
    c = world()
    return f"chorus {chorus.__version__}, {c.size} ranks, CUDA {chorus.has_cuda()}"
