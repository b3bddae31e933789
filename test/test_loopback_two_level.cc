// The two-level algorithms on emulated hosts (the loopback transport's host
// labels), each forced by name:
//
//  - against the reference (test/reference.h; the data-movement ones:
//    test/movement_check.h, all-gatherv with irregular and skewed blocks at
//    shuffled displacements), bitwise, nothing else written, at layouts
//    2+2, 2+1+1, 3+1, 4x8, interleaved and shuffled hosts, for messages
//    on both sides of the phases' switch from the latency-bound to the
//    bandwidth-bound algorithms, in and out of place,
//    at several roots, with many pieces and with sends that complete only
//    when received; the forced algorithm is the one that ran;
//  - with inputs that round (test/rounding.h): every rank gets the bytes of
//    the documented order of the phases (test/rounding_two_level.h), so the
//    ranks of an all-reduce agree bit for bit, and a second run with other
//    flow control and some ranks in place gives the bytes of its own phases'
//    order (the same bytes where the window changes no phase's choice);
//  - on emulated device buffers;
//  - on one host, or one rank a host, they leave the choice to the cost
//    model, which never picks one there.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "coll/planner/topology.h"
#include "collective_check.h"
#include "rounding_two_level.h"

using chorus::coll::Collective;
using chorus::coll::HostMap;

namespace {

struct Forced {
    Collective coll;
    const char* algo;
    bool rails;  // hosts of one size only
};
const Forced kTwoLevel[] = {
    {Collective::Allreduce, "two_level_rails", true},
    {Collective::Allreduce, "two_level_leaders", false},
    {Collective::Broadcast, "two_level", false},
    {Collective::Reduce, "two_level", false},
    {Collective::ReduceScatter, "two_level_rails", true},
    {Collective::ReduceScatter, "two_level_leaders", false},
    {Collective::Allgather, "two_level_rails", true},
    {Collective::Allgather, "two_level_leaders", false},
    {Collective::Allgatherv, "two_level_leaders", false},
    {Collective::Gather, "two_level", false},
    {Collective::Scatter, "two_level", false},
    {Collective::Alltoall, "two_level_leaders", false},
    {Collective::Barrier, "two_level", false},
    // Two stages (lib/coll/planner/two_stage.h): the leaders learn their ranks' sizes first.
    {Collective::Gatherv, "two_level", false},
    {Collective::Scatterv, "two_level", false},
    {Collective::Alltoallv, "two_level_leaders", false},
};

// Host labels by rank.
const std::vector<std::vector<int>> kLayouts = {
    {0, 0, 1, 1},                 // 2+2
    {0, 0, 1, 2},                 // 2+1+1
    {0, 0, 0, 1},                 // 3+1
    {0, 1, 0, 1},                 // interleaved
    {0, 1, 2, 0, 1, 2},           // round robin: the rails forms need no staging
    {2, 0, 1, 1, 0, 2, 0, 1, 2},  // shuffled, 3 each
    {0, 1, 1, 0, 1, 2, 2, 1},     // shuffled, uneven
};

std::vector<int> layout_4x8() {
    std::vector<int> labels;
    for (int h = 0; h < 4; ++h) labels.insert(labels.end(), 8, h);
    return labels;
}

bool even(const std::vector<int>& labels) {
    const HostMap m = HostMap::from_labels(labels);
    for (int h = 0; h < m.hosts(); ++h)
        if (m.members(h).size() != m.members(0).size()) return false;
    return true;
}

void require_ran(const test::LoopbackGroup& g, const std::string& algo) {
    for (const char* ran : g.algorithms) REQUIRE(ran == algo);
}

// Every size, in and out of place, several roots, float32 sums, then other
// types and ops once.
void sweep(const Forced& f, const std::vector<int>& labels, const std::vector<size_t>& counts) {
    const int p = static_cast<int>(labels.size());
    for (bool rendezvous : {false, true}) {
        // Many small pieces with rendezvous sends; the usual pieces without.
        const chorus::Config cfg = rendezvous ? test::forced(f.coll, f.algo, 4096, 2) : test::forced(f.coll, f.algo);
        test::LoopbackGroup g(p, cfg, rendezvous, nullptr, nullptr, labels);
        INFO(g.comms[0]->hosts().describe() << " " << f.algo << (rendezvous ? " rendezvous" : ""));
        test::CollCase c;
        c.coll = f.coll;
        for (size_t count : counts)
            for (bool in_place : {false, true})
                for (int root : {0, p - 1, p / 2}) {
                    c.count = count;
                    c.in_place = in_place;
                    c.root = root;
                    c.seed = 7 + count + static_cast<uint64_t>(root);
                    c.counts.clear();
                    if (f.coll == Collective::ReduceScatter && root == p / 2)  // the v form, zeros too
                        for (int r = 0; r < p; ++r) c.counts.push_back(count * static_cast<size_t>(r % 3) / 2);
                    // All-gatherv's blocks (test/block_layout.h): equal, irregular with zeros, skewed.
                    c.shape = root == 0       ? test::Shape::Even
                              : root == p - 1 ? test::Shape::Irregular
                                              : test::Shape::Skewed;
                    test::check_collective(g, c);
                    require_ran(g, f.algo);
                }
        c.count = 3001;
        c.in_place = false;
        c.counts.clear();
        c.shape = test::Shape::Irregular;
        for (auto [dt, op] : {std::pair{CHORUS_INT32, CHORUS_MAX}, std::pair{CHORUS_FLOAT64, CHORUS_AVG},
                              std::pair{CHORUS_INT8, CHORUS_SUM}, std::pair{CHORUS_FLOAT16, CHORUS_PROD}}) {
            c.dt = dt;
            c.op = op;
            test::check_collective(g, c);
        }
        c.dt = CHORUS_FLOAT32;
        c.op = CHORUS_SUM;
    }
}

}  // namespace

