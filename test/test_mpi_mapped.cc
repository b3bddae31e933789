// Mapped memory (chorus_mem_alloc) and windows (chorus_comm_register) under
// mpirun: every collective with a one-sided algorithm on mapped buffers,
// forced and chosen by the cost model, against references from per-rank
// seeds; ranks that mix mapped and plain buffers; a buffer freed while
// registered and another allocated in its place (never read stale); windows
// deregistered before and after their memory is freed, with no mapping of a
// peer's memory left behind; and the errors of the API, the same on every
// rank.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "chorus.h"
#include "mpi_test_util.h"
#include "reference.h"

using mpitest::all_ranks;
using mpitest::world_rank;
using mpitest::world_size;

namespace {

// Mappings of memory files of chorus_mem_alloc in this process: its own
// allocations and its peers' that it maps.
int mapped_files() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    int n = 0;
    while (std::getline(maps, line))
        if (line.find("chorus-mem") != std::string::npos) ++n;
    return n;
}

// A buffer from chorus_mem_alloc (or, with `plain`, malloc).
struct Buffer {
    void* p = nullptr;
    bool plain;
    Buffer(size_t bytes, bool plain_memory = false) : plain(plain_memory) {
        if (plain)
            p = std::malloc(bytes);
        else
            REQUIRE(chorus_mem_alloc(bytes, &p) == CHORUS_SUCCESS);
        std::memset(p, 0x5a, bytes);
    }
    ~Buffer() {
        if (plain)
            std::free(p);
        else
            chorus_mem_free(p);
    }
    char* c() const { return static_cast<char*>(p); }
};

const size_t kMaxCount = 1 << 20;  // 4 MiB of float32: past CHORUS_MAPPED_MIN, many pieces

std::vector<size_t> counts_for(int p) {
    return {1, size_t(p + 1), 30011, kMaxCount};
}

// Runs every collective that has a one-sided algorithm on `in` and `out`
// (each of kMaxCount x p float32 at least, this rank's plain or mapped) and
// checks the results bitwise against the references (float32 sums whose
// inputs round: the order of a reduction shows).
void check_all(chorus_comm_t comm, const Buffer& in, const Buffer& out, int seed) {
    const int p = world_size(), me = world_rank();
    const chorus_datatype_t dt = CHORUS_FLOAT32;
    const size_t w = sizeof(float);
    for (size_t count : counts_for(p)) {
        INFO("count " << count);
        std::vector<char> want(count * w * p);
        // All-reduce, out of place and in place.
        for (bool in_place : {false, true}) {
            ref::fill_input(dt, CHORUS_SUM, me, p, seed, in.c(), count);
            ref::expected(dt, CHORUS_SUM, p, seed, want.data(), count);
            void* recv = in_place ? in.p : out.p;
            chorus_result_t rc = chorus_allreduce(in.p, recv, count, dt, CHORUS_SUM, comm, nullptr);
            INFO("allreduce in place " << in_place << ": " << chorus_comm_last_error(comm));
            REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(recv, want.data(), count * w) == 0));
        }
        // Reduce to the last rank.
        ref::fill_input(dt, CHORUS_SUM, me, p, seed + 1, in.c(), count);
        ref::expected(dt, CHORUS_SUM, p, seed + 1, want.data(), count);
        chorus_result_t rc =
            chorus_reduce(in.p, me == p - 1 ? out.p : nullptr, count, dt, CHORUS_SUM, p - 1, comm, nullptr);
        INFO("reduce: " << chorus_comm_last_error(comm));
        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && (me != p - 1 || std::memcmp(out.p, want.data(), count * w) == 0)));
        // Broadcast from rank 0.
        ref::fill_input(dt, CHORUS_SUM, 0, p, seed + 2, want.data(), count);
        if (me == 0) std::memcpy(out.p, want.data(), count * w);
        rc = chorus_broadcast(out.p, out.p, count, dt, 0, comm, nullptr);
        INFO("broadcast: " << chorus_comm_last_error(comm));
        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(out.p, want.data(), count * w) == 0));
        // Reduce-scatter: blocks of count / p (at least 1).
        const size_t blk = std::max<size_t>(1, count / static_cast<size_t>(p));
        ref::fill_input(dt, CHORUS_SUM, me, p, seed + 3, in.c(), blk * p);
        ref::expected(dt, CHORUS_SUM, p, seed + 3, want.data(), blk * p);
        rc = chorus_reduce_scatter(in.p, out.p, blk, dt, CHORUS_SUM, comm, nullptr);
        INFO("reduce_scatter: " << chorus_comm_last_error(comm));
        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(out.p, want.data() + me * blk * w, blk * w) == 0));
        // All-gather and gather of blocks of count / p, scatter of them.
        for (int k = 0; k < p; ++k) ref::fill_input(dt, CHORUS_SUM, k, p, seed + 4, want.data() + k * blk * w, blk);
        std::memcpy(in.p, want.data() + me * blk * w, blk * w);
        rc = chorus_allgather(in.p, out.p, blk, dt, comm, nullptr);
        INFO("allgather: " << chorus_comm_last_error(comm));
        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(out.p, want.data(), blk * p * w) == 0));
        std::memset(out.p, 0, blk * p * w);
        rc = chorus_gather(in.p, out.p, blk, dt, 0, comm, nullptr);
        INFO("gather: " << chorus_comm_last_error(comm));
        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && (me != 0 || std::memcmp(out.p, want.data(), blk * p * w) == 0)));
        if (me == p - 1) std::memcpy(in.p, want.data(), blk * p * w);
        rc = chorus_scatter(in.p, out.p, blk, dt, p - 1, comm, nullptr);
        INFO("scatter: " << chorus_comm_last_error(comm));
        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(out.p, want.data() + me * blk * w, blk * w) == 0));
    }
}

