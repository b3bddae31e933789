// Reduce-scatter, reduce and all-reduce algorithms on the loopback transport,
// each forced by name: many rank counts (powers of two and not), every
// datatype and op at small counts, awkward and large counts, irregular
// reduce_scatterv blocks with empty ones, every kind of root, in and out of
// place, tiny pipeline chunks with a tiny window, and rendezvous sends. The
// oracle (collective_check.h) checks every rank bitwise and that nothing
// outside the output was written.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "collective_check.h"

using chorus::coll::CollArgs;
using chorus::coll::Collective;
using test::CollCase;

namespace {

const int kRanks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 31, 64};
const size_t kLarge = 20011;

struct Shape {
    chorus_datatype_t dt;
    chorus_op_t op;
};
// A few datatype/op pairs for the counts where the full grid would be slow.
const Shape kSome[] = {{CHORUS_FLOAT32, CHORUS_SUM}, {CHORUS_INT32, CHORUS_PROD}, {CHORUS_FLOAT16, CHORUS_AVG},
                       {CHORUS_UINT8, CHORUS_MAX},   {CHORUS_INT64, CHORUS_AVG},  {CHORUS_BFLOAT16, CHORUS_MIN}};

void both_ways(test::LoopbackGroup& g, CollCase c) {
    for (bool in_place : {false, true}) {
        c.in_place = in_place;
        test::check_collective(g, c);
    }
}

void one(test::LoopbackGroup& g, CollCase& c, Shape s, size_t count) {
    c.dt = s.dt;
    c.op = s.op;
    c.count = count;
    both_ways(g, c);
    ++c.seed;
}

// Every datatype x op at `small` counts, then the pairs of kSome at `counts`.
void sweep(test::LoopbackGroup& g, CollCase c, const std::vector<size_t>& small, const std::vector<size_t>& counts) {
    for (size_t n : small)
        for (auto dt : ref::kAllTypes)
            for (auto op : ref::kAllOps) one(g, c, {dt, op}, n);
    for (size_t n : counts)
        for (const Shape& s : kSome) one(g, c, s, n);
}

// The full type x op grid at two small counts up to 16 ranks, one beyond.
std::vector<size_t> small_counts(int p) {
    return p <= 16 ? std::vector<size_t>{1, size_t(p) + 1} : std::vector<size_t>{size_t(p) + 1};
}

std::vector<size_t> awkward_counts(int p) {
    return {0, 1, size_t(p) - 1, size_t(p) + 1};
}

// reduce_scatterv block layouts: some blocks empty and sizes uneven (small,
// then large), and a single rank getting everything.
std::vector<std::vector<size_t>> irregular_blocks(int p) {
    std::vector<std::vector<size_t>> all(3, std::vector<size_t>(p));
    for (int i = 0; i < p; ++i) {
        all[0][i] = size_t(i) * 7 % 5;
        all[1][i] = (size_t(i) * 7 % 5) * (kLarge / (2 * p) + 1);
    }
    all[2][p - 1] = 1000;
    return all;
}

void reduce_scatter_suite(test::LoopbackGroup& g, int p) {
    CollCase c;
    c.coll = Collective::ReduceScatter;
    c.seed = 100 + p;
    std::vector<size_t> counts = awkward_counts(p);
    counts.push_back(kLarge / p + 1);  // per block: the total is large
    sweep(g, c, small_counts(p), counts);
    for (const auto& blocks : irregular_blocks(p)) {
        c.counts = blocks;
        for (const Shape& s : kSome) one(g, c, s, 0);
    }
}

void reduce_suite(test::LoopbackGroup& g, int p) {
    CollCase c;
    c.coll = Collective::Reduce;
    c.seed = 200 + p;
    const int roots[] = {0, p / 2, p - 1};
    c.root = roots[(p + 1) % 3];
    sweep(g, c, small_counts(p), {});
    for (int root : roots) {
        c.root = root;
        sweep(g, c, {}, awkward_counts(p));
    }
    // The oracle checks every byte of every non-root receive buffer, so the
    // large count takes one shape, root and direction per rank count.
    const Shape s = p > 16 ? kSome[0] : kSome[p % 6];
    c.dt = s.dt;
    c.op = s.op;
    c.count = kLarge;
    c.root = roots[p % 3];
    c.in_place = p % 2 == 1;
    test::check_collective(g, c);
}

