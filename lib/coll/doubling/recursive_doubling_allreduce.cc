// Recursive-doubling all-reduce (for small messages).
//
// With pp = pow2_floor(size) and rem = size - pp:
//
//   fold: of the first 2*rem ranks, each even rank sends its input to the
//     odd rank above it, which reduces the two (lower rank first) and stands
//     for both from then on;
//   log2(pp) rounds among the pp remaining ranks (renumbered in rank order):
//     exchange the whole vector with new rank nr ^ 2^k and reduce, the lower
//     new rank's vector first, so both partners compute the same bits;
//   unfold: each odd rank of the fold sends the result to the even rank.
//
// The vector accumulates in Recv; the partner's copy arrives in scratch. All
// transfers cut the whole vector into the same pieces, so piece i of a round
// waits only for piece i of the round before, and a reduction overwrites Recv
// only after the send reading that piece (Send itself, in place) completed.
// Every rank then holds the same sum; for AVG each divides its copy once by
// size (same bits in, same bits out), before the unfold.
//
// Cost: log2(pp) rounds (+2 when size is not a power of two), each sending
// and receiving the whole message M: M log2(pp) per rank, and M log2(pp)
// reduced; latency-bound messages are what it is for.
#include "coll/algorithm.h"
#include "coll/doubling/reduce_scatter_impl.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_recursive_doubling_allreduce(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    const size_t count = a.count;
    if (count == 0) {
        s.finalize();
        return sched;
    }
    const Fold f(p);
    StepBuilder b(s, a, f.rounds + 2);  // fold, rounds, unfold
    const size_t es = b.esize();
    if (p == 1) {
        s.copy(b.at(Buf::Recv, 0), b.at(Buf::Send, 0), count * es);
        s.finalize();
        return sched;
    }
    const int nr = f.newrank(r);
    const uint32_t unfold_tag = 1 + f.rounds;
    s.need_scratch(count * es);
    const size_t npieces = b.pieces(count);
    // Per piece: the step that last wrote Recv (and read the scratch piece).
    std::vector<StepId> last(npieces);
    bool have_last = false;
    auto deps_of = [&](size_t i) { return have_last ? std::vector<StepId>{last[i]} : std::vector<StepId>{}; };
    Buf src = Buf::Send;

    if (r < 2 * f.rem) {
        if (r % 2 == 0) {
            std::vector<StepId> sent(npieces);
            for_pieces(b, 0, count, [&](size_t i, size_t e, size_t n) {
                sent[i] = s.send(r + 1, b.tag_of(0, i), b.at(Buf::Send, e), n * es);
            });
            for_pieces(b, 0, count, [&](size_t i, size_t e, size_t n) {
                s.recv(r + 1, b.tag_of(unfold_tag, i), b.at(Buf::Recv, e), n * es, {sent[i]});
            });
            s.finalize();
            return sched;
        }
        for_pieces(b, 0, count, [&](size_t i, size_t e, size_t n) {
            StepId rv = s.recv(r - 1, b.tag_of(0, i), b.at(Buf::Scratch, e), n * es);
            last[i] = s.reduce(b.at(Buf::Recv, e), b.at(Buf::Scratch, e), b.at(Buf::Send, e), n, {rv});
        });
        have_last = true;
        src = Buf::Recv;
    }

    uint32_t step = 1;
    for (int mask = 1; mask < f.pp; mask <<= 1, ++step) {
        const int pnr = nr ^ mask, peer = f.rank_of(pnr);
        for_pieces(b, 0, count, [&](size_t i, size_t e, size_t n) {
            std::vector<StepId> before = deps_of(i);
            StepId sd = s.send(peer, b.tag_of(step, i), b.at(src, e), n * es, before);
            StepId rv = s.recv(peer, b.tag_of(step, i), b.at(Buf::Scratch, e), n * es, before);
            Region dst = b.at(Buf::Recv, e), mine = b.at(src, e), theirs = b.at(Buf::Scratch, e);
            last[i] = pnr < nr ? s.reduce(dst, theirs, mine, n, {rv, sd}) : s.reduce(dst, mine, theirs, n, {rv, sd});
        });
        have_last = true;
        src = Buf::Recv;
    }
    if (a.op == CHORUS_AVG) {
        for_pieces(b, 0, count,
                   [&](size_t i, size_t e, size_t n) { last[i] = s.divide(b.at(Buf::Recv, e), n, p, {last[i]}); });
    }
    if (r < 2 * f.rem) {
        for_pieces(b, 0, count, [&](size_t i, size_t e, size_t n) {
            s.send(r - 1, b.tag_of(unfold_tag, i), b.at(Buf::Recv, e), n * es, {last[i]});
        });
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
