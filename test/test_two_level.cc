// The two-level algorithms as schedules (built, not run): they apply only to
// host maps of several hosts that are not one rank per host; for the
// layouts 2+2, 2+1+1, 3+1, 4x8 and interleaved hosts (all-gatherv: with
// irregular blocks, zeros among them, out of rank order) every rank's schedule
// pairs up with its peers' and runs to the end in the cost model's
// simulation (which fails on a message without its counterpart and on steps
// that never run), with no two messages between two ranks sharing a tag;
// the tag budget holds at 4096 hosts of 8 ranks; the selector takes one
// where the cost model predicts it fastest, never on a single level; and
// with cost parameters each phase runs the algorithm the model predicts
// fastest for its group alone, priced inside a host or between hosts, the
// same on every rank of the group and from any thread.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "coll/algorithm.h"
#include "coll/planner/compose.h"  // kPhaseTagBits
#include "coll/planner/cost_model.h"
#include "coll/planner/selector.h"
#include "coll/planner/simulation.h"
#include "coll/planner/topology.h"
#include "coll/two_level/two_level.h"
#include "coll/planner/two_stage.h"

using namespace chorus;
using namespace chorus::coll;

namespace {

const Collective kColls[] = {Collective::Allreduce,     Collective::Broadcast, Collective::Reduce,
                             Collective::ReduceScatter, Collective::Allgather, Collective::Allgatherv,
                             Collective::Gather,        Collective::Scatter,   Collective::Barrier,
                             Collective::Gatherv,       Collective::Scatterv,  Collective::Alltoallv};

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
    if (c == Collective::Allgatherv || c == Collective::Gatherv || c == Collective::Scatterv) {
        // Irregular blocks, zeros among them, in reverse rank order with gaps.
        size_t at = 0;
        std::vector<size_t> counts(static_cast<size_t>(a.size), 0), displs(static_cast<size_t>(a.size), 0);
        for (int r = a.size - 1; r >= 0; --r) {
            counts[r] = count * static_cast<size_t>(r % 3) / 2;
            displs[r] = at;
            at += counts[r] + 3;
        }
        (c == Collective::Scatterv ? a.send_counts : a.counts) = counts;
        (c == Collective::Scatterv ? a.send_displs : a.displs) = displs;
    }
    return a;
}

// Elements rank s sends rank d in an all-to-allv (zeros among them).
size_t pair_count(size_t count, int s, int d) {
    return count * static_cast<size_t>((s + 2 * d) % 3) / 2;
}

// Rank r's arguments (an all-gatherv or gatherv sends its own block, a
// scatterv receives its own; an all-to-allv's counts are its own, its send
// blocks in reverse rank order with gaps, in place its receive blocks).
CollArgs at_rank(CollArgs a, int r) {
    a.rank = r;
    if (a.coll == Collective::Allgatherv || a.coll == Collective::Gatherv) a.count = a.counts[r];
    if (a.coll == Collective::Scatterv) a.count = a.send_counts[r];
    if (a.coll == Collective::Alltoallv) {
        const size_t n = a.count;
        a.counts.assign(static_cast<size_t>(a.size), 0);
        a.send_counts.assign(static_cast<size_t>(a.size), 0);
        a.send_displs.assign(static_cast<size_t>(a.size), 0);
        a.displs.clear();
        size_t at = 0;
        for (int q = a.size - 1; q >= 0; --q) {
            a.counts[q] = a.in_place ? pair_count(n, std::min(q, r), std::max(q, r)) : pair_count(n, q, r);
            a.send_counts[q] = pair_count(n, r, q);
            a.send_displs[q] = at;
            at += a.send_counts[q] + 2;
        }
        if (a.in_place) a.send_counts.clear(), a.send_displs.clear();
    }
    return a;
}

// A two-stage algorithm's second stage needs what its first brings the
// rank: every member's sizes, on its host's gatherer.
std::vector<size_t> gathered(const CollArgs& a) {
    if (!gathered_sizes(a)) return {};
    std::vector<size_t> out;
    for (int m : a.hosts->members(a.hosts->host_of(a.rank)))
        for (uint64_t x : own_sizes(at_rank(a, m))) out.push_back(static_cast<size_t>(x));
    return out;
}

