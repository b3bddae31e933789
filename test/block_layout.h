// The blocks of the v-form tests: how many elements rank s sends rank d,
// what they are, and where a rank puts its blocks (a shuffled order with
// gaps). Depends only on the seeded bit stream, so the loopback and the
// mpirun tests draw the same cases and the reference never involves Chorus.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "seeds.h"

namespace layout {

// Equal blocks of `count`, irregular ones (0 .. count, a quarter empty), or
// skewed (rank `big`'s blocks hold count * size, the rest 0 or 1).
enum class Shape { Even, Irregular, Skewed };

// Elements rank s of p sends rank d (d = -1: a block every rank gets).
inline size_t pair_count(Shape shape, size_t count, uint64_t seed, int big, int p, int s, int d) {
    switch (shape) {
        case Shape::Even: return count;
        case Shape::Skewed: return s == big ? count * static_cast<size_t>(p) : (s + d + 3) % 3 == 0;
        case Shape::Irregular: break;
    }
    uint64_t h = seeds::mix(seed * 0x9e3779b9ull + static_cast<uint64_t>(s) * 4099 + static_cast<uint64_t>(d + 1));
    return h % 4 == 0 ? 0 : (h >> 8) % (count + 1);
}

// The seed of the block rank s sends rank d (d = -1: every rank).
inline uint64_t block_seed(uint64_t seed, int d) {
    return seed ^ seeds::mix(static_cast<uint64_t>(d + 7));
}

// Displacements of blocks with these counts, in an order shuffled by
// `salt`, each after a gap of 0..2 elements; *extent: where the last ends.
inline std::vector<size_t> shuffled(const std::vector<size_t>& counts, uint64_t salt, size_t* extent) {
    std::vector<int> order(counts.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [salt](int x, int y) { return seeds::mix(salt ^ uint64_t(x)) < seeds::mix(salt ^ uint64_t(y)); });
    std::vector<size_t> displs(counts.size());
    size_t at = 0;
    for (int i : order) {
        at += seeds::mix(salt + static_cast<uint64_t>(i)) % 3;
        displs[i] = at;
        at += counts[i];
    }
    *extent = at;
    return displs;
}

}  // namespace layout
