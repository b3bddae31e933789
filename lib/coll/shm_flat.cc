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
// Steps: one publish, up to size - 1 awaits, and size - 1 reductions or size
// copies per result. Bytes: each contributing rank writes its message once;
// each reading rank reads every slot it needs once. The whole message must
// fit a slot (fits_slot); the cost model weighs the reads against the rounds
// of the message-passing algorithms.
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
void reduce_slots(Schedule& s, const CollArgs& a, Region dst, size_t off, size_t count,
                  const std::vector<StepId>& ready) {
    StepId last = s.reduce(dst, Region::slot(0, off), Region::slot(1, off), count, {ready[0], ready[1]});
    for (int r = 2; r < a.size; ++r) last = s.reduce(dst, dst, Region::slot(r, off), count, {last, ready[r]});
    if (a.op == CHORUS_AVG) s.divide(dst, count, a.size, {last});
}

std::unique_ptr<Schedule> start(const CollArgs& a) {
    return std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
}

}  // namespace

bool fits_slot(const CollArgs& a) {
    // The whole size class must fit (the selector's choice holds for it).
    size_t bytes = a.message_bytes(), top = 1;
    while (top <= bytes) top <<= 1;
    return a.slot_bytes > 0 && top - 1 <= a.slot_bytes;
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

std::unique_ptr<Schedule> build_flat_allgather(const CollArgs& a) {
    auto sched = start(a);
    Schedule& s = *sched;
    const size_t block = a.count * esize(a);
    if (block) {
        std::vector<StepId> ready = a.size > 1 ? publish_and_await(s, a, block, true, true) : std::vector<StepId>{};
        for (int r = 0; r < a.size; ++r) {
            const Region dst(Buf::Recv, static_cast<size_t>(r) * block);
            if (r == a.rank) {
                if (!a.in_place) s.copy(dst, Region(Buf::Send, 0), block);
            } else {
                s.copy(dst, Region::slot(r, 0), block, {ready[r]});
            }
        }
    }
    s.finalize();
    return sched;
}

}  // namespace chorus::coll
