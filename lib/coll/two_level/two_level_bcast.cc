// Two-level broadcast through one representative a host: the root on its
// own host, the leader (lowest rank) on each other. Two phases
// (lib/coll/planner/compose.h splices them):
//
//   1. across hosts, a broadcast among the representatives from the root;
//   2. inside each host, a broadcast from its representative (the root from
//      its send buffer, the others from what phase 1 wrote into Recv, each
//      piece as soon as it has arrived).
//
// Each runs the algorithm lib/coll/two_level/two_level.h picks for the message's
// size (binomial or scatter + all-gather), so the message crosses each host
// link once (per tree edge) instead of once for each rank of the host that
// a flat tree puts below another host's. The root's own copy into Recv is
// phase 2's; phase 1 writes nothing on the root.
#include "coll/two_level/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_bcast(const CollArgs& a) {
    Composer c(a);
    if (a.count == 0) return c.finish();
    const HostView v(a);
    const bool root = a.rank == a.root;
    const int rep = v.rep(v.host, a.root);
    const Place from = Place::at(root ? Buf::Send : Buf::Recv, 0), recv = Place::at(Buf::Recv, 0);

    if (a.rank == rep) {
        CollArgs across = c.phase_args(Collective::Broadcast, v.host, v.hosts);
        across.count = a.count;
        across.root = v.map.host_of(a.root);
        across.in_place = true;
        run_phase(c, 0, across, v.reps(a.root), from, root ? Place::none() : recv);
    }

    CollArgs inside = c.phase_args(Collective::Broadcast, v.local, v.local_size());
    inside.count = a.count;
    inside.root = v.map.local_index(rep);
    inside.in_place = true;
    run_phase(c, 1, inside, v.members(), from, recv);
    return c.finish();
}

}  // namespace chorus::coll
