// Flat collectives through the publish slots, for communicators whose ranks
// all share one host's memory: every rank that contributes copies its data
// into its own slot and publishes it; every rank that needs the data awaits
// the slots it reads and computes its result straight out of them. One round,
// no messages: a rank's slot is read by the others in place.
//
// Reductions combine the contributions in rank order, ((c0 op c1) op c2) ...,
// from the slots (a rank's own contribution too, from its own slot, so that
// an in-place call may overwrite its input), so every rank that computes an
// element computes it alike, bit for bit.
//
// The data-movement collectives publish what their peers read: gather's
// ranks and all-gatherv's their own block, scatter's root and all-to-all's
// ranks the span of their blocks from the first another rank reads to the
// last (so a rank at either end leaves its own block out); the barrier
// publishes nothing, and leaves once every peer has published.
//
// Steps: one publish, up to size - 1 awaits, and size - 1 reductions or size
// copies per result. Bytes: each contributing rank writes its message once;
// each reading rank reads every slot it needs once. The whole message must
// fit a slot (fits_slot); the cost model weighs the reads against the rounds
// of the message-passing algorithms.
#include <algorithm>

#include "coll/algorithm.h"
#include "coll/partition.h"
#include "reduce/datatype.h"

namespace chorus::coll {

namespace {

size_t esize(const CollArgs& a) {
    return datatype_size(a.dtype);
}

// Publish `bytes` of Send; await every other rank; return the awaits (and
// the publish), by rank, for the steps that read the slots.
std::vector<StepId> publish_and_await(Schedule& s, const CollArgs& a, size_t bytes, bool contribute, bool read) {
    std::vector<StepId> ready(a.size, 0);
    StepId pub = contribute ? s.publish(Region(Buf::Send, 0), bytes, 0) : 0;
    for (int r = 0; r < a.size; ++r) ready[r] = r == a.rank ? pub : read ? s.await(r) : 0;
    return ready;
}

// dst = c0 op c1 op ... (rank order), `count` elements at byte offset `off`
// of every slot.
// In place, dst is (part of) what this rank publishes: the first reduction
// waits for the publish too, not only the one that reads this rank's slot.
void reduce_slots(Schedule& s, const CollArgs& a, Region dst, size_t off, size_t count,
                  const std::vector<StepId>& ready) {
    const Deps first = a.in_place && a.rank > 1 ? Deps{ready[0], ready[1], ready[a.rank]} : Deps{ready[0], ready[1]};
    StepId last = s.reduce(dst, Region::slot(0, off), Region::slot(1, off), count, first);
    for (int r = 2; r < a.size; ++r) last = s.reduce(dst, dst, Region::slot(r, off), count, {last, ready[r]});
    if (a.op == CHORUS_AVG) s.divide(dst, count, a.size, {last});
}

std::unique_ptr<Schedule> start(const CollArgs& a) {
    return std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
}

// The blocks of a buffer of one block per rank that `rank` publishes: from
// the first block another rank reads to the last (n = 0: none).
struct Span {
    int first, n;
};
Span peer_span(int rank, int size) {
    if (size == 1) return {0, 0};
    const int first = rank == 0 ? 1 : 0, last = rank == size - 1 ? size - 2 : size - 1;
    return {first, last - first + 1};
}
// The most blocks any rank publishes that way.
size_t most_published(int size) {
    return size <= 2 ? static_cast<size_t>(size - 1) : static_cast<size_t>(size);
}

}  // namespace

bool fits_slot(const CollArgs& a) {
    // The whole size class must fit (the selector's choice holds for it),
    // as many blocks of it as the collective publishes.
    size_t bytes = a.message_bytes(), blocks = 1;
    if (a.coll == Collective::Alltoall || a.coll == Collective::Scatter) blocks = most_published(a.size);
    if (a.coll == Collective::Allgatherv) {  // its largest block (the counts agree)
        bytes = 0;
        for (int r = 0; r < a.size; ++r) bytes = std::max(bytes, a.block(Side::Recv, r).count * esize(a));
    }
    size_t top = 1;
    while (top <= bytes) top <<= 1;
    return a.slot_bytes > 0 && (blocks == 0 || top - 1 <= a.slot_bytes / blocks);
}

std::unique_ptr<Schedule> build_flat_allreduce(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t bytes = a.count * esize(a);
    if (a.size == 1 || bytes == 0) {
        if (bytes && !a.in_place) s.copy(Region(Buf::Recv, 0), Region(Buf::Send, 0), bytes);
    } else {
        reduce_slots(s, a, Region(Buf::Recv, 0), 0, a.count, publish_and_await(s, a, bytes, true, true));
    }
    s.finalize();
    return sched;
}

std::unique_ptr<Schedule> build_flat_bcast(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t bytes = a.count * esize(a);
    if (bytes && a.rank == a.root) {
        StepId pub = a.size > 1 ? s.publish(Region(Buf::Send, 0), bytes, 0) : 0;
        if (!a.in_place) s.copy(Region(Buf::Recv, 0), Region(Buf::Send, 0), bytes, a.size > 1 ? Deps{pub} : Deps{});
    } else if (bytes) {
        s.copy(Region(Buf::Recv, 0), Region::slot(a.root, 0), bytes, {s.await(a.root)});
    }
    s.finalize();
    return sched;
}

std::unique_ptr<Schedule> build_flat_reduce(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t bytes = a.count * esize(a);
    const bool root = a.rank == a.root;
    if (a.size == 1 || bytes == 0) {
        if (bytes && root && !a.in_place) s.copy(Region(Buf::Recv, 0), Region(Buf::Send, 0), bytes);
    } else {
        auto ready = publish_and_await(s, a, bytes, true, root);
        if (root) reduce_slots(s, a, Region(Buf::Recv, 0), 0, a.count, ready);
    }
    s.finalize();
    return sched;
}

std::unique_ptr<Schedule> build_flat_reduce_scatter(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t es = esize(a), total = a.total_count() * es;
    const size_t off = a.block_offset(a.rank) * es, mine = a.block_count(a.rank);
    if (a.size == 1 || total == 0) {
        if (mine && !a.in_place) s.copy(Region(Buf::Recv, 0), Region(Buf::Send, 0), mine * es);
    } else {
        // Every rank publishes all of its input; each reads its own block.
        auto ready = publish_and_await(s, a, total, true, true);
        if (mine) reduce_slots(s, a, Region(Buf::Recv, 0), off, mine, ready);
    }
    s.finalize();
    return sched;
}

// All-gather and all-gatherv: each rank publishes its block, every rank
// copies every other block out of its owner's slot.
std::unique_ptr<Schedule> build_flat_allgather(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t es = esize(a);
    size_t total = 0;
    for (int r = 0; r < a.size; ++r) total += a.block(Side::Recv, r).count;
    if (total) {
        // Every rank publishes (an empty block too), so that all of them
        // number their slot operations alike.
        // number their slot operations alike; in place, all-gatherv's count
        // is not its block's (MPI_IN_PLACE ignores it).
        if (a.size > 1) s.publish(Region(Buf::Send, 0), a.block(Side::Recv, a.rank).count * es, 0);
        for (int r = 0; r < a.size; ++r) {
            const Block b = a.block(Side::Recv, r);
            if (!b.count) continue;
            const Region dst(Buf::Recv, b.offset * es);
            if (r != a.rank)
                s.copy(dst, Region::slot(r, 0), b.count * es, {s.await(r)});
            else if (!a.in_place)
                s.copy(dst, Region(Buf::Send, 0), b.count * es);
        }
    }
    s.finalize();
    return sched;
}

std::unique_ptr<Schedule> build_flat_alltoall(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t block = a.count * esize(a);
    if (block) {
        const Span mine = peer_span(a.rank, a.size);
        const StepId pub = mine.n ? s.publish(Region(Buf::Send, mine.first * block), mine.n * block, 0) : 0;
        for (int r = 0; r < a.size; ++r) {
            const Region dst(Buf::Recv, static_cast<size_t>(r) * block);
            if (r == a.rank) {
                if (!a.in_place) s.copy(dst, Region(Buf::Send, dst.offset), block);
                continue;
            }
            // In place, a block's place is overwritten once the publish has read it.
            const StepId ready = s.await(r);
            const Region src = Region::slot(r, static_cast<size_t>(a.rank - peer_span(r, a.size).first) * block);
            s.copy(dst, src, block, a.in_place ? Deps{ready, pub} : Deps{ready});
        }
    }
    s.finalize();
    return sched;
}

std::unique_ptr<Schedule> build_flat_gather(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t block = a.count * esize(a);
    if (block && a.rank != a.root) {
        s.publish(Region(Buf::Send, 0), block, 0);
    } else if (block) {
        for (int r = 0; r < a.size; ++r) {
            const Region dst(Buf::Recv, a.block(Side::Recv, r).offset * esize(a));
            if (r != a.rank)
                s.copy(dst, Region::slot(r, 0), block, {s.await(r)});
            else if (!a.in_place)
                s.copy(dst, Region(Buf::Send, 0), block);
        }
    }
    s.finalize();
    return sched;
}

std::unique_ptr<Schedule> build_flat_scatter(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t block = a.count * esize(a);
    const Span span = peer_span(a.root, a.size);
    if (block && a.rank == a.root) {
        if (span.n) s.publish(Region(Buf::Send, span.first * block), span.n * block, 0);
        if (!a.in_place) s.copy(Region(Buf::Recv, 0), Region(Buf::Send, static_cast<size_t>(a.root) * block), block);
    } else if (block) {
        const Region src = Region::slot(a.root, static_cast<size_t>(a.rank - span.first) * block);
        s.copy(Region(Buf::Recv, 0), src, block, {s.await(a.root)});
    }
    s.finalize();
    return sched;
}

// The irregular forms: the ranks do not know each other's counts, only the
// pairs do (what s sends d is what d receives from s), so each block
// travels by the slots or by a message as its own size says, and the slots
// hold a rank's blocks at places its readers can compute: a gatherv sender
// has its whole slot, a scatterv root or an all-to-allv rank a part of
// `sub_slot` bytes per reader, at reader * sub_slot. Every rank's schedule
// is one slot operation (an empty publish where it has nothing to share).
namespace {
size_t sub_slot(const CollArgs& a) {
    return (a.slot_bytes / static_cast<size_t>(a.size)) & ~size_t(7);
}

// This rank's send blocks for the other ranks that fit their reader's part
// of the slot (`sub` bytes at reader * sub).
std::vector<Schedule::SlotPiece> fitting_pieces(const CollArgs& a, size_t sub) {
    const size_t es = esize(a);
    std::vector<Schedule::SlotPiece> pieces;
    for (int d = 0; d < a.size; ++d) {
        const Block b = a.block(Side::Send, d);
        const size_t n = b.count * es;
        if (d != a.rank && n && n <= sub)
            pieces.push_back({Region(Buf::Send, b.offset * es), n, static_cast<size_t>(d) * sub});
    }
    return pieces;
}
}  // namespace

std::unique_ptr<Schedule> build_flat_gatherv(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t es = esize(a), room = a.slot_bytes;
    if (a.rank != a.root) {
        const size_t n = a.count * es;
        const bool slot = n && n <= room;
        s.publish(Region(Buf::Send, 0), slot ? n : 0, 0);
        if (n && !slot) s.send(a.root, 0, Region(Buf::Send, 0), n);
    } else {
        s.publish(Region(Buf::Send, 0), 0, 0);
        for (int r = 0; r < a.size; ++r) {
            const Block b = a.block(Side::Recv, r);
            const size_t n = b.count * es;
            const Region dst(Buf::Recv, b.offset * es);
            if (!n || (r == a.rank && a.in_place)) continue;
            if (r == a.rank)
                s.copy(dst, Region(Buf::Send, 0), n);
            else if (n <= room)
                s.copy(dst, Region::slot(r, 0), n, {s.await(r)});
            else
                s.recv(r, 0, dst, n);
        }
    }
    s.finalize();
    return sched;
}

std::unique_ptr<Schedule> build_flat_scatterv(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t es = esize(a), sub = sub_slot(a);
    if (a.rank == a.root) {
        s.publish_pieces(fitting_pieces(a, sub));
        for (int d = 0; d < a.size; ++d) {
            const Block b = a.block(Side::Send, d);
            const size_t n = b.count * es;
            if (!n) continue;
            if (d == a.rank) {
                if (!a.in_place) s.copy(Region(Buf::Recv, 0), Region(Buf::Send, b.offset * es), n);
            } else if (n > sub) {
                s.send(d, 0, Region(Buf::Send, b.offset * es), n);
            }
        }
    } else {
        const size_t n = a.count * es;
        if (n && n <= sub)
            s.copy(Region(Buf::Recv, 0), Region::slot(a.root, static_cast<size_t>(a.rank) * sub), n, {s.await(a.root)});
        else
            s.publish(Region(Buf::Send, 0), 0, 0);
        if (n > sub) s.recv(a.root, 0, Region(Buf::Recv, 0), n);
    }
    s.finalize();
    return sched;
}

// In place the send blocks are the receive blocks, and a pair's two blocks
// have one size: a block from the slots is copied in once this rank's
// publish has read its place; one by message lands in scratch and is copied
// in once this rank's own message to that peer has left.
std::unique_ptr<Schedule> build_flat_alltoallv(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t es = esize(a), sub = sub_slot(a);
    const int p = a.size, me = a.rank;
    const StepId pub = s.publish_pieces(fitting_pieces(a, sub));
    std::vector<StepId> sent(static_cast<size_t>(p), 0);
    for (int d = 0; d < p; ++d) {
        const Block b = a.block(Side::Send, d);
        const size_t n = b.count * es;
        if (d != me && n > sub) sent[d] = s.send(d, 0, Region(Buf::Send, b.offset * es), n);
    }
    size_t scratch = 0;
    for (int q = 0; q < p; ++q) {
        const Block b = a.block(Side::Recv, q);
        const size_t n = b.count * es;
        const Region dst(Buf::Recv, b.offset * es);
        if (!n) continue;
        if (q == me) {
            if (!a.in_place) s.copy(dst, Region(Buf::Send, a.block(Side::Send, me).offset * es), n);
        } else if (n <= sub) {
            const StepId ready = s.await(q);
            s.copy(dst, Region::slot(q, static_cast<size_t>(me) * sub), n, a.in_place ? Deps{ready, pub} : Deps{ready});
        } else if (!a.in_place) {
            s.recv(q, 0, dst, n);
        } else {
            const StepId got = s.recv(q, 0, Region(Buf::Scratch, scratch), n);
            s.copy(dst, Region(Buf::Scratch, scratch), n, {got, sent[q]});
            scratch += n;
        }
    }
    s.need_scratch(scratch);
    s.finalize();
    return sched;
}

std::unique_ptr<Schedule> build_flat_barrier(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    if (a.size > 1) {
        s.publish(Region(Buf::Send, 0), 0, 0);
        for (int r = 0; r < a.size; ++r)
            if (r != a.rank) s.await(r);
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
