// Two-level all-to-allv through the hosts' leaders, for any layout, as
// two_level_leaders_alltoall.cc with blocks of any size; a two-stage
// algorithm (two_stage.h): stage 1 brings each leader its members' send and
// receive counts (2 size values each), as a rank knows only its own. The
// leader of a host is its lowest rank. With s(i, j) the elements rank i
// sends rank j (= what j receives from i):
//
//   0. (stage 1) inside each host, every rank's send and receive counts to
//      the leader;
//   1. on every rank, its send blocks packed in rank order (P; the send
//      buffer itself where they already are so and it is not in place);
//   2. inside each host, a gatherv of every rank's P to the leader, in
//      local order (G);
//   3. on the leader, the blocks in the order of their destination hosts:
//      for host g, for each local source i, for each rank j of g, s(i, j)
//      (S; a run of blocks adjacent in both one copy);
//   4. across hosts, an all-to-allv among the leaders: to host g's leader
//      its part of S, from it the blocks of g's ranks for this host's (R:
//      for host g, for each rank i of g, for each local rank j);
//   5. on the leader, the blocks in the order of their destinations and,
//      within one, of their sources (T);
//   6. inside each host, a scatterv of T from the leader, each rank's
//      blocks packed in source order (U; Recv itself where its receive
//      blocks are so);
//   7. on every rank, U's blocks to their displacements in Recv.
//
// Each phase runs the direct gatherv and scatterv and the pairwise
// all-to-allv (lib/coll/two_level/two_level.h: sizes agreed pair by pair only).
// Blocks are only copied. Cost: one more round of small messages inside
// each host (stage 1); then a host link carries each block between two
// hosts once, as the flat form does, in one message a pair of hosts instead
// of one a pair of ranks (H - 1 a leader instead of size - 1 a rank), for
// two more moves of the data inside each host, the leader's copies, and up
// to two copies on every rank: for small blocks among many ranks a host.
#include "base/error.h"
#include "coll/two_level/two_level.h"
#include "coll/planner/two_stage.h"

