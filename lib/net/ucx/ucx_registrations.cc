#include "net/ucx/ucx_registrations.h"

#include <ucm/api/ucm.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"

namespace chorus::net {

namespace {

// At most this many registrations are kept; past it, the one unused the
// longest (and held by no operation) goes.
constexpr size_t kMaxEntries = 1024;
// UCX's own registration cache hooks in at priority 1000; this one is
// independent of it (any value would do).
constexpr int kHookPriority = 1000;

void unmapped_hook(ucm_event_type_t, ucm_event_t* event, void* arg) {
    static_cast<Registrations*>(arg)->note_unmapped(event->vm_unmapped.address, event->vm_unmapped.size);
}

uintptr_t page_size() {
    static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    return page;
}

}  // namespace

Registrations::Registrations(ucp_context_h context) : context_(context) {
    hooked_ = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, kHookPriority, unmapped_hook, this) == UCS_OK;
    if (!hooked_)
        log(LogLevel::Info, -1, "UCX memory events unavailable: registrations for RMA are made per call, not cached");
}

Registrations::~Registrations() {
    if (hooked_) ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, unmapped_hook, this);
    for (Entry& e : entries_) deregister(e);
}

void Registrations::note_unmapped(const void* addr, size_t bytes) {
    if (!bytes) return;
    const uintptr_t b = reinterpret_cast<uintptr_t>(addr);
    while (spin_.test_and_set(std::memory_order_acquire)) {
    }
    if (unmapped_count_ < kUnmappedMax)
        unmapped_[unmapped_count_++] = {b, b + bytes};
    else
        unmapped_overflow_ = true;
    unmapped_any_.store(true, std::memory_order_release);
    spin_.clear(std::memory_order_release);
}

void Registrations::deregister(Entry& e) {
    if (e.memh) ucp_mem_unmap(context_, e.memh);
    e.memh = nullptr;
}

void Registrations::drain() {
    if (unmapped_any_.load(std::memory_order_acquire)) {
        Range ranges[kUnmappedMax];
        int n;
        bool all;
        while (spin_.test_and_set(std::memory_order_acquire)) {
        }
        n = unmapped_count_;
        all = unmapped_overflow_;
        std::copy(unmapped_, unmapped_ + n, ranges);
        unmapped_count_ = 0;
        unmapped_overflow_ = false;
        unmapped_any_.store(false, std::memory_order_relaxed);
        spin_.clear(std::memory_order_release);
        for (Entry& e : entries_) {
            if (e.stale) continue;
            bool hit = all;
            for (int i = 0; i < n && !hit; ++i) hit = e.begin < ranges[i].end && ranges[i].begin < e.end;
            if (hit) {
                e.stale = true;
                ++dropped_;
            }
        }
    }
    for (size_t i = 0; i < entries_.size();) {
        if (!entries_[i].stale || entries_[i].refs) {
            ++i;
            continue;
        }
        deregister(entries_[i]);
        entries_[i] = std::move(entries_.back());
        entries_.pop_back();
    }
}

size_t Registrations::acquire(void* addr, size_t bytes, void* key, size_t room, uint64_t* id) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    std::lock_guard<std::mutex> lock(mutex_);
    drain();
    ++lookups_;
    for (Entry& e : entries_) {
        if (e.stale || e.begin > a || e.end < a + bytes) continue;
        if (e.key.size() > room) return 0;
        std::memcpy(key, e.key.data(), e.key.size());
        ++e.refs;
        e.used = lookups_;
        *id = e.id;
        return e.key.size();
    }
    // Whole pages: a registration pins pages, and later pieces of the same
    // buffer often fall in them.
    const uintptr_t page = page_size();
    const uintptr_t begin = a & ~(page - 1), end = (a + bytes + page - 1) & ~(page - 1);
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = reinterpret_cast<void*>(begin);
    mp.length = end - begin;
    ucp_mem_h memh = nullptr;
    if (ucp_mem_map(context_, &mp, &memh) != UCS_OK) return 0;
    void* packed = nullptr;
    size_t packed_bytes = 0;
    if (ucp_rkey_pack(context_, memh, &packed, &packed_bytes) != UCS_OK) {
        ucp_mem_unmap(context_, memh);
        return 0;
    }
    Entry e{begin,      end,
            memh,       std::vector<char>(static_cast<char*>(packed), static_cast<char*>(packed) + packed_bytes),
            next_id_++, lookups_,
            1,          !hooked_};
    ucp_rkey_buffer_release(packed);
    ++made_;
    if (packed_bytes > room) {
        ucp_mem_unmap(context_, memh);
        return 0;
    }
    std::memcpy(key, e.key.data(), packed_bytes);
    *id = e.id;
    if (entries_.size() >= kMaxEntries) {
        auto lru = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (!it->refs && (lru == entries_.end() || it->used < lru->used)) lru = it;
        if (lru != entries_.end()) {
            deregister(*lru);
            *lru = std::move(entries_.back());
            entries_.pop_back();
        }
    }
    entries_.push_back(std::move(e));
    return packed_bytes;
}

void Registrations::release(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Entry& e : entries_)
        if (e.id == id) {
            --e.refs;
            break;
        }
    drain();
}

}  // namespace chorus::net
