// Two-level gather and scatter through one representative a host: the root
// on its own host, the leader (lowest rank) on each other. A host's
// super-block is its ranks' blocks in local order; the root stages them
// host by host (in Recv or Send itself where the ranks of each host are
// consecutive, hosts in order; else in scratch).
//
// Gather:
//   1. inside each host, a gather of the blocks to its representative, into
//      its host's super-block (the root's: in the staging area);
//   2. across hosts, a gatherv of the super-blocks among the
//      representatives to the root, into the staging area;
//   3. on the root, every block from the staging area to its place in Recv
//      (its own stays where it is in place).
//
// Scatter, the mirror image:
//   1. on the root, every block from Send to the staging area;
//   2. across hosts, a scatterv of the super-blocks from the root to the
//      representatives;
//   3. inside each host, a scatter of the super-block from its
//      representative.
//
// Each phase runs the algorithm lib/coll/two_level/two_level.h picks for its size
// (binomial or direct gather and scatter; the direct gatherv and scatterv).
// Blocks are only copied. Cost: each host's super-block crosses its host
// link once, in one message a host instead of one a rank (direct) or a
// tree's worth of other hosts' blocks (binomial).
#include "coll/two_level/two_level.h"

namespace chorus::coll {

namespace {

std::unique_ptr<Schedule> build(const CollArgs& a, bool gather) {
    Composer c(a);
    if (a.count == 0) return c.finish();
    const HostView v(a);
    const bool root = a.rank == a.root;
    const int rep = v.rep(v.host, a.root);
    const size_t es = c.esize(), n = a.count;
    const std::vector<size_t> counts(static_cast<size_t>(a.size), n);
    const Staging given(rank_order(a.size), counts), staged(host_order(v.map), counts);
    const bool direct = staged.identity();
    const Buf user = gather ? Buf::Recv : Buf::Send;  // the root's buffer of every block
    auto super = [&](int h) { return staged.at(v.map.members(h)[0]); };
    const size_t mine_n = static_cast<size_t>(v.local_size()) * n;
    // The staging area (on the root), and this representative's super-block.
    Place stage = Place::none(), mine = Place::none();
    if (root) {
        stage = direct ? Place::at(user, 0) : Place::at(Buf::Scratch, c.reserve(staged.total * es));
        mine = Place::at(stage.buf, stage.offset + super(v.host) * es);
    } else if (a.rank == rep) {
        mine = Place::at(Buf::Scratch, c.reserve(mine_n * es));
    }

    CollArgs inside = c.phase_args(gather ? Collective::Gather : Collective::Scatter, v.local, v.local_size());
    inside.count = n;
    inside.root = v.map.local_index(rep);
    CollArgs across = c.phase_args(gather ? Collective::Gatherv : Collective::Scatterv, v.host, v.hosts);
    across.count = mine_n;
    across.root = v.map.host_of(a.root);
    across.in_place = root;
    if (root)
        for (int h = 0; h < v.hosts; ++h) {
            (gather ? across.counts : across.send_counts).push_back(v.map.members(h).size() * n);
            (gather ? across.displs : across.send_displs).push_back(super(h));
        }

    if (gather) {
        inside.in_place = root && direct && a.in_place;
        run_phase(c, 0, inside, v.members(), Place::at(Buf::Send, 0), mine);
        if (a.rank == rep) run_phase(c, 1, across, v.reps(a.root), mine, root ? stage : Place::none());
        if (root && !direct)
            c.copies(moves(staged, {Buf::Scratch, stage.offset}, given, {Buf::Recv, 0}, es, a.in_place ? a.rank : -1));
    } else {
        if (root && !direct)
            c.copies(moves(given, {Buf::Send, 0}, staged, {Buf::Scratch, stage.offset}, es, a.in_place ? a.rank : -1));
        if (a.rank == rep) run_phase(c, 0, across, v.reps(a.root), root ? stage : Place::none(), mine);
        // In place, the root's own block stays in Send: staged elsewhere, it
        // is not copied back (its Recv placed nowhere).
        inside.in_place = root && direct && a.in_place;
        const Place recv = root && a.in_place && !direct ? Place::none() : Place::at(Buf::Recv, 0);
        run_phase(c, 1, inside, v.members(), mine, recv);
    }
    return c.finish();
}

}  // namespace

std::unique_ptr<Schedule> build_two_level_gather(const CollArgs& a) {
    return build(a, true);
}
std::unique_ptr<Schedule> build_two_level_scatter(const CollArgs& a) {
    return build(a, false);
}

}  // namespace chorus::coll
