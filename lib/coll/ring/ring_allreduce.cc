// Pipelined ring all-reduce.
//
// The message is cut into `size` blocks, one per rank, and every block into
// the same number of chunks. For each chunk index the ring runs two phases:
//
//   reduce-scatter, steps s = 0 .. size-2: send block (rank - s) to the next
//     rank; receive block (rank - s - 1) from the previous rank and reduce it
//     into the receive buffer. After it, this rank owns the fully reduced
//     block (rank + 1).
//   all-gather, steps s = 0 .. size-2: send block (rank + 1 - s) to the next
//     rank; receive block (rank - s) straight into the receive buffer.
//
// Chunks are independent chains, so the transfer of chunk k+1 overlaps the
// reduction of chunk k. Received data to reduce lands in a ring of `depth`
// scratch slots; a slot is reused only after the reduction that read it.
//
// Cost: 2(size-1) steps; each rank sends and receives 2(size-1)/size of the
// message and reduces (size-1)/size of it. Every element's final value is
// computed once, by the block's owner, and then copied: results are
// bit-identical on every rank.
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "coll/steps.h"
#include "reduce/datatype.h"

namespace chorus::coll {

namespace {
// The steps st = 0 .. p-2 of a phase that move anything, in order: those
// whose outgoing block (r + out - st) or incoming block (r + in - st) is one
// of the first `nonempty` blocks (every step when every block is). With
// fewer elements than ranks only `count` blocks are, and a rank's schedule
// then costs O(count) to build, not O(p).
std::vector<int> busy_steps(int r, int p, size_t nonempty, int out, int in) {
    std::vector<int> steps;
    if (nonempty >= static_cast<size_t>(p)) {
        steps.resize(static_cast<size_t>(p - 1));
        for (int st = 0; st < p - 1; ++st) steps[st] = st;
        return steps;
    }
    for (size_t b = 0; b < nonempty; ++b)
        for (int off : {out, in}) {
            const int st = mod(static_cast<long>(r) + off - static_cast<long>(b), p);
            if (st < p - 1) steps.push_back(st);
        }
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    return steps;
}
}  // namespace

std::unique_ptr<Schedule> build_ring_allreduce(const CollArgs& a) {
    auto sched = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    Schedule& s = *sched;
    const size_t esize = datatype_size(a.dtype);
    const int p = a.size, r = a.rank;
    if (a.count == 0) {
        s.finalize();
        return sched;
    }
    if (p == 1) {
        // In place, send and recv are the same buffer and the copy is skipped.
        s.copy({Buf::Recv, 0}, {Buf::Send, 0}, a.count * esize);
        s.finalize();
        return sched;
    }
    const int next = ring_next(r, p), prev = ring_prev(r, p);
    const size_t max_block = split(a.count, p, 0).size();
    // Tags: step (phase, s) is phase * (p-1) + s; chunk c is the piece.
    const TagSpace tags(2 * static_cast<uint64_t>(p - 1), a.tag_bits);
    const size_t chunks =
        std::min(tags.max_pieces(), num_chunks(max_block, std::max<size_t>(1, a.chunk_bytes / esize)));
    const size_t slot_bytes = ceil_div(max_block, chunks) * esize;
    const size_t nslots = std::max<size_t>(1, std::min<size_t>(a.depth, chunks * (p - 1)));
    s.need_scratch(nslots * slot_bytes);

    // The piece of block b that chunk c covers, in elements of the message.
    auto piece = [&](int b, size_t c) {
        Range blk = split(a.count, p, b);
        Range sub = split(blk.size(), chunks, c);
        return Range{blk.begin + sub.begin, blk.begin + sub.end};
    };
    auto tag = [&](int phase, int step, size_t c) {
        return tags.tag(static_cast<uint64_t>(phase) * (p - 1) + step, c);
    };
    const size_t nonempty = std::min<size_t>(a.count, static_cast<size_t>(p));
    const std::vector<int> rs_steps = busy_steps(r, p, nonempty, 0, -1), ag_steps = busy_steps(r, p, nonempty, 1, 0);
    std::vector<StepId> slot_last_use(nslots, 0);
    std::vector<bool> slot_used(nslots, false);
    size_t next_slot = 0;

    for (size_t c = 0; c < chunks; ++c) {
        // Reduce-scatter.
        StepId produced = 0;  // the step that wrote the data we send next
        bool have_produced = false;
        std::vector<StepId> rs_send(p - 1);
        std::vector<bool> rs_sent(p - 1, false);
        int last = -1;  // the step before (a step in between produced nothing)
        for (int st : rs_steps) {
            if (st != last + 1) have_produced = false;
            last = st;
            Range out = piece(mod(r - st, p), c), in = piece(mod(r - st - 1, p), c);
            if (out.size()) {
                Region src{st == 0 ? Buf::Send : Buf::Recv, out.begin * esize};
                rs_send[st] = have_produced ? s.send(next, tag(0, st, c), src, out.size() * esize, {produced})
                                            : s.send(next, tag(0, st, c), src, out.size() * esize);
                rs_sent[st] = true;
            }
            have_produced = false;
            if (in.size()) {
                size_t slot = next_slot++ % nslots;
                Region tmp{Buf::Scratch, slot * slot_bytes};
                StepId rv = s.recv(prev, tag(0, st, c), tmp, in.size() * esize);
                if (slot_used[slot]) s.add_dep(rv, slot_last_use[slot]);
                Region acc{Buf::Recv, in.begin * esize};
                produced = s.reduce(acc, {Buf::Send, in.begin * esize}, tmp, in.size(), {rv});
                have_produced = true;
                slot_last_use[slot] = produced;
                slot_used[slot] = true;
            }
        }
        // This rank now owns block rank+1 of this chunk.
        Range own = piece(mod(r + 1, p), c);
        if (a.op == CHORUS_AVG && own.size())
            produced = s.divide({Buf::Recv, own.begin * esize}, own.size(), p, {produced});
        if (last != p - 2) have_produced = false;
        // All-gather.
        last = -1;
        for (int st : ag_steps) {
            if (st != last + 1) have_produced = false;
            last = st;
            Range out = piece(mod(r + 1 - st, p), c), in = piece(mod(r - st, p), c);
            if (out.size()) {
                Region src{Buf::Recv, out.begin * esize};
                if (have_produced)
                    s.send(next, tag(1, st, c), src, out.size() * esize, {produced});
                else
                    s.send(next, tag(1, st, c), src, out.size() * esize);
            }
            have_produced = false;
            if (in.size()) {
                // The block arriving here left this rank in reduce-scatter
                // step st; its buffer is overwritten only after that send.
                Region dst{Buf::Recv, in.begin * esize};
                produced = rs_sent[st] ? s.recv(prev, tag(1, st, c), dst, in.size() * esize, {rs_send[st]})
                                       : s.recv(prev, tag(1, st, c), dst, in.size() * esize);
                have_produced = true;
            }
        }
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
