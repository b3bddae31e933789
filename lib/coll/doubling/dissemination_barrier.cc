// Dissemination barrier (Hensgen, Finkel and Manber), for any rank count.
//
// In round k = 0 .. ceil(log2 size) - 1 a rank sends a token to rank + 2^k
// and receives one from rank - 2^k; its round-k token leaves only after the
// round-(k-1) one has arrived. A token carries everything its sender had
// heard, so after the last round every rank has heard, directly or through
// others, from all of them: none leaves before every rank has entered.
//
// Steps: ceil(log2 size) rounds of one message each way. Bytes: one per
// message (a schedule has no empty transfers), from and into scratch.
#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_dissemination_barrier(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    std::vector<StepId> heard;                                             // the tokens of the rounds before
    const TagSpace tags(ceil_log2(static_cast<uint64_t>(p)), a.tag_bits);  // one step index a round
    size_t round = 0;
    for (int d = 1; d < p; d *= 2, ++round) {
        s.send(mod(r + d, p), tags.tag(round, 0), {Buf::Scratch, 0}, 1, heard);
        heard.push_back(s.recv(mod(r - d, p), tags.tag(round, 0), {Buf::Scratch, 1 + round}, 1));
    }
    s.need_scratch(1 + round);
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
