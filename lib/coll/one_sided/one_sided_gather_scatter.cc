// One-sided gather and scatter (every rank on one host). The root exposes
// each peer's block of its buffer (gather: the place in Recv; scatter: the
// block of Send), and every other rank moves its own block itself (gather:
// writes it there, put; scatter: reads it from there, get) while the root
// copies its own block: the copying is spread over the ranks, every peer's
// at once, instead of the root making every copy (a gather's receives
// through cross-memory attach are the receiver's copies) or its messages
// going out a subtree at a time.
#include "coll/algorithm.h"
#include "coll/one_sided/one_sided_steps.h"

namespace chorus::coll {

namespace {

std::unique_ptr<Schedule> build_rooted(const CollArgs& a, bool gather) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    OsBuilder ob(s, a);
    const int p = a.size, root = a.root;
    if (a.rank != root) {
        if (gather)
            ob.put(root, 1, Buf::Send, 0, a.count);
        else
            ob.get(root, 1, Buf::Recv, 0, a.count);
        s.finalize();
        return sched;
    }
    const Side side = gather ? Side::Recv : Side::Send;  // the root's side of one block per rank
    const Buf whole = gather ? Buf::Recv : Buf::Send;
    for (int i = 1; i < p; ++i) {
        const int q = mod(root + i, p);
        const Block b = a.block(side, q);
        ob.expose(q, 1, q, whole, b.offset, b.count);
    }
    // In place, the root's block is already where it belongs (the executor
    // skips the copy).
    const Block own = a.block(side, root);
    const Region own_place = ob.at(whole, own.offset);
    if (gather)
        s.copy(own_place, {Buf::Send, 0}, own.count * ob.esize());
    else
        s.copy({Buf::Recv, 0}, own_place, own.count * ob.esize());
    s.finalize();
    return sched;
}

}  // namespace

std::unique_ptr<Schedule> build_one_sided_gather(const CollArgs& a) {
    return build_rooted(a, true);
}
std::unique_ptr<Schedule> build_one_sided_scatter(const CollArgs& a) {
    return build_rooted(a, false);
}

}  // namespace chorus::coll