TEST_CASE("two-level algorithms match the reference on every layout", "[loopback][two_level]") {
    for (const Forced& f : kTwoLevel)
        for (const auto& labels : kLayouts) {
            if (f.rails && !even(labels)) continue;
            const size_t p = labels.size();
            // 1 << 17 elements: every phase past kSmallPhaseBytes.
            sweep(f, labels, {1, p - 1, p + 1, 5000, size_t(1) << 17});
        }
}

TEST_CASE("two-level algorithms match the reference at 4 hosts of 8 ranks", "[loopback][two_level]") {
    for (const Forced& f : kTwoLevel) sweep(f, layout_4x8(), {1, 33, 20000});
}

namespace {

// Each rank's output bytes for rounding inputs `in`; ranks with
// `in_place(r)` pass their input as the output (a reduce: the root only).
std::vector<std::vector<char>> run_rounding(test::LoopbackGroup& g, const test::CollCase& c,
                                            std::vector<std::vector<char>> in, bool (*in_place)(int)) {
    const int p = g.size();
    const size_t w = ref::esize(c.dt);
    const chorus::coll::CollArgs args = test::args_of(c, p);
    std::vector<std::vector<char>> out(p), got(p);
    std::vector<const void*> send(p);
    std::vector<void*> recv(p);
    for (int r = 0; r < p; ++r) {
        const bool mine = c.coll != Collective::Reduce || r == c.root;
        const size_t bytes = !mine ? 0 : c.coll == Collective::ReduceScatter ? args.block_count(r) * w : c.count * w;
        in[r].push_back('\x5a');
        out[r].assign(bytes + 1, '\x5a');
        send[r] = in[r].data();
        recv[r] = in_place(r) && mine ? in[r].data() : out[r].data();
        got[r].resize(bytes);
    }
    std::string error;
    auto rc = g.run(args, send, recv, &error);
    for (int r = 0; r < p; ++r) {
        INFO(error);
        REQUIRE(rc[r] == CHORUS_SUCCESS);
        if (!got[r].empty()) std::memcpy(got[r].data(), recv[r], got[r].size());
    }
    return got;
}
bool none(int) {
    return false;
}
bool odd(int r) {
    return r % 2 == 1;
}

}  // namespace

