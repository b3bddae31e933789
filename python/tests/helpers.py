"""What the tests share: per-rank inputs, NumPy references, bfloat16 through
DLPack, and the cross-rank bit-identity check."""

from __future__ import annotations

import ctypes
import functools
import zlib
from dataclasses import dataclass

import numpy as np

import chorus

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
DTYPES = INTS + FLOATS
OPS = ["sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "land", "lor", "lxor"]
BITWISE = {"band", "bor", "bxor", "land", "lor", "lxor"}

# ---- bfloat16 through DLPack ----------------------------------------------
# NumPy has no bfloat16: its bits are kept in a uint16 array and exported
# through a hand-made DLPack capsule that names the type (code 4, 16 bits).


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_CAPSULE_NAME = b"dltensor"


class DLPackView:
    """`storage` (a C-contiguous NumPy array) exported through DLPack as
    another element type or device. The consumer gets no deleter: this
    object owns the tensor and is kept alive by it."""

    def __init__(self, storage: np.ndarray, code: int, bits: int, device_type: int = 1):
        assert storage.flags.c_contiguous
        self.storage = storage
        itemsize = bits // 8
        self._shape = (ctypes.c_int64 * max(storage.ndim, 1))(*storage.shape)
        strides = [s // itemsize for s in storage.strides]
        self._strides = (ctypes.c_int64 * max(storage.ndim, 1))(*strides)
        self._managed = _DLManagedTensor()
        t = self._managed.dl_tensor
        t.data = storage.ctypes.data
        t.device = _DLDevice(device_type, 0)
        t.ndim = storage.ndim
        t.dtype = _DLDataType(code, bits, 1)
        t.shape = self._shape
        t.strides = self._strides
        t.byte_offset = 0

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return _capsule_new(ctypes.addressof(self._managed), _CAPSULE_NAME, None)

    def __dlpack_device__(self):
        return (self._managed.dl_tensor.device.device_type, 0)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, rounded to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


# ---- buffers ---------------------------------------------------------------


@dataclass
class Buf:
    """An array for Chorus (`arg`) and its storage for checks (`np`)."""

    dtype: str
    np: np.ndarray
    arg: object

    def values(self) -> np.ndarray:
        """The elements as numbers (bfloat16 as float32)."""
        return bf16_value(self.np) if self.dtype == "bfloat16" else self.np


def wrap(dtype: str, storage: np.ndarray) -> Buf:
    if dtype == "bfloat16":
        return Buf(dtype, storage, DLPackView(storage, code=4, bits=16))
    return Buf(dtype, storage, storage)


def storage_dtype(dtype: str) -> np.dtype:
    return np.dtype(np.uint16) if dtype == "bfloat16" else np.dtype(dtype)


def empty(dtype: str, n: int, fill: int = 0x5A) -> Buf:
    """A result buffer, filled with a byte pattern so unwritten parts show."""
    storage = np.full(n * storage_dtype(dtype).itemsize, fill, dtype=np.uint8).view(storage_dtype(dtype))
    return wrap(dtype, storage)


def seed_of(*key: object) -> int:
    return zlib.crc32(repr(key).encode())


def values(dtype: str, n: int, seed: int, op: str = "sum") -> Buf:
    """Rank inputs. Integers over their whole range (sums and products wrap);
    floats with full mantissas (sums round, so order matters), near 1 for
    products so they neither overflow nor vanish."""
    rng = np.random.default_rng(seed)
    if dtype in INTS:
        info = np.iinfo(dtype)
        if op in ("land", "lor", "lxor"):
            x = rng.integers(0, 3, n).astype(dtype)  # zeros are the point
        else:
            x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        return wrap(dtype, x)
    f = 1.0 + 0.2 * rng.standard_normal(n) if op == "prod" else rng.standard_normal(n) * 3.0
    if dtype == "bfloat16":
        return wrap(dtype, bf16_bits(f))
    return wrap(dtype, f.astype(dtype))


def rank_inputs(dtype: str, n: int, size: int, key: tuple, op: str = "sum") -> list[Buf]:
    return [values(dtype, n, seed_of(*key, r), op) for r in range(size)]


# ---- references ------------------------------------------------------------


def reduce_ref(bufs: list[Buf], op: str) -> np.ndarray:
    """The reduction of the ranks' inputs: exact for integers (wrapping, as
    NumPy's elementwise ops on arrays do), float64 for floating types."""
    dtype = bufs[0].dtype
    if dtype in INTS:
        xs = [b.np for b in bufs]
        if op in ("sum", "avg"):
            s = functools.reduce(np.add, xs)
            if op == "sum":
                return s
            # C's division: truncation toward zero, of the wrapped sum.
            q = [(-(-int(v) // len(xs)) if v < 0 else int(v) // len(xs)) for v in s.tolist()]
            return np.array(q, dtype=dtype)
        if op in ("land", "lor", "lxor"):
            fn = {"land": np.logical_and, "lor": np.logical_or, "lxor": np.logical_xor}[op]
            return functools.reduce(fn, [x != 0 for x in xs]).astype(dtype)
        fn = {
            "prod": np.multiply,
            "min": np.minimum,
            "max": np.maximum,
            "band": np.bitwise_and,
            "bor": np.bitwise_or,
            "bxor": np.bitwise_xor,
        }[op]
        return functools.reduce(fn, xs)
    xs = [b.values().astype(np.float64) for b in bufs]
    fn = {"sum": np.add, "avg": np.add, "prod": np.multiply, "min": np.fmin, "max": np.fmax}[op]
    r = functools.reduce(fn, xs)
    return r / len(xs) if op == "avg" else r


EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def check_reduction(result: Buf, bufs: list[Buf], op: str) -> None:
    ref = reduce_ref(bufs, op)
    if result.dtype in INTS:
        np.testing.assert_array_equal(result.np, ref)
        return
    got = result.values().astype(np.float64)
    n = len(bufs)
    eps = EPS[result.dtype]
    if op in ("min", "max"):
        tol = np.zeros_like(ref)
    elif op == "prod":
        tol = 2 * n * eps * np.abs(ref)
    else:
        # Each of the n-1 additions (and the division) rounds once.
        mag = sum(np.abs(x.astype(np.float64)) for x in (b.values() for b in bufs))
        tol = n * eps * (mag / (n if op == "avg" else 1) + np.abs(ref))
    err = np.abs(got - ref)
    assert np.all(err <= tol), f"{op} on {result.dtype}: max error {err.max()} beyond tolerance {tol[err.argmax()]}"


def assert_identical(comm: chorus.Communicator, arr: np.ndarray) -> None:
    """Every rank holds these exact bytes."""
    mine = np.array([zlib.crc32(np.ascontiguousarray(arr).tobytes()), arr.nbytes], dtype=np.uint64)
    every = np.zeros(2 * comm.size, dtype=np.uint64)
    comm.allgather(mine, every)
    assert np.all(every.reshape(comm.size, 2) == mine), "results differ between ranks"


def complete(result):
    """A Request's result, or the blocking call's."""
    return result.wait() if isinstance(result, chorus.Request) else result
