// Two-level all-to-all through the hosts' leaders, for any layout. The
// leader of a host is its lowest rank. Every rank's send buffer goes to its
// leader; the leaders exchange, host to host, the blocks between their
// hosts' ranks; each leader hands its ranks what came for them:
//
//   1. inside each host, a gather of every rank's whole send buffer (size
//      blocks) to the leader, local rank i's at i x size blocks (G);
//   2. on the leader, the blocks in the order of their destination hosts:
//      for host g, for each local source i, for each rank j of g, the block
//      from i to j (S; a run of blocks adjacent in both one copy);
//   3. across hosts, an all-to-allv among the leaders: to host g's leader
//      its part of S, from it the blocks of g's ranks for this host's (R:
//      for host g, for each rank i of g, for each local rank j);
//   4. on the leader, the blocks in the order of their destinations and,
//      within one, of their sources (T, in G's place once G is read);
//   5. inside each host, a scatter of T from the leader, each rank's size
//      blocks into its Recv (in place, once its send buffer has left).
//
// Each phase runs the algorithm lib/coll/two_level/two_level.h picks for its size
// (binomial or direct gather and scatter; pairwise all-to-allv). Blocks are
// only copied.
//
// Cost: a host link carries each block between two hosts once, as the flat
// forms do, but in one message a pair of hosts instead of one a pair of
// ranks (H - 1 a leader instead of size - 1 a rank), for two more moves of
// the data inside each host and its leader's copies: for small blocks among
// many ranks a host.
#include "coll/two_level/two_level.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_two_level_leaders_alltoall(const CollArgs& a) {
    Composer c(a);
    if (a.count == 0) return c.finish();
    const HostView v(a);
    const bool leader = v.local == 0;
    const size_t es = c.esize(), p = static_cast<size_t>(a.size), block = a.count * es;
    const size_t lm = static_cast<size_t>(v.local_size()), host_bytes = lm * p * block;

    // G (later T), S and R on the leader.
    Place g = Place::none(), s = Place::none(), r = Place::none();
    if (leader) {
        g = Place::at(Buf::Scratch, c.reserve(host_bytes));
        s = Place::at(Buf::Scratch, c.reserve(host_bytes));
        r = Place::at(Buf::Scratch, c.reserve(host_bytes));
    }

    CollArgs ga = c.phase_args(Collective::Gather, v.local, v.local_size());
    ga.count = p * a.count;
    ga.root = 0;
    run_phase(c, 0, ga, v.members(), Place::at(Buf::Send, 0), g);

    if (leader) {
        CollArgs x = c.phase_args(Collective::Alltoallv, v.host, v.hosts);
        std::vector<Composer::Move> pack, unpack;
        size_t at = 0;
        for (int h = 0; h < v.hosts; ++h) {
            const std::vector<int>& there = v.map.members(h);
            const size_t n = lm * there.size() * a.count;
            x.send_counts.push_back(n);
            x.send_displs.push_back(at);
            x.counts.push_back(n);
            x.displs.push_back(at);
            // S: from each local source i to each rank j of host h.
            for (size_t i = 0; i < lm; ++i)
                for (size_t j = 0; j < there.size(); ++j)
                    append_move(pack, {Buf::Scratch, s.offset + at * es + (i * there.size() + j) * block},
                                {Buf::Scratch, g.offset + (i * p + static_cast<size_t>(there[j])) * block}, block);
            at += n;
        }
        // T from R, in T's order: for each local rank j, the block from
        // each rank q (the i-th of its host) to j.
        for (size_t j = 0; j < lm; ++j)
            for (int q = 0; q < a.size; ++q) {
                const int h = v.map.host_of(q);
                const size_t i = static_cast<size_t>(v.map.local_index(q));
                append_move(unpack, {Buf::Scratch, g.offset + (j * p + static_cast<size_t>(q)) * block},
                            {Buf::Scratch, r.offset + x.displs[h] * es + (i * lm + j) * block}, block);
            }
        c.copies(pack);
        x.count = x.counts[v.host];
        run_phase(c, 1, x, v.leaders(), s, r);
        c.copies(unpack);
    }

    CollArgs sc = c.phase_args(Collective::Scatter, v.local, v.local_size());
    sc.count = p * a.count;
    sc.root = 0;
    run_phase(c, 2, sc, v.members(), g, Place::at(Buf::Recv, 0));
    return c.finish();
}

}  // namespace chorus::coll
