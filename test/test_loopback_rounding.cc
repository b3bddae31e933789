// "Bit-identical on every rank" with inputs whose reductions ROUND
// (test/rounding.h), where the exact inputs of the other tests would hide a
// different order of the operations on some rank. For every reduction
// collective and algorithm, forced by name, at 2..31 ranks and every
// floating type:
//
//  - rounding SUM, PROD and AVG: every rank's output is the value the
//    algorithm's documented order gives (so all ranks of an all-reduce hold
//    the same bytes), and a second run with other flow control (window 1,
//    rendezvous sends) and some ranks in place gives the same bytes again;
//  - NaNs with distinct payloads, infinities and signed zeros under SUM,
//    PROD, MIN, MAX and AVG: the same bytes on every rank of an all-reduce
//    and in both runs (which NaN payload comes out included), and results
//    the IEEE and fmin/fmax rules allow;
//  - ranks mixing host and emulated device buffers (across ranks and within
//    one) get the bytes of the all-host run.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "collective_check.h"
#include "core/config.h"
#include "net/shm/shm_segment.h"
#include "rounding.h"

using chorus::coll::CollArgs;
using chorus::coll::Collective;
using test::MemKind;

namespace {

const int kRanks[] = {2, 3, 5, 8, 13, 16, 31};

enum class Inputs { Rounding, Special };

// A collective of test::CollCase (in_place unused: each run chooses per
// rank), with the algorithm forced and the kind of inputs.
struct Case : test::CollCase {
    Case(Collective coll_, std::string algo_, chorus_datatype_t dt_, chorus_op_t op_, Inputs inputs_)
        : algo(std::move(algo_)), inputs(inputs_) {
        coll = coll_;
        dt = dt_;
        op = op_;
    }
    std::string algo;
    Inputs inputs;

    CollArgs args(int p) const { return test::args_of(*this, p); }
    size_t total(int p) const { return coll == Collective::ReduceScatter ? args(p).total_count() : count; }
};

std::string describe(const Case& c, int p) {
    return test::describe(c, p) + " " + c.algo + (c.inputs == Inputs::Rounding ? " rounding" : " NaN/inf");
}

std::vector<std::vector<char>> inputs_of(const Case& c, int p) {
    return rounding::all_inputs(c.dt, c.op, c.inputs == Inputs::Special, p, c.seed, c.total(p));
}

// Runs `c` and returns each rank's output bytes (none for a reduce's
// non-root). Ranks for which `in_place(r)` holds pass their input buffer as
// the output (a reduce: the root only).
std::vector<std::vector<char>> run(test::LoopbackGroup& g, const Case& c, const std::vector<std::vector<char>>& inputs,
                                   bool (*in_place)(int), const test::Placement& place = {}) {
    const int p = g.size();
    const size_t w = ref::esize(c.dt);
    // In place where the API would say so (a builder may order a rank's
    // own steps by it).
    std::vector<CollArgs> args(static_cast<size_t>(p), c.args(p));
    std::vector<std::vector<char>> in = inputs, out(p);
    std::vector<const void*> send(p);
    std::vector<void*> recv(p);
    std::vector<size_t> bytes(p);
    for (int r = 0; r < p; ++r) {
        const bool mine = c.coll != Collective::Reduce || r == c.root;
        bytes[r] = !mine ? 0 : c.coll == Collective::ReduceScatter ? args[r].block_count(r) * w : c.total(p) * w;
        in[r].push_back('\x5a');  // never empty
        out[r].assign(bytes[r] + 1, '\x5a');
        send[r] = in[r].data();
        recv[r] = in_place(r) && mine ? in[r].data() : out[r].data();
        args[r].in_place = recv[r] == send[r];
    }
    std::string error;
    auto rc = test::run_placed(g, args, in, out, send, recv, place, &error);
    INFO(describe(c, p) << error);
    std::vector<std::vector<char>> got(p);
    for (int r = 0; r < p; ++r) {
        REQUIRE(rc[r] == CHORUS_SUCCESS);
        const char* at = recv[r] == in[r].data() ? in[r].data() : out[r].data();
        got[r].assign(at, at + bytes[r]);
    }
    return got;
}

bool none(int) {
    return false;
}
bool odd(int r) {
    return r % 2 == 1;
}

std::string hex(chorus_datatype_t dt, uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%0*llx", static_cast<int>(2 * ref::esize(dt)),
                  static_cast<unsigned long long>(v));
    return text;
}

