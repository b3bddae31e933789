// Faults under mpirun: arguments that disagree across ranks (CHORUS_CHECK),
// a rank that never joins (timeout), giving up on purpose (abort), and
// creating and destroying communicators many times without leaking memory or
// file descriptors.
#include <dirent.h>
#include <mpi.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chorus.h"
#include "mpi_test_util.h"

using mpitest::all_ranks;
using mpitest::rss_kib;
using mpitest::world_rank;
using mpitest::world_size;

namespace {

chorus_comm_t make_comm(const char* settings) {
    // settings: "NAME=VALUE NAME=VALUE"
    std::vector<std::string> names;
    for (const char* p = settings; *p;) {
        const char* end = std::strchr(p, ' ');
        std::string kv(p, end ? end - p : std::strlen(p));
        size_t eq = kv.find('=');
        setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
        names.push_back(kv.substr(0, eq));
        p = end ? end + 1 : p + kv.size();
    }
    chorus_comm_t c = nullptr;
    chorus_result_t rc = chorus_comm_create(MPI_COMM_WORLD, &c);
    for (const auto& n : names) unsetenv(n.c_str());
    REQUIRE(rc == CHORUS_SUCCESS);
    return c;
}

size_t open_fds() {
    size_t n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
        while (readdir(d)) ++n;
        closedir(d);
    }
    return n;
}

}  // namespace

