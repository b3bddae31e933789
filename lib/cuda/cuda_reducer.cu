// Device reductions with the host reducer's results, bit for bit.
//
// Every element is computed with the operators of ops.h and the conversions
// of half.h (float16 and bfloat16 in float, rounded to nearest even once per
// operation), never with CUDA's own half intrinsics. Floating-point
// arithmetic is IEEE on both sides (no fast math, no contraction), with one
// difference this file removes: a GPU gives every NaN that arithmetic
// produces one canonical encoding, where x86 (the host reducer) returns the
// NaN operand, quieted, or for an invalid operation such as inf - inf the
// "default NaN" (sign set, empty payload). The device code applies the x86
// rule to NaN results of SUM, PROD and the AVG division. When both operands
// are NaN, x86 returns the first source operand's, whichever the compiler
// made that; the host reducer therefore picks a's explicitly, and so does the
// device.
//
// Layout: one kernel per (operator, type); the launcher picks one of three
// access modes from the pointers:
//   Vector  all pointers equally placed modulo 16 bytes: a scalar head up to
//           the first 16-byte boundary, 16-byte loads and stores, a scalar
//           tail;
//   Scalar  each pointer aligned to its element size, otherwise unrelated;
//   Bytes   some pointer not even aligned to its element size.
// Each element is read and written by one thread, reads first, so dst may be
// exactly a or b (no __restrict__, no read-only cache loads).
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "cuda/cuda_runtime_api.h"
#include "reduce/half.h"
#include "reduce/ops.h"
#include "base/error.h"

namespace chorus {
namespace gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 2048 / kThreads;  // one full wave of resident threads

enum Mode : int { kVector = 0, kScalar = 1, kBytes = 2 };

// ---------------------------------------------------------------------------
// Element operations.

template <typename C>
struct NanBits;
template <>
struct NanBits<float> {
    __device__ static float quiet(float v) { return __uint_as_float(__float_as_uint(v) | 0x00400000u); }
    __device__ static float default_nan() { return __uint_as_float(0xffc00000u); }
};
template <>
struct NanBits<double> {
    __device__ static double quiet(double v) {
        return __longlong_as_double(__double_as_longlong(v) | 0x0008000000000000ll);
    }
    __device__ static double default_nan() {
        return __longlong_as_double(static_cast<long long>(0xfff8000000000000ull));
    }
};

// The NaN x86 gives for `x op y` when the result r is NaN.
template <typename C>
__device__ __forceinline__ C x86_nan(C r, C x, C y) {
    if (r == r) return r;
    if (x != x) return NanBits<C>::quiet(x);
    if (y != y) return NanBits<C>::quiet(y);
    return NanBits<C>::default_nan();
}

// Operators whose floating result is computed (not selected from an operand).
template <typename Op>
constexpr bool kArithmetic = std::is_same<Op, OpSum>::value || std::is_same<Op, OpProd>::value;

template <typename Op, typename T>
__device__ __forceinline__ T elem_reduce(T a, T b) {
    using A = ElemArith<T>;
    using C = typename A::Calc;
    if constexpr (std::is_floating_point<C>::value && kArithmetic<Op>) {
        const C x = A::load(a), y = A::load(b);
        return A::store(x86_nan(Op::template calc<C>(x, y), x, y));
    } else {
        return reduce_elem<Op, T>(a, b);
    }
}

template <typename T>
__device__ __forceinline__ T elem_divide(T v, int divisor) {
    using A = ElemArith<T>;
    using C = typename A::Calc;
    if constexpr (std::is_floating_point<C>::value) {
        const C x = A::load(v), k = static_cast<C>(divisor);
        return A::store(x86_nan(x / k, x, k));
    } else {
        return divide_elem<T>(v, divisor);
    }
}

// ---------------------------------------------------------------------------
// Kernels.

template <typename T>
struct Pack {
    static constexpr int N = 16 / sizeof(T);
    union {
        uint4 v;
        T e[N];
    };
};

template <typename T>
__device__ __forceinline__ T load_bytes(const void* base, size_t i) {
    T v;
    memcpy(&v, static_cast<const unsigned char*>(base) + i * sizeof(T), sizeof(T));
    return v;
}

template <typename T>
__device__ __forceinline__ void store_bytes(void* base, size_t i, T v) {
    memcpy(static_cast<unsigned char*>(base) + i * sizeof(T), &v, sizeof(T));
}

template <typename Op, typename T>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(T* d, const T* a, const T* b, size_t n, int mode, size_t head) {
    const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    if (mode == kVector) {
        constexpr int N = Pack<T>::N;
        const size_t nvec = (n - head) / N;
        const size_t tail = head + nvec * N;
        if (tid < head) d[tid] = elem_reduce<Op, T>(a[tid], b[tid]);
        if (tid < n - tail) d[tail + tid] = elem_reduce<Op, T>(a[tail + tid], b[tail + tid]);
        const uint4* va = reinterpret_cast<const uint4*>(a + head);
        const uint4* vb = reinterpret_cast<const uint4*>(b + head);
        uint4* vd = reinterpret_cast<uint4*>(d + head);
        for (size_t i = tid; i < nvec; i += stride) {
            Pack<T> x, y, r;
            x.v = va[i];
            y.v = vb[i];
#pragma unroll
            for (int j = 0; j < N; ++j) r.e[j] = elem_reduce<Op, T>(x.e[j], y.e[j]);
            vd[i] = r.v;
        }
    } else if (mode == kScalar) {
        for (size_t i = tid; i < n; i += stride) d[i] = elem_reduce<Op, T>(a[i], b[i]);
    } else {
        for (size_t i = tid; i < n; i += stride)
            store_bytes<T>(d, i, elem_reduce<Op, T>(load_bytes<T>(a, i), load_bytes<T>(b, i)));
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) divide_kernel(T* d, size_t n, int divisor, int mode, size_t head) {
    const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    if (mode == kVector) {
        constexpr int N = Pack<T>::N;
        const size_t nvec = (n - head) / N;
        const size_t tail = head + nvec * N;
        if (tid < head) d[tid] = elem_divide<T>(d[tid], divisor);
        if (tid < n - tail) d[tail + tid] = elem_divide<T>(d[tail + tid], divisor);
        uint4* vd = reinterpret_cast<uint4*>(d + head);
        for (size_t i = tid; i < nvec; i += stride) {
            Pack<T> x;
            x.v = vd[i];
#pragma unroll
            for (int j = 0; j < N; ++j) x.e[j] = elem_divide<T>(x.e[j], divisor);
            vd[i] = x.v;
        }
    } else if (mode == kScalar) {
        for (size_t i = tid; i < n; i += stride) d[i] = elem_divide<T>(d[i], divisor);
    } else {
        for (size_t i = tid; i < n; i += stride) store_bytes<T>(d, i, elem_divide<T>(load_bytes<T>(d, i), divisor));
    }
}

// ---------------------------------------------------------------------------
// Launch geometry.

void check_launch(const char* what) {
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        fail(CHORUS_ERR_CUDA, what, ": ", cudaGetErrorString(err), " (CUDA error ", static_cast<int>(err), ")");
}

// Blocks for `work` items: enough for one item per thread, at most one full
// wave of the current device (grid-stride loops do the rest).
unsigned grid_for(size_t work) {
    constexpr int kMaxDevices = 64;
    static std::atomic<int> sms_of[kMaxDevices];  // zero: not asked yet
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < kMaxDevices)
        sms = sms_of[dev].load(std::memory_order_relaxed);
    if (sms == 0) {
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0) {
            (void)cudaGetLastError();
            sms = 16;
        }
        if (dev >= 0 && dev < kMaxDevices) sms_of[dev].store(sms, std::memory_order_relaxed);
    }
    const size_t cap = static_cast<size_t>(sms) * kBlocksPerSm;
    size_t blocks = (work + kThreads - 1) / kThreads;
    if (blocks < 1) blocks = 1;
    return static_cast<unsigned>(blocks < cap ? blocks : cap);
}

