// Tests for the host reducer (host_reduce / host_divide), the fp16/bf16
// conversions in half.h, and the datatype/op metadata.
//
// Every expected value is computed independently of the code under test:
// integers with modular arithmetic on uint64_t (or int64_t division),
// float32 in double (exact or innocuously rounded), and the 16-bit formats
// by decoding bit patterns with ldexp and rounding with a search over the
// format's own value grid.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "reduce/half.h"
#include "reduce/host_reducer.h"

using chorus::BFloat16;
using chorus::Half;

namespace {

// ---------------------------------------------------------------------------
// Reference model of a 16-bit binary floating-point format.

struct Format16 {
    int mant_bits;   // stored mantissa bits
    int bias;        // exponent bias
    uint16_t inf;    // bit pattern of +infinity
    uint16_t quiet;  // exponent bits plus the quiet-NaN bit
    const char* name;
};

const Format16 kHalfFmt = {10, 15, 0x7c00, 0x7e00, "float16"};
const Format16 kBf16Fmt = {7, 127, 0x7f80, 0x7fc0, "bfloat16"};

bool ref_is_nan(const Format16& f, uint16_t h) {
    return (h & 0x7fff) > f.inf;
}

bool ref_is_quiet_nan(const Format16& f, uint16_t h) {
    return ref_is_nan(f, h) && (h & f.quiet) == f.quiet;
}

// The value of a bit pattern, from the definition of the format.
double ref_decode(const Format16& f, uint16_t h) {
    const int exp_field = (h & 0x7fff) >> f.mant_bits;
    const int exp_max = 0x7fff >> f.mant_bits;
    const int mant = h & ((1 << f.mant_bits) - 1);
    const bool neg = (h & 0x8000) != 0;
    double v;
    if (exp_field == exp_max) {
        v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    } else if (exp_field == 0) {
        v = std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mant_bits);
    } else {
        v = std::ldexp(static_cast<double>(mant + (1 << f.mant_bits)), exp_field - f.bias - f.mant_bits);
    }
    return neg ? -v : v;
}

// ref_decode for every pattern, tabulated (the checks below decode a lot).
double ref_value(const Format16& f, uint16_t h) {
    static std::vector<double> half_table, bf16_table;
    std::vector<double>& t = (&f == &kHalfFmt) ? half_table : bf16_table;
    if (t.empty()) {
        t.resize(0x10000);
        for (uint32_t p = 0; p <= 0xffff; ++p) t[p] = ref_decode(f, static_cast<uint16_t>(p));
    }
    return t[h];
}

// Values of the non-negative patterns 0 .. inf, in increasing order. For
// rounding, infinity stands at the power of two just past the largest
// finite value (where the next binade would start), which makes "round to
// nearest, ties to even" produce IEEE overflow behaviour on its own.
const std::vector<double>& ref_grid(const Format16& f) {
    static std::vector<double> half_grid, bf16_grid;
    std::vector<double>& g = (&f == &kHalfFmt) ? half_grid : bf16_grid;
    if (g.empty()) {
        for (uint32_t p = 0; p < f.inf; ++p) g.push_back(ref_decode(f, static_cast<uint16_t>(p)));
        g.push_back(std::ldexp(1.0, (0x7fff >> f.mant_bits) - f.bias));
    }
    return g;
}

// Round a double (not NaN) to the nearest representable pattern, ties to
// the pattern with an even mantissa.
uint16_t ref_round(const Format16& f, double x) {
    const std::vector<double>& g = ref_grid(f);
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double ax = std::fabs(x);
    if (ax >= g.back()) return static_cast<uint16_t>(sign | f.inf);
    size_t lo = 0, hi = g.size() - 1;  // g[lo] <= ax < g[hi]
    while (hi - lo > 1) {
        const size_t mid = (lo + hi) / 2;
        if (g[mid] <= ax)
            lo = mid;
        else
            hi = mid;
    }
    const double midpoint = (g[lo] + g[hi]) / 2;  // exact: both have few bits
    size_t pick;
    if (ax < midpoint)
        pick = lo;
    else if (ax > midpoint)
        pick = hi;
    else
        pick = (lo % 2 == 0) ? lo : hi;
    return static_cast<uint16_t>(sign | pick);
}

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

uint32_t fbits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float bits_f(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
uint64_t dbits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
}

// ---------------------------------------------------------------------------
// Typed access to the datatypes.

template <typename T>
struct Traits;
#define CHORUS_TEST_TRAITS(T, DT)                   \
    template <>                                     \
    struct Traits<T> {                              \
        static constexpr chorus_datatype_t dt = DT; \
    };
CHORUS_TEST_TRAITS(int8_t, CHORUS_INT8)
CHORUS_TEST_TRAITS(uint8_t, CHORUS_UINT8)
CHORUS_TEST_TRAITS(int16_t, CHORUS_INT16)
CHORUS_TEST_TRAITS(uint16_t, CHORUS_UINT16)
CHORUS_TEST_TRAITS(int32_t, CHORUS_INT32)
CHORUS_TEST_TRAITS(uint32_t, CHORUS_UINT32)
CHORUS_TEST_TRAITS(int64_t, CHORUS_INT64)
CHORUS_TEST_TRAITS(uint64_t, CHORUS_UINT64)
CHORUS_TEST_TRAITS(Half, CHORUS_FLOAT16)
CHORUS_TEST_TRAITS(BFloat16, CHORUS_BFLOAT16)
CHORUS_TEST_TRAITS(float, CHORUS_FLOAT32)
CHORUS_TEST_TRAITS(double, CHORUS_FLOAT64)
#undef CHORUS_TEST_TRAITS

template <typename T>
constexpr bool is16 = std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value;

template <typename T>
const Format16& fmt16() {
    return std::is_same<T, Half>::value ? kHalfFmt : kBf16Fmt;
}

// Call f(T{}) with the C++ type of a datatype.
template <typename F>
void with_type(chorus_datatype_t dt, F&& f) {
    switch (dt) {
        case CHORUS_INT8: f(int8_t{}); break;
        case CHORUS_UINT8: f(uint8_t{}); break;
        case CHORUS_INT16: f(int16_t{}); break;
        case CHORUS_UINT16: f(uint16_t{}); break;
        case CHORUS_INT32: f(int32_t{}); break;
        case CHORUS_UINT32: f(uint32_t{}); break;
        case CHORUS_INT64: f(int64_t{}); break;
        case CHORUS_UINT64: f(uint64_t{}); break;
        case CHORUS_FLOAT16: f(Half{}); break;
        case CHORUS_BFLOAT16: f(BFloat16{}); break;
        case CHORUS_FLOAT32: f(float{}); break;
        case CHORUS_FLOAT64: f(double{}); break;
    }
}

const chorus_datatype_t kAllTypes[] = {CHORUS_INT8,    CHORUS_UINT8,    CHORUS_INT16,   CHORUS_UINT16,
                                       CHORUS_INT32,   CHORUS_UINT32,   CHORUS_INT64,   CHORUS_UINT64,
                                       CHORUS_FLOAT16, CHORUS_BFLOAT16, CHORUS_FLOAT32, CHORUS_FLOAT64};
const chorus_op_t kReduceOps[] = {CHORUS_SUM, CHORUS_PROD, CHORUS_MIN, CHORUS_MAX};
const chorus_datatype_t kIntTypes[] = {CHORUS_INT8,  CHORUS_UINT8,  CHORUS_INT16, CHORUS_UINT16,
                                       CHORUS_INT32, CHORUS_UINT32, CHORUS_INT64, CHORUS_UINT64};
const chorus_op_t kBitOps[] = {CHORUS_BAND, CHORUS_BOR, CHORUS_BXOR, CHORUS_LAND, CHORUS_LOR, CHORUS_LXOR};

bool is_logical(chorus_op_t op) {
    return op == CHORUS_LAND || op == CHORUS_LOR || op == CHORUS_LXOR;
}

std::string show(int8_t v) {
    return std::to_string(v);
}
std::string show(uint8_t v) {
    return std::to_string(v);
}
std::string show(int16_t v) {
    return std::to_string(v);
}
std::string show(uint16_t v) {
    return std::to_string(v);
}
std::string show(int32_t v) {
    return std::to_string(v);
}
std::string show(uint32_t v) {
    return std::to_string(v);
}
std::string show(int64_t v) {
    return std::to_string(v);
}
std::string show(uint64_t v) {
    return std::to_string(v);
}
std::string show(Half v) {
    return hex(v.bits);
}
std::string show(BFloat16 v) {
    return hex(v.bits);
}
std::string show(float v) {
    return std::to_string(v) + " (" + hex(fbits(v)) + ")";
}
std::string show(double v) {
    return std::to_string(v) + " (" + hex(dbits(v)) + ")";
}

// ---------------------------------------------------------------------------
// Reference results.

