#include "core/p2p.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "reduce/datatype.h"

namespace chorus {

namespace {
using Clock = std::chrono::steady_clock;

// Wait for queued device work up to `m` (a send's copy out of the device:
// the send is complete, and its buffer free, only once it is done).
void wait_mark(Device& d, uint64_t m) {
    while (!d.done(m)) {
    }
}
}  // namespace

PointToPoint::PointToPoint(net::Transport& transport, Device& device)
    : transport_(transport), device_(device), rank_(transport.rank()) {}

P2pRequest* PointToPoint::send(const void* buf, size_t count, chorus_datatype_t dtype, size_t bytes, MemKind kind,
                               int peer, int tag) {
    Outgoing o;
    o.peer = peer;
    o.env = Envelope{tag, bytes};
    if (bytes) {
        if (host_side(kind)) {
            o.copy.reset(new char[bytes]);
            std::memcpy(o.copy.get(), buf, bytes);
        } else {
            o.pinned = device_.alloc_pinned(bytes);
            try {
                device_.copy(o.pinned, buf, bytes);
                wait_mark(device_, device_.mark());
            } catch (...) {
                device_.drain();
                device_.free_pinned(o.pinned);
                throw;
            }
        }
    }
    const char* data = o.pinned ? static_cast<const char*>(o.pinned) : o.copy.get();
    o.n = sent_[peer]++;
    if (peer == rank_) {
        // To itself: the message is announced at once, its data along.
        Announced a{o.n, tag, bytes, nullptr};
        if (o.pinned) {
            a.local.reset(new char[bytes]);
            std::memcpy(a.local.get(), o.pinned, bytes);
            device_.free_pinned(o.pinned);
        } else {
            a.local = std::move(o.copy);
        }
        arrived(peer, inboxes_[peer], std::move(a));
    } else {
        o.since = Clock::now();
        out_.push_back(std::move(o));
        Outgoing& q = out_.back();
        try {
            q.env_h = transport_.send(peer, p2p_tag(rank_, false, q.n), &q.env, sizeof q.env);
            if (bytes) q.data_h = transport_.send(peer, p2p_tag(rank_, true, q.n), data, bytes);
        } catch (const Error& e) {
            peer_failed(peer, e.code(), e.what());
            throw;
        }
        if (!q.env_h && !q.data_h) {
            if (q.pinned) device_.free_pinned(q.pinned);
            out_.pop_back();
        }
    }
    P2pRequest* r = make(true, count, dtype, bytes, kind, peer, tag);
    r->finished = true;
    return r;
}

P2pRequest* PointToPoint::recv(void* buf, size_t count, chorus_datatype_t dtype, size_t bytes, MemKind kind, int peer,
                               int tag) {
    P2pRequest* r = make(false, count, dtype, bytes, kind, peer, tag);
    r->user = buf;
    ++waiting_;
    Inbox& in = inboxes_[peer];
    auto it = std::find_if(in.announced.begin(), in.announced.end(), [&](const Announced& a) { return a.tag == tag; });
    try {
        if (it != in.announced.end()) {
            Announced a = std::move(*it);
            in.announced.erase(it);
            take(r, a);
        } else {
            in.waiting.push_back(r);
            arm(peer, in);
        }
    } catch (const Error& e) {
        // Each receive from the peer fails with the reason (described).
        peer_failed(peer, e.code(), e.what());
        end(r, e.code(), e.what());
        release(r);
        throw;
    } catch (...) {
        end(r, CHORUS_ERR_INTERNAL, "could not start");
        release(r);
        throw;
    }
    return r;
}

P2pRequest* PointToPoint::make(bool is_send, size_t count, chorus_datatype_t dtype, size_t bytes, MemKind kind,
                               int peer, int tag) {
    std::unique_ptr<P2pRequest> r;
    if (spare_.empty()) {
        r = std::make_unique<P2pRequest>();
    } else {
        r = std::move(spare_.back());
        spare_.pop_back();
    }
    *r = P2pRequest{};
    r->is_send = is_send;
    r->peer = peer;
    r->tag = tag;
    r->bytes = bytes;
    r->count = count;
    r->dtype = dtype;
    r->kind = kind;
    r->since = Clock::now();
    requests_.push_back(std::move(r));
    return requests_.back().get();
}

void PointToPoint::release(P2pRequest* r) {
    for (size_t i = 0; i < requests_.size(); ++i) {
        if (requests_[i].get() != r) continue;
        std::unique_ptr<P2pRequest> done = std::move(requests_[i]);
        requests_[i] = std::move(requests_.back());
        requests_.pop_back();
        if (spare_.size() < 16) spare_.push_back(std::move(done));
        return;
    }
}

void PointToPoint::arm(int peer, Inbox& in) {
    // Envelopes that arrive at once are handled at once; the next is asked
    // for while a receive still waits for one.
    while (!in.armed && !in.waiting.empty()) {
        in.posted = transport_.recv(peer, p2p_tag(peer, false, in.next), &in.env, sizeof in.env);
        if (in.posted) {
            in.armed = true;
            return;
        }
        arrived(peer, in, Announced{in.next++, static_cast<int>(in.env.tag), in.env.bytes, nullptr});
    }
}

void PointToPoint::arrived(int peer, Inbox& in, Announced a) {
    auto it = std::find_if(in.waiting.begin(), in.waiting.end(), [&](P2pRequest* r) { return r->tag == a.tag; });
    if (it == in.waiting.end()) {
        in.announced.push_back(std::move(a));
        return;
    }
    P2pRequest* r = *it;
    in.waiting.erase(it);
    (void)peer;
    take(r, a);
}

void PointToPoint::take(P2pRequest* r, Announced& a) {
    r->since = Clock::now();
    if (a.bytes != r->bytes) {
        // Finished first: a failure to drop the data is the peer's, not this receive's.
        finish(r, CHORUS_ERR_MISMATCH,
               cat(describe(*r), ": the matching message is ", a.bytes, " bytes, the receive ", r->bytes,
                   " bytes; sizes must agree (the message was dropped)"));
        if (!a.local && a.bytes) {
            Drop d{r->peer, std::unique_ptr<char[]>(new char[a.bytes]), nullptr};
            d.h = transport_.recv(r->peer, p2p_tag(r->peer, true, a.n), d.buf.get(), a.bytes);
            if (d.h) drops_.push_back(std::move(d));
        }
        return;
    }
    receiving_.push_back(r);  // from here on, a failure finds it there
    r->staging = host_side(r->kind) || !r->bytes ? nullptr : device_.alloc_pinned(r->bytes);
    void* dst = r->staging ? r->staging : r->user;
    if (a.local) {
        std::memcpy(dst, a.local.get(), a.bytes);
        landed(r);
    } else if (a.bytes) {
        r->data = transport_.recv(r->peer, p2p_tag(r->peer, true, a.n), dst, a.bytes);
        if (!r->data) landed(r);
    } else {
        landed(r);
    }
}

void PointToPoint::landed(P2pRequest* r) {
    r->data = nullptr;
    r->since = Clock::now();
    if (r->staging) {
        device_.copy(r->user, r->staging, r->bytes);
        r->mark = device_.mark();
    }
}

void PointToPoint::finish(P2pRequest* r, chorus_result_t code, const std::string& why) {
    if (r->finished) return;
    r->finished = true;
    r->result = code;
    r->error = why;
    if (r->staging) {
        if (r->mark || code != CHORUS_SUCCESS) device_.drain();
        device_.free_pinned(r->staging);
        r->staging = nullptr;
    }
    receiving_.erase(std::remove(receiving_.begin(), receiving_.end(), r), receiving_.end());
    --waiting_;
}

bool PointToPoint::progress() {
    if (!busy()) return false;
    bool moved;
    try {
        moved = transport_.progress();
    } catch (const Error& e) {
        peer_failed(-1, e.code(), cat("point-to-point on rank ", rank_, ": ", e.what()));
        return true;
    }
    for (auto it = out_.begin(); it != out_.end();) {
        try {
            if (it->env_h && transport_.test(it->env_h)) it->env_h = nullptr, moved = true;
            if (!it->env_h && it->data_h && transport_.test(it->data_h)) it->data_h = nullptr, moved = true;
        } catch (const Error& e) {
            // The handle that threw is released; the others are cancelled.
            if (it->env_h && it->data_h)
                it->env_h = nullptr;
            else
                it->env_h = it->data_h = nullptr;
            const int peer = it->peer;
            peer_failed(peer, e.code(),
                        cat("send to rank ", peer, " (tag ", it->env.tag, ", ", it->env.bytes, " bytes) on rank ",
                            rank_, ": ", e.what()));
            return true;
        }
        if (it->env_h || it->data_h) {
            ++it;
            continue;
        }
        if (it->pinned) device_.free_pinned(it->pinned);
        it = out_.erase(it);
    }
    for (auto& [peer, in] : inboxes_) {
        if (!in.armed) continue;
        try {
            if (!transport_.test(in.posted)) continue;
            moved = true;
            in.armed = false;
            in.posted = nullptr;
            arrived(peer, in, Announced{in.next++, static_cast<int>(in.env.tag), in.env.bytes, nullptr});
            arm(peer, in);
        } catch (const Error& e) {
            in.armed = false;
            in.posted = nullptr;
            peer_failed(peer, e.code(), e.what());
            return true;
        }
    }
    for (size_t i = 0; i < receiving_.size();) {
        P2pRequest* r = receiving_[i];
        try {
            if (r->data && transport_.test(r->data)) {
                moved = true;
                landed(r);
            }
        } catch (const Error& e) {
            r->data = nullptr;
            peer_failed(r->peer, e.code(), e.what());
            return true;
        }
        // Done once the data is in place and the transport owes the peer
        // nothing more (an acknowledgement its send waits for).
        if (!r->data && (!r->mark || device_.done(r->mark)) && transport_.settled()) {
            finish(r);
            moved = true;
            continue;
        }
        ++i;
    }
    for (auto it = drops_.begin(); it != drops_.end();) {
        bool done;
        try {
            done = transport_.test(it->h);
        } catch (const Error&) {
            done = true;  // the peer is gone; there is nothing to drop
        }
        it = done ? drops_.erase(it) : std::next(it);
    }
    return moved;
}

bool PointToPoint::take_failure(chorus_result_t* code, std::string* why) {
    if (failure_ == CHORUS_SUCCESS) return false;
    *code = failure_;
    *why = failure_why_;
    failure_ = CHORUS_SUCCESS;
    failure_why_.clear();
    return true;
}

void PointToPoint::record(chorus_result_t code, const std::string& why) {
    if (failure_ != CHORUS_SUCCESS) return;
    failure_ = code;
    failure_why_ = why;
}

void PointToPoint::peer_failed(int peer, chorus_result_t code, const std::string& why) {
    record(code, why);
    log(LogLevel::Error, rank_, why);
    for (auto it = out_.begin(); it != out_.end();) {
        if (peer >= 0 && it->peer != peer) {
            ++it;
            continue;
        }
        if (it->env_h) transport_.cancel(it->env_h);
        if (it->data_h) transport_.cancel(it->data_h);
        if (it->pinned) device_.free_pinned(it->pinned);
        it = out_.erase(it);
    }
    for (auto it = drops_.begin(); it != drops_.end();) {
        const bool with = peer < 0 || it->peer == peer;
        if (with) transport_.cancel(it->h);
        it = with ? drops_.erase(it) : std::next(it);
    }
    fail_receives(peer, code, why);
    transport_.wait_cancelled();
}

void PointToPoint::fail_receives(int peer, chorus_result_t code, const std::string& why) {
    std::vector<P2pRequest*> ended;
    for (auto& [from, in] : inboxes_) {
        if (peer >= 0 && from != peer) continue;
        ended.insert(ended.end(), in.waiting.begin(), in.waiting.end());
        in.waiting.clear();
        if (in.armed) {
            transport_.cancel(in.posted);
            in.armed = false;
            in.posted = nullptr;
        }
    }
    for (P2pRequest* r : receiving_) {
        if (peer >= 0 && r->peer != peer) continue;
        if (r->data) transport_.cancel(r->data);
        r->data = nullptr;
        ended.push_back(r);
    }
    if (ended.empty()) return;
    // Nothing writes into the buffers once the receives are finished.
    transport_.wait_cancelled();
    for (P2pRequest* r : ended) finish(r, code, cat(describe(*r), ": ", why));
}

void PointToPoint::end(P2pRequest* r, chorus_result_t code, const std::string& why) {
    if (r->finished) return;
    Inbox& in = inboxes_[r->peer];
    in.waiting.erase(std::remove(in.waiting.begin(), in.waiting.end(), r), in.waiting.end());
    if (r->data) {
        transport_.cancel(r->data);
        r->data = nullptr;
        transport_.wait_cancelled();
    }
    finish(r, code, cat(describe(*r), ": ", why));
}

void PointToPoint::abandon() {
    for (Outgoing& o : out_) {
        if (o.env_h) transport_.cancel(o.env_h);
        if (o.data_h) transport_.cancel(o.data_h);
    }
    for (Drop& d : drops_) transport_.cancel(d.h);
    fail_receives(-1, CHORUS_ERR_COMM_FAILED, "abandoned");
    transport_.wait_cancelled();
    device_.drain();
    for (Outgoing& o : out_)
        if (o.pinned) device_.free_pinned(o.pinned);
    out_.clear();
    drops_.clear();
}

void PointToPoint::moved() {
    const Clock::time_point now = Clock::now();
    for (auto& r : requests_)
        if (!r->finished) r->since = now;
    for (Outgoing& o : out_) o.since = now;
}

void PointToPoint::check(uint64_t timeout_ms, uint64_t warn_s, bool sends, const std::string& where) {
    if (!busy()) return;
    const Clock::time_point now = Clock::now();
    auto idle_ms = [&](Clock::time_point since) {
        return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count());
    };
    bool stalled = false;
    for (auto& r : requests_) stalled = stalled || (!r->finished && idle_ms(r->since) > 250);
    for (Outgoing& o : out_) stalled = stalled || idle_ms(o.since) > 250;
    if (stalled && now - last_peer_check_ > std::chrono::milliseconds(250)) {
        last_peer_check_ = now;
        transport_.check_peers();
    }
    const std::string limits =
        cat("CHORUS_HANG_WARN_S=", warn_s,
            timeout_ms ? cat(", CHORUS_TIMEOUT_MS=", timeout_ms) : std::string(", no CHORUS_TIMEOUT_MS"));
    for (size_t i = 0; i < requests_.size(); ++i) {
        P2pRequest& r = *requests_[i];
        if (r.finished) continue;
        const uint64_t idle = idle_ms(r.since);
        const bool matched = std::find(receiving_.begin(), receiving_.end(), &r) != receiving_.end();
        const std::string state = matched ? "its data is on the way" : "no message with its tag has arrived";
        if (warn_s && !r.warned && idle >= warn_s * 1000) {
            r.warned = true;
            log(LogLevel::Warn, rank_, describe(r), " on ", where, " has made no progress for ", idle / 1000,
                " s; it waits for rank ", r.peer, " (", state, "). Still waiting (", limits, ").");
        }
        if (timeout_ms && idle >= timeout_ms) {
            std::string why = cat("no progress for ", idle, " ms (CHORUS_TIMEOUT_MS=", timeout_ms, "); ", state);
            record(CHORUS_ERR_TIMEOUT, cat(describe(r), " on ", where, ": ", why));
            end(&r, CHORUS_ERR_TIMEOUT, why);
        }
    }
    if (!sends) return;
    for (auto it = out_.begin(); it != out_.end(); ++it) {
        const uint64_t idle = idle_ms(it->since);
        if (warn_s && !it->warned && idle >= warn_s * 1000) {
            it->warned = true;
            log(LogLevel::Warn, rank_, "destroying ", where, " waits for the send to rank ", it->peer, " (tag ",
                it->env.tag, ", ", it->env.bytes, " bytes) to be received; no progress for ", idle / 1000,
                " s. Still waiting (", limits, ").");
        }
        if (!timeout_ms || idle < timeout_ms) continue;
        const std::string why =
            cat("send to rank ", it->peer, " (tag ", it->env.tag, ", ", it->env.bytes, " bytes) on ", where,
                ": not received after ", idle, " ms (CHORUS_TIMEOUT_MS=", timeout_ms, ")");
        peer_failed(it->peer, CHORUS_ERR_TIMEOUT, why);
        return;  // peer_failed changed the list
    }
}

std::string PointToPoint::describe(const P2pRequest& r) const {
    return cat(r.is_send ? "send to" : "receive from", " rank ", r.peer, " (tag ", r.tag, ", ", r.count, " x ",
               datatype_name(r.dtype), ") on rank ", rank_);
}

}  // namespace chorus
