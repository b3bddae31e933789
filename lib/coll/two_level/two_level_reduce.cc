// Two-level reduce through one representative a host: the root on its own
// host, the leader (lowest rank) on each other. Two phases
// (lib/coll/planner/compose.h splices them):
//
//   1. inside each host, a reduce to its representative: into the root's
//      Recv (in place there when the call is), into scratch on the others;
//   2. across hosts, a reduce among the representatives to the root, in
//      place in its Recv; the root divides AVG once, by the whole rank
//      count.
//
// Each runs the algorithm lib/coll/two_level/two_level.h picks for the message's
// size (binomial or reduce-scatter + gather), so one message's worth
// crosses each host link (per tree edge) whatever the host's size. Only the
// root's Recv is written.
#include "coll/two_level/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_reduce(const CollArgs& a) {
    Composer c(a);
    if (a.count == 0) return c.finish();
    const HostView v(a);
    const bool root = a.rank == a.root;
    const int rep = v.rep(v.host, a.root);
    const Place send = Place::at(Buf::Send, 0), recv = Place::at(Buf::Recv, 0);
    // Where a representative other than the root gathers its host's sum.
    const Place partial = root            ? recv
                          : a.rank == rep ? Place::at(Buf::Scratch, c.reserve(a.count * c.esize()))
                                          : Place::none();

    CollArgs inside = c.phase_args(Collective::Reduce, v.local, v.local_size());
    inside.count = a.count;
    inside.root = v.map.local_index(rep);
    inside.in_place = root && a.in_place;
    run_phase(c, 0, inside, v.members(), send, partial);

    if (a.rank == rep) {
        CollArgs across = c.phase_args(Collective::Reduce, v.host, v.hosts);
        across.count = a.count;
        across.root = v.map.host_of(a.root);
        across.in_place = root;
        run_phase(c, 1, across, v.reps(a.root), partial, root ? recv : Place::none());
        if (root && a.op == CHORUS_AVG) c.divide({Buf::Recv, 0}, a.count);
    }
    return c.finish();
}

}  // namespace chorus::coll