// Integer value modulo 2^64, and back to T modulo 2^bits(T).
template <typename T>
uint64_t to_u64(T v) {
    return std::is_signed<T>::value ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
}

template <typename T>
T from_u64(uint64_t u) {
    constexpr int bits = 8 * sizeof(T);
    if constexpr (bits < 64) u &= (uint64_t{1} << bits) - 1;
    if constexpr (!std::is_signed<T>::value) {
        return static_cast<T>(u);
    } else {
        const uint64_t sign_bit = uint64_t{1} << (bits - 1);
        if ((u & sign_bit) == 0) return static_cast<T>(static_cast<int64_t>(u));
        // Negative: the value is u - 2^bits = -((all_ones - u) + 1).
        const uint64_t all_ones = bits < 64 ? (sign_bit << 1) - 1 : ~uint64_t{0};
        return static_cast<T>(-static_cast<int64_t>(all_ones - u) - 1);
    }
}

template <typename T>
T ref_int(chorus_op_t op, T a, T b) {
    switch (op) {
        case CHORUS_SUM:
        case CHORUS_AVG: return from_u64<T>(to_u64(a) + to_u64(b));
        case CHORUS_PROD: return from_u64<T>(to_u64(a) * to_u64(b));
        case CHORUS_MIN:
            if (std::is_signed<T>::value) return static_cast<int64_t>(a) <= static_cast<int64_t>(b) ? a : b;
            return static_cast<uint64_t>(a) <= static_cast<uint64_t>(b) ? a : b;
        case CHORUS_MAX:
            if (std::is_signed<T>::value) return static_cast<int64_t>(a) >= static_cast<int64_t>(b) ? a : b;
            return static_cast<uint64_t>(a) >= static_cast<uint64_t>(b) ? a : b;
        case CHORUS_BAND: return from_u64<T>(to_u64(a) & to_u64(b));
        case CHORUS_BOR: return from_u64<T>(to_u64(a) | to_u64(b));
        case CHORUS_BXOR: return from_u64<T>(to_u64(a) ^ to_u64(b));
        case CHORUS_LAND: return (to_u64(a) != 0 && to_u64(b) != 0) ? T(1) : T(0);
        case CHORUS_LOR: return (to_u64(a) != 0 || to_u64(b) != 0) ? T(1) : T(0);
        case CHORUS_LXOR: return ((to_u64(a) != 0) != (to_u64(b) != 0)) ? T(1) : T(0);
    }
    return T{};
}

template <typename T>
bool same_bits(T x, T y) {
    return std::memcmp(&x, &y, sizeof(T)) == 0;
}

// Returns "" when `got` is a correct result of a op b, else a description.
template <typename T>
std::string check_reduce(chorus_op_t op, T a, T b, T got) {
    std::string bad;
    if constexpr (std::is_integral<T>::value) {
        const T want = ref_int(op, a, b);
        if (want != got) bad = "want " + show(want);
    } else if constexpr (is16<T>) {
        const Format16& f = fmt16<T>();
        const double va = ref_value(f, a.bits), vb = ref_value(f, b.bits);
        if (op == CHORUS_MIN || op == CHORUS_MAX) {
            // fmin/fmax: the number wins over a NaN; the result is one of
            // the operands, bit for bit.
            const double want = op == CHORUS_MIN ? std::fmin(va, vb) : std::fmax(va, vb);
            if (std::isnan(want)) {
                if (!ref_is_quiet_nan(f, got.bits)) bad = "want a quiet NaN";
            } else if (ref_value(f, got.bits) != want || (got.bits != a.bits && got.bits != b.bits)) {
                bad = "want the operand equal to " + std::to_string(want);
            }
        } else {
            // fp16: sums and products of two halves are exact in double.
            // bf16: products are exact; a sum is rounded once in double,
            // which cannot change the final rounding (53 >= 2*8 + 2).
            const double x = op == CHORUS_PROD ? va * vb : va + vb;
            if (std::isnan(x)) {
                if (!ref_is_quiet_nan(f, got.bits)) bad = "want a quiet NaN";
            } else {
                const uint16_t want = ref_round(f, x);
                if (want != got.bits) bad = "want " + hex(want);
            }
        }
    } else {
        if (op == CHORUS_MIN || op == CHORUS_MAX) {
            // Any NaN, quiet or signaling, loses to a number. (glibc's fmin
            // returns NaN for a signaling operand, as IEEE 754-2008 minNum
            // does; Chorus documents the simpler rule.)
            T want;
            if (std::isnan(a))
                want = b;
            else if (std::isnan(b))
                want = a;
            else
                want = op == CHORUS_MIN ? std::fmin(a, b) : std::fmax(a, b);
            if (std::isnan(want)) {
                if (!std::isnan(got)) bad = "want NaN";
            } else if (!(got == want) || (!same_bits(got, a) && !same_bits(got, b))) {
                bad = "want the operand equal to " + show(want);
            }
        } else {
            T want;
            if constexpr (std::is_same<T, float>::value) {
                // Exact (product) or innocuously double-rounded (sum, 53 >= 2*24 + 2).
                const double x = op == CHORUS_PROD ? static_cast<double>(a) * static_cast<double>(b)
                                                   : static_cast<double>(a) + static_cast<double>(b);
                want = static_cast<float>(x);
            } else {
                want = op == CHORUS_PROD ? a * b : a + b;
            }
            if (std::isnan(want)) {
                if (!std::isnan(got)) bad = "want NaN";
            } else if (!same_bits(want, got)) {
                bad = "want " + show(want);
            }
        }
    }
    if (bad.empty()) return bad;
    return std::string(chorus::op_name(op)) + "(" + show(a) + ", " + show(b) + ") gave " + show(got) + ", " + bad;
}

template <typename T>
std::string check_divide(T x, int d, T got) {
    std::string bad;
    if constexpr (std::is_integral<T>::value) {
        T want;
        if (std::is_signed<T>::value)
            want = static_cast<T>(static_cast<int64_t>(x) / d);  // C++: truncates toward zero
        else
            want = static_cast<T>(static_cast<uint64_t>(x) / static_cast<uint64_t>(d));
        if (want != got) bad = "want " + show(want);
    } else if constexpr (is16<T>) {
        // Divisors used here have at most 8 significant bits, so rounding the
        // quotient in float and then to 16 bits equals one rounding.
        const Format16& f = fmt16<T>();
        const double q = ref_value(f, x.bits) / d;
        if (std::isnan(q)) {
            if (!ref_is_nan(f, got.bits)) bad = "want NaN";
        } else if (ref_round(f, q) != got.bits) {
            bad = "want " + hex(ref_round(f, q));
        }
    } else {
        T want;
        if constexpr (std::is_same<T, float>::value)
            want = static_cast<float>(static_cast<double>(x) / d);  // innocuous double rounding
        else
            want = x / static_cast<double>(d);
        if (std::isnan(want)) {
            if (!std::isnan(got)) bad = "want NaN";
        } else if (!same_bits(want, got)) {
            bad = "want " + show(want);
        }
    }
    if (bad.empty()) return bad;
    return show(x) + " / " + std::to_string(d) + " gave " + show(got) + ", " + bad;
}

// ---------------------------------------------------------------------------
// Random inputs: every class of value, with a bias toward ranges where
// arithmetic is interesting (operands of similar magnitude).

// splitmix64: fast, and plenty for test data.
struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed) {}
    uint64_t operator()() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
};

template <typename T>
T random_value(Rng& rng) {
    const uint64_t r = rng();
    const unsigned pick = static_cast<unsigned>((r * 0x9e3779b97f4a7c15ull) >> 60);  // 0..15
    if constexpr (std::is_integral<T>::value) {
        if (pick == 0) {
            const T special[] = {
                T(0), T(1), static_cast<T>(~T(0)), std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(2)};
            return special[r % 6];
        }
        if (pick < 4) return static_cast<T>(static_cast<int64_t>(r % 64) - 32);  // small values
        return static_cast<T>(r);
    } else if constexpr (is16<T>) {
        const Format16& f = fmt16<T>();
        if (pick < 8) return T{static_cast<uint16_t>(r)};  // any pattern at all
        // Exponent within +-6 of the bias, random mantissa and sign.
        const uint32_t exp_field = static_cast<uint32_t>(f.bias - 6 + static_cast<int>(r % 13));
        const uint32_t mant = static_cast<uint32_t>(r >> 8) & ((1u << f.mant_bits) - 1);
        return T{static_cast<uint16_t>(((r >> 40) & 1) << 15 | exp_field << f.mant_bits | mant)};
    } else {
        using L = std::numeric_limits<T>;
        if (pick == 0) {
            const T special[] = {
                T(0),     -T(0),       L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(), -L::denorm_min(),
                L::max(), L::lowest(), L::min(),      T(1),           T(-1)};
            return special[r % 12];
        }
        if (pick < 6) {  // any bit pattern
            T v;
            std::memcpy(&v, &r, sizeof v);
            return v;
        }
        // Moderate magnitudes with full mantissas.
        const double m = 1.0 + static_cast<double>(r >> 11) * 0x1p-53;
        const int e = static_cast<int>((r >> 1) % 41) - 20;
        const T v = static_cast<T>(std::ldexp(m, e));
        return (r & 1) ? -v : v;
    }
}

