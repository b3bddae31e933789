// Bruck all-gather, for small messages and any rank count.
//
// Before round k a rank holds the blocks rank .. rank + d - 1 (mod size),
// d = 2^k (at first only its own, copied into place). In round k it sends
// the first n = min(d, size - d) of them to rank - d and receives blocks
// rank + d .. rank + d + n - 1 from rank + d, which holds exactly those as
// its first n. After the round it holds min(2d, size) consecutive blocks.
// Every block is received straight into its final place (block b at
// b * count), so there is no closing rotation. A range of blocks that wraps
// past the last rank is two regions and travels as two messages.
//
// Steps: ceil(log2 size) rounds. Bytes: every rank sends and receives
// (size - 1) * count elements in all (the minimum), in at most
// 2 ceil(log2 size) messages, which is what makes it fast for small blocks.
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_bruck_allgather(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    StepBuilder sb(s, a);
    const int p = a.size, r = a.rank;
    const size_t n = a.count;

    // Everything written into the receive buffer so far: later sends read it.
    std::vector<StepId> written = sb.copy(Buf::Recv, static_cast<size_t>(r) * n, Buf::Send, 0, n);

    // Blocks first .. first + nb - 1 (mod p) as at most two contiguous runs.
    struct Run {
        int first, blocks;
    };
    auto runs = [&](int first, int nb) {
        int head = std::min(nb, p - first);
        std::vector<Run> out{{first, head}};
        if (nb > head) out.push_back({0, nb - head});
        return out;
    };

    int round = 0;
    for (int d = 1; d < p; d *= 2, ++round) {
        const int nb = std::min(d, p - d);
        const int to = mod(r - d, p), from = mod(r + d, p);
        const auto out = runs(r, nb), in = runs(from, nb);
        for (size_t part = 0; part < out.size(); ++part) {
            const uint32_t step = static_cast<uint32_t>(2 * round + part);
            const size_t elems = static_cast<size_t>(out[part].blocks) * n;
            if (d == 1)  // only this rank's block, still in the send buffer
                sb.send(to, step, Buf::Send, 0, elems);
            else
                sb.send(to, step, Buf::Recv, static_cast<size_t>(out[part].first) * n, elems, written);
        }
        std::vector<StepId> got;
        for (size_t part = 0; part < in.size(); ++part) {
            const uint32_t step = static_cast<uint32_t>(2 * round + part);
            append(got, sb.recv(from, step, Buf::Recv, static_cast<size_t>(in[part].first) * n,
                                static_cast<size_t>(in[part].blocks) * n));
        }
        append(written, got);
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
