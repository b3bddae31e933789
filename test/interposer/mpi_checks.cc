// Reductions on every mapped (datatype, op) pair, broadcast and all-gather on
// every datatype and on derived ones, derived and freed communicators, and
// calls the interposer must pass through.
//
// Inputs are chosen so that every result is exact whatever the order of
// reduction (small integers for floating SUM, +-1 and one +-2 or +-0.5 for
// PROD), so results are compared bitwise. Integer sums and products wrap.
#include "mpi_checks.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "check_util.h"

namespace checks {

namespace {

bool is_logical(MPI_Op op) {
    return op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
}

// Pairs that the MPI underneath computes wrongly, left out when the calls
// reach it (plain_mpi); the interposer computes them right.
template <typename T>
bool mpi_gets_wrong(MPI_Datatype type, MPI_Op op) {
    if (op != MPI_MIN && op != MPI_MAX) return false;
#if defined(OPEN_MPI)
    // Open MPI 4.1.2 to 4.1.4 compare MPI_UNSIGNED_LONG as signed in MIN and
    // MAX (open-mpi/ompi#10525, fixed in 4.1.5).
    return type == MPI_UNSIGNED_LONG;
#elif defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000 && MPICH_NUMVERSION < 40003000
    // MPICH 4.0 to 4.0.2 compare every unsigned integer type as signed in
    // MIN and MAX, even in MPI_Reduce_local (pmodels/mpich#6083).
    (void)type;
    return std::is_unsigned<T>::value;
#else
    (void)type;
    return false;
#endif
}

// Boolean inputs (MPI_C_BOOL) are 0 or 1 in an unsigned char.
template <typename T>
T input(MPI_Op op, bool boolean, int rank, int n, uint64_t seed, size_t i) {
    const uint64_t b = bits(seed, rank, i);
    if constexpr (std::is_integral<T>::value) {
        if (!is_logical(op) && !boolean) return static_cast<T>(b);
        bool zero;  // every outcome of the logical ops appears at any n
        switch (i % 4) {
            case 0: zero = false; break;
            case 1: zero = true; break;
            case 2: zero = static_cast<size_t>(rank) == (i / 4) % static_cast<size_t>(n); break;
            default: zero = (b & 1) != 0; break;
        }
        if (zero) return T(0);
        if (boolean) return T(1);
        T v = static_cast<T>(b >> 8);
        return v != T(0) ? v : T(2);
    } else {
        if (op == MPI_SUM) return static_cast<T>(static_cast<int>(b % 17) - 8);
        if (op == MPI_PROD) {
            if (static_cast<size_t>(rank) == i % static_cast<size_t>(n))
                return static_cast<T>((b & 1 ? 2.0 : 0.5) * (b & 2 ? -1 : 1));
            return static_cast<T>(b & 1 ? -1.0 : 1.0);
        }
        return static_cast<T>((static_cast<double>(b % 2001) - 1000.0) / 4.0);
    }
}

template <typename T>
T fold(MPI_Op op, T a, T b) {
    if constexpr (std::is_integral<T>::value) {
        const uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
        if (op == MPI_SUM) return static_cast<T>(x + y);
        if (op == MPI_PROD) return static_cast<T>(x * y);
        if (op == MPI_MIN) return b < a ? b : a;
        if (op == MPI_MAX) return a < b ? b : a;
        if (op == MPI_BAND) return static_cast<T>(x & y);
        if (op == MPI_BOR) return static_cast<T>(x | y);
        if (op == MPI_BXOR) return static_cast<T>(x ^ y);
        if (op == MPI_LAND) return static_cast<T>(a != 0 && b != 0);
        if (op == MPI_LOR) return static_cast<T>(a != 0 || b != 0);
        return static_cast<T>((a != 0) != (b != 0));
    } else {
        if (op == MPI_SUM) return a + b;
        if (op == MPI_PROD) return a * b;
        if (op == MPI_MIN) return b < a ? b : a;
        return a < b ? b : a;
    }
}

template <typename T>
struct Series {
    MPI_Op op;
    bool boolean;
    int n;
    uint64_t seed;
    std::vector<T> of(int rank, size_t count) const {
        std::vector<T> v(count + 1);  // never empty: no null buffers
        for (size_t i = 0; i < count; ++i) v[i] = input<T>(op, boolean, rank, n, seed, i);
        return v;
    }
    std::vector<T> reduced(size_t count) const {
        std::vector<T> v = of(0, count);
        for (int r = 1; r < n; ++r)
            for (size_t i = 0; i < count; ++i) v[i] = fold(op, v[i], input<T>(op, boolean, r, n, seed, i));
        return v;
    }
};

const char* op_name(MPI_Op op) {
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX, MPI_BAND,
                          MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};
    const char* names[] = {"sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor"};
    for (int k = 0; k < 10; ++k)
        if (ops[k] == op) return names[k];
    return "?";
}

template <typename T>
void reductions(Ctx& c, const char* type_name, MPI_Datatype type, const std::vector<MPI_Op>& ops,
                bool boolean = false) {
    const int p = c.size, me = c.rank;
    for (MPI_Op op : ops) {
        if (c.plain_mpi && mpi_gets_wrong<T>(type, op)) continue;
        const Series<T> s{op, boolean, p, ++c.seed};
        auto what = [&](const char* coll, size_t count, const std::string& extra) {
            return std::string(coll) + " " + type_name + " " + op_name(op) + " count " + std::to_string(count) + extra;
        };
        for (size_t count : {size_t{0}, size_t{1}, size_t{1000}}) {
            for (bool in_place : {false, true}) {
                std::vector<T> in = s.of(me, count), out(count + 1, T(7));
                int rc = in_place ? MPI_Allreduce(MPI_IN_PLACE, in.data(), (int)count, type, op, MPI_COMM_WORLD)
                                  : MPI_Allreduce(in.data(), out.data(), (int)count, type, op, MPI_COMM_WORLD);
                c.check(rc, what("MPI_Allreduce", count, in_place ? " in place" : ""), in_place ? in : out,
                        s.reduced(count), count, true);
            }
        }
        const int roots[] = {0, p - 1, p / 2};
        for (int k = 0; k < 3; ++k) {
            const int root = roots[k];
            const size_t count = k == 2 ? 0 : 7;
            for (bool in_place : {false, true}) {
                std::vector<T> in = s.of(me, count), out(count + 1, T(7));
                const bool ip = in_place && me == root;
                int rc = ip ? MPI_Reduce(MPI_IN_PLACE, in.data(), (int)count, type, op, root, MPI_COMM_WORLD)
                            : MPI_Reduce(in.data(), me == root ? out.data() : nullptr, (int)count, type, op, root,
                                         MPI_COMM_WORLD);
                std::string extra = " root " + std::to_string(root) + (in_place ? " in place" : "");
                c.check(rc, what("MPI_Reduce", count, extra), ip ? in : out, s.reduced(count), me == root ? count : 0,
                        true);
            }
        }
        for (size_t block : {size_t{0}, size_t{3}}) {
            const size_t total = block * p;
            std::vector<T> want = s.reduced(total);
            std::vector<T> mine(want.begin() + me * block, want.begin() + (me + 1) * block);
            for (bool in_place : {false, true}) {
                std::vector<T> in = s.of(me, total), out(block + 1, T(7));
                int rc = in_place
                             ? MPI_Reduce_scatter_block(MPI_IN_PLACE, in.data(), (int)block, type, op, MPI_COMM_WORLD)
                             : MPI_Reduce_scatter_block(in.data(), out.data(), (int)block, type, op, MPI_COMM_WORLD);
                c.check(rc, what("MPI_Reduce_scatter_block", block, in_place ? " in place" : ""), in_place ? in : out,
                        mine, block, true);
            }
        }
        // Irregular blocks with zeros: odd ranks get 2r+1 elements, even ones none (one rank: 5).
        std::vector<int> counts(p);
        std::vector<size_t> starts(p);
        size_t total = 0;
        for (int r = 0; r < p; ++r) {
            counts[r] = p == 1 ? 5 : (r % 2 ? 2 * r + 1 : 0);
            starts[r] = total;
            total += counts[r];
        }
        std::vector<T> want = s.reduced(total);
        std::vector<T> mine(want.begin() + starts[me], want.begin() + starts[me] + counts[me]);
        for (bool in_place : {false, true}) {
            std::vector<T> in = s.of(me, total), out(counts[me] + 1, T(7));
            int rc = in_place ? MPI_Reduce_scatter(MPI_IN_PLACE, in.data(), counts.data(), type, op, MPI_COMM_WORLD)
                              : MPI_Reduce_scatter(in.data(), out.data(), counts.data(), type, op, MPI_COMM_WORLD);
            c.check(rc, what("MPI_Reduce_scatter", total, in_place ? " in place" : ""), in_place ? in : out, mine,
                    counts[me], true);
        }
    }
}

const std::vector<MPI_Op> kIntOps = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX, MPI_BAND,
                                     MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};
