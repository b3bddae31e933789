// Two-level all-reduce through the hosts' leaders, for any layout (hosts of
// different sizes included: 3+1, 2+1+1). The leader of a host is its lowest
// rank. Three phases (lib/coll/planner/compose.h splices them):
//
//   1. inside each host, a reduce of the message to the leader, into its
//      Recv (in place there when the call is);
//   2. across hosts, an all-reduce among the leaders, in place in Recv; AVG
//      is divided here, once, by the whole rank count;
//   3. inside each host, a broadcast from the leader.
//
// Each phase runs the algorithm lib/coll/two_level/two_level.h picks for its size
// (binomial or reduce-scatter + gather; recursive doubling, Rabenseifner or
// ring; binomial or scatter + all-gather). A host's sum is computed once,
// by its leader's tree; the leaders' algorithm gives them the same bits,
// which are then only copied: every rank holds the same bits.
//
// Cost: one message's worth crosses each host link per direction for the
// leaders' all-reduce (its own factor: log2 H for recursive doubling,
// 2 (H-1)/H for the others), whatever the host's size; the phases inside a
// host add their steps on the host's links. For small messages this is
// log2 L + log2 H + log2 L rounds, only log2 H of them between hosts.
#include "coll/two_level/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_leaders_allreduce(const CollArgs& a) {
    Composer c(a);
    if (a.count == 0) return c.finish();
    const HostView v(a);
    const bool leader = v.local == 0;
    const Place recv = Place::at(Buf::Recv, 0);

    CollArgs rd = c.phase_args(Collective::Reduce, v.local, v.local_size());
    rd.count = a.count;
    rd.in_place = leader && a.in_place;
    run_phase(c, 0, rd, v.members(), Place::at(Buf::Send, 0), leader ? recv : Place::none());

    if (leader) {
        CollArgs ar = c.phase_args(Collective::Allreduce, v.host, v.hosts);
        ar.count = a.count;
        ar.in_place = true;
        run_phase(c, 1, ar, v.leaders(), recv, recv);
        if (a.op == CHORUS_AVG) c.divide({Buf::Recv, 0}, a.count);
    }

    CollArgs bc = c.phase_args(Collective::Broadcast, v.local, v.local_size());
    bc.count = a.count;
    bc.in_place = true;
    run_phase(c, 2, bc, v.members(), recv, recv);
    return c.finish();
}

}  // namespace chorus::coll
