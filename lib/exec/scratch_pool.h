// Memory owned by a communicator and reused across operations, so that
// steady-state calls allocate nothing. By default host scratch: backed by
// huge pages where the kernel allows, and touched when allocated (the first
// touch of a 4 KiB page costs ~15 us on small VMs). Given an allocator, any
// other memory (device scratch, pinned staging buffers), sized in powers of
// two so that buffers are reused across sizes.
//
// Memory goes back only through trim(): the owner calls it when an
// operation has ended (after release()), and it frees the buffers not in
// use that no acquisition has used for a while, then, while more than a
// ceiling stays held, the largest idle ones. A buffer more than four times
// a request (and over 1 MiB) is not handed out for it, so that a large
// buffer left by one large call ages out under many small ones instead of
// serving them all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace chorus {

class ScratchPool {
public:
    // Defaults for trim(): a buffer no acquisition used in the last 64 goes
    // back, and the idle ones above 256 MiB held in all.
    static constexpr uint64_t kIdleAcquisitions = 64;
    static constexpr size_t kKeepBytes = size_t(256) << 20;

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
    // Free the buffers not in use that none of the last `idle_acquisitions`
    // acquisitions used; then, while more than `keep_bytes` are held, the
    // largest buffers not in use. Returns the bytes freed. Buffers in use
    // are never touched, so it may be called at any time.
    size_t trim(uint64_t idle_acquisitions = kIdleAcquisitions, size_t keep_bytes = kKeepBytes);
    // Bytes held, in use or not.
    size_t held() const;

private:
    struct Entry {
        void* ptr;
        size_t bytes;
        bool in_use;
        uint64_t last_use;  // the acquisition that last took it
    };
    void free_entry(const Entry& e);

    std::vector<Entry> entries_;
    uint64_t acquisitions_ = 0;
    std::function<void*(size_t)> alloc_;
    std::function<void(void*)> free_;
};

}  // namespace chorus
