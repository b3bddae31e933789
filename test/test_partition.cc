// Pure rank and chunk arithmetic.
#include <catch2/catch.hpp>

#include "coll/partition.h"

using namespace chorus::coll;

TEST_CASE("split covers the range exactly with pieces differing by at most one", "[unit][partition]") {
    for (size_t total : {0, 1, 2, 7, 16, 17, 1000003})
        for (size_t parts : {1, 2, 3, 5, 16, 64}) {
            size_t next = 0, lo = ~size_t(0), hi = 0;
            for (size_t i = 0; i < parts; ++i) {
                Range r = split(total, parts, i);
                REQUIRE(r.begin == next);
                REQUIRE(r.end >= r.begin);
                next = r.end;
                lo = std::min(lo, r.size());
                hi = std::max(hi, r.size());
            }
            REQUIRE(next == total);
            REQUIRE(hi - lo <= 1);
            // Larger pieces come first.
            REQUIRE(split(total, parts, 0).size() == hi);
        }
}

TEST_CASE("ring neighbours wrap around", "[unit][partition]") {
    REQUIRE(ring_next(0, 1) == 0);
    REQUIRE(ring_prev(0, 1) == 0);
    REQUIRE(ring_next(4, 5) == 0);
    REQUIRE(ring_prev(0, 5) == 4);
    REQUIRE(mod(-7, 5) == 3);
    REQUIRE(mod(12, 5) == 2);
    for (int p = 1; p < 20; ++p)
        for (int r = 0; r < p; ++r) REQUIRE(ring_prev(ring_next(r, p), p) == r);
}

TEST_CASE("chunk counts round up and are never zero", "[unit][partition]") {
    REQUIRE(num_chunks(0, 10) == 1);
    REQUIRE(num_chunks(10, 10) == 1);
    REQUIRE(num_chunks(11, 10) == 2);
    REQUIRE(num_chunks(5, 0) == 5);
    REQUIRE(ceil_div(9, 4) == 3);
}
