// Binomial-tree scatter, for small messages and any rank count: the
// gather's tree (binomial_gather.cc) run downwards.
//
// The root sends each child the blocks of the child's whole subtree, largest
// subtree first, straight from its send buffer; a rank receives its
// subtree's blocks into scratch in relative order (a leaf straight into its
// receive buffer), passes each child's part on once it has arrived, and
// copies its own block out. As in the gather, a part travels as the (at most
// two) runs of absolute ranks it covers, cut alike by both ends.
//
// Steps: ceil(log2 size) levels. Bytes: the root sends its size - 1 blocks
// in ceil(log2 size) messages instead of size - 1; (size/2) log2(size)
// blocks cross the network, against size - 1 for the direct scatter.
#include "coll/algorithm.h"
#include "coll/tree/binomial_blocks.h"
#include "coll/steps.h"
#include "coll/tree/writes.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_binomial_scatter(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    StepBuilder sb(s, a, 2);  // a subtree's message is at most two runs
    sb.whole_between_two();
    const TreeBlocks t(a);
    const Buf from = t.buffer(Buf::Send);

    Writes held;  // the receives of this rank's subtree, by element
    if (t.rel != 0) {
        const int parent = t.abs_rank(binomial_parent(t.rel));
        uint32_t part = 0;
        for (RankRun run : t.runs(t.rel)) {
            if (t.subtree == 1)  // a leaf: its own block only
                sb.recv(parent, part++, Buf::Recv, 0, t.n);
            else
                held.add_pieces(sb, t.place(run.first), t.elems(run),
                                sb.recv(parent, part++, Buf::Scratch, t.place(run.first), t.elems(run)));
        }
    }
    std::vector<int> kids = binomial_children(t.rel, t.p);  // smallest subtree first
    for (auto kid = kids.rbegin(); kid != kids.rend(); ++kid) {
        uint32_t part = 0;
        for (RankRun run : t.runs(*kid))  // each piece once it is here
            held.send(s, sb, t.abs_rank(*kid), part++, from, t.place(run.first), t.elems(run));
    }
    // The own block (the root's is skipped in place).
    if (t.subtree > 1 || t.rel == 0) sb.copy(Buf::Recv, 0, from, t.place(t.rel), t.n, held.overlapping(0, t.n));
    t.need_scratch(s, sb.esize());
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
