// Two-level all-gather and all-gatherv through the hosts' leaders, for any
// layout and (all-gatherv) any blocks, zeros too: every rank knows every
// count. The leader of a host is its lowest rank; a host's super-block is
// its ranks' blocks in local order. The blocks gather in a staging area laid
// out host by host, packed (Recv itself where the ranks of each host are
// consecutive, hosts in order, and the blocks lie packed in rank order; else
// scratch):
//
//   1. inside each host, a gather (all-gatherv: a gatherv) of the blocks to
//      the leader, into its host's super-block;
//   2. across hosts, an all-gatherv of the super-blocks among the leaders,
//      in place in the staging area;
//   3. inside each host, a broadcast of the whole staging area from the
//      leader;
//   4. every block from the staging area to its place in Recv (this rank's
//      own stays where it is in place); the gaps are never written.
//
// Each phase runs the algorithm lib/coll/two_level/two_level.h picks for its size
// (binomial or direct gather, the direct gatherv; ring; binomial or
// scatter + all-gather). Blocks are only copied.
//
// Cost: each host link carries the other hosts' super-blocks once, whatever
// the host's size; inside a host the leader gathers its host's blocks and
// sends out the whole result (a tree or scatter + all-gather of it).
#include "coll/two_level/two_level.h"

namespace chorus::coll {

namespace {

// What every rank's schedule shares: the blocks, where they lie in Recv and
// in the staging area, and whether the two are one. Whoever builds every
// rank's schedule in turn (the cost model, 32768 ranks at 4096 hosts of 8)
// would otherwise redo these O(ranks) passes for each rank: the last one is
// kept per thread, with the arguments it was made from.
struct Layout {
    Layout(const CollArgs& a, const HostMap& m)
        : coll(a.coll),
          size(a.size),
          count(a.count),
          in_counts(a.counts),
          in_displs(a.displs),
          map(m),
          counts(static_cast<size_t>(a.size)),
          displs(counts.size()),
          staged(host_order(m), fill(a, counts, displs)),
          given(rank_order(a.size), counts, displs) {
        direct = staged.identity();
        for (int r = 0; r < a.size && direct; ++r) direct = displs[r] == staged.at(r);
    }
    bool made_from(const CollArgs& a, const HostMap& m) const {
        return coll == a.coll && size == a.size && count == a.count && in_counts == a.counts && in_displs == a.displs &&
               map == m;
    }
    // Every rank's block, in one pass (a.block() sums the counts before a
    // block when there are no displacements).
    static const std::vector<size_t>& fill(const CollArgs& a, std::vector<size_t>& counts,
                                           std::vector<size_t>& displs) {
        for (size_t r = 0, at = 0; r < counts.size(); ++r) {
            counts[r] = a.counts.empty() ? a.count : a.counts[r];
            displs[r] = a.displs.empty() ? at : a.displs[r];
            at += counts[r];
        }
        return counts;
    }

    Collective coll;
    int size;
    size_t count;
    std::vector<size_t> in_counts, in_displs;
    HostMap map;
    std::vector<size_t> counts, displs;
    Staging staged, given;
    bool direct = false;
};

std::shared_ptr<const Layout> layout_for(const CollArgs& a, const HostMap& m) {
    thread_local std::shared_ptr<const Layout> last;
    if (!last || !last->made_from(a, m)) last = std::make_shared<const Layout>(a, m);
    return last;
}

}  // namespace

// All-gather and all-gatherv alike (algorithm.cc registers it for both).
std::unique_ptr<Schedule> build_two_level_leaders_allgather(const CollArgs& a) {
    Composer c(a);
    const HostView v(a);
    const bool leader = v.local == 0, equal = a.coll == Collective::Allgather;
    const size_t es = c.esize();
    const std::shared_ptr<const Layout> layout = layout_for(a, v.map);
    const std::vector<size_t>& counts = layout->counts;
    const Staging &staged = layout->staged, &given = layout->given;
    if (staged.total == 0) return c.finish();
    const bool direct = layout->direct;
    const Place stage = direct ? Place::at(Buf::Recv, 0) : Place::at(Buf::Scratch, c.reserve(staged.total * es));
    auto super = [&](int h) { return staged.at(v.map.members(h)[0]); };
    const Place mine = Place::at(stage.buf, stage.offset + super(v.host) * es);

    CollArgs ga = c.phase_args(equal ? Collective::Gather : Collective::Gatherv, v.local, v.local_size());
    ga.count = counts[a.rank];
    if (leader && !equal)
        for (int q : v.members()) {
            ga.counts.push_back(counts[q]);
            ga.displs.push_back(staged.at(q) - super(v.host));
        }
    ga.in_place = leader && direct && a.in_place;
    run_phase(c, 0, ga, v.members(), Place::at(Buf::Send, 0), leader ? mine : Place::none());

    if (leader) {
        CollArgs ag = c.phase_args(Collective::Allgatherv, v.host, v.hosts);
        for (int h = 0; h < v.hosts; ++h) {
            size_t n = 0;
            for (int q : v.map.members(h)) n += counts[q];
            ag.counts.push_back(n);
            ag.displs.push_back(super(h));
        }
        ag.count = ag.counts[v.host];
        ag.in_place = true;
        run_phase(c, 1, ag, v.leaders(), mine, stage);
    }

    CollArgs bc = c.phase_args(Collective::Broadcast, v.local, v.local_size());
    bc.count = staged.total;
    bc.in_place = true;
    run_phase(c, 2, bc, v.members(), stage, stage);

    if (!direct)
        c.copies(moves(staged, {Buf::Scratch, stage.offset}, given, {Buf::Recv, 0}, es, a.in_place ? a.rank : -1));
    return c.finish();
}

}  // namespace chorus::coll
