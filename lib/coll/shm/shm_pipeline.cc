// Large collectives through the publish slots, in rounds (every rank on one
// host): the message streams through each rank's slots a chunk at a time, so
// that the data a rank reads from a peer is in a cache when it reads it, and
// every byte of the user's buffers is read once and written once.
//
// All-reduce: rank r owns block r of the message (split evenly). For chunk
// k of the blocks:
//   - input round I_k: every rank copies chunk k of every block but its own
//     into its slot (packed in block order) and publishes it;
//   - rank r reduces chunk k of its block in rank order, c0 op c1 op ...,
//     reading its own contribution from its input and the others' from
//     their slots, into its slot of output round O_k, and publishes that;
//   - every rank copies chunk k of every block out of its owner's O_k slot
//     (its own too) into its result, with non-temporal stores when the
//     message is large (the result is not read again soon, and the stores
//     then do not read the destination's lines first).
// Reduce, broadcast and all-gather (further below) take one round per
// chunk, in which the ranks that contribute publish chunk k of their input.
//
// Rounds are numbered in the order a rank claims them: the input rounds of
// the first kLookahead chunks, then per chunk k the input round of chunk
// k + kLookahead and the output round of chunk k. A slot is reused after the
// slot count of rounds (8), so a rank claims a round only once every rank
// has released the rounds up to 8 before it; with that numbering (and a
// lookahead of at most 3, a lag of at most 3) those are rounds every rank
// releases earlier in the same order. A lookahead of 4 would
// close a cycle: the claim of chunk k + 4's input round would wait for the
// release of chunk k's, which comes after chunk k's reduction.
//
// Every result element is computed by one rank, its block's owner, in rank
// order, and copied by the others: every rank gets the same bits.
//
// Every chunk a rank publishes for its peers (the reduce's contributions,
// the all-reduce's input rounds, the broadcast's and all-gather's rounds)
// is written into its slot with non-temporal stores. With ordinary stores,
// the writer's copy into a slot its peers read eight rounds before waits
// for each line to be taken back from their caches, and a reducer pulls
// each line out of the writer's cache slowly; streamed, the writer does
// not read the slot's lines at all, and the readers read from memory.
// Measured at np=2 (chorus-bench -c, medians of 3-6 alternating runs, a
// 2-vCPU AMD EPYC VM): the reduce 1.5-1.9x the ordinary stores from 16 KiB
// to 4 MiB and 1.5-3.2x from 8 to 64 MiB; the broadcast 3.5-6x at 16-64
// MiB; the all-gather 2.5x. The all-reduce's results (its output rounds,
// written by its reductions) go with ordinary stores. That holds for ranks
// on cores of their own; ranks that share a core's caches (SMT siblings)
// hand chunks over faster with ordinary stores: perf/chorus_handoff.cc
// measures both on a host.

#include <algorithm>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "reduce/datatype.h"

namespace chorus::coll {

namespace {

constexpr size_t kLookahead = 2;
// Chunk k's results are copied out after chunk k + kLag's reduction.
constexpr size_t kLag = 1;
// Results of at least this many bytes are written with non-temporal stores.
constexpr size_t kStreamBytes = size_t{8} << 20;
// The reduce's root folds into its result directly below this size: a
// chunk's reads and writes stay in its caches (at np=2: 1.2-1.6x the fold
// through its slot at 4-16 MiB, alike at 32 MiB, 0.85x at 64 MiB, where the
// non-temporal copy out saves reading the result's lines first).
constexpr size_t kReduceStreamBytes = size_t{32} << 20;

struct Plan {
    const CollArgs& a;
    size_t es, chunk;  // chunk: elements of one block's chunk
    size_t chunks;     // per block (the most any block has)
    std::vector<Range> blocks;

