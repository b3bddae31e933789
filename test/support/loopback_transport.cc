#include "loopback_transport.h"

#include <cstring>

#include "base/error.h"

namespace chorus::net {

// A posted receive that has not matched yet. Owned by the receiver's handle.
struct Slot {
    bool done = false;
    bool failed = false;
    bool cancelled = false;
    int peer = -1;
    size_t expected = 0;
    size_t got = 0;
    // A keyed get or put: copied on its second test.
    bool rma = false;
    int tests = 0;
    void* to = nullptr;
    const void* from = nullptr;
};

LoopbackHub::LoopbackHub(int size, bool rendezvous)
    : size_(size), rendezvous_(rendezvous), boxes_(size), notices_(size), dead_(size, false) {}

void LoopbackHub::kill(int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    dead_[rank] = true;
    // Receives posted by others that wait on the dead rank fail.
    for (auto& box : boxes_)
        for (auto& p : box.posted)
            if (p.source == rank) p.slot->failed = true;
    // Rendezvous sends waiting on the dead rank fail too.
    for (auto& u : boxes_[rank].unexpected)
        if (u.sender) u.sender->failed = true;
}

bool LoopbackHub::dead(int rank) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return dead_[rank];
}

LoopbackTransport::LoopbackTransport(std::shared_ptr<LoopbackHub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}

LoopbackTransport::~LoopbackTransport() {
    // Drop receives this rank still had posted; their slots belong to handles
    // the executor has released or will never test again.
    std::lock_guard<std::mutex> lock(hub_->mutex_);
    hub_->boxes_[rank_].posted.clear();
}

void LoopbackTransport::check_host(const void* buf, const char* what) const {
    if (hub_->is_device_ && !hub_->direct_ && hub_->is_device_(buf))
        fail(CHORUS_ERR_INTERNAL, "loopback: ", what, " of device memory on a transport without device support");
}

void LoopbackTransport::get(int peer, void* dst, uint64_t remote, size_t bytes) {
    if (!hub_->one_sided_) fail(CHORUS_ERR_INTERNAL, "loopback: no one-sided read of rank ", peer);
    if (hub_->dead(peer)) fail(CHORUS_ERR_PEER_FAILED, "loopback: get from dead rank ", peer);
    const void* src = reinterpret_cast<const void*>(remote);
    if (hub_->is_device_ && (hub_->is_device_(src) || hub_->is_device_(dst)))
        fail(CHORUS_ERR_INTERNAL, "loopback: one-sided get of device memory");
    std::memcpy(dst, src, bytes);
    hub_->one_sided_bytes_ += bytes;
}

void LoopbackTransport::put(int peer, uint64_t remote, const void* src, size_t bytes) {
    if (!hub_->one_sided_) fail(CHORUS_ERR_INTERNAL, "loopback: no one-sided write into rank ", peer);
    if (hub_->dead(peer)) fail(CHORUS_ERR_PEER_FAILED, "loopback: put to dead rank ", peer);
    void* dst = reinterpret_cast<void*>(remote);
    if (hub_->is_device_ && (hub_->is_device_(src) || hub_->is_device_(dst)))
        fail(CHORUS_ERR_INTERNAL, "loopback: one-sided put into device memory");
    std::memcpy(dst, src, bytes);
    hub_->one_sided_bytes_ += bytes;
}

bool LoopbackTransport::mapped_here(const void* addr, size_t bytes, MappedRef* ref) {
    if (!hub_->mapped_ || (hub_->is_device_ && hub_->is_device_(addr))) return false;
    *ref = {reinterpret_cast<uint64_t>(addr), 0, 0, bytes};
    return true;
}

char* LoopbackTransport::map_peer(int peer, const MappedRef& ref) {
    if (!hub_->mapped_)
        fail(CHORUS_ERR_INTERNAL, "loopback: a mapping of rank ", peer, "'s memory without mapped memory");
    if (hub_->dead(peer)) return nullptr;
    hub_->mapped_bytes_ += ref.size;
    return reinterpret_cast<char*>(ref.serial);
}

size_t LoopbackHub::rma_registered() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return registrations_.size();
}

size_t LoopbackHub::rma_held() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t n = 0;
    for (const auto& r : registrations_) n += r.held;
    return n;
}

size_t LoopbackTransport::rma_register(void* addr, size_t bytes, void* key, uint64_t* region) {
    if (!hub_->rma_) return 0;
    if (hub_->is_device_ && hub_->is_device_(addr)) fail(CHORUS_ERR_INTERNAL, "loopback: registering device memory");
    std::lock_guard<std::mutex> lock(hub_->mutex_);
    const uintptr_t b = reinterpret_cast<uintptr_t>(addr);
    hub_->registrations_.push_back({rank_, b, b + bytes, true});
    const uint64_t k = hub_->registrations_.size();
    std::memcpy(key, &k, sizeof k);
    *region = k;
    return sizeof k;
}

