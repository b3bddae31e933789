// Scratch memory owned by a communicator. Buffers are allocated once, backed
// by huge pages where the kernel allows, and touched when allocated (the first
// touch of a 4 KiB page costs ~15 us on small VMs); later operations reuse
// them, so steady-state calls allocate no scratch.
#pragma once

#include <cstddef>
#include <vector>

namespace chorus {

class ScratchPool {
public:
    ScratchPool() = default;
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
};

}  // namespace chorus
