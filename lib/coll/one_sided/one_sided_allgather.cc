// One-sided all-gather (every rank on one host): each rank exposes its Send
// to every peer and reads every peer's Send straight into its place in
// Recv (peers in the order rank + 1, rank + 2, ..., so that they are not
// all read at once by everyone); its own block is copied locally (nothing
// in place).
#include "coll/algorithm.h"
#include "coll/one_sided/one_sided_steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_one_sided_allgather(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    OsBuilder ob(s, a);
    const int p = a.size, r = a.rank;
    const size_t n = a.count;
    for (int i = 1; i < p; ++i) {
        const int q = mod(r + i, p);
        ob.expose(q, 1, q, Buf::Send, 0, n);
        ob.get(q, 1, Buf::Recv, static_cast<size_t>(q) * n, n);
    }
    s.copy(ob.at(Buf::Recv, static_cast<size_t>(r) * n), {Buf::Send, 0}, n * ob.esize());
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
