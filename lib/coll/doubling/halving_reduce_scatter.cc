// Recursive-halving reduce-scatter, exact on any rank count.
//
// With pp = pow2_floor(size) and rem = size - pp:
//
//   fold: of the first 2*rem ranks, each even rank sends its whole input to
//     the odd rank above it, which reduces it into its own (lower rank
//     first) and from then on stands for both; the even rank sits out.
//   halving, log2(pp) rounds: the pp remaining ranks are renumbered in rank
//     order; new rank nr owns the contiguous run of blocks of the original
//     rank(s) it stands for. In each round a rank swaps half of its current
//     range of new ranks with the partner nr ^ mask (mask = pp/2, ..., 1):
//     it sends the partner's half and receives and reduces its own, piece by
//     piece, so piece i is reduced while piece i+1 arrives.
//   post: each odd rank of the fold sends the even rank its block.
//
// Partial results live in scratch: an accumulator for the half of the input
// a rank keeps after the first round (the whole input on the odd ranks of
// the fold), and a ring of `depth` slots the pieces arrive in. The block
// reaches the receive buffer last, after every read of the send buffer,
// because in place it aliases the start of Send.
//
// Cost: log2(pp) rounds, plus 2 when size is not a power of two. With blocks
// of equal size and M the total input, each remaining rank sends and receives
// (pp-1)/pp of M in the halving; the fold moves M from each even rank and the
// post step one block back. Every block is reduced once, by its owner, which
// also applies AVG's division once.
#include "coll/algorithm.h"
#include "coll/doubling/reduce_scatter_impl.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_halving_reduce_scatter(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    const size_t total = a.total_count();
    if (total == 0) {
        s.finalize();
        return sched;
    }
    const Fold f(p);
    StepBuilder b(s, a, f.rounds + 2);  // fold, halving, post
    const size_t es = b.esize();
    std::vector<size_t> off(p + 1);
    for (int i = 0; i < p; ++i) off[i + 1] = off[i] + a.block_count(i);  // a running sum: O(p)
    std::vector<size_t> sb(f.pp + 1);
    for (int nr = 0; nr < f.pp; ++nr) sb[nr] = off[f.first_of(nr)];
    sb[f.pp] = total;

    HalvingResult h = halving_reduce_scatter(s, a, b, sb, 0, true);
    const uint32_t post = h.next_tag;
    const size_t mine = off[r + 1] - off[r];
    if (h.newrank < 0) {
        // In place the block lands over the start of Send: after its readers.
        for_pieces(b, 0, mine, [&](size_t i, size_t e, size_t n) {
            s.recv(r + 1, b.tag_of(post, i), b.at(Buf::Recv, e), n * es, h.send_reads.overlapping(e, e + n));
        });
        s.finalize();
        return sched;
    }
    if (r < 2 * f.rem) {
        for_pieces(b, off[r - 1], off[r], [&](size_t i, size_t e, size_t n) {
            s.send(r - 1, b.tag_of(post, i), h.at(b, e), n * es, h.last.overlapping(e, e + n));
        });
    }
    if (mine) {
        std::vector<StepId> deps = h.last.overlapping(off[r], off[r + 1]);
        append(deps, h.send_reads.overlapping(0, mine));
        s.copy(b.at(Buf::Recv, 0), h.at(b, off[r]), mine * es, deps);
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
