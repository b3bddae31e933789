// What a drop-in must survive, under mpirun: collectives from several threads
// at once (each on its own communicator), communicators destroyed in
// different orders on different ranks, a peer busy while another destroys,
// settings that differ across ranks, and a failure on one rank at creation
// or at the start of an operation (every rank must hear of it at once).
#include <mpi.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "chorus.h"
#include "mpi_test_util.h"

using mpitest::all_ranks;
using mpitest::world_rank;
using mpitest::world_size;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// chorus_comm_create with `name=value` set on the ranks `on` says (unset
// elsewhere); returns the result and the message.
chorus_result_t create_with(const char* name, const char* value, bool on, chorus_comm_t* c, std::string* msg) {
    if (on) setenv(name, value, 1);
    chorus_result_t rc = chorus_comm_create(MPI_COMM_WORLD, c);
    if (on) unsetenv(name);
    *msg = chorus_comm_last_error(nullptr);
    return rc;
}

// One thread's work: many collectives of different kinds on its own
// communicator, each checked against values every rank can compute.
bool thread_work(MPI_Comm mpi, int id, int rounds) {
    chorus_comm_t c = nullptr;
    if (chorus_comm_create(mpi, &c) != CHORUS_SUCCESS) return false;
    int me = 0, p = 0;
    chorus_comm_rank(c, &me);
    chorus_comm_size(c, &p);
    bool ok = true;
    std::vector<int64_t> a(1000), b(1000 * p), r(1000 * p);
    for (int k = 0; k < rounds && ok; ++k) {
        size_t n = 1 + static_cast<size_t>((k * 37 + id * 11) % 1000);
        for (size_t i = 0; i < n; ++i) a[i] = (me + 1) * 1000003LL + static_cast<int64_t>(i) + k + id;
        ok = ok && chorus_allreduce(a.data(), r.data(), n, CHORUS_INT64, CHORUS_SUM, c, nullptr) == CHORUS_SUCCESS;
        int64_t base = 1000003LL * p * (p + 1) / 2;
        for (size_t i = 0; i < n && ok; ++i) ok = r[i] == base + p * (static_cast<int64_t>(i) + k + id);
        int root = k % p;
        for (size_t i = 0; i < n; ++i) b[i] = me == root ? k * 7 + static_cast<int64_t>(i) : -1;
        ok = ok && chorus_broadcast(b.data(), b.data(), n, CHORUS_INT64, root, c, nullptr) == CHORUS_SUCCESS;
        for (size_t i = 0; i < n && ok; ++i) ok = b[i] == k * 7 + static_cast<int64_t>(i);
        ok = ok && chorus_allgather(a.data(), r.data(), n, CHORUS_INT64, c, nullptr) == CHORUS_SUCCESS;
        for (int q = 0; q < p && ok; ++q)
            ok = r[q * n] == (q + 1) * 1000003LL + k + id &&
                 r[q * n + n - 1] == (q + 1) * 1000003LL + static_cast<int64_t>(n - 1) + k + id;
    }
    return chorus_comm_destroy(c) == CHORUS_SUCCESS && ok;
}

}  // namespace

TEST_CASE("collectives run from several threads at once, each on its own communicator", "[mpi][dropin][threads]") {
    int provided = 0;
    MPI_Query_thread(&provided);
    REQUIRE(provided == MPI_THREAD_MULTIPLE);
    const int threads = 3, rounds = 200;
    std::vector<MPI_Comm> comms(threads);
    for (auto& m : comms) MPI_Comm_dup(MPI_COMM_WORLD, &m);
    std::vector<char> ok(threads, 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { ok[t] = thread_work(comms[t], t, rounds); });
    for (auto& th : pool) th.join();
    for (auto& m : comms) MPI_Comm_free(&m);
    for (int t = 0; t < threads; ++t) {
        INFO("thread " << t);
        CHECK(ok[t]);
    }
    REQUIRE(all_ranks(ok[0] && ok[1] && ok[2]));
}

