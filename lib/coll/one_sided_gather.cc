// One-sided gather (every rank on one host): the root exposes each peer's
// place in its Recv, and every other rank writes its own block there
// (put). The root's only copy is its own block, made while the others
// write theirs: the copying is spread over the ranks instead of falling on
// the root, which receives every message of a gather by messages (a
// receive through cross-memory attach is the receiver's copy).
#include "coll/algorithm.h"
#include "coll/one_sided_steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_one_sided_gather(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    OsBuilder ob(s, a);
    const int p = a.size, root = a.root;
    if (a.rank != root) {
        ob.put(root, 1, Buf::Send, 0, a.count);
        s.finalize();
        return sched;
    }
    for (int i = 1; i < p; ++i) {
        const int q = mod(root + i, p);
        const Block b = a.block(Side::Recv, q);
        ob.expose(q, 1, q, Buf::Recv, b.offset, b.count);
    }
    // In place, the root's block is already where it belongs (the executor
    // skips the copy).
    const Block own = a.block(Side::Recv, root);
    s.copy(ob.at(Buf::Recv, own.offset), {Buf::Send, 0}, own.count * ob.esize());
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
