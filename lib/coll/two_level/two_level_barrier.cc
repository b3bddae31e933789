// Two-level barrier through the hosts' leaders. Three phases, each after
// the one before has ended on this rank (Composer::fence: a barrier's tokens
// carry no data to order them by):
//
//   1. inside each host, a gather of one element to the leader (a binomial
//      tree): the leader has heard from every rank of its host;
//   2. across hosts, the dissemination barrier among the leaders;
//   3. inside each host, a broadcast of one element from the leader: no
//      rank leaves before its leader has left phase 2, which no leader does
//      before every other has entered it, after its host's gather.
//
// So ceil(log2 H) rounds cross the host links, one message each way a
// leader and round, instead of ceil(log2 p) rounds from every rank. The
// tokens are scratch bytes; nothing of the user's is touched.
#include "coll/two_level/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_barrier(const CollArgs& a) {
    Composer c(a);
    const HostView v(a);
    const bool leader = v.local == 0;
    const size_t es = c.esize();
    const Place token = Place::at(Buf::Scratch, c.reserve(es));
    const Place heard =
        leader ? Place::at(Buf::Scratch, c.reserve(static_cast<size_t>(v.local_size()) * es)) : Place::none();

    CollArgs up = c.phase_args(Collective::Gather, v.local, v.local_size());
    up.count = 1;
    run_phase(c, 0, up, v.members(), token, heard);
    c.fence();

    if (leader) {
        CollArgs across = c.phase_args(Collective::Barrier, v.host, v.hosts);
        run_phase(c, 1, across, v.leaders(), Place::none(), Place::none());
        c.fence();
    }

    CollArgs down = c.phase_args(Collective::Broadcast, v.local, v.local_size());
    down.count = 1;
    down.in_place = true;
    run_phase(c, 2, down, v.members(), token, token);
    return c.finish();
}

}  // namespace chorus::coll
