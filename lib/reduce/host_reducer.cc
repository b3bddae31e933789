// Host reduction kernels. Each (datatype, op) pair gets its own tight loop,
// picked once per call from a table. The loops are plain element-wise code
// that the compiler vectorizes; on x86-64 with GCC each kernel is also built
// for AVX2 and AVX-512 (function multi-versioning), and the best version the
// CPU supports is chosen at load time, so the library needs no -march flag.
//
// Aliasing: dst may be exactly a and/or b. Each case has its own loop whose
// pointers are all distinct, so every loop can use __restrict legitimately
// (two read-only pointers may still refer to the same memory).
#include "reduce/host_reducer.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "reduce/half.h"
#include "reduce/ops.h"

#if defined(__x86_64__)
#include <emmintrin.h>  // SSE2 streaming stores: part of every x86-64 CPU
#define CHORUS_STREAMING_STORES 1
#else
#define CHORUS_STREAMING_STORES 0
#endif

// x86-64-v4 is AVX-512 F/BW/DQ/VL (BW and VL matter for the 8- and 16-bit
// types); plain "avx512f" would leave those to 256-bit code. The ops contain
// no multiply-add pattern, so FMA contraction cannot make versions differ.
// Not under ThreadSanitizer: the versions are chosen by IFUNC resolvers that
// run while the program is being loaded, before its runtime is ready.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__) && !defined(__SANITIZE_THREAD__)
#define CHORUS_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define CHORUS_MULTIVERSION
#endif

#if defined(__GNUC__)
#define CHORUS_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define CHORUS_ALWAYS_INLINE inline
#endif

