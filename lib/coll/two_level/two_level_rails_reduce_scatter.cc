// Two-level reduce-scatter by rails (block and v forms), for hosts of L
// ranks each (H hosts). Rail j is the ranks of local index j, one a host.
//
//   0. stage: every rank copies its input into scratch rail by rail: rail
//      j's blocks, in host order, make super-block j (skipped where the
//      layout already is that order: rank j*H + h on host h);
//   1. inside each host, a reduce-scatter of the super-blocks: local rank j
//      ends with super-block j reduced over its host;
//   2. across hosts, a reduce-scatter of super-block j among rail j: each
//      rank ends with its own block, reduced over every host, straight into
//      Recv (in place, once every read of Send is done); AVG divided there,
//      once, by the whole rank count.
//
// Each phase runs the algorithm lib/coll/two_level/two_level.h picks for its size
// (halving or ring). Every block is reduced over a host by one rank and
// across hosts by its owner.
//
// Cost: the staging copy of the input; phase 1 moves (L-1)/L of the input
// over the host's own links; phase 2 moves (H-1)/H of a super-block per rank
// between hosts, each rank on its own rail: (H-1)/H of the input crosses a
// host's link, the least any reduce-scatter can send between hosts.
#include "coll/two_level/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_rails_reduce_scatter(const CollArgs& a) {
    Composer c(a);
    const size_t total = a.total_count(), es = c.esize();
    if (total == 0) return c.finish();
    const HostView v(a);
    const int L = v.local_size(), j = v.local;
    std::vector<size_t> counts(static_cast<size_t>(a.size));
    for (int r = 0; r < a.size; ++r) counts[r] = a.block_count(r);
    const Staging given(rank_order(a.size), counts), staged(v.by_rail(), counts);
    Place input = Place::at(Buf::Send, 0);
    if (!staged.identity()) {
        input = Place::at(Buf::Scratch, c.reserve(total * es));
        c.copies(moves(given, {Buf::Send, 0}, staged, {Buf::Scratch, input.offset}, es));
    }

    CollArgs inside = c.phase_args(Collective::ReduceScatter, j, L);
    const std::vector<int> rail = v.rail(j);
    std::vector<size_t> across_counts;
    for (int k = 0; k < L; ++k) {
        size_t n = 0;
        for (int q : v.rail(k)) n += counts[q];
        inside.counts.push_back(n);
    }
    for (int q : rail) across_counts.push_back(counts[q]);
    const Place partial = Place::at(Buf::Scratch, c.reserve(inside.counts[j] * es));
    run_phase(c, 0, inside, v.members(), input, partial);

    CollArgs across = c.phase_args(Collective::ReduceScatter, v.host, v.hosts);
    across.counts = across_counts;
    run_phase(c, 1, across, rail, partial, Place::at(Buf::Recv, 0));
    if (a.op == CHORUS_AVG) c.divide({Buf::Recv, 0}, counts[a.rank]);
    return c.finish();
}

}  // namespace chorus::coll
