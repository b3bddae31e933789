// The two-level algorithms as schedules (built, not run): they apply only to
// host maps of several hosts that are not one rank per host; for the
// layouts 2+2, 2+1+1, 3+1, 4x8 and interleaved hosts (all-gatherv: with
// irregular blocks, zeros among them, out of rank order) every rank's schedule
// pairs up with its peers' and runs to the end in the cost model's
// simulation (which fails on a message without its counterpart and on steps
// that never run), with no two messages between two ranks sharing a tag;
// the tag budget holds at 4096 hosts of 8 ranks; and the selector takes one
// where the cost model predicts it fastest, never on a single level.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "coll/algorithm.h"
#include "coll/compose.h"  // kPhaseTagBits
#include "coll/cost_model.h"
#include "coll/selector.h"
#include "coll/simulation.h"
#include "coll/topology.h"

using namespace chorus;
using namespace chorus::coll;

namespace {

const Collective kColls[] = {Collective::Allreduce,     Collective::Broadcast, Collective::Reduce,
                             Collective::ReduceScatter, Collective::Allgather, Collective::Allgatherv,
                             Collective::Gather,        Collective::Scatter,   Collective::Barrier};

bool is_two_level(const Algorithm& a) {
    return std::string(a.name).rfind("two_level", 0) == 0;
}

std::vector<const Algorithm*> two_level_algorithms() {
    std::vector<const Algorithm*> out;
    for (Collective c : kColls)
        for (const Algorithm& a : algorithms_for(c))
            if (is_two_level(a)) out.push_back(&a);
    return out;
}

CollArgs args_for(Collective c, const HostMap& m, size_t count) {
    CollArgs a;
    a.coll = c;
    a.size = m.ranks();
    a.count = count;
    a.hosts = &m;
    a.chunk_bytes = 1024;
    a.depth = 3;
    if (c == Collective::Allgatherv) {
        // Irregular blocks, zeros among them, in reverse rank order with gaps.
        size_t at = 0;
        a.counts.assign(static_cast<size_t>(a.size), 0);
        a.displs.assign(static_cast<size_t>(a.size), 0);
        for (int r = a.size - 1; r >= 0; --r) {
            a.counts[r] = count * static_cast<size_t>(r % 3) / 2;
            a.displs[r] = at;
            at += a.counts[r] + 3;
        }
    }
    return a;
}

// Rank r's arguments (an all-gatherv sends its own block).
CollArgs at_rank(CollArgs a, int r) {
    a.rank = r;
    if (a.coll == Collective::Allgatherv) a.count = a.counts[r];
    return a;
}

// Every rank's schedule: tags told apart, and simulated together.
void check_group(const Algorithm& algo, CollArgs a) {
    SimGroup g(a.size, a.dtype, a.hosts);
    size_t transfers = 0;
    bool moves = false;
    for (int r = 0; r < a.size; ++r) {
        a = at_rank(a, r);
        moves = moves || a.count > 0;
        auto s = algo.build(a);
        s->check_tags();
        transfers += s->num_transfers();
        g.add(r, *s);
    }
    if (moves || a.coll == Collective::Barrier) REQUIRE(transfers > 0);
    CostParams p;
    REQUIRE(g.simulate(p, SimGroup::Outside::Lockstep) >= 0);
}

}  // namespace

TEST_CASE("two-level algorithms apply only to host maps with a second level", "[unit][two_level]") {
    const auto algos = two_level_algorithms();
    REQUIRE(algos.size() == 12);
    const HostMap one = HostMap::from_layout({4}), each = HostMap::from_layout({1, 1, 1, 1});
    const HostMap even = HostMap::from_layout({2, 2}), uneven = HostMap::from_layout({3, 1});
    for (const Algorithm* algo : algos) {
        CAPTURE(collective_name(algo->coll), algo->name);
        CollArgs a = args_for(algo->coll, even, 16);
        REQUIRE(algo->supports(a));
        a.hosts = nullptr;
        REQUIRE_FALSE(algo->supports(a));
        a.hosts = &one;
        REQUIRE_FALSE(algo->supports(a));
        a.hosts = &each;
        REQUIRE_FALSE(algo->supports(a));
        a.hosts = &uneven;
        const bool rails = std::string(algo->name) == "two_level_rails";
        REQUIRE(algo->supports(a) == !rails);
        a.size = 5;  // a map of other ranks
        REQUIRE_FALSE(algo->supports(a));
    }
}

