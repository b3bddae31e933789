// Memory owned by a communicator and reused across operations, so that
// steady-state calls allocate nothing. By default host scratch: backed by
// huge pages where the kernel allows, and touched when allocated (the first
// touch of a 4 KiB page costs ~15 us on small VMs). Given an allocator, any
// other memory (device scratch, pinned staging buffers), sized in powers of
// two so that buffers are reused across sizes.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace chorus {

class ScratchPool {
public:
    ScratchPool() = default;
    ScratchPool(std::function<void*(size_t)> alloc, std::function<void(void*)> free)
        : alloc_(std::move(alloc)), free_(std::move(free)) {}
    ~ScratchPool();
    ScratchPool(const ScratchPool&) = delete;
    ScratchPool& operator=(const ScratchPool&) = delete;

    // A buffer of at least `bytes` (64-byte aligned), not in use by anyone
    // else until release(). Returns nullptr for 0 bytes. Throws on OOM.
    void* acquire(size_t bytes);
    void release(void* buffer);
    // Bytes held, in use or not.
    size_t held() const;

private:
    struct Entry {
        void* ptr;
        size_t bytes;
        bool in_use;
    };
    std::vector<Entry> entries_;
    std::function<void*(size_t)> alloc_;
    std::function<void(void*)> free_;
};

}  // namespace chorus
