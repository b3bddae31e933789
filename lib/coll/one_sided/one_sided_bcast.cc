// One-sided broadcast (every rank on one host): the copying is shared.
// Each non-root needs the whole message; the root writes the first 1/p of
// it into every non-root's Recv (put) while each non-root reads the rest
// from the root's Send (get), so every rank copies (p - 1) / p of the
// message, all at once, and no byte is copied twice.
#include "coll/algorithm.h"
#include "coll/one_sided/one_sided_steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_one_sided_bcast(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    OsBuilder ob(s, a);
    const int p = a.size, r = a.rank, root = a.root;
    const Range pushed = split(a.count, p, 0);  // the root's share
    const size_t rest = a.count - pushed.size();
    if (r == root) {
        for (int i = 1; i < p; ++i) {
            const int q = mod(root + i, p);
            if (pushed.size()) ob.put(q, 2, Buf::Send, 0, pushed.size());
            if (rest) ob.expose(q, 1, q, Buf::Send, pushed.size(), rest);
        }
        // Out of place, the root's own result (the executor skips it in place).
        s.copy({Buf::Recv, 0}, {Buf::Send, 0}, a.count * ob.esize());
    } else {
        if (pushed.size()) ob.expose(root, 2, root, Buf::Recv, 0, pushed.size());
        if (rest) ob.get(root, 1, Buf::Recv, pushed.size(), rest);
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