// A communicator with every collective forced to one_sided (or none forced).
chorus_comm_t make_comm(bool forced) {
    if (forced)
        setenv("CHORUS_ALGO",
               "allreduce=one_sided,bcast=one_sided,reduce=one_sided,reduce_scatter=one_sided,allgather=one_sided,"
               "gather=one_sided,scatter=one_sided",
               1);
    chorus_comm_t c = nullptr;
    const chorus_result_t rc = chorus_comm_create(MPI_COMM_WORLD, &c);
    if (forced) unsetenv("CHORUS_ALGO");
    REQUIRE(rc == CHORUS_SUCCESS);
    return c;
}

}  // namespace

TEST_CASE("mapped memory: the allocator's own errors", "[mpi][mapped]") {
    void* p = reinterpret_cast<void*>(1);
    CHECK(chorus_mem_alloc(0, &p) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(p == nullptr);
    CHECK(chorus_mem_alloc(16, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    REQUIRE(chorus_mem_alloc(10000, &p) == CHORUS_SUCCESS);
    // Zeroed, whole pages, and known as mapped memory in all of them.
    CHECK(static_cast<char*>(p)[9999] == 0);
    CHECK(chorus_mem_mapped(p, 10000) == 1);
    CHECK(chorus_mem_mapped(static_cast<char*>(p) + 100, 4096) == 1);
    CHECK(chorus_mem_mapped(p, 1 << 20) == 0);
    int local = 0;
    CHECK(chorus_mem_mapped(&local, sizeof local) == 0);
    CHECK(chorus_mem_free(static_cast<char*>(p) + 64) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(chorus_mem_free(&local) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(chorus_mem_free(p) == CHORUS_SUCCESS);
    CHECK(chorus_mem_mapped(p, 1) == 0);
    CHECK(chorus_mem_free(nullptr) == CHORUS_SUCCESS);
}

TEST_CASE("mapped memory: every collective on windows, forced one-sided and chosen", "[mpi][mapped]") {
    const int p = world_size();
    const size_t bytes = kMaxCount * p * sizeof(float);
    for (bool forced : {true, false}) {
        INFO("forced " << forced);
        chorus_comm_t comm = make_comm(forced);
        {
            Buffer in(bytes), out(bytes);
            REQUIRE(all_ranks(chorus_comm_register(comm, in.p, bytes) == CHORUS_SUCCESS));
            REQUIRE(all_ranks(chorus_comm_register(comm, out.p, bytes) == CHORUS_SUCCESS));
            check_all(comm, in, out, 10);
            REQUIRE(all_ranks(chorus_comm_deregister(comm, in.p) == CHORUS_SUCCESS));
            REQUIRE(all_ranks(chorus_comm_deregister(comm, out.p) == CHORUS_SUCCESS));
        }
        REQUIRE(chorus_comm_destroy(comm) == CHORUS_SUCCESS);
    }
    // Nothing mapped is left: neither this rank's memory nor its peers'.
    CHECK(all_ranks(mapped_files() == 0));
}

TEST_CASE("mapped memory: ranks that mix mapped and plain buffers agree", "[mpi][mapped]") {
    const int p = world_size(), me = world_rank();
    const size_t bytes = kMaxCount * p * sizeof(float);
    for (bool forced : {true, false}) {
        chorus_comm_t comm = make_comm(forced);
        {
            Buffer window(64);
            REQUIRE(all_ranks(chorus_comm_register(comm, window.p, 64) == CHORUS_SUCCESS));
            // Rank 0 plain; then only rank 0 mapped; then each rank's input
            // mapped and its output plain.
            for (int mix = 0; mix < 3; ++mix) {
                INFO("forced " << forced << " mix " << mix);
                const bool in_plain = mix == 0 ? me == 0 : mix == 1 ? me != 0 : false;
                const bool out_plain = mix == 2 ? true : in_plain;
                Buffer in(bytes, in_plain), out(bytes, out_plain);
                check_all(comm, in, out, 20 + mix);
            }
        }
        REQUIRE(chorus_comm_destroy(comm) == CHORUS_SUCCESS);
    }
    CHECK(all_ranks(mapped_files() == 0));
}

TEST_CASE("mapped memory: a window freed while registered, memory allocated again in its place", "[mpi][mapped]") {
    const int p = world_size(), me = world_rank();
    const size_t count = kMaxCount, bytes = count * sizeof(float);
    chorus_comm_t comm = make_comm(true);
    std::vector<char> want(bytes);
    void* first = nullptr;
    REQUIRE(chorus_mem_alloc(bytes, &first) == CHORUS_SUCCESS);
    REQUIRE(all_ranks(chorus_comm_register(comm, first, bytes) == CHORUS_SUCCESS));
    for (int round = 0; round < 4; ++round) {
        // Round 0 on the window; then its memory is freed (the window stays
        // registered) and each round's buffer is a new allocation, often at
        // the same address, with new contents.
        void* buf = first;
        if (round > 0) REQUIRE(chorus_mem_alloc(bytes, &buf) == CHORUS_SUCCESS);
        ref::fill_input(CHORUS_FLOAT32, CHORUS_SUM, me, p, 30 + round, static_cast<char*>(buf), count);
        ref::expected(CHORUS_FLOAT32, CHORUS_SUM, p, 30 + round, want.data(), count);
        const chorus_result_t rc = chorus_allreduce(buf, buf, count, CHORUS_FLOAT32, CHORUS_SUM, comm, nullptr);
        INFO("round " << round << ": " << chorus_comm_last_error(comm));
        REQUIRE(all_ranks(rc == CHORUS_SUCCESS && std::memcmp(buf, want.data(), bytes) == 0));
        REQUIRE(chorus_mem_free(buf) == CHORUS_SUCCESS);
    }
    // Deregistered after its memory went: fine, on every rank.
    REQUIRE(all_ranks(chorus_comm_deregister(comm, first) == CHORUS_SUCCESS));
    // And the other order: deregistered, then freed.
    void* second = nullptr;
    REQUIRE(chorus_mem_alloc(bytes, &second) == CHORUS_SUCCESS);
    REQUIRE(all_ranks(chorus_comm_register(comm, second, bytes) == CHORUS_SUCCESS));
    REQUIRE(all_ranks(chorus_comm_deregister(comm, second) == CHORUS_SUCCESS));
    REQUIRE(chorus_mem_free(second) == CHORUS_SUCCESS);
    // Every mapping is gone already: a deregistered window's at once, and
    // those the calls made of the rounds' buffers (not windows) when the
    // next of their owner's allocations was mapped (the second window).
    CHECK(all_ranks(mapped_files() == 0));
    REQUIRE(chorus_comm_destroy(comm) == CHORUS_SUCCESS);
    CHECK(all_ranks(mapped_files() == 0));
}

TEST_CASE("mapped memory: registration errors are the same on every rank", "[mpi][mapped]") {
    const int p = world_size(), me = world_rank();
    chorus_comm_t comm = make_comm(false);
    Buffer mapped(4096), plain(4096, true);
    // One rank passes plain memory: every rank fails, naming it.
    const chorus_result_t rc = chorus_comm_register(comm, me == p - 1 ? plain.p : mapped.p, 4096);
    INFO(chorus_comm_last_error(comm));
    CHECK(all_ranks(rc == CHORUS_ERR_INVALID_ARGUMENT));
    CHECK(std::string(chorus_comm_last_error(comm)).find(std::to_string(p - 1)) != std::string::npos);
    // Past the allocation's end, or empty: the same.
    CHECK(all_ranks(chorus_comm_register(comm, mapped.p, 8192) == CHORUS_ERR_INVALID_ARGUMENT));
    CHECK(all_ranks(chorus_comm_register(comm, mapped.p, 0) == CHORUS_ERR_INVALID_ARGUMENT));
    // Registered twice; deregistered where there is no window.
    REQUIRE(all_ranks(chorus_comm_register(comm, mapped.p, 4096) == CHORUS_SUCCESS));
    CHECK(all_ranks(chorus_comm_register(comm, mapped.p, 4096) == CHORUS_ERR_INVALID_ARGUMENT));
    CHECK(all_ranks(chorus_comm_deregister(comm, me == 0 ? plain.p : mapped.p) == CHORUS_ERR_INVALID_ARGUMENT));
    // The communicator still works, and the window is still there.
    float x = 1, sum = 0;
    CHECK(all_ranks(chorus_allreduce(&x, &sum, 1, CHORUS_FLOAT32, CHORUS_SUM, comm, nullptr) == CHORUS_SUCCESS &&
                    sum == static_cast<float>(p)));
    CHECK(all_ranks(chorus_comm_deregister(comm, mapped.p) == CHORUS_SUCCESS));
    CHECK(all_ranks(chorus_comm_deregister(comm, mapped.p) == CHORUS_ERR_INVALID_ARGUMENT));
    REQUIRE(chorus_comm_destroy(comm) == CHORUS_SUCCESS);
}