template <typename T>
std::vector<T> random_vector(size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<T> v(n);
    for (auto& x : v) x = random_value<T>(rng);
    return v;
}

enum class Alias { None, DstIsA, DstIsB, AEqualsB, AllSame };

const char* alias_name(Alias a) {
    switch (a) {
        case Alias::None: return "dst, a, b distinct";
        case Alias::DstIsA: return "dst == a";
        case Alias::DstIsB: return "dst == b";
        case Alias::AEqualsB: return "a == b";
        case Alias::AllSame: return "dst == a == b";
    }
    return "?";
}

// Run one host_reduce and compare every element with the reference.
// Returns "" on success, else the first failure.
// With Alias::None the result goes `dst_offset` elements into its buffer.
template <typename T>
std::string reduce_and_check(chorus_op_t op, size_t count, Alias alias, uint64_t seed, size_t dst_offset = 0) {
    const chorus_datatype_t dt = Traits<T>::dt;
    std::vector<T> a = random_vector<T>(count, seed);
    std::vector<T> b = random_vector<T>(count, seed ^ 0x9e3779b97f4a7c15ull);
    if constexpr (std::is_integral<T>::value) {
        if (is_logical(op)) {
            // Random integers are almost never zero: clear about half of them.
            Rng zeros(seed + 777);
            for (size_t i = 0; i < count; ++i) {
                const uint64_t r = zeros();
                if (r & 1) a[i] = T(0);
                if (r & 2) b[i] = T(0);
            }
        }
    }
    std::vector<T> in_a = a, in_b = b;
    // Out-of-place results land in a buffer with guard elements behind it.
    const size_t guard = 9;
    std::vector<T> out;
    switch (alias) {
        case Alias::None: {
            Rng guard_rng(seed + 12345);
            std::vector<T> buf(dst_offset + count + guard);
            for (auto& x : buf) x = random_value<T>(guard_rng);
            const std::vector<T> before = buf;
            chorus::host_reduce(dt, op, buf.data() + dst_offset, in_a.data(), in_b.data(), count);
            if (std::memcmp(buf.data(), before.data(), dst_offset * sizeof(T)) != 0) return "wrote before the start";
            if (std::memcmp(buf.data() + dst_offset + count, before.data() + dst_offset + count, guard * sizeof(T)) !=
                0)
                return "wrote past the end";
            out.assign(buf.begin() + static_cast<ptrdiff_t>(dst_offset),
                       buf.begin() + static_cast<ptrdiff_t>(dst_offset + count));
        } break;
        case Alias::DstIsA:
            out = a;
            chorus::host_reduce(dt, op, out.data(), out.data(), in_b.data(), count);
            break;
        case Alias::DstIsB:
            out = b;
            chorus::host_reduce(dt, op, out.data(), in_a.data(), out.data(), count);
            break;
        case Alias::AEqualsB:
            out.resize(count);
            chorus::host_reduce(dt, op, out.data(), in_a.data(), in_a.data(), count);
            break;
        case Alias::AllSame:
            out = a;
            chorus::host_reduce(dt, op, out.data(), out.data(), out.data(), count);
            break;
    }
    if (count > 0 && (std::memcmp(in_a.data(), a.data(), count * sizeof(T)) != 0 ||
                      std::memcmp(in_b.data(), b.data(), count * sizeof(T)) != 0))
        return "modified an input buffer";
    const bool b_is_a = alias == Alias::AEqualsB || alias == Alias::AllSame;
    for (size_t i = 0; i < count; ++i) {
        const std::string why = check_reduce<T>(op, a[i], b_is_a ? a[i] : b[i], out[i]);
        if (!why.empty()) return "element " + std::to_string(i) + ": " + why;
    }
    return "";
}

template <typename T>
std::vector<T> reduce_vec(chorus_op_t op, std::vector<T> a, const std::vector<T>& b) {
    std::vector<T> out(a.size());
    chorus::host_reduce(Traits<T>::dt, op, out.data(), a.data(), b.data(), a.size());
    return out;
}

template <typename T>
T reduce1(chorus_op_t op, T a, T b) {
    T out;
    chorus::host_reduce(Traits<T>::dt, op, &out, &a, &b, 1);
    return out;
}

Half h(uint16_t bits) {
    return Half{bits};
}
BFloat16 bf(uint16_t bits) {
    return BFloat16{bits};
}

}  // namespace

// ===========================================================================
// Metadata

TEST_CASE("datatype and op metadata: sizes, names, and validity", "[reducer]") {
    const size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
    const char* names[] = {"int8",  "uint8",  "int16",   "uint16",   "int32",   "uint32",
                           "int64", "uint64", "float16", "bfloat16", "float32", "float64"};
    for (int dt = 0; dt < CHORUS_NUM_DATATYPES; ++dt) {
        CHECK(chorus::datatype_valid(dt));
        CHECK(chorus::datatype_size(static_cast<chorus_datatype_t>(dt)) == sizes[dt]);
        CHECK(std::string(chorus::datatype_name(static_cast<chorus_datatype_t>(dt))) == names[dt]);
    }
    CHECK_FALSE(chorus::datatype_valid(-1));
    CHECK_FALSE(chorus::datatype_valid(CHORUS_NUM_DATATYPES));
    CHECK_FALSE(chorus::datatype_valid(1000));
    CHECK(std::string(chorus::datatype_name(static_cast<chorus_datatype_t>(12))) == "invalid");
    CHECK(chorus::datatype_size(static_cast<chorus_datatype_t>(12)) == 0);

    const char* ops[] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "land", "lor", "lxor"};
    REQUIRE(CHORUS_NUM_OPS == 11);
    for (int op = 0; op < CHORUS_NUM_OPS; ++op) {
        CHECK(chorus::op_valid(op));
        CHECK(std::string(chorus::op_name(static_cast<chorus_op_t>(op))) == ops[op]);
    }
    CHECK_FALSE(chorus::op_valid(-1));
    CHECK_FALSE(chorus::op_valid(CHORUS_NUM_OPS));
    CHECK(std::string(chorus::op_name(static_cast<chorus_op_t>(11))) == "invalid");
    CHECK(std::string(chorus::op_name(static_cast<chorus_op_t>(-1))) == "invalid");
}

TEST_CASE("op_supported: arithmetic ops on every datatype, bitwise and logical on integers only", "[reducer]") {
    for (int dt = 0; dt < CHORUS_NUM_DATATYPES; ++dt) {
        const auto t = static_cast<chorus_datatype_t>(dt);
        const bool integer = dt <= CHORUS_UINT64;
        for (int op = 0; op < CHORUS_NUM_OPS; ++op) {
            INFO(chorus::datatype_name(t) << " " << chorus::op_name(static_cast<chorus_op_t>(op)));
            CHECK(chorus::op_supported(t, static_cast<chorus_op_t>(op)) == (op <= CHORUS_AVG || integer));
        }
        CHECK_FALSE(chorus::op_supported(t, static_cast<chorus_op_t>(CHORUS_NUM_OPS)));
        CHECK_FALSE(chorus::op_supported(t, static_cast<chorus_op_t>(-1)));
    }
    CHECK_FALSE(chorus::op_supported(static_cast<chorus_datatype_t>(CHORUS_NUM_DATATYPES), CHORUS_SUM));
    CHECK_FALSE(chorus::op_supported(CHORUS_FLOAT16, CHORUS_BAND));
    CHECK_FALSE(chorus::op_supported(CHORUS_BFLOAT16, CHORUS_LOR));
    CHECK_FALSE(chorus::op_supported(CHORUS_FLOAT32, CHORUS_BXOR));
    CHECK_FALSE(chorus::op_supported(CHORUS_FLOAT64, CHORUS_LXOR));
    CHECK(chorus::op_supported(CHORUS_INT8, CHORUS_LXOR));
    CHECK(chorus::op_supported(CHORUS_UINT64, CHORUS_BAND));
}

// ===========================================================================
// Every (datatype, op) pair against the reference

// Every (datatype, op, aliasing, count) of the grid against the reference;
// each case gets its own seed, counting up from `seed`.
template <typename Types, typename Ops, typename Aliases, typename Counts>
void check_grid(const Types& types, const Ops& ops, const Aliases& aliases, const Counts& counts, uint64_t seed) {
    for (chorus_datatype_t dt : types) {
        for (chorus_op_t op : ops) {
            for (Alias alias : aliases) {
                for (size_t count : counts) {
                    std::string why;
                    with_type(dt, [&](auto tag) { why = reduce_and_check<decltype(tag)>(op, count, alias, seed++); });
                    INFO(chorus::datatype_name(dt)
                         << " " << chorus::op_name(op) << " " << alias_name(alias) << " count " << count);
                    REQUIRE(why == "");
                }
            }
        }
    }
}

