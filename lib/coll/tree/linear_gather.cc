// Direct gather and scatter, of equal blocks (gather, scatter) or irregular
// ones (gatherv, scatterv: any counts, zeros included, at any displacements
// of the root's buffer). Gather: every rank sends its block straight to the
// root, which receives block i from rank i into its place. Scatter: the
// mirror image, the root sends block i straight to rank i.
//
// The root takes the ranks in turn from root + 1 and bounds its window: its
// transfer with the k-th of them waits for the (last piece of the) one with
// the (k - depth)-th, so at most `depth` messages converge on it (or leave
// it) at once instead of size - 1. Blocks travel in pieces of at most
// chunk_bytes (whole at two ranks); an empty block is no message. The
// root's own block is a local copy behind its first window (in place,
// already where it belongs: the executor skips it).
//
// Steps: one for the other ranks; (size - 1) / depth windows at the root.
// Bytes: every block crosses the network once (the minimum), so it suits
// large messages; for small ones binomial_gather.cc and binomial_scatter.cc
// need log2(size) messages at the root instead of size - 1.
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

namespace {

constexpr StepId kNone = ~StepId(0);

std::unique_ptr<Schedule> build_direct(const CollArgs& a, bool gather) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    StepBuilder sb(s, a, 1);  // one message per peer
    sb.whole_between_two();
    const int p = a.size, root = a.root, window = std::max(1, a.depth);
    if (a.rank != root) {
        if (gather)
            sb.send(root, 0, Buf::Send, 0, a.count);
        else
            sb.recv(root, 0, Buf::Recv, 0, a.count);
        s.finalize();
        return sched;
    }
    const Side side = gather ? Side::Recv : Side::Send;  // the root's side of one block per rank
    std::vector<StepId> last(p);  // by turn: the transfer's last piece (none: nothing to wait for)
    std::vector<StepId> first;    // the first window's transfers
    for (int k = 1; k < p; ++k) {
        const int peer = mod(root + k, p);
        const Block b = a.block(side, peer);
        Deps after = k > window && last[k - window] != kNone ? Deps{last[k - window]} : Deps();
        std::vector<StepId> moved = gather ? sb.recv(peer, 0, Buf::Recv, b.offset, b.count, after)
                                           : sb.send(peer, 0, Buf::Send, b.offset, b.count, after);
        last[k] = moved.empty() ? kNone : moved.back();
        if (k <= window) append(first, moved);
    }
    const Block own = a.block(side, root);
    if (gather)
        sb.copy_behind(Buf::Recv, own.offset, Buf::Send, 0, own.count, first);
    else
        sb.copy_behind(Buf::Recv, 0, Buf::Send, own.offset, own.count, first);
    s.finalize();
    return sched;
}

}  // namespace

std::unique_ptr<Schedule> build_linear_gather(const CollArgs& a) {
    return build_direct(a, true);
}
std::unique_ptr<Schedule> build_linear_scatter(const CollArgs& a) {
    return build_direct(a, false);
}

}  // namespace chorus::coll
