// One-sided reduce-scatter (every rank on one host): each rank reads its
// block of every peer's Send and reduces it as it reads (rank r, then
// r + 1, ...), touching each remote byte once; it exposes block q of its
// own Send to each owner q meanwhile.
//
// In place (Recv is the start of Send, which peers are reading), the block
// is reduced into scratch and copied into Recv once every peer has read
// this rank's Send.
#include "coll/algorithm.h"
#include "coll/one_sided_steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_one_sided_reduce_scatter(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    OsBuilder ob(s, a);
    const int p = a.size, r = a.rank;
    std::vector<StepId> all;
    for (int q = 0; q < p; ++q) {
        if (q == r || a.block_count(q) == 0) continue;
        std::vector<StepId> e = ob.expose(q, 0, q, Buf::Send, a.block_offset(q), a.block_count(q));
        all.insert(all.end(), e.begin(), e.end());
    }
    const size_t n = a.block_count(r), begin = a.block_offset(r);
    if (n == 0) {
        s.finalize();
        return sched;
    }
    // Scratch: the landing area, then (in place) the block being reduced.
    s.need_scratch((a.in_place ? 2 : 1) * n * ob.esize());
    if (!a.in_place) {
        ob.reduce_block(0, begin, n, Buf::Recv, 0, 0);
    } else {
        std::vector<StepId> done = ob.reduce_block(0, begin, n, Buf::Scratch, n, 0);
        all.insert(all.end(), done.begin(), done.end());
        s.copy({Buf::Recv, 0}, {Buf::Scratch, n * ob.esize()}, n * ob.esize(), all);
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
