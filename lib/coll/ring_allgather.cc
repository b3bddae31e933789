// Pipelined ring all-gather.
//
// Every rank copies its own block into place (block r at r * count of the
// receive buffer; skipped in place), then the blocks circulate around the
// ring rank -> rank + 1. At step s = 0 .. size-2 a rank sends block
// (rank - s) to the next rank and receives block (rank - s - 1) from the
// previous one, straight into its final place. Blocks travel in pieces of at
// most chunk_bytes, and a rank forwards each piece of a block as soon as that
// piece has arrived, so successive steps overlap.
//
// Steps: size - 1 (plus pieces - 1 to drain the pipeline). Bytes: every rank
// sends and receives (size - 1) * count elements, the minimum for an
// all-gather; each link of the ring carries (size - 1) blocks.
#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_ring_allgather(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    const int p = a.size, r = a.rank;
    StepBuilder sb(s, a, p - 1);
    const size_t n = a.count;
    auto block = [&](int b) { return static_cast<size_t>(b) * n; };

    const int next = ring_next(r, p), prev = ring_prev(r, p);
    std::vector<StepId> arrived;  // pieces of the block received last step
    std::vector<StepId> first;    // the sends of this rank's own block
    for (int st = 0; st < p - 1; ++st) {
        const int out = mod(r - st, p), in = mod(r - st - 1, p);
        if (st == 0)
            first = sb.send(next, st, Buf::Send, 0, n);
        else
            sb.send_each_after(next, st, Buf::Recv, block(out), n, arrived);
        arrived = sb.recv(prev, st, Buf::Recv, block(in), n);
    }
    // This rank's block into its place, behind the sends of it; nothing reads
    // or writes it again, as the ring sends it from the send buffer.
    sb.copy_behind(Buf::Recv, block(r), Buf::Send, 0, n, first);
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