const Alias kOutOfPlace[] = {Alias::None};
const Alias kInPlace[] = {Alias::DstIsA, Alias::DstIsB, Alias::AEqualsB, Alias::AllSame};

TEST_CASE("every datatype and op matches the reference on random data, lengths 1 to 1000", "[reducer]") {
    const size_t counts[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000};
    check_grid(kAllTypes, kReduceOps, kOutOfPlace, counts, 1);
}

// [long]: with the [scale] cases in the unit_scale test (test/meson.build),
// which the AddressSanitizer build leaves out: two minutes there.
TEST_CASE("every datatype and op matches the reference on random data of length 1000003", "[reducer][long]") {
    const size_t counts[] = {1000003};
    check_grid(kAllTypes, kReduceOps, kOutOfPlace, counts, 1000003);
}

TEST_CASE("in-place reduction (dst == a, dst == b, a == b, all three) matches the reference", "[reducer]") {
    const size_t counts[] = {1, 5, 16, 33, 1001, 4099};
    check_grid(kAllTypes, kReduceOps, kInPlace, counts, 1000);
}

TEST_CASE("bitwise and logical ops match the reference for every integer type, lengths 1 to 100003", "[reducer][int]") {
    const size_t counts[] = {1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 129, 1000, 100003};
    check_grid(kIntTypes, kBitOps, kOutOfPlace, counts, 20000);
}

TEST_CASE("bitwise and logical ops in place (dst == a, dst == b, a == b, all three) match the reference", "[reducer][int]") {
    const size_t counts[] = {1, 5, 16, 33, 1001, 30001};
    check_grid(kIntTypes, kBitOps, kInPlace, counts, 30000);
}

TEST_CASE("in-place on a long odd length (dst == a and dst == b) matches the reference", "[reducer]") {
    uint64_t seed = 5000;
    for (chorus_datatype_t dt : kAllTypes) {
        for (chorus_op_t op : kReduceOps) {
            for (Alias alias : {Alias::DstIsA, Alias::DstIsB}) {
                std::string why;
                with_type(dt, [&](auto tag) { why = reduce_and_check<decltype(tag)>(op, 30001, alias, seed++); });
                INFO(chorus::datatype_name(dt) << " " << chorus::op_name(op) << " " << alias_name(alias));
                REQUIRE(why == "");
            }
        }
    }
}

TEST_CASE("results of 8 MiB and more (streamed past the cache) match the reference, at any alignment", "[reducer]") {
    // Above 8 MiB an out-of-place result is written in blocks with
    // non-temporal stores after a head up to the first 64-byte boundary.
    const size_t mib8 = size_t{8} << 20;
    struct Case {
        chorus_datatype_t dt;
        chorus_op_t op;
        size_t extra;   // elements beyond 8 MiB
        size_t offset;  // dst starts this many elements into its buffer
    };
    const Case cases[] = {
        {CHORUS_FLOAT32, CHORUS_SUM, 333, 0}, {CHORUS_FLOAT32, CHORUS_MAX, 1, 3},    {CHORUS_FLOAT64, CHORUS_MIN, 7, 1},
        {CHORUS_INT32, CHORUS_PROD, 0, 5},    {CHORUS_BFLOAT16, CHORUS_SUM, 999, 1}, {CHORUS_UINT64, CHORUS_SUM, 2, 0},
        {CHORUS_UINT16, CHORUS_BXOR, 5, 3},   {CHORUS_INT8, CHORUS_LOR, 63, 7},      {CHORUS_INT64, CHORUS_BAND, 1, 1},
    };
    uint64_t seed = 7000;
    for (const Case& c : cases) {
        std::string why;
        const size_t count = mib8 / chorus::datatype_size(c.dt) + c.extra;
        with_type(c.dt,
                  [&](auto tag) { why = reduce_and_check<decltype(tag)>(c.op, count, Alias::None, seed++, c.offset); });
        INFO(chorus::datatype_name(c.dt) << " " << chorus::op_name(c.op) << " count " << count << " dst offset "
                                         << c.offset);
        REQUIRE(why == "");
    }
}

TEST_CASE("AVG reduces exactly like SUM for every datatype", "[reducer]") {
    for (chorus_datatype_t dt : kAllTypes) {
        with_type(dt, [&](auto tag) {
            using T = decltype(tag);
            const std::vector<T> a = random_vector<T>(4099, 77), b = random_vector<T>(4099, 78);
            const std::vector<T> s = reduce_vec(CHORUS_SUM, a, b);
            const std::vector<T> v = reduce_vec(CHORUS_AVG, a, b);
            INFO(chorus::datatype_name(dt));
            REQUIRE(std::memcmp(s.data(), v.data(), s.size() * sizeof(T)) == 0);
        });
    }
}

TEST_CASE("count 0 touches nothing, even with null pointers", "[reducer]") {
    for (chorus_datatype_t dt : kAllTypes) {
        for (int op = 0; op < CHORUS_NUM_OPS; ++op) {
            chorus::host_reduce(dt, static_cast<chorus_op_t>(op), nullptr, nullptr, nullptr, 0);
        }
        chorus::host_divide(dt, nullptr, 0, 3);
    }
    int32_t a = 5, b = 7, d = 11;
    chorus::host_reduce(CHORUS_INT32, CHORUS_SUM, &d, &a, &b, 0);
    CHECK(d == 11);
    chorus::host_divide(CHORUS_INT32, &d, 0, 2);
    CHECK(d == 11);
}

TEST_CASE("count 1 reduces a single element", "[reducer]") {
    CHECK(reduce1<int32_t>(CHORUS_SUM, 40, 2) == 42);
    CHECK(reduce1<double>(CHORUS_PROD, 1.5, -4.0) == -6.0);
    CHECK(reduce1<uint8_t>(CHORUS_MIN, 200, 100) == 100);
    CHECK(reduce1(CHORUS_MAX, h(0x3c00), h(0xc000)).bits == 0x3c00);  // max(1, -2) == 1
}

// ===========================================================================
// Integer semantics

TEST_CASE("integer SUM and PROD wrap around in two's complement", "[reducer][int]") {
    CHECK(reduce1<int8_t>(CHORUS_SUM, 127, 1) == -128);
    CHECK(reduce1<int8_t>(CHORUS_SUM, -128, -1) == 127);
    CHECK(reduce1<int8_t>(CHORUS_PROD, 16, 16) == 0);
    CHECK(reduce1<int8_t>(CHORUS_PROD, 127, 127) == 1);  // 16129 mod 256
    CHECK(reduce1<int8_t>(CHORUS_PROD, -128, -1) == -128);
    CHECK(reduce1<uint8_t>(CHORUS_SUM, 255, 1) == 0);
    CHECK(reduce1<uint8_t>(CHORUS_PROD, 16, 17) == 16);  // 272 mod 256
    CHECK(reduce1<int16_t>(CHORUS_SUM, 32767, 1) == -32768);
    CHECK(reduce1<int16_t>(CHORUS_PROD, 256, 256) == 0);
    CHECK(reduce1<int16_t>(CHORUS_PROD, 300, 300) == static_cast<int16_t>(90000 - 65536));
    CHECK(reduce1<int16_t>(CHORUS_PROD, -32768, -1) == -32768);
    CHECK(reduce1<uint16_t>(CHORUS_SUM, 65535, 1) == 0);
    CHECK(reduce1<uint16_t>(CHORUS_PROD, 65535, 65535) == 1);  // (-1)^2 mod 2^16
    CHECK(reduce1<uint16_t>(CHORUS_PROD, 40000, 3) == static_cast<uint16_t>(120000 - 65536));
    CHECK(reduce1<int32_t>(CHORUS_SUM, INT32_MAX, 1) == INT32_MIN);
    CHECK(reduce1<int32_t>(CHORUS_PROD, 65536, 65536) == 0);
    CHECK(reduce1<int32_t>(CHORUS_PROD, INT32_MIN, -1) == INT32_MIN);
    CHECK(reduce1<uint32_t>(CHORUS_SUM, UINT32_MAX, 1) == 0u);
    CHECK(reduce1<uint32_t>(CHORUS_PROD, 0x10000u, 0x10001u) == 0x10000u);
    CHECK(reduce1<int64_t>(CHORUS_SUM, INT64_MAX, 1) == INT64_MIN);
    CHECK(reduce1<int64_t>(CHORUS_SUM, INT64_MIN, -1) == INT64_MAX);
    CHECK(reduce1<int64_t>(CHORUS_PROD, INT64_MIN, -1) == INT64_MIN);
    CHECK(reduce1<int64_t>(CHORUS_PROD, int64_t{1} << 32, int64_t{1} << 32) == 0);
    CHECK(reduce1<uint64_t>(CHORUS_SUM, UINT64_MAX, 1) == 0u);
    CHECK(reduce1<uint64_t>(CHORUS_PROD, UINT64_MAX, UINT64_MAX) == 1u);
}

