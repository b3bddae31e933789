#include "net/shm/shm_transport.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/log.h"
#include "base/error.h"

namespace chorus::net {

namespace {

// One slot: a 24-byte header, then the payload, so that a message of up to
// 40 bytes is a single cache line handed from sender to receiver.
struct SlotHeader {
    std::atomic<uint32_t> full;  // 1 while it holds a fragment the receiver has not taken
    uint32_t bytes;              // of this fragment
    Tag tag;
    uint64_t total;              // of the whole message
};
static_assert(sizeof(SlotHeader) == 24, "slot header is 24 bytes");
constexpr size_t kSlotBytes = 64 + ShmTransport::kSlotPayload;  // whole cache lines
constexpr size_t kRingBytes = kSlotBytes * ShmTransport::kSlots;

SlotHeader* slot_at(void* ring, uint64_t n) {
    return reinterpret_cast<SlotHeader*>(static_cast<char*>(ring) + (n % ShmTransport::kSlots) * kSlotBytes);
}
char* payload(SlotHeader* h) { return reinterpret_cast<char*>(h + 1); }

}  // namespace

struct ShmTransport::Request {
    enum class Kind : uint8_t { Inner, Send, Recv } kind;
    bool done;
    int peer;
    Tag tag;
    const void* src;
    void* dst;
    size_t bytes, got;
    Handle inner;
};

size_t ShmTransport::segment_bytes(int local) { return kRingBytes * static_cast<size_t>(local); }

void ShmTransport::init_segment(void* mem, int local) {
    for (int j = 0; j < local; ++j)
        for (size_t n = 0; n < kSlots; ++n) {
            auto* h = new (static_cast<char*>(mem) + j * kRingBytes + n * kSlotBytes) SlotHeader;
            h->full.store(0, std::memory_order_relaxed);
            h->bytes = 0;
            h->tag = 0;
            h->total = 0;
        }
}

ShmTransport::ShmTransport(std::unique_ptr<Transport> inner, size_t eager_bytes, std::vector<int> local_index,
                           std::vector<void*> segments, std::vector<int> pids, std::vector<size_t> mapped_bytes)
    : inner_(std::move(inner)), eager_(eager_bytes < kMaxEager ? eager_bytes : kMaxEager) {
    const int n = inner_->size(), me = inner_->rank();
    if (static_cast<int>(local_index.size()) != n || static_cast<int>(segments.size()) != n)
        fail(CHORUS_ERR_INTERNAL, "shm transport: ", n, " ranks but ", local_index.size(), " local indices");
    if (local_index[me] < 0) fail(CHORUS_ERR_INTERNAL, "shm transport: this rank is not local to itself");
    peers_.resize(n);
    for (int r = 0; r < n; ++r) {
        Peer& p = peers_[r];
        p.local = local_index[r];
        if (p.local < 0) continue;
        p.pid = pids.empty() ? 0 : pids[r];
        p.ring_out = static_cast<char*>(segments[r]) + kRingBytes * static_cast<size_t>(local_index[me]);
        p.ring_in = static_cast<char*>(segments[me]) + kRingBytes * static_cast<size_t>(p.local);
        local_sources_.push_back(r);
    }
    if (!mapped_bytes.empty()) {
        mapped_ = segments;
        mapped_bytes_ = std::move(mapped_bytes);
    }
}

ShmTransport::~ShmTransport() {
    for (auto& p : peers_) {
        for (Request* r : p.waiting_sends) delete r;
        for (Request* r : p.posted) delete r;
    }
    for (Request* r : spare_) delete r;
    // The inner transport's teardown is collective and keeps progressing;
    // the segments go after it, when no peer can write into them.
    inner_.reset();
    for (size_t r = 0; r < mapped_.size(); ++r)
        if (mapped_[r]) munmap(mapped_[r], mapped_bytes_[r]);
}

ShmTransport::Request* ShmTransport::new_request() {
    if (spare_.empty()) return new Request{};
    Request* r = spare_.back();
    spare_.pop_back();
    return r;
}

void ShmTransport::free_request(Request* r) {
    if (spare_.size() < 256) spare_.push_back(r);
    else delete r;
}

Handle ShmTransport::wrap(Handle inner, int peer) {
    if (!inner) return nullptr;
    Request* r = new_request();
    *r = Request{Request::Kind::Inner, false, peer, 0, nullptr, nullptr, 0, 0, inner};
    ++inner_pending_;
    inner_used_ = true;
    return r;
}

void ShmTransport::peer_failed(int peer) const {
    fail(CHORUS_ERR_PEER_FAILED, "shared memory: rank ", peer, " (pid ", peers_[peer].pid, ") died");
}

bool ShmTransport::put(Peer& p, Tag tag, const void* buf, size_t bytes, size_t* sent) {
    do {
        SlotHeader* h = slot_at(p.ring_out, p.next_out);
        if (h->full.load(std::memory_order_acquire)) return false;
        size_t n = std::min(kSlotPayload, bytes - *sent);
        if (n) std::memcpy(payload(h), static_cast<const char*>(buf) + *sent, n);
        h->tag = tag;
        h->bytes = static_cast<uint32_t>(n);
        h->total = bytes;
        h->full.store(1, std::memory_order_release);
        ++p.next_out;
        *sent += n;
    } while (*sent < bytes);
    return true;
}

Handle ShmTransport::send(int peer, Tag tag, const void* buf, size_t bytes) {
    if (!small(peer, bytes)) return wrap(inner_->send(peer, tag, buf, bytes), peer);
    Peer& p = peers_[peer];
    if (p.dead) peer_failed(peer);
    size_t sent = 0;
    if (p.waiting_sends.empty() && put(p, tag, buf, bytes, &sent)) return nullptr;
    Request* r = new_request();
    *r = Request{Request::Kind::Send, false, peer, tag, buf, nullptr, bytes, sent, nullptr};  // got: bytes sent
    p.waiting_sends.push_back(r);
    return r;
}

Handle ShmTransport::recv(int peer, Tag tag, void* buf, size_t bytes) {
    if (!small(peer, bytes)) return wrap(inner_->recv(peer, tag, buf, bytes), peer);
    Peer& p = peers_[peer];
    poll_in(peer);
    for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it) {
        if (it->tag != tag || it->waiter) continue;
        size_t got = it->data.size();
        if (got != bytes) {
            if (p.in.msg == &*it) {  // still arriving: the rest is discarded
                p.in.dst = nullptr;
                p.in.msg = nullptr;
            }
            p.unexpected.erase(it);
            fail(CHORUS_ERR_MISMATCH, "shared memory: message from rank ", peer, " has ", got, " bytes, expected ",
                 bytes);
        }
        if (!it->complete) {
            // Still arriving: the receive completes when it has.
            Request* r = new_request();
            *r = Request{Request::Kind::Recv, false, peer, tag, nullptr, buf, bytes, 0, nullptr};
            it->waiter = r;
            return r;
        }
        if (bytes) std::memcpy(buf, it->data.data(), bytes);
        p.unexpected.erase(it);
        return nullptr;
    }
    if (p.dead) peer_failed(peer);
    Request* r = new_request();
    *r = Request{Request::Kind::Recv, false, peer, tag, nullptr, buf, bytes, 0, nullptr};
    p.posted.push_back(r);
    return r;
}