// Where rank r's output starts in the whole result, in elements.
size_t output_offset(const Case& c, int p, int r) {
    return c.coll == Collective::ReduceScatter ? c.args(p).block_offset(r) : 0;
}

// Each rank's output against the documented order (rounding inputs) or the
// NaN/infinity rules (special inputs).
void check_values(const Case& c, int p, const std::vector<std::vector<char>>& in,
                  const std::vector<std::vector<char>>& got) {
    const size_t w = ref::esize(c.dt);
    std::vector<size_t> blocks(p);
    for (int r = 0; r < p; ++r) blocks[r] = c.args(p).block_count(r);
    std::string why;
    std::vector<char> want;
    if (c.inputs == Inputs::Rounding) {
        want = rounding::in_documented_order(chorus::coll::collective_name(c.coll), c.algo, c.dt, c.op, c.root, blocks,
                                             in, &why);
        INFO(describe(c, p));
        REQUIRE(why == "");
    }
    std::vector<uint64_t> x(p);
    for (int r = 0; r < p; ++r) {
        for (size_t i = 0; i < got[r].size() / w; ++i) {
            const size_t e = output_offset(c, p, r) + i;
            const uint64_t v = rounding::load_bits(c.dt, got[r].data(), i);
            std::string bad;
            if (c.inputs == Inputs::Rounding) {
                const uint64_t expect = rounding::load_bits(c.dt, want.data(), e);
                if (v != expect) bad = "documented order gives " + hex(c.dt, expect) + ", got " + hex(c.dt, v);
            } else {
                for (int k = 0; k < p; ++k) x[k] = rounding::load_bits(c.dt, in[k].data(), e);
                bad = rounding::special_violation(c.dt, c.op, x, v);
            }
            if (bad.empty()) continue;
            INFO(describe(c, p) << ": rank " << r << ", element " << e << ": " << bad);
            REQUIRE(bad.empty());
        }
    }
}

// Empty when a and b hold the same bytes; otherwise the first element
// where they differ, with both values and every rank's input there.
std::string difference(const Case& c, const std::vector<std::vector<char>>& in, size_t offset,
                       const std::vector<char>& a, const std::vector<char>& b) {
    const size_t w = ref::esize(c.dt);
    long i = a.size() == b.size() ? ref::first_difference(a.data(), b.data(), a.size() / w, w) : 0;
    if (i < 0) return "";
    if (a.size() != b.size()) return chorus::cat(a.size(), " bytes against ", b.size());
    std::string inputs;
    for (const auto& x : in) inputs += " " + hex(c.dt, rounding::load_bits(c.dt, x.data(), offset + i));
    return chorus::cat("element ", offset + i, ": ", hex(c.dt, rounding::load_bits(c.dt, a.data(), i)), " against ",
                       hex(c.dt, rounding::load_bits(c.dt, b.data(), i)), "; inputs", inputs);
}

// Every rank's bytes are rank 0's (all-reduce), and a second run gives each
// rank the bytes of the first.
void check_same(const Case& c, int p, const std::vector<std::vector<char>>& in,
                const std::vector<std::vector<char>>& first, const std::vector<std::vector<char>>& again) {
    for (int r = 0; r < p; ++r) {
        INFO(describe(c, p) << ": rank " << r);
        if (c.coll == Collective::Allreduce) {
            std::string d = difference(c, in, 0, first[r], first[0]);
            INFO("against rank 0: " << d);
            REQUIRE(d.empty());
        }
        std::string d = difference(c, in, output_offset(c, p, r), again[r], first[r]);
        INFO("second run against the first: " << d);
        REQUIRE(d.empty());
    }
}

