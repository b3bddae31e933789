"""The torch.distributed backend "chorus".

Importing this module registers the backend for CPU and CUDA tensors::

    import torch.distributed as dist
    import chorus.torch

    dist.init_process_group("chorus")   # under mpirun or torchrun

Under ``torchrun`` (or any launcher that sets ``RANK`` and ``WORLD_SIZE``)
torch's own environment is used. Under ``mpirun``, where those are missing,
the import fills ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` from MPI (rank 0
picks a free port), so that torch's ``env://`` rendezvous works unchanged,
for "chorus" and for any other backend (``new_group(backend="gloo")``). A
process started alone is a one-rank world. Variables already set are kept.

Each process group's communicator is created through torch's store: MPI is
not needed for it, so the same program runs under both launchers.
"""

from __future__ import annotations

import os
import socket

import torch  # noqa: F401  (its libraries must be loaded before the backend's)
import torch.distributed as dist

try:
    from . import _c10d
except ImportError as e:  # built without torch
    raise ImportError(
        "chorus was built without its torch backend (chorus._c10d): install it into an environment "
        "that has torch, with pip install --no-build-isolation . (see python/README.md)"
    ) from e

__all__ = ["fill_env_from_mpi", "is_available"]

_MPI_LAUNCH_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def is_available() -> bool:
    """Whether the backend is registered (always True once this module is imported)."""
    return "chorus" in dist.Backend.backend_list


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def fill_env_from_mpi() -> bool:
    """Set torch's launcher variables from MPI when a launcher did not.

    Does nothing when ``RANK`` and ``WORLD_SIZE`` are set. Under an MPI
    launcher (Open MPI's or MPICH's), initializes MPI (collective over
    MPI_COMM_WORLD) and sets the variables that are missing; a process
    started alone gets a one-rank world. Returns True if it set anything.
    """
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return False
    hostname = socket.gethostname()
    if any(v in os.environ for v in _MPI_LAUNCH_VARS):
        from . import _chorus

        # Rank 0's host name, address and a free port, to every rank.
        try:
            address = socket.gethostbyname(hostname)
        except OSError:
            address = "127.0.0.1"
        port = os.environ.get("MASTER_PORT") or str(_free_port())
        rank, size, local_rank, local_size, root = _chorus._mpi_world(f"{hostname} {address} {port}")
        root_host, root_address, root_port = root.split(" ")
        master = "127.0.0.1" if root_host == hostname else root_address
    else:
        rank, size, local_rank, local_size = 0, 1, 0, 1
        master, root_port = "127.0.0.1", str(_free_port())
    values = {
        "RANK": rank,
        "WORLD_SIZE": size,
        "LOCAL_RANK": local_rank,
        "LOCAL_WORLD_SIZE": local_size,
        "MASTER_ADDR": master,
        "MASTER_PORT": root_port,
    }
    for name, value in values.items():
        os.environ.setdefault(name, str(value))
    return True


def _create_backend(opts: dist.distributed_c10d._DistributedBackendOptions, backend_options: object) -> _c10d.Backend:
    timeout_ms = int(opts.timeout.total_seconds() * 1000)
    return _c10d.create(
        opts.store,
        opts.group_rank,
        opts.group_size,
        timeout_ms,
        opts.group_id,
        [int(r) for r in opts.global_ranks_in_group],
    )


fill_env_from_mpi()
if "chorus" not in dist.Backend.backend_list:
    dist.Backend.register_backend("chorus", _create_backend, extended_api=True, devices=["cpu", "cuda"])
