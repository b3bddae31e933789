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

from typing import Any

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
from ._chorus import _mapped_bytes
from ._errors import ChorusError


def mapped_empty(shape: int | tuple[int, ...], dtype: object = "float32") -> Any:
    """An uninitialized NumPy array in mapped memory (``chorus_mem_alloc``).

    The processes of a host map such memory into each other: collectives on
    arrays in it read and write peers' arrays in place, each byte moved
    once. Register the arrays a loop reuses as windows
    (:meth:`Communicator.register`) so that the cost model counts on it.
    ``torch.from_numpy(chorus.mapped_empty(...))`` gives a tensor over it.
    The memory is freed when the last array over it goes.
    """
    import numpy as np

    dt = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = int(np.prod(dims, dtype=np.int64)) * dt.itemsize
    return _mapped_bytes(nbytes)[:nbytes].view(dt).reshape(dims)


__all__ = [
    "IN_PLACE",
    "ChorusError",
    "Communicator",
    "Op",
    "Request",
    "Result",
    "__version__",
    "has_cuda",
    "mapped_empty",
    "setting",
]
