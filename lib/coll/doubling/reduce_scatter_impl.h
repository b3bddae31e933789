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
    // Element e of this rank's super-block lies at element e - buf_lo of
    // `buf`: the send buffer when size is 1, else the accumulator.
    Buf buf = Buf::Send;
    size_t buf_lo = 0;
    RangeSteps last;  // the steps that finished this rank's super-block
    // Every step that reads the send buffer, and, with the accumulator in
    // Recv, every step that reads it there: a later write into Recv (in
    // place, Recv is Send) waits for those that read its elements.
    RangeSteps send_reads;
    uint32_t next_tag = 0;  // the first algorithm step number left unused
    Region at(const StepBuilder& b, size_t e) const { return b.at(buf, e - buf_lo); }
};

// Recursive-halving reduce-scatter of the send buffer (sb.back() elements)
// where new rank nr ends with the reduction of elements [sb[nr], sb[nr+1]).
// Step numbers tag .. tag+rounds (b's tag space must hold them).
//
// The accumulator holds what this rank still reduces: in scratch, the half
// it keeps after the first round (all of the message on an odd rank of the
// fold, which reduces it whole first); or, with `acc` = Recv (a receive
// buffer laid out like the message, as an all-reduce has), in place there.
// Received pieces land in a ring of `depth` scratch slots after it, each
// reused once the reduction that read it is done. So the scratch is at most
// the message (half of it when size is a power of two, none for the
// accumulator in Recv) plus depth pieces. With `finish_avg`, AVG is divided
// once here, by the super-block's owner.
inline HalvingResult halving_reduce_scatter(Schedule& s, const CollArgs& a, const StepBuilder& b,
                                            const std::vector<size_t>& sb, uint32_t tag, bool finish_avg,
                                            Buf acc_buf = Buf::Scratch) {
    const Fold f(a.size);
    const int r = a.rank;
    const size_t total = sb.back(), es = b.esize();
    HalvingResult out;
    out.newrank = f.newrank(r);
    out.next_tag = tag + 1 + f.rounds;
    if (a.size == 1) return out;
    const int nr = out.newrank;
    const bool folded = r < 2 * f.rem;
    if (folded && r % 2 == 0) {
        for_pieces(b, 0, total, [&](size_t i, size_t e, size_t n) {
            out.send_reads.add(e, e + n, s.send(r + 1, b.tag_of(tag, i), b.at(Buf::Send, e), n * es));
        });
        return out;
    }
    // The accumulator's extent, and the slots.
    size_t acc_lo = 0, acc_n = total;
    if (!folded && acc_buf == Buf::Scratch) {
        const int mid = f.pp / 2;
        acc_lo = nr < mid ? sb[0] : sb[mid];
        acc_n = (nr < mid ? sb[mid] : sb[f.pp]) - acc_lo;
    }
    out.buf = acc_buf;
    out.buf_lo = acc_buf == Buf::Scratch ? acc_lo : 0;
    const size_t slot0 = acc_buf == Buf::Scratch ? acc_n : 0;
    const size_t slot_elems = b.largest_piece(total), nslots = std::max(1, a.depth);
    s.need_scratch((slot0 + nslots * slot_elems) * es);
    std::vector<StepId> slot_user(nslots);
    std::vector<bool> slot_busy(nslots, false);
    size_t next_slot = 0;
    auto acc = [&](size_t e) { return out.at(b, e); };
    // Receive piece [e, e+n) from `peer` into the next slot and reduce it
    // into the accumulator after `deps` (the writers of what it reduces):
    //   acc = peer_first ? (received op mine) : (mine op received).
    auto recv_reduce = [&](int peer, uint32_t tg, size_t e, size_t n, Region mine, bool peer_first,
                           std::vector<StepId> deps) {
        const size_t slot = next_slot++ % nslots;
        const Region tmp = b.at(Buf::Scratch, slot0 + slot * slot_elems);
        StepId rv = slot_busy[slot] ? s.recv(peer, tg, tmp, n * es, {slot_user[slot]}) : s.recv(peer, tg, tmp, n * es);
        deps.push_back(rv);
        StepId red = peer_first ? s.reduce(acc(e), tmp, mine, n, deps) : s.reduce(acc(e), mine, tmp, n, deps);
        slot_user[slot] = red;
        slot_busy[slot] = true;
        return red;
    };
    bool from_send = true;  // whether this rank's data is still the send buffer
    auto mine = [&](size_t e) { return from_send ? b.at(Buf::Send, e) : acc(e); };
    RangeSteps prev;  // the latest writers of the accumulator

    if (folded) {
        for_pieces(b, 0, total, [&](size_t i, size_t e, size_t n) {
            StepId red = recv_reduce(r - 1, b.tag_of(tag, i), e, n, b.at(Buf::Send, e), true, {});
            prev.add(e, e + n, red);
            out.send_reads.add(e, e + n, red);
        });
        from_send = false;
    }

    int lo = 0, hi = f.pp;
    uint32_t step = tag + 1;
    for (int mask = f.pp / 2; mask >= 1; mask /= 2, ++step) {
        const int pnr = nr ^ mask, peer = f.rank_of(pnr), mid = lo + mask;
        const bool low = nr < mid;
        const size_t keep_b = low ? sb[lo] : sb[mid], keep_e = low ? sb[mid] : sb[hi];
        const size_t give_b = low ? sb[mid] : sb[lo], give_e = low ? sb[hi] : sb[mid];
        (low ? hi : lo) = mid;
        for_pieces(b, give_b, give_e, [&](size_t i, size_t e, size_t n) {
            StepId id = s.send(peer, b.tag_of(step, i), mine(e), n * es, prev.overlapping(e, e + n));
            if (from_send || acc_buf == Buf::Recv) out.send_reads.add(e, e + n, id);
        });
        RangeSteps cur;
        for_pieces(b, keep_b, keep_e, [&](size_t i, size_t e, size_t n) {
            // What this reduces was last written by the previous round's
            // reductions of this range.
            StepId red = recv_reduce(peer, b.tag_of(step, i), e, n, mine(e), pnr < nr, prev.overlapping(e, e + n));
            cur.add(e, e + n, red);
            if (from_send) out.send_reads.add(e, e + n, red);
        });
        prev = std::move(cur);
        from_send = false;
    }
    if (finish_avg && a.op == CHORUS_AVG) {
        RangeSteps divided;
        prev.for_each(
            [&](size_t e0, size_t e1, StepId st) { divided.add(e0, e1, s.divide(acc(e0), e1 - e0, a.size, {st})); });
        prev = std::move(divided);
    }
    out.last = std::move(prev);
    return out;
}

}  // namespace chorus::coll
