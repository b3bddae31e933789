#include "net/shm/shm_transport.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "net/host.h"
#include "net/shm/cma.h"
#include "net/shm/shm_request.h"

namespace chorus::net {

static_assert(Transport::kSlots == shm::kPubSlots, "the transport's slot count is the segment's");

ShmTransport::ShmTransport(std::unique_ptr<Transport> inner, size_t eager_bytes, std::vector<int> local_index,
                           void* segment, std::vector<int> pids, size_t mapped_bytes)
    : inner_(std::move(inner)), eager_(eager_bytes < kMaxEager ? eager_bytes : kMaxEager), mapped_bytes_(mapped_bytes) {
    const int n = inner_->size(), me = inner_->rank();
    if (static_cast<int>(local_index.size()) != n)
        fail(CHORUS_ERR_INTERNAL, "shm transport: ", n, " ranks but ", local_index.size(), " local indices");
    if (local_index[me] < 0) fail(CHORUS_ERR_INTERNAL, "shm transport: this rank is not local to itself");
    peers_.resize(n);
    for (int r = 0; r < n; ++r) {
        Peer& p = peers_[r];
        p.local = local_index[r];
        if (p.local < 0) continue;
        p.pid = pids.empty() ? 0 : pids[r];
        if (static_cast<int>(local_ranks_.size()) <= p.local) local_ranks_.resize(p.local + 1, -1);
        local_ranks_[p.local] = r;
    }
    seg_ = shm::Segment(segment, static_cast<int>(local_ranks_.size()));
    free_acks_.reserve(shm::kAcks);
    for (uint32_t k = shm::kAcks; k-- > 0;) free_acks_.push_back(k);
    me_local_ = local_index[me];
    all_local_ = static_cast<int>(local_ranks_.size()) == n;
    me_ = me;
    if (all_local_)
        for (int r = 0; r < n; ++r) areas_.push_back(seg_.slots(peers_[r].local));
}

ShmTransport::~ShmTransport() {
    for (auto& p : peers_) {
        for (Request* r : p.waiting_sends) delete r;
        for (Request* r : p.posted) delete r;
    }
    for (Request* r : spare_) delete r;
    // The inner transport goes first (its teardown keeps progressing); the
    // segment after it.
    inner_.reset();
    if (mapped_bytes_) munmap(seg_.base(), mapped_bytes_);
}

ShmTransport::Request* ShmTransport::new_request() {
    if (spare_.empty()) return new Request{};
    Request* r = spare_.back();
    spare_.pop_back();
    return r;
}

void ShmTransport::free_request(Request* r) {
    if (spare_.size() < 256)
        spare_.push_back(r);
    else
        delete r;
}

ShmTransport::Message& ShmTransport::new_message(Peer& p, Tag tag, size_t total) {
    if (spare_messages_.empty())
        p.unexpected.emplace_back();
    else
        p.unexpected.splice(p.unexpected.end(), spare_messages_, spare_messages_.begin());
    Message& m = p.unexpected.back();
    m.tag = tag;
    m.data.resize(total);
    m.complete = false;
    m.waiter = nullptr;
    m.rendezvous = false;
    m.total = total;
    return m;
}

void ShmTransport::drop_message(Peer& p, std::list<Message>::iterator it) {
    constexpr size_t kKeepBytes = 64 * 1024, kKeepMessages = 64;
    if (it->data.capacity() <= kKeepBytes && spare_messages_.size() < kKeepMessages)
        spare_messages_.splice(spare_messages_.end(), p.unexpected, it);
    else
        p.unexpected.erase(it);
}

Handle ShmTransport::wrap(Handle inner, int peer) {
    if (!inner) return nullptr;
    Request* r = new_request();
    *r = Request{Request::Kind::Inner, false, peer, 0, nullptr, nullptr, 0, 0, inner};
    ++inner_pending_;
    return r;
}

void ShmTransport::peer_failed() const {
    fail(CHORUS_ERR_PEER_FAILED, "shared memory: rank ", dead_, " (pid ", peers_[dead_].pid, ") died");
}

shm::Cell* ShmTransport::claim(int peer, uint64_t* position) {
    const int dst = peers_[peer].local;
    shm::QueueHeader* q = seg_.queue(dst);
    uint64_t pos = q->tail.load(std::memory_order_relaxed);
    for (;;) {
        shm::Cell* c = seg_.cell(dst, pos);
        auto dif = static_cast<int64_t>(c->turn.load(std::memory_order_acquire) - pos);
        if (dif == 0) {
            if (q->tail.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                *position = pos;
                return c;
            }
        } else if (dif < 0) {
            return nullptr;  // full: the receiver has not taken this cell yet
        } else {
            pos = q->tail.load(std::memory_order_relaxed);
        }
    }
}

bool ShmTransport::put(int peer, Tag tag, const void* buf, size_t bytes, size_t* sent) {
    do {
        uint64_t pos;
        shm::Cell* c = claim(peer, &pos);
        if (!c) return false;
        size_t n = std::min(shm::kCellPayload, bytes - *sent);
        if (n) std::memcpy(shm::payload(c), static_cast<const char*>(buf) + *sent, n);
        c->source = static_cast<uint32_t>(inner_->rank());
        c->bytes = static_cast<uint32_t>(n);
        c->tag = tag;
        c->total = bytes;
        c->turn.store(pos + 1, std::memory_order_release);
        *sent += n;
    } while (*sent < bytes);
    return true;
}

bool ShmTransport::put_rendezvous(Request* r) {
    if (r->rts.ack == kNoAck) {
        if (free_acks_.empty()) return false;  // until a rendezvous send completes
        r->rts.ack = free_acks_.back();
        free_acks_.pop_back();
    }
    uint64_t pos;
    shm::Cell* c = claim(r->peer, &pos);
    if (!c) return false;
    std::memcpy(shm::payload(c), &r->rts, sizeof r->rts);
    c->source = static_cast<uint32_t>(me_);
    c->bytes = shm::kRendezvousBit | static_cast<uint32_t>(sizeof r->rts);
    c->tag = r->tag;
    c->total = r->bytes;
    c->turn.store(pos + 1, std::memory_order_release);
    r->put = true;
    return true;
}

void ShmTransport::acknowledge(int peer, const shm::Rendezvous& rts) {
    seg_.acks(peers_[peer].local)->word[rts.ack].store(rts.token, std::memory_order_release);
}

void ShmTransport::take_rendezvous(int peer, const shm::Rendezvous& rts, void* dst, size_t bytes) {
    if (dead_ >= 0) peer_failed();
    cma::read(peers_[peer].pid, peer, dst, rts.address, bytes);
    acknowledge(peer, rts);
}

Handle ShmTransport::send(int peer, Tag tag, const void* buf, size_t bytes) {
    if (!small(peer, bytes)) {
        if (by_rendezvous(peer, bytes)) {
            if (dead_ >= 0) peer_failed();
            Peer& p = peers_[peer];
            Request* r = new_request();
            *r = Request{Request::Kind::Send, false, peer, tag, buf, nullptr, bytes, 0, nullptr};
            r->rendezvous = true;
            r->rts = shm::Rendezvous{reinterpret_cast<uint64_t>(buf), next_token_++, kNoAck};
            if (p.waiting_sends.empty() && put_rendezvous(r)) return r;
            if (p.waiting_sends.empty()) blocked_.push_back(peer);
            p.waiting_sends.push_back(r);
            return r;
        }
        inner_used_ = true;  // even done at once, its bytes may wait to leave
        return wrap(inner_->send(peer, tag, buf, bytes), peer);
    }
    if (dead_ >= 0) peer_failed();
    Peer& p = peers_[peer];
    size_t sent = 0;
    if (p.waiting_sends.empty() && put(peer, tag, buf, bytes, &sent)) return nullptr;
    Request* r = new_request();
    *r = Request{Request::Kind::Send, false, peer, tag, buf, nullptr, bytes, sent, nullptr};  // got: bytes sent
    if (p.waiting_sends.empty()) blocked_.push_back(peer);
    p.waiting_sends.push_back(r);
    return r;
}

bool ShmTransport::push_waiting() {
    bool moved = false;
    for (size_t i = 0; i < blocked_.size();) {
        Peer& p = peers_[blocked_[i]];
        while (!p.waiting_sends.empty()) {
            Request* r = p.waiting_sends.front();
            if (r->rendezvous) {
                if (!put_rendezvous(r)) break;
                moved = true;
                p.waiting_sends.pop_front();
                continue;
            }
            size_t before = r->got;
            bool all = put(blocked_[i], r->tag, r->src, r->bytes, &r->got);
            moved = moved || r->got != before;
            if (!all) break;
            r->done = true;
            p.waiting_sends.pop_front();
        }
        if (p.waiting_sends.empty()) {
            blocked_[i] = blocked_.back();
            blocked_.pop_back();
        } else {
            ++i;
        }
    }
    return moved;
}

bool ShmTransport::progress() {
    // The inner transport's progress costs more than a look at the queue:
    // made when it has transfers of ours, and now and then regardless.
    bool moved = false;
    reads_left_ = 1;
    if (inner_pending_ > 0 || (++calls_ & 63) == 0) moved = inner_->progress();
    moved = poll_queue() || moved;
    if (!blocked_.empty()) moved = push_waiting() || moved;
    return moved;
}

bool ShmTransport::test(Handle handle) {
    if (!handle) return true;
    auto* r = static_cast<Request*>(handle);
    if (r->kind == Request::Kind::Inner) {
        bool done;
        try {
            done = inner_->test(r->inner);
        } catch (...) {
            --inner_pending_;
            free_request(r);  // the inner transport released its handle
            throw;
        }
        if (done) {
            --inner_pending_;
            // A receive completed here may owe its sender an acknowledgement
            // (settled() sees to it).
            inner_used_ = true;
            free_request(r);
        }
        return done;
    }
    if (r->rendezvous && !r->done) {
        if (r->kind == Request::Kind::Recv) {
            if (reads_left_ <= 0) return false;
            --reads_left_;
            try {
                take_rendezvous(r->peer, r->rts, r->dst, r->bytes);
            } catch (...) {
                free_request(r);
                throw;
            }
            r->got = r->bytes;
            r->done = true;
        } else if (r->put && seg_.acks(me_local_)->word[r->rts.ack].load(std::memory_order_acquire) == r->rts.token) {
            r->done = true;
            free_acks_.push_back(static_cast<uint32_t>(r->rts.ack));
        }
    }
    if (!r->done) {
        if (dead_ < 0) return false;
        cancel(handle);
        peer_failed();
    }

    int peer = r->peer;
    size_t got = r->got, expected = r->bytes;
    bool is_recv = r->kind == Request::Kind::Recv;
    free_request(r);
    if (is_recv && got != expected)
        fail(CHORUS_ERR_MISMATCH, "shared memory: message from rank ", peer, " has ", got, " bytes, expected ",
             expected);
    return true;
}

void ShmTransport::cancel(Handle handle) {
    if (!handle) return;
    auto* r = static_cast<Request*>(handle);
    Peer& p = peers_[r->peer];
    switch (r->kind) {
        case Request::Kind::Inner:
            inner_->cancel(r->inner);
            --inner_pending_;
            break;
        case Request::Kind::Send:
            for (auto it = p.waiting_sends.begin(); it != p.waiting_sends.end(); ++it)
                if (*it == r) {
                    p.waiting_sends.erase(it);
                    break;
                }
            break;
        case Request::Kind::Recv:
            for (auto it = p.posted.begin(); it != p.posted.end(); ++it)
                if (*it == r) {
                    p.posted.erase(it);
                    break;
                }
            // Its data is not read: the sender's send completes, as an eager
            // one would.
            if (r->rendezvous && !r->done) acknowledge(r->peer, r->rts);
            // A message arriving for it: the rest of it is dropped.
            if (p.in.req == r) {
                p.in.req = nullptr;
                p.in.dst = nullptr;
            }
            for (auto& m : p.unexpected)
                if (m.waiter == r) m.waiter = nullptr;
            break;
    }
    free_request(r);
}

bool ShmTransport::settled() {
    // A message through the cells owes nothing once it is in the queue.
    if (!inner_used_) return true;
    if (!inner_->settled()) return false;
    inner_used_ = false;
    return true;
}

void ShmTransport::check_peers() {
    inner_->check_peers();
    // A local rank that died may have left a cell claimed and never handed
    // over: every transfer through shared memory fails from then on.
    for (int r : local_ranks_)
        if (dead_ < 0 && r != inner_->rank() && process_gone(peers_[r].pid)) dead_ = r;
}

// ---------------------------------------------------------------------------
// Publish slots

bool ShmTransport::refresh_free(uint64_t need) {
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < seg_.local(); ++i) least = std::min(least, seg_.slots(i)->done.load(std::memory_order_acquire));
    free_through_ = least;
    return least >= need;
}

void ShmTransport::slot_memory(void** base, size_t* bytes) const {
    *base = seg_.base();
    *bytes = shm::Segment::bytes(seg_.local());
}

void ShmTransport::get(int peer, void* dst, uint64_t remote, size_t bytes) {
    if (!one_sided_) fail(CHORUS_ERR_INTERNAL, "shared memory: no one-sided read of rank ", peer, "'s memory");
    if (dead_ >= 0) peer_failed();
    cma::read(peers_[peer].pid, peer, dst, remote, bytes);
}

void ShmTransport::put(int peer, uint64_t remote, const void* src, size_t bytes) {
    if (!one_sided_) fail(CHORUS_ERR_INTERNAL, "shared memory: no one-sided write into rank ", peer, "'s memory");
    if (dead_ >= 0) peer_failed();
    cma::write(peers_[peer].pid, peer, remote, src, bytes);
}

char* ShmTransport::map_peer(int peer, const MappedRef& ref) {
    if (!one_sided_ || peers_[peer].pid <= 0) return nullptr;
    if (dead_ >= 0) peer_failed();
    return peer_maps_.map(peers_[peer].pid, ref);
}

}  // namespace chorus::net