const std::vector<MPI_Op> kFloatOps = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
const std::vector<MPI_Op> kLogicalOps = {MPI_LAND, MPI_LOR, MPI_LXOR};

void all_reductions(Ctx& c) {
    reductions<char>(c, "MPI_CHAR", MPI_CHAR, kIntOps);
    reductions<signed char>(c, "MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, kIntOps);
    reductions<unsigned char>(c, "MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, kIntOps);
    reductions<short>(c, "MPI_SHORT", MPI_SHORT, kIntOps);
    reductions<unsigned short>(c, "MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, kIntOps);
    reductions<int>(c, "MPI_INT", MPI_INT, kIntOps);
    reductions<unsigned>(c, "MPI_UNSIGNED", MPI_UNSIGNED, kIntOps);
    reductions<long>(c, "MPI_LONG", MPI_LONG, kIntOps);
    reductions<unsigned long>(c, "MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, kIntOps);
    reductions<long long>(c, "MPI_LONG_LONG", MPI_LONG_LONG, kIntOps);
    reductions<unsigned long long>(c, "MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, kIntOps);
    reductions<int8_t>(c, "MPI_INT8_T", MPI_INT8_T, kIntOps);
    reductions<uint8_t>(c, "MPI_UINT8_T", MPI_UINT8_T, kIntOps);
    reductions<int16_t>(c, "MPI_INT16_T", MPI_INT16_T, kIntOps);
    reductions<uint16_t>(c, "MPI_UINT16_T", MPI_UINT16_T, kIntOps);
    reductions<int32_t>(c, "MPI_INT32_T", MPI_INT32_T, kIntOps);
    reductions<uint32_t>(c, "MPI_UINT32_T", MPI_UINT32_T, kIntOps);
    reductions<int64_t>(c, "MPI_INT64_T", MPI_INT64_T, kIntOps);
    reductions<uint64_t>(c, "MPI_UINT64_T", MPI_UINT64_T, kIntOps);
    reductions<float>(c, "MPI_FLOAT", MPI_FLOAT, kFloatOps);
    reductions<double>(c, "MPI_DOUBLE", MPI_DOUBLE, kFloatOps);
    static_assert(sizeof(bool) == 1, "MPI_C_BOOL is checked as one byte");
    reductions<unsigned char>(c, "MPI_C_BOOL", MPI_C_BOOL, kLogicalOps, true);
    // Fortran types, through their C handles.
    int isize = 0;
    MPI_Type_size(MPI_INTEGER, &isize);
    if (isize == 4) reductions<int32_t>(c, "MPI_INTEGER", MPI_INTEGER, {MPI_SUM, MPI_MAX, MPI_BXOR});
    int dsize = 0;
    MPI_Type_size(MPI_DOUBLE_PRECISION, &dsize);
    if (dsize == 8) reductions<double>(c, "MPI_DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, {MPI_SUM, MPI_MIN});
    // Large enough to be pipelined.
    const Series<double> big{MPI_SUM, false, c.size, ++c.seed};
    const size_t n = size_t{1} << 20;
    std::vector<double> in = big.of(c.rank, n), out(n + 1);
    int rc = MPI_Allreduce(in.data(), out.data(), (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    c.check(rc, "MPI_Allreduce MPI_DOUBLE sum of 8 MiB", out, big.reduced(n), n, true);
}

}  // namespace

int run_all(int rank, int size, bool plain_mpi, Tally& tally) {
    Ctx c{rank, size, tally, plain_mpi};
    all_reductions(c);
    all_movement(c);
    vector_movement(c);
    communicators(c);
    pass_through(c);
    return c.failures;
}

}  // namespace checks
