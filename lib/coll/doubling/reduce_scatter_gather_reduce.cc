// Reduce as a reduce-scatter followed by a gather (for large messages).
//
// The message is cut into `size` blocks, split(count, size, i). A recursive-
// halving reduce-scatter (lib/coll/doubling/reduce_scatter_impl.h: fold of the first
// 2*rem ranks onto pp = pow2_floor(size) ranks, then log2(pp) halving rounds)
// leaves each of the pp remaining ranks with the reduction of its run of
// blocks (two blocks for the odd ranks of the fold), divided once there for
// AVG. Each owner then sends its run straight to its place in the root's
// Recv, piece by piece as the pieces are finished; the root copies its own.
//
// In place, the root's Recv is its Send: everything it receives waits for the
// steps that read that part of Send. Non-root Recv is never touched.
//
// Cost: log2(pp) + 1 steps (+1 when size is not a power of two). Each
// remaining rank sends and receives (pp-1)/pp of the message in the
// reduce-scatter and sends about 1/pp of it to the root, which receives
// (pp-1)/pp of it in the gather: about 2M per rank against log2(size) * M
// into the root of a binomial tree.
#include "coll/algorithm.h"
#include "coll/doubling/reduce_scatter_impl.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_reduce_scatter_gather_reduce(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    const size_t count = a.count;
    if (count == 0) {
        s.finalize();
        return sched;
    }
    const Fold f(p);
    StepBuilder b(s, a, f.rounds + 2);  // fold, halving, gather
    const size_t es = b.esize();
    std::vector<size_t> sb(f.pp + 1);
    for (int nr = 0; nr < f.pp; ++nr) sb[nr] = split(count, p, f.first_of(nr)).begin;
    sb[f.pp] = count;

    HalvingResult h = halving_reduce_scatter(s, a, b, sb, 0, true);
    const uint32_t tag = h.next_tag;
    if (r != a.root) {
        if (h.newrank >= 0) {
            for_pieces(b, sb[h.newrank], sb[h.newrank + 1], [&](size_t i, size_t e, size_t n) {
                s.send(a.root, b.tag_of(tag, i), h.at(b, e), n * es, h.last.overlapping(e, e + n));
            });
        }
        s.finalize();
        return sched;
    }
    for (int nr = 0; nr < f.pp; ++nr) {
        if (nr != h.newrank) {
            for_pieces(b, sb[nr], sb[nr + 1], [&](size_t i, size_t e, size_t n) {
                s.recv(f.rank_of(nr), b.tag_of(tag, i), b.at(Buf::Recv, e), n * es, h.send_reads.overlapping(e, e + n));
            });
        } else if (h.buf == Buf::Send) {
            // One rank: nothing was reduced; the input is the result.
            s.copy(b.at(Buf::Recv, 0), b.at(Buf::Send, 0), count * es);
        } else {
            h.last.for_each([&](size_t e0, size_t e1, StepId st) {
                std::vector<StepId> deps = h.send_reads.overlapping(e0, e1);
                deps.push_back(st);
                s.copy(b.at(Buf::Recv, e0), h.at(b, e0), (e1 - e0) * es, deps);
            });
        }
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
