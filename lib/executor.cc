#include "executor.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "host_reducer.h"
#include "status.h"

namespace chorus {

static_assert(kStepTagBits == net::kTagStepBits, "schedule tags must fit the wire tag");

namespace {
const char* kind_name(StepKind k) {
    switch (k) {
        case StepKind::Send: return "send to";
        case StepKind::Recv: return "recv from";
        case StepKind::Reduce: return "reduce";
        case StepKind::Copy: return "copy";
        case StepKind::Divide: return "divide";
    }
    return "?";
}
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

Executor::Executor(const Schedule& schedule, net::Transport& transport, Buffers buffers, uint64_t seq,
                   int window)
    : schedule_(schedule), transport_(transport), buffers_(buffers), seq_(seq), window_(window) {
    if (!schedule_.finalized()) fail(CHORUS_ERR_INTERNAL, "executor: schedule was not finalized");
    const auto& steps = schedule_.steps();
    remaining_.resize(steps.size());
    for (StepId s = 0; s < steps.size(); ++s) {
        remaining_[s] = schedule_.ndeps(s);
        if (remaining_[s] == 0) make_ready(s);
    }
}

Executor::~Executor() { abort(); }

void Executor::abort() {
    for (auto& f : inflight_) transport_.cancel(f.handle);
    inflight_.clear();
    sends_inflight_ = recvs_inflight_ = 0;
}

char* Executor::resolve(Region r) const {
    switch (r.buf) {
        case Buf::Send: return const_cast<char*>(static_cast<const char*>(buffers_.send)) + r.offset;
        case Buf::Recv: return static_cast<char*>(buffers_.recv) + r.offset;
        case Buf::Scratch: return static_cast<char*>(buffers_.scratch) + r.offset;
    }
    return nullptr;
}

void Executor::make_ready(StepId s) {
    switch (schedule_.steps()[s].kind) {
        case StepKind::Send: heap_push(ready_send_, s); break;
        case StepKind::Recv: heap_push(ready_recv_, s); break;
        default: ready_local_.push_back(s); break;
    }
}

void Executor::finish(StepId s) {
    ++completed_;
    const uint32_t* out = schedule_.dependents_of(s);
    for (uint32_t i = 0, n = schedule_.ndependents(s); i < n; ++i)
        if (--remaining_[out[i]] == 0) make_ready(out[i]);
}

void Executor::run_local(StepId s) {
    const Step& st = schedule_.steps()[s];
    switch (st.kind) {
        case StepKind::Reduce:
            host_reduce(schedule_.dtype(), schedule_.op(), resolve(st.dst), resolve(st.src), resolve(st.src2),
                        st.count);
            break;
        case StepKind::Copy: {
            char *dst = resolve(st.dst), *src = resolve(st.src);
            if (dst != src) std::memcpy(dst, src, st.bytes);
            break;
        }
        case StepKind::Divide:
            host_divide(schedule_.dtype(), resolve(st.dst), st.count, schedule_.divisor());
            break;
        default:
            fail(CHORUS_ERR_INTERNAL, "executor: step ", s, " is not local");
    }
    finish(s);
}

void Executor::drain_local() {
    while (!ready_local_.empty()) {
        StepId s = ready_local_.back();
        ready_local_.pop_back();
        run_local(s);
    }
}

void Executor::rethrow_with_context(StepId s, const Error& e) const {
    const Step& st = schedule_.steps()[s];
    throw Error(e.code(), cat(e.what(), " [operation #", seq_, ", step ", s, ": ", kind_name(st.kind), " rank ",
                              st.peer, ", ", st.bytes, " bytes, tag ", st.tag, "]"));
}

void Executor::post(StepId s) {
    const Step& st = schedule_.steps()[s];
    net::Tag tag;
    net::Handle h;
    try {
        if (st.kind == StepKind::Send) {
            tag = net::make_tag(schedule_.rank(), seq_, st.tag);
            h = transport_.send(st.peer, tag, resolve(st.src), st.bytes);
        } else {
            tag = net::make_tag(st.peer, seq_, st.tag);
            h = transport_.recv(st.peer, tag, resolve(st.dst), st.bytes);
        }
    } catch (const Error& e) {
        rethrow_with_context(s, e);
    }
    if (!h) {
        finish(s);
        return;
    }
    inflight_.push_back({s, h});
    (st.kind == StepKind::Send ? sends_inflight_ : recvs_inflight_)++;
}

bool Executor::progress() {
    if (done()) return true;
    transport_.progress();
    for (size_t i = 0; i < inflight_.size();) {
        InFlight f = inflight_[i];
        bool complete;
        try {
            complete = transport_.test(f.handle);
        } catch (const Error& e) {
            inflight_[i] = inflight_.back();
            inflight_.pop_back();
            rethrow_with_context(f.step, e);
        }
        if (!complete) {
            ++i;
            continue;
        }
        inflight_[i] = inflight_.back();
        inflight_.pop_back();
        (schedule_.steps()[f.step].kind == StepKind::Send ? sends_inflight_ : recvs_inflight_)--;
        finish(f.step);
    }
    // Local work first: it may make transfers ready. Receives are posted
    // before sends so that data arriving finds its buffer waiting.
    for (;;) {
        drain_local();
        bool posted = false;
        while (!ready_recv_.empty() && may_post(ready_recv_.front(), StepKind::Recv, recvs_inflight_)) {
            post(heap_pop(ready_recv_));
            posted = true;
        }
        while (!ready_send_.empty() && may_post(ready_send_.front(), StepKind::Send, sends_inflight_)) {
            post(heap_pop(ready_send_));
            posted = true;
        }
        if (!posted && ready_local_.empty()) break;
    }
    return done();
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
        if (f.step < s && schedule_.steps()[f.step].kind == kind) return false;
    return true;
}

std::string Executor::pending_summary() const {
    std::string out;
    int shown = 0;
    for (const auto& f : inflight_) {
        if (shown++ == 8) {
            out += cat(", ... (", inflight_.size(), " in all)");
            break;
        }
        const Step& st = schedule_.steps()[f.step];
        out += cat(out.empty() ? "" : ", ", kind_name(st.kind), " rank ", st.peer, " (step ", f.step, ")");
    }
    if (out.empty()) out = "no transfer in flight";
    return cat(out, "; ", completed_, " of ", schedule_.steps().size(), " steps done");
}

}  // namespace chorus
