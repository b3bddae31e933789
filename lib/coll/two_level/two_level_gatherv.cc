// Two-level gatherv and scatterv through one representative a host (the
// root on its own host, the leader on each other), as two_level_gather.cc
// with blocks of any size; a two-stage algorithm (two_stage.h): stage 1
// brings each representative its members' counts, which only the root
// knows otherwise. A host's super-block is its ranks' blocks in local
// order; the root stages them host by host (in Recv or Send itself where
// every block's displacement is its place in that order, else in scratch).
//
// Gatherv:
//   0. (stage 1) inside each host, every rank's count to its representative;
//   1. inside each host, a gatherv of the blocks to its representative, into
//      its host's super-block (the root's: in the staging area);
//   2. across hosts, a gatherv of the super-blocks among the
//      representatives to the root, into the staging area;
//   3. on the root, every block from the staging area to its displacement
//      in Recv (its own stays where it is in place).
//
// Scatterv, the mirror image:
//   0. (stage 1) as for gatherv;
//   1. on the root, every block from its displacement in Send to the
//      staging area;
//   2. across hosts, a scatterv of the super-blocks from the root to the
//      representatives;
//   3. inside each host, a scatterv of the super-block from its
//      representative.
//
// Each phase runs the direct gatherv or scatterv (lib/coll/two_level/two_level.h:
// sizes agreed pair by pair only). Blocks are only copied. Cost: one more
// round of small messages inside each host (stage 1); then each host's
// super-block crosses its host link once, in one message a host instead of
// one a rank, for one more move of the data inside each host.
#include "base/error.h"
#include "coll/two_level/two_level.h"
#include "coll/planner/two_stage.h"

namespace chorus::coll {

namespace {

std::unique_ptr<Schedule> build(const CollArgs& given, bool gather) {
    const CollArgs a = stage_two(given);
    Composer c(a);
    const HostView v(a);
    const bool root = a.rank == a.root;
    const int rep = v.rep(v.host, a.root);
    const size_t es = c.esize(), lm = static_cast<size_t>(v.local_size());
    const Side side = gather ? Side::Recv : Side::Send;  // the root's side of every block

    // The counts this rank knows: the root every rank's, a representative
    // its members' (stage 1), the others their own.
    std::vector<size_t> counts(static_cast<size_t>(a.size), 0), at(static_cast<size_t>(a.size), 0);
    if (root) {
        for (int q = 0; q < a.size; ++q) {
            const Block b = a.block(side, q);
            counts[q] = b.count;
            at[q] = b.offset;
        }
    } else if (a.rank == rep) {
        if (a.host_sizes.size() != lm) fail(CHORUS_ERR_INTERNAL, "two-level ", collective_name(a.coll), ": no sizes");
        for (size_t i = 0; i < lm; ++i) counts[v.members()[i]] = a.host_sizes[i];
    } else {
        counts[a.rank] = a.count;
    }
    const Staging given_at(rank_order(a.size), counts, at), staged(host_order(v.map), counts);
    bool direct = true;
    for (int q = 0; q < a.size && root; ++q) direct = direct && (!counts[q] || at[q] == staged.at(q));
    const Buf user = gather ? Buf::Recv : Buf::Send;
    auto super = [&](int h) { return staged.at(v.map.members(h)[0]); };
    auto super_count = [&](int h) {
        size_t n = 0;
        for (int q : v.map.members(h)) n += counts[q];
        return n;
    };
    const size_t mine_n = a.rank == rep ? super_count(v.host) : 0;
    // The staging area (on the root); this representative's super-block;
    // where its phase inside the host puts or finds the blocks (the root:
    // the staging area, each block at its place in it).
    Place stage = Place::none(), mine = Place::none(), blocks = Place::none();
    if (root) {
        stage = direct ? Place::at(user, 0) : Place::at(Buf::Scratch, c.reserve(staged.total * es));
        mine = Place::at(stage.buf, stage.offset + super(v.host) * es);
        blocks = stage;
    } else if (a.rank == rep) {
        mine = blocks = Place::at(Buf::Scratch, c.reserve(mine_n * es));
    }
    std::vector<size_t> local_counts, local_displs;
    if (a.rank == rep)
        for (int q : v.members()) {
            local_counts.push_back(counts[q]);
            local_displs.push_back(root ? staged.at(q) : staged.at(q) - super(v.host));
        }

    CollArgs inside = c.phase_args(gather ? Collective::Gatherv : Collective::Scatterv, v.local, v.local_size());
    inside.count = counts[a.rank];
    inside.root = v.map.local_index(rep);
    if (a.rank == rep) {
        (gather ? inside.counts : inside.send_counts) = local_counts;
        (gather ? inside.displs : inside.send_displs) = local_displs;
    }
    CollArgs across = c.phase_args(gather ? Collective::Gatherv : Collective::Scatterv, v.host, v.hosts);
    across.count = mine_n;
    across.root = v.map.host_of(a.root);
    across.in_place = root && mine_n > 0;
    if (root)
        for (int h = 0; h < v.hosts; ++h) {
            (gather ? across.counts : across.send_counts).push_back(super_count(h));
            (gather ? across.displs : across.send_displs).push_back(super(h));
        }
    // In place, the root's own block is where Send (gatherv) or Recv
    // (scatterv) already is; staged elsewhere, it is not copied.
    const bool own_in_place = root && a.in_place && counts[a.rank] > 0;
    if (gather) {
        inside.in_place = own_in_place && direct;
        run_phase(c, 0, inside, v.members(), Place::at(Buf::Send, 0), blocks);
        if (a.rank == rep) run_phase(c, 1, across, v.reps(a.root), mine, root ? stage : Place::none());
        if (root && !direct)
            c.copies(
                moves(staged, {Buf::Scratch, stage.offset}, given_at, {Buf::Recv, 0}, es, own_in_place ? a.rank : -1));
    } else {
        if (root && !direct)
            c.copies(
                moves(given_at, {Buf::Send, 0}, staged, {Buf::Scratch, stage.offset}, es, own_in_place ? a.rank : -1));
        if (a.rank == rep) run_phase(c, 0, across, v.reps(a.root), root ? stage : Place::none(), mine);
        inside.in_place = own_in_place && direct;
        const Place recv = own_in_place && !direct ? Place::none() : Place::at(Buf::Recv, 0);
        run_phase(c, 1, inside, v.members(), blocks, recv);
    }
    return c.finish();
}

}  // namespace

std::unique_ptr<Schedule> build_two_level_gatherv(const CollArgs& a) {
    return build(a, true);
}
std::unique_ptr<Schedule> build_two_level_scatterv(const CollArgs& a) {
    return build(a, false);
}

}  // namespace chorus::coll
