// Every algorithm's schedule, built for every rank, orders each pair of
// accesses to the same bytes of a rank's memory, one of them writing (else
// the result depends on which the executor happens to run first). The send
// and receive buffers are laid out as the library passes them
// (algorithm.h): in place they overlap, and a rank that does not use its
// send buffer has it bound to the receive buffer. "Ordered" is over all
// ranks' steps at once: dependencies, and the pairs of steps between ranks
// (a receive ends after its send starts, an await after its publish, a get
// or put runs inside its expose), so that a peer's get or put of an exposed
// region counts as an access to it, and the one-sided algorithms' in-place
// forms, which rely on a peer having read a block before it exposes what
// overwrites it, are checked for what they rely on. Pieces of 8 elements and
// two scratch slots: scratch reuse between chunks is covered too.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "block_layout.h"
#include "coll/algorithm.h"
#include "coll/planner/selector.h"
#include "coll/planner/topology.h"
#include "coll/planner/two_stage.h"
#include "net/transport.h"
#include "reduce/datatype.h"

using namespace chorus;
using namespace chorus::coll;

namespace {

// Where each buffer lives in one address space (Recv at 0).
struct Layout {
    long long send = 1ll << 40, recv = 0, scratch = 2ll << 40;
};

long long own_offset(const CollArgs& a, Side side, int r) {
    return static_cast<long long>(a.block(side, r).offset * datatype_size(a.dtype));
}

Layout layout_of(const CollArgs& a) {
    Layout l;
    const bool root = a.rank == a.root;
    switch (a.coll) {
        case Collective::Broadcast:
            if (a.in_place || !root) l.send = 0;
            break;
        case Collective::Scatter:
        case Collective::Scatterv:
            if (!root)
                l.send = 0;  // bound, never read
            else if (a.in_place)
                l.send = -own_offset(a, Side::Send, a.root);  // Recv is Send's block `root`
            break;
        case Collective::Allgather:
        case Collective::Allgatherv:
            if (a.in_place) l.send = own_offset(a, Side::Recv, a.rank);
            break;
        case Collective::Gather:
        case Collective::Gatherv:
            if (a.in_place && root) l.send = own_offset(a, Side::Recv, a.root);
            break;
        case Collective::Barrier: break;
        default:
            if (a.in_place) l.send = 0;
            break;
    }
    return l;
}

// Slots per rank.
constexpr uint32_t kSlotCount = chorus::net::Transport::kSlots;

// Every rank's schedule as one graph of events: each step starts and ends
// (node 2 * step and 2 * step + 1 after the rank's base), a step starts
// after its dependencies end, and the pairs of steps between ranks order
// their peers' events: a send starts before its receive ends, a publish ends
// before its await does, and an expose starts before its get or put does and
// ends after it, and a claim of a slot round ends after every rank's
// release of the rounds up to the one that used the slot before (so an
// acyclic graph is a group of schedules that cannot deadlock on the slots
// when their steps run as their dependencies allow).
class Events {
public:
    explicit Events(const std::vector<std::unique_ptr<Schedule>>& built) : built_(built) {
        for (const auto& s : built) {
            base_.push_back(nodes_);
            nodes_ += 2 * s->num_steps();
        }
        std::vector<std::vector<uint32_t>> out(nodes_);
        std::map<std::tuple<int, int, uint32_t>, StepId> sends, exposes;  // (from, to, tag)
        std::map<std::pair<int, uint32_t>, StepId> publishes, releases;   // (rank, slot round)
        for (int r = 0; r < static_cast<int>(built.size()); ++r) {
            const Schedule& s = *built[r];
            for (StepId x = 0; x < s.num_steps(); ++x) {
                const Step& st = s.steps()[x];
                out[start(r, x)].push_back(end(r, x));
                for (uint32_t i = 0; i < s.ndeps(x); ++i) out[end(r, s.deps_of(x)[i])].push_back(start(r, x));
                if (st.kind == StepKind::Send) sends[{r, st.peer, st.tag}] = x;
                if (st.kind == StepKind::Expose) exposes[{r, st.peer, st.tag}] = x;
                if (st.kind == StepKind::Publish) publishes[{r, st.round}] = x;
                if (st.kind == StepKind::Release) releases[{r, st.round}] = x;
            }
        }
        for (int r = 0; r < static_cast<int>(built.size()); ++r) {
            const Schedule& s = *built[r];
            for (StepId x = 0; x < s.num_steps(); ++x) {
                const Step& st = s.steps()[x];
                if (st.kind == StepKind::Recv) {
                    auto it = sends.find({st.peer, r, st.tag});
                    if (it != sends.end()) out[start(st.peer, it->second)].push_back(end(r, x));
                } else if (st.kind == StepKind::Await) {
                    auto it = publishes.find({st.peer, st.round});
                    if (it != publishes.end()) out[end(st.peer, it->second)].push_back(end(r, x));
                } else if (st.kind == StepKind::Claim && st.round >= kSlotCount) {
                    // A slot is reused once every rank has released every
                    // round up to the one that used it before (a count of
                    // the rounds released in a row: the 8 before that one
                    // are each released after their own claims, which
                    // came after the rounds before them).
                    const uint32_t last = st.round - kSlotCount, first = last >= 7 ? last - 7 : 0;
                    for (int q = 0; q < static_cast<int>(built.size()); ++q)
                        for (uint32_t m = first; m <= last; ++m) {
                            auto it = releases.find({q, m});
                            if (it != releases.end()) out[end(q, it->second)].push_back(end(r, x));
                        }
                } else if (st.kind == StepKind::Get || st.kind == StepKind::Put) {
                    auto it = exposes.find({st.peer, r, st.tag});
                    if (it == exposes.end()) continue;
                    out[start(st.peer, it->second)].push_back(start(r, x));
                    out[end(r, x)].push_back(end(st.peer, it->second));
                    pairs_.push_back({st.peer, it->second, r, x, st.kind == StepKind::Put});
                }
            }
        }
        // Ancestors by a topological order (Kahn's).
        std::vector<uint32_t> indegree(nodes_, 0), order;
        for (const auto& o : out)
            for (uint32_t v : o) ++indegree[v];
        for (uint32_t v = 0; v < nodes_; ++v)
            if (!indegree[v]) order.push_back(v);
        words_ = (nodes_ + 63) / 64;
        before_.assign(static_cast<size_t>(nodes_) * words_, 0);
        for (size_t i = 0; i < order.size(); ++i) {
            const uint32_t u = order[i];
            for (uint32_t v : out[u]) {
                uint64_t* bv = &before_[v * words_];
                const uint64_t* bu = &before_[u * words_];
                for (size_t w = 0; w < words_; ++w) bv[w] |= bu[w];
                bv[u / 64] |= uint64_t(1) << (u % 64);
                if (!--indegree[v]) order.push_back(v);
            }
        }
        acyclic_ = order.size() == nodes_;
    }
    bool acyclic() const { return acyclic_; }
    uint32_t start(int r, StepId x) const { return base_[r] + 2 * x; }
    uint32_t end(int r, StepId x) const { return base_[r] + 2 * x + 1; }
    // Whether event u happens before event v.
    bool before(uint32_t u, uint32_t v) const { return (before_[v * words_ + u / 64] >> (u % 64) & 1) != 0; }

