// Rabenseifner all-reduce: recursive-halving reduce-scatter, then
// recursive-doubling all-gather (for large messages).
//
// With pp = pow2_floor(size) and rem = size - pp:
//
//   fold: of the first 2*rem ranks, each even rank sends its input to the
//     odd rank above it, which reduces the two and stands for both;
//   reduce-scatter, log2(pp) rounds (lib/coll/doubling/reduce_scatter_impl.h),
//     accumulating in Recv itself: new rank nr ends with block nr of
//     split(count, pp, nr) fully reduced there, and divides it once by size
//     for AVG (scratch: only the ring of slots pieces arrive in);
//   all-gather, log2(pp) rounds, mask = 1, 2, ..., pp/2: swap the run of
//     blocks gathered so far with new rank nr ^ mask, Recv to Recv;
//   unfold: each odd rank of the fold sends the whole result to the even one.
//
// Every element is reduced and divided once, by its block's owner, then only
// copied: the result is bit-identical on every rank. In place, a receive
// into Recv waits for the steps that read that part of Send; sends and
// receives are tracked per piece, so the all-gather of a block starts as soon
// as its pieces are final.
//
// Cost: 2 log2(pp) rounds (+2 when size is not a power of two); each of the
// pp ranks sends and receives 2 (pp-1)/pp of the message and reduces
// (pp-1)/pp of it; the fold and unfold move the whole message once each.
#include "coll/algorithm.h"
#include "coll/doubling/reduce_scatter_impl.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_rabenseifner_allreduce(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    const size_t count = a.count;
    if (count == 0) {
        s.finalize();
        return sched;
    }
    const Fold f(p);
    StepBuilder b(s, a, 2 * f.rounds + 2);  // fold, halving, doubling, unfold
    const size_t es = b.esize();
    if (p == 1) {
        s.copy(b.at(Buf::Recv, 0), b.at(Buf::Send, 0), count * es);
        s.finalize();
        return sched;
    }
    std::vector<size_t> sb(f.pp + 1);
    for (int nr = 0; nr < f.pp; ++nr) sb[nr] = split(count, f.pp, nr).begin;
    sb[f.pp] = count;

    // The reduce-scatter accumulates in Recv itself: no scratch but its
    // receive slots.
    HalvingResult h = halving_reduce_scatter(s, a, b, sb, 0, true, Buf::Recv);
    const int nr = h.newrank;
    const uint32_t unfold_tag = h.next_tag + f.rounds;
    if (nr < 0) {
        for_pieces(b, 0, count, [&](size_t i, size_t e, size_t n) {
            s.recv(r + 1, b.tag_of(unfold_tag, i), b.at(Buf::Recv, e), n * es, h.send_reads.overlapping(e, e + n));
        });
        s.finalize();
        return sched;
    }

    RangeSteps wrote = h.last;  // the steps that wrote each part of Recv
    int lo = nr;                // the gathered run is new ranks [lo, lo + mask)
    uint32_t step = h.next_tag;
    for (int mask = 1; mask < f.pp; mask <<= 1, ++step) {
        const int peer = f.rank_of(nr ^ mask), plo = lo ^ mask;
        for_pieces(b, sb[lo], sb[lo + mask], [&](size_t i, size_t e, size_t n) {
            s.send(peer, b.tag_of(step, i), b.at(Buf::Recv, e), n * es, wrote.overlapping(e, e + n));
        });
        for_pieces(b, sb[plo], sb[plo + mask], [&](size_t i, size_t e, size_t n) {
            wrote.add(e, e + n,
                      s.recv(peer, b.tag_of(step, i), b.at(Buf::Recv, e), n * es, h.send_reads.overlapping(e, e + n)));
        });
        lo = std::min(lo, plo);
    }
    if (r < 2 * f.rem) {
        for_pieces(b, 0, count, [&](size_t i, size_t e, size_t n) {
            s.send(r - 1, b.tag_of(unfold_tag, i), b.at(Buf::Recv, e), n * es, wrote.overlapping(e, e + n));
        });
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
