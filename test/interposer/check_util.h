// What the interposer checks share: seeded inputs, the per-rank context, and
// the comparison that counts each call as eligible or not.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../seeds.h"
#include "mpi_checks.h"

namespace checks {

using seeds::bits;
using seeds::mix;

// Bytes that rank `rank` contributes: any pattern will do for data movement.
inline std::vector<unsigned char> seeded_bytes(uint64_t seed, int rank, size_t n) {
    std::vector<unsigned char> v(n + 1);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(bits(seed, rank, i / 8) >> (8 * (i % 8)));
    return v;
}

struct Ctx {
    int rank;
    int size;
    Tally& tally;
    bool plain_mpi;  // the calls go to MPI itself (control, or passed through)
    int failures = 0;
    uint64_t seed = 1000;

    void fail(const std::string& what) {
        std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
        ++failures;
    }

    void count(bool eligible) { ++(eligible ? tally.eligible : tally.ineligible); }

    // Count the call, then compare the first `n` elements bitwise.
    template <typename T>
    void check(int rc, const std::string& what, const std::vector<T>& got, const std::vector<T>& want, size_t n,
               bool eligible) {
        count(eligible);
        if (rc != MPI_SUCCESS) {
            fail(what + ": " + checks::returned(rc));
            return;
        }
        if (n == 0 || std::memcmp(got.data(), want.data(), n * sizeof(T)) == 0) return;
        size_t i = 0;
        while (std::memcmp(&got[i], &want[i], sizeof(T)) == 0) ++i;
        fail(what + ": element " + std::to_string(i) + " differs");
    }
};

// In mpi_movement.cc.
void all_movement(Ctx& c);
void communicators(Ctx& c);
void pass_through(Ctx& c);
// In mpi_vmovement.cc.
void vector_movement(Ctx& c);

}  // namespace checks
