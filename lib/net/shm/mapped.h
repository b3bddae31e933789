// Memory the ranks of a host map into each other: chorus_mem_alloc's
// allocations, each a memory file (memfd) mapped shared. A peer maps an
// allocation through /proc/<pid>/fd/<fd> (the same permission as
// cross-memory attach) and then reads and writes it with plain loads and
// stores: a collective on such buffers moves each byte once, at the rate
// of a copy, without a system call per transfer.
//
// An allocation is known by a serial number that this process never
// reuses, so a peer's mapping of an allocation since freed is never taken
// for a newer one at the same address. A peer keeps a bounded number of
// mappings (the least recently used go); it lets go of those its owner has
// freed whenever it maps a new one of that owner, and of all of them when
// the transport ends. A mapping stays valid however its owner ends (the
// file lives while anyone maps it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>

#include "net/transport.h"

namespace chorus::net::mapped {

// `bytes` (rounded up to pages; at least one) of zeroed memory, or null
// with the reason in `*error`.
void* allocate(size_t bytes, std::string* error);
// Frees what allocate() returned: false when `p` is not the start of an
// allocation.
bool release(void* p);
// Whether [addr, addr + bytes) lies in one allocation, whose reference goes
// to `*ref`.
bool find(const void* addr, size_t bytes, MappedRef* ref);

// One process's mappings of its peers' allocations.
class PeerMaps {
public:
    static constexpr size_t kMaxMaps = 64;
    PeerMaps() = default;
    ~PeerMaps();
    PeerMaps(const PeerMaps&) = delete;
    PeerMaps& operator=(const PeerMaps&) = delete;
    // Where this process sees the region of `ref` (its start: add
    // ref.offset), an allocation of process `pid`; null when it cannot be
    // mapped (the process is gone, or this one may not open its files).
    char* map(int pid, const MappedRef& ref);
    // Unmaps `pid`'s allocation `serial` if mapped here.
    void drop(int pid, uint64_t serial);
    size_t size() const { return maps_.size(); }

private:
    struct Map {
        int pid;
        uint64_t serial;
        char* base;
        size_t bytes;
        uint64_t fd, inode;  // the owner's memory file, while it holds it
    };
    // Unmaps `pid`'s allocations that it no longer holds (freed since).
    void prune(int pid);
    std::list<Map> maps_;  // most recently used first
};

}  // namespace chorus::net::mapped