TEST_CASE("CHORUS_CHECK turns disagreeing arguments into a mismatch error on every rank", "[mpi][faults]") {
    const int me = world_rank(), p = world_size();
    chorus_comm_t c = make_comm("CHORUS_CHECK=1");
    std::vector<float> buf(64, 1.0f);
    // Rank 0 passes a different count.
    size_t count = me == 0 && p > 1 ? 33 : 32;
    chorus_result_t rc = chorus_allreduce(buf.data(), buf.data(), count, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr);
    std::string msg = chorus_comm_last_error(c);
    INFO(msg);
    if (p > 1) {
        REQUIRE(all_ranks(rc == CHORUS_ERR_MISMATCH));
        REQUIRE(all_ranks(msg.find("ranks 0:") != std::string::npos && msg.find("count=33") != std::string::npos &&
                          msg.find("count=32") != std::string::npos));
        // A root that differs is caught too.
        rc = chorus_broadcast(buf.data(), buf.data(), 4, CHORUS_FLOAT32, me == p - 1 ? 0 : p - 1, c, nullptr);
        REQUIRE(all_ranks(rc == CHORUS_ERR_MISMATCH));
    }
    // The communicator is still usable afterwards.
    std::vector<float> ones(32, 1.0f);
    REQUIRE(all_ranks(chorus_allreduce(ones.data(), ones.data(), 32, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) ==
                      CHORUS_SUCCESS));
    REQUIRE(all_ranks(ones[31] == float(p)));
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("CHORUS_CHECK compares the v collectives' counts pair by pair", "[mpi][faults]") {
    const int me = world_rank(), p = world_size();
    if (p < 2) return;
    chorus_comm_t c = make_comm("CHORUS_CHECK=1");
    const size_t up = static_cast<size_t>(p);
    std::vector<int32_t> in(4 * up + 4, 7), out(4 * up + 4);
    std::vector<size_t> counts(up, 2), displs(up);
    for (size_t i = 0; i < up; ++i) displs[i] = 4 * i;  // room for a wrong count
    auto all_mismatch = [&](chorus_result_t rc, const char* needle) {
        std::string msg = chorus_comm_last_error(c);
        INFO(msg);
        return all_ranks(rc == CHORUS_ERR_MISMATCH && msg.find(needle) != std::string::npos);
    };
    // Agreeing counts pass the check.
    REQUIRE(all_ranks(chorus_alltoallv(in.data(), counts.data(), displs.data(), out.data(), counts.data(),
                                       displs.data(), CHORUS_INT32, c, nullptr) == CHORUS_SUCCESS));
    // Rank 1 expects one element more from rank 0 than rank 0 sends it.
    std::vector<size_t> recvcounts = counts;
    if (me == 1) recvcounts[0] = 3;
    REQUIRE(all_mismatch(chorus_alltoallv(in.data(), counts.data(), displs.data(), out.data(), recvcounts.data(),
                                          displs.data(), CHORUS_INT32, c, nullptr),
                         "expects 3 elements from rank 0, which sends 2"));
    // The root of a gatherv expects another count from rank p-1.
    recvcounts = counts;
    recvcounts[up - 1] = 1;
    REQUIRE(all_mismatch(chorus_gatherv(in.data(), 2, me == 0 ? out.data() : nullptr, recvcounts.data(), displs.data(),
                                        CHORUS_INT32, 0, c, nullptr),
                         "which sends 2"));
    // A scatterv's receiver expects less than the root sends it.
    REQUIRE(all_mismatch(chorus_scatterv(in.data(), counts.data(), displs.data(), out.data(), me == p - 1 ? 1 : 2,
                                         CHORUS_INT32, 0, c, nullptr),
                         "expects 1 elements from rank 0"));
    // allgatherv's recvcounts must agree everywhere.
    recvcounts = counts;
    recvcounts[0] = me == 0 ? 2 : 1;
    REQUIRE(all_mismatch(chorus_allgatherv(in.data(), recvcounts[me], out.data(), recvcounts.data(), displs.data(),
                                           CHORUS_INT32, c, nullptr),
                         "recvcounts#"));
    // The communicator is still usable afterwards.
    REQUIRE(all_ranks(chorus_gatherv(in.data(), 2, me == 0 ? out.data() : nullptr, counts.data(), displs.data(),
                                     CHORUS_INT32, 0, c, nullptr) == CHORUS_SUCCESS));
    REQUIRE(all_ranks(chorus_barrier(c, nullptr) == CHORUS_SUCCESS));
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("a rank that never joins makes the others time out, naming the operation and peers", "[mpi][faults]") {
    const int me = world_rank(), p = world_size();
    if (p < 2) return;
    chorus_comm_t c = make_comm("CHORUS_TIMEOUT_MS=400 CHORUS_LOG=error");
    std::vector<float> buf(1000, 1.0f);
    chorus_result_t rc = CHORUS_SUCCESS;
    std::string msg;
    auto t0 = std::chrono::steady_clock::now();
    if (me != p - 1) {
        rc = chorus_allreduce(buf.data(), buf.data(), buf.size(), CHORUS_FLOAT32, CHORUS_SUM, c, nullptr);
        msg = chorus_comm_last_error(c);
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(msg << " after " << seconds << " s");
    bool ok = me == p - 1 || (rc == CHORUS_ERR_TIMEOUT && msg.find("allreduce #0") != std::string::npos &&
                              msg.find("pending") != std::string::npos && seconds < 10);
    // Later calls say the communicator failed.
    float x = 0;
    if (me != p - 1)
        ok = ok && chorus_allreduce(&x, &x, 1, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) == CHORUS_ERR_COMM_FAILED;
    REQUIRE(all_ranks(ok));
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("chorus_comm_abort ends operations in flight", "[mpi][faults]") {
    const int me = world_rank(), p = world_size();
    if (p < 2) return;
    chorus_comm_t c = make_comm("CHORUS_LOG=error");
    std::vector<float> buf(1000, 1.0f);
    bool ok = true;
    if (me == 0) {
        // Nobody else joins: give up on it.
        chorus_request_t req = nullptr;
        ok = chorus_iallreduce(buf.data(), buf.data(), buf.size(), CHORUS_FLOAT32, CHORUS_SUM, c, nullptr, &req) ==
             CHORUS_SUCCESS;
        int done = 0;
        ok = ok && chorus_test(req, &done) == CHORUS_SUCCESS && !done;
        ok = ok && chorus_comm_abort(c) == CHORUS_SUCCESS;
        ok = ok && chorus_wait(req) == CHORUS_ERR_COMM_FAILED;
        ok = ok && std::string(chorus_comm_last_error(c)).find("abort") != std::string::npos;
        ok = ok && chorus_allreduce(buf.data(), buf.data(), 1, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) ==
                       CHORUS_ERR_COMM_FAILED;
    }
    REQUIRE(all_ranks(ok));
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("creating and destroying communicators leaks neither memory nor file descriptors", "[mpi][faults]") {
    // A program that splits a communicator every time step: 10,000 cycles.
    const int rounds = std::getenv("CHORUS_TEST_ROUNDS") ? std::atoi(std::getenv("CHORUS_TEST_ROUNDS")) : 10000;
    const int me = world_rank(), p = world_size();
    bool right = true;
    auto cycle = [&](int n) {
        for (int i = 0; i < n; ++i) {
            chorus_comm_t c = nullptr;
            REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
            // Each cycle's own values: a communicator that took an earlier
            // one's message would sum the wrong ones.
            int64_t x = int64_t(i) * 1000 + me;
            REQUIRE(chorus_allreduce(&x, &x, 1, CHORUS_INT64, CHORUS_SUM, c, nullptr) == CHORUS_SUCCESS);
            right = right && x == int64_t(i) * 1000 * p + int64_t(p) * (p - 1) / 2;
            REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
        }
    };
    // Warm up: first-use allocations and caches of MPI and UCX are not leaks.
    cycle(20);
    size_t fds0 = open_fds(), rss0 = rss_kib();
    auto t0 = std::chrono::steady_clock::now();
    cycle(rounds / 2);
    size_t fds1 = open_fds(), rss1 = rss_kib();
    cycle(rounds - rounds / 2);
    size_t fds2 = open_fds(), rss2 = rss_kib();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (world_rank() == 0)
        std::printf("%d create/destroy cycles in %.1f s: fds %zu -> %zu -> %zu, RSS %zu -> %zu -> %zu KiB\n", rounds,
                    seconds, fds0, fds1, fds2, rss0, rss1, rss2);
    INFO("fds " << fds0 << " -> " << fds1 << " -> " << fds2 << ", RSS " << rss0 << " -> " << rss1 << " -> " << rss2);
    REQUIRE(all_ranks(right));
    // No descriptor may leak. Allocator caches settle in the first half; a
    // leak keeps growing: 0.5 KiB per cycle over the second half fails.
    REQUIRE(all_ranks(fds2 == fds0 && rss2 < rss1 + static_cast<size_t>(rounds - rounds / 2) / 2));
}

TEST_CASE("a message left over from an operation one rank ran alone never reaches a later communicator",
          "[mpi][faults]") {
    const int me = world_rank(), p = world_size();
    if (p < 2) return;
    // Through UCX (not the communicator's own shared memory, which goes with
    // it), by messages (not the publish slots).
    const char* settings = "CHORUS_SHM_EAGER=0 CHORUS_ALGO=allreduce=ring CHORUS_LOG=error";
    chorus_comm_t a = make_comm(settings);
    std::vector<int64_t> stale(16, 1000000);
    if (me == 1) {
        // Rank 1 alone starts an all-reduce: its first message reaches its
        // neighbour's worker and no receive takes it; then it gives up.
        chorus_request_t req = nullptr;
        REQUIRE(chorus_iallreduce(stale.data(), stale.data(), stale.size(), CHORUS_INT64, CHORUS_SUM, a, nullptr,
                                  &req) == CHORUS_SUCCESS);
        int done = 0;
        for (int i = 0; i < 100; ++i) chorus_test(req, &done);
        MPI_Barrier(MPI_COMM_WORLD);
        usleep(100 * 1000);
        REQUIRE(chorus_comm_abort(a) == CHORUS_SUCCESS);
        REQUIRE(chorus_wait(req) == CHORUS_ERR_COMM_FAILED);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        usleep(100 * 1000);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    REQUIRE(chorus_comm_destroy(a) == CHORUS_SUCCESS);
    // The next communicators (which may reuse the workers) run the same
    // operation, first of their sequence, with the same tags and sizes.
    bool right = true;
    for (int round = 0; round < 8; ++round) {
        chorus_comm_t b = make_comm(settings);
        std::vector<int64_t> v(16, me + 1);
        REQUIRE(chorus_allreduce(v.data(), v.data(), v.size(), CHORUS_INT64, CHORUS_SUM, b, nullptr) == CHORUS_SUCCESS);
        for (int64_t x : v) right = right && x == int64_t(p) * (p + 1) / 2;
        REQUIRE(chorus_comm_destroy(b) == CHORUS_SUCCESS);
    }
    REQUIRE(all_ranks(right));
}
