// One-sided reduce-scatter (every rank on one host): each rank reads its
// block of every peer's Send and reduces it as it reads (rank r, then
// r + 1, ...), touching each remote byte once; it exposes block q of its
// own Send to each owner q meanwhile.
//
// In place, Recv is the start of Send, which peers are reading: a piece of
// the result is written only once the peers have read the part of Send it
// covers (the dependencies are there whether or not this rank is in place;
// they only order steps of this rank). Owner r waits only for owners of
// blocks before its own, so no rank waits in a cycle.
#include "coll/algorithm.h"
#include "coll/one_sided/one_sided_steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_one_sided_reduce_scatter(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    OsBuilder ob(s, a);
    const int p = a.size, r = a.rank;
    const size_t n = a.block_count(r), begin = a.block_offset(r);
    // Each piece of the result: the exposes of the pieces of Send it covers.
    const size_t pieces = ob.pieces(n);
    std::vector<std::vector<StepId>> covered(pieces);
    for (int q = 0; q < p; ++q) {
        if (q == r || a.block_count(q) == 0) continue;
        std::vector<StepId> e = ob.expose(q, 0, q, Buf::Send, a.block_offset(q), a.block_count(q));
        for (size_t j = 0, i = 0; j < ob.pieces(a.block_count(q)); ++j) {
            Range x = ob.piece(a.block_count(q), j);
            if (!x.size()) continue;
            const StepId step = e[i++];
            const size_t lo = a.block_offset(q) + x.begin, hi = a.block_offset(q) + x.end;
            for (size_t k = 0; k < pieces; ++k) {
                Range y = ob.piece(n, k);
                if (y.size() && y.begin < hi && lo < y.end) covered[k].push_back(step);
            }
        }
    }
    if (n == 0) {
        s.finalize();
        return sched;
    }
    // Where data lands if it cannot be read in place.
    s.need_scratch(n * ob.esize());
    std::vector<std::vector<StepId>> after;
    for (size_t k = 0; k < pieces; ++k)
        if (ob.piece(n, k).size()) after.push_back(covered[k]);
    // In place with this block starting before its own end, a piece of the
    // result overwrites the input of later pieces: they run one after the
    // other (each reads before it writes, in ascending order).
    ob.reduce_block(0, begin, n, Buf::Recv, 0, 0, {}, after, begin < n);
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
