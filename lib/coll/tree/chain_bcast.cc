// Pipelined chain broadcast.
//
// The ranks form a line in relative order: root -> rel 1 -> rel 2 -> ... ->
// rel size-1. The message is cut into pieces of at most chunk_bytes (whole
// at two ranks: nothing forwards it); each rank passes piece k on to the
// next rank as soon as it has arrived, while piece k+1 is arriving, so every
// link of the chain is busy at once once the pipeline has filled.
//
// Steps: (size - 1) + (pieces - 1): the first piece needs size - 1 hops, and
// then one piece leaves the chain per step. Bytes: each rank except the last
// sends the message exactly once and each non-root receives it once, so
// (size - 1) times the message crosses the network and no link carries more
// than one copy.
#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_chain_bcast(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    StepBuilder sb(s, a, 1);  // one step: piece i is tag (0, i) on every link
    sb.whole_between_two();
    const int p = a.size;
    const int rel = mod(a.rank - a.root, p);

    const bool has_prev = rel > 0, has_next = rel < p - 1;
    const int prev = ring_prev(a.rank, p), next = ring_next(a.rank, p);
    const Buf src = rel == 0 ? Buf::Send : Buf::Recv;

    std::vector<StepId> sent;
    for (size_t i = 0, n = sb.pieces(a.count); i < n && p > 1; ++i) {
        Range r = sb.piece(a.count, i);
        if (!r.size()) continue;
        const size_t bytes = r.size() * sb.esize();
        std::vector<StepId> after;
        if (has_prev) after.push_back(s.recv(prev, sb.tag_of(0, i), sb.at(Buf::Recv, r.begin), bytes));
        if (has_next) sent.push_back(s.send(next, sb.tag_of(0, i), sb.at(src, r.begin), bytes, after));
    }
    // The root's own output, piece by piece behind its sends; in place the
    // executor skips it.
    if (rel == 0) sb.copy_behind(Buf::Recv, 0, Buf::Send, 0, a.count, sent);
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