TEST_CASE("two-level schedules pair up and run to the end on every layout", "[unit][two_level]") {
    const std::vector<HostMap> maps = {
        HostMap::from_layout({2, 2}),
        HostMap::from_layout({2, 1, 1}),
        HostMap::from_layout({3, 1}),
        HostMap::from_layout({8, 8, 8, 8}),
        HostMap::from_labels({0, 1, 0, 1}),                 // interleaved
        HostMap::from_labels({0, 1, 2, 0, 1, 2}),           // round robin
        HostMap::from_labels({2, 0, 1, 1, 0, 2, 0, 1, 2}),  // shuffled, 3 each
        HostMap::from_labels({0, 1, 1, 0, 1, 2}),           // shuffled, uneven
    };
    for (const HostMap& m : maps)
        for (const Algorithm* algo : two_level_algorithms()) {
            if (!algo->supports(args_for(algo->coll, m, 1))) continue;
            const int p = m.ranks();
            for (size_t count : {size_t(0), size_t(1), size_t(p + 1), size_t(3000), size_t(40000)})
                for (chorus_op_t op : {CHORUS_SUM, CHORUS_AVG})
                    for (bool in_place : {false, true})
                        for (int root : {0, p - 1}) {
                            CollArgs a = args_for(algo->coll, m, count);
                            a.op = op;
                            a.in_place = in_place;
                            a.root = root;
                            if (algo->coll == Collective::ReduceScatter && count % 2)
                                for (int r = 0; r < p; ++r) a.counts.push_back(count * (r % 3) / 2);
                            CAPTURE(m.describe(), collective_name(algo->coll), algo->name, count, op, in_place, root);
                            check_group(*algo, a);
                        }
        }
}

TEST_CASE("two-level schedules keep to the tag budget at 4096 hosts of 8 ranks", "[unit][two_level][tags]") {
    const HostMap m = HostMap::from_layout(std::vector<int>(4096, 8));
    const int p = m.ranks();
    for (const Algorithm* algo : two_level_algorithms()) {
        const bool blocks = algo->coll == Collective::ReduceScatter || algo->coll == Collective::Allgather ||
                            algo->coll == Collective::Allgatherv;
        CollArgs a = args_for(algo->coll, m, blocks ? 40 : 3 * static_cast<size_t>(p) + 5);
        a.chunk_bytes = 256 * 1024;
        // A leader, a rank of another host, the last rank.
        for (int r : {0, p / 2 + 3, p - 1}) {
            a = at_rank(a, r);
            CAPTURE(collective_name(algo->coll), algo->name, r);
            auto s = algo->build(a);
            s->check_tags();
            // Each phase keeps to its own tags: the top bits number it.
            uint32_t phases = 0;
            for (const Step& st : s->steps())
                if (st.kind == StepKind::Send || st.kind == StepKind::Recv) {
                    REQUIRE(st.tag <= kMaxStepTag);
                    phases |= 1u << (st.tag >> (kStepTagBits - kPhaseTagBits));
                }
            REQUIRE(phases != 0);
        }
    }
}

TEST_CASE("the selector takes a two-level algorithm where it is predicted fastest, never on a single level",
          "[unit][two_level][selector]") {
    const std::vector<std::vector<int>> layouts = {{2, 2, 2, 2}, {2, 1, 1}, {4}, {1, 1, 1, 1}};
    size_t two_level_choices = 0;
    for (const auto& layout : layouts) {
        const HostMap m = HostMap::from_layout(layout);
        CostParams p;
        p.hosts = std::make_shared<const HostMap>(m);
        Selector sel(p);
        for (Collective c : kColls)
            for (size_t bytes = 64; bytes <= (size_t(64) << 20); bytes *= 8) {
                CollArgs a = at_rank(args_for(c, *p.hosts, bytes / 4), 0);
                a.chunk_bytes = 256 * 1024;
                a.depth = 16;
                if (c == Collective::ReduceScatter) a.count = bytes / 4 / m.ranks();
                const Choice& choice = sel.choose(a);
                CAPTURE(m.describe(), collective_name(c), bytes);
                size_t weighed = 0;
                const Algorithm* best = nullptr;
                double best_us = 0;
                for (const auto& [algo, us] : choice.predictions) {
                    weighed += is_two_level(*algo);
                    if (!best || us < best_us) {
                        best = algo;
                        best_us = us;
                    }
                }
                if (m.flat()) {
                    REQUIRE(weighed == 0);
                    REQUIRE_FALSE(is_two_level(*choice.algorithm));
                    continue;
                }
                REQUIRE(weighed > 0);
                // A two-level algorithm ahead of every flat one by more than
                // the selector's margin is the choice (or one as good).
                bool clear = is_two_level(*best);
                for (const auto& [algo, us] : choice.predictions)
                    if (!is_two_level(*algo) && us <= best_us * Selector::kNearBest) clear = false;
                if (clear) REQUIRE(is_two_level(*choice.algorithm));
                two_level_choices += is_two_level(*choice.algorithm);
            }
    }
    REQUIRE(two_level_choices > 0);
}
