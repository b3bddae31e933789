// A schedule without transfers (local steps and publish slots: a flat
// collective, or any collective on one rank) run on the calling thread, in
// step order, on host buffers: the way the smallest collectives complete
// without an executor. It spins at most `polls` times at a publish whose
// slot is still being read or an await whose peer has not published; it
// then stops, and an Executor started with the steps done so far finishes
// the schedule (Executor::reset's `done`). Steps are built after the steps
// they depend on, so step order is a valid order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/clock.h"
#include "exec/executor.h"
#include "exec/schedule.h"
#include "net/transport.h"
#include "reduce/host_reducer.h"

namespace chorus {

namespace inline_detail {

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

template <typename T>
inline char* at(T* t, const Buffers& b, Region r) {
    switch (r.buf) {
        case Buf::Send: return const_cast<char*>(static_cast<const char*>(b.send)) + r.offset;
        case Buf::Recv: return static_cast<char*>(b.recv) + r.offset;
        case Buf::Scratch: return static_cast<char*>(b.scratch) + r.offset;
        case Buf::Slot: return t->slot(r.peer, b.slot_op + r.round) + r.offset;
    }
    return nullptr;
}

// The waits below spin on a peer's line: with a core per rank (many polls
// allowed), a pause between polls leaves the line to the peer that writes
// it. Ranks that outnumber the cores poll a few times only before the
// caller yields (Waiter), and a pause would only delay that.
// kTimed: with the arrival stamp (a copy of its own, so that an untimed
// call tests nothing for it).
template <bool kTimed, typename T>
size_t run_steps(const Schedule& s, T* t, const Buffers& b, unsigned polls, uint64_t* arrived) {
    const bool pause = polls >= 1024;
    const auto& steps = s.steps();
    // The arrival stamp, once: a peer waits for this rank's publish, not for
    // its clock read.
    auto stamp = [&arrived] {
        if (kTimed && arrived) {
            *arrived = ticks();
            arrived = nullptr;
        }
    };
    if (kTimed && !s.uses_slots()) stamp();
    for (size_t k = 0; k < steps.size(); ++k) {
        const Step& st = steps[k];
        switch (st.kind) {
            case StepKind::Publish: {
                for (unsigned i = 0; !t->slot_free(b.slot_op + st.round); ++i) {
                    stamp();
                    if (i == polls) return k;
                    if (pause) relax();
                }
                if (!st.count && st.bytes) host_copy(at(t, b, st.dst), at(t, b, st.src), st.bytes);
                if (st.count)
                    for (const Schedule::SlotPiece& p : s.slot_pieces())
                        host_copy(at(t, b, st.dst) + p.offset, at(t, b, p.src), p.bytes);
                t->publish(b.slot_op + st.round);
                stamp();
                break;
            }
            case StepKind::Claim:
                for (unsigned i = 0; !t->slot_free(b.slot_op + st.round); ++i) {
                    stamp();
                    if (i == polls) return k;
                    if (pause) relax();
                }
                break;
            case StepKind::Release: t->slot_done(b.slot_op + st.round); break;
            case StepKind::Await:
                for (unsigned i = 0; !t->published(st.peer, b.slot_op + st.round); ++i) {
                    stamp();
                    if (i == polls) return k;
                    if (pause) relax();
                }
                stamp();  // a rank that publishes nothing arrives here
                break;
            case StepKind::Reduce:
                host_reduce(s.dtype(), s.op(), at(t, b, st.dst), at(t, b, st.src), at(t, b, st.src2), st.count);
                break;
            case StepKind::Copy: {
                char *dst = at(t, b, st.dst), *src = at(t, b, st.src);
                if (st.stream)
                    host_copy_stream(dst, src, st.bytes);
                else if (dst != src)
                    host_copy(dst, src, st.bytes);
                break;
            }
            case StepKind::Divide: host_divide(s.dtype(), at(t, b, st.dst), st.count, s.divisor()); break;
            case StepKind::Send:
            case StepKind::Recv:
            case StepKind::Expose:
            case StepKind::Get:
            case StepKind::Put: fail(CHORUS_ERR_INTERNAL, "run_in_order: a schedule with transfers");
        }
    }
    if (s.uses_slots() && !s.releases_rounds()) t->slot_done(b.slot_op);
    stamp();
    return steps.size();
}

}  // namespace inline_detail

// The number of steps done (all of them: the schedule has finished, and its
// slot operation is released). `slots`: the transport's publish slots (null
// only for a schedule that uses none). With `arrived`, the rank's arrival is
// stamped there (base/clock.h ticks()) where the stamp delays no peer: right
// after its contribution is published, or at the first poll that finds it
// must wait, whichever comes first (at the start for a schedule without
// slots).
size_t run_in_order(const Schedule& s, net::PublishSlots* slots, const Buffers& b, unsigned polls,
                    uint64_t* arrived = nullptr);
// run_in_order on the publish slots of a transport of final class T, whose
// slot calls are then inline (a small collective is a handful of them):
// `slots` must be that transport's. Whoever builds the transport chooses
// (core's creation instantiates it for the shared-memory transport).
template <typename T>
size_t run_in_order_on(const Schedule& s, net::PublishSlots* slots, const Buffers& b, unsigned polls,
                       uint64_t* arrived = nullptr) {
    T* t = static_cast<T*>(slots);
    return arrived ? inline_detail::run_steps<true>(s, t, b, polls, arrived)
                   : inline_detail::run_steps<false>(s, t, b, polls, nullptr);
}
using InPlaceRunner = size_t (*)(const Schedule& s, net::PublishSlots* slots, const Buffers& b, unsigned polls,
                                 uint64_t* arrived);

}  // namespace chorus
