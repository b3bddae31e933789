// The cost model's machine constants at creation: every rank loads its own
// cost file (CHORUS_COST_FILE, set per rank before each creation here), and
// every rank then uses rank 0's constants; a setting overrides every file; a
// missing, stale or corrupt file is no error (the defaults and the OS's
// cache size). The collectives still compute the right results.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/handles.h"
#include "core/machine_costs.h"
#include "mpi_test_util.h"

using namespace chorus;

namespace {

// A folder every rank sees (rank 0 makes it), removed at the end.
struct SharedDir {
    std::string path;
    SharedDir() {
        char buf[64] = "/tmp/chorus-costfile-XXXXXX";
        if (mpitest::world_rank() == 0) REQUIRE(mkdtemp(buf) != nullptr);
        MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
        path = buf;
    }
    ~SharedDir() {
        MPI_Barrier(MPI_COMM_WORLD);
        if (mpitest::world_rank() == 0) std::system(("rm -rf '" + path + "'").c_str());
    }
};

// This rank's file, holding `text`; CHORUS_COST_FILE names it.
void use_file(const SharedDir& d, const std::string& text) {
    const std::string file = d.path + "/cost-rank" + std::to_string(mpitest::world_rank()) + ".conf";
    std::remove(file.c_str());
    if (!text.empty()) std::ofstream(file) << text;
    setenv("CHORUS_COST_FILE", file.c_str(), 1);
}

// A file whose constants differ on every rank.
std::string rank_file(int r) {
    return cat("format = 1\nhost = rank", r, "\ncopy_gbs = ", 2 + r, "\nslot_us = ", 0.5 + r,
               "\ncache_mib = ", 10 * (r + 1), "\n");
}

// A communicator's constants, and an all-reduce and a broadcast on it
// checked (big enough for the pipelined and one-sided algorithms).
coll::CostParams create_and_check() {
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    const coll::CostParams cost = api::find_comm(c)->config().cost;
    const int me = mpitest::world_rank(), p = mpitest::world_size();
    for (size_t n : {size_t(16), size_t(1) << 20}) {
        std::vector<float> x(n, static_cast<float>(me + 1)), y(n, -1);
        REQUIRE(chorus_allreduce(x.data(), y.data(), n, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) == CHORUS_SUCCESS);
        const float want = static_cast<float>(p * (p + 1) / 2);
        size_t bad = 0;
        for (float v : y) bad += v != want;
        REQUIRE(bad == 0);
        std::vector<float> b(n, me == 0 ? 7.0f : 0.0f);
        REQUIRE(chorus_broadcast(b.data(), b.data(), n, CHORUS_FLOAT32, 0, c, nullptr) == CHORUS_SUCCESS);
        for (float v : b) bad += v != 7.0f;
        REQUIRE(bad == 0);
    }
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
    return cost;
}

// What rank 0 uses without a file: the defaults, and this host's cache size.
coll::CostParams without_file() {
    return machine_costs(Config::from_strings({}), CostFile{}, host_cache_bytes()).cost;
}

void require_same(const coll::CostParams& got, const coll::CostParams& want) {
    for (const auto& k : machine_constants()) {
        INFO(k.key);
        REQUIRE(got.*k.member == want.*k.member);
    }
}

}  // namespace

TEST_CASE("ranks with different cost files all use rank 0's constants", "[mpi][costs]") {
    SharedDir d;
    use_file(d, rank_file(mpitest::world_rank()));
    const coll::CostParams cost = create_and_check();
    CHECK(cost.copy_gbs == 2);
    CHECK(cost.slot_us == 0.5);
    CHECK(cost.cache_mib == 10);
    CHECK(cost.reduce_gbs == coll::CostParams{}.reduce_gbs);
    unsetenv("CHORUS_COST_FILE");
}

TEST_CASE("a CHORUS_COST_* setting overrides every rank's file", "[mpi][costs]") {
    SharedDir d;
    use_file(d, rank_file(mpitest::world_rank()));
    setenv("CHORUS_COST_COPY_GBS", "5", 1);
    const coll::CostParams cost = create_and_check();
    unsetenv("CHORUS_COST_COPY_GBS");
    unsetenv("CHORUS_COST_FILE");
    CHECK(cost.copy_gbs == 5);
    CHECK(cost.slot_us == 0.5);
}

TEST_CASE("missing, stale and corrupt cost files are no error: the defaults", "[mpi][costs]") {
    SharedDir d;
    const int me = mpitest::world_rank();
    // Rank 0's file is corrupt, then stale, then missing; the others' are
    // each of these in turn, and valid ones, which rank 0's stand over.
    const std::vector<std::string> files = {"format = 1\ncopy_gbs = fast\n", "format = 99\ncopy_gbs = 1\n", ""};
    for (size_t i = 0; i < files.size(); ++i) {
        INFO("rank 0's file: " << (files[i].empty() ? "missing" : files[i]));
        use_file(d, me == 0 ? files[i] : me % 2 ? files[(i + 1) % files.size()] : rank_file(me));
        require_same(create_and_check(), without_file());
        MPI_Barrier(MPI_COMM_WORLD);
    }
    setenv("CHORUS_COST_FILE", "none", 1);
    require_same(create_and_check(), without_file());
    unsetenv("CHORUS_COST_FILE");
}