TEST_CASE("a repeated call runs its own plan after another thread's call of another shape", "[mpi][dropin][threads]") {
    // A call that repeats the thread's last one, which ran in place, runs
    // the plan it ran then, unless another plan was made since. Threads
    // take turns on one communicator: the first repeats its all-reduce of 3
    // elements after the second ran a nonblocking one of 64. Were the
    // plan of 64 run on the first thread's buffers, the elements past its 3
    // would be written.
    const int me = world_rank(), p = world_size();
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    constexpr size_t kSmall = 3, kLarge = 64;
    std::vector<float> x(kLarge + 8), y(kLarge + 8);
    std::vector<float> u(kLarge), v(kLarge);
    int bad = 0;
    auto small = [&](int round) {
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((me + 1) * (round + 1) + static_cast<int>(i));
        std::fill(y.begin(), y.end(), -7.0f);
        for (int k = 0; k < 2; ++k)  // the second one repeats the first
            if (chorus_allreduce(x.data(), y.data(), kSmall, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) != CHORUS_SUCCESS)
                ++bad;
        const int ranks = p * (p + 1) / 2;
        for (size_t i = 0; i < kSmall; ++i)
            if (y[i] != static_cast<float>(ranks * (round + 1) + p * static_cast<int>(i))) ++bad;
        for (size_t i = kSmall; i < y.size(); ++i)
            if (y[i] != -7.0f) ++bad;
    };
    auto large = [&] {
        std::fill(u.begin(), u.end(), 1.0f);
        // Nonblocking: a plan made outside the in-place runner.
        chorus_request_t r = nullptr;
        if (chorus_iallreduce(u.data(), v.data(), kLarge, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr, &r) !=
                CHORUS_SUCCESS ||
            chorus_wait(r) != CHORUS_SUCCESS)
            ++bad;
        for (float f : v)
            if (f != static_cast<float>(p)) ++bad;
    };
    // The first thread stays alive across the second's call: its next call
    // repeats its last one.
    for (int round = 0; round < 3; ++round) {
        std::promise<void> first_ran, second_ran;
        std::thread first([&] {
            small(round);
            first_ran.set_value();
            second_ran.get_future().wait();
            small(round);
        });
        first_ran.get_future().wait();
        std::thread second([&] {
            large();
            second_ran.set_value();
        });
        second.join();
        first.join();
    }
    CHECK(bad == 0);
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("communicators destroyed in different orders on different ranks", "[mpi][dropin]") {
    const int me = world_rank();
    chorus_comm_t c[3];
    for (auto& x : c) REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &x) == CHORUS_SUCCESS);
    float v = 1;
    for (auto& x : c) REQUIRE(chorus_allreduce(&v, &v, 1, CHORUS_FLOAT32, CHORUS_SUM, x, nullptr) == CHORUS_SUCCESS);
    // Rank r destroys them starting from r: every rank a different order.
    for (int k = 0; k < 3; ++k) REQUIRE(chorus_comm_destroy(c[(me + k) % 3]) == CHORUS_SUCCESS);
    REQUIRE(all_ranks(true));
}

TEST_CASE("destroy returns while a peer is busy elsewhere", "[mpi][dropin]") {
    const int me = world_rank(), p = world_size();
    if (p < 2) return;
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    std::vector<float> v(1 << 18, 1.0f);  // large enough for UCX's rendezvous
    REQUIRE(chorus_allreduce(v.data(), v.data(), v.size(), CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) == CHORUS_SUCCESS);
    double took = 0;
    if (me == 0) {
        auto t0 = std::chrono::steady_clock::now();
        REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
        took = seconds_since(t0);
    } else {
        sleep(3);  // busy: no progress in Chorus or MPI
        REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
    }
    INFO("rank 0's destroy took " << took << " s");
    CHECK(took < 2.0);  // far below the peers' 3 s: it did not wait for them
    REQUIRE(all_ranks(took < 2.0));
}

