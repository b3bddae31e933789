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
    const int p = a.size, r = a.rank;
    StepBuilder sb(s, a, 2 * ceil_log2(p));  // two messages (runs) per round
    sb.whole_between_two();
    const size_t n = a.count;

    const size_t es = sb.esize();

    // What wrote each part of the receive buffer so far: a piece sent later
    // waits for the steps that wrote the elements it reads. A round also
    // waits for the previous round's messages to have arrived (their last
    // pieces), so that the rounds keep their order on the wire.
    RangeSteps written;
    std::vector<StepId> last_round;
    const size_t own = static_cast<size_t>(r) * n;
    for (StepId c : sb.copy(Buf::Recv, own, Buf::Send, 0, n)) written.add(own, own + n, c);

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
            const size_t first = static_cast<size_t>(out[part].first) * n;
            const size_t elems = static_cast<size_t>(out[part].blocks) * n;
            if (d == 1) {  // only this rank's block, still in the send buffer
                sb.send(to, step, Buf::Send, 0, elems);
                continue;
            }
            for_pieces(sb, first, first + elems, [&](size_t i, size_t e, size_t k) {
                std::vector<StepId> deps = written.overlapping(e, e + k);
                append(deps, last_round);
                s.send(to, sb.tag_of(step, i), sb.at(Buf::Recv, e), k * es, deps);
            });
        }
        // Received this round: read by the sends of later rounds only.
        RangeSteps got;
        last_round.clear();
        for (size_t part = 0; part < in.size(); ++part) {
            const uint32_t step = static_cast<uint32_t>(2 * round + part);
            const size_t first = static_cast<size_t>(in[part].first) * n;
            const size_t elems = static_cast<size_t>(in[part].blocks) * n;
            StepId rv = 0;
            for_pieces(sb, first, first + elems, [&](size_t i, size_t e, size_t k) {
                rv = s.recv(from, sb.tag_of(step, i), sb.at(Buf::Recv, e), k * es);
                got.add(e, e + k, rv);
            });
            last_round.push_back(rv);
        }
        got.for_each([&](size_t e0, size_t e1, StepId st) { written.add(e0, e1, st); });
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
