// Pure rank and chunk arithmetic shared by the algorithms. No I/O, no state:
// unit-tested on its own (test/test_partition.cc).
#pragma once

#include <cstddef>

namespace chorus::coll {

struct Range {
    size_t begin;
    size_t end;
    size_t size() const { return end - begin; }
};

// Split `total` items into `parts` contiguous pieces whose sizes differ by at
// most one (the first `total % parts` pieces are one larger). Piece i.
inline Range split(size_t total, size_t parts, size_t i) {
    size_t base = total / parts, extra = total % parts;
    size_t begin = i * base + (i < extra ? i : extra);
    return {begin, begin + base + (i < extra ? 1 : 0)};
}

// (a mod n) for possibly negative a.
inline int mod(long a, int n) {
    long r = a % n;
    return static_cast<int>(r < 0 ? r + n : r);
}

inline int ring_next(int rank, int size) {
    return mod(rank + 1, size);
}
inline int ring_prev(int rank, int size) {
    return mod(rank - 1, size);
}

inline size_t ceil_div(size_t a, size_t b) {
    return (a + b - 1) / b;
}

// Number of pipeline chunks for pieces of at most `max_items` items when a
// chunk holds at most `chunk_items` (at least 1 chunk).
inline size_t num_chunks(size_t max_items, size_t chunk_items) {
    size_t c = ceil_div(max_items, chunk_items ? chunk_items : 1);
    return c ? c : 1;
}

}  // namespace chorus::coll