TEST_CASE("integer wraparound holds in vectorized loops, not only in the scalar tail", "[reducer][int]") {
    // 1000 elements: most go through the vector body.
    std::vector<int8_t> a8(1000, 127), b8(1000, 1);
    for (int8_t v : reduce_vec(CHORUS_SUM, a8, b8)) REQUIRE(v == -128);
    std::vector<uint16_t> a16(1000, 65535);
    for (uint16_t v : reduce_vec(CHORUS_PROD, a16, a16)) REQUIRE(v == 1);
    std::vector<int16_t> s16(1000, 300);
    for (int16_t v : reduce_vec(CHORUS_PROD, s16, s16)) REQUIRE(v == static_cast<int16_t>(90000 - 65536));
    std::vector<int64_t> a64(1000, INT64_MAX), b64(1000, 1);
    for (int64_t v : reduce_vec(CHORUS_SUM, a64, b64)) REQUIRE(v == INT64_MIN);
}

TEST_CASE("bitwise ops act on the bits, with no promotion or wrap effects", "[reducer][int]") {
    CHECK(reduce1<int8_t>(CHORUS_BAND, -1, 0x5a) == 0x5a);
    CHECK(reduce1<int8_t>(CHORUS_BOR, -128, 1) == -127);
    CHECK(reduce1<int8_t>(CHORUS_BXOR, -1, 0x0f) == static_cast<int8_t>(0xf0));
    CHECK(reduce1<uint8_t>(CHORUS_BXOR, 0xff, 0xff) == 0);
    CHECK(reduce1<int16_t>(CHORUS_BAND, INT16_MIN, -1) == INT16_MIN);
    CHECK(reduce1<uint16_t>(CHORUS_BOR, 0x8000, 0x0001) == 0x8001);
    CHECK(reduce1<int32_t>(CHORUS_BXOR, INT32_MIN, INT32_MAX) == -1);
    CHECK(reduce1<uint32_t>(CHORUS_BAND, 0xdeadbeefu, 0xffff0000u) == 0xdead0000u);
    CHECK(reduce1<int64_t>(CHORUS_BOR, INT64_MIN, 1) == INT64_MIN + 1);
    CHECK(reduce1<uint64_t>(CHORUS_BXOR, UINT64_MAX, 1) == UINT64_MAX - 1);
    // In the vector body too.
    std::vector<int16_t> a(1000, -1), b(1000, 0x1234);
    for (int16_t v : reduce_vec(CHORUS_BAND, a, b)) REQUIRE(v == 0x1234);
    for (int16_t v : reduce_vec(CHORUS_BXOR, a, b)) REQUIRE(v == static_cast<int16_t>(~0x1234));
}

TEST_CASE("logical ops give 0 or 1 from the truth of each operand, never from its low bits", "[reducer][int]") {
    // 2 and 4 share no bit, but both are true.
    CHECK(reduce1<int32_t>(CHORUS_LAND, 2, 4) == 1);
    CHECK(reduce1<int32_t>(CHORUS_LXOR, 2, 4) == 0);
    CHECK(reduce1<int32_t>(CHORUS_LOR, 0, -7) == 1);
    CHECK(reduce1<int32_t>(CHORUS_LAND, 0, -7) == 0);
    CHECK(reduce1<int32_t>(CHORUS_LXOR, 0, -7) == 1);
    CHECK(reduce1<int32_t>(CHORUS_LOR, 0, 0) == 0);
    CHECK(reduce1<int8_t>(CHORUS_LAND, -128, -128) == 1);
    CHECK(reduce1<uint8_t>(CHORUS_LXOR, 0x80, 0x01) == 0);
    CHECK(reduce1<int16_t>(CHORUS_LOR, 0x100, 0) == 1);  // a clear low byte is still true
    CHECK(reduce1<uint16_t>(CHORUS_LAND, 0x100, 0x200) == 1);
    CHECK(reduce1<uint32_t>(CHORUS_LXOR, 0x80000000u, 0) == 1);
    CHECK(reduce1<int64_t>(CHORUS_LAND, int64_t{1} << 40, INT64_MIN) == 1);
    CHECK(reduce1<uint64_t>(CHORUS_LOR, uint64_t{1} << 63, 0) == 1);
    CHECK(reduce1<uint64_t>(CHORUS_LXOR, uint64_t{1} << 32, uint64_t{1} << 33) == 0);
    std::vector<uint64_t> x(1000, uint64_t{1} << 50), y(1000, 0);
    for (uint64_t v : reduce_vec(CHORUS_LOR, x, y)) REQUIRE(v == 1);
    for (uint64_t v : reduce_vec(CHORUS_LAND, x, y)) REQUIRE(v == 0);
    for (uint64_t v : reduce_vec(CHORUS_LXOR, x, x)) REQUIRE(v == 0);
}

TEST_CASE("integer MIN and MAX compare with the type's signedness", "[reducer][int]") {
    CHECK(reduce1<int8_t>(CHORUS_MIN, -1, 1) == -1);
    CHECK(reduce1<uint8_t>(CHORUS_MIN, 255, 1) == 1);
    CHECK(reduce1<int32_t>(CHORUS_MAX, INT32_MIN, -1) == -1);
    CHECK(reduce1<uint32_t>(CHORUS_MAX, 0x80000000u, 1u) == 0x80000000u);
    CHECK(reduce1<int64_t>(CHORUS_MIN, INT64_MIN, INT64_MAX) == INT64_MIN);
    CHECK(reduce1<uint64_t>(CHORUS_MAX, UINT64_MAX, 0) == UINT64_MAX);
}

// ===========================================================================
// Floating-point semantics

TEST_CASE("SUM and PROD propagate NaN and follow IEEE infinity rules", "[reducer][float]") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    CHECK(std::isnan(reduce1(CHORUS_SUM, nan, 1.0f)));
    CHECK(std::isnan(reduce1(CHORUS_SUM, 1.0f, nan)));
    CHECK(std::isnan(reduce1(CHORUS_PROD, nan, 0.0f)));
    CHECK(std::isnan(reduce1(CHORUS_PROD, inf, 0.0f)));
    CHECK(std::isnan(reduce1(CHORUS_SUM, inf, -inf)));
    CHECK(reduce1(CHORUS_SUM, inf, inf) == inf);
    CHECK(reduce1(CHORUS_SUM, inf, 1e38f) == inf);
    CHECK(reduce1(CHORUS_PROD, -inf, -2.0f) == inf);
    CHECK(reduce1(CHORUS_SUM, FLT_MAX, FLT_MAX) == inf);

    const double dnan = std::numeric_limits<double>::quiet_NaN(), dinf = std::numeric_limits<double>::infinity();
    CHECK(std::isnan(reduce1(CHORUS_SUM, dnan, 1.0)));
    CHECK(std::isnan(reduce1(CHORUS_PROD, 2.0, dnan)));
    CHECK(std::isnan(reduce1(CHORUS_SUM, dinf, -dinf)));
    CHECK(std::isnan(reduce1(CHORUS_PROD, 0.0, -dinf)));
    CHECK(reduce1(CHORUS_PROD, DBL_MAX, 2.0) == dinf);

    // float16: 0x7e00 NaN, 0x7c00 inf, 0xfc00 -inf, 0x3c00 1.0, 0x0000 0.
    CHECK(ref_is_quiet_nan(kHalfFmt, reduce1(CHORUS_SUM, h(0x7e00), h(0x3c00)).bits));
    CHECK(ref_is_quiet_nan(kHalfFmt, reduce1(CHORUS_SUM, h(0x3c00), h(0x7d00)).bits));  // signaling in
    CHECK(ref_is_quiet_nan(kHalfFmt, reduce1(CHORUS_PROD, h(0x7c00), h(0x0000)).bits));
    CHECK(ref_is_quiet_nan(kHalfFmt, reduce1(CHORUS_SUM, h(0x7c00), h(0xfc00)).bits));
    CHECK(reduce1(CHORUS_SUM, h(0x7c00), h(0x7c00)).bits == 0x7c00);
    CHECK(reduce1(CHORUS_PROD, h(0xfc00), h(0xc000)).bits == 0x7c00);  // -inf * -2
    // bfloat16: 0x7fc0 NaN, 0x7f80 inf, 0xff80 -inf, 0x3f80 1.0.
    CHECK(ref_is_quiet_nan(kBf16Fmt, reduce1(CHORUS_SUM, bf(0x7fc0), bf(0x3f80)).bits));
    CHECK(ref_is_quiet_nan(kBf16Fmt, reduce1(CHORUS_PROD, bf(0x3f80), bf(0x7f81)).bits));
    CHECK(ref_is_quiet_nan(kBf16Fmt, reduce1(CHORUS_SUM, bf(0x7f80), bf(0xff80)).bits));
    CHECK(ref_is_quiet_nan(kBf16Fmt, reduce1(CHORUS_PROD, bf(0xff80), bf(0x0000)).bits));
    CHECK(reduce1(CHORUS_SUM, bf(0x7f80), bf(0x3f80)).bits == 0x7f80);
}