TEST_CASE("two-level reductions give every rank the bytes of the documented order, run after run",
          "[loopback][two_level]") {
    for (const Forced& f : kTwoLevel) {
        if (f.coll == Collective::Broadcast || test::is_movement(f.coll) || f.coll == Collective::Allgather)
            continue;  // no arithmetic
        const std::string coll = chorus::coll::collective_name(f.coll);
        for (const auto& labels : kLayouts) {
            if (f.rails && !even(labels)) continue;
            const HostMap m = HostMap::from_labels(labels);
            const int p = m.ranks();
            const chorus::Config cfg = test::forced(f.coll, f.algo, 256, 4),
                                 cfg_other = test::forced(f.coll, f.algo, 256, 1);
            test::LoopbackGroup g(p, cfg, false, nullptr, nullptr, labels);
            test::LoopbackGroup other(p, cfg_other, true, nullptr, nullptr, labels);
            // The phases' algorithms are the cost model's choice, with each
            // group's window.
            const rounding::PhaseContext pc{&cfg.cost, cfg.chunk_bytes, cfg.window};
            const rounding::PhaseContext pc_other{&cfg_other.cost, cfg_other.chunk_bytes, cfg_other.window};
            for (auto dt : rounding::kFloatTypes)
                for (auto op : rounding::kRoundingOps)
                    for (size_t count : {size_t(37 * p + 5), size_t(40000)}) {
                        if (count > 1000 && (dt != CHORUS_FLOAT32 || op == CHORUS_PROD)) continue;
                        test::CollCase c;
                        c.coll = f.coll;
                        c.dt = dt;
                        c.op = op;
                        c.root = p - 1;
                        c.count = f.coll == Collective::ReduceScatter ? count / p : count;
                        c.seed = 500 + count + static_cast<uint64_t>(op) * 7 + static_cast<uint64_t>(dt);
                        std::vector<size_t> counts(static_cast<size_t>(p), c.count);
                        if (f.coll == Collective::ReduceScatter && count < 1000) {
                            for (int r = 0; r < p; ++r) counts[r] = static_cast<size_t>(r) * 7 % 5 * 11;
                            c.counts = counts;
                        }
                        const size_t total =
                            f.coll == Collective::ReduceScatter ? test::args_of(c, p).total_count() : c.count;
                        const auto in = rounding::all_inputs(dt, op, false, p, c.seed, total);
                        std::string why;
                        const auto want =
                            rounding::two_level_order(coll, f.algo, m, dt, op, c.root, counts, in, pc, &why);
                        const auto want_other =
                            rounding::two_level_order(coll, f.algo, m, dt, op, c.root, counts, in, pc_other, &why);
                        INFO(test::describe(c, p) << " " << f.algo << " " << m.describe());
                        REQUIRE(why.empty());
                        const auto first = run_rounding(g, c, in, none);
                        require_ran(g, f.algo);
                        const auto again = run_rounding(other, c, in, odd);
                        const size_t w = ref::esize(dt);
                        for (int r = 0; r < p; ++r) {
                            INFO("rank " << r);
                            const size_t off =
                                f.coll == Collective::ReduceScatter ? test::args_of(c, p).block_offset(r) : 0;
                            const size_t n = first[r].size() / w;
                            REQUIRE(ref::first_difference(first[r].data(), want.data() + off * w, n, w) == -1);
                            REQUIRE(ref::first_difference(again[r].data(), want_other.data() + off * w, n, w) == -1);
                            if (want_other == want) REQUIRE(again[r] == first[r]);
                            if (f.coll == Collective::Allreduce) REQUIRE(first[r] == first[0]);
                        }
                    }
        }
    }
}

TEST_CASE("two-level algorithms on emulated device buffers", "[two_level]") {
    for (const Forced& f : kTwoLevel)
        for (const std::vector<int>& labels : {std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 1, 1, 2}})
            for (bool direct : {false, true}) {
                if (f.rails && !even(labels)) continue;
                test::DeviceGroup g(4, test::forced(f.coll, f.algo, 4096, 3), direct, false, 1, labels);
                for (bool in_place : {false, true}) {
                    test::CollCase c;
                    c.coll = f.coll;
                    c.count = 5003;
                    c.root = 1;
                    c.in_place = in_place;
                    INFO(f.algo << (direct ? " direct" : " staged"));
                    g.check(
                        c, [](int r, bool out) { return (r + out) % 2 ? test::MemKind::Device : test::MemKind::Host; });
                    require_ran(g.group, f.algo);
                }
            }
}

