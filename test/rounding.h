// Floating inputs whose reductions ROUND, so that the result depends on the
// order in which the ranks' contributions are combined (reference.h chooses
// the opposite: inputs exact in any order), and inputs full of NaNs with
// distinct payloads, infinities and signed zeros. With them:
//
//  - in_documented_order() computes what an algorithm must produce when it
//    combines each element in the order its header comment documents, with
//    the type's own rounding after every operation (binary32 for float16
//    and bfloat16, as chorus.h specifies). Only the grouping of the
//    operations matters for finite inputs (a op b == b op a bit for bit for
//    SUM and PROD), so the model follows the documented tree or chain and
//    nothing else.
//  - special_violation() checks the IEEE facts a NaN/infinity result must
//    obey whatever the order: SUM, PROD and AVG propagate NaNs and make
//    inf - inf a NaN; MIN and MAX follow fmin/fmax (a NaN loses to a number,
//    and only an all-NaN element gives a NaN, one of the inputs' own).
//
// Element bits travel as uint64_t (the low esize bytes, little-endian).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "chorus.h"
#include "coll/partition.h"
#include "reduce/half.h"
#include "reference.h"

namespace rounding {

using ref::esize;

inline const chorus_datatype_t kFloatTypes[] = {CHORUS_FLOAT16, CHORUS_BFLOAT16, CHORUS_FLOAT32, CHORUS_FLOAT64};
// The operators whose floating result depends on the order of the operations.
inline const chorus_op_t kRoundingOps[] = {CHORUS_SUM, CHORUS_PROD, CHORUS_AVG};

struct Format {
    int mant_bits, bias;
};
inline Format format(chorus_datatype_t dt) {
    switch (dt) {
        case CHORUS_FLOAT16: return {10, 15};
        case CHORUS_BFLOAT16: return {7, 127};
        case CHORUS_FLOAT32: return {23, 127};
        default: return {52, 1023};
    }
}

inline uint64_t load_bits(chorus_datatype_t dt, const void* buf, size_t i) {
    uint64_t v = 0;
    std::memcpy(&v, static_cast<const char*>(buf) + i * esize(dt), esize(dt));
    return v;
}
inline void store_bits(chorus_datatype_t dt, void* buf, size_t i, uint64_t v) {
    std::memcpy(static_cast<char*>(buf) + i * esize(dt), &v, esize(dt));
}

// sign * 1.mant * 2^e, with `mant` the type's fraction bits.
inline uint64_t make_float(chorus_datatype_t dt, bool negative, int e, uint64_t mant) {
    const Format f = format(dt);
    const int bits = 8 * static_cast<int>(esize(dt));
    uint64_t exp = static_cast<uint64_t>(e + f.bias);
    return (uint64_t(negative) << (bits - 1)) | (exp << f.mant_bits) | (mant & ((uint64_t(1) << f.mant_bits) - 1));
}

// A quiet NaN with the given sign and (non-zero) payload below the quiet bit.
inline uint64_t make_nan(chorus_datatype_t dt, bool negative, uint64_t payload) {
    const Format f = format(dt);
    const int bits = 8 * static_cast<int>(esize(dt));
    const uint64_t exp_all = ((uint64_t(1) << (bits - 1 - f.mant_bits)) - 1) << f.mant_bits;
    const uint64_t quiet = uint64_t(1) << (f.mant_bits - 1);
    return (uint64_t(negative) << (bits - 1)) | exp_all | quiet | (payload % (quiet - 1) + 1);
}
inline uint64_t make_inf(chorus_datatype_t dt, bool negative) {
    const Format f = format(dt);
    const int bits = 8 * static_cast<int>(esize(dt));
    return (uint64_t(negative) << (bits - 1)) | (((uint64_t(1) << (bits - 1 - f.mant_bits)) - 1) << f.mant_bits);
}

// The element as a double (exact for every type; NaNs stay NaNs).
inline double value(chorus_datatype_t dt, uint64_t v) {
    switch (dt) {
        case CHORUS_FLOAT16: return chorus::half_to_float(static_cast<uint16_t>(v));
        case CHORUS_BFLOAT16: return chorus::bf16_to_float(static_cast<uint16_t>(v));
        case CHORUS_FLOAT32: {
            float x;
            uint32_t u = static_cast<uint32_t>(v);
            std::memcpy(&x, &u, 4);
            return x;
        }
        default: {
            double x;
            std::memcpy(&x, &v, 8);
            return x;
        }
    }
}

// Rank `rank`'s input at element i: +-1.m * 2^e with a random fraction m.
// For SUM and AVG, e is spread over about the width of the fraction (-8..8
// for float16, -5..5 for bfloat16, -21..21 for float32, -30..30 for
// float64), so that most additions drop bits of the smaller term but no
// term is lost entirely; for PROD e is -1 or 0, so that products stay in
// range while every multiplication rounds.
inline uint64_t rounding_input(chorus_datatype_t dt, chorus_op_t op, int rank, uint64_t seed, size_t i) {
    uint64_t b = seeds::bits(seed, rank, i), m = seeds::mix(b);
    const int spread = op == CHORUS_PROD ? 0 : std::min(30, format(dt).mant_bits - 2);
    int e = op == CHORUS_PROD ? -static_cast<int>(b & 1) : static_cast<int>((b >> 8) % (2 * spread + 1)) - spread;
    return make_float(dt, (b >> 1) & 1, e, m);
}

// Inputs for the NaN tests. Finite values are small (|x| < 2^7) for SUM,
// AVG, MIN and MAX and +-1 for PROD, so that no finite result overflows;
// MIN and MAX also get signed zeros. Element i follows pattern i % 6:
//   0: one rank (chosen by i) has a NaN, the others numbers;
//   1: every rank a NaN, each with its own payload, some negative;
//   2: each rank draws from NaN, -NaN, +inf, -inf and numbers;
//   3: +inf on one rank and -inf on another, numbers elsewhere;
//   4: infinities of one sign on some ranks, numbers elsewhere;
//   5: two ranks with NaNs of different payloads, numbers elsewhere.
inline uint64_t special_input(chorus_datatype_t dt, chorus_op_t op, int rank, int p, uint64_t seed, size_t i) {
    const uint64_t b = seeds::bits(seed, rank, i);
    const int chosen = static_cast<int>((i / 6) % static_cast<size_t>(p));
    const uint64_t payload = uint64_t(rank) + i;  // distinct across up to 63 ranks (bfloat16's 6 bits)
    uint64_t number;
    if (op == CHORUS_PROD) {
        number = make_float(dt, b & 1, 0, 0);
    } else if ((op == CHORUS_MIN || op == CHORUS_MAX) && (b >> 4) % 5 == 0) {
        number = uint64_t((b >> 7) & 1) << (8 * esize(dt) - 1);  // +0 or -0
    } else {
        number = make_float(dt, b & 1, static_cast<int>((b >> 8) % 13) - 6, seeds::mix(b));
    }
    switch (i % 6) {
        case 0: return rank == chosen ? make_nan(dt, b & 2, payload) : number;
        case 1: return make_nan(dt, rank % 3 == 1, payload);
        case 2:
            switch ((b >> 16) % 6) {
                case 0: return make_nan(dt, false, payload);
                case 1: return make_nan(dt, true, payload);
                case 2: return make_inf(dt, false);
                case 3: return make_inf(dt, true);
                default: return number;
            }
        case 3:
            if (rank == chosen) return make_inf(dt, false);
            return rank == (chosen + 1) % p ? make_inf(dt, true) : number;
        case 4: return (b >> 20) % 3 == 0 ? make_inf(dt, (i / 6) % 2) : number;
        default:
            if (rank == chosen || rank == (chosen + 2) % p) return make_nan(dt, rank != chosen, payload);
            return number;
    }
}

// Every rank's input (total elements each): rounding inputs, or with
// `special` the NaN/infinity ones.
inline std::vector<std::vector<char>> all_inputs(chorus_datatype_t dt, chorus_op_t op, bool special, int p,
                                                 uint64_t seed, size_t total) {
    std::vector<std::vector<char>> in(p, std::vector<char>(total * esize(dt)));
    for (int r = 0; r < p; ++r)
        for (size_t i = 0; i < total; ++i)
            store_bits(dt, in[r].data(), i,
                       special ? special_input(dt, op, r, p, seed, i) : rounding_input(dt, op, r, seed, i));
    return in;
}

// a op b, rounded to the type (binary32 arithmetic for the 16-bit types).
inline uint64_t combine(chorus_datatype_t dt, chorus_op_t op, uint64_t a, uint64_t b) {
    const bool prod = op == CHORUS_PROD;
    if (dt == CHORUS_FLOAT64) {
        double x = value(dt, a), y = value(dt, b), r = prod ? x * y : x + y;
        uint64_t out;
        std::memcpy(&out, &r, 8);
        return out;
    }
    float x = static_cast<float>(value(dt, a)), y = static_cast<float>(value(dt, b)), r = prod ? x * y : x + y;
    if (dt == CHORUS_FLOAT16) return chorus::float_to_half(r);
    if (dt == CHORUS_BFLOAT16) return chorus::float_to_bf16(r);
    uint32_t u;
    std::memcpy(&u, &r, 4);
    return u;
}

inline uint64_t divide(chorus_datatype_t dt, uint64_t a, int n) {
    if (n == 1) return a;
    if (dt == CHORUS_FLOAT64) {
        double r = value(dt, a) / n;
        uint64_t out;
        std::memcpy(&out, &r, 8);
        return out;
    }
    float r = static_cast<float>(value(dt, a)) / static_cast<float>(n);
    if (dt == CHORUS_FLOAT16) return chorus::float_to_half(r);
    if (dt == CHORUS_BFLOAT16) return chorus::float_to_bf16(r);
    uint32_t u;
    std::memcpy(&u, &r, 4);
    return u;
}

// One reduction over p ranks of one element: x[r] is rank r's input.
struct Element {
    chorus_datatype_t dt;
    chorus_op_t op;
    const std::vector<uint64_t>& x;
    uint64_t f(uint64_t a, uint64_t b) const { return combine(dt, op, a, b); }
};

// The butterfly of the recursive algorithms (lib/coll/doubling/reduce_scatter_impl.h's
// Fold): of the first 2*rem ranks, each odd rank takes x[r-1] op x[r]; the
// pp = pow2_floor(p) ranks left each combine with partner nr ^ mask, the
// lower new rank first, for mask = pp/2 .. 1 (halving) or 1 .. pp/2
// (doubling). Every new rank ends with the same value.
inline uint64_t butterfly(const Element& el, int p, bool halving) {
    int pp = 1;
    while (pp * 2 <= p) pp *= 2;
    const int rem = p - pp;
    std::vector<uint64_t> part(pp);
    for (int nr = 0; nr < pp; ++nr) part[nr] = nr < rem ? el.f(el.x[2 * nr], el.x[2 * nr + 1]) : el.x[nr + rem];
    for (int k = 1; k < pp; k *= 2) {
        const int mask = halving ? pp / (2 * k) : k;
        std::vector<uint64_t> next(pp);
        for (int nr = 0; nr < pp; ++nr) next[nr] = el.f(part[std::min(nr, nr ^ mask)], part[std::max(nr, nr ^ mask)]);
        part = std::move(next);
    }
    return part[0];
}

// Binomial tree relative to the root: a rank folds its children's partial
// results into its own input in increasing order: ((x op c1) op c2) ...
inline uint64_t binomial(const Element& el, int p, int root, int rel) {
    uint64_t acc = el.x[(rel + root) % p];
    int low = rel == 0 ? 1 << 30 : (rel & -rel);
    for (int m = 1; m < low && rel + m < p; m <<= 1) acc = el.f(acc, binomial(el, p, root, rel + m));
    return acc;
}

// The value an element gets from algorithm `algo` of collective `coll`
// (flat: one level) whose ranks' inputs are el.x (p of them, in group rank
// order), for an element of block `block` (of split(total, p, .) blocks; a
// reduce-scatter's own block numbers), before AVG's division. False for an
// algorithm whose order this model does not know.
inline bool flat_order(const std::string& coll, const std::string& algo, const Element& el, int p, int root, int block,
                       uint64_t* out) {
    const std::vector<uint64_t>& x = el.x;
    const std::string key = coll + ":" + algo;
    uint64_t v = x[0];
    if (p == 1) {
        // A single rank's input as is.
    } else if (key == "allreduce:ring") {
        // Block b starts at rank b; each next rank combines its input
        // with the partial it receives.
        v = x[block];
        for (int k = 1; k < p; ++k) v = el.f(x[(block + k) % p], v);
    } else if (key == "reduce_scatter:ring") {
        // Block b starts at rank b+1 and ends at rank b, each rank
        // reducing its input into the received partial.
        v = x[(block + 1) % p];
        for (int k = 2; k <= p; ++k) v = el.f(v, x[(block + k) % p]);
    } else if (algo == "one_sided") {
        // The owner of block b reads it from every rank in the order
        // b, b+1, ..., reducing each into its partial.
        v = x[block];
        for (int k = 1; k < p; ++k) v = el.f(v, x[(block + k) % p]);
    } else if (algo == "shm_flat" || algo == "shm_pipeline") {
        // Every rank (the owner of an element's block, for the pipeline)
        // folds the published inputs in rank order.
        for (int r = 1; r < p; ++r) v = el.f(v, x[r]);
    } else if (key == "reduce:binomial") {
        v = binomial(el, p, root, 0);
    } else if (key == "allreduce:recursive_doubling") {
        v = butterfly(el, p, false);
    } else if (key == "allreduce:rabenseifner" || key == "reduce_scatter:halving" ||
               key == "reduce:reduce_scatter_gather") {
        v = butterfly(el, p, true);
    } else {
        return false;
    }
    *out = v;
    return true;
}

// What the algorithm must give for every element of a reduction whose
// inputs are `in[r]` (total elements each; a reduce_scatter's blocks are
// `counts`, all of them concatenated in the result). Empty (and `why` set)
// for an algorithm whose order this model does not know.
inline std::vector<char> in_documented_order(const std::string& coll, const std::string& algo, chorus_datatype_t dt,
                                             chorus_op_t op, int root, const std::vector<size_t>& counts,
                                             const std::vector<std::vector<char>>& in, std::string* why) {
    const int p = static_cast<int>(in.size());
    const size_t total = in.empty() ? 0 : in[0].size() / esize(dt);
    std::vector<size_t> off(p + 1, 0);  // where block b starts
    for (int b = 0; b < p; ++b)
        off[b + 1] = coll == "reduce_scatter" ? off[b] + counts[b] : chorus::coll::split(total, p, b).end;
    std::vector<char> out(total * esize(dt));
    std::vector<uint64_t> x(p);
    const Element el{dt, op == CHORUS_AVG ? CHORUS_SUM : op, x};
    int block = 0;
    for (size_t i = 0; i < total; ++i) {
        while (block + 1 < p && off[block + 1] <= i) ++block;
        for (int r = 0; r < p; ++r) x[r] = load_bits(dt, in[r].data(), i);
        uint64_t v = 0;
        if (!flat_order(coll, algo, el, p, root, block, &v)) {
            if (why) *why = "no documented order for " + coll + ":" + algo;
            return {};
        }
        if (op == CHORUS_AVG) v = divide(dt, v, p);
        store_bits(dt, out.data(), i, v);
    }
    return out;
}

inline std::string expected_got(double want, double got) {
    char text[80];
    std::snprintf(text, sizeof text, "expected %.17g, got %.17g", want, got);
    return text;
}

// Empty when `got` is a result the rules allow for inputs x[0..p); otherwise
// what is wrong. SUM, PROD and AVG: NaN exactly when an input is NaN or
// infinities of both signs meet (SUM, AVG), else an infinity when an input
// is one (with the sign the inputs give), else finite. MIN and MAX: one of
// the inputs bit for bit, the smallest (largest) number, -0 and +0 counting
// as equal, or, when every input is a NaN, one of those NaNs.
inline std::string special_violation(chorus_datatype_t dt, chorus_op_t op, const std::vector<uint64_t>& x,
                                     uint64_t got) {
    const double g = value(dt, got);
    bool any_nan = false, pos_inf = false, neg_inf = false, any_number = false, negative = false;
    double best = 0;
    for (uint64_t v : x) {
        double d = value(dt, v);
        if (std::isnan(d)) {
            any_nan = true;
            continue;
        }
        pos_inf = pos_inf || d == INFINITY;
        neg_inf = neg_inf || d == -INFINITY;
        negative = negative != std::signbit(d);
        best = !any_number ? d : op == CHORUS_MIN ? std::min(best, d) : std::max(best, d);
        any_number = true;
    }
    if (op == CHORUS_MIN || op == CHORUS_MAX) {
        if (!any_number) {
            for (uint64_t v : x)
                if (v == got) return "";
            return "an all-NaN element gave bits that are none of the inputs' NaNs";
        }
        if (std::isnan(g)) return "a NaN beat a number (fmin/fmax: a NaN loses to a number)";
        if (g != best) return expected_got(best, g);
        for (uint64_t v : x)
            if (v == got) return "";
        return "the result is none of the inputs bit for bit";
    }
    const bool want_nan = any_nan || (op != CHORUS_PROD && pos_inf && neg_inf);
    if (want_nan) return std::isnan(g) ? "" : "a NaN input (or inf - inf) gave a number";
    if (std::isnan(g)) return "numbers and infinities gave a NaN";
    if (pos_inf || neg_inf) {
        double want = op == CHORUS_PROD ? (negative ? -INFINITY : INFINITY) : pos_inf ? INFINITY : -INFINITY;
        return g == want ? "" : expected_got(want, g);
    }
    return std::isinf(g) ? "finite inputs gave an infinity" : "";
}

}  // namespace rounding
