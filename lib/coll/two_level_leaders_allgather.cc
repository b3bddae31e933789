// Two-level all-gather through the hosts' leaders, for any layout. The
// leader of a host is its lowest rank; a host's super-block is its ranks'
// blocks in local order. The blocks gather in a staging area laid out
// host by host (Recv itself where the ranks of each host are consecutive,
// hosts in order; else scratch):
//
//   1. inside each host, a gather of the blocks to the leader, into its
//      host's super-block;
//   2. across hosts, an all-gatherv of the super-blocks among the leaders,
//      in place in the staging area;
//   3. inside each host, a broadcast of the whole staging area from the
//      leader;
//   4. every block from the staging area to its place in Recv (this rank's
//      own stays where it is in place).
//
// Each phase runs the algorithm lib/coll/two_level.h picks for its size
// (binomial or direct gather; ring; binomial or scatter + all-gather).
// Blocks are only copied.
//
// Cost: (H-1)/H of the result crosses each host link once, whatever the
// host's size; inside a host the leader gathers its host's blocks and
// sends out the whole result (a tree or scatter + all-gather of it).
#include "coll/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_leaders_allgather(const CollArgs& a) {
    Composer c(a);
    if (a.count == 0) return c.finish();
    const HostView v(a);
    const bool leader = v.local == 0;
    const size_t es = c.esize(), n = a.count;
    const std::vector<size_t> counts(static_cast<size_t>(a.size), n);
    const Staging given(rank_order(a.size), counts), staged(host_order(v.map), counts);
    const bool direct = staged.identity();
    const Place stage = direct ? Place::at(Buf::Recv, 0) : Place::at(Buf::Scratch, c.reserve(staged.total * es));
    auto super = [&](int h) { return staged.at(v.map.members(h)[0]); };
    const Place mine = Place::at(stage.buf, stage.offset + super(v.host) * es);

    CollArgs ga = c.phase_args(Collective::Gather, v.local, v.local_size());
    ga.count = n;
    ga.in_place = leader && direct && a.in_place;
    run_phase(c, 0, ga, v.members(), Place::at(Buf::Send, 0), leader ? mine : Place::none());

    if (leader) {
        CollArgs ag = c.phase_args(Collective::Allgatherv, v.host, v.hosts);
        for (int h = 0; h < v.hosts; ++h) {
            ag.counts.push_back(v.map.members(h).size() * n);
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
