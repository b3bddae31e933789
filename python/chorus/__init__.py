"""Chorus: collectives for MPI programs, on host and CUDA arrays.

A thin binding of the C API (chorus.h)::

    import numpy as np
    import chorus

    with chorus.Communicator() as comm:          # MPI_COMM_WORLD
        x = np.full(4, comm.rank, dtype=np.float32)
        comm.allreduce(x)                        # in place, op=chorus.Op.SUM
        y = np.empty(4 * comm.size, dtype=np.float32)
        comm.allgather(x, y)
        comm.iallreduce(x, op="max").wait()      # nonblocking

Every collective of chorus.h is a method of :class:`Communicator`, with a
nonblocking twin (``iallreduce``, ...) that returns a :class:`Request`.
Arrays are anything that exports DLPack or the buffer protocol (NumPy,
torch, CuPy, ...), C-contiguous; device arrays take the device path.
Run under ``mpirun``; a single process without it is a one-rank world.
"""

from __future__ import annotations

from ._chorus import (
    IN_PLACE,
    Communicator,
    Op,
    Request,
    Result,
    __version__,
    has_cuda,
    setting,
)
from ._errors import ChorusError

__all__ = [
    "IN_PLACE",
    "ChorusError",
    "Communicator",
    "Op",
    "Request",
    "Result",
    "__version__",
    "has_cuda",
    "setting",
]
