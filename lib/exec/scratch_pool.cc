#include "exec/scratch_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace chorus {

namespace {
constexpr size_t kHugePage = 2u << 20;
}

ScratchPool::~ScratchPool() {
    for (auto& e : entries_) {
        if (free_) free_(e.ptr);
        else std::free(e.ptr);
    }
}

void* ScratchPool::acquire(size_t bytes) {
    if (bytes == 0) return nullptr;
    Entry* best = nullptr;
    for (auto& e : entries_)
        if (!e.in_use && e.bytes >= bytes && (!best || e.bytes < best->bytes)) best = &e;
    if (best) {
        best->in_use = true;
        return best->ptr;
    }
    if (alloc_) {
        // Powers of two up to 16 MiB, then multiples of 16 MiB.
        size_t rounded = 4096;
        while (rounded < bytes && rounded < (16u << 20)) rounded *= 2;
        if (rounded < bytes) rounded = (bytes + (16u << 20) - 1) / (16u << 20) * (16u << 20);
        void* p = alloc_(rounded);
        entries_.push_back({p, rounded, true});
        return p;
    }
    // Round large buffers to whole huge pages so they can be backed by them.
    size_t align = bytes >= kHugePage ? kHugePage : 64;
    size_t rounded = (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded);
    if (!p) fail(CHORUS_ERR_OUT_OF_MEMORY, "scratch: cannot allocate ", rounded, " bytes");
    if (align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);
    std::memset(p, 0, rounded);
    entries_.push_back({p, rounded, true});
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

size_t ScratchPool::held() const {
    size_t total = 0;
    for (const auto& e : entries_) total += e.bytes;
    return total;
}

}  // namespace chorus
