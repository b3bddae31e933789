// Segmented binomial-tree reduce.
//
// Ranks are taken relative to the root (rel = (rank - root) mod size). The
// parent of rel is rel without its lowest set bit; its children are rel + 2^k
// below that bit. The message is cut into pieces of at most chunk_bytes; for
// each piece in turn a rank
//
//   receives the piece from each child, in increasing order, into a ring of
//     scratch slots and folds it in: acc = own input, then acc = acc op child
//     for each child in that order (a fixed order, whatever arrives first);
//   sends acc to its parent, so piece k goes up while piece k+1 still
//     arrives from below.
//
// The root accumulates straight into Recv (in place it reduces Send onto
// itself element by element) and divides each piece once for AVG. Other
// ranks accumulate in scratch; leaves send from Send. Non-root Recv is never
// touched.
//
// Cost: ceil(log2(size)) levels plus one step per extra piece of pipeline
// fill. Each non-root rank sends the message once; a rank receives it once
// per child (the root up to log2(size) times).
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_binomial_reduce(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    const size_t count = a.count;
    if (count == 0) {
        s.finalize();
        return sched;
    }
    StepBuilder b(s, a, 1);  // one step: piece i is tag (0, i) on every edge of the tree
    const size_t es = b.esize();
    const int rel = mod(r - a.root, p);
    const bool root = rel == 0;
    std::vector<int> kids = binomial_children(rel, p);
    for (int& k : kids) k = (k + a.root) % p;
    const int parent = root ? -1 : (binomial_parent(rel) + a.root) % p;
    const size_t npieces = b.pieces(count), nk = kids.size();

    // Where this rank accumulates, and the ring of slots children's pieces
    // land in (a slot is reused once the reduction reading it is done).
    const Buf acc = root ? Buf::Recv : Buf::Scratch;
    const size_t slot_elems = b.piece(count, 0).size();
    const size_t nslots = nk ? std::min(npieces * nk, std::max<size_t>(2 * nk, a.depth)) : 0;
    const size_t slot0 = root ? 0 : count;  // first slot, in scratch elements
    if (nk) s.need_scratch((slot0 + nslots * slot_elems) * es);
    std::vector<StepId> slot_user(nslots);
    std::vector<bool> slot_busy(nslots, false);
    size_t next_slot = 0;

    for (size_t k = 0; k < npieces; ++k) {
        Range pc = b.piece(count, k);
        if (!pc.size()) continue;
        Buf cur = Buf::Send;
        std::vector<StepId> ready;  // the step that produced `cur` for this piece
        for (int kid : kids) {
            size_t slot = next_slot++ % nslots;
            Region tmp = b.at(Buf::Scratch, slot0 + slot * slot_elems);
            StepId rv = slot_busy[slot] ? s.recv(kid, b.tag_of(0, k), tmp, pc.size() * es, {slot_user[slot]})
                                        : s.recv(kid, b.tag_of(0, k), tmp, pc.size() * es);
            ready.push_back(rv);
            StepId red = s.reduce(b.at(acc, pc.begin), b.at(cur, pc.begin), tmp, pc.size(), ready);
            slot_user[slot] = red;
            slot_busy[slot] = true;
            ready.assign(1, red);
            cur = acc;
        }
        if (!root) {
            s.send(parent, b.tag_of(0, k), b.at(cur, pc.begin), pc.size() * es, ready);
            continue;
        }
        if (nk == 0) ready.assign(1, s.copy(b.at(Buf::Recv, pc.begin), b.at(Buf::Send, pc.begin), pc.size() * es));
        if (a.op == CHORUS_AVG && p > 1) s.divide(b.at(Buf::Recv, pc.begin), pc.size(), p, ready);
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