// A message's last fragment has arrived.
void ShmTransport::finish_incoming(Peer& p) {
    Incoming& in = p.in;
    if (in.req) {
        in.req->got = in.total;
        in.req->done = true;
    } else if (in.msg) {
        in.msg->complete = true;
        if (Request* w = in.msg->waiter) {
            if (w->bytes) std::memcpy(w->dst, in.msg->data.data(), w->bytes);
            w->got = in.total;
            w->done = true;
            for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it)
                if (&*it == in.msg) {
                    p.unexpected.erase(it);
                    break;
                }
        }
    }
    in = Incoming{};
}

// Take every fragment waiting in `source`'s ring.
bool ShmTransport::poll_in(int source) {
    Peer& p = peers_[source];
    Incoming& in = p.in;
    bool moved = false;
    for (;;) {
        SlotHeader* h = slot_at(p.ring_in, p.next_in);
        if (!h->full.load(std::memory_order_acquire)) break;
        if (!in.active) {
            // A message starts: to a posted receive of its tag, or kept.
            in.active = true;
            in.total = h->total;
            in.got = 0;
            for (size_t i = 0; i < p.posted.size(); ++i)
                if (p.posted[i]->tag == h->tag) {
                    in.req = p.posted[i];
                    p.posted.erase(p.posted.begin() + static_cast<std::ptrdiff_t>(i));
                    break;
                }
            if (in.req) {
                // A size mismatch is reported by test(); the data is dropped.
                in.dst = in.total == in.req->bytes ? static_cast<char*>(in.req->dst) : nullptr;
            } else {
                p.unexpected.push_back({h->tag, std::vector<char>(in.total)});
                in.msg = &p.unexpected.back();
                in.dst = in.msg->data.data();
            }
        }
        size_t n = h->bytes;
        if (in.dst && n) std::memcpy(in.dst + in.got, payload(h), n);
        in.got += n;
        h->full.store(0, std::memory_order_release);
        ++p.next_in;
        moved = true;
        if (in.got >= in.total) finish_incoming(p);
    }
    return moved;
}

