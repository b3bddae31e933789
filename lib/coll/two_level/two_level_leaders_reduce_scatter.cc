// Two-level reduce-scatter through the hosts' leaders (block and v forms),
// for any layout. The leader of a host is its lowest rank; a host's
// super-block is its ranks' blocks, in local order.
//
//   1. inside each host, a reduce of the whole input to the leader, into
//      scratch; the leader then stages it host by host (skipped where the
//      ranks of each host are consecutive, hosts in order);
//   2. across hosts, a reduce-scatter of the super-blocks among the
//      leaders: each ends with its host's super-block, reduced over every
//      host; AVG divided there, once, by the whole rank count;
//   3. inside each host, a scatterv of the super-block from the leader,
//      each rank's block into its Recv (in place, once every read of Send
//      is done).
//
// Each phase runs the algorithm lib/coll/two_level/two_level.h picks for its size
// (binomial or reduce-scatter + gather; halving or ring; direct). Every
// block is reduced over a host by its leader's tree and across hosts by its
// host's leader.
//
// Cost: the whole input travels up each host's tree; (H-1)/H of it crosses
// each host link (the super-blocks of the other hosts), whatever the host's
// size; the scatter moves the host's super-block once.
#include "coll/two_level/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_leaders_reduce_scatter(const CollArgs& a) {
    Composer c(a);
    const size_t total = a.total_count(), es = c.esize();
    if (total == 0) return c.finish();
    const HostView v(a);
    const bool leader = v.local == 0;
    std::vector<size_t> counts(static_cast<size_t>(a.size));
    for (int r = 0; r < a.size; ++r) counts[r] = a.block_count(r);
    const Staging given(rank_order(a.size), counts), staged(host_order(v.map), counts);
    std::vector<size_t> host_counts, mine;
    for (int h = 0; h < v.hosts; ++h) {
        size_t n = 0;
        for (int q : v.map.members(h)) n += counts[q];
        host_counts.push_back(n);
    }
    for (int q : v.members()) mine.push_back(counts[q]);

    CollArgs rd = c.phase_args(Collective::Reduce, v.local, v.local_size());
    rd.count = total;
    const Place sum = leader ? Place::at(Buf::Scratch, c.reserve(total * es)) : Place::none();
    run_phase(c, 0, rd, v.members(), Place::at(Buf::Send, 0), sum);

    Place super = Place::none();
    if (leader) {
        Place input = sum;
        if (!staged.identity()) {
            input = Place::at(Buf::Scratch, c.reserve(total * es));
            c.copies(moves(given, {Buf::Scratch, sum.offset}, staged, {Buf::Scratch, input.offset}, es));
        }
        CollArgs across = c.phase_args(Collective::ReduceScatter, v.host, v.hosts);
        across.counts = host_counts;
        super = Place::at(Buf::Scratch, c.reserve(host_counts[v.host] * es));
        run_phase(c, 1, across, v.leaders(), input, super);
        if (a.op == CHORUS_AVG) c.divide({Buf::Scratch, super.offset}, host_counts[v.host]);
    }

    CollArgs sc = c.phase_args(Collective::Scatterv, v.local, v.local_size());
    sc.count = counts[a.rank];
    sc.send_counts = mine;
    run_phase(c, 2, sc, v.members(), super, Place::at(Buf::Recv, 0));
    return c.finish();
}

}  // namespace chorus::coll
