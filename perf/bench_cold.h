// --cold-cache: the buffers of the timed calls come from a ring of buffer
// sets that together are far larger than the last-level cache, and the
// program rewrites each set (its input restored, its output cleared) right
// after the call that used it. A set is used again only after every other
// set has been, so no library finds its data in a cache or its pages pinned
// by the call before, as in a program whose data changes between calls.
// MPI's calls and Chorus's take turns on the same ring.
#pragma once

#include <cstddef>
#include <string>

namespace bench {

class ColdRing {
public:
    // The ring's total size: max(4 x the last-level cache, 256 MiB).
    static size_t target_bytes();
    // The memory the ring needs for sets of `set_bytes` at most.
    static size_t arena_bytes(size_t set_bytes);

    ColdRing() = default;
    ~ColdRing();
    ColdRing(const ColdRing&) = delete;
    ColdRing& operator=(const ColdRing&) = delete;

    // Allocate and touch arena_bytes(max_set_bytes) bytes; false (with
    // `error`) when the memory is not there.
    // With `mapped`, from chorus_mem_alloc (--mapped).
    bool allocate(size_t max_set_bytes, std::string& error, bool mapped = false);
    bool active() const { return arena_ != nullptr; }
    // The whole arena (to register it as a window).
    void* arena() const { return arena_; }
    size_t arena_size() const { return arena_bytes_; }

    // Cut the arena into sets of an `a_bytes` and a `b_bytes` buffer (b may
    // be 0: in place) and fill every set from `input` (a_bytes).
    void layout(size_t a_bytes, size_t b_bytes, const void* input);
    size_t sets() const { return sets_; }
    void* a(size_t set) const { return arena_ + set * stride_; }
    void* b(size_t set) const { return arena_ + set * stride_ + b_offset_; }
    // The set for the next call; the one used before is rewritten first.
    size_t next();

private:
    void touch(size_t set);

    char* arena_ = nullptr;
    size_t arena_bytes_ = 0;
    bool mapped_ = false;
    const void* input_ = nullptr;
    size_t a_bytes_ = 0, b_bytes_ = 0, b_offset_ = 0, stride_ = 0, sets_ = 0;
    size_t turn_ = 0;
};

}  // namespace bench