TEST_CASE("two-level algorithms forced on a single level leave the choice to the cost model", "[loopback][two_level]") {
    for (const Forced& f : kTwoLevel)
        for (const std::vector<int>& labels : {std::vector<int>{}, std::vector<int>{0, 1, 2, 3}}) {
            test::LoopbackGroup g(4, test::forced(f.coll, f.algo), false, nullptr, nullptr, labels);
            for (size_t count : {size_t(1), size_t(5000), size_t(1) << 18}) {
                test::CollCase c;
                c.coll = f.coll;
                c.count = count;
                test::check_collective(g, c);
                INFO(f.algo << " on " << g.comms[0]->hosts().describe());
                for (const char* ran : g.algorithms) REQUIRE(std::string(ran).rfind("two_level", 0) != 0);
            }
        }
}

namespace {

// Elements of the irregular collectives below, zeros among them.
size_t gv_count(int r) {
    return static_cast<size_t>(r * 5 % 4) * 3;
}
size_t sv_count(int r) {
    return static_cast<size_t>((r * 3 + 1) % 5) * 2;
}
size_t a2a_count(int s, int d, int k) {
    return static_cast<size_t>((s + 2 * d + k) % 4) * 5;
}
int32_t value(int k, int s, int d, size_t i) {
    return static_cast<int32_t>(k * 1000000 + s * 10000 + d * 100 + static_cast<int>(i));
}
// Blocks in reverse rank order, `gap` elements apart.
std::vector<size_t> reversed(const std::vector<size_t>& counts, size_t gap, size_t* extent) {
    std::vector<size_t> at(counts.size());
    size_t x = 0;
    for (size_t i = counts.size(); i-- > 0;) {
        at[i] = x;
        x += counts[i] + gap;
    }
    *extent = x;
    return at;
}

}  // namespace

TEST_CASE("two-stage operations in flight together keep their stages and data apart", "[loopback][two_level]") {
    // Hosts {0, 2, 5}, {1, 4}, {3}; the roots are no leaders.
    const std::vector<int> labels = {0, 1, 0, 2, 1, 0};
    const int p = static_cast<int>(labels.size());
    chorus::Config cfg = test::forced(Collective::Gatherv, "two_level", 64, 2);
    cfg.algo["scatterv"] = "two_level";
    cfg.algo["alltoallv"] = "two_level_leaders";
    for (bool rendezvous : {false, true}) {
        test::LoopbackGroup g(p, cfg, rendezvous, nullptr, nullptr, labels);
        const int gv_root = 4, sv_root = 2;
        // Per operation k and rank r: its arguments and buffers.
        const int nops = 4;  // gatherv, all-to-allv, scatterv, all-to-allv
        std::vector<std::vector<chorus::coll::CollArgs>> args(nops, std::vector<chorus::coll::CollArgs>(p));
        std::vector<std::vector<std::vector<int32_t>>> in(nops, std::vector<std::vector<int32_t>>(p)), out = in;
        for (int r = 0; r < p; ++r) {
            size_t ext = 0;
            // Gatherv.
            auto& ga = args[0][r];
            ga.coll = Collective::Gatherv;
            ga.dtype = CHORUS_INT32;
            ga.root = gv_root;
            ga.count = gv_count(r);
            for (size_t i = 0; i < ga.count; ++i) in[0][r].push_back(value(0, r, gv_root, i));
            if (r == gv_root) {
                for (int q = 0; q < p; ++q) ga.counts.push_back(gv_count(q));
                ga.displs = reversed(ga.counts, 2, &ext);
                out[0][r].assign(ext, -1);
            }
            // Scatterv.
            auto& sa = args[2][r];
            sa.coll = Collective::Scatterv;
            sa.dtype = CHORUS_INT32;
            sa.root = sv_root;
            sa.count = sv_count(r);
            out[2][r].assign(sa.count, -1);
            if (r == sv_root) {
                for (int q = 0; q < p; ++q) sa.send_counts.push_back(sv_count(q));
                sa.send_displs = reversed(sa.send_counts, 1, &ext);
                in[2][r].assign(ext, -1);
                for (int q = 0; q < p; ++q)
                    for (size_t i = 0; i < sa.send_counts[q]; ++i)
                        in[2][r][sa.send_displs[q] + i] = value(2, sv_root, q, i);
            }
            // Two all-to-allvs, receive blocks packed, send blocks reversed.
            for (int k : {1, 3}) {
                auto& xa = args[k][r];
                xa.coll = Collective::Alltoallv;
                xa.dtype = CHORUS_INT32;
                for (int q = 0; q < p; ++q) {
                    xa.counts.push_back(a2a_count(q, r, k));
                    xa.send_counts.push_back(a2a_count(r, q, k));
                }
                xa.send_displs = reversed(xa.send_counts, 3, &ext);
                in[k][r].assign(ext, -1);
                for (int q = 0; q < p; ++q)
                    for (size_t i = 0; i < xa.send_counts[q]; ++i) in[k][r][xa.send_displs[q] + i] = value(k, r, q, i);
                size_t total = 0;
                for (size_t n : xa.counts) total += n;
                out[k][r].assign(total, -1);
            }
        }
        // Every rank starts all four (in the same order); they are progressed
        // together, the last started first.
        std::vector<std::vector<chorus::Operation*>> ops(nops, std::vector<chorus::Operation*>(p));
        for (int k = 0; k < nops; ++k)
            for (int r = 0; r < p; ++r) {
                ops[k][r] = g.comms[r]->start(args[k][r], in[k][r].data(), out[k][r].data());
                REQUIRE(std::string(ops[k][r]->algorithm).rfind("two_level", 0) == 0);
            }
        bool all = false;
        for (int rounds = 0; rounds < 100000 && !all; ++rounds) {
            all = true;
            for (int k = nops - 1; k >= 0; --k)
                for (int r = 0; r < p; ++r) all = g.comms[r]->progress(ops[k][r]) && all;
        }
        for (int k = 0; k < nops; ++k)
            for (int r = 0; r < p; ++r) {
                INFO("operation " << k << " rank " << r << (rendezvous ? " rendezvous" : ""));
                REQUIRE(ops[k][r]->finished);
                REQUIRE(g.comms[r]->release(ops[k][r]) == CHORUS_SUCCESS);
            }
        // What each rank received.
        const auto& gr = args[0][gv_root];
        for (int q = 0; q < p; ++q)
            for (size_t i = 0; i < gr.counts[q]; ++i)
                REQUIRE(out[0][gv_root][gr.displs[q] + i] == value(0, q, gv_root, i));
        for (int r = 0; r < p; ++r) {
            for (size_t i = 0; i < sv_count(r); ++i) REQUIRE(out[2][r][i] == value(2, sv_root, r, i));
            for (int k : {1, 3}) {
                size_t at = 0;
                for (int q = 0; q < p; ++q)
                    for (size_t i = 0; i < a2a_count(q, r, k); ++i) REQUIRE(out[k][r][at++] == value(k, q, r, i));
            }
        }
    }
}