// The cases of one algorithm at p ranks: every floating type with `ops`;
// reduce_scatter in block form and with irregular blocks (some empty).
std::vector<Case> cases(Collective coll, const std::string& algo, int p, Inputs inputs) {
    const std::vector<chorus_op_t> ops =
        inputs == Inputs::Rounding
            ? std::vector<chorus_op_t>{CHORUS_SUM, CHORUS_PROD, CHORUS_AVG}
            : std::vector<chorus_op_t>{CHORUS_SUM, CHORUS_PROD, CHORUS_MIN, CHORUS_MAX, CHORUS_AVG};
    std::vector<Case> out;
    uint64_t seed = 1000 + 10 * p + static_cast<uint64_t>(coll);
    for (auto dt : rounding::kFloatTypes)
        for (auto op : ops) {
            Case c(coll, algo, dt, op, inputs);
            c.seed = seed++;
            c.count = 37 * size_t(p) + 5;
            // The flat algorithms take messages whose size class fits a slot.
            if (algo == "shm_flat") c.count = std::min(c.count, 8191 / ref::esize(dt));
            c.root = (p - 1) * static_cast<int>(out.size() % 3) / 2;  // 0, (p-1)/2, p-1
            if (coll != Collective::ReduceScatter) {
                out.push_back(c);
                continue;
            }
            c.count = 23;
            c.counts.assign(p, 23);
            out.push_back(c);
            for (int i = 0; i < p; ++i) c.counts[i] = size_t(i) * 7 % 5 * 11;
            out.push_back(c);
        }
    return out;
}

// The flat algorithms read the peers' publish slots: give the group some
// (without them a forced shm_flat falls back to the selector's choice); the
// one-sided ones read the peers' buffers.
void slots_for(const std::string& algo, test::LoopbackGroup& g) {
    if (algo == "shm_flat" || algo == "shm_pipeline") g.hub->enable_slots(chorus::net::shm::kPubBytes);
    if (algo == "one_sided") g.hub->enable_one_sided();
}

void sweep(Collective coll, Inputs inputs) {
    for (const auto& algo : chorus::known_algorithms().at(chorus::coll::collective_name(coll))) {
        if (test::needs_hosts(algo)) continue;  // test_loopback_two_level.cc, on emulated hosts
        for (int p : kRanks) {
            test::LoopbackGroup g(p, test::forced(coll, algo, 64, 4));
            test::LoopbackGroup other(p, test::forced(coll, algo, 64, 1), /*rendezvous=*/true);
            slots_for(algo, g);
            slots_for(algo, other);
            for (const Case& c : cases(coll, algo, p, inputs)) {
                auto in = inputs_of(c, p);
                auto first = run(g, c, in, none);
                check_values(c, p, in, first);
                check_same(c, p, in, first, run(other, c, in, odd));
            }
        }
    }
}

// Where each rank's buffers live: whole ranks on the device or not; input
// and output of different kinds on one rank; managed, device and pinned.
MemKind by_rank(int r, bool) {
    return r % 2 ? MemKind::Host : MemKind::Device;
}
MemKind within_rank(int r, bool out) {
    return (r + out) % 2 ? MemKind::Device : MemKind::Host;
}
MemKind assorted(int r, bool out) {
    return r % 3 == 0   ? MemKind::Managed
           : r % 3 == 1 ? (out ? MemKind::Device : MemKind::PinnedHost)
                        : (out ? MemKind::PinnedHost : MemKind::Device);
}