    // Chunk k of block b (elements of the message), clipped to the block.
    Range piece(int b, size_t k) const {
        const Range& r = blocks[b];
        const size_t begin = std::min(r.end, r.begin + k * chunk);
        return {begin, std::min(r.end, begin + chunk)};
    }
    // Rounds in claim order (see the file's comment).
    uint32_t in_round(size_t k) const { return static_cast<uint32_t>(k < kLookahead ? k : 2 * k - kLookahead); }
    uint32_t out_round(size_t k) const {
        // Before chunk k's output round come the lookahead's input rounds,
        // the input rounds claimed with chunks 0 .. k (none for the last
        // kLookahead chunks) and the output rounds of chunks 0 .. k - 1.
        const size_t paired = std::min(k + 1, chunks > kLookahead ? chunks - kLookahead : 0);
        return static_cast<uint32_t>(std::min(chunks, kLookahead) + paired + k);
    }
};

// The chunk size: a slot holds one chunk of each of `readers_blocks`
// blocks, each a whole number of 64-byte lines (so that results are written
// a line at a time).
size_t chunk_elems(const CollArgs& a, size_t blocks_per_slot) {
    const size_t es = datatype_size(a.dtype);
    const size_t room = a.slot_bytes > a.slot_line ? a.slot_bytes - a.slot_line : 0;
    const size_t bytes = room / std::max<size_t>(1, blocks_per_slot) / 64 * 64;
    return bytes / es;
}

std::unique_ptr<Schedule> start(const CollArgs& a) {
    return std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
}

// The previous round's publish (each claim comes after it, so that one
// claim polls at a time).
Deps previous(const std::vector<StepId>& pub, size_t k) {
    return k ? Deps{pub[k - 1]} : Deps{};
}

// A copy into or out of a slot, with non-temporal stores if `stream` (a
// chunk published for peers; a result when the message is large).
StepId slot_copy(Schedule& s, Region dst, Region src, size_t bytes, Deps deps, bool stream) {
    const StepId c = s.copy(dst, src, bytes, deps);
    if (stream) s.stream(c);
    return c;
}

// The input round of chunk k: chunk k of every block but this rank's, into
// its slot (packed in block order), published; `published` by chunk.
void publish_input(Schedule& s, const Plan& pl, size_t k, std::vector<StepId>& published) {
    const CollArgs& a = pl.a;
    const uint32_t round = pl.in_round(k);
    const StepId claim = s.claim(round, previous(published, k));
    std::vector<StepId> copies{claim};
    for (int b = 0, slot = 0; b < a.size; ++b) {
        if (b == a.rank) continue;
        const Range r = pl.piece(b, k);
        if (r.size())  // streamed (see the file's comment)
            copies.push_back(slot_copy(s, Region::slot(a.rank, a.slot_line + slot * pl.chunk * pl.es, round),
                                       Region(Buf::Send, r.begin * pl.es), r.size() * pl.es, {claim}, true));
        ++slot;
    }
    published[k] = s.publish_round(round, copies);
}

// dst = c0 op c1 op ... (rank order) over `n` elements, operand(r) being
// rank r's contribution (this rank's own in its input, the others' in their
// slots of `round`, each read once its publish is seen); every step after
// `after`. AVG divides at the end. Returns the last step.
template <typename Operand>
StepId fold_in_rank_order(Schedule& s, const CollArgs& a, uint32_t round, Region dst, size_t n, StepId after,
                          Operand&& operand) {
    auto ready = [&](int r) { return r == a.rank ? after : s.await_round(r, round, {after}); };
    const StepId r0 = ready(0), r1 = ready(1);
    StepId last = s.reduce(dst, operand(0), operand(1), n, {after, r0, r1});
    for (int r = 2; r < a.size; ++r) last = s.reduce(dst, dst, operand(r), n, {last, ready(r)});
    if (a.op == CHORUS_AVG) last = s.divide(dst, n, a.size, {last});
    return last;
}

// Reduce this rank's chunk k, in rank order, into `dst`; the reads of the
// input round are done after the returned step (the claim of the output
// round when the chunk is empty).
StepId reduce_chunk(Schedule& s, const Plan& pl, size_t k, Region dst, StepId after) {
    const CollArgs& a = pl.a;
    const uint32_t round = pl.in_round(k);
    const Range mine = pl.piece(a.rank, k);
    if (!mine.size()) return after;
    return fold_in_rank_order(s, a, round, dst, mine.size(), after, [&](int r) {
        if (r == a.rank) return Region(Buf::Send, mine.begin * pl.es);
        const int slot = a.rank < r ? a.rank : a.rank - 1;  // this rank's block in r's slot
        return Region::slot(r, a.slot_line + slot * pl.chunk * pl.es, round);
    });
}

// Copy chunk k of every block out of its owner's slot of the output round
// into the result (this rank's own block from its own slot); `before` must
// be done before the result is written (in place, the input round's
// publish read it). Returns the round's release.
StepId gather_chunk(Schedule& s, const Plan& pl, size_t k, Deps before) {
    const CollArgs& a = pl.a;
    const uint32_t round = pl.out_round(k);
    const bool stream = pl.a.message_bytes() >= kStreamBytes;
    std::vector<StepId> done(before.begin(), before.end());
    for (int b = 0; b < a.size; ++b) {
        const Range r = pl.piece(b, k);
        if (!r.size()) continue;
        std::vector<StepId> deps(before.begin(), before.end());
        if (b != a.rank) deps.push_back(s.await_round(b, round, before));
        done.push_back(slot_copy(s, Region(Buf::Recv, r.begin * pl.es), Region::slot(b, a.slot_line, round),
                                 r.size() * pl.es, deps, stream));
    }
    return s.release(round, done);
}

// Blocks split evenly over the ranks, cut into chunks of `chunk` elements.
Plan make_plan(const CollArgs& a, size_t chunk) {
    Plan pl{a, datatype_size(a.dtype), chunk, 0, {}};
    for (int b = 0; b < a.size; ++b) pl.blocks.push_back(split(a.count, a.size, b));
    size_t most = 0;
    for (const Range& r : pl.blocks) most = std::max(most, r.size());
    pl.chunks = num_chunks(most, chunk);
    return pl;
}

}  // namespace

bool fits_pipeline(const CollArgs& a) {
    return a.slot_bytes > 0 && chunk_elems(a, static_cast<size_t>(std::max(1, a.size - 1))) > 0;
}

std::unique_ptr<Schedule> build_pipeline_allreduce(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t es = datatype_size(a.dtype), bytes = a.count * es;
    if (a.size == 1 || bytes == 0) {
        if (bytes && !a.in_place) s.copy(Region(Buf::Recv, 0), Region(Buf::Send, 0), bytes);
        s.finalize();
        return sched;
    }
    const Plan pl = make_plan(a, chunk_elems(a, a.size - 1));
    std::vector<StepId> in(pl.chunks, 0);  // the input rounds' publishes
    for (size_t k = 0; k < std::min(pl.chunks, kLookahead); ++k) publish_input(s, pl, k, in);
    // Chunk k's results are copied out after chunk k + kLag's reduction,
    // so that a rank that runs the steps in order seldom waits for its
    // peers' (a lag up to 3 keeps the claims free of cycles).
    std::vector<StepId> pub(pl.chunks, 0);
    for (size_t k = 0; k < pl.chunks + kLag; ++k) {
        if (k < pl.chunks) {
            if (k + kLookahead < pl.chunks) publish_input(s, pl, k + kLookahead, in);
            const uint32_t out = pl.out_round(k);
            const StepId claim = s.claim(out, previous(pub, k));
            const StepId last = reduce_chunk(s, pl, k, Region::slot(a.rank, a.slot_line, out), claim);
            pub[k] = s.publish_round(out, {claim, last});
            s.release(pl.in_round(k), {in[k], last});
        }
        if (k >= kLag) gather_chunk(s, pl, k - kLag, {pub[k - kLag], in[k - kLag]});
    }
    s.finalize();
    return sched;
}

// One round per chunk: the collectives whose ranks publish a chunk of one
// buffer each (reduce: every contribution; broadcast: the root's message;
// all-gather: every rank's block). Round k carries chunk k; a rank
// publishes the rounds of the first kLookahead chunks before it reads
// any, then, per chunk k, publishes chunk k + kLookahead and reads chunk k.
namespace {

struct Rounds {
    const CollArgs& a;
    size_t es, chunk, chunks;
    size_t bytes_of(size_t count, size_t k) const {
        const size_t begin = std::min(count, k * chunk);
        return (std::min(count, begin + chunk) - begin) * es;
    }
};

Rounds rounds_of(const CollArgs& a, size_t most) {
    const size_t chunk = chunk_elems(a, 1);
    return {a, datatype_size(a.dtype), chunk, num_chunks(most, chunk)};
}

// Claim round k, copy `bytes` of `src` into this rank's slot (none: an
// empty publish) with non-temporal stores (see the file's comment),
// publish. Returns the publish.
StepId publish_chunk(Schedule& s, const CollArgs& a, uint32_t k, Region src, size_t bytes, Deps after) {
    const StepId claim = s.claim(k, after);
    if (!bytes) return s.publish_round(k, {claim});
    return s.publish_round(k, {slot_copy(s, Region::slot(a.rank, a.slot_line, k), src, bytes, {claim}, true)});
}

// One rank or an empty message: the root's copy at most, and the schedule
// is done (finalized).
bool trivial_rooted(Schedule& s, const CollArgs& a) {
    const size_t bytes = a.count * datatype_size(a.dtype);
    if (a.size > 1 && bytes > 0) return false;
    if (bytes && a.rank == a.root && !a.in_place) s.copy(Region(Buf::Recv, 0), Region(Buf::Send, 0), bytes);
    s.finalize();
    return true;
}

// Run `publish(k)` for chunk k + kLookahead ahead of `read(k)` for chunk k.
template <typename Publish, typename Read>
void in_rounds(size_t chunks, Publish&& publish, Read&& read) {
    for (size_t k = 0; k < std::min(chunks, kLookahead); ++k) publish(k);
    for (size_t k = 0; k < chunks; ++k) {
        if (k + kLookahead < chunks) publish(k + kLookahead);
        read(k);
    }
}

}  // namespace

// Reduce: every rank but the root publishes chunk k of its input; the root
// reduces chunk k in rank order (its own contribution from its input) into
// its result, or, for results beyond the caches, into its slot of the round
// and then out to its result with non-temporal stores.
std::unique_ptr<Schedule> build_pipeline_reduce(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t es = datatype_size(a.dtype), bytes = a.count * es;
    const bool root = a.rank == a.root;
    if (trivial_rooted(s, a)) return sched;
    const Rounds r = rounds_of(a, a.count);
    const bool stream = bytes >= kReduceStreamBytes;
    // In place, a root after rank 1 would overwrite its contribution with
    // the first ranks' before folding it in: it folds in its slot too (a
    // step order of its own; the rounds are the same).
    const bool through_slot = stream || (a.in_place && a.root >= 2);
    std::vector<StepId> pub(r.chunks, 0);
    in_rounds(
        r.chunks,
        [&](size_t k) {
            const Deps after = previous(pub, k);
            pub[k] = root ? s.claim(static_cast<uint32_t>(k), after)
                          : publish_chunk(s, a, static_cast<uint32_t>(k), Region(Buf::Send, k * r.chunk * es),
                                          r.bytes_of(a.count, k), after);
        },
        [&](size_t k) {
            const uint32_t round = static_cast<uint32_t>(k);
            if (!root) {
                s.release(round, {pub[k]});
                return;
            }
            const size_t n = r.bytes_of(a.count, k) / es, off = k * r.chunk * es;
            // Beyond the caches through the root's slot, then out (with
            // non-temporal stores); below, straight into the result.
            const Region dst = through_slot ? Region::slot(a.rank, a.slot_line, round) : Region(Buf::Recv, off);
            const StepId last = fold_in_rank_order(s, a, round, dst, n, pub[k], [&](int q) {
                return q == a.rank ? Region(Buf::Send, off) : Region::slot(q, a.slot_line, round);
            });
            const StepId published = s.publish_round(round, {last});
            if (through_slot)
                s.release(round, {published, slot_copy(s, Region(Buf::Recv, off), dst, n * es, {last}, stream)});
            else
                s.release(round, {published});
        });
    s.finalize();
    return sched;
}

// Broadcast: the root publishes chunk k of its message; every other rank
// copies it out of the root's slot.
std::unique_ptr<Schedule> build_pipeline_bcast(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t es = datatype_size(a.dtype), bytes = a.count * es;
    const bool root = a.rank == a.root;
    if (trivial_rooted(s, a)) return sched;
    const Rounds r = rounds_of(a, a.count);
    const bool stream = bytes >= kStreamBytes;
    std::vector<StepId> pub(r.chunks, 0);
    in_rounds(
        r.chunks,
        [&](size_t k) {
            const Deps after = previous(pub, k);
            pub[k] = publish_chunk(s, a, static_cast<uint32_t>(k), Region(Buf::Send, k * r.chunk * es),
                                   root ? r.bytes_of(a.count, k) : 0, after);
        },
        [&](size_t k) {
            const uint32_t round = static_cast<uint32_t>(k);
            const size_t n = r.bytes_of(a.count, k), off = k * r.chunk * es;
            StepId done = pub[k];
            if (!root)
                done = slot_copy(s, Region(Buf::Recv, off), Region::slot(a.root, a.slot_line, round), n,
                                 {s.await_round(a.root, round, {pub[k]})}, stream);
            else if (!a.in_place)
                done =
                    slot_copy(s, Region(Buf::Recv, off), Region::slot(a.rank, a.slot_line, round), n, {pub[k]}, stream);
            s.release(round, {pub[k], done});
        });
    s.finalize();
    return sched;
}

// All-gather: every rank publishes chunk k of its block; every rank copies
// chunk k of every other block out of its owner's slot, and of its own
// block (unless in place) from its input: the slot was written with
// non-temporal stores and would be read back from memory. Measured at np=2
// against the copy out of the slot (chorus-bench allgather -c, forced,
// medians of 3-4 alternating runs): 1.5-1.8x as fast from 64 KiB to 4 MiB
// and 0.98-1.32x at 8-16 MiB warm, 1.1-1.3x cold from 8 to 64 MiB, and
// 0.91-0.97x warm at 32-64 MiB.
std::unique_ptr<Schedule> build_pipeline_allgather(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t es = datatype_size(a.dtype), bytes = a.count * es;
    if (bytes == 0) {
        s.finalize();
        return sched;
    }
    const Region own(Buf::Recv, static_cast<size_t>(a.rank) * bytes);
    if (a.size == 1) {
        if (!a.in_place) s.copy(own, Region(Buf::Send, 0), bytes);
        s.finalize();
        return sched;
    }
    const Rounds r = rounds_of(a, a.count);
    const bool stream = bytes * static_cast<size_t>(a.size) >= kStreamBytes;
    std::vector<StepId> pub(r.chunks, 0);
    in_rounds(
        r.chunks,
        [&](size_t k) {
            const Deps after = previous(pub, k);
            pub[k] = publish_chunk(s, a, static_cast<uint32_t>(k), Region(Buf::Send, k * r.chunk * es),
                                   r.bytes_of(a.count, k), after);
        },
        [&](size_t k) {
            const uint32_t round = static_cast<uint32_t>(k);
            const size_t n = r.bytes_of(a.count, k), off = k * r.chunk * es;
            std::vector<StepId> done{pub[k]};
            for (int q = 0; q < a.size; ++q) {
                if (q == a.rank && a.in_place) continue;
                const Region dst(Buf::Recv, static_cast<size_t>(q) * bytes + off);
                // Its own chunk from its input, which is in its caches where
                // the slot's streamed copy is not.
                if (q == a.rank)
                    done.push_back(slot_copy(s, dst, Region(Buf::Send, off), n, {pub[k]}, stream));
                else
                    done.push_back(slot_copy(s, dst, Region::slot(q, a.slot_line, round), n,
                                             {s.await_round(q, round, {pub[k]})}, stream));
            }
            s.release(round, done);
        });
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