TEST_CASE("a dead peer fails a two-stage operation in either stage without a hang", "[loopback][two_level][faults]") {
    // Hosts {0, 1}, {2, 3}. Rank 3 (a member: rank 2 waits for its sizes in
    // the first stage) or rank 2 (a leader: the root waits for its host's
    // blocks in the second) never starts and dies.
    const std::vector<int> labels = {0, 0, 1, 1};
    for (int dead : {3, 2}) {
        test::LoopbackGroup g(4, test::forced(Collective::Gatherv, "two_level"), /*rendezvous=*/true, nullptr, nullptr,
                              labels);
        std::vector<std::vector<float>> in(4, std::vector<float>(100, 1.0f));
        std::vector<float> out(400);
        std::vector<chorus::Operation*> ops(4, nullptr);
        for (int r = 0; r < 4; ++r) {
            if (r == dead) continue;
            chorus::coll::CollArgs a;
            a.coll = Collective::Gatherv;
            a.count = 100;
            if (r == 0) a.counts.assign(4, 100);
            ops[r] = g.comms[r]->start(a, in[r].data(), out.data());
        }
        g.hub->kill(dead);
        auto done = [&] {
            for (auto* op : ops)
                if (op && !op->finished) return false;
            return true;
        };
        for (int rounds = 0; rounds < 100000 && !done(); ++rounds)
            for (int r = 0; r < 4; ++r)
                if (ops[r]) g.comms[r]->progress(ops[r]);
        for (int r = 0; r < 4; ++r) {
            if (!ops[r]) continue;
            INFO("dead " << dead << ", rank " << r);
            REQUIRE(ops[r]->finished);
            const chorus_result_t rc = g.comms[r]->release(ops[r]);
            // The root and the dead rank's host mate cannot finish; rank 1
            // may have done its part.
            if (r == 0 || r == 5 - dead) REQUIRE(rc != CHORUS_SUCCESS);
        }
    }
}