void mixed(Collective coll) {
    for (const auto& algo : chorus::known_algorithms().at(chorus::coll::collective_name(coll)))
        for (int p : {2, 3, 5, 8})
            for (bool direct : {false, true}) {
                if (test::needs_hosts(algo)) continue;
                const chorus::Config cfg = test::forced(coll, algo, 256, 3);
                test::DeviceGroup dev(p, cfg, direct);
                test::LoopbackGroup host(p, cfg);
                slots_for(algo, dev.group);
                slots_for(algo, host);
                for (Inputs inputs : {Inputs::Rounding, Inputs::Special})
                    for (const Case& c : cases(coll, algo, p, inputs)) {
                        auto in = inputs_of(c, p);
                        auto want = run(host, c, in, none);
                        INFO((direct ? "direct " : "staged ") << describe(c, p));
                        const std::pair<const char*, MemKind (*)(int, bool)> placements[] = {
                            {"by rank", by_rank}, {"within a rank", within_rank}, {"assorted", assorted}};
                        for (const auto& [name, kind] : placements) {
                            auto got = run(dev.group, c, in, kind == assorted ? odd : none, dev.place(kind));
                            for (int r = 0; r < p; ++r) {
                                std::string d = difference(c, in, output_offset(c, p, r), got[r], want[r]);
                                INFO(name << ": rank " << r << " against the all-host run: " << d);
                                REQUIRE(d.empty());
                            }
                        }
                    }
            }
}

}  // namespace

TEST_CASE("rounding inputs make the result depend on the order of the operations", "[loopback][allreduce]") {
    // Two documented orders (a ring's chain and the halving butterfly) must
    // disagree on many elements, or the tests below could not tell orders
    // apart.
    for (auto dt : rounding::kFloatTypes)
        for (auto op : rounding::kRoundingOps)
            for (int p : {3, 8, 31}) {
                Case c(Collective::Allreduce, "", dt, op, Inputs::Rounding);
                c.count = 2000;
                auto in = inputs_of(c, p);
                auto ring = rounding::in_documented_order("allreduce", "ring", dt, op, 0, {}, in, nullptr);
                auto butterfly = rounding::in_documented_order("allreduce", "rabenseifner", dt, op, 0, {}, in, nullptr);
                size_t differ = 0;
                for (size_t i = 0; i < c.count; ++i)
                    differ += rounding::load_bits(dt, ring.data(), i) != rounding::load_bits(dt, butterfly.data(), i);
                INFO(chorus::datatype_name(dt) << " " << chorus::op_name(op) << " p=" << p << ": " << differ << " of "
                                               << c.count << " elements differ");
                // Measured: at least 42% at 8 and 31 ranks, 8% at 3 (where
                // a third of the elements have the same grouping in both).
                CHECK(differ * (p == 3 ? 20 : 3) >= c.count);
            }
}

TEST_CASE("allreduce: rounding inputs give every rank the bytes of the documented order run after run",
          "[loopback][allreduce]") {
    sweep(Collective::Allreduce, Inputs::Rounding);
}

TEST_CASE("allreduce: NaN payloads and infinities give every rank the same bytes", "[loopback][allreduce]") {
    sweep(Collective::Allreduce, Inputs::Special);
}

TEST_CASE("reduce: rounding inputs give the root the bytes of the documented order run after run",
          "[loopback][reduce]") {
    sweep(Collective::Reduce, Inputs::Rounding);
}

TEST_CASE("reduce: NaN payloads and infinities give the same bytes run after run", "[loopback][reduce]") {
    sweep(Collective::Reduce, Inputs::Special);
}

TEST_CASE("reduce_scatter: rounding inputs give every block the bytes of the documented order run after run",
          "[loopback][reduce_scatter]") {
    sweep(Collective::ReduceScatter, Inputs::Rounding);
}

TEST_CASE("reduce_scatter: NaN payloads and infinities give the same bytes run after run",
          "[loopback][reduce_scatter]") {
    sweep(Collective::ReduceScatter, Inputs::Special);
}

TEST_CASE("rounding and NaN inputs: ranks mixing device and host buffers get the all-host bytes", "[device]") {
    for (Collective coll : {Collective::Allreduce, Collective::Reduce, Collective::ReduceScatter}) mixed(coll);
}
