#include "exec/executor.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "base/clock.h"
#include "base/error.h"
#include "reduce/host_reducer.h"

namespace chorus {

static_assert(kStepTagBits == net::kTagStepBits, "schedule tags must fit the wire tag");

namespace {
void heap_push(std::vector<StepId>& h, StepId s) {
    h.push_back(s);
    std::push_heap(h.begin(), h.end(), std::greater<StepId>());
}
StepId heap_pop(std::vector<StepId>& h) {
    std::pop_heap(h.begin(), h.end(), std::greater<StepId>());
    StepId s = h.back();
    h.pop_back();
    return s;
}
}  // namespace

Executor::Executor(const Schedule& schedule, net::Transport& transport, Buffers buffers, uint64_t seq, int window,
                   DeviceUse device, size_t done)
    : sched_(&schedule), transport_(transport), window_(window) {
    reset(schedule, buffers, seq, device, done);
}

void Executor::reset(const Schedule& schedule, Buffers buffers, uint64_t seq, DeviceUse device, size_t done) {
    abort();
    sched_ = &schedule;
    slots_ = transport_.slots();
    peer_memory_ = transport_.peer_memory();
    keyed_memory_ = transport_.keyed_memory();
    buffers_ = buffers;
    seq_ = seq;
    dev_ = device;
    completed_ = 0;
    finished_ = false;
    slots_released_ = false;
    final_mark_ = 0;
    ready_send_.clear();
    ready_recv_.clear();
    ready_local_.clear();
    ready_one_sided_.clear();
    awaiting_.clear();
    await_next_ = 0;
    publishing_.clear();
    claiming_.clear();
    releasing_.clear();
    final_copies_.clear();
    timed_ = false;
    if (!sched_->finalized()) fail(CHORUS_ERR_INTERNAL, "executor: schedule was not finalized");
    if ((dev_.on_device || dev_.gate) && !dev_.device)
        fail(CHORUS_ERR_INTERNAL, "executor: device work without a device");
    if (dev_.on_device && !dev_.direct && !dev_.staging)
        fail(CHORUS_ERR_INTERNAL, "executor: device buffers without staging buffers");
    if (sched_->uses_slots() && !slots_)
        fail(CHORUS_ERR_INTERNAL, "executor: a schedule that publishes on a transport without publish slots");
    if (sched_->uses_slots() && sched_->slot_bytes() > slots_->slot_bytes())
        fail(CHORUS_ERR_INTERNAL, "executor: a schedule that publishes ", sched_->slot_bytes(),
             " bytes on a transport whose slots hold ", slots_->slot_bytes());
    if (sched_->uses_slots() && dev_.on_device) {
        // Device kernels and copies read and write the slots directly.
        void* base = nullptr;
        size_t bytes = 0;
        slots_->slot_memory(&base, &bytes);
        dev_.device->register_host(base, bytes);
    }
    const auto& steps = sched_->steps();
    if (sched_->has_one_sided()) os_.assign(steps.size(), OneSided{});
    // Keyed access where cross-memory attach is not offered (the same on
    // every rank: both are decided at creation).
    keyed_.clear();
    if (sched_->has_one_sided() && !peer_memory_ && !keyed_memory_)
        fail(CHORUS_ERR_INTERNAL, "executor: one-sided steps on a transport that reaches no peer's memory");
    if (sched_->has_one_sided() && !peer_memory_ && keyed_memory_) keyed_.resize(steps.size());
    remaining_.resize(steps.size());
    completed_ = done;
    for (StepId s = 0; s < steps.size(); ++s) {
        remaining_[s] = sched_->ndeps(s);
        if (done)
            for (uint32_t i = 0; i < sched_->ndeps(s); ++i) remaining_[s] -= sched_->deps_of(s)[i] < done;
        if (s >= done && remaining_[s] == 0) make_ready(s);
    }
}

Executor::~Executor() {
    abort();
}

void Executor::abort() {
    for (auto& f : inflight_) transport_.cancel(f.handle);
    if (!inflight_.empty()) transport_.wait_cancelled();
    for (StepId s = 0; s < keyed_.size(); ++s) os_release(s);
    // Nothing queued on the device may still write into buffers that go
    // back to their pools.
    if ((dev_.on_device && !finished_) || queued_head_ < queued_.size()) dev_.device->drain();
    for (auto& f : inflight_) release_slot(f.slot);
    for (size_t i = queued_head_; i < queued_.size(); ++i) release_slot(queued_[i].slot);
    inflight_.clear();
    queued_.clear();
    queued_head_ = 0;
    sends_inflight_ = recvs_inflight_ = 0;
}

void Executor::release_slot(void* slot) {
    if (slot) dev_.staging->release(slot);
}

char* Executor::resolve(Region r) const {
    switch (r.buf) {
        case Buf::Send: return const_cast<char*>(static_cast<const char*>(buffers_.send)) + r.offset;
        case Buf::Recv: return static_cast<char*>(buffers_.recv) + r.offset;
        case Buf::Scratch: return static_cast<char*>(buffers_.scratch) + r.offset;
        case Buf::Slot: return slots_->slot(r.peer, buffers_.slot_op + r.round) + r.offset;
    }
    return nullptr;
}

void Executor::time_steps() {
    const size_t n = sched_->steps().size();
    const uint64_t now = ticks();
    ready_ticks_.assign(n, now);
    done_ticks_.assign(n, 0);
    for (size_t s = 0; s < n; ++s)
        if (s < completed_) done_ticks_[s] = now;  // run in place before
    timed_ = true;
}

void Executor::make_ready(StepId s) {
    if (timed_) ready_ticks_[s] = ticks();
    switch (sched_->steps()[s].kind) {
        case StepKind::Send: heap_push(ready_send_, s); break;
        case StepKind::Recv: heap_push(ready_recv_, s); break;
        case StepKind::Await: awaiting_.push_back(s); break;
        case StepKind::Publish: publishing_.push_back(s); break;
        case StepKind::Claim: claiming_.push_back(s); break;
        case StepKind::Release: releasing_.push_back(s); break;
        case StepKind::Expose:
        case StepKind::Get:
        case StepKind::Put: ready_one_sided_.push_back(s); break;
        default: ready_local_.push_back(s); break;
    }
}

void Executor::finish(StepId s) {
    ++completed_;
    if (timed_) done_ticks_[s] = ticks();
    const uint32_t* out = sched_->dependents_of(s);
    for (uint32_t i = 0, n = sched_->ndependents(s); i < n; ++i)
        if (--remaining_[out[i]] == 0) make_ready(out[i]);
}

// A local step's work: done at once on the CPU, or queued on the device
// (the caller then makes the mark).
void Executor::run_local(StepId s) {
    const Step& st = sched_->steps()[s];
    const bool dev = dev_.on_device;
    char* dst = resolve(st.dst);
    switch (st.kind) {
        case StepKind::Reduce:
            if (dev)
                dev_.device->reduce(sched_->dtype(), sched_->op(), dst, resolve(st.src), resolve(st.src2), st.count);
            else
                host_reduce(sched_->dtype(), sched_->op(), dst, resolve(st.src), resolve(st.src2), st.count);
            break;
        case StepKind::Copy: {
            char* src = resolve(st.src);
            if (dst == src) break;
            if (dev)
                dev_.device->copy(dst, src, st.bytes);
            else if (st.stream)
                host_copy_stream(dst, src, st.bytes);
            else
                host_copy(dst, src, st.bytes);
            break;
        }
        case StepKind::Divide:
            if (dev)
                dev_.device->divide(sched_->dtype(), dst, st.count, sched_->divisor());
            else
                host_divide(sched_->dtype(), dst, st.count, sched_->divisor());
            break;
        default: fail(CHORUS_ERR_INTERNAL, "executor: step ", s, " is not local");
    }
}

void Executor::drain_local() {
    if (!dev_.on_device) {
        while (!ready_local_.empty()) {
            StepId s = ready_local_.back();
            ready_local_.pop_back();
            run_local(s);
            finish(s);
        }
        return;
    }
    if (ready_local_.empty()) return;
    // One mark for everything queued now: the stream runs it in order.
    size_t first = queued_.size();
    for (StepId s : ready_local_) {
        try {
            run_local(s);
        } catch (const Error& e) {
            rethrow_with_context(s, e);
        }
        queued_.push_back({s, 0, Phase::Local, nullptr});
    }
    ready_local_.clear();
    uint64_t m = dev_.device->mark();
    for (size_t i = first; i < queued_.size(); ++i) queued_[i].mark = m;
}

void Executor::publish(StepId s) {
    const Step& st = sched_->steps()[s];
    char* dst = resolve(st.dst);
    // One piece, or the schedule's pieces (st.count of them).
    auto each_piece = [&](auto&& copy) {
        if (!st.count) {
            if (st.bytes) copy(dst, resolve(st.src), st.bytes);
            return;
        }
        for (const Schedule::SlotPiece& p : sched_->slot_pieces()) copy(dst + p.offset, resolve(p.src), p.bytes);
    };
    if (dev_.on_device && st.bytes) {
        // Published once the device has copied it in.
        each_piece([&](char* to, const char* from, size_t n) { dev_.device->copy(to, from, n); });
        queued_.push_back({s, dev_.device->mark(), Phase::Published, nullptr});
        return;
    }
    each_piece([](char* to, const char* from, size_t n) { host_copy(to, from, n); });
    slots_->publish(buffers_.slot_op + st.round);
    finish(s);
}

bool Executor::poll_slots() {
    bool moved = false;
    const auto& steps = sched_->steps();
    // Releases first: a peer's claim may wait for them.
    while (!releasing_.empty()) {
        StepId s = releasing_.back();
        releasing_.pop_back();
        slots_->slot_done(buffers_.slot_op + steps[s].round);
        finish(s);
        moved = true;
    }
    // Each waiting step whose condition holds now runs (`then`) and leaves
    // its list.
    auto take = [&](std::vector<StepId>& list, auto&& ready, auto&& then) {
        for (size_t i = 0; i < list.size();) {
            const StepId s = list[i];
            if (!ready(steps[s])) {
                ++i;
                continue;
            }
            list[i] = list.back();
            list.pop_back();
            then(s);
            moved = true;
        }
    };
    auto free = [&](const Step& st) { return slots_->slot_free(buffers_.slot_op + st.round); };
    take(claiming_, free, [&](StepId s) { finish(s); });
    take(publishing_, free, [&](StepId s) { publish(s); });
    // The awaits in turn from where the last turn stopped, up to the first
    // whose peer has not published: a turn that finds nothing new reads one
    // peer's flag, not every pending peer's (63 lines at 64 local ranks,
    // each written by another core), and every await is read again within
    // as many turns as there are awaits.
    for (size_t seen = 0, n = awaiting_.size(); seen < n && !awaiting_.empty(); ++seen) {
        if (await_next_ >= awaiting_.size()) await_next_ = 0;
        const StepId s = awaiting_[await_next_];
        if (!slots_->published(steps[s].peer, buffers_.slot_op + steps[s].round)) {
            ++await_next_;
            break;
        }
        awaiting_[await_next_] = awaiting_.back();
        awaiting_.pop_back();
        finish(s);
        moved = true;
    }
    return moved;
}

void Executor::post_send(StepId s, const void* src, void* slot, Part part) {
    const Step& st = sched_->steps()[s];
    net::Handle h = transport_.send(st.peer, net::make_tag(sched_->rank(), seq_, st.tag), src, st.bytes);
    if (!h) {
        release_slot(slot);
        if (part == Part::None) --sends_inflight_;
        done(s, part);
        return;
    }
    inflight_.push_back({s, h, slot, part, true});
}

void Executor::done(StepId s, Part part) {
    if (part == Part::None)
        finish(s);
    else
        os_done(s, part);
}

void Executor::post(StepId s) {
    const Step& st = sched_->steps()[s];
    const bool is_send = st.kind == StepKind::Send;
    ++(is_send ? sends_inflight_ : recvs_inflight_);
    transfer(s, Part::None, is_send, resolve(is_send ? st.src : st.dst));
}

void Executor::transfer(StepId s, Part part, bool is_send, char* buf) {
    const Step& st = sched_->steps()[s];
    bool staged = dev_.on_device && (!dev_.direct || st.bytes <= transport_.host_only_max());
    void* slot = nullptr;  // staging buffer, until something else holds it
    try {
        if (staged) slot = dev_.staging->acquire(st.bytes);
        if (is_send) {
            if (staged) {
                // Onto the wire once the device has copied it out.
                dev_.device->copy(slot, buf, st.bytes);
                queued_.push_back({s, dev_.device->mark(), Phase::StagedOut, slot, part});
            } else {
                post_send(s, buf, nullptr, part);
            }
            return;
        }
        net::Handle h = transport_.recv(st.peer, net::make_tag(st.peer, seq_, st.tag), staged ? slot : buf, st.bytes);
        InFlight f{s, h, slot, part, false, buf};
        if (h)
            inflight_.push_back(f);
        else
            transfer_done(f);
    } catch (const Error& e) {
        // The failing call took no ownership of the staging buffer.
        bool held = false;
        for (const auto& f : inflight_) held = held || f.slot == slot;
        for (size_t i = queued_head_; i < queued_.size(); ++i) held = held || queued_[i].slot == slot;
        if (!held) release_slot(slot);
        rethrow_with_context(s, e);
    }
}

// A transfer has left or arrived.
void Executor::transfer_done(const InFlight& f) {
    const Step& st = sched_->steps()[f.step];
    if (f.send) {
        if (f.part == Part::None) --sends_inflight_;
        release_slot(f.slot);
        done(f.step, f.part);
        return;
    }
    if (f.part == Part::None) --recvs_inflight_;
    if (!f.slot) {
        done(f.step, f.part);
        return;
    }
    dev_.device->copy(f.buf, f.slot, st.bytes);
    queued_.push_back({f.step, dev_.device->mark(), Phase::StagedIn, f.slot, f.part});
}

void Executor::queued_done(const Queued& q) {
    switch (q.phase) {
        case Phase::Local: done(q.step, q.part); break;
        case Phase::StagedOut: post_send(q.step, q.slot, q.slot, q.part); break;
        case Phase::StagedIn:
            release_slot(q.slot);
            done(q.step, q.part);
            break;
        case Phase::Published:
            slots_->publish(buffers_.slot_op + sched_->steps()[q.step].round);
            finish(q.step);
            break;
    }
}

bool Executor::progress() {
    if (finished_) return true;
    if (dev_.gate) {
        if (!dev_.device->done(dev_.gate)) return false;
        dev_.gate = 0;
    }
    if (final_mark_) {
        finished_ = dev_.device->done(final_mark_);
        return finished_;
    }
    transport_.progress();
    for (size_t i = 0; i < inflight_.size();) {
        InFlight f = inflight_[i];
        bool complete;
        try {
            complete = transport_.test(f.handle);
        } catch (const Error& e) {
            inflight_[i] = inflight_.back();
            inflight_.pop_back();
            release_slot(f.slot);
            rethrow_with_context(f.step, e);
        }
        if (!complete) {
            ++i;
            continue;
        }
        inflight_[i] = inflight_.back();
        inflight_.pop_back();
        try {
            transfer_done(f);
        } catch (const Error& e) {
            release_slot(f.slot);
            rethrow_with_context(f.step, e);
        }
    }
    while (queued_head_ < queued_.size() && dev_.device->done(queued_[queued_head_].mark)) {
        Queued q = queued_[queued_head_++];
        try {
            queued_done(q);
        } catch (const Error& e) {
            rethrow_with_context(q.step, e);
        }
    }
    if (queued_head_ == queued_.size()) {
        queued_.clear();
        queued_head_ = 0;
    }
    // Local work first: it may make transfers ready. Receives are posted
    // before sends so that data arriving finds its buffer waiting.
    for (;;) {
        drain_local();
        bool posted =
            (!publishing_.empty() || !awaiting_.empty() || !claiming_.empty() || !releasing_.empty()) && poll_slots();
        while (!ready_one_sided_.empty()) {
            StepId s = ready_one_sided_.back();
            ready_one_sided_.pop_back();
            try {
                os_start(s);
            } catch (const Error& e) {
                rethrow_with_context(s, e);
            }
            posted = true;
        }
        while (!ready_recv_.empty() && may_post(ready_recv_.front(), StepKind::Recv, recvs_inflight_)) {
            post(heap_pop(ready_recv_));
            posted = true;
        }
        while (!ready_send_.empty() && may_post(ready_send_.front(), StepKind::Send, sends_inflight_)) {
            post(heap_pop(ready_send_));
            posted = true;
        }
        if (!posted && ready_local_.empty() && ready_one_sided_.empty()) break;
    }
    if (completed_ < sched_->steps().size()) return false;
    // Every read of the slots is done: they may be reused.
    if (sched_->uses_slots() && !sched_->releases_rounds() && !slots_released_) {
        slots_released_ = true;
        slots_->slot_done(buffers_.slot_op);
    }
    if (final_copies_.empty()) {
        finished_ = true;
        return true;
    }
    for (const auto& c : final_copies_) dev_.device->copy(c.dst, c.src, c.bytes);
    final_mark_ = dev_.device->mark();
    finished_ = dev_.device->done(final_mark_);
    return finished_;
}

// Within the window, anything goes. Beyond it, a transfer that comes earlier
// in the schedule than every transfer of its kind in flight still goes: the
// window may have filled with later transfers that were ready first, and if
// the earliest one had to wait for them, two ranks could each wait on the
// other (a send window full of messages the peer cannot receive yet, while
// the peer waits for a message still queued behind them).
bool Executor::may_post(StepId s, StepKind kind, int inflight) const {
    if (inflight < window_) return true;
    for (const auto& f : inflight_)
        if (f.step < s && sched_->steps()[f.step].kind == kind) return false;
    // Sends still being staged are in flight too.
    if (kind == StepKind::Send)
        for (size_t i = queued_head_; i < queued_.size(); ++i)
            if (queued_[i].phase == Phase::StagedOut && queued_[i].step < s) return false;
    return true;
}

}  // namespace chorus