TEST_CASE("MIN and MAX follow fmin/fmax: a NaN loses to a number, two NaNs give NaN", "[reducer][float]") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    CHECK(reduce1(CHORUS_MIN, nan, 3.0f) == 3.0f);
    CHECK(reduce1(CHORUS_MIN, 3.0f, nan) == 3.0f);
    CHECK(reduce1(CHORUS_MAX, nan, -3.0f) == -3.0f);
    CHECK(reduce1(CHORUS_MAX, -3.0f, nan) == -3.0f);
    CHECK(reduce1(CHORUS_MIN, -inf, nan) == -inf);
    CHECK(reduce1(CHORUS_MAX, nan, inf) == inf);
    CHECK(std::isnan(reduce1(CHORUS_MIN, nan, nan)));
    CHECK(std::isnan(reduce1(CHORUS_MAX, nan, nan)));
    CHECK(reduce1(CHORUS_MIN, 1.0f, -2.0f) == -2.0f);
    CHECK(reduce1(CHORUS_MAX, 1.0f, -2.0f) == 1.0f);
    const float z = reduce1(CHORUS_MIN, -0.0f, 0.0f);
    CHECK(z == 0.0f);  // either zero is acceptable

    const float snan = bits_f(0x7fa00000);  // signaling: loses to a number too
    CHECK(reduce1(CHORUS_MIN, snan, 3.0f) == 3.0f);
    CHECK(reduce1(CHORUS_MAX, 3.0f, snan) == 3.0f);

    const double dnan = std::numeric_limits<double>::quiet_NaN();
    CHECK(reduce1(CHORUS_MIN, dnan, -7.5) == -7.5);
    CHECK(reduce1(CHORUS_MAX, 7.5, dnan) == 7.5);
    CHECK(std::isnan(reduce1(CHORUS_MAX, dnan, dnan)));

    // float16 and bfloat16, NaN first or second, and a signaling NaN.
    CHECK(reduce1(CHORUS_MIN, h(0x7e00), h(0x4200)).bits == 0x4200);
    CHECK(reduce1(CHORUS_MIN, h(0x4200), h(0xfe00)).bits == 0x4200);
    CHECK(reduce1(CHORUS_MAX, h(0x7d00), h(0xc200)).bits == 0xc200);
    CHECK(ref_is_quiet_nan(kHalfFmt, reduce1(CHORUS_MAX, h(0x7e00), h(0x7d00)).bits));
    CHECK(reduce1(CHORUS_MIN, bf(0x7fc0), bf(0x4040)).bits == 0x4040);
    CHECK(reduce1(CHORUS_MAX, bf(0x4040), bf(0xffc1)).bits == 0x4040);
    CHECK(ref_is_quiet_nan(kBf16Fmt, reduce1(CHORUS_MIN, bf(0x7fc0), bf(0x7f81)).bits));
}

TEST_CASE("float32 and float64 handle subnormal operands and results", "[reducer][float]") {
    const float fmin = std::numeric_limits<float>::denorm_min();
    CHECK(reduce1(CHORUS_SUM, fmin, fmin) == 2 * fmin);
    CHECK(reduce1(CHORUS_SUM, FLT_MIN, -fmin) == FLT_MIN - fmin);  // normal - subnormal = subnormal
    CHECK(reduce1(CHORUS_PROD, fmin, 0.5f) == 0.0f);               // tie rounds to even (zero)
    CHECK(reduce1(CHORUS_PROD, 3 * fmin, 0.5f) == 2 * fmin);       // 1.5 ulp ties to 2
    const double dmin = std::numeric_limits<double>::denorm_min();
    CHECK(reduce1(CHORUS_SUM, dmin, dmin) == 2 * dmin);
    CHECK(reduce1(CHORUS_PROD, 3 * dmin, 0.5) == 2 * dmin);
}

// ===========================================================================
// float16 / bfloat16 rounding

TEST_CASE("float16 results round to nearest even at exact ties", "[reducer][fp16]") {
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even mantissa (1) wins.
    CHECK(reduce1(CHORUS_SUM, h(0x3c00), h(0x1000)).bits == 0x3c00);
    // 1 + 3 * 2^-11 is halfway between 0x3c01 (odd) and 0x3c02 (even).
    CHECK(reduce1(CHORUS_SUM, h(0x3c01), h(0x1000)).bits == 0x3c02);
    // Negative mirror.
    CHECK(reduce1(CHORUS_SUM, h(0xbc01), h(0x9000)).bits == 0xbc02);
    // 2049 = 2048 + 1 is halfway between 2048 and 2050 (ulp 2): 2048 is even.
    CHECK(reduce1(CHORUS_SUM, h(0x6800), h(0x3c00)).bits == 0x6800);
    // 2051 is halfway between 2050 (odd mantissa) and 2052 (even).
    CHECK(reduce1(CHORUS_SUM, h(0x6801), h(0x3c00)).bits == 0x6802);
    // Product off a tie: (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 rounds to 1 + 2^-9.
    CHECK(reduce1(CHORUS_PROD, h(0x3c01), h(0x3c01)).bits == 0x3c02);
    // Product ties: 3 * 683 = 2049 -> 2048 (even); 3 * 683.5 = 2050.5 is no tie -> 2050.
    CHECK(reduce1(CHORUS_PROD, h(0x4200), h(0x6156)).bits == 0x6800);
    CHECK(reduce1(CHORUS_PROD, h(0x4200), h(0x6157)).bits == 0x6801);
    // 5 * 819.5 = 4097.5, with 4096 and 4100 the neighbours: nearer 4096.
    CHECK(reduce1(CHORUS_PROD, h(0x4500), h(0x6267)).bits == 0x6c00);

    // Direct conversions at ties and just off them.
    CHECK(chorus::float_to_half(1.0f + 0x1p-11f) == 0x3c00);
    CHECK(chorus::float_to_half(1.0f + 0x1p-11f + 0x1p-23f) == 0x3c01);
    CHECK(chorus::float_to_half(1.0f + 0x1p-11f - 0x1p-24f) == 0x3c00);
    CHECK(chorus::float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);
    CHECK(chorus::float_to_half(-(1.0f + 3 * 0x1p-11f)) == 0xbc02);
    CHECK(chorus::float_to_half(0.1f) == 0x2e66);
}