TEST_CASE("a protocol setting that differs across ranks fails creation on every rank", "[mpi][dropin]") {
    const int me = world_rank(), p = world_size();
    if (p < 2) return;
    chorus_comm_t c = nullptr;
    std::string msg;
    chorus_result_t rc = create_with("CHORUS_CHUNK_BYTES", "64K", me == 0, &c, &msg);
    INFO(msg);
    CHECK(rc == CHORUS_ERR_CONFIG);
    CHECK(c == nullptr);
    CHECK(msg.find("CHORUS_CHUNK_BYTES") != std::string::npos);
    CHECK(msg.find("65536 on rank 0") != std::string::npos);
    CHECK(msg.find("262144 on rank") != std::string::npos);
    REQUIRE(all_ranks(rc == CHORUS_ERR_CONFIG && msg.find("65536 on rank 0") != std::string::npos));
    // A bad value on one rank fails every rank, naming the variable.
    rc = create_with("CHORUS_WINDOW", "lots", me == p - 1, &c, &msg);
    INFO(msg);
    CHECK(rc == CHORUS_ERR_CONFIG);
    CHECK(msg.find("CHORUS_WINDOW='lots'") != std::string::npos);
    CHECK(msg.find("rank " + std::to_string(p - 1)) != std::string::npos);
    REQUIRE(all_ranks(rc == CHORUS_ERR_CONFIG));
    // Settings that only change how a rank waits may differ.
    rc = create_with("CHORUS_SPIN", "10", me == 0, &c, &msg);
    REQUIRE(all_ranks(rc == CHORUS_SUCCESS));
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("a failure at creation on one rank fails creation on every rank", "[mpi][dropin]") {
    const int me = world_rank(), p = world_size();
    if (p < 2) return;
    chorus_comm_t c = nullptr;
    std::string msg;
    auto t0 = std::chrono::steady_clock::now();
    chorus_result_t rc = create_with("CHORUS_INJECT_FAILURE", "create", me == 1, &c, &msg);
    double took = seconds_since(t0);
    INFO(msg << " after " << took << " s");
    CHECK(rc == CHORUS_ERR_TRANSPORT);
    CHECK(msg.find("rank 1: failure injected at creation") != std::string::npos);
    REQUIRE(all_ranks(rc == CHORUS_ERR_TRANSPORT && c == nullptr && took < 5));
    // Nothing is left behind: the next creation works.
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("a failure at the start of an operation on one rank reaches every rank at once", "[mpi][dropin]") {
    const int me = world_rank(), p = world_size();
    if (p < 2) return;
    chorus_comm_t c = nullptr;
    std::string msg;
    // No timeout: without the notice the others would wait forever.
    REQUIRE(create_with("CHORUS_INJECT_FAILURE", "start:3", me == 1, &c, &msg) == CHORUS_SUCCESS);
    std::vector<float> v(1 << 16, 1.0f);
    chorus_result_t rc = CHORUS_SUCCESS;
    int done = 0;
    for (; done < 3; ++done)
        REQUIRE(chorus_allreduce(v.data(), v.data(), v.size(), CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) ==
                CHORUS_SUCCESS);
    auto t0 = std::chrono::steady_clock::now();
    rc = chorus_allreduce(v.data(), v.data(), v.size(), CHORUS_FLOAT32, CHORUS_SUM, c, nullptr);
    double took = seconds_since(t0);
    msg = chorus_comm_last_error(c);
    INFO(msg << " after " << took << " s");
    CHECK(rc == CHORUS_ERR_OUT_OF_MEMORY);
    CHECK(msg.find("#3") != std::string::npos);
    CHECK(msg.find("injected") != std::string::npos);
    if (me != 1) CHECK(msg.find("rank 1 failed") != std::string::npos);
    CHECK(took < 1.0);
    // Later calls say the communicator failed.
    CHECK(chorus_allreduce(v.data(), v.data(), 1, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr) == CHORUS_ERR_COMM_FAILED);
    REQUIRE(all_ranks(rc == CHORUS_ERR_OUT_OF_MEMORY && took < 1.0));
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}

TEST_CASE("a peer's failure heard before this rank's next calls: the calls before it go on", "[mpi][dropin]") {
    // Broadcasts down the chain 1 -> 2 -> ... -> 0: rank 1 finishes each as
    // soon as its message is sent, and fails at the start of operation #4
    // while rank 2 still sleeps before #2, so that rank 0, waiting in #2,
    // reads the notice two operations early. #2 and #3 complete everywhere;
    // #4 fails with rank 1's error, on every rank.
    const int me = world_rank(), p = world_size();
    if (p < 3) return;
    if (me == 1) setenv("CHORUS_INJECT_FAILURE", "start:4", 1);
    mpitest::ForcedComm fc("bcast", "chain");
    unsetenv("CHORUS_INJECT_FAILURE");
    REQUIRE(fc.rc == CHORUS_SUCCESS);
    chorus_comm_t c = fc.c;
    double x = me, y = 0;
    for (int i = 0; i < 2; ++i) REQUIRE(chorus_allreduce(&x, &y, 1, CHORUS_FLOAT64, CHORUS_SUM, c, nullptr) == 0);
    std::vector<int> got;
    for (int k = 2; k < 4; ++k) {
        if (me == 2 && k == 2) std::this_thread::sleep_for(std::chrono::milliseconds(500));
        int v[4] = {me == 1 ? 10 * k : -1, k, me == 1 ? 7 : -1, 0};
        const chorus_result_t rc = chorus_broadcast(v, v, 4, CHORUS_INT32, 1, c, nullptr);
        INFO("bcast #" << k << ": " << chorus_comm_last_error(c));
        CHECK(rc == CHORUS_SUCCESS);
        got.push_back(rc == CHORUS_SUCCESS && v[0] == 10 * k && v[1] == k && v[2] == 7);
    }
    CHECK(got == std::vector<int>{1, 1});
    const chorus_result_t rc = chorus_allreduce(&x, &y, 1, CHORUS_FLOAT64, CHORUS_SUM, c, nullptr);
    const std::string msg = chorus_comm_last_error(c);
    INFO(msg);
    CHECK(rc == CHORUS_ERR_OUT_OF_MEMORY);
    CHECK(msg.find("#4") != std::string::npos);
    if (me != 1) CHECK(msg.find("rank 1 failed") != std::string::npos);
    REQUIRE(all_ranks(rc == CHORUS_ERR_OUT_OF_MEMORY && got == std::vector<int>{1, 1}));
}

namespace {
void count_idle(void* arg) {
    ++*static_cast<int*>(arg);
}
}  // namespace

TEST_CASE("the idle hook runs while a blocking call waits for a late peer, and not once removed", "[mpi][dropin]") {
    const int me = world_rank(), p = world_size();
    chorus_comm_t c = nullptr;
    REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
    REQUIRE(chorus_comm_set_idle(nullptr, count_idle, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    int calls = 0;
    REQUIRE(chorus_comm_set_idle(c, count_idle, &calls) == CHORUS_SUCCESS);
    double x = 1, y = 0;
    // Every rank but the last waits for it: the hook turns meanwhile.
    if (me == p - 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(chorus_allreduce(&x, &y, 1, CHORUS_FLOAT64, CHORUS_SUM, c, nullptr) == CHORUS_SUCCESS);
    REQUIRE(y == p);
    if (p > 1 && me != p - 1) CHECK(calls > 0);
    REQUIRE(chorus_comm_set_idle(c, nullptr, nullptr) == CHORUS_SUCCESS);
    const int before = calls;
    if (me == p - 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(chorus_allreduce(&x, &y, 1, CHORUS_FLOAT64, CHORUS_SUM, c, nullptr) == CHORUS_SUCCESS);
    CHECK(calls == before);
    REQUIRE(chorus_comm_destroy(c) == CHORUS_SUCCESS);
}
