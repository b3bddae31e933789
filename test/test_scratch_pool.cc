// The scratch pool gives memory back: trim() frees what has been idle for a
// while and keeps the idle total under a ceiling, never touching a buffer in
// use; and the algorithms' scratch stays bounded.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>

#include "coll/algorithm.h"
#include "coll/steps.h"
#include "exec/scratch_pool.h"

using namespace chorus;

namespace {
constexpr size_t kMiB = size_t(1) << 20;

// A pool whose memory is counted (and not touched).
struct CountedPool {
    std::map<void*, size_t> live;
    size_t allocated = 0;
    ScratchPool pool{[this](size_t n) {
                         void* p = std::malloc(n);
                         live[p] = n;
                         allocated += n;
                         return p;
                     },
                     [this](void* p) {
                         live.erase(p);
                         std::free(p);
                     }};
};
}  // namespace

TEST_CASE("after one large call, many small ones give the large buffer back", "[unit][scratch]") {
    for (bool counted : {false, true}) {
        CAPTURE(counted);
        CountedPool c;
        ScratchPool host;
        ScratchPool& pool = counted ? c.pool : host;
        pool.release(pool.acquire(200 * kMiB));
        REQUIRE(pool.held() >= 200 * kMiB);
        // The small calls get their own buffer, not the large one.
        size_t held_early = 0;
        for (uint64_t i = 1; i <= 200; ++i) {
            void* p = pool.acquire(64 * 1024);
            REQUIRE(p != nullptr);
            pool.release(p);
            pool.trim();
            if (i == ScratchPool::kIdleAcquisitions - 2) held_early = pool.held();
        }
        // Kept while it might still be reused, freed after it was not.
        REQUIRE(held_early >= 200 * kMiB);
        REQUIRE(pool.held() < 200 * kMiB);
        REQUIRE(pool.held() <= 2 * kMiB);
        if (counted) REQUIRE(c.live.size() == 1);
    }
}

TEST_CASE("a buffer used every few calls is kept, and one in use is never freed", "[unit][scratch]") {
    CountedPool c;
    ScratchPool& pool = c.pool;
    for (int i = 0; i < 300; ++i) {
        void* big = i % 8 == 0 ? pool.acquire(64 * kMiB) : nullptr;
        void* small = pool.acquire(4096);
        pool.release(small);
        pool.release(big);
        pool.trim();
    }
    // Two buffers, allocated once each: nothing was freed and allocated again.
    REQUIRE(c.live.size() == 2);
    REQUIRE(c.allocated == pool.held());
    void* held = pool.acquire(64 * kMiB);
    REQUIRE(pool.trim(0, 0) > 0);  // the idle small one goes
    REQUIRE(c.live.count(held) == 1);
    REQUIRE(pool.held() == 64 * kMiB);
    pool.release(held);
    REQUIRE(pool.trim(0, 0) == 64 * kMiB);
    REQUIRE(pool.held() == 0);
    REQUIRE(c.live.empty());
}

TEST_CASE("trim keeps the idle memory under its ceiling, largest first", "[unit][scratch]") {
    CountedPool c;
    ScratchPool& pool = c.pool;
    void* a = pool.acquire(16 * kMiB);
    void* b = pool.acquire(32 * kMiB);
    void* d = pool.acquire(64 * kMiB);
    pool.release(a);
    pool.release(b);
    pool.release(d);
    // All recently used: only the ceiling applies.
    REQUIRE(pool.trim(ScratchPool::kIdleAcquisitions, 60 * kMiB) == 64 * kMiB);
    REQUIRE(pool.held() == 48 * kMiB);
    REQUIRE(pool.trim(ScratchPool::kIdleAcquisitions, 48 * kMiB) == 0);
    REQUIRE(pool.trim(ScratchPool::kIdleAcquisitions, 20 * kMiB) == 32 * kMiB);
    REQUIRE(c.live.size() == 1);
    REQUIRE(c.live.count(a) == 1);
}

TEST_CASE("halving reduce-scatter and Rabenseifner keep their scratch bounded", "[unit][scratch]") {
    for (int p : {2, 3, 4, 6, 8, 13, 16}) {
        for (int r = 0; r < p; ++r) {
            CAPTURE(p, r);
            coll::CollArgs a;
            a.size = p;
            a.rank = r;
            a.chunk_bytes = 4096;  // 1024 floats a piece
            a.depth = 4;
            const size_t slots = size_t(a.depth) * a.chunk_bytes;
            a.coll = coll::Collective::Allreduce;
            a.count = 1 << 16;
            // The accumulator is the receive buffer: only the slots.
            REQUIRE(coll::find_algorithm(a.coll, "rabenseifner").build(a)->scratch_bytes() <= slots);
            a.coll = coll::Collective::ReduceScatter;
            a.count = (1 << 16) / p;
            const size_t input = a.total_count() * 4;
            const bool folded = r < 2 * (p - coll::pow2_floor(p));
            // Half the input (the half kept after the first round), or all of
            // it on an odd rank of the fold; plus the slots.
            const size_t acc = folded ? input : input / 2 + 4 * p;
            REQUIRE(coll::find_algorithm(a.coll, "halving").build(a)->scratch_bytes() <= acc + slots);
        }
    }
}
