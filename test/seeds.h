// The per-rank seeded bit stream every test draws its inputs from. Depends
// on nothing (the interposer's tests use it without any Chorus header).
#pragma once

#include <cstddef>
#include <cstdint>

namespace seeds {

inline uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// 64 bits for element i of rank `rank`'s input under `seed`.
inline uint64_t bits(uint64_t seed, int rank, size_t i) {
    return mix(seed ^ mix((static_cast<uint64_t>(rank) << 40) ^ i));
}

}  // namespace seeds