// The access mode for pointers ps (all of element type T), and in vector
// mode the number of elements before the first 16-byte boundary.
template <typename T, size_t K>
Mode pick_mode(const std::array<uintptr_t, K>& ps, size_t n, size_t* head) {
    *head = 0;
    for (uintptr_t p : ps)
        if (p % alignof(T) != 0) return kBytes;
    const uintptr_t off = ps[0] % 16;
    for (uintptr_t p : ps)
        if (p % 16 != off) return kScalar;
    const size_t h = ((16 - off) % 16) / sizeof(T);
    *head = h < n ? h : n;
    return kVector;
}

template <typename Op, typename T>
void launch_reduce(void* d, const void* a, const void* b, size_t n, cudaStream_t s) {
    size_t head = 0;
    const std::array<uintptr_t, 3> ps = {reinterpret_cast<uintptr_t>(d), reinterpret_cast<uintptr_t>(a),
                                         reinterpret_cast<uintptr_t>(b)};
    const Mode mode = pick_mode<T>(ps, n, &head);
    const size_t work = mode == kVector ? (n - head) / Pack<T>::N + Pack<T>::N : n;
    reduce_kernel<Op, T><<<grid_for(work), kThreads, 0, s>>>(static_cast<T*>(d), static_cast<const T*>(a),
                                                             static_cast<const T*>(b), n, mode, head);
    check_launch("reduce kernel launch");
}

template <typename T>
void launch_divide(void* d, size_t n, int divisor, cudaStream_t s) {
    size_t head = 0;
    const std::array<uintptr_t, 1> ps = {reinterpret_cast<uintptr_t>(d)};
    const Mode mode = pick_mode<T>(ps, n, &head);
    const size_t work = mode == kVector ? (n - head) / Pack<T>::N + Pack<T>::N : n;
    divide_kernel<T><<<grid_for(work), kThreads, 0, s>>>(static_cast<T*>(d), n, divisor, mode, head);
    check_launch("divide kernel launch");
}

