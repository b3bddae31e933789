// Pipelined ring all-gather, of equal blocks (allgather) or irregular ones
// (allgatherv: any counts, zeros included, at any displacements).
//
// Every rank copies its own block into place (block b of the receive buffer;
// skipped in place), then the blocks circulate around the ring
// rank -> rank + 1. At step s = 0 .. size-2 a rank sends block (rank - s) to
// the next rank and receives block (rank - s - 1) from the previous one,
// straight into its final place. Blocks travel in pieces of at most
// chunk_bytes, and a rank forwards each piece of a block as soon as that
// piece has arrived, so successive steps overlap (at two ranks, one
// exchange, a block travels whole: StepBuilder::whole_between_two). An
// empty block is no message at all: both ends know its count.
//
// Steps: size - 1 (plus pieces - 1 to drain the pipeline). Bytes: every rank
// sends and receives every block but its own, the minimum for an all-gather;
// each link of the ring carries (size - 1) blocks. With one large block the
// ring is a pipelined chain for it.
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_ring_allgather(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    StepBuilder sb(s, a, p - 1);
    sb.whole_between_two();
    auto block = [&](int b) { return a.block(Side::Recv, b); };

    // The steps that move a block: all of them with every block held, else
    // those that send or receive one of the held blocks (an empty block is
    // no message and makes no step; all-gatherv's blocks are often mostly
    // empty, and then a rank's schedule costs O(held), not O(size)).
    std::vector<int> scratch, steps;
    const std::vector<int>& held = a.held_blocks(scratch);
    if (held.size() == static_cast<size_t>(p)) {
        steps.resize(static_cast<size_t>(p > 1 ? p - 1 : 0));
        for (int st = 0; st < p - 1; ++st) steps[static_cast<size_t>(st)] = st;
    } else {
        for (int b : held)
            for (int st : {mod(r - b, p), mod(r - b - 1, p)})
                if (st < p - 1) steps.push_back(st);
        std::sort(steps.begin(), steps.end());
        steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    }

    const int next = ring_next(r, p), prev = ring_prev(r, p);
    std::vector<StepId> arrived;  // pieces of the block received last step
    std::vector<StepId> first;    // the sends of this rank's own block
    int last = -1;
    for (int st : steps) {
        // A block sent at step st arrived at step st - 1, which moved it.
        if (st != last + 1) arrived.clear();
        last = st;
        const Block out = block(mod(r - st, p)), in = block(mod(r - st - 1, p));
        if (out.count && st == 0) first = sb.send(next, st, Buf::Send, 0, out.count);
        if (out.count && st > 0) sb.send_each_after(next, st, Buf::Recv, out.offset, out.count, arrived);
        arrived.clear();
        if (in.count) arrived = sb.recv(prev, st, Buf::Recv, in.offset, in.count);
    }
    // This rank's block into its place, behind the sends of it; nothing reads
    // or writes it again, as the ring sends it from the send buffer.
    const Block own = block(r);
    sb.copy_behind(Buf::Recv, own.offset, Buf::Send, 0, own.count, first);
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
