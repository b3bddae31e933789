// Pieces shared by the reduction algorithms: the rank pairing that makes any
// rank count look like a power of two, and a recursive-halving reduce-scatter
// over contiguous super-blocks built on it (and on RangeSteps, steps.h).
#pragma once

#include <algorithm>
#include <vector>

#include "coll/steps.h"

namespace chorus::coll {

// Folding `size` ranks onto pp = pow2_floor(size): of the first 2*rem ranks,
// each even rank hands its data to the odd rank above it and sits out; the
// others are renumbered 0..pp-1 in rank order. New rank nr stands for the
// original ranks first_of(nr) .. rank_of(nr).
struct Fold {
    int pp, rem, rounds;
    explicit Fold(int size) : pp(pow2_floor(size)), rem(size - pow2_floor(size)), rounds(0) {
        while ((1 << rounds) < pp) ++rounds;
    }
    int newrank(int r) const { return r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem; }
    int rank_of(int nr) const { return nr < rem ? 2 * nr + 1 : nr + rem; }
    int first_of(int nr) const { return nr < rem ? 2 * nr : nr + rem; }
};

struct HalvingResult {
    int newrank = -1;
    // Element e of this rank's super-block lies at element e of `buf` (the
    // send buffer when size is 1, else the scratch accumulator).
    Buf buf = Buf::Send;
    RangeSteps last;        // the steps that finished this rank's super-block
    RangeSteps send_reads;  // every step that reads the send buffer
    uint32_t next_tag = 0;  // the first algorithm step number left unused
};

// Recursive-halving reduce-scatter of the send buffer (sb.back() elements)
// where new rank nr ends with the reduction of elements [sb[nr], sb[nr+1]).
// Step numbers tag .. tag+rounds (b's tag space must hold them); scratch
// elements [0, 2*total): an accumulator, then a receive area, both laid out
// like the message. With `finish_avg`, AVG is divided once here, by the
// super-block's owner.
inline HalvingResult halving_reduce_scatter(Schedule& s, const CollArgs& a, const StepBuilder& b,
                                            const std::vector<size_t>& sb, uint32_t tag, bool finish_avg) {
    const Fold f(a.size);
    const int r = a.rank;
    const size_t total = sb.back(), es = b.esize();
    HalvingResult out;
    out.newrank = f.newrank(r);
    out.next_tag = tag + 1 + f.rounds;
    if (a.size == 1) return out;
    auto acc = [&](size_t e) { return b.at(Buf::Scratch, e); };
    auto tmp = [&](size_t e) { return b.at(Buf::Scratch, total + e); };
    Buf mine = Buf::Send;
    RangeSteps prev;  // the latest writers of the accumulator (and readers of the receive area)

    if (r < 2 * f.rem) {
        if (r % 2 == 0) {
            for_pieces(b, 0, total, [&](size_t i, size_t e, size_t n) {
                out.send_reads.add(e, e + n, s.send(r + 1, b.tag_of(tag, i), b.at(Buf::Send, e), n * es));
            });
            return out;
        }
        for_pieces(b, 0, total, [&](size_t i, size_t e, size_t n) {
            StepId rv = s.recv(r - 1, b.tag_of(tag, i), tmp(e), n * es);
            StepId red = s.reduce(acc(e), tmp(e), b.at(Buf::Send, e), n, {rv});
            prev.add(e, e + n, red);
            out.send_reads.add(e, e + n, red);
        });
        mine = Buf::Scratch;
    }
    s.need_scratch(2 * total * es);

    const int nr = out.newrank;
    int lo = 0, hi = f.pp;
    uint32_t step = tag + 1;
    for (int mask = f.pp / 2; mask >= 1; mask /= 2, ++step) {
        const int pnr = nr ^ mask, peer = f.rank_of(pnr), mid = lo + mask;
        const bool low = nr < mid;
        const size_t keep_b = low ? sb[lo] : sb[mid], keep_e = low ? sb[mid] : sb[hi];
        const size_t give_b = low ? sb[mid] : sb[lo], give_e = low ? sb[hi] : sb[mid];
        (low ? hi : lo) = mid;
        for_pieces(b, give_b, give_e, [&](size_t i, size_t e, size_t n) {
            StepId id = s.send(peer, b.tag_of(step, i), b.at(mine, e), n * es, prev.overlapping(e, e + n));
            if (mine == Buf::Send) out.send_reads.add(e, e + n, id);
        });
        RangeSteps cur;
        for_pieces(b, keep_b, keep_e, [&](size_t i, size_t e, size_t n) {
            // The receive area and the accumulator here were last used by
            // the previous round's reductions of this range.
            StepId rv = s.recv(peer, b.tag_of(step, i), tmp(e), n * es, prev.overlapping(e, e + n));
            StepId red = pnr < nr ? s.reduce(acc(e), tmp(e), b.at(mine, e), n, {rv})
                                  : s.reduce(acc(e), b.at(mine, e), tmp(e), n, {rv});
            cur.add(e, e + n, red);
            if (mine == Buf::Send) out.send_reads.add(e, e + n, red);
        });
        prev = std::move(cur);
        mine = Buf::Scratch;
    }
    if (finish_avg && a.op == CHORUS_AVG) {
        RangeSteps divided;
        prev.for_each(
            [&](size_t e0, size_t e1, StepId st) { divided.add(e0, e1, s.divide(acc(e0), e1 - e0, a.size, {st})); });
        prev = std::move(divided);
    }
    out.buf = Buf::Scratch;
    out.last = std::move(prev);
    return out;
}

}  // namespace chorus::coll