void allreduce_suite(test::LoopbackGroup& g, int p) {
    CollCase c;
    c.coll = Collective::Allreduce;
    c.seed = 300 + p;
    std::vector<size_t> counts = awkward_counts(p);
    counts.push_back(kLarge);
    sweep(g, c, small_counts(p), counts);
}

void all_ranks(Collective coll, const char* algo, void (*suite)(test::LoopbackGroup&, int)) {
    for (int p : kRanks) {
        INFO(algo);
        test::LoopbackGroup g(p, test::forced(coll, algo));
        suite(g, p);
    }
}

// Tiny chunks (many pieces, windows full, slots reused) and rendezvous
// sends (a send completes only once its receiver takes it).
void stress(Collective coll, const char* algo) {
    for (int p : {2, 3, 5, 6, 8, 13, 31})
        for (int window : {1, 2})
            for (bool rendezvous : {false, true}) {
                if (!rendezvous && window == 1) continue;
                INFO(algo << " window " << window << (rendezvous ? " rendezvous" : ""));
                test::LoopbackGroup g(p, test::forced(coll, algo, 64, window), rendezvous);
                CollCase c;
                c.coll = coll;
                c.seed = 400 + p;
                c.root = p / 2;
                const size_t n = coll == Collective::Allreduce ? 3001
                                 : coll == Collective::Reduce  ? 1001
                                                               : 2003 / p + 1;
                for (Shape s : {Shape{CHORUS_FLOAT32, CHORUS_SUM}, Shape{CHORUS_INT8, CHORUS_AVG},
                                Shape{CHORUS_FLOAT64, CHORUS_PROD}}) {
                    c.counts.clear();
                    one(g, c, s, n);
                    if (coll != Collective::ReduceScatter) continue;
                    c.counts = irregular_blocks(p)[1];
                    one(g, c, s, 0);
                }
            }
}

// Every two steps of one rank that touch the same bytes, one of them writing,
// must be ordered by dependencies. The loopback transport copies a message
// when it is posted, so it cannot see a buffer overwritten under a send still
// in flight; this can. Recv is taken to alias Send (in place) wherever the
// collective allows it. Returns the number of unordered pairs.
int unordered_pairs(const CollArgs& a, chorus::coll::Builder build) {
    using chorus::Buf;
    using chorus::StepKind;
    auto sched = build(a);
    const auto& st = sched->steps();
    const size_t n = st.size(), es = chorus::datatype_size(a.dtype);
    const bool alias = a.coll != Collective::Reduce || a.rank == a.root;
    struct Use {
        int buf;
        size_t b, e;
        bool write;
    };
    auto use = [&](chorus::Region r, size_t bytes, bool write) {
        int buf = r.buf == Buf::Scratch ? 2 : r.buf == Buf::Recv && !alias ? 1 : 0;
        return Use{buf, r.offset, r.offset + bytes, write};
    };
    std::vector<std::vector<uint64_t>> before(n, std::vector<uint64_t>((n + 63) / 64));
    std::vector<std::vector<Use>> uses(n);
    for (size_t i = 0; i < n; ++i) {
        for (uint32_t k = 0; k < sched->ndeps(i); ++k) {
            uint32_t d = sched->deps_of(i)[k];
            for (size_t w = 0; w < before[i].size(); ++w) before[i][w] |= before[d][w];
            before[i][d / 64] |= uint64_t(1) << (d % 64);
        }
        const auto& x = st[i];
        const size_t bytes = x.kind == StepKind::Reduce || x.kind == StepKind::Divide ? x.count * es : x.bytes;
        if (x.kind == StepKind::Send || x.kind == StepKind::Copy || x.kind == StepKind::Reduce)
            uses[i].push_back(use(x.src, bytes, false));
        if (x.kind == StepKind::Reduce) uses[i].push_back(use(x.src2, bytes, false));
        if (x.kind != StepKind::Send) uses[i].push_back(use(x.dst, bytes, true));
    }
    int bad = 0;
    for (size_t j = 0; j < n; ++j)
        for (size_t i = 0; i < j; ++i) {
            if (before[j][i / 64] >> (i % 64) & 1) continue;
            bool clash = false;
            for (const Use& u : uses[i])
                for (const Use& v : uses[j])
                    clash = clash || ((u.write || v.write) && u.buf == v.buf && u.b < v.e && v.b < u.e);
            bad += clash;
        }
    return bad;
}

