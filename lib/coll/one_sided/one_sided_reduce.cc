// One-sided reduce (every rank on one host): a reduce-scatter by reading,
// then every owner writes its finished block into the root's Recv (put).
// Rank r owns block r: it reads block r of every peer's Send, reducing as
// it reads (rank r, then r + 1, ...), into the root's Recv if it is the
// root, into scratch otherwise; the root exposes Recv block q to owner q,
// which puts its block there. Every rank does a 1/p share of the work.
//
// In place at the root (Recv is its Send), owner q overwrites Send block q
// of the root only after it has read it (its put follows its reduction).
#include "coll/algorithm.h"
#include "coll/one_sided/one_sided_steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_one_sided_reduce(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    OsBuilder ob(s, a);
    const int p = a.size, r = a.rank, root = a.root;
    auto block = [&](int b) { return split(a.count, p, b); };
    const Range mine = block(r);
    for (int q = 0; q < p; ++q)
        if (q != r) ob.expose(q, 0, q, Buf::Send, block(q).begin, block(q).size());
    if (r == root) {
        s.need_scratch(mine.size() * ob.esize());
        ob.reduce_block(0, mine.begin, mine.size(), Buf::Recv, mine.begin, 0);
        for (int q = 0; q < p; ++q)
            if (q != r) ob.expose(q, 3, q, Buf::Recv, block(q).begin, block(q).size());
    } else if (mine.size()) {
        // Scratch: the landing area, then the block.
        s.need_scratch(2 * mine.size() * ob.esize());
        std::vector<StepId> done = ob.reduce_block(0, mine.begin, mine.size(), Buf::Scratch, mine.size(), 0);
        ob.put(root, 3, Buf::Scratch, mine.size(), mine.size(), done);
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
