// Element-wise reduction operators, defined once for every Chorus datatype
// and shared by the host reducer and (later) device code.
//
//  - Integer SUM and PROD wrap (two's complement). The arithmetic is done in
//    an unsigned type at least as wide as `unsigned int`, so narrow types are
//    never promoted to a signed int that could overflow.
//  - Floating SUM and PROD are plain IEEE arithmetic (inf and NaN propagate).
//  - Floating MIN and MAX follow fmin/fmax: a NaN loses to a number, and the
//    result is NaN only when both operands are.
//  - Half and BFloat16 are widened to float, combined, and rounded back to
//    nearest even: one rounding per operation.
//  - AVG reduces as SUM; the division happens once at the end (divide_elem).
//  - Bitwise (BAND, BOR, BXOR) and logical (LAND, LOR, LXOR) operators are
//    defined for integer types only. Logical ones read any non-zero value as
//    true and give 0 or 1.
#pragma once

#include <cstdint>
#include <type_traits>

#include "chorus.h"
#include "reduce/half.h"

namespace chorus {

// How a stored element is computed with: `Calc` is the arithmetic type,
// load/store convert between storage and arithmetic.
template <typename T>
struct ElemArith {
    using Calc = T;
    CHORUS_HD CHORUS_INLINE static Calc load(T v) { return v; }
    CHORUS_HD CHORUS_INLINE static T store(Calc v) { return v; }
};

template <>
struct ElemArith<Half> {
    using Calc = float;
    CHORUS_HD CHORUS_INLINE static float load(Half v) { return half_to_float(v.bits); }
    CHORUS_HD CHORUS_INLINE static Half store(float v) { return Half{float_to_half(v)}; }
};

template <>
struct ElemArith<BFloat16> {
    using Calc = float;
    CHORUS_HD CHORUS_INLINE static float load(BFloat16 v) { return bf16_to_float(v.bits); }
    CHORUS_HD CHORUS_INLINE static BFloat16 store(float v) { return BFloat16{float_to_bf16(v)}; }
};

namespace detail {

// Unsigned type used for wrapping arithmetic on integer type T: the unsigned
// type of the same width, but never narrower than unsigned int (which would
// promote to signed int).
template <typename T>
using WrapUnsigned = typename std::conditional<(sizeof(T) < sizeof(unsigned int)), unsigned int,
                                               typename std::make_unsigned<T>::type>::type;

// Reduce a wrapped unsigned result back to T modulo 2^bits(T).
template <typename T, typename W>
CHORUS_HD CHORUS_INLINE T narrow_wrapped(W w) {
    return static_cast<T>(static_cast<typename std::make_unsigned<T>::type>(w));
}

}  // namespace detail

struct OpSum {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        if constexpr (std::is_integral<C>::value) {
            using W = detail::WrapUnsigned<C>;
            return detail::narrow_wrapped<C>(static_cast<W>(static_cast<W>(a) + static_cast<W>(b)));
        } else {
            return a + b;
        }
    }
};

struct OpProd {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        if constexpr (std::is_integral<C>::value) {
            using W = detail::WrapUnsigned<C>;
            return detail::narrow_wrapped<C>(static_cast<W>(static_cast<W>(a) * static_cast<W>(b)));
        } else {
            return a * b;
        }
    }
};

struct OpMin {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        if constexpr (std::is_integral<C>::value) {
            return b < a ? b : a;
        } else {
            // a if it is smaller, or if b is NaN; otherwise b (which is also
            // the answer when a is NaN).
            return (a < b || b != b) ? a : b;
        }
    }
};

struct OpMax {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        if constexpr (std::is_integral<C>::value) {
            return a < b ? b : a;
        } else {
            return (a > b || b != b) ? a : b;
        }
    }
};

struct OpBand {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        static_assert(std::is_integral<C>::value, "bitwise operators take integer types");
        return static_cast<C>(a & b);
    }
};

struct OpBor {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        static_assert(std::is_integral<C>::value, "bitwise operators take integer types");
        return static_cast<C>(a | b);
    }
};

struct OpBxor {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        static_assert(std::is_integral<C>::value, "bitwise operators take integer types");
        return static_cast<C>(a ^ b);
    }
};

struct OpLand {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        static_assert(std::is_integral<C>::value, "logical operators take integer types");
        return static_cast<C>((a != 0) & (b != 0));
    }
};

struct OpLor {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        static_assert(std::is_integral<C>::value, "logical operators take integer types");
        return static_cast<C>((a != 0) | (b != 0));
    }
};

struct OpLxor {
    template <typename C>
    CHORUS_HD CHORUS_INLINE static C calc(C a, C b) {
        static_assert(std::is_integral<C>::value, "logical operators take integer types");
        return static_cast<C>((a != 0) ^ (b != 0));
    }
};

// The operator type for each chorus_op_t. AVG reduces as SUM.
template <chorus_op_t OP>
struct OpFor;
template <>
struct OpFor<CHORUS_SUM> {
    using type = OpSum;
};
template <>
struct OpFor<CHORUS_PROD> {
    using type = OpProd;
};
template <>
struct OpFor<CHORUS_MIN> {
    using type = OpMin;
};
template <>
struct OpFor<CHORUS_MAX> {
    using type = OpMax;
};
template <>
struct OpFor<CHORUS_AVG> {
    using type = OpSum;
};
template <>
struct OpFor<CHORUS_BAND> {
    using type = OpBand;
};
template <>
struct OpFor<CHORUS_BOR> {
    using type = OpBor;
};
template <>
struct OpFor<CHORUS_BXOR> {
    using type = OpBxor;
};
template <>
struct OpFor<CHORUS_LAND> {
    using type = OpLand;
};
template <>
struct OpFor<CHORUS_LOR> {
    using type = OpLor;
};
template <>
struct OpFor<CHORUS_LXOR> {
    using type = OpLxor;
};

// a op b for stored elements of type T.
template <typename Op, typename T>
CHORUS_HD CHORUS_INLINE T reduce_elem(T a, T b) {
    using A = ElemArith<T>;
    return A::store(Op::template calc<typename A::Calc>(A::load(a), A::load(b)));
}

// AVG finalisation of one element: x / divisor (divisor >= 1). Integers use C
// division (truncation toward zero, in the usual arithmetic conversions of T
// and int); floating types divide in their arithmetic type and round once.
template <typename T>
CHORUS_HD CHORUS_INLINE T divide_elem(T x, int divisor) {
    using A = ElemArith<T>;
    using C = typename A::Calc;
    if constexpr (std::is_integral<C>::value) {
        return static_cast<T>(x / divisor);
    } else {
        return A::store(A::load(x) / static_cast<C>(divisor));
    }
}

}  // namespace chorus