// Every rank's schedule (a two-stage algorithm's two): tags told apart, and
// simulated together.
void check_group(const Algorithm& algo, CollArgs a) {
    SimGroup g(a.size, a.dtype, a.hosts), sizes(a.size, CHORUS_UINT64, a.hosts);
    size_t transfers = 0;
    bool moves = false;
    for (int r = 0; r < a.size; ++r) {
        a = at_rank(a, r);
        for (size_t n : a.coll == Collective::Alltoallv ? a.counts : std::vector<size_t>{a.count}) moves = moves || n;
        if (algo.two_stage) {
            auto first = build_sizes_stage(a);
            first->check_tags();
            sizes.add(r, *first);
            a.host_sizes = gathered(a);
        }
        auto s = algo.build(a);
        s->check_tags();
        transfers += s->num_transfers();
        g.add(r, *s);
    }
    if (moves || a.coll == Collective::Barrier) REQUIRE(transfers > 0);
    CostParams p;
    REQUIRE(g.simulate(p, SimGroup::Outside::Lockstep) >= 0);
    if (algo.two_stage) REQUIRE(sizes.simulate(p, SimGroup::Outside::Lockstep) >= 0);
}

}  // namespace

TEST_CASE("two-level algorithms apply only to host maps with a second level", "[unit][two_level]") {
    const auto algos = two_level_algorithms();
    REQUIRE(algos.size() == 15);
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

TEST_CASE("two-level schedules pair up and run to the end on every layout", "[unit][two_level][long]") {
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

TEST_CASE("two-level schedules keep to the tag budget at 4096 hosts of 8 ranks", "[unit][two_level][tags][long]") {
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
            if (algo->two_stage) {
                auto first = build_sizes_stage(a);
                first->check_tags();
                for (const Step& st : first->steps()) REQUIRE(st.tag <= kMaxStepTag);
                a.host_sizes = gathered(a);
            }
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
                // The irregular forms choose by the layout alone (their sizes
                // agree pair by pair only): the test below.
                if (!Selector::sizes_agreed(c)) continue;
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

TEST_CASE(
    "the irregular forms choose by the layout alone, the two-level ones where the model prefers them at every block",
    "[unit][two_level][selector][long]") {
    // Their sizes agree pair by pair only, so every rank must choose alike
    // whatever its counts; at 16 hosts of 8 the two-level gatherv and
    // scatterv are predicted ahead of the linear ones at every block of
    // Selector::unagreed_blocks(), and at 2x2 behind them.
    const std::vector<std::vector<int>> layouts = {{2, 2}, {2, 1, 1}, std::vector<int>(16, 8), {4}};
    for (const auto& layout : layouts) {
        const HostMap m = HostMap::from_layout(layout);
        CostParams p;
        p.hosts = std::make_shared<const HostMap>(m);
        for (Collective c : {Collective::Gatherv, Collective::Scatterv, Collective::Alltoallv}) {
            CAPTURE(m.describe(), collective_name(c));
            const Algorithm* chosen = nullptr;
            for (size_t count : {size_t(0), size_t(2), size_t(5000), size_t(1) << 20})
                for (int r : {0, 1, m.ranks() - 1}) {
                    Selector sel(p);  // a fresh one: nothing cached from another rank
                    CollArgs args = at_rank(args_for(c, m, count), r);
                    args.chunk_bytes = 256 * 1024;
                    const Algorithm* a = sel.choose(args).algorithm;
                    if (!chosen) chosen = a;
                    REQUIRE(a == chosen);
                }
            // The one whose worst ratio to the best over the blocks is least.
            Selector sel(p);
            CollArgs a = at_rank(args_for(c, m, 3), 0);
            a.chunk_bytes = 256 * 1024;
            double chosen_worst = 1, least = 0;
            for (const Algorithm& alg : algorithms_for(c)) {
                if (alg.supports && !alg.supports(a)) continue;
                double worst = 1;
                bool ahead_everywhere = true;  // of every other algorithm, by 10%
                for (size_t block : Selector::unagreed_blocks(a)) {
                    double best = 0, others = 0;
                    for (const auto& [other, pr] : sel.predictions(a, block)) {
                        if (best == 0 || pr.us < best) best = pr.us;
                        if (other != &alg && (others == 0 || pr.us < others)) others = pr.us;
                    }
                    const double mine = sel.prediction(alg, a, block)->us;
                    worst = std::max(worst, mine / best);
                    ahead_everywhere &= mine * 1.1 < others;
                }
                if (ahead_everywhere) REQUIRE(chosen == &alg);
                if (&alg == chosen) chosen_worst = worst;
                least = least == 0 ? worst : std::min(least, worst);
            }
            REQUIRE(chosen_worst == least);
            if (m.hosts() == 1) REQUIRE_FALSE(is_two_level(*chosen));
            if (m.ranks() == 128 && c != Collective::Alltoallv) REQUIRE(is_two_level(*chosen));
            if (m.ranks() == 4 && m.hosts() == 2) REQUIRE_FALSE(is_two_level(*chosen));
        }
    }
}

namespace {

// A phase's arguments, as Composer::phase_args makes them for a composed
// schedule of the defaults.
CollArgs phase_of(Collective c, int rank, int size, size_t bytes, const CostParams* cost) {
    CollArgs s;
    s.coll = c;
    s.rank = rank;
    s.size = size;
    s.count = bytes / 4;
    if (c == Collective::ReduceScatter) s.count = bytes / 4 / static_cast<size_t>(size);
    s.cost = cost;
    s.tag_bits = kStepTagBits - kPhaseTagBits;
    return s;
}

// An algorithm of messages only: no publish slots, no one-sided steps, one
// level.
bool messages_only(const Algorithm& a) {
    const std::string n = a.name;
    return n != "shm_flat" && n != "one_sided" && !is_two_level(a);
}

const Collective kPhaseColls[] = {Collective::Allreduce,     Collective::Broadcast, Collective::Reduce,
                                  Collective::ReduceScatter, Collective::Allgather, Collective::Allgatherv,
                                  Collective::Gather,        Collective::Scatter,   Collective::Barrier,
                                  Collective::Gatherv,       Collective::Scatterv,  Collective::Alltoallv};

}  // namespace

TEST_CASE("a phase runs the algorithm the cost model predicts fastest for its group and link class",
          "[unit][two_level]") {
    const CostParams cost;
    size_t unlike_fixed = 0;
    for (PhaseLink link : {PhaseLink::Host, PhaseLink::Hosts})
        for (int n : {2, 3, 4, 8})
            for (Collective c : kPhaseColls)
                for (size_t bytes = 64; bytes <= (size_t(16) << 20); bytes *= 16) {
                    const CollArgs sa = phase_of(c, 0, n, bytes, &cost);
                    const Algorithm& chosen = phase_algorithm(sa, link);
                    CAPTURE(link == PhaseLink::Host ? "host" : "hosts", n, collective_name(c), bytes, chosen.name);
                    REQUIRE(chosen.coll == c);
                    REQUIRE(messages_only(chosen));
                    // The group alone: one host, or each rank on a host of
                    // its own.
                    CostParams q = cost;
                    if (link == PhaseLink::Hosts) {
                        std::vector<int> labels;
                        for (int r = 0; r < n; ++r) labels.push_back(r);
                        q.hosts = std::make_shared<const HostMap>(HostMap::from_labels(labels));
                    }
                    Selector sel(q);
                    CollArgs m = sa;
                    m.cost = nullptr;
                    REQUIRE(&chosen == sel.choose(m).algorithm);
                    // Within the selector's margin of the best prediction at
                    // the lower end of the message's size class.
                    const size_t at = Selector::class_floor(Selector::quarter_class(m.message_bytes()));
                    double best = 0, mine = 0;
                    for (const auto& [algo, pr] : sel.predictions(m, at)) {
                        REQUIRE(messages_only(*algo));
                        if (best == 0 || pr.us < best) best = pr.us;
                        if (algo == &chosen) mine = pr.us;
                    }
                    REQUIRE(mine > 0);
                    REQUIRE(mine <= best * Selector::kNearBest);
                    // Without cost parameters: the fixed rule.
                    m.cost = nullptr;
                    REQUIRE(&phase_algorithm(m, link) == &fixed_phase_algorithm(m));
                    unlike_fixed += &chosen != &fixed_phase_algorithm(m);
                    if (c == Collective::Barrier) break;
                }
    REQUIRE(unlike_fixed > 0);

    // 4 hosts of 2 ranks, an all-reduce of 128 KiB by rails: each rail's
    // all-reduce of a 64 KiB share crosses hosts, where the fixed rule's
    // recursive doubling moves the whole share every round.
    const CollArgs rail = phase_of(Collective::Allreduce, 1, 4, 64 * 1024, &cost);
    REQUIRE(std::string(fixed_phase_algorithm(rail).name) == "recursive_doubling");
    REQUIRE(std::string(phase_algorithm(rail, PhaseLink::Hosts).name) != "recursive_doubling");
    // And the rails all-reduce, its phases so chosen (each group priced by
    // its own link class), is predicted ahead of the flat ring there.
    CostParams on_hosts = cost;
    on_hosts.hosts = std::make_shared<const HostMap>(HostMap::from_layout({2, 2, 2, 2}));
    CollArgs a = args_for(Collective::Allreduce, *on_hosts.hosts, 32 * 1024);
    a.chunk_bytes = 256 * 1024;
    a.depth = 16;
    const double rails = predict(find_algorithm(Collective::Allreduce, "two_level_rails"), a, on_hosts).us;
    const double ring = predict(find_algorithm(Collective::Allreduce, "ring"), a, on_hosts).us;
    CAPTURE(rails, ring);
    REQUIRE(rails < ring);

    // At 32 KiB each rail's 16 KiB share is priced apart by the two link
    // classes (recursive doubling between hosts, Rabenseifner inside one):
    // rank 0's messages to other hosts are those of the between-hosts
    // choice's schedule for its place on the rail (host 0).
    a.count = 8 * 1024;
    const CollArgs share = phase_of(Collective::Allreduce, 0, 4, 16 * 1024, &cost);
    const Algorithm &across = phase_algorithm(share, PhaseLink::Hosts),
                    &inside = phase_algorithm(share, PhaseLink::Host);
    REQUIRE(&across != &inside);
    // Messages of a schedule (on the composed one: only those to other hosts
    // than host 0, ranks 0 and 1).
    auto transfers = [](const Schedule& s, bool composed) {
        size_t n = 0;
        for (const Step& st : s.steps())
            if ((st.kind == StepKind::Send || st.kind == StepKind::Recv) && (!composed || st.peer >= 2)) ++n;
        return n;
    };
    a.cost = &on_hosts;
    const auto composed = find_algorithm(Collective::Allreduce, "two_level_rails").build(a);
    CAPTURE(across.name, inside.name);
    REQUIRE(transfers(*across.build(share), false) != transfers(*inside.build(share), false));
    REQUIRE(transfers(*composed, true) == transfers(*across.build(share), false));
}

TEST_CASE("every rank of a phase's group chooses alike, whatever its place and however many threads choose",
          "[unit][two_level]") {
    CostParams cost;
    // Parameters no other test uses: the choices are made here, not cached.
    cost.alpha_us = 1.4375;
    std::vector<CollArgs> phases;
    std::vector<PhaseLink> links;
    for (PhaseLink link : {PhaseLink::Host, PhaseLink::Hosts})
        for (Collective c : kPhaseColls)
            for (size_t bytes : {size_t(256), size_t(64) << 10, size_t(4) << 20}) {
                phases.push_back(phase_of(c, 0, 4, bytes, &cost));
                links.push_back(link);
            }
    // Several threads at once, each from a cold cache.
    std::vector<std::vector<const Algorithm*>> seen(4);
    std::vector<std::thread> pool;
    for (auto& out : seen)
        pool.emplace_back([&] {
            for (size_t i = 0; i < phases.size(); ++i) out.push_back(&phase_algorithm(phases[i], links[i]));
        });
    for (auto& t : pool) t.join();
    for (size_t i = 0; i < phases.size(); ++i) {
        CAPTURE(collective_name(phases[i].coll), phases[i].message_bytes());
        for (const auto& out : seen) REQUIRE(out[i] == seen[0][i]);
        // Every rank of the group, in place or not, at any root.
        for (int r = 0; r < 4; ++r) {
            CollArgs at = phases[i];
            at.rank = r;
            at.root = 3 - r;
            at.in_place = r % 2;
            REQUIRE(&phase_algorithm(at, links[i]) == seen[0][i]);
        }
    }

    // Every rank's schedule of every two-level algorithm with the model's
    // phases: they pair up and run to the end (a rank that chose another
    // algorithm for a phase would leave messages unmatched).
    for (const HostMap& m : {HostMap::from_layout({2, 2, 2, 2}), HostMap::from_layout({2, 1, 1}),
                             HostMap::from_labels({0, 1, 2, 0, 1, 2})})
        for (const Algorithm* algo : two_level_algorithms()) {
            if (!algo->supports(args_for(algo->coll, m, 1))) continue;
            for (size_t count : {size_t(5), size_t(3000), size_t(200000)})
                for (chorus_op_t op : {CHORUS_SUM, CHORUS_AVG}) {
                    CollArgs a = args_for(algo->coll, m, count);
                    a.op = op;
                    a.root = m.ranks() - 1;
                    a.chunk_bytes = 64 * 1024;
                    a.cost = &cost;
                    CAPTURE(m.describe(), collective_name(algo->coll), algo->name, count, op);
                    check_group(*algo, a);
                }
        }
}

TEST_CASE("a rank's two-level all-gather(v) schedule is the same whatever was built before it on its thread",
          "[unit][two_level]") {
    // The leaders' all-gather keeps the layout of the last arguments per
    // thread: built after other blocks, other displacements, another map of
    // as many ranks, or alone on a fresh thread, a schedule is the same.
    const HostMap m = HostMap::from_layout({2, 2}), other = HostMap::from_labels({0, 1, 0, 1});
    CollArgs v = args_for(Collective::Allgatherv, m, 1);
    v.counts = {4, 1, 2, 3};
    v.displs = {9, 0, 5, 1};
    CollArgs equal = args_for(Collective::Allgather, m, 2);
    for (const CollArgs& want_of : {v, equal}) {
        CollArgs want = want_of;
        std::vector<CollArgs> before(5, want);
        before[0].counts = {3, 2, 1, 2};  // other blocks
        before[1].displs = {0, 4, 5, 7};  // other displacements (packed in rank order)
        before[2].hosts = &other;         // another map
        before[3].coll = Collective::Allgather;
        before[3].counts.clear();
        before[3].displs.clear();
        before[4].count = 3;  // another all-gather's block
        const Algorithm& algo = find_algorithm(want.coll, "two_level_leaders");
        for (int r = 0; r < 4; ++r) {
            want.rank = r;
            std::string alone;
            std::thread([&] { alone = algo.build(want)->dump(); }).join();
            for (CollArgs b : before) {
                CollArgs reset = v;  // kept by none of them
                reset.counts = {1, 1, 1, 1};
                reset.displs = {3, 2, 1, 0};
                b.rank = reset.rank = r;
                CAPTURE(collective_name(want.coll), r, b.counts, b.displs, b.count, collective_name(b.coll),
                        b.hosts == &other);
                algo.build(reset);
                find_algorithm(b.coll, "two_level_leaders").build(b);
                REQUIRE(algo.build(want)->dump() == alone);
            }
        }
    }
}
