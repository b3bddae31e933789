// All-gather as one binomial broadcast per block, run together: for very
// uneven blocks (a few ranks hold most of the data, many hold none).
//
// Broadcast b, rooted at rank b, carries block b. Ranks are numbered
// relative to each root (rel = rank - b mod size) and form the binomial tree
// of binomial_bcast.cc: rel receives from rel minus its lowest set bit 2^l
// and sends to rel + 2^k for every 2^k below it. The edge rel -> rel + 2^k
// belongs to round K - 1 - k of K = ceil(log2 size), so that in each round
// every rank that holds a block forwards it one level down. Every rank
// lists its steps in the same order, (round, block, piece), so the earliest
// unfinished transfer of the whole group is always one both of its ends have
// posted, whatever the windows. Blocks travel in pieces that are forwarded as
// they arrive (whole at two ranks); an empty block is no message at all.
//
// Steps: ceil(log2 size) rounds, against size - 1 for the ring: a block a few
// ranks hold reaches everyone after log2(size) hops, not size - 1. Bytes:
// every rank receives every other block once (the minimum); a block's root
// sends it ceil(log2 size) times, so one large block is better off on the
// ring's pipelined chain.
#include <utility>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_bcast_allgatherv(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    StepBuilder sb(s, a, p);  // one step index per block
    sb.whole_between_two();   // one exchange: nothing forwards a piece
    int rounds = 0;
    while ((1 << rounds) < p) ++rounds;

    // The blocks that hold elements: an empty one is no message, so the
    // rounds pass over these alone (a few of many blocks, typically).
    std::vector<int> scratch;
    std::vector<std::pair<int, Block>> held;
    for (int b : a.held_blocks(scratch)) held.emplace_back(b, a.block(Side::Recv, b));
    std::vector<std::vector<StepId>> arrived(held.size());  // pieces of block held[i] received here
    std::vector<StepId> own_sends;
    for (int round = 0; round < rounds; ++round) {
        const int m = 1 << (rounds - 1 - round);  // this round's edges: rel -> rel + m
        for (size_t i = 0; i < held.size(); ++i) {
            const auto& [b, blk] = held[i];
            const int rel = mod(r - b, p);
            const uint32_t step = static_cast<uint32_t>(b);
            if (rel != 0 && (rel & -rel) == m) {
                arrived[i] = sb.recv(mod(r - m, p), step, Buf::Recv, blk.offset, blk.count);
            } else if (rel % (2 * m) == 0 && rel + m < p) {
                const int child = mod(r + m, p);
                if (rel == 0)
                    append(own_sends, sb.send(child, step, Buf::Send, 0, blk.count));
                else
                    sb.send_each_after(child, step, Buf::Recv, blk.offset, blk.count, arrived[i]);
            }
        }
    }
    // This rank's block into its place, behind its own broadcast's sends.
    const Block own = a.block(Side::Recv, r);
    sb.copy_behind(Buf::Recv, own.offset, Buf::Send, 0, own.count, own_sends);
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
