// Two-level all-reduce by rails, for hosts of L ranks each (H hosts).
//
// The message is cut into L shares, share j = split(count, L, j), one per
// local index. Three phases (lib/coll/planner/compose.h splices them):
//
//   1. inside each host, a reduce-scatter of the message: local rank j ends
//      with share j reduced over its host (into Recv at share j's place;
//      in place, into scratch, as Send is still read there);
//   2. across hosts, an all-reduce of share j among rail j (the ranks of
//      local index j, one a host): each host link carries each share once;
//      AVG is divided here, once, by the whole rank count;
//   3. inside each host, an all-gatherv of the shares, in place in Recv.
//
// Each phase runs the algorithm lib/coll/two_level/two_level.h picks for its size
// (halving or ring; recursive doubling, Rabenseifner or ring; ring). Every
// element's value is computed once per host by one rank (phase 1), then by
// rail j's algorithm, which gives its ranks the same bits (phase 2), and
// then only copied: every rank holds the same bits.
//
// Cost: phases 1 and 3 move (L-1)/L of the message over the host's own
// links; phase 2 moves about 2 (H-1)/H of a share per rank between hosts,
// each rank on its own rail: L ranks of a host share its link, 2 (H-1)/H of
// the message in all, against 2 (p-1)/p of it from each host for a flat
// ring and far more for a flat algorithm across interleaved hosts. Steps:
// phase 1's and 3's within the host, phase 2's between hosts
// (log2 H rounds for small shares).
#include "coll/partition.h"
#include "coll/two_level/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_rails_allreduce(const CollArgs& a) {
    Composer c(a);
    if (a.count == 0) return c.finish();
    const HostView v(a);
    const int L = v.local_size(), j = v.local;
    const size_t es = c.esize();
    std::vector<size_t> shares(static_cast<size_t>(L)), starts(static_cast<size_t>(L));
    for (int k = 0; k < L; ++k) {
        const Range s = split(a.count, static_cast<size_t>(L), static_cast<size_t>(k));
        shares[k] = s.size();
        starts[k] = s.begin;
    }
    const Place share = Place::at(Buf::Recv, starts[j] * es);

    CollArgs rs = c.phase_args(Collective::ReduceScatter, j, L);
    rs.counts = shares;
    const Place partial = a.in_place ? Place::at(Buf::Scratch, c.reserve(shares[j] * es)) : share;
    run_phase(c, 0, rs, v.members(), Place::at(Buf::Send, 0), partial);

    CollArgs ar = c.phase_args(Collective::Allreduce, v.host, v.hosts);
    ar.count = shares[j];
    ar.in_place = !a.in_place;  // the partial is in Recv already
    run_phase(c, 1, ar, v.rail(j), partial, share);
    if (a.op == CHORUS_AVG) c.divide({Buf::Recv, starts[j] * es}, shares[j]);

    CollArgs ag = c.phase_args(Collective::Allgatherv, j, L);
    ag.count = shares[j];
    ag.counts = shares;
    ag.displs = starts;
    ag.in_place = true;
    run_phase(c, 2, ag, v.members(), share, Place::at(Buf::Recv, 0));
    return c.finish();
}

}  // namespace chorus::coll
