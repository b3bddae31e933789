#include "bench_types.h"

#include <algorithm>

namespace bench {

namespace {

const TypeInfo kTypes[] = {
    {"int8", CHORUS_INT8, 1, false, true, MPI_INT8_T},
    {"uint8", CHORUS_UINT8, 1, false, false, MPI_UINT8_T},
    {"int16", CHORUS_INT16, 2, false, true, MPI_INT16_T},
    {"uint16", CHORUS_UINT16, 2, false, false, MPI_UINT16_T},
    {"int32", CHORUS_INT32, 4, false, true, MPI_INT32_T},
    {"uint32", CHORUS_UINT32, 4, false, false, MPI_UINT32_T},
    {"int64", CHORUS_INT64, 8, false, true, MPI_INT64_T},
    {"uint64", CHORUS_UINT64, 8, false, false, MPI_UINT64_T},
    {"float16", CHORUS_FLOAT16, 2, true, true, MPI_DATATYPE_NULL},
    {"bfloat16", CHORUS_BFLOAT16, 2, true, true, MPI_DATATYPE_NULL},
    {"float32", CHORUS_FLOAT32, 4, true, true, MPI_FLOAT},
    {"float64", CHORUS_FLOAT64, 8, true, true, MPI_DOUBLE},
};

const OpInfo kOps[] = {
    {"sum", CHORUS_SUM, MPI_SUM}, {"prod", CHORUS_PROD, MPI_PROD},  {"min", CHORUS_MIN, MPI_MIN},
    {"max", CHORUS_MAX, MPI_MAX}, {"avg", CHORUS_AVG, MPI_OP_NULL},
};

uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t hash(int rank, size_t i) {
    return mix((static_cast<uint64_t>(rank) << 40) ^ mix(i));
}

uint64_t mask_of(size_t size) {
    return size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

int64_t sign_extend(uint64_t v, size_t size) {
    const unsigned shift = 64 - 8 * static_cast<unsigned>(size);
    return static_cast<int64_t>(v << shift) >> shift;
}

uint32_t float_bits(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return x;
}

float bits_float(uint32_t x) {
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

// The bit pattern of value `v` stored as element type t (low t.size bytes).
uint64_t encode_float(const TypeInfo& t, double v) {
    switch (t.dt) {
        case CHORUS_FLOAT16: return float_to_half(static_cast<float>(v));
        case CHORUS_BFLOAT16: return float_to_bf16(static_cast<float>(v));
        case CHORUS_FLOAT32: return float_bits(static_cast<float>(v));
        default: {
            uint64_t x;
            std::memcpy(&x, &v, 8);
            return x;
        }
    }
}

double float_input(chorus_op_t op, int rank, int nranks, size_t i) {
    const uint64_t h = hash(rank, i);
    switch (op) {
        case CHORUS_SUM:
        case CHORUS_AVG: return static_cast<double>(static_cast<int>(h % 7) - 3);
        case CHORUS_PROD:
            if (static_cast<size_t>(rank) == i % static_cast<size_t>(nranks)) return (h & 1) ? 2.0 : -2.0;
            return (h & 2) ? 1.0 : -1.0;
        default: return static_cast<double>(static_cast<int>(h % 201) - 100);
    }
}

// Rank `rank`'s input at global index i, as stored bits.
uint64_t input_bits(const TypeInfo& t, chorus_op_t op, int rank, int nranks, size_t i) {
    if (t.is_float) return encode_float(t, float_input(op, rank, nranks, i));
    return hash(rank, i) & mask_of(t.size);
}

uint64_t reduced_float(const TypeInfo& t, chorus_op_t op, int nranks, size_t i) {
    double acc = float_input(op, 0, nranks, i);
    for (int r = 1; r < nranks; ++r) {
        const double v = float_input(op, r, nranks, i);
        switch (op) {
            case CHORUS_SUM:
            case CHORUS_AVG: acc += v; break;
            case CHORUS_PROD: acc *= v; break;
            case CHORUS_MIN: acc = std::min(acc, v); break;
            default: acc = std::max(acc, v); break;
        }
    }
    if (op != CHORUS_AVG) return encode_float(t, acc);
    if (t.dt == CHORUS_FLOAT64) return encode_float(t, acc / static_cast<double>(nranks));
    // float32, float16 and bfloat16 divide in binary32 and round once.
    const float q = static_cast<float>(acc) / static_cast<float>(nranks);
    return encode_float(t, q);
}

uint64_t reduced_int(const TypeInfo& t, chorus_op_t op, int nranks, size_t i) {
    const uint64_t mask = mask_of(t.size);
    uint64_t acc = input_bits(t, op, 0, nranks, i);
    for (int r = 1; r < nranks; ++r) {
        const uint64_t v = input_bits(t, op, r, nranks, i);
        const bool less = t.is_signed ? sign_extend(v, t.size) < sign_extend(acc, t.size) : v < acc;
        switch (op) {
            case CHORUS_SUM:
            case CHORUS_AVG: acc = (acc + v) & mask; break;
            case CHORUS_PROD: acc = (acc * v) & mask; break;
            case CHORUS_MIN: acc = less ? v : acc; break;
            default: acc = (!less && v != acc) ? v : acc; break;
        }
    }
    if (op != CHORUS_AVG) return acc;
    if (t.is_signed) return static_cast<uint64_t>(sign_extend(acc, t.size) / nranks) & mask;
    return acc / static_cast<uint64_t>(nranks);
}

void store_bits(void* buf, size_t k, size_t size, uint64_t v) {
    unsigned char* p = static_cast<unsigned char*>(buf) + k * size;
    for (size_t b = 0; b < size; ++b) p[b] = static_cast<unsigned char>(v >> (8 * b));
}

uint64_t load_bits(const void* buf, size_t k, size_t size) {
    const unsigned char* p = static_cast<const unsigned char*>(buf) + k * size;
    uint64_t v = 0;
    for (size_t b = 0; b < size; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
    return v;
}

}  // namespace

const TypeInfo* find_type(const std::string& name) {
    for (const auto& t : kTypes)
        if (name == t.name) return &t;
    return nullptr;
}

const OpInfo* find_op(const std::string& name) {
    for (const auto& o : kOps)
        if (name == o.name) return &o;
    return nullptr;
}

MPI_Datatype same_size_type(size_t size) {
    switch (size) {
        case 1: return MPI_UINT8_T;
        case 2: return MPI_UINT16_T;
        case 4: return MPI_UINT32_T;
        case 8: return MPI_UINT64_T;
        default: return MPI_DATATYPE_NULL;
    }
}

std::string type_names() {
    std::string s;
    for (const auto& t : kTypes) s += (s.empty() ? "" : " ") + std::string(t.name);
    return s;
}

std::string op_names() {
    std::string s;
    for (const auto& o : kOps) s += (s.empty() ? "" : " ") + std::string(o.name);
    return s;
}

uint16_t float_to_half(float f) {
    const uint32_t x = float_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
    const uint32_t a = x & 0x7fffffff;
    if (a >= 0x7f800000) return sign | (a > 0x7f800000 ? 0x7e00 : 0x7c00);  // NaN, inf
    if (a >= 0x477ff000) return sign | 0x7c00;                              // rounds past 65504
    if (a < 0x38800000) {                                                   // half subnormal or zero
        if (a <= 0x33000000) return sign;                                   // <= 2^-25: ties to 0
        const uint32_t e = a >> 23;
        const uint32_t m = (a & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - e;
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (q & 1))) ++q;
        return static_cast<uint16_t>(sign | q);
    }
    const uint32_t r = a + 0xfff + ((a >> 13) & 1) - 0x38000000;
    return static_cast<uint16_t>(sign | (r >> 13));
}

float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;
    if (e == 0x1f) return bits_float(sign | 0x7f800000 | (m << 13));
    if (e != 0) return bits_float(sign | ((e + 112) << 23) | (m << 13));
    if (m == 0) return bits_float(sign);
    int exp = 113;  // normalise a subnormal
    while (!(m & 0x400)) {
        m <<= 1;
        --exp;
    }
    return bits_float(sign | (static_cast<uint32_t>(exp) << 23) | ((m & 0x3ff) << 13));
}

uint16_t float_to_bf16(float f) {
    const uint32_t x = float_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
    return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float bf16_to_float(uint16_t h) {
    return bits_float(static_cast<uint32_t>(h) << 16);
}

void fill_input(const TypeInfo& t, chorus_op_t op, int rank, int nranks, size_t first, void* buf, size_t count) {
    for (size_t k = 0; k < count; ++k) store_bits(buf, k, t.size, input_bits(t, op, rank, nranks, first + k));
}

size_t check_reduced(const TypeInfo& t, chorus_op_t op, int nranks, size_t first, const void* buf, size_t count) {
    size_t bad = 0;
    for (size_t k = 0; k < count; ++k) {
        const uint64_t want =
            t.is_float ? reduced_float(t, op, nranks, first + k) : reduced_int(t, op, nranks, first + k);
        if (load_bits(buf, k, t.size) != (want & mask_of(t.size))) ++bad;
    }
    return bad;
}

size_t check_copied(const TypeInfo& t, chorus_op_t op, int src, int nranks, size_t first, const void* buf,
                    size_t count) {
    size_t bad = 0;
    for (size_t k = 0; k < count; ++k)
        if (load_bits(buf, k, t.size) != input_bits(t, op, src, nranks, first + k)) ++bad;
    return bad;
}

}  // namespace bench