TEST_CASE("bfloat16 results round to nearest even at exact ties", "[reducer][bf16]") {
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: 1 (even) wins.
    CHECK(reduce1(CHORUS_SUM, bf(0x3f80), bf(0x3b80)).bits == 0x3f80);
    // 1 + 3 * 2^-8: halfway between 0x3f81 (odd) and 0x3f82.
    CHECK(reduce1(CHORUS_SUM, bf(0x3f81), bf(0x3b80)).bits == 0x3f82);
    CHECK(reduce1(CHORUS_SUM, bf(0xbf81), bf(0xbb80)).bits == 0xbf82);
    // 257 = 256 + 1 is halfway between 256 and 258: 256 is even.
    CHECK(reduce1(CHORUS_SUM, bf(0x4380), bf(0x3f80)).bits == 0x4380);

    CHECK(chorus::float_to_bf16(1.0f + 0x1p-8f) == 0x3f80);
    CHECK(chorus::float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);
    CHECK(chorus::float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
    CHECK(chorus::float_to_bf16(bits_f(0x3f808000)) == 0x3f80);
    CHECK(chorus::float_to_bf16(bits_f(0x3f818000)) == 0x3f82);
    CHECK(chorus::float_to_bf16(bits_f(0x3f817fff)) == 0x3f81);
}

TEST_CASE("float16 subnormals: exact conversion, arithmetic, and rounding at ties", "[reducer][fp16]") {
    CHECK(chorus::half_to_float(0x0001) == 0x1p-24f);
    CHECK(chorus::half_to_float(0x03ff) == 1023 * 0x1p-24f);
    CHECK(chorus::half_to_float(0x8200) == -512 * 0x1p-24f);
    CHECK(chorus::half_to_float(0x0400) == 0x1p-14f);
    CHECK(chorus::float_to_half(0x1p-24f) == 0x0001);
    CHECK(chorus::float_to_half(0x1p-25f) == 0x0000);             // tie: zero is even
    CHECK(chorus::float_to_half(-0x1p-25f) == 0x8000);            // ... and keeps the sign
    CHECK(chorus::float_to_half(0x1p-25f + 0x1p-40f) == 0x0001);  // just above the tie
    CHECK(chorus::float_to_half(3 * 0x1p-25f) == 0x0002);         // 1.5 units -> 2
    CHECK(chorus::float_to_half(5 * 0x1p-25f) == 0x0002);         // 2.5 units -> 2
    CHECK(chorus::float_to_half(1023.5f * 0x1p-24f) == 0x0400);   // rounds up into the normals
    CHECK(chorus::float_to_half(1022.5f * 0x1p-24f) == 0x03fe);
    CHECK(chorus::float_to_half(std::numeric_limits<float>::denorm_min()) == 0x0000);
    CHECK(chorus::float_to_half(-std::numeric_limits<float>::denorm_min()) == 0x8000);
    CHECK(chorus::float_to_half(1e-30f) == 0x0000);

    CHECK(reduce1(CHORUS_SUM, h(0x0001), h(0x0001)).bits == 0x0002);
    CHECK(reduce1(CHORUS_SUM, h(0x03ff), h(0x0001)).bits == 0x0400);   // into the normal range
    CHECK(reduce1(CHORUS_SUM, h(0x0400), h(0x8001)).bits == 0x03ff);   // back out of it
    CHECK(reduce1(CHORUS_PROD, h(0x0001), h(0x3800)).bits == 0x0000);  // 2^-25: tie to zero
    CHECK(reduce1(CHORUS_PROD, h(0x0003), h(0x3800)).bits == 0x0002);  // 1.5 units -> 2
    CHECK(reduce1(CHORUS_PROD, h(0x8001), h(0x3800)).bits == 0x8000);  // negative zero
    CHECK(reduce1(CHORUS_PROD, h(0x0400), h(0x0400)).bits == 0x0000);  // 2^-28 underflows
    CHECK(reduce1(CHORUS_MIN, h(0x0001), h(0x8001)).bits == 0x8001);
}

TEST_CASE("bfloat16 subnormals: exact conversion, arithmetic, and rounding at ties", "[reducer][bf16]") {
    CHECK(chorus::bf16_to_float(0x0001) == 0x1p-133f);
    CHECK(chorus::float_to_bf16(0x1p-133f) == 0x0001);
    CHECK(chorus::float_to_bf16(bits_f(0x00008000)) == 0x0000);  // tie -> even (zero)
    CHECK(chorus::float_to_bf16(bits_f(0x00018000)) == 0x0002);  // tie -> even
    CHECK(chorus::float_to_bf16(bits_f(0x80008000)) == 0x8000);
    CHECK(reduce1(CHORUS_SUM, bf(0x0001), bf(0x0001)).bits == 0x0002);
    CHECK(reduce1(CHORUS_SUM, bf(0x007f), bf(0x0001)).bits == 0x0080);   // into the normals
    CHECK(reduce1(CHORUS_PROD, bf(0x0001), bf(0x3f00)).bits == 0x0000);  // half a unit: tie to zero
    CHECK(reduce1(CHORUS_PROD, bf(0x0003), bf(0x3f00)).bits == 0x0002);
}

TEST_CASE("float16 and bfloat16 overflow to infinity exactly where IEEE says", "[reducer][fp16][bf16]") {
    CHECK(chorus::float_to_half(65504.0f) == 0x7bff);
    CHECK(chorus::float_to_half(65519.99f) == 0x7bff);
    CHECK(chorus::float_to_half(65520.0f) == 0x7c00);  // the midpoint to 2^16 rounds to infinity
    CHECK(chorus::float_to_half(-65520.0f) == 0xfc00);
    CHECK(chorus::float_to_half(65536.0f) == 0x7c00);
    CHECK(chorus::float_to_half(1e30f) == 0x7c00);
    CHECK(chorus::float_to_half(FLT_MAX) == 0x7c00);
    CHECK(chorus::float_to_half(-FLT_MAX) == 0xfc00);
    CHECK(chorus::float_to_half(std::numeric_limits<float>::infinity()) == 0x7c00);
    CHECK(chorus::float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
    CHECK(reduce1(CHORUS_SUM, h(0x7bff), h(0x7bff)).bits == 0x7c00);
    CHECK(reduce1(CHORUS_SUM, h(0x7bff), h(0x4c00)).bits == 0x7c00);  // 65504 + 16 = 65520
    CHECK(reduce1(CHORUS_SUM, h(0x7bff), h(0x4b00)).bits == 0x7bff);  // 65504 + 14 = 65518
    CHECK(reduce1(CHORUS_PROD, h(0x7bff), h(0xc000)).bits == 0xfc00);
    CHECK(reduce1(CHORUS_SUM, h(0xfbff), h(0xfbff)).bits == 0xfc00);

    CHECK(chorus::float_to_bf16(FLT_MAX) == 0x7f80);  // rounds past the largest bf16
    CHECK(chorus::float_to_bf16(bits_f(0x7f7f7fff)) == 0x7f7f);
    CHECK(chorus::float_to_bf16(bits_f(0x7f7f8000)) == 0x7f80);  // tie, 0x7f7f odd -> up
    CHECK(chorus::float_to_bf16(bits_f(0xff7f8000)) == 0xff80);
    CHECK(chorus::float_to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
    CHECK(reduce1(CHORUS_SUM, bf(0x7f7f), bf(0x7f7f)).bits == 0x7f80);
    CHECK(reduce1(CHORUS_PROD, bf(0x7f7f), bf(0xc000)).bits == 0xff80);
}

TEST_CASE("NaN conversions stay quiet NaN and never become infinity", "[reducer][fp16][bf16]") {
    const uint32_t nans[] = {0x7f800001, 0x7fc00000, 0x7fffffff, 0xff800001, 0xffffffff, 0x7f802000, 0x7fa00000};
    for (uint32_t n : nans) {
        INFO("float bits " << hex(n));
        const uint16_t hh = chorus::float_to_half(bits_f(n));
        CHECK(ref_is_quiet_nan(kHalfFmt, hh));
        CHECK((hh & 0x8000) == ((n >> 16) & 0x8000));
        const uint16_t bb = chorus::float_to_bf16(bits_f(n));
        CHECK(ref_is_quiet_nan(kBf16Fmt, bb));
        CHECK((bb & 0x8000) == ((n >> 16) & 0x8000));
    }
    CHECK(chorus::float_to_bf16(bits_f(0x7fffffff)) == 0x7fff);  // would carry into 0x8000 if rounded
    CHECK(std::isnan(chorus::half_to_float(0x7c01)));
    CHECK(std::isnan(chorus::half_to_float(0xfe00)));
    CHECK(std::isinf(chorus::half_to_float(0x7c00)));
    CHECK(std::isnan(chorus::bf16_to_float(0x7f81)));
}

TEST_CASE("every float16 pattern converts exactly to float and back to itself", "[reducer][fp16]") {
    for (uint32_t p = 0; p <= 0xffff; ++p) {
        const uint16_t bits = static_cast<uint16_t>(p);
        const float f = chorus::half_to_float(bits);
        const uint16_t back = chorus::float_to_half(f);
        INFO("pattern " << hex(bits));
        if (ref_is_nan(kHalfFmt, bits)) {
            REQUIRE(std::isnan(f));
            REQUIRE(ref_is_quiet_nan(kHalfFmt, back));
            REQUIRE((back & 0x83ff) == ((bits | 0x0200) & 0x83ff));  // sign and payload kept, quieted
        } else {
            const double want = ref_decode(kHalfFmt, bits);
            REQUIRE(static_cast<double>(f) == want);
            REQUIRE(std::signbit(f) == std::signbit(want));
            REQUIRE(back == bits);
        }
    }
}

TEST_CASE("every bfloat16 pattern converts exactly to float and back to itself", "[reducer][bf16]") {
    for (uint32_t p = 0; p <= 0xffff; ++p) {
        const uint16_t bits = static_cast<uint16_t>(p);
        const float f = chorus::bf16_to_float(bits);
        const uint16_t back = chorus::float_to_bf16(f);
        INFO("pattern " << hex(bits));
        if (ref_is_nan(kBf16Fmt, bits)) {
            REQUIRE(std::isnan(f));
            REQUIRE(ref_is_quiet_nan(kBf16Fmt, back));
            REQUIRE((back & 0x807f) == ((bits | 0x0040) & 0x807f));
        } else {
            const double want = ref_decode(kBf16Fmt, bits);
            REQUIRE(static_cast<double>(f) == want);
            REQUIRE(std::signbit(f) == std::signbit(want));
            REQUIRE(back == bits);
        }
    }
}

namespace {

// Compare a float -> 16-bit conversion with ref_round on many floats: random
// bit patterns, floats near the format's range, and exact midpoints between
// neighbouring 16-bit values. Returns "" or the first mismatch.
template <typename Convert>
std::string compare_rounding(const Format16& f, Convert convert, uint64_t seed) {
    Rng rng(seed);
    const std::vector<double>& grid = ref_grid(f);
    auto check = [&](float x) -> std::string {
        const uint16_t got = convert(x);
        if (std::isnan(x)) return ref_is_quiet_nan(f, got) ? "" : "NaN " + hex(fbits(x)) + " gave " + hex(got);
        const uint16_t want = ref_round(f, static_cast<double>(x));
        if (got == want) return "";
        return std::string(f.name) + " of " + hex(fbits(x)) + " gave " + hex(got) + ", want " + hex(want);
    };
    // Float exponent fields from below the smallest subnormal to past the
    // largest finite value of the format, within float's finite range.
    const int exp_lo = std::max(0, 127 - f.bias - f.mant_bits - 3);
    const int exp_hi = std::min(254, 127 + (0x7fff >> f.mant_bits) - f.bias + 1);
    for (int i = 0; i < 150000; ++i) {
        const std::string a = check(bits_f(static_cast<uint32_t>(rng())));
        if (!a.empty()) return a;
        const uint64_t span = static_cast<uint64_t>(exp_hi - exp_lo + 1);
        const uint32_t e = static_cast<uint32_t>(exp_lo + static_cast<int>(rng() % span));
        const uint32_t bits = static_cast<uint32_t>(rng() & 0x807fffffu) | (e << 23);
        const std::string b = check(bits_f(bits));
        if (!b.empty()) return b;
        // Exact midpoint between two neighbouring values (representable in
        // float), including the one between the largest finite and infinity.
        const size_t k = static_cast<size_t>(rng() % (grid.size() - 1));
        const float mid = static_cast<float>((grid[k] + grid[k + 1]) / 2);
        const std::string c = check((rng() & 1) ? -mid : mid);
        if (!c.empty()) return c;
    }
    return "";
}

}  // namespace

TEST_CASE("float_to_half rounds 450000 floats exactly like an independent nearest-even search", "[reducer][fp16]") {
    REQUIRE(compare_rounding(
                kHalfFmt, [](float x) { return chorus::float_to_half(x); }, 11) == "");
}

TEST_CASE("float_to_bf16 rounds 450000 floats exactly like an independent nearest-even search", "[reducer][bf16]") {
    REQUIRE(compare_rounding(
                kBf16Fmt, [](float x) { return chorus::float_to_bf16(x); }, 12) == "");
}

// ===========================================================================
// host_divide (AVG finalisation)

TEST_CASE("host_divide truncates integers toward zero", "[reducer][divide]") {
    int8_t i8[] = {-7, 7, -1, -128, 127, 0};
    chorus::host_divide(CHORUS_INT8, i8, 6, 2);
    CHECK(i8[0] == -3);
    CHECK(i8[1] == 3);
    CHECK(i8[2] == 0);
    CHECK(i8[3] == -64);
    CHECK(i8[4] == 63);
    CHECK(i8[5] == 0);
    int8_t m8 = -128;
    chorus::host_divide(CHORUS_INT8, &m8, 1, 3);
    CHECK(m8 == -42);
    int8_t big_divisor = -128;
    chorus::host_divide(CHORUS_INT8, &big_divisor, 1, 1000);
    CHECK(big_divisor == 0);
    uint8_t u8 = 255;
    chorus::host_divide(CHORUS_UINT8, &u8, 1, 2);
    CHECK(u8 == 127);
    int16_t i16[] = {-7, -32768};
    chorus::host_divide(CHORUS_INT16, i16, 2, 2);
    CHECK(i16[0] == -3);
    CHECK(i16[1] == -16384);
    int32_t i32[] = {-7, INT32_MIN, INT32_MAX};
    chorus::host_divide(CHORUS_INT32, i32, 3, 2);
    CHECK(i32[0] == -3);
    CHECK(i32[1] == INT32_MIN / 2);
    CHECK(i32[2] == INT32_MAX / 2);
    uint32_t u32 = UINT32_MAX;
    chorus::host_divide(CHORUS_UINT32, &u32, 1, 3);
    CHECK(u32 == UINT32_MAX / 3);
    int64_t i64[] = {-7, INT64_MIN};
    chorus::host_divide(CHORUS_INT64, i64, 2, 2);
    CHECK(i64[0] == -3);
    CHECK(i64[1] == INT64_MIN / 2);
    uint64_t u64 = UINT64_MAX;
    chorus::host_divide(CHORUS_UINT64, &u64, 1, 7);
    CHECK(u64 == UINT64_MAX / 7);
}

TEST_CASE("host_divide rounds floating quotients once, to nearest even", "[reducer][divide]") {
    float f[] = {1.0f, -7.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
    chorus::host_divide(CHORUS_FLOAT32, f, 4, 3);
    CHECK(f[0] == 1.0f / 3.0f);
    CHECK(f[1] == -7.0f / 3.0f);
    CHECK(f[2] == std::numeric_limits<float>::infinity());
    CHECK(std::isnan(f[3]));
    double d = 1.0;
    chorus::host_divide(CHORUS_FLOAT64, &d, 1, 3);
    CHECK(d == 1.0 / 3.0);
    Half hv[] = {h(0x3c00), h(0x4200), h(0x0001), h(0x7e00)};  // 1, 3, smallest subnormal, NaN
    chorus::host_divide(CHORUS_FLOAT16, hv, 4, 3);
    CHECK(hv[0].bits == 0x3555);  // 1/3 rounded to nearest
    CHECK(hv[1].bits == 0x3c00);
    CHECK(hv[2].bits == 0x0000);  // 1/3 of a unit rounds to zero
    CHECK(ref_is_nan(kHalfFmt, hv[3].bits));
    Half tie = h(0x0003);  // 3 units / 2 = 1.5 units: tie -> 2 units
    chorus::host_divide(CHORUS_FLOAT16, &tie, 1, 2);
    CHECK(tie.bits == 0x0002);
    BFloat16 bv[] = {bf(0x3f80), bf(0x0003)};
    chorus::host_divide(CHORUS_BFLOAT16, bv, 2, 2);
    CHECK(bv[0].bits == 0x3f00);
    CHECK(bv[1].bits == 0x0002);
}

TEST_CASE("host_divide by 1 leaves every datatype unchanged", "[reducer][divide]") {
    for (chorus_datatype_t dt : kAllTypes) {
        with_type(dt, [&](auto tag) {
            using T = decltype(tag);
            const std::vector<T> v = random_vector<T>(333, 5);
            std::vector<T> w = v;
            chorus::host_divide(dt, w.data(), w.size(), 1);
            INFO(chorus::datatype_name(dt));
            REQUIRE(std::memcmp(v.data(), w.data(), v.size() * sizeof(T)) == 0);
        });
    }
}

TEST_CASE("host_divide matches the reference for every datatype on random data", "[reducer][divide]") {
    const int divisors[] = {2, 3, 5, 7, 8, 24, 100, 255};
    const size_t counts[] = {1, 17, 100003};
    uint64_t seed = 9000;
    for (chorus_datatype_t dt : kAllTypes) {
        for (int d : divisors) {
            for (size_t count : counts) {
                if (count > 1000 && d != 3 && d != 8) continue;
                std::string why;
                with_type(dt, [&](auto tag) {
                    using T = decltype(tag);
                    const std::vector<T> v = random_vector<T>(count, seed++);
                    std::vector<T> w = v;
                    chorus::host_divide(dt, w.data(), count, d);
                    for (size_t i = 0; i < count && why.empty(); ++i) {
                        why = check_divide<T>(v[i], d, w[i]);
                        if (!why.empty()) why = "element " + std::to_string(i) + ": " + why;
                    }
                });
                INFO(chorus::datatype_name(dt) << " divisor " << d << " count " << count);
                REQUIRE(why == "");
            }
        }
    }
}

TEST_CASE("AVG end to end: reduce as SUM, then divide by the number of contributions", "[reducer][divide]") {
    // Three contributions, integers: (-7 + 0 + 2) / 3 = -5/3 -> -1 (toward zero).
    std::vector<int32_t> acc = {-7, 10, INT32_MAX};
    const std::vector<int32_t> c1 = {0, 11, 1}, c2 = {2, 12, 0};
    chorus::host_reduce(CHORUS_INT32, CHORUS_AVG, acc.data(), acc.data(), c1.data(), acc.size());
    chorus::host_reduce(CHORUS_INT32, CHORUS_AVG, acc.data(), acc.data(), c2.data(), acc.size());
    chorus::host_divide(CHORUS_INT32, acc.data(), acc.size(), 3);
    CHECK(acc[0] == -1);
    CHECK(acc[1] == 11);
    CHECK(acc[2] == INT32_MIN / 3);  // the wrapped sum, divided
    // Floating: (1 + 2) / 2 in float16 is 1.5 exactly.
    Half s = reduce1(CHORUS_AVG, h(0x3c00), h(0x4000));
    chorus::host_divide(CHORUS_FLOAT16, &s, 1, 2);
    CHECK(s.bits == 0x3e00);
}
