"""Type stubs of the extension chorus._chorus (the binding of chorus.h)."""

from __future__ import annotations

import enum
from typing import Any, Callable, Literal, Optional, Sequence, Union

__version__: str

class Op(enum.Enum):
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    LAND = 8
    LOR = 9
    LXOR = 10

class Result(enum.IntEnum):
    SUCCESS = 0
    ERR_INVALID_ARGUMENT = 1
    ERR_UNSUPPORTED = 2
    ERR_OUT_OF_MEMORY = 3
    ERR_TRANSPORT = 4
    ERR_CUDA = 5
    ERR_TIMEOUT = 6
    ERR_PEER_FAILED = 7
    ERR_COMM_FAILED = 8
    ERR_MISMATCH = 9
    ERR_INTERNAL = 10
    ERR_CONFIG = 11

class _InPlaceType: ...

IN_PLACE: _InPlaceType

# An array that exports DLPack (__dlpack__) or the buffer protocol: NumPy
# arrays, torch tensors, CuPy arrays, bytearray, ...
Array = Any
OpLike = Union[
    Op,
    Literal["sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "land", "lor", "lxor"],
]
# None, or a CUDA stream object: torch.cuda.Stream, cupy.cuda.Stream, or one
# with __cuda_stream__().
StreamLike = Any
Counts = Sequence[int]
BytesLike = Union[bytes, bytearray, memoryview]
SendBuf = Union[Array, _InPlaceType]

class Request:
    """A nonblocking collective in flight; keeps its arrays alive until complete."""

    def wait(self) -> Optional[Array]: ...
    def test(self) -> bool: ...
    @property
    def done(self) -> bool: ...

class Communicator:
    """A Chorus communicator over an mpi4py communicator (same MPI), or MPI_COMM_WORLD."""

    def __init__(self, comm: Any = None) -> None: ...
    @staticmethod
    def from_oob(
        rank: int, size: int, allgather: Callable[[bytes], Union[Sequence[BytesLike], BytesLike]]
    ) -> Communicator: ...
    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def set_label(self, label: Optional[str]) -> None: ...
    def register(self, array: Array) -> None: ...
    def deregister(self, array: Array) -> None: ...
    def __enter__(self) -> Communicator: ...
    def __exit__(self, *args: object) -> None: ...
    def allreduce(
        self, sendbuf: SendBuf, recvbuf: Optional[Array] = None, op: OpLike = Op.SUM, *, stream: StreamLike = None
    ) -> Array: ...
    def iallreduce(
        self, sendbuf: SendBuf, recvbuf: Optional[Array] = None, op: OpLike = Op.SUM, *, stream: StreamLike = None
    ) -> Request: ...
    def broadcast(
        self, sendbuf: SendBuf, recvbuf: Optional[Array] = None, root: int = 0, *, stream: StreamLike = None
    ) -> Array: ...
    def ibroadcast(
        self, sendbuf: SendBuf, recvbuf: Optional[Array] = None, root: int = 0, *, stream: StreamLike = None
    ) -> Request: ...
    def reduce(
        self,
        sendbuf: SendBuf,
        recvbuf: Optional[Array] = None,
        op: OpLike = Op.SUM,
        root: int = 0,
        *,
        stream: StreamLike = None,
    ) -> Optional[Array]: ...
    def ireduce(
        self,
        sendbuf: SendBuf,
        recvbuf: Optional[Array] = None,
        op: OpLike = Op.SUM,
        root: int = 0,
        *,
        stream: StreamLike = None,
    ) -> Request: ...
    def reduce_scatter(
        self, sendbuf: SendBuf, recvbuf: Array, op: OpLike = Op.SUM, *, stream: StreamLike = None
    ) -> Array: ...
    def ireduce_scatter(
        self, sendbuf: SendBuf, recvbuf: Array, op: OpLike = Op.SUM, *, stream: StreamLike = None
    ) -> Request: ...
    def reduce_scatterv(
        self, sendbuf: SendBuf, recvbuf: Array, recvcounts: Counts, op: OpLike = Op.SUM, *, stream: StreamLike = None
    ) -> Array: ...
    def ireduce_scatterv(
        self, sendbuf: SendBuf, recvbuf: Array, recvcounts: Counts, op: OpLike = Op.SUM, *, stream: StreamLike = None
    ) -> Request: ...
    def allgather(self, sendbuf: SendBuf, recvbuf: Array, *, stream: StreamLike = None) -> Array: ...
    def iallgather(self, sendbuf: SendBuf, recvbuf: Array, *, stream: StreamLike = None) -> Request: ...
    def allgatherv(
        self,
        sendbuf: SendBuf,
        recvbuf: Array,
        recvcounts: Counts,
        displs: Optional[Counts] = None,
        *,
        stream: StreamLike = None,
    ) -> Array: ...
    def iallgatherv(
        self,
        sendbuf: SendBuf,
        recvbuf: Array,
        recvcounts: Counts,
        displs: Optional[Counts] = None,
        *,
        stream: StreamLike = None,
    ) -> Request: ...
    def alltoall(self, sendbuf: SendBuf, recvbuf: Optional[Array] = None, *, stream: StreamLike = None) -> Array: ...
    def ialltoall(
        self, sendbuf: SendBuf, recvbuf: Optional[Array] = None, *, stream: StreamLike = None
    ) -> Request: ...
    def alltoallv(
        self,
        sendbuf: SendBuf,
        recvbuf: Array,
        sendcounts: Optional[Counts],
        recvcounts: Counts,
        sdispls: Optional[Counts] = None,
        rdispls: Optional[Counts] = None,
        *,
        stream: StreamLike = None,
    ) -> Array: ...
    def ialltoallv(
        self,
        sendbuf: SendBuf,
        recvbuf: Array,
        sendcounts: Optional[Counts],
        recvcounts: Counts,
        sdispls: Optional[Counts] = None,
        rdispls: Optional[Counts] = None,
        *,
        stream: StreamLike = None,
    ) -> Request: ...
    def gather(
        self, sendbuf: SendBuf, recvbuf: Optional[Array] = None, root: int = 0, *, stream: StreamLike = None
    ) -> Optional[Array]: ...
    def igather(
        self, sendbuf: SendBuf, recvbuf: Optional[Array] = None, root: int = 0, *, stream: StreamLike = None
    ) -> Request: ...
    def gatherv(
        self,
        sendbuf: SendBuf,
        recvbuf: Optional[Array] = None,
        recvcounts: Optional[Counts] = None,
        displs: Optional[Counts] = None,
        root: int = 0,
        *,
        stream: StreamLike = None,
    ) -> Optional[Array]: ...
    def igatherv(
        self,
        sendbuf: SendBuf,
        recvbuf: Optional[Array] = None,
        recvcounts: Optional[Counts] = None,
        displs: Optional[Counts] = None,
        root: int = 0,
        *,
        stream: StreamLike = None,
    ) -> Request: ...
    def scatter(
        self, sendbuf: Optional[Array], recvbuf: Union[Array, _InPlaceType], root: int = 0, *, stream: StreamLike = None
    ) -> Array: ...
    def iscatter(
        self, sendbuf: Optional[Array], recvbuf: Union[Array, _InPlaceType], root: int = 0, *, stream: StreamLike = None
    ) -> Request: ...
    def scatterv(
        self,
        sendbuf: Optional[Array],
        recvbuf: Union[Array, _InPlaceType],
        sendcounts: Optional[Counts] = None,
        displs: Optional[Counts] = None,
        root: int = 0,
        *,
        stream: StreamLike = None,
    ) -> Array: ...
    def iscatterv(
        self,
        sendbuf: Optional[Array],
        recvbuf: Union[Array, _InPlaceType],
        sendcounts: Optional[Counts] = None,
        displs: Optional[Counts] = None,
        root: int = 0,
        *,
        stream: StreamLike = None,
    ) -> Request: ...
    def barrier(self, *, stream: StreamLike = None) -> None: ...
    def ibarrier(self, *, stream: StreamLike = None) -> Request: ...

def has_cuda() -> bool: ...
def _mapped_bytes(nbytes: int) -> Any: ...
def setting(name: str) -> str: ...
def _shutdown() -> None: ...
def _initialized_mpi() -> bool: ...
def _mpi_world(root_info: str) -> tuple[int, int, int, int, str]: ...