void LoopbackTransport::rma_release(uint64_t region) {
    std::lock_guard<std::mutex> lock(hub_->mutex_);
    if (region == 0 || region > hub_->registrations_.size() || !hub_->registrations_[region - 1].held ||
        hub_->registrations_[region - 1].owner != rank_)
        fail(CHORUS_ERR_INTERNAL, "loopback: rank ", rank_, " releases registration ", region, ", not held by it");
    hub_->registrations_[region - 1].held = false;
}

Handle LoopbackTransport::rma(int peer, void* dst, const void* src, uint64_t remote, size_t bytes, const void* key,
                              size_t key_bytes, bool is_get) {
    if (!hub_->rma_) fail(CHORUS_ERR_INTERNAL, "loopback: keyed access without rma");
    if (hub_->dead(peer)) fail(CHORUS_ERR_PEER_FAILED, "loopback: keyed access to dead rank ", peer);
    if (hub_->is_device_ && hub_->is_device_(is_get ? dst : src))
        fail(CHORUS_ERR_INTERNAL, "loopback: keyed access from device memory");
    uint64_t k = 0;
    if (key_bytes != sizeof k) fail(CHORUS_ERR_INTERNAL, "loopback: a key of ", key_bytes, " bytes");
    std::memcpy(&k, key, sizeof k);
    {
        std::lock_guard<std::mutex> lock(hub_->mutex_);
        // The key must be the peer's and cover the range, and its owner
        // must hold it still (unless a failure elsewhere made the owner
        // abort: registrations outlive a release, as UCX's cache keeps them).
        if (k == 0 || k > hub_->registrations_.size())
            fail(CHORUS_ERR_INTERNAL, "loopback: unknown key ", k, " from rank ", peer);
        const auto& reg = hub_->registrations_[k - 1];
        bool any_dead = false;
        for (bool d : hub_->dead_) any_dead = any_dead || d;
        if (reg.owner != peer || (!reg.held && !any_dead) || remote < reg.begin || remote + bytes > reg.end)
            fail(CHORUS_ERR_INTERNAL, "loopback: key ", k, " does not give rank ", rank_, " ", bytes, " bytes at ",
                 remote, " of rank ", peer);
    }
    auto slot = std::make_unique<Slot>();
    slot->peer = peer;
    slot->rma = true;
    slot->expected = slot->got = bytes;
    slot->to = is_get ? dst : reinterpret_cast<void*>(remote);
    slot->from = is_get ? reinterpret_cast<const void*>(remote) : src;
    return slot.release();
}

Handle LoopbackTransport::rma_get(int peer, void* dst, uint64_t remote, size_t bytes, const void* key,
                                  size_t key_bytes) {
    return rma(peer, dst, nullptr, remote, bytes, key, key_bytes, true);
}

Handle LoopbackTransport::rma_put(int peer, uint64_t remote, const void* src, size_t bytes, const void* key,
                                  size_t key_bytes) {
    return rma(peer, nullptr, src, remote, bytes, key, key_bytes, false);
}

Handle LoopbackTransport::send(int peer, Tag tag, const void* buf, size_t bytes) {
    check_host(buf, "send");
    std::lock_guard<std::mutex> lock(hub_->mutex_);
    if (hub_->dead_[peer]) fail(CHORUS_ERR_PEER_FAILED, "loopback: send to dead rank ", peer);
    auto& box = hub_->boxes_[peer];
    for (auto it = box.posted.begin(); it != box.posted.end(); ++it) {
        if (it->source != rank_ || it->tag != tag) continue;
        Slot* slot = it->slot;
        slot->got = bytes;
        if (bytes <= it->bytes && bytes) std::memcpy(it->buf, buf, bytes);
        slot->done = true;
        box.posted.erase(it);
        return nullptr;
    }
    const char* p = static_cast<const char*>(buf);
    Slot* sender = nullptr;
    if (hub_->rendezvous_) {
        sender = new Slot;
        sender->peer = peer;
    }
    box.unexpected.push_back({rank_, tag, std::vector<char>(p, p + bytes), sender});
    return sender;
}

Handle LoopbackTransport::recv(int peer, Tag tag, void* buf, size_t bytes) {
    check_host(buf, "recv");
    std::lock_guard<std::mutex> lock(hub_->mutex_);
    auto& box = hub_->boxes_[rank_];
    auto slot = std::make_unique<Slot>();
    slot->peer = peer;
    slot->expected = bytes;
    for (auto it = box.unexpected.begin(); it != box.unexpected.end(); ++it) {
        if (it->source != peer || it->tag != tag) continue;
        slot->got = it->data.size();
        if (slot->got <= bytes && slot->got) std::memcpy(buf, it->data.data(), slot->got);
        slot->done = true;
        if (it->sender) it->sender->done = true;
        box.unexpected.erase(it);
        return slot.release();
    }
    if (hub_->dead_[peer])
        slot->failed = true;
    else
        box.posted.push_back({peer, tag, buf, bytes, slot.get()});
    return slot.release();
}