namespace chorus::coll {

namespace {

// A rank's blocks of one side packed in rank order, and whether they
// already lie so in its buffer.
struct Packed {
    explicit Packed(const CollArgs& a, Side side) : at(static_cast<size_t>(a.size)), n(static_cast<size_t>(a.size)) {
        for (int q = 0; q < a.size; ++q) {
            const Block b = a.block(side, q);
            n[q] = b.count;
            at[q] = b.offset;
            in_order = in_order && (!b.count || b.offset == total);
            total += b.count;
        }
    }
    std::vector<size_t> at, n;
    size_t total = 0;
    bool in_order = true;
};

// The copies between a side's blocks in the user's buffer `user` and the
// same blocks packed in rank order at `packed` in scratch, one way or back.
std::vector<Composer::Move> repack(const Packed& b, Buf user, size_t packed, size_t es, bool to_packed) {
    std::vector<Composer::Move> m;
    size_t at = 0;
    for (size_t q = 0; q < b.n.size(); ++q) {
        const Region mine{user, b.at[q] * es}, there{Buf::Scratch, packed + at * es};
        append_move(m, to_packed ? there : mine, to_packed ? mine : there, b.n[q] * es);
        at += b.n[q];
    }
    return m;
}

// A phase inside the host rooted at its leader (a gatherv or a scatterv):
// this rank's `count` elements, the leader's blocks `n` at `at`.
CollArgs leader_phase(const Composer& c, const HostView& v, Collective coll, size_t count, const std::vector<size_t>& n,
                      const std::vector<size_t>& at) {
    CollArgs x = c.phase_args(coll, v.local, v.local_size());
    x.count = count;
    x.root = 0;
    if (v.local == 0) {
        (coll == Collective::Gatherv ? x.counts : x.send_counts) = n;
        (coll == Collective::Gatherv ? x.displs : x.send_displs) = at;
    }
    return x;
}

}  // namespace

std::unique_ptr<Schedule> build_two_level_leaders_alltoallv(const CollArgs& given) {
    const CollArgs a = stage_two(given);
    Composer c(a);
    const HostView v(a);
    const bool leader = v.local == 0;
    const size_t es = c.esize(), p = static_cast<size_t>(a.size), lm = static_cast<size_t>(v.local_size());
    const Packed out(a, Side::Send), in(a, Side::Recv);
    const std::vector<int>& members = v.members();

    // Every member's counts, on the leader: s(i, q) and r(j, q) for local i, j.
    if (leader && a.host_sizes.size() != lm * 2 * p)
        fail(CHORUS_ERR_INTERNAL, "two-level alltoallv: no sizes on the leader");
    auto sent = [&](size_t i, int q) { return a.host_sizes[i * 2 * p + static_cast<size_t>(q)]; };
    auto got = [&](size_t j, int q) { return a.host_sizes[j * 2 * p + p + static_cast<size_t>(q)]; };

    // 1. P.
    Place pack = Place::at(Buf::Send, 0);
    if (!out.in_order || a.in_place) {
        pack = Place::at(Buf::Scratch, c.reserve(out.total * es));
        c.copies(repack(out, Buf::Send, pack.offset, es, true));
    }

    // 2. G: member i's P at g_at[i].
    std::vector<size_t> g_n(lm, 0), g_at(lm, 0), t_n(lm, 0), t_at(lm, 0);
    Place g = Place::none(), s = Place::none(), r = Place::none(), t = Place::none();
    size_t g_total = 0, t_total = 0;
    if (leader) {
        for (size_t i = 0; i < lm; ++i) {
            for (int q = 0; q < a.size; ++q) {
                g_n[i] += sent(i, q);
                t_n[i] += got(i, q);
            }
            g_at[i] = g_total;
            t_at[i] = t_total;
            g_total += g_n[i];
            t_total += t_n[i];
        }
        g = Place::at(Buf::Scratch, c.reserve(g_total * es));
        s = Place::at(Buf::Scratch, c.reserve(g_total * es));
        r = Place::at(Buf::Scratch, c.reserve(t_total * es));
        t = Place::at(Buf::Scratch, c.reserve(t_total * es));
    }
    run_phase(c, 0, leader_phase(c, v, Collective::Gatherv, out.total, g_n, g_at), members, pack, g);

    if (leader) {
        // 3-5. Member i's blocks in rank order from `from[i]`: where the
        // one for (or from) rank q starts.
        auto places = [&](const std::vector<size_t>& from, size_t first) {
            std::vector<size_t> out(lm * p);
            for (size_t i = 0; i < lm; ++i) {
                size_t at = from[i];
                for (size_t q = 0; q < p; ++q) {
                    out[i * p + q] = at;
                    at += a.host_sizes[i * 2 * p + first + q];
                }
            }
            return out;
        };
        const std::vector<size_t> in_g = places(g_at, 0), in_t = places(t_at, p);  // s(i, j) in G; s(q, j) in T
        CollArgs x = c.phase_args(Collective::Alltoallv, v.host, v.hosts);
        std::vector<Composer::Move> to_s, to_t;
        size_t s_at = 0, r_at = 0;
        for (int h = 0; h < v.hosts; ++h) {
            const std::vector<int>& there = v.map.members(h);
            x.send_displs.push_back(s_at);
            x.displs.push_back(r_at);
            for (size_t i = 0; i < lm; ++i)
                for (int j : there) {
                    const size_t n = sent(i, j);
                    append_move(to_s, {Buf::Scratch, s.offset + s_at * es},
                                {Buf::Scratch, g.offset + in_g[i * p + static_cast<size_t>(j)] * es}, n * es);
                    s_at += n;
                }
            for (int q : there)
                for (size_t j = 0; j < lm; ++j) {
                    const size_t n = got(j, q);
                    append_move(to_t, {Buf::Scratch, t.offset + in_t[j * p + static_cast<size_t>(q)] * es},
                                {Buf::Scratch, r.offset + r_at * es}, n * es);
                    r_at += n;
                }
            x.send_counts.push_back(s_at - x.send_displs.back());
            x.counts.push_back(r_at - x.displs.back());
        }
        c.copies(to_s);
        x.count = x.counts[v.host];
        run_phase(c, 1, x, v.leaders(), s, r);
        c.copies(to_t);
    }

    // 6-7. U, then Recv.
    const bool straight = in.in_order;
    const Place u = straight ? Place::at(Buf::Recv, 0) : Place::at(Buf::Scratch, c.reserve(in.total * es));
    run_phase(c, 2, leader_phase(c, v, Collective::Scatterv, in.total, t_n, t_at), members, t, u);
    if (!straight) c.copies(repack(in, Buf::Recv, u.offset, es, false));
    return c.finish();
}

}  // namespace chorus::coll