// ---------------------------------------------------------------------------
// Dispatch tables, indexed by chorus_datatype_t and chorus_op_t. A new
// operator needs its OpFor<> specialization in ops.h (and, if it is not for
// integer types only, a line in pair_supported); the tables follow.

template <int DT>
struct TypeOf;
template <>
struct TypeOf<CHORUS_INT8> {
    using type = int8_t;
};
template <>
struct TypeOf<CHORUS_UINT8> {
    using type = uint8_t;
};
template <>
struct TypeOf<CHORUS_INT16> {
    using type = int16_t;
};
template <>
struct TypeOf<CHORUS_UINT16> {
    using type = uint16_t;
};
template <>
struct TypeOf<CHORUS_INT32> {
    using type = int32_t;
};
template <>
struct TypeOf<CHORUS_UINT32> {
    using type = uint32_t;
};
template <>
struct TypeOf<CHORUS_INT64> {
    using type = int64_t;
};
template <>
struct TypeOf<CHORUS_UINT64> {
    using type = uint64_t;
};
template <>
struct TypeOf<CHORUS_FLOAT16> {
    using type = Half;
};
template <>
struct TypeOf<CHORUS_BFLOAT16> {
    using type = BFloat16;
};
template <>
struct TypeOf<CHORUS_FLOAT32> {
    using type = float;
};
template <>
struct TypeOf<CHORUS_FLOAT64> {
    using type = double;
};

// The same rule as op_supported (reduce/datatype.cc): the arithmetic operators
// on every type, the rest on integer types only.
template <typename T>
constexpr bool pair_supported(int op) {
    return op <= CHORUS_AVG || std::is_integral<T>::value;
}

using ReduceLaunch = void (*)(void*, const void*, const void*, size_t, cudaStream_t);
using DivideLaunch = void (*)(void*, size_t, int, cudaStream_t);

template <int DT, int OP>
constexpr ReduceLaunch reduce_entry() {
    using T = typename TypeOf<DT>::type;
    if constexpr (pair_supported<T>(OP))
        return &launch_reduce<typename OpFor<static_cast<chorus_op_t>(OP)>::type, T>;
    else
        return nullptr;
}

template <int DT, size_t... OPS>
constexpr std::array<ReduceLaunch, CHORUS_NUM_OPS> reduce_row(std::index_sequence<OPS...>) {
    return {{reduce_entry<DT, static_cast<int>(OPS)>()...}};
}

template <size_t... DTS>
constexpr std::array<std::array<ReduceLaunch, CHORUS_NUM_OPS>, CHORUS_NUM_DATATYPES> reduce_table(
    std::index_sequence<DTS...>) {
    return {{reduce_row<static_cast<int>(DTS)>(std::make_index_sequence<CHORUS_NUM_OPS>())...}};
}

template <int DT>
constexpr DivideLaunch divide_entry() {
    return &launch_divide<typename TypeOf<DT>::type>;
}

template <size_t... DTS>
constexpr std::array<DivideLaunch, CHORUS_NUM_DATATYPES> divide_table(std::index_sequence<DTS...>) {
    return {{divide_entry<static_cast<int>(DTS)>()...}};
}

constexpr auto kReduce = reduce_table(std::make_index_sequence<CHORUS_NUM_DATATYPES>());
constexpr auto kDivide = divide_table(std::make_index_sequence<CHORUS_NUM_DATATYPES>());

void require(const char* what) {
    std::string why;
    if (!available(&why)) fail(CHORUS_ERR_CUDA, what, ": no usable GPU: ", why);
}

}  // namespace

void reduce_async(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count,
                  void* stream) {
    require("reduce_async");
    const int idt = static_cast<int>(dt), iop = static_cast<int>(op);
    if (idt < 0 || idt >= CHORUS_NUM_DATATYPES || iop < 0 || iop >= CHORUS_NUM_OPS)
        fail(CHORUS_ERR_INVALID_ARGUMENT, "reduce_async: invalid datatype ", static_cast<int>(dt), " or op ",
             static_cast<int>(op));
    const ReduceLaunch launch = kReduce[idt][iop];
    if (!launch)
        fail(CHORUS_ERR_UNSUPPORTED, "reduce_async: op ", static_cast<int>(op), " is not defined on datatype ",
             static_cast<int>(dt));
    if (count == 0) return;
    launch(dst, a, b, count, static_cast<cudaStream_t>(stream));
}

void divide_async(chorus_datatype_t dt, void* dst, size_t count, int divisor, void* stream) {
    require("divide_async");
    const int idt = static_cast<int>(dt);
    if (idt < 0 || idt >= CHORUS_NUM_DATATYPES)
        fail(CHORUS_ERR_INVALID_ARGUMENT, "divide_async: invalid datatype ", idt);
    if (divisor < 1) fail(CHORUS_ERR_INVALID_ARGUMENT, "divide_async: divisor ", divisor, " is below 1");
    // x / 1 == x for every type; skipping also leaves NaN payloads alone, as
    // host_divide does.
    if (count == 0 || divisor == 1) return;
    kDivide[idt](dst, count, divisor, static_cast<cudaStream_t>(stream));
}

}  // namespace gpu
}  // namespace chorus
