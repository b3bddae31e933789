// Binomial-tree gather, for small messages and any rank count.
//
// Ranks are numbered relative to the root (rel = rank - root mod size) and
// form the binomial tree of binomial_bcast.cc, run upwards: rel gathers the
// blocks of its subtree, relative ranks rel .. rel + 2^l - 1 (2^l its lowest
// set bit, cut at the last rank), in scratch in relative order, its own
// first; once every child's part has arrived it sends them all to its
// parent in one message (a leaf sends straight from its send buffer). The
// root receives each child's part straight into its place in the receive
// buffer. A part that wraps past absolute rank size - 1 is two regions
// there, so every part travels as the (at most two) runs of absolute ranks
// it covers, cut alike by both ends.
//
// Steps: ceil(log2 size) levels. Bytes: the root receives its size - 1
// blocks in ceil(log2 size) messages instead of size - 1; a rank with a
// subtree of 2^l ranks forwards 2^l - 1 blocks it received, so
// (size/2) log2(size) blocks cross the network, against size - 1 for the
// direct gather.
#include "coll/algorithm.h"
#include "coll/tree/binomial_blocks.h"
#include "coll/steps.h"
#include "coll/tree/writes.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_binomial_gather(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    StepBuilder sb(s, a, 2);  // a subtree's message is at most two runs
    sb.whole_between_two();
    const TreeBlocks t(a);
    const Buf into = t.buffer(Buf::Recv);

    // The own block (a leaf's goes straight from its send buffer). An inner
    // rank's goes first, as its message upward carries it; the root's
    // (skipped in place) trails the receives from its first child: on one
    // host the root's read of the child's block then starts at once, and
    // the child is released sooner.
    Writes held;  // what this rank has gathered, by element
    if (t.subtree > 1 && t.rel != 0) {
        std::vector<StepId> own = sb.copy(into, t.place(t.rel), Buf::Send, 0, t.n);
        if (!own.empty()) held.add(0, t.n, own[0]);
    }
    std::vector<StepId> first_kid;  // the root's receives from its first child
    for (int kid : binomial_children(t.rel, t.p)) {
        uint32_t part = 0;
        for (RankRun run : t.runs(kid)) {
            const size_t at = t.place(run.first);
            std::vector<StepId> got = sb.recv(t.abs_rank(kid), part++, into, at, t.elems(run));
            if (t.rel == 0 && kid == t.rel + 1) append(first_kid, got);
            held.add_pieces(sb, at, t.elems(run), got);
        }
    }
    if (t.rel == 0) {
        sb.copy_behind(into, t.place(0), Buf::Send, 0, t.n, first_kid);
    } else {
        const int parent = t.abs_rank(binomial_parent(t.rel));
        uint32_t part = 0;
        for (RankRun run : t.runs(t.rel)) {
            if (t.subtree == 1)  // a leaf: nothing to gather first
                sb.send(parent, part++, Buf::Send, 0, t.n);
            else  // each piece once the blocks it carries are here
                held.send(s, sb, parent, part++, Buf::Scratch, t.place(run.first), t.elems(run));
        }
    }
    t.need_scratch(s, sb.esize());
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
