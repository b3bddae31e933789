// Memory registered for UCX RMA (ucp_mem_map), with the packed key a peer
// needs to reach it, cached across calls: registering (pinning, on an RDMA
// network) costs far more than a call's small messages, and a loop of
// collectives exposes the same buffers every time.
//
// A cached registration stays right only while its pages stay mapped: a
// program that frees a buffer and gets the same address back may have new
// pages behind it. UCX's memory hooks (ucm, the events its own registration
// cache uses) report every unmapping (munmap, a shrinking heap, madvise); a
// registration that overlaps one is dropped before the next lookup, and
// deregistered once no operation uses it. Where the hooks cannot be
// installed (UCX_MEM_EVENTS=no), nothing is kept: every region is
// registered when exposed and deregistered when released.
//
// One per UCX context, shared by every communicator (and thread): locked.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace chorus::net {

class Registrations {
public:
    explicit Registrations(ucp_context_h context);
    ~Registrations();
    Registrations(const Registrations&) = delete;
    Registrations& operator=(const Registrations&) = delete;

    // A registration that covers `bytes` at `addr` (found, or made now), held
    // until release(id): its key (packed) is copied into `key` if it fits in
    // `room` bytes. Returns the key's bytes, or 0 if the region cannot be
    // registered or its key does not fit (nothing is held then).
    size_t acquire(void* addr, size_t bytes, void* key, size_t room, uint64_t* id);
    void release(uint64_t id);

    // Counters, for tests: registrations made, and those dropped because
    // their memory was unmapped.
    uint64_t made() const { return made_.load(); }
    uint64_t dropped() const { return dropped_.load(); }
    bool caching() const { return hooked_; }
    // From UCX's memory hook: `bytes` at `addr` are being unmapped.
    void note_unmapped(const void* addr, size_t bytes);

private:
    struct Entry {
        uintptr_t begin, end;
        ucp_mem_h memh;
        std::vector<char> key;
        uint64_t id;
        uint64_t used;  // the lookup that last found it (eviction order)
        int refs;
        bool stale;
    };
    // Marks the entries that overlap the unmapped ranges reported so far
    // stale, and deregisters the stale ones no operation holds (locked).
    void drain();
    void deregister(Entry& e);

    ucp_context_h context_;
    bool hooked_ = false;
    std::mutex mutex_;
    std::vector<Entry> entries_;
    uint64_t next_id_ = 1;
    uint64_t lookups_ = 0;
    // Unmapped ranges the hook reported, not yet drained: a fixed array (the
    // hook runs inside munmap, where nothing may allocate); past its end,
    // every entry is dropped.
    static constexpr int kUnmappedMax = 256;
    std::atomic_flag spin_ = ATOMIC_FLAG_INIT;
    struct Range {
        uintptr_t begin, end;
    };
    Range unmapped_[kUnmappedMax];
    int unmapped_count_ = 0;
    bool unmapped_overflow_ = false;
    std::atomic<bool> unmapped_any_{false};
    std::atomic<uint64_t> made_{0}, dropped_{0};
};

}  // namespace chorus::net