bool LoopbackTransport::test(Handle handle) {
    if (!handle) return true;
    auto* slot = static_cast<Slot*>(handle);
    std::unique_lock<std::mutex> lock(hub_->mutex_);
    if (slot->rma && !slot->done) {
        if (hub_->dead_[slot->peer]) {
            slot->failed = true;
        } else if (++slot->tests >= 2) {
            if (slot->got) std::memcpy(slot->to, slot->from, slot->got);
            hub_->one_sided_bytes_ += slot->got;
            slot->done = true;
        }
    }
    if (slot->failed) {
        int peer = slot->peer;
        lock.unlock();
        cancel(handle);
        fail(CHORUS_ERR_PEER_FAILED, "loopback: rank ", peer, " died");
    }
    if (!slot->done) return false;
    size_t got = slot->got, expected = slot->expected;
    int peer = slot->peer;
    lock.unlock();
    delete slot;
    if (got != expected)
        fail(CHORUS_ERR_MISMATCH, "loopback: message from rank ", peer, " has ", got, " bytes, expected ", expected);
    return true;
}

void LoopbackTransport::cancel(Handle handle) {
    if (!handle) return;
    auto* slot = static_cast<Slot*>(handle);
    {
        std::lock_guard<std::mutex> lock(hub_->mutex_);
        auto& posted = hub_->boxes_[rank_].posted;
        for (auto it = posted.begin(); it != posted.end(); ++it)
            if (it->slot == slot) {
                posted.erase(it);
                break;
            }
        // A rendezvous send still queued at its destination.
        for (auto& box : hub_->boxes_)
            for (auto& u : box.unexpected)
                if (u.sender == slot) u.sender = nullptr;
    }
    delete slot;
}

void LoopbackTransport::notify(int peer, const std::string& notice) {
    std::lock_guard<std::mutex> lock(hub_->mutex_);
    if (!hub_->dead_[peer]) hub_->notices_[peer].emplace_back(rank_, notice.substr(0, kMaxNotice));
}

bool LoopbackTransport::poll_notice(int* source, std::string* notice) {
    std::lock_guard<std::mutex> lock(hub_->mutex_);
    auto& q = hub_->notices_[rank_];
    if (q.empty()) return false;
    *source = q.front().first;
    *notice = std::move(q.front().second);
    q.pop_front();
    return true;
}

void LoopbackHub::enable_slots(size_t bytes) {
    const size_t n = static_cast<size_t>(size_) * Transport::kSlots;
    slot_bytes_ = bytes;
    slots_.reset(new char[n * bytes]);
    published_.reset(new std::atomic<uint64_t>[n]);
    done_.reset(new std::atomic<uint64_t>[size_]);
    for (size_t i = 0; i < n; ++i) published_[i] = 0;
    for (int r = 0; r < size_; ++r) done_[r] = 0;
}

char* LoopbackTransport::slot(int rank, uint64_t n) {
    return hub_->slots_.get() +
           (static_cast<size_t>(rank) * PublishSlots::kSlots + n % PublishSlots::kSlots) * hub_->slot_bytes_;
}

bool LoopbackTransport::slot_free(uint64_t n) {
    if (n < PublishSlots::kSlots) return true;
    for (int r = 0; r < hub_->size_; ++r)
        if (hub_->done_[r].load() < n - PublishSlots::kSlots + 1) return false;
    return true;
}

void LoopbackTransport::publish(uint64_t n) {
    hub_->published_[static_cast<size_t>(rank_) * PublishSlots::kSlots + n % PublishSlots::kSlots] = n + 1;
}

bool LoopbackTransport::published(int rank, uint64_t n) {
    ++hub_->flag_reads_;
    if (hub_->dead(rank)) fail(CHORUS_ERR_PEER_FAILED, "loopback: rank ", rank, " is dead");
    return hub_->published_[static_cast<size_t>(rank) * PublishSlots::kSlots + n % PublishSlots::kSlots].load() ==
           n + 1;
}

void LoopbackTransport::slot_done(uint64_t n) {
    hub_->done_[rank_] = done_.finish(n);
}

void LoopbackTransport::slot_memory(void** base, size_t* bytes) const {
    *base = hub_->slots_.get();
    *bytes = static_cast<size_t>(hub_->size_) * PublishSlots::kSlots * hub_->slot_bytes_;
}

}  // namespace chorus::net