bool ShmTransport::progress() {
    // The inner transport's progress costs more than a look at the rings:
    // made when it has transfers of ours, and now and then regardless.
    bool moved = false;
    if (inner_pending_ > 0 || (++calls_ & 63) == 0) moved = inner_->progress();
    const int me = inner_->rank();
    for (int s : local_sources_) {
        Peer& p = peers_[s];
        // Messages to self are looked for by recv() itself, unless one waits.
        if (s != me || !p.posted.empty()) moved = poll_in(s) || moved;
        while (!p.waiting_sends.empty()) {
            Request* r = p.waiting_sends.front();
            size_t before = r->got;
            bool all = put(p, r->tag, r->src, r->bytes, &r->got);
            moved = moved || r->got != before;
            if (!all) break;
            r->done = true;
            p.waiting_sends.pop_front();
        }
    }
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
            free_request(r);
        }
        return done;
    }
    if (!r->done) {
        if (!peers_[r->peer].dead) return false;
        int peer = r->peer;
        cancel(handle);
        peer_failed(peer);
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

void ShmTransport::settle() {
    if (!inner_used_) return;
    inner_used_ = false;
    inner_->settle();
}

void ShmTransport::check_peers() {
    inner_->check_peers();
    for (int s : local_sources_) {
        Peer& p = peers_[s];
        if (p.dead || p.pid <= 0 || (p.posted.empty() && p.waiting_sends.empty())) continue;
        if (kill(p.pid, 0) != 0 && errno == ESRCH) p.dead = true;
    }
}

std::unique_ptr<Transport> ShmTransport::create(Bootstrap& boot, std::unique_ptr<Transport> inner, size_t eager_bytes) {
    if (eager_bytes == 0) return inner;
    const int n = inner->size(), me = inner->rank();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::vector<std::string> who = boot.allgather(cat(getpid(), " ", host));
    std::vector<int> local_index(n, -1), pids(n, 0);
    int local = 0;
    std::string my_host = who[me].substr(who[me].find(' ') + 1);
    for (int r = 0; r < n; ++r) {
        size_t sp = who[r].find(' ');
        if (who[r].substr(sp + 1) != my_host) continue;
        local_index[r] = local++;
        pids[r] = std::atoi(who[r].c_str());
    }
    // Whether shared memory is used is a property of the communicator, so
    // that every pair of ranks agrees on how small messages travel.
    if (boot.all(local <= 1)) return inner;  // every rank alone on its host

    static std::atomic<unsigned> counter{0};
    std::string name = cat("/chorus-", getpid(), "-", counter++, "-", me);
    size_t bytes = segment_bytes(local);
    void* mine = MAP_FAILED;
    std::string why;
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        why = cat("shm_open ", name, ": ", std::strerror(errno));
    } else {
        if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) why = cat("ftruncate: ", std::strerror(errno));
        else mine = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (why.empty() && mine == MAP_FAILED) why = cat("mmap: ", std::strerror(errno));
        close(fd);
    }
    if (mine != MAP_FAILED) init_segment(mine, local);
    std::vector<std::string> names = boot.allgather(why.empty() ? name : std::string());
    std::vector<void*> segments(n, nullptr);
    std::vector<size_t> mapped_bytes(n, 0);
    for (int r = 0; r < n && why.empty(); ++r) {
        if (local_index[r] < 0) continue;
        if (r == me) {
            segments[r] = mine;
        } else if (names[r].empty()) {
            why = cat("rank ", r, " has no segment");
        } else {
            int pfd = shm_open(names[r].c_str(), O_RDWR, 0);
            void* m = pfd < 0 ? MAP_FAILED : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
            if (pfd >= 0) close(pfd);
            if (m == MAP_FAILED) why = cat("mapping rank ", r, "'s segment: ", std::strerror(errno));
            else segments[r] = m;
        }
        mapped_bytes[r] = bytes;
    }
    const bool all_ok = boot.all(why.empty());
    // Every local rank has mapped every segment (or given up): unlink now,
    // so nothing is left behind whatever happens later.
    if (fd >= 0) shm_unlink(name.c_str());
    if (!all_ok) {
        if (!why.empty()) log(LogLevel::Warn, me, "shared memory for small messages unavailable (", why,
                              "); every message goes through ", inner->name());
        for (int r = 0; r < n; ++r)
            if (segments[r]) munmap(segments[r], bytes);
        if (mine != MAP_FAILED && !segments[me]) munmap(mine, bytes);
        return inner;
    }
    return std::make_unique<ShmTransport>(std::move(inner), eager_bytes, std::move(local_index), std::move(segments),
                                          std::move(pids), std::move(mapped_bytes));
}

}  // namespace chorus::net