void check_ordering(Collective coll, chorus::coll::Builder build) {
    const int layouts = coll == Collective::ReduceScatter ? 3 : 1;
    for (int p = 1; p <= 13; ++p)
        for (size_t chunk : {8, 64, 65536})
            for (size_t count : {size_t(1), size_t(p) + 1, size_t(37)})
                for (int layout = 0; layout < layouts; ++layout)
                    for (int root : {0, p / 2, p - 1})
                        for (int r = 0; r < p && (root == 0 || coll == Collective::Reduce); ++r) {
                            CollArgs a;
                            a.coll = coll;
                            a.size = p;
                            a.rank = r;
                            a.root = root;
                            a.count = count;
                            a.op = CHORUS_AVG;
                            a.chunk_bytes = chunk;
                            a.depth = 2;
                            for (int i = 0; layout && i < p; ++i)
                                a.counts.push_back(layout == 1 ? size_t(i) * 7 % 5 * count : i == p - 1 ? count : 0);
                            INFO("p=" << p << " rank " << r << " root " << root << " count " << count << " chunk "
                                      << chunk << " layout " << layout);
                            REQUIRE(unordered_pairs(a, build) == 0);
                        }
}

}  // namespace

TEST_CASE("reduce_scatter algorithms are exact on any rank count, layout and input", "[loopback][reduce_scatter]") {
    for (const char* algo : {"halving", "ring"}) all_ranks(Collective::ReduceScatter, algo, reduce_scatter_suite);
}

TEST_CASE("reduce_scatter algorithms survive tiny chunks and rendezvous sends", "[loopback][reduce_scatter]") {
    for (const char* algo : {"halving", "ring"}) stress(Collective::ReduceScatter, algo);
}

TEST_CASE("reduce algorithms are exact for every root, rank count and input", "[loopback][reduce]") {
    for (const char* algo : {"binomial", "reduce_scatter_gather"}) all_ranks(Collective::Reduce, algo, reduce_suite);
}

TEST_CASE("reduce algorithms survive tiny chunks and rendezvous sends", "[loopback][reduce]") {
    for (const char* algo : {"binomial", "reduce_scatter_gather"}) stress(Collective::Reduce, algo);
}

TEST_CASE("allreduce algorithms are exact on any rank count and input", "[loopback][allreduce]") {
    for (const char* algo : {"ring", "recursive_doubling", "rabenseifner"})
        all_ranks(Collective::Allreduce, algo, allreduce_suite);
}

TEST_CASE("allreduce algorithms survive tiny chunks and rendezvous sends", "[loopback][allreduce]") {
    for (const char* algo : {"ring", "recursive_doubling", "rabenseifner"}) stress(Collective::Allreduce, algo);
}

TEST_CASE("reduction schedules order every two accesses to the same bytes",
          "[loopback][reduce_scatter][reduce][allreduce]") {
    using namespace chorus::coll;
    check_ordering(Collective::ReduceScatter, build_halving_reduce_scatter);
    check_ordering(Collective::ReduceScatter, build_ring_reduce_scatter);
    check_ordering(Collective::Reduce, build_binomial_reduce);
    check_ordering(Collective::Reduce, build_reduce_scatter_gather_reduce);
    check_ordering(Collective::Allreduce, build_recursive_doubling_allreduce);
    check_ordering(Collective::Allreduce, build_rabenseifner_allreduce);
    check_ordering(Collective::Allreduce, build_ring_allreduce);
}
