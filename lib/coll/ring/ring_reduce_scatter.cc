// Pipelined ring reduce-scatter (block and v forms).
//
// Every block is cut into the same number of chunks (from the largest block
// and chunk_bytes). For each chunk index, steps s = 0 .. size-2:
//
//   send block (rank - s - 1) to the next rank: from Send at s = 0, else the
//     partial this rank produced in step s-1;
//   receive block (rank - s - 2) from the previous rank into scratch and
//     reduce this rank's input into it (received partial first).
//
// After the last step the scratch copy of block `rank` holds the full
// reduction (AVG divided there, once); it is copied to Recv at the end, after
// every read of the send buffer, since in place Recv aliases Send's start.
// Chunks are independent chains, so chunk c+1 travels while chunk c reduces.
//
// Scratch is laid out like the input (the total of the blocks); each block's
// area is written once, by one receive, and reduced in place.
//
// Cost: size-1 steps; each rank sends every block but its own and receives
// every block but the one before its own, once each: (size-1)/size of the
// input for equal blocks, and reduces as much as it receives.
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/steps.h"

namespace chorus::coll {

std::unique_ptr<Schedule> build_ring_reduce_scatter(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const int p = a.size, r = a.rank;
    const size_t total = a.total_count();
    if (total == 0) {
        s.finalize();
        return sched;
    }
    StepBuilder b(s, a, p - 1);
    const size_t es = b.esize();
    std::vector<size_t> off(p + 1);
    size_t largest = 0;
    for (int i = 0; i < p; ++i) {
        off[i + 1] = off[i] + a.block_count(i);  // a running sum: O(p)
        largest = std::max(largest, a.block_count(i));
    }
    const size_t mine = off[r + 1] - off[r];
    if (p == 1) {
        s.copy(b.at(Buf::Recv, 0), b.at(Buf::Send, 0), mine * es);
        s.finalize();
        return sched;
    }
    const int next = ring_next(r, p), prev = ring_prev(r, p);
    const size_t chunks = b.pieces(largest);
    s.need_scratch(total * es);
    // Chunk c of block k, in elements of the input.
    auto piece = [&](int k, size_t c) {
        Range sub = split(off[k + 1] - off[k], chunks, c);
        return Range{off[k] + sub.begin, off[k] + sub.end};
    };

    for (size_t c = 0; c < chunks; ++c) {
        std::vector<StepId> produced;  // the step that wrote the partial sent next
        for (int st = 0; st < p - 1; ++st) {
            Range out = piece(mod(r - st - 1, p), c), in = piece(mod(r - st - 2, p), c);
            if (out.size()) {
                Buf from = st == 0 ? Buf::Send : Buf::Scratch;
                s.send(next, b.tag_of(st, c), b.at(from, out.begin), out.size() * es, produced);
            }
            produced.clear();
            if (in.size()) {
                Region part = b.at(Buf::Scratch, in.begin);
                StepId rv = s.recv(prev, b.tag_of(st, c), part, in.size() * es);
                produced.push_back(s.reduce(part, part, b.at(Buf::Send, in.begin), in.size(), {rv}));
            }
        }
        // `produced` now finished chunk c of this rank's own block.
        Range own = piece(r, c);
        if (a.op == CHORUS_AVG && own.size()) s.divide(b.at(Buf::Scratch, own.begin), own.size(), p, produced);
    }
    if (mine) s.copy(b.at(Buf::Recv, 0), b.at(Buf::Scratch, off[r]), mine * es, s.all_steps());
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
