// Pairwise-exchange all-to-all, of equal blocks (alltoall) or irregular ones
// (alltoallv: any counts, zeros included, at any displacements).
//
// At step k = 1 .. size-1 a rank sends its block for rank + k and receives
// the block of rank - k, so at every step each rank sends to one rank and
// receives from another: no rank is a hot spot, as when everyone sends to
// rank 0 first. The window is bounded: the transfers of step k wait for
// the last pieces of step k - w, so at most about w steps are in flight: w =
// depth for small blocks, whose latency it hides, and w = 1 once a block
// fills a pipeline chunk (its own pieces keep the link busy, and more peers
// at once would only make receivers contend). The window is this rank's
// own affair (what it posts when), so alltoallv's ranks may differ in it. Blocks
// travel in pieces of at most chunk_bytes (whole at two ranks:
// StepBuilder::whole_between_two); an empty block is no message.
// The own block is a local copy, behind the first step's sends.
//
// In place the blocks to send are the receive buffer's own blocks: each
// arrival lands in scratch and is copied into its place once the block that
// lived there has left.
//
// Steps: size - 1, depth at a time. Bytes: every block crosses the network
// once (the minimum), in size - 1 messages each way per rank.
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_pairwise_alltoall(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    StepBuilder sb(s, a, p);  // steps 1 .. size-1
    sb.whole_between_two();
    size_t largest = 0;
    for (int i = 0; i < p; ++i)
        largest = std::max({largest, a.block(Side::Send, i).count, a.block(Side::Recv, i).count});
    const int window = largest * sb.esize() >= a.chunk_bytes ? 1 : std::max(1, a.depth);

    std::vector<std::vector<StepId>> step(p);          // the last send and receive piece of step k
    std::vector<std::vector<StepId>> sent(p), got(p);  // by the peer's rank
    std::vector<size_t> slot(p, 0);                    // in place: where block i waits in scratch
    size_t scratch = 0;
    for (int k = 1; k < p; ++k) {
        const int to = mod(r + k, p), from = mod(r - k, p);
        const Block out = a.block(Side::Send, to), in = a.block(Side::Recv, from);
        Deps after = k > window ? Deps(step[k - window]) : Deps();
        sent[to] = sb.send(to, k, Buf::Send, out.offset, out.count, after);
        if (a.in_place) {
            slot[from] = scratch;
            scratch += in.count;
            got[from] = sb.recv(from, k, Buf::Scratch, slot[from], in.count, after);
        } else {
            got[from] = sb.recv(from, k, Buf::Recv, in.offset, in.count, after);
        }
        if (!sent[to].empty()) step[k].push_back(sent[to].back());
        if (!got[from].empty()) step[k].push_back(got[from].back());
    }
    // In place, an arrival goes to its place after the block there has left.
    for (int i = 0; a.in_place && i < p; ++i) {
        if (i == r) continue;
        std::vector<StepId> deps = got[i];
        append(deps, sent[i]);
        sb.copy(Buf::Recv, a.block(Side::Recv, i).offset, Buf::Scratch, slot[i], a.block(Side::Recv, i).count, deps);
    }
    s.need_scratch(scratch * sb.esize());
    // The own block (in place, already where it belongs: the executor skips it).
    const Block own = a.block(Side::Recv, r);
    sb.copy_behind(Buf::Recv, own.offset, Buf::Send, a.block(Side::Send, r).offset, own.count,
                   p > 1 ? sent[mod(r + 1, p)] : std::vector<StepId>{});
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