    // An expose (rank, step) and its peer's get or put (peer, step).
    struct Pair {
        int rank;
        StepId expose;
        int peer;
        StepId access;
        bool put;
    };
    const std::vector<Pair>& pairs() const { return pairs_; }

private:
    const std::vector<std::unique_ptr<Schedule>>& built_;
    std::vector<uint32_t> base_;
    uint32_t nodes_ = 0;
    size_t words_ = 0;
    std::vector<uint64_t> before_;
    std::vector<Pair> pairs_;
    bool acyclic_ = true;
};

// A span of a rank's memory read or written between two events.
struct Access {
    long long begin, end;
    bool write;
    uint32_t from, to;  // events: the access happens after `from` starts and before `to` ends
    std::string what;
};

long long where(const Layout& l, const Region& r) {
    const long long base = r.buf == Buf::Send ? l.send : r.buf == Buf::Recv ? l.recv : l.scratch;
    return base + static_cast<long long>(r.offset);
}

// The accesses of rank r's own steps to its memory, and its peers' gets and
// puts of what it exposes: a get reads from the expose's start (where the
// region cannot be read in place the exposing rank sends it) to the get's
// end; a put writes from its own start to the expose's end.
std::vector<Access> accesses(const Events& ev, const Schedule& s, int r, const Layout& l) {
    const size_t es = datatype_size(s.dtype());
    std::vector<Access> out;
    auto add = [&](const Region& reg, size_t bytes, bool write, uint32_t from, uint32_t to, std::string what) {
        if (reg.buf == Buf::Slot || bytes == 0) return;  // a slot is written once, by the publish
        const long long at = where(l, reg);
        out.push_back({at, at + static_cast<long long>(bytes), write, from, to, std::move(what)});
    };
    for (StepId id = 0; id < s.num_steps(); ++id) {
        const Step& st = s.steps()[id];
        const uint32_t a = ev.start(r, id), b = ev.end(r, id);
        const std::string me = "step " + std::to_string(id);
        switch (st.kind) {
            case StepKind::Publish:
                if (st.count) {
                    for (const Schedule::SlotPiece& p : s.slot_pieces()) add(p.src, p.bytes, false, a, b, me);
                    break;
                }
                add(st.src, st.bytes, false, a, b, me);
                break;
            case StepKind::Send:
            case StepKind::Put: add(st.src, st.bytes, false, a, b, me); break;
            case StepKind::Recv: add(st.dst, st.bytes, true, a, b, me); break;
            case StepKind::Copy:
                if (where(l, st.src) == where(l, st.dst)) break;  // the executor skips a copy onto itself
                add(st.src, st.bytes, false, a, b, me);
                add(st.dst, st.bytes, true, a, b, me);
                break;
            case StepKind::Reduce:
                add(st.src, st.count * es, false, a, b, me);
                add(st.src2, st.count * es, false, a, b, me);
                add(st.dst, st.count * es, true, a, b, me);
                break;
            case StepKind::Divide: add(st.dst, st.count * es, true, a, b, me); break;
            case StepKind::Get:
                add(st.dst, st.bytes, true, a, b, me);
                if (st.count) {
                    add(st.src2, st.bytes, false, a, b, me);  // the local operand
                    add(st.src, st.bytes, true, a, b, me);    // the landing, where the data is sent instead
                }
                break;
            case StepKind::Expose:
            case StepKind::Await:
            case StepKind::Claim:
            case StepKind::Release: break;
        }
    }
    for (const Events::Pair& p : ev.pairs()) {
        if (p.rank != r) continue;
        const Step& x = s.steps()[p.expose];
        const std::string what = "rank " + std::to_string(p.peer) + "'s " + (p.put ? "put" : "get") + " (step " +
                                 std::to_string(p.access) + ") of step " + std::to_string(p.expose);
        if (p.put)
            add(x.src, x.bytes, true, ev.start(p.peer, p.access), ev.end(r, p.expose), what);
        else
            add(x.src, x.bytes, false, ev.start(r, p.expose), ev.end(p.peer, p.access), what);
    }
    return out;
}

// The first pair of conflicting accesses to rank r's memory that nothing
// orders, as text (empty: none).
std::string first_race(const Events& ev, const Schedule& s, int r, const Layout& l) {
    std::vector<Access> acc = accesses(ev, s, r, l);
    std::sort(acc.begin(), acc.end(), [](const Access& a, const Access& b) { return a.begin < b.begin; });
    for (size_t i = 0; i < acc.size(); ++i)
        for (size_t j = i + 1; j < acc.size() && acc[j].begin < acc[i].end; ++j) {
            const Access &x = acc[i], &y = acc[j];
            if (!(x.write || y.write) || ev.before(x.to, y.from) || ev.before(y.to, x.from)) continue;
            if (x.from == y.from && x.to == y.to) continue;  // one step (a reduction may write its operand)
            std::ostringstream o;
            o << x.what << " and " << y.what << " touch bytes [" << y.begin << ", " << std::min(x.end, y.end)
              << ") unordered\n"
              << s.dump();
            return o.str();
        }
    return "";
}

bool blockwise(Collective c) {
    return c != Collective::Allreduce && c != Collective::Broadcast && c != Collective::Reduce &&
           c != Collective::Barrier;
}

// The arguments of one case: `count` elements (a block's, for the
// collectives of a block per rank), `shape` for the irregular forms.
CollArgs args_for(Collective c, int p, size_t count, layout::Shape shape, bool in_place, int root, chorus_op_t op) {
    CollArgs a;
    a.coll = c;
    a.size = p;
    a.count = count;
    a.root = root;
    a.op = op;
    a.in_place = in_place;
    a.chunk_bytes = 32;  // pieces of 8 elements: pipelines several deep
    a.depth = 2;         // and scratch slots reused
    a.slot_bytes = 16368;
    a.one_sided = true;
    const uint64_t seed = 1000 + static_cast<uint64_t>(p) * 31 + count;
    auto counts = [&](int s, int d) { return layout::pair_count(shape, count, seed, p / 2, p, s, d); };
    const bool irregular = shape != layout::Shape::Even;
    size_t extent = 0;
    switch (c) {
        case Collective::ReduceScatter:
            if (irregular)
                for (int r = 0; r < p; ++r) a.counts.push_back(counts(r, -1));
            break;
        case Collective::Allgatherv:
        case Collective::Gatherv:
            for (int r = 0; r < p; ++r) a.counts.push_back(counts(r, -1));
            a.displs = layout::shuffled(a.counts, seed, &extent);
            if (c == Collective::Allgatherv) a.count = a.counts[0];  // set per rank below
            break;
        case Collective::Scatterv:
            for (int r = 0; r < p; ++r) a.send_counts.push_back(counts(r, -1));
            a.send_displs = layout::shuffled(a.send_counts, seed, &extent);
            break;
        default: break;
    }
    return a;
}

// Per-rank fields: what this rank sends (all-gatherv, gatherv), receives
// (scatterv) or exchanges (all-to-all-v).
CollArgs for_rank(CollArgs a, int r, size_t count, layout::Shape shape) {
    const int p = a.size;
    const uint64_t seed = 1000 + static_cast<uint64_t>(p) * 31 + count;
    auto pair = [&](int s, int d) { return layout::pair_count(shape, count, seed, p / 2, p, s, d); };
    size_t extent = 0;
    a.rank = r;
    switch (a.coll) {
        case Collective::Allgatherv:
        case Collective::Gatherv: a.count = a.counts[r]; break;
        case Collective::Scatterv: a.count = a.send_counts[r]; break;
        case Collective::Alltoallv:
            a.counts.clear();
            a.send_counts.clear();
            for (int q = 0; q < p; ++q) a.counts.push_back(pair(q, r));
            a.displs = layout::shuffled(a.counts, seed + static_cast<uint64_t>(r), &extent);
            if (!a.in_place) {
                for (int q = 0; q < p; ++q) a.send_counts.push_back(pair(r, q));
                a.send_displs = layout::shuffled(a.send_counts, seed * 7 + static_cast<uint64_t>(r), &extent);
            } else {
                a.send_displs.clear();
            }
            break;
        default: break;
    }
    return a;
}

// Every rank's schedule of `algo` for `a` (with each rank's own fields), checked.
// The first pair of accesses to one slot (a rank's slot index, shared by
// the rounds n, n + 8, ...) by steps of different rounds, at least one a
// write, that nothing orders, as text (empty: none). A round's slot is
// written by its owner's steps after the claim, and read by every rank's
// steps between its await and its release.
std::string first_slot_race(const Events& ev, const std::vector<std::unique_ptr<Schedule>>& built) {
    struct SlotAccess {
        int owner;
        uint32_t round;
        size_t begin, end;
        bool write;
        uint32_t from, to;
        std::string what;
    };
    std::map<std::pair<int, uint32_t>, std::vector<SlotAccess>> by_slot;  // (owner, index)
    for (int r = 0; r < static_cast<int>(built.size()); ++r) {
        const Schedule& s = *built[r];
        if (s.slot_rounds() < 2) continue;
        const size_t es = datatype_size(s.dtype());
        for (StepId x = 0; x < s.num_steps(); ++x) {
            const Step& st = s.steps()[x];
            const size_t bytes = st.kind == StepKind::Copy ? st.bytes : st.count * es;
            auto add = [&](const Region& reg, bool write) {
                if (reg.buf != Buf::Slot || bytes == 0) return;
                by_slot[{reg.peer, reg.round % kSlotCount}].push_back(
                    {reg.peer, reg.round, reg.offset, reg.offset + bytes, write, ev.start(r, x), ev.end(r, x),
                     "rank " + std::to_string(r) + " step " + std::to_string(x)});
            };
            if (st.kind == StepKind::Copy || st.kind == StepKind::Reduce) add(st.src, false);
            if (st.kind == StepKind::Reduce) add(st.src2, false);
            if (st.kind == StepKind::Copy || st.kind == StepKind::Reduce || st.kind == StepKind::Divide)
                add(st.dst, true);
        }
    }
    for (const auto& [key, acc] : by_slot)
        for (size_t i = 0; i < acc.size(); ++i)
            for (size_t j = i + 1; j < acc.size(); ++j) {
                const SlotAccess &x = acc[i], &y = acc[j];
                if (x.round == y.round || !(x.write || y.write) || x.end <= y.begin || y.end <= x.begin) continue;
                if (ev.before(x.to, y.from) || ev.before(y.to, x.from)) continue;
                return x.what + " (round " + std::to_string(x.round) + ") and " + y.what + " (round " +
                       std::to_string(y.round) + ") touch rank " + std::to_string(key.first) + "'s slot " +
                       std::to_string(key.second) + " unordered";
            }
    return "";
}

void check_case(const Algorithm& algo, const CollArgs& a, size_t count, layout::Shape shape) {
    std::vector<std::unique_ptr<Schedule>> built;
    std::vector<CollArgs> per;
    for (int r = 0; r < a.size; ++r) per.push_back(for_rank(a, r, count, shape));
    for (int r = 0; r < a.size; ++r) {
        // A two-stage algorithm's second stage (the first orders no bytes of
        // the user's buffers): on a gatherer, its members' sizes.
        if (algo.two_stage && gathered_sizes(per[r]))
            for (int m : a.hosts->members(a.hosts->host_of(r)))
                for (uint64_t x : own_sizes(per[m])) per[r].host_sizes.push_back(static_cast<size_t>(x));
        built.push_back(algo.build(per[r]));
    }
    const Events ev(built);
    REQUIRE(ev.acyclic());
    const std::string slot_race = first_slot_race(ev, built);
    INFO(slot_race);
    CHECK(slot_race.empty());
    for (int r = 0; r < a.size; ++r) {
        CAPTURE(r);
        const std::string race = first_race(ev, *built[r], r, layout_of(per[r]));
        INFO(race);
        CHECK(race.empty());
    }
}

// Whether the collective has an in-place form in which a rank's own data
// starts where this layout puts it (alltoall(v) in place: symmetric, even).
bool has_in_place(Collective c, layout::Shape shape) {
    if (c == Collective::Barrier) return false;
    if (c == Collective::Alltoallv) return shape == layout::Shape::Even;
    return true;
}

}  // namespace

