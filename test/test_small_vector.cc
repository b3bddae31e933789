// The interposer's SmallVector (lib/mpi/small_vector.h): inline up to N
// elements, on the heap past them, copied and moved either way.
#include <catch2/catch.hpp>
#include <numeric>
#include <vector>

#include "mpi/small_vector.h"

using chorus_mpi::SmallVector;

TEST_CASE("SmallVector holds inline and heap elements alike", "[unit]") {
    for (size_t n : {size_t(0), size_t(1), size_t(4), size_t(5), size_t(100)}) {
        CAPTURE(n);
        std::vector<int> ref(n);
        std::iota(ref.begin(), ref.end(), 7);
        SmallVector<int, 4> v;
        v.assign(ref.begin(), ref.end());
        REQUIRE(v.size() == n);
        REQUIRE(std::vector<int>(v.begin(), v.end()) == ref);
        // Grow from what it holds: the elements stay, the new ones are zero.
        v.resize(n + 9);
        for (size_t i = 0; i < n; ++i) REQUIRE(v[i] == ref[i]);
        for (size_t i = n; i < n + 9; ++i) REQUIRE(v[i] == 0);
        v.resize(n);
        SmallVector<int, 4> copy(v), moved(std::move(v));
        REQUIRE(std::vector<int>(copy.begin(), copy.end()) == ref);
        REQUIRE(std::vector<int>(moved.begin(), moved.end()) == ref);
        REQUIRE(v.empty());
        // Assigned over a larger one, and filled with one value.
        SmallVector<int, 4> big;
        big.assign(50, -1);
        big = copy;
        REQUIRE(std::vector<int>(big.begin(), big.end()) == ref);
        big = std::move(moved);
        REQUIRE(std::vector<int>(big.begin(), big.end()) == ref);
        big.assign(n, 3);
        REQUIRE(std::vector<int>(big.begin(), big.end()) == std::vector<int>(n, 3));
    }
}
