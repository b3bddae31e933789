// Test inputs whose exact result is known, and that result, computed
// independently of Chorus's reducers from per-rank seeds.
//
// Floating inputs are chosen so that every result is exact whatever the
// reduction order: small integers for SUM and AVG, +-1 and one +-2 or +-0.5
// per element for PROD, arbitrary values for MIN and MAX. Integer inputs are
// random over the whole range, so SUM and PROD wrap; the reference wraps with
// modular arithmetic. Comparison is therefore bitwise.
//
// The bitwise and logical operators (integer types only) get random inputs
// too, except that for the logical ones each element follows a pattern
// chosen by its index, so that every outcome appears at any number of
// ranks: every rank non-zero, every rank zero, exactly one rank zero, or
// each rank zero with probability 1/2. Non-zero inputs are random bits
// (often with a clear low bit), never just 1.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "chorus.h"
#include "reduce/half.h"
#include "seeds.h"

namespace ref {

using seeds::bits;
using seeds::mix;

inline bool is_float(chorus_datatype_t dt) {
    return dt == CHORUS_FLOAT16 || dt == CHORUS_BFLOAT16 || dt == CHORUS_FLOAT32 || dt == CHORUS_FLOAT64;
}

inline size_t esize(chorus_datatype_t dt) {
    switch (dt) {
        case CHORUS_INT8: case CHORUS_UINT8: return 1;
        case CHORUS_INT16: case CHORUS_UINT16: case CHORUS_FLOAT16: case CHORUS_BFLOAT16: return 2;
        case CHORUS_INT32: case CHORUS_UINT32: case CHORUS_FLOAT32: return 4;
        default: return 8;
    }
}

// Store a double (already exact or to be rounded) as a floating element.
inline void store_float(chorus_datatype_t dt, void* buf, size_t i, double v) {
    switch (dt) {
        case CHORUS_FLOAT16: { uint16_t h = chorus::float_to_half(static_cast<float>(v)); std::memcpy(static_cast<char*>(buf) + 2 * i, &h, 2); break; }
        case CHORUS_BFLOAT16: { uint16_t h = chorus::float_to_bf16(static_cast<float>(v)); std::memcpy(static_cast<char*>(buf) + 2 * i, &h, 2); break; }
        case CHORUS_FLOAT32: { float f = static_cast<float>(v); std::memcpy(static_cast<char*>(buf) + 4 * i, &f, 4); break; }
        default: std::memcpy(static_cast<char*>(buf) + 8 * i, &v, 8); break;
    }
}

inline double load_float(chorus_datatype_t dt, const void* buf, size_t i) {
    const char* p = static_cast<const char*>(buf);
    switch (dt) {
        case CHORUS_FLOAT16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); return chorus::half_to_float(h); }
        case CHORUS_BFLOAT16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); return chorus::bf16_to_float(h); }
        case CHORUS_FLOAT32: { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
        default: { double d; std::memcpy(&d, p + 8 * i, 8); return d; }
    }
}

// The value rank `rank` of `n` contributes at element i, as a double before
// rounding to the type (floating types only).
inline double float_input(chorus_op_t op, int rank, int n, uint64_t seed, size_t i) {
    uint64_t b = bits(seed, rank, i);
    switch (op) {
        case CHORUS_SUM:
        case CHORUS_AVG: return static_cast<double>(static_cast<int>(b % 17) - 8);
        case CHORUS_PROD:
            if (static_cast<size_t>(rank) == i % static_cast<size_t>(n)) return (b & 1 ? 2.0 : 0.5) * (b & 2 ? -1 : 1);
            return b & 1 ? -1.0 : 1.0;
        default: return (static_cast<double>(b % 2001) - 1000.0) / 4.0;
    }
}

inline bool is_logical(chorus_op_t op) {
    return op == CHORUS_LAND || op == CHORUS_LOR || op == CHORUS_LXOR;
}

// The value rank `rank` of `n` contributes at element i, in the low `w`
// bytes (integer types only).
inline uint64_t int_input(chorus_op_t op, size_t w, int rank, int n, uint64_t seed, size_t i) {
    uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
    uint64_t b = bits(seed, rank, i);
    if (!is_logical(op)) return b & mask;
    uint64_t nonzero = (b >> 8) & mask;
    if (nonzero == 0) nonzero = mask & ~1ull;  // non-zero with a clear low bit
    bool zero;
    switch (i % 4) {
        case 0: zero = false; break;
        case 1: zero = true; break;
        case 2: zero = static_cast<size_t>(rank) == (i / 4) % static_cast<size_t>(n); break;
        default: zero = (b & 1) != 0; break;
    }
    return zero ? 0 : nonzero;
}

inline void fill_input(chorus_datatype_t dt, chorus_op_t op, int rank, int n, uint64_t seed, void* buf,
                       size_t count) {
    if (is_float(dt)) {
        for (size_t i = 0; i < count; ++i) store_float(dt, buf, i, float_input(op, rank, n, seed, i));
        return;
    }
    size_t w = esize(dt);
    for (size_t i = 0; i < count; ++i) {
        uint64_t v = int_input(op, w, rank, n, seed, i);
        std::memcpy(static_cast<char*>(buf) + w * i, &v, w);  // little-endian truncation
    }
}

