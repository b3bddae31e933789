// IEEE binary16 ("half") and bfloat16 storage types and their conversions to
// and from binary32. The conversions are integer bit manipulation (plus one
// exact int-to-float conversion) written as straight-line selects, so loops
// over them vectorize, and every function is usable from CUDA device code
// as well (CHORUS_HD).
//
// Conversions to the 16-bit formats round to nearest, ties to even. No
// conversion depends on the floating-point environment (rounding mode,
// FTZ/DAZ).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#ifndef CHORUS_HD
#ifdef __CUDACC__
#define CHORUS_HD __host__ __device__
#else
#define CHORUS_HD
#endif
#endif

// Small element-wise helpers are forced inline: the host reducer builds each
// loop for several instruction sets (function multi-versioning), and GCC
// may otherwise decline to inline a generic function into an AVX2/AVX-512
// clone, which would leave a call in the loop and stop vectorization.
#ifndef CHORUS_INLINE
#if defined(__CUDACC__)
#define CHORUS_INLINE __forceinline__
#elif defined(__GNUC__)
#define CHORUS_INLINE inline __attribute__((always_inline))
#else
#define CHORUS_INLINE inline
#endif
#endif

namespace chorus {

// Raw 16-bit storage; no arithmetic is defined on these directly.
struct Half {
    uint16_t bits;
};
struct BFloat16 {
    uint16_t bits;
};

static_assert(sizeof(Half) == 2 && std::is_trivial<Half>::value, "Half must be a trivial 2-byte type");
static_assert(sizeof(BFloat16) == 2 && std::is_trivial<BFloat16>::value, "BFloat16 must be a trivial 2-byte type");

CHORUS_HD CHORUS_INLINE uint32_t float_as_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

CHORUS_HD CHORUS_INLINE float bits_as_float(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}

// binary16 -> binary32. Exact for every input; NaN payloads (and signaling
// NaNs) are carried over unchanged.
CHORUS_HD CHORUS_INLINE float half_to_float(uint16_t h) {
    const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    const uint32_t mag = static_cast<uint32_t>(h) & 0x7fffu;  // exponent and mantissa fields
    // Normal numbers: move the fields into place and rebias the exponent
    // from 15 to 127 (add 112 << 23). Infinity and NaN (exponent 31) need
    // the exponent raised a further 112 to reach 255; the payload is kept.
    uint32_t r = (mag << 13) + 0x38000000u;
    r += mag >= 0x7c00u ? 0x38000000u : 0u;
    // Zero and subnormals: the value is mag * 2^-24. Converting the integer
    // mag to float is exact (mag < 2^10) and normalizes it; lowering the
    // exponent by 24 then scales it. The max() keeps zero at zero.
    uint32_t tiny = float_as_bits(static_cast<float>(static_cast<int32_t>(mag)));
    tiny = (tiny > (24u << 23) ? tiny : (24u << 23)) - (24u << 23);
    // An arithmetic blend rather than ?: so that GCC does not move the
    // conversion under a branch, which would block vectorization.
    const uint32_t is_tiny = 0u - static_cast<uint32_t>(mag < 0x0400u);
    r = (tiny & is_tiny) | (r & ~is_tiny);
    return bits_as_float(r | sign);
}

// binary32 -> binary16, round to nearest even. Values at or beyond 65520
// (the midpoint between the largest half and 2^16) become infinity; results
// below the normal range become subnormals or zero with correct rounding.
// A NaN becomes a quiet NaN with the same sign and the leading payload bits.
CHORUS_HD CHORUS_INLINE uint16_t float_to_half(float f) {
    const uint32_t u = float_as_bits(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;

    // Normal result: rebias the exponent (subtract 112 << 23) and round
    // away the low 13 bits. A carry out of the mantissa correctly bumps the
    // exponent; anything past the half range is clamped to infinity.
    uint32_t normal = (a - 0x38000000u + 0x0fffu + ((a >> 13) & 1u)) >> 13;
    normal = normal < 0x7c00u ? normal : 0x7c00u;

    // Subnormal result (|f| < 2^-14): count units of 2^-24, i.e. round
    // m / 2^s to nearest even, where m is the 24-bit significand and
    // s = 126 - e >= 14. Written as (2m + 2^s - 2 + 2*odd) >> (s + 1) so
    // that every shift count stays within [0, 31]; s is clamped to 30, which
    // already gives zero (as every larger shift would). Binary32 subnormals
    // (e == 0) get a spurious implicit bit, harmless as they round to zero.
    // The per-lane shifts vectorize from AVX2 on; plain SSE2 has none.
    const uint32_t e = a >> 23;
    const uint32_t m = (a & 0x007fffffu) | 0x00800000u;
    uint32_t s = 126u - e;
    s = s < 30u ? s : 30u;
    const uint32_t sub = (m + m + (1u << s) - 2u + (((m >> s) & 1u) << 1)) >> (s + 1u);

    uint32_t r = a < 0x38800000u ? sub : normal;
    // NaN: infinity's bits plus the quiet bit and the leading payload bits.
    r = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x03ffu) : r;
    return static_cast<uint16_t>(r | sign);
}

// bfloat16 -> binary32: the upper half of a binary32. Exact.
CHORUS_HD CHORUS_INLINE float bf16_to_float(uint16_t b) {
    return bits_as_float(static_cast<uint32_t>(b) << 16);
}

// binary32 -> bfloat16, round to nearest even. Finite values that round past
// the largest bfloat16 become infinity; a NaN becomes a quiet NaN (never an
// infinity) with the same sign and the leading payload bits.
CHORUS_HD CHORUS_INLINE uint16_t float_to_bf16(float f) {
    const uint32_t u = float_as_bits(f);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = (u >> 16) | 0x0040u;
    const uint32_t r = (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
    return static_cast<uint16_t>(r);
}

}  // namespace chorus