TEST_CASE("every schedule orders the steps that touch the same bytes", "[unit][hazards]") {
    const std::vector<HostMap> maps = {HostMap::from_layout({2, 2}), HostMap::from_layout({2, 1, 2}),
                                       HostMap::from_layout({3, 3}), HostMap::from_labels({0, 1, 0, 1, 0})};
    size_t checked = 0;
    for (int ci = 0; ci < kNumCollectives; ++ci) {
        const Collective c = Collective(ci);
        for (const Algorithm& algo : algorithms_for(c))
            for (int p = 1; p <= 9; ++p)
                for (size_t count : {size_t(1), size_t(5), size_t(3 * p + 17), size_t(2100)})
                    for (layout::Shape shape : {layout::Shape::Even, layout::Shape::Irregular}) {
                        // Blocks larger than a part of a slot: the irregular forms' flat
                        // algorithms send them as messages.
                        // And the pipelined all-reduce, in chunks of one line: many slot rounds.
                        const bool pipelined = algo.name == std::string("shm_pipeline");
                        if (count == 2100 && !pipelined &&
                            (Selector::sizes_agreed(c) || algo.name != std::string("shm_flat")))
                            continue;
                        if (shape != layout::Shape::Even && !blockwise(c)) continue;
                        for (bool in_place : {false, true}) {
                            if (in_place && !has_in_place(c, shape)) continue;
                            for (int root : {0, p - 1})
                                for (chorus_op_t op : {CHORUS_SUM, CHORUS_AVG}) {
                                    if (op == CHORUS_AVG && c != Collective::Allreduce && c != Collective::Reduce &&
                                        c != Collective::ReduceScatter)
                                        continue;
                                    CollArgs a = args_for(c, p, count, shape, in_place, root, op);
                                    if (pipelined) a.slot_bytes = 64 * static_cast<size_t>(std::max(1, p - 1));
                                    // On one host, and on each host map of p ranks.
                                    std::vector<const HostMap*> where = {nullptr};
                                    for (const HostMap& m : maps)
                                        if (m.ranks() == p) where.push_back(&m);
                                    for (const HostMap* m : where) {
                                        a.hosts = m;
                                        const CollArgs first = for_rank(a, 0, count, shape);
                                        if (algo.supports && !algo.supports(first)) continue;
                                        CAPTURE(collective_name(c), algo.name, p, count, int(shape), in_place, root,
                                                int(op), m ? m->describe() : std::string("one host"));
                                        check_case(algo, a, count, shape);
                                        ++checked;
                                    }
                                }
                        }
                    }
    }
    REQUIRE(checked > 1000);
}
