// Two-level all-gather by rails, for hosts of L ranks each (H hosts). Rail
// j is the ranks of local index j, one a host; super-block j is rail j's
// blocks in host order. The blocks gather in a staging area laid out
// super-block by super-block (Recv itself where the layout already is that
// order: rank j*H + h on host h; else scratch):
//
//   1. across hosts, an all-gather among rail j: each rank gathers
//      super-block j;
//   2. inside each host, an all-gather of the super-blocks, in place in the
//      staging area;
//   3. every block from the staging area to its place in Recv (this rank's
//      own stays where it is in place).
//
// Each phase runs the algorithm lib/coll/two_level/two_level.h picks for its size
// (Bruck or ring). Blocks are only copied.
//
// Cost: phase 1 moves (H-1)/H of a super-block per rank between hosts, each
// rank on its own rail: (H-1)/H of the result crosses a host's link, the
// least an all-gather can; phase 2 moves (L-1)/L of the result over the
// host's own links; phase 3 copies it once (where the layout needs it).
#include "coll/two_level/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_rails_allgather(const CollArgs& a) {
    Composer c(a);
    if (a.count == 0) return c.finish();
    const HostView v(a);
    const int L = v.local_size(), H = v.hosts, j = v.local;
    const size_t es = c.esize(), n = a.count, super = static_cast<size_t>(H) * n;
    const std::vector<size_t> counts(static_cast<size_t>(a.size), n);
    const Staging given(rank_order(a.size), counts), staged(v.by_rail(), counts);
    const bool direct = staged.identity();
    const Place stage = direct ? Place::at(Buf::Recv, 0) : Place::at(Buf::Scratch, c.reserve(staged.total * es));
    const Place mine = Place::at(stage.buf, stage.offset + static_cast<size_t>(j) * super * es);

    CollArgs across = c.phase_args(Collective::Allgather, v.host, H);
    across.count = n;
    across.in_place = direct && a.in_place;
    run_phase(c, 0, across, v.rail(j), Place::at(Buf::Send, 0), mine);

    CollArgs inside = c.phase_args(Collective::Allgather, j, L);
    inside.count = super;
    inside.in_place = true;
    run_phase(c, 1, inside, v.members(), mine, stage);

    if (!direct)
        c.copies(moves(staged, {Buf::Scratch, stage.offset}, given, {Buf::Recv, 0}, es, a.in_place ? a.rank : -1));
    return c.finish();
}

}  // namespace chorus::coll
