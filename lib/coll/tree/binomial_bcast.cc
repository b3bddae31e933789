// Pipelined (segmented) binomial-tree broadcast.
//
// Ranks are numbered relative to the root (rel = rank - root mod size) and
// form a binomial tree: the parent of rel clears its lowest set bit, and the
// child rel + 2^k roots a subtree of up to 2^k ranks. The message is cut into
// pieces of at most chunk_bytes (at two ranks, one edge, it goes whole:
// StepBuilder::whole_between_two). Every piece travels down the tree on its
// own: a rank forwards piece k to its children as soon as piece k has
// arrived, while piece k+1 is still on its way from the parent. Children are
// served largest subtree first, so the deepest branch starts earliest.
//
// Steps: ceil(log2 size) tree levels, plus (pieces - 1) for the pipeline to
// drain. Bytes: every non-root receives the message once, so (size - 1) times
// the message crosses the network; a rank with c children sends it c times
// (the root ceil(log2 size) times).
#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_binomial_bcast(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    StepBuilder sb(s, a, 1);  // one step: piece i is tag (0, i) on every edge of the tree
    sb.whole_between_two();
    const int p = a.size;
    const int rel = mod(a.rank - a.root, p);
    auto abs_rank = [&](int r) { return mod(r + a.root, p); };

    if (p == 1) {
        // The root's own output; in place the executor skips it.
        sb.copy(Buf::Recv, 0, Buf::Send, 0, a.count);
        s.finalize();
        return sched;
    }

    std::vector<int> kids = binomial_children(rel, p);
    // binomial_children lists the smallest subtree first.
    std::vector<int> order(kids.rbegin(), kids.rend());
    const int parent = binomial_parent(rel);
    // The root forwards straight from its send buffer; the others forward
    // what they received.
    const Buf src = rel == 0 ? Buf::Send : Buf::Recv;

    std::vector<StepId> sent;  // the root's last send of each piece
    for (size_t i = 0, n = sb.pieces(a.count); i < n; ++i) {
        Range r = sb.piece(a.count, i);
        if (!r.size()) continue;
        const size_t bytes = r.size() * sb.esize();
        std::vector<StepId> after;
        if (parent >= 0) after.push_back(s.recv(abs_rank(parent), sb.tag_of(0, i), sb.at(Buf::Recv, r.begin), bytes));
        for (int kid : order) {
            StepId sd = s.send(abs_rank(kid), sb.tag_of(0, i), sb.at(src, r.begin), bytes, after);
            if (rel == 0 && kid == order.back()) sent.push_back(sd);
        }
    }
    // The root's own output, piece by piece behind its sends; in place the
    // executor skips it.
    if (rel == 0) sb.copy_behind(Buf::Recv, 0, Buf::Send, 0, a.count, sent);
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