namespace chorus {
namespace {

// ---------------------------------------------------------------------------
// Which NaN a floating SUM or PROD gives. x86 returns the NaN operand,
// quieted, and the first source operand's when both are NaN; but the
// compiler may swap the operands of a floating + or *, and does so
// differently in different loops (the vector body and the scalar tail, in
// place or not). The payload that wins between two NaNs would then depend on
// the buffers' aliasing and on where the element falls in its piece, and two
// ranks that compute the same element (recursive doubling's partners) would
// disagree. So a's NaN wins explicitly, as in the device kernels
// (lib/cuda/cuda_reducer.cu): a NaN a is combined with itself (a op a is a,
// quieted). With one NaN operand, or none (inf - inf, 0 * inf: the default
// NaN), the order never mattered.

// a when it is a NaN, else b; on the bits for the 16-bit types, which keeps
// their loops vectorized.
CHORUS_ALWAYS_INLINE float nan_or(float a, float b) {
    return a != a ? a : b;
}
CHORUS_ALWAYS_INLINE double nan_or(double a, double b) {
    return a != a ? a : b;
}
template <typename T>
CHORUS_ALWAYS_INLINE T nan_or_bits(T a, T b, uint16_t inf) {
    const uint16_t take_a = static_cast<uint16_t>(0u - static_cast<unsigned>((a.bits & 0x7fffu) > inf));
    return T{static_cast<uint16_t>((a.bits & take_a) | (b.bits & ~take_a))};
}
CHORUS_ALWAYS_INLINE Half nan_or(Half a, Half b) {
    return nan_or_bits(a, b, 0x7c00u);
}
CHORUS_ALWAYS_INLINE BFloat16 nan_or(BFloat16 a, BFloat16 b) {
    return nan_or_bits(a, b, 0x7f80u);
}

template <typename Op, typename T>
CHORUS_ALWAYS_INLINE T host_elem(T a, T b) {
    using C = typename ElemArith<T>::Calc;
    if constexpr (std::is_floating_point<C>::value &&
                  (std::is_same<Op, OpSum>::value || std::is_same<Op, OpProd>::value)) {
        return reduce_elem<Op, T>(a, nan_or(a, b));
    } else {
        return reduce_elem<Op, T>(a, b);
    }
}

// ---------------------------------------------------------------------------
// Loop bodies, inlined into each multi-versioned kernel below so that every
// ISA version gets its own vectorization of the loop.

template <typename Op, typename T>
CHORUS_ALWAYS_INLINE void loop_separate(T* __restrict d, const T* __restrict a, const T* __restrict b, size_t n) {
    for (size_t i = 0; i < n; ++i) d[i] = host_elem<Op, T>(a[i], b[i]);
}

template <typename Op, typename T>
CHORUS_ALWAYS_INLINE void loop_dst_is_a(T* __restrict d, const T* __restrict b, size_t n) {
    for (size_t i = 0; i < n; ++i) d[i] = host_elem<Op, T>(d[i], b[i]);
}

template <typename Op, typename T>
CHORUS_ALWAYS_INLINE void loop_dst_is_b(T* __restrict d, const T* __restrict a, size_t n) {
    for (size_t i = 0; i < n; ++i) d[i] = host_elem<Op, T>(a[i], d[i]);
}

template <typename Op, typename T>
CHORUS_ALWAYS_INLINE void loop_dst_is_both(T* __restrict d, size_t n) {
    for (size_t i = 0; i < n; ++i) d[i] = host_elem<Op, T>(d[i], d[i]);
}

template <typename T>
CHORUS_ALWAYS_INLINE void loop_divide(T* __restrict d, size_t n, int divisor) {
    for (size_t i = 0; i < n; ++i) d[i] = divide_elem<T>(d[i], divisor);
}

// ---------------------------------------------------------------------------
// Non-template kernels (GCC cannot apply target_clones to templates).

using ReduceFn = void (*)(void* d, const void* a, const void* b, size_t n);
using DivideFn = void (*)(void* d, size_t n, int divisor);

struct ReduceKernels {
    ReduceFn separate;     // d, a, b pairwise distinct (a == b allowed)
    ReduceFn dst_is_a;     // d == a, b distinct
    ReduceFn dst_is_b;     // d == b, a distinct
    ReduceFn dst_is_both;  // d == a == b
};

#define CHORUS_REDUCE_KERNELS(NAME, T, OP)                                                               \
    CHORUS_MULTIVERSION void NAME##_separate(void* d, const void* a, const void* b, size_t n) {          \
        loop_separate<OP, T>(static_cast<T*>(d), static_cast<const T*>(a), static_cast<const T*>(b), n); \
    }                                                                                                    \
    CHORUS_MULTIVERSION void NAME##_dst_is_a(void* d, const void*, const void* b, size_t n) {            \
        loop_dst_is_a<OP, T>(static_cast<T*>(d), static_cast<const T*>(b), n);                           \
    }                                                                                                    \
    CHORUS_MULTIVERSION void NAME##_dst_is_b(void* d, const void* a, const void*, size_t n) {            \
        loop_dst_is_b<OP, T>(static_cast<T*>(d), static_cast<const T*>(a), n);                           \
    }                                                                                                    \
    CHORUS_MULTIVERSION void NAME##_dst_is_both(void* d, const void*, const void*, size_t n) {           \
        loop_dst_is_both<OP, T>(static_cast<T*>(d), n);                                                  \
    }                                                                                                    \
    const ReduceKernels NAME = {NAME##_separate, NAME##_dst_is_a, NAME##_dst_is_b, NAME##_dst_is_both};

#define CHORUS_TYPE_KERNELS(TN, T)                                   \
    CHORUS_REDUCE_KERNELS(TN##_sum, T, OpSum)                        \
    CHORUS_REDUCE_KERNELS(TN##_prod, T, OpProd)                      \
    CHORUS_REDUCE_KERNELS(TN##_min, T, OpMin)                        \
    CHORUS_REDUCE_KERNELS(TN##_max, T, OpMax)                        \
    CHORUS_MULTIVERSION void TN##_divide(void* d, size_t n, int k) { \
        loop_divide<T>(static_cast<T*>(d), n, k);                    \
    }

// Integer types also get the bitwise and logical operators.
#define CHORUS_INT_TYPE_KERNELS(TN, T)          \
    CHORUS_TYPE_KERNELS(TN, T)                  \
    CHORUS_REDUCE_KERNELS(TN##_band, T, OpBand) \
    CHORUS_REDUCE_KERNELS(TN##_bor, T, OpBor)   \
    CHORUS_REDUCE_KERNELS(TN##_bxor, T, OpBxor) \
    CHORUS_REDUCE_KERNELS(TN##_land, T, OpLand) \
    CHORUS_REDUCE_KERNELS(TN##_lor, T, OpLor)   \
    CHORUS_REDUCE_KERNELS(TN##_lxor, T, OpLxor)

CHORUS_INT_TYPE_KERNELS(i8, int8_t)
CHORUS_INT_TYPE_KERNELS(u8, uint8_t)
CHORUS_INT_TYPE_KERNELS(i16, int16_t)
CHORUS_INT_TYPE_KERNELS(u16, uint16_t)
CHORUS_INT_TYPE_KERNELS(i32, int32_t)
CHORUS_INT_TYPE_KERNELS(u32, uint32_t)
CHORUS_INT_TYPE_KERNELS(i64, int64_t)
CHORUS_INT_TYPE_KERNELS(u64, uint64_t)
CHORUS_TYPE_KERNELS(f16, Half)
CHORUS_TYPE_KERNELS(bf16, BFloat16)
CHORUS_TYPE_KERNELS(f32, float)
CHORUS_TYPE_KERNELS(f64, double)

#undef CHORUS_INT_TYPE_KERNELS
#undef CHORUS_TYPE_KERNELS
#undef CHORUS_REDUCE_KERNELS

constexpr int kNumSlots = 10;  // sum, prod, min, max, band, bor, bxor, land, lor, lxor

struct TypeEntry {
    size_t size;
    ReduceKernels ops[kNumSlots];  // indexed by op_slot(); empty for ops the type lacks
    DivideFn divide;
};

#define CHORUS_INT_ENTRY(TN, T)                                                                                        \
    {                                                                                                                  \
        sizeof(T),                                                                                                     \
            {TN##_sum, TN##_prod, TN##_min, TN##_max, TN##_band, TN##_bor, TN##_bxor, TN##_land, TN##_lor, TN##_lxor}, \
            TN##_divide                                                                                                \
    }
#define CHORUS_FLOAT_ENTRY(TN, T) \
    { sizeof(T), {TN##_sum, TN##_prod, TN##_min, TN##_max}, TN##_divide }

// Indexed by chorus_datatype_t.
const TypeEntry kTypes[CHORUS_NUM_DATATYPES] = {
    CHORUS_INT_ENTRY(i8, int8_t),       CHORUS_INT_ENTRY(u8, uint8_t),   CHORUS_INT_ENTRY(i16, int16_t),
    CHORUS_INT_ENTRY(u16, uint16_t),    CHORUS_INT_ENTRY(i32, int32_t),  CHORUS_INT_ENTRY(u32, uint32_t),
    CHORUS_INT_ENTRY(i64, int64_t),     CHORUS_INT_ENTRY(u64, uint64_t), CHORUS_FLOAT_ENTRY(f16, Half),
    CHORUS_FLOAT_ENTRY(bf16, BFloat16), CHORUS_FLOAT_ENTRY(f32, float),  CHORUS_FLOAT_ENTRY(f64, double),
};

#undef CHORUS_INT_ENTRY
#undef CHORUS_FLOAT_ENTRY

static_assert(CHORUS_INT8 == 0 && CHORUS_UINT8 == 1 && CHORUS_INT16 == 2 && CHORUS_UINT16 == 3 && CHORUS_INT32 == 4 &&
                  CHORUS_UINT32 == 5 && CHORUS_INT64 == 6 && CHORUS_UINT64 == 7 && CHORUS_FLOAT16 == 8 &&
                  CHORUS_BFLOAT16 == 9 && CHORUS_FLOAT32 == 10 && CHORUS_FLOAT64 == 11 && CHORUS_NUM_DATATYPES == 12,
              "kTypes is indexed by chorus_datatype_t");
static_assert(CHORUS_SUM == 0 && CHORUS_PROD == 1 && CHORUS_MIN == 2 && CHORUS_MAX == 3 && CHORUS_AVG == 4 &&
                  CHORUS_BAND == 5 && CHORUS_BOR == 6 && CHORUS_BXOR == 7 && CHORUS_LAND == 8 && CHORUS_LOR == 9 &&
                  CHORUS_LXOR == 10 && CHORUS_NUM_OPS == 11,
              "op_slot assumes the chorus_op_t values");

// AVG reduces as SUM; the ops before it map to themselves, the ones after it
// close the gap.
inline int op_slot(chorus_op_t op) {
    if (op == CHORUS_AVG) return 0;
    return op < CHORUS_AVG ? static_cast<int>(op) : static_cast<int>(op) - 1;
}

// ---------------------------------------------------------------------------
// Large out-of-place results.
//
// An ordinary store first reads the destination line into the cache, so
// d = a op b moves four streams of memory. For results far larger than the
// caches (which will not be in cache for their next use anyway) the
// reduction is done block by block into a small buffer that stays in L1,
// and each block is written out with non-temporal stores: three streams.
// Pipelined collectives reduce chunks far below this threshold, which keep
// the ordinary cached path.

constexpr size_t kStreamingMinBytes = size_t{8} << 20;
constexpr size_t kStreamingBlockBytes = 1024;  // a multiple of 64 and of every element size

#if CHORUS_STREAMING_STORES
// Copy `bytes` with non-temporal stores: the head up to dst's first 64-byte
// boundary and the tail with memcpy, src read unaligned. The caller fences
// (_mm_sfence) before anything that must see the data.
void stream_copy(void* dst, const void* src, size_t bytes) {
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    const size_t misalign = reinterpret_cast<uintptr_t>(d) % 64;
    const size_t head = std::min(bytes, misalign == 0 ? size_t{0} : 64 - misalign);
    std::memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    __m128i* dv = reinterpret_cast<__m128i*>(d);
    const __m128i* sv = reinterpret_cast<const __m128i*>(s);
    const size_t body = bytes / 64 * 64;
    for (size_t i = 0; i < body / 16; i += 4) {
        _mm_stream_si128(dv + i, _mm_loadu_si128(sv + i));
        _mm_stream_si128(dv + i + 1, _mm_loadu_si128(sv + i + 1));
        _mm_stream_si128(dv + i + 2, _mm_loadu_si128(sv + i + 2));
        _mm_stream_si128(dv + i + 3, _mm_loadu_si128(sv + i + 3));
    }
    std::memcpy(d + body, s + body, bytes - body);
}

void reduce_streaming(ReduceFn separate, size_t size, void* dst, const void* a, const void* b, size_t count) {
    char* d = static_cast<char*>(dst);
    const char* pa = static_cast<const char*>(a);
    const char* pb = static_cast<const char*>(b);
    const size_t misalign = reinterpret_cast<uintptr_t>(d) % 64;
    const size_t head_bytes = misalign == 0 ? 0 : 64 - misalign;
    if (head_bytes % size != 0) {  // dst not aligned to its element size: no streaming
        separate(dst, a, b, count);
        return;
    }
    // Ordinary stores up to the first 64-byte boundary of dst.
    const size_t head = head_bytes / size;
    separate(d, pa, pb, head);
    d += head_bytes;
    pa += head_bytes;
    pb += head_bytes;
    size_t left = count - head;

    alignas(64) unsigned char block[kStreamingBlockBytes];
    const size_t per_block = kStreamingBlockBytes / size;
    for (; left >= per_block; left -= per_block) {
        separate(block, pa, pb, per_block);
        stream_copy(d, block, kStreamingBlockBytes);
        d += kStreamingBlockBytes;
        pa += kStreamingBlockBytes;
        pb += kStreamingBlockBytes;
    }
    separate(d, pa, pb, left);
    // Order the streaming stores before anything that follows (a send, a
    // flag another thread polls).
    _mm_sfence();
}
#endif

}  // namespace

void host_copy_stream(void* dst, const void* src, size_t bytes) {
#if CHORUS_STREAMING_STORES
    stream_copy(dst, src, bytes);
    _mm_sfence();
#else
    std::memcpy(dst, src, bytes);
#endif
}

namespace {

// dst = a op b; an out-of-place result of `stream_from` bytes or more is
// written with non-temporal stores.
void reduce_into(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count,
                 [[maybe_unused]] size_t stream_from) {
    if (count == 0) return;
    const TypeEntry& type = kTypes[dt];
    const ReduceKernels& k = type.ops[op_slot(op)];
    if (!k.separate) std::abort();  // an unsupported pair: callers check op_supported first
    if (dst == a) {
        if (dst == b)
            k.dst_is_both(dst, a, b, count);
        else
            k.dst_is_a(dst, a, b, count);
    } else if (dst == b) {
        k.dst_is_b(dst, a, b, count);
    } else {
#if CHORUS_STREAMING_STORES
        if (count * type.size >= stream_from) {
            reduce_streaming(k.separate, type.size, dst, a, b, count);
            return;
        }
#endif
        k.separate(dst, a, b, count);
    }
}

}  // namespace

void host_reduce(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count) {
    reduce_into(dt, op, dst, a, b, count, kStreamingMinBytes);
}

void host_reduce_stream(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count) {
    reduce_into(dt, op, dst, a, b, count, 0);
}

void host_divide(chorus_datatype_t dt, void* dst, size_t count, int divisor) {
    // x / 1 == x for every type; skipping also leaves NaN payloads untouched.
    if (count == 0 || divisor == 1) return;
    kTypes[dt].divide(dst, count, divisor);
}

}  // namespace chorus
