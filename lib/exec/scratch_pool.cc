#include "exec/scratch_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace chorus {

namespace {
constexpr size_t kHugePage = 2u << 20;
// An idle buffer serves a request unless it is more than this many times
// larger (and above kOversizedFloor): then a fitting one is allocated and
// the large one ages out.
constexpr size_t kOversized = 4;
constexpr size_t kOversizedFloor = 1u << 20;
}  // namespace

ScratchPool::~ScratchPool() {
    for (auto& e : entries_) free_entry(e);
}

void ScratchPool::free_entry(const Entry& e) {
    if (free_)
        free_(e.ptr);
    else
        std::free(e.ptr);
}

void* ScratchPool::acquire(size_t bytes) {
    if (bytes == 0) return nullptr;
    ++acquisitions_;
    Entry* best = nullptr;
    for (auto& e : entries_)
        if (!e.in_use && e.bytes >= bytes && (!best || e.bytes < best->bytes)) best = &e;
    if (best && (best->bytes <= kOversizedFloor || best->bytes / kOversized <= bytes)) {
        best->in_use = true;
        best->last_use = acquisitions_;
        return best->ptr;
    }
    if (alloc_) {
        // Powers of two up to 16 MiB, then multiples of 16 MiB.
        size_t rounded = 4096;
        while (rounded < bytes && rounded < (16u << 20)) rounded *= 2;
        if (rounded < bytes) rounded = (bytes + (16u << 20) - 1) / (16u << 20) * (16u << 20);
        void* p = alloc_(rounded);
        entries_.push_back({p, rounded, true, acquisitions_});
        return p;
    }
    // Round large buffers to whole huge pages so they can be backed by them.
    size_t align = bytes >= kHugePage ? kHugePage : 64;
    size_t rounded = (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded);
    if (!p) fail(CHORUS_ERR_OUT_OF_MEMORY, "scratch: cannot allocate ", rounded, " bytes");
    if (align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);
    std::memset(p, 0, rounded);
    entries_.push_back({p, rounded, true, acquisitions_});
    return p;
}

void ScratchPool::release(void* buffer) {
    if (!buffer) return;
    for (auto& e : entries_)
        if (e.ptr == buffer) {
            e.in_use = false;
            return;
        }
}

size_t ScratchPool::trim(uint64_t idle_acquisitions, size_t keep_bytes) {
    size_t freed = 0;
    auto drop = [&](size_t i) {
        freed += entries_[i].bytes;
        free_entry(entries_[i]);
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
    };
    for (size_t i = entries_.size(); i-- > 0;)
        if (!entries_[i].in_use && acquisitions_ - entries_[i].last_use >= idle_acquisitions) drop(i);
    for (size_t total = held(); total > keep_bytes;) {
        size_t largest = entries_.size();
        for (size_t i = 0; i < entries_.size(); ++i)
            if (!entries_[i].in_use && (largest == entries_.size() || entries_[i].bytes > entries_[largest].bytes))
                largest = i;
        if (largest == entries_.size()) break;  // everything left is in use
        total -= entries_[largest].bytes;
        drop(largest);
    }
    return freed;
}

size_t ScratchPool::held() const {
    size_t total = 0;
    for (const auto& e : entries_) total += e.bytes;
    return total;
}

}  // namespace chorus