inline bool is_signed(chorus_datatype_t dt) {
    return dt == CHORUS_INT8 || dt == CHORUS_INT16 || dt == CHORUS_INT32 || dt == CHORUS_INT64;
}

// Sign- or zero-extend the low `w` bytes of v to 64 bits.
inline int64_t extend(uint64_t v, size_t w, bool sign) {
    if (w == 8) return static_cast<int64_t>(v);
    unsigned shift = 64 - 8 * static_cast<unsigned>(w);
    v <<= shift;
    return sign ? static_cast<int64_t>(v) >> shift : static_cast<int64_t>(v >> shift);
}

// The exact result of reducing every rank's input with `op`.
inline void expected(chorus_datatype_t dt, chorus_op_t op, int n, uint64_t seed, void* out, size_t count) {
    if (is_float(dt)) {
        std::vector<char> tmp(esize(dt));
        for (size_t i = 0; i < count; ++i) {
            double acc = 0;
            for (int r = 0; r < n; ++r) {
                // The value as stored in the type, back in double.
                store_float(dt, tmp.data(), 0, float_input(op, r, n, seed, i));
                double v = load_float(dt, tmp.data(), 0);
                if (r == 0) acc = v;
                else if (op == CHORUS_SUM || op == CHORUS_AVG) acc += v;
                else if (op == CHORUS_PROD) acc *= v;
                else if (op == CHORUS_MIN) acc = v < acc ? v : acc;
                else acc = v > acc ? v : acc;
            }
            if (op == CHORUS_AVG) acc /= n;
            store_float(dt, out, i, acc);
        }
        return;
    }
    size_t w = esize(dt);
    bool sign = is_signed(dt);
    uint64_t mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
    for (size_t i = 0; i < count; ++i) {
        uint64_t acc = 0;
        for (int r = 0; r < n; ++r) {
            uint64_t v = int_input(op, w, r, n, seed, i);
            if (r == 0) { acc = v; continue; }  // one rank: its input as is, for every op
            switch (op) {
                case CHORUS_SUM: case CHORUS_AVG: acc = (acc + v) & mask; break;
                case CHORUS_PROD: acc = (acc * v) & mask; break;
                case CHORUS_MIN: acc = (sign ? extend(v, w, true) < extend(acc, w, true) : v < acc) ? v : acc; break;
                case CHORUS_MAX: acc = (sign ? extend(v, w, true) > extend(acc, w, true) : v > acc) ? v : acc; break;
                case CHORUS_BAND: acc &= v; break;
                case CHORUS_BOR: acc |= v; break;
                case CHORUS_BXOR: acc ^= v; break;
                case CHORUS_LAND: acc = (acc != 0 && v != 0) ? 1 : 0; break;
                case CHORUS_LOR: acc = (acc != 0 || v != 0) ? 1 : 0; break;
                case CHORUS_LXOR: acc = ((acc != 0) != (v != 0)) ? 1 : 0; break;
            }
        }
        if (op == CHORUS_AVG) {
            if (sign) acc = static_cast<uint64_t>(extend(acc, w, true) / n) & mask;
            else acc = acc / static_cast<uint64_t>(n);
        }
        std::memcpy(static_cast<char*>(out) + w * i, &acc, w);
    }
}

// First index where a and b differ, or -1.
inline long first_difference(const void* a, const void* b, size_t count, size_t w) {
    if (count == 0) return -1;
    if (std::memcmp(a, b, count * w) == 0) return -1;
    for (size_t i = 0; i < count; ++i)
        if (std::memcmp(static_cast<const char*>(a) + i * w, static_cast<const char*>(b) + i * w, w) != 0)
            return static_cast<long>(i);
    return -1;
}

inline const chorus_datatype_t kAllTypes[] = {CHORUS_INT8,  CHORUS_UINT8,   CHORUS_INT16,    CHORUS_UINT16,
                                              CHORUS_INT32, CHORUS_UINT32,  CHORUS_INT64,    CHORUS_UINT64,
                                              CHORUS_FLOAT16, CHORUS_BFLOAT16, CHORUS_FLOAT32, CHORUS_FLOAT64};
// The operators every datatype supports.
inline const chorus_op_t kAllOps[] = {CHORUS_SUM, CHORUS_PROD, CHORUS_MIN, CHORUS_MAX, CHORUS_AVG};
// The operators only the integer types support.
inline const chorus_op_t kIntegerOps[] = {CHORUS_BAND, CHORUS_BOR, CHORUS_BXOR, CHORUS_LAND, CHORUS_LOR, CHORUS_LXOR};
inline const chorus_datatype_t kIntegerTypes[] = {CHORUS_INT8,  CHORUS_UINT8,  CHORUS_INT16, CHORUS_UINT16,
                                                  CHORUS_INT32, CHORUS_UINT32, CHORUS_INT64, CHORUS_UINT64};

}  // namespace ref
