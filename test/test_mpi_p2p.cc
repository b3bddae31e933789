// Point-to-point messages (chorus_send, chorus_recv, chorus_isend,
// chorus_irecv) under mpirun: matching by (peer, tag) in order, sends that
// never wait for their receive (paired sends of 8 MiB both ways before the
// receives), messages to the rank itself, empty messages, a size mismatch
// that leaves the communicator usable, bad arguments, interleaving with
// collectives, failed communicators and timeouts. Every message's data is
// checked against per-rank seeded references.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "chorus.h"
#include "seeds.h"

namespace {

// Element i of the message from `from` to `to` with `tag`, number `k` of
// its kind.
uint32_t value(int from, int to, int tag, int k, size_t i) {
    const uint64_t seed = (static_cast<uint64_t>(to) << 48) ^ (static_cast<uint64_t>(tag) << 16) ^ uint64_t(k);
    return static_cast<uint32_t>(seeds::bits(seed, from, i));
}

std::vector<uint32_t> message(int from, int to, int tag, int k, size_t count) {
    std::vector<uint32_t> m(count);
    for (size_t i = 0; i < count; ++i) m[i] = value(from, to, tag, k, i);
    return m;
}

// The index of the first element of `got` that differs from the message, or
// -1 (a REQUIRE per element would flood the log).
long first_wrong(const std::vector<uint32_t>& got, int from, int to, int tag, int k) {
    for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != value(from, to, tag, k, i)) return static_cast<long>(i);
    return -1;
}

struct Comm {
    chorus_comm_t c = nullptr;
    int me = 0, p = 1;
    Comm() {
        REQUIRE(chorus_comm_create(MPI_COMM_WORLD, &c) == CHORUS_SUCCESS);
        chorus_comm_rank(c, &me);
        chorus_comm_size(c, &p);
    }
    ~Comm() { chorus_comm_destroy(c); }
    int right() const { return (me + 1) % p; }
    int left() const { return (me + p - 1) % p; }
};

#define OK(call)                                               \
    do {                                                       \
        chorus_result_t rc_ = (call);                          \
        INFO(#call << ": " << chorus_comm_last_error(comm.c)); \
        REQUIRE(rc_ == CHORUS_SUCCESS);                        \
    } while (0)

}  // namespace

TEST_CASE("ring exchange: each rank receives its left neighbour's message", "[mpi][p2p]") {
    Comm comm;
    for (size_t count : {size_t(1), size_t(1000), size_t(300000)}) {
        const int tag = 7;
        std::vector<uint32_t> out = message(comm.me, comm.right(), tag, 0, count), in(count, 0);
        chorus_request_t r = nullptr;
        OK(chorus_irecv(in.data(), count, CHORUS_UINT32, comm.left(), tag, comm.c, nullptr, &r));
        OK(chorus_send(out.data(), count, CHORUS_UINT32, comm.right(), tag, comm.c, nullptr));
        OK(chorus_wait(r));
        CHECK(first_wrong(in, comm.left(), comm.me, tag, 0) == -1);
    }
}

TEST_CASE("sends to every peer before any receive never deadlock, small or 8 MiB", "[mpi][p2p]") {
    Comm comm;
    for (size_t count : {size_t(4), size_t(8 << 20) / sizeof(uint32_t)}) {
        INFO("count " << count);
        // Blocking sends to every other rank first, then the receives.
        for (int peer = 0; peer < comm.p; ++peer) {
            if (peer == comm.me) continue;
            std::vector<uint32_t> out = message(comm.me, peer, 3, 0, count);
            OK(chorus_send(out.data(), count, CHORUS_UINT32, peer, 3, comm.c, nullptr));
            out.assign(count, 0);  // the data was copied: the buffer is free at once
        }
        for (int peer = comm.p - 1; peer >= 0; --peer) {
            if (peer == comm.me) continue;
            std::vector<uint32_t> in(count, 0);
            OK(chorus_recv(in.data(), count, CHORUS_UINT32, peer, 3, comm.c, nullptr));
            CHECK(first_wrong(in, peer, comm.me, 3, 0) == -1);
        }
    }
}

TEST_CASE("messages of one tag arrive in the order they were sent", "[mpi][p2p]") {
    Comm comm;
    const int n = 40, tag = 11;
    // Sizes differ from message to message: a swap would also be a mismatch.
    auto count_of = [](int k) { return size_t(1 + 37 * k); };
    // Half received by receives posted before the messages leave, half one
    // by one after they came.
    std::vector<std::vector<uint32_t>> in(n);
    std::vector<chorus_request_t> recvs(n / 2);
    for (int k = 0; k < n / 2; ++k) {
        in[k].assign(count_of(k), 0);
        OK(chorus_irecv(in[k].data(), in[k].size(), CHORUS_UINT32, comm.left(), tag, comm.c, nullptr, &recvs[k]));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    std::vector<chorus_request_t> sends(n);
    for (int k = 0; k < n; ++k) {
        std::vector<uint32_t> out = message(comm.me, comm.right(), tag, k, count_of(k));
        OK(chorus_isend(out.data(), out.size(), CHORUS_UINT32, comm.right(), tag, comm.c, nullptr, &sends[k]));
    }
    for (int k = n / 2 - 1; k >= 0; --k) OK(chorus_wait(recvs[k]));
    for (int k = n / 2; k < n; ++k) {
        in[k].assign(count_of(k), 0);
        OK(chorus_recv(in[k].data(), in[k].size(), CHORUS_UINT32, comm.left(), tag, comm.c, nullptr));
    }
    for (int k = 0; k < n; ++k) {
        INFO("message " << k);
        CHECK(first_wrong(in[k], comm.left(), comm.me, tag, k) == -1);
    }
    for (auto& s : sends) OK(chorus_wait(s));
}

TEST_CASE("messages of different tags may be received in any order", "[mpi][p2p]") {
    Comm comm;
    const size_t count = 5000;
    const int tags[] = {1, 2, 3, 1000000};
    for (int tag : tags) {
        std::vector<uint32_t> out = message(comm.me, comm.right(), tag, 0, count);
        OK(chorus_send(out.data(), count, CHORUS_UINT32, comm.right(), tag, comm.c, nullptr));
    }
    // Blocking receives, last tag first: the earlier messages wait.
    for (int i = 3; i >= 2; --i) {
        std::vector<uint32_t> in(count, 0);
        OK(chorus_recv(in.data(), count, CHORUS_UINT32, comm.left(), tags[i], comm.c, nullptr));
        CHECK(first_wrong(in, comm.left(), comm.me, tags[i], 0) == -1);
    }
    // Receives posted in reverse, completed by chorus_test.
    std::vector<uint32_t> a(count), b(count);
    chorus_request_t ra = nullptr, rb = nullptr;
    OK(chorus_irecv(b.data(), count, CHORUS_UINT32, comm.left(), tags[1], comm.c, nullptr, &rb));
    OK(chorus_irecv(a.data(), count, CHORUS_UINT32, comm.left(), tags[0], comm.c, nullptr, &ra));
    int done_a = 0, done_b = 0;
    while (!done_a || !done_b) {
        if (!done_a) OK(chorus_test(ra, &done_a));
        if (!done_b) OK(chorus_test(rb, &done_b));
    }
    CHECK(first_wrong(a, comm.left(), comm.me, tags[0], 0) == -1);
    CHECK(first_wrong(b, comm.left(), comm.me, tags[1], 0) == -1);

    // Receives waiting before the sends: each matches its own tag.
    chorus_request_t r[2];
    std::vector<uint32_t> x(count), y(count);
    OK(chorus_irecv(x.data(), count, CHORUS_UINT32, comm.left(), 21, comm.c, nullptr, &r[0]));
    OK(chorus_irecv(y.data(), count, CHORUS_UINT32, comm.left(), 20, comm.c, nullptr, &r[1]));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int tag : {20, 21}) {
        std::vector<uint32_t> out = message(comm.me, comm.right(), tag, 0, count);
        OK(chorus_send(out.data(), count, CHORUS_UINT32, comm.right(), tag, comm.c, nullptr));
    }
    OK(chorus_wait(r[0]));
    OK(chorus_wait(r[1]));
    CHECK(first_wrong(x, comm.left(), comm.me, 21, 0) == -1);
    CHECK(first_wrong(y, comm.left(), comm.me, 20, 0) == -1);
}

TEST_CASE("a rank sends to itself, and empty messages match", "[mpi][p2p]") {
    Comm comm;
    for (size_t count : {size_t(0), size_t(1), size_t(70000)}) {
        std::vector<uint32_t> out = message(comm.me, comm.me, 5, 0, count), in(count, 0);
        // Send first, then receive.
        OK(chorus_send(out.data(), count, CHORUS_UINT32, comm.me, 5, comm.c, nullptr));
        OK(chorus_recv(in.data(), count, CHORUS_UINT32, comm.me, 5, comm.c, nullptr));
        CHECK(first_wrong(in, comm.me, comm.me, 5, 0) == -1);
        // Receive posted first.
        in.assign(count, 0);
        chorus_request_t r = nullptr;
        OK(chorus_irecv(in.data(), count, CHORUS_UINT32, comm.me, 6, comm.c, nullptr, &r));
        OK(chorus_send(out.data(), count, CHORUS_UINT32, comm.me, 6, comm.c, nullptr));
        OK(chorus_wait(r));
        CHECK(first_wrong(in, comm.me, comm.me, 5, 0) == -1);
    }
    // Zero bytes with NULL buffers, to the neighbour.
    chorus_request_t r = nullptr;
    OK(chorus_irecv(nullptr, 0, CHORUS_FLOAT64, comm.left(), 0, comm.c, nullptr, &r));
    OK(chorus_send(nullptr, 0, CHORUS_FLOAT64, comm.right(), 0, comm.c, nullptr));
    OK(chorus_wait(r));
}

TEST_CASE("a receive of the wrong size fails with CHORUS_ERR_MISMATCH; the communicator goes on", "[mpi][p2p]") {
    Comm comm;
    for (size_t sent : {size_t(10), size_t(100000)}) {
        std::vector<uint32_t> out = message(comm.me, comm.right(), 9, 0, sent);
        OK(chorus_send(out.data(), sent, CHORUS_UINT32, comm.right(), 9, comm.c, nullptr));
        std::vector<uint32_t> in(sent + 2, 0);
        const chorus_result_t rc = chorus_recv(in.data(), sent + 2, CHORUS_UINT32, comm.left(), 9, comm.c, nullptr);
        CHECK(rc == CHORUS_ERR_MISMATCH);
        const std::string why = chorus_comm_last_error(comm.c);
        INFO(why);
        CHECK(why.find(std::to_string(sent * 4) + " bytes") != std::string::npos);
        CHECK(why.find(std::to_string((sent + 2) * 4) + " bytes") != std::string::npos);
        CHECK(why.find("rank " + std::to_string(comm.left())) != std::string::npos);
        CHECK(why.find("tag 9") != std::string::npos);
        CHECK(why.find("chorus_recv") != std::string::npos);
    }
    // The same through a request: the error comes from chorus_wait.
    std::vector<uint32_t> out = message(comm.me, comm.right(), 9, 1, 8), small(4);
    chorus_request_t r = nullptr;
    OK(chorus_irecv(small.data(), 4, CHORUS_UINT32, comm.left(), 9, comm.c, nullptr, &r));
    OK(chorus_send(out.data(), 8, CHORUS_UINT32, comm.right(), 9, comm.c, nullptr));
    CHECK(chorus_wait(r) == CHORUS_ERR_MISMATCH);
    // Still usable: a message and a collective.
    std::vector<uint32_t> in(64, 0);
    out = message(comm.me, comm.right(), 9, 2, 64);
    OK(chorus_send(out.data(), 64, CHORUS_UINT32, comm.right(), 9, comm.c, nullptr));
    OK(chorus_recv(in.data(), 64, CHORUS_UINT32, comm.left(), 9, comm.c, nullptr));
    CHECK(first_wrong(in, comm.left(), comm.me, 9, 2) == -1);
    int one = 1, sum = 0;
    OK(chorus_allreduce(&one, &sum, 1, CHORUS_INT32, CHORUS_SUM, comm.c, nullptr));
    CHECK(sum == comm.p);
}

TEST_CASE("bad point-to-point arguments are refused, and nothing is sent", "[mpi][p2p][errors]") {
    Comm comm;
    uint32_t x[4] = {};
    chorus_request_t r = nullptr;
    struct Case {
        chorus_result_t rc;
        chorus_result_t want;
        const char* word;
    };
    const Case cases[] = {
        {chorus_send(x, 4, CHORUS_UINT32, comm.p, 0, comm.c, nullptr), CHORUS_ERR_INVALID_ARGUMENT, "peer"},
        {chorus_recv(x, 4, CHORUS_UINT32, -1, 0, comm.c, nullptr), CHORUS_ERR_INVALID_ARGUMENT, "peer"},
        {chorus_isend(x, 4, CHORUS_UINT32, 0, -1, comm.c, nullptr, &r), CHORUS_ERR_INVALID_ARGUMENT, "tag"},
        {chorus_irecv(x, 4, CHORUS_UINT32, 0, -5, comm.c, nullptr, &r), CHORUS_ERR_INVALID_ARGUMENT, "tag"},
        {chorus_send(nullptr, 4, CHORUS_UINT32, 0, 0, comm.c, nullptr), CHORUS_ERR_INVALID_ARGUMENT, "buf"},
        {chorus_irecv(nullptr, 1, CHORUS_UINT32, 0, 0, comm.c, nullptr, &r), CHORUS_ERR_INVALID_ARGUMENT, "buf"},
        {chorus_isend(x, 4, CHORUS_UINT32, 0, 0, comm.c, nullptr, nullptr), CHORUS_ERR_INVALID_ARGUMENT, "request"},
        {chorus_irecv(x, 4, CHORUS_UINT32, 0, 0, comm.c, nullptr, nullptr), CHORUS_ERR_INVALID_ARGUMENT, "request"},
        {chorus_send(x, 4, static_cast<chorus_datatype_t>(99), 0, 0, comm.c, nullptr), CHORUS_ERR_INVALID_ARGUMENT,
         "datatype"},
        {chorus_send(x, SIZE_MAX / 2, CHORUS_UINT32, 0, 0, comm.c, nullptr), CHORUS_ERR_INVALID_ARGUMENT, "overflows"},
    };
    for (const Case& k : cases) {
        CHECK(k.rc == k.want);
    }
    // The messages, one by one (each call replaces the last).
    CHECK(chorus_send(x, 4, CHORUS_UINT32, comm.p, 0, comm.c, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(std::string(chorus_comm_last_error(comm.c)).find("chorus_send: peer") != std::string::npos);
    CHECK(chorus_irecv(x, 4, CHORUS_UINT32, 0, -5, comm.c, nullptr, &r) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(std::string(chorus_comm_last_error(comm.c)).find("chorus_irecv: tag -5") != std::string::npos);
    CHECK(chorus_send(x, 4, CHORUS_UINT32, 0, 0, nullptr, nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(std::string(chorus_comm_last_error(nullptr)).find("comm is NULL") != std::string::npos);
    CHECK(chorus_wait(nullptr) == CHORUS_ERR_INVALID_ARGUMENT);
    // Nothing was sent: the next message on tag 0 is the first.
    std::vector<uint32_t> out = message(comm.me, comm.right(), 0, 0, 4), in(4, 0);
    OK(chorus_send(out.data(), 4, CHORUS_UINT32, comm.right(), 0, comm.c, nullptr));
    OK(chorus_recv(in.data(), 4, CHORUS_UINT32, comm.left(), 0, comm.c, nullptr));
    CHECK(first_wrong(in, comm.left(), comm.me, 0, 0) == -1);
}

TEST_CASE("point-to-point interleaves with collectives on one communicator", "[mpi][p2p]") {
    Comm comm;
    const size_t count = 20000;
    for (int round = 0; round < 3; ++round) {
        // Tag 0 and small numbers, as collectives use on the wire: apart.
        std::vector<uint32_t> in(count, 0), out = message(comm.me, comm.right(), round, round, count);
        chorus_request_t recv = nullptr, coll = nullptr;
        OK(chorus_irecv(in.data(), count, CHORUS_UINT32, comm.left(), round, comm.c, nullptr, &recv));
        std::vector<int32_t> ones(count, 1), sums(count, 0);
        OK(chorus_iallreduce(ones.data(), sums.data(), count, CHORUS_INT32, CHORUS_SUM, comm.c, nullptr, &coll));
        OK(chorus_send(out.data(), count, CHORUS_UINT32, comm.right(), round, comm.c, nullptr));
        int b = comm.me == 0 ? 42 + round : 0;
        OK(chorus_broadcast(&b, &b, 1, CHORUS_INT32, 0, comm.c, nullptr));
        CHECK(b == 42 + round);
        // Completed in either order.
        if (round % 2) {
            OK(chorus_wait(coll));
            OK(chorus_wait(recv));
        } else {
            OK(chorus_wait(recv));
            OK(chorus_wait(coll));
        }
        CHECK(first_wrong(in, comm.left(), comm.me, round, round) == -1);
        CHECK(sums[count - 1] == comm.p);
        CHECK(sums[0] == comm.p);
    }
}

TEST_CASE("a failed communicator refuses point-to-point calls", "[mpi][p2p]") {
    Comm comm;
    REQUIRE(chorus_comm_abort(comm.c) == CHORUS_SUCCESS);
    uint32_t x = 0;
    chorus_request_t r = nullptr;
    CHECK(chorus_send(&x, 1, CHORUS_UINT32, comm.right(), 0, comm.c, nullptr) == CHORUS_ERR_COMM_FAILED);
    CHECK(chorus_irecv(&x, 1, CHORUS_UINT32, comm.left(), 0, comm.c, nullptr, &r) == CHORUS_ERR_COMM_FAILED);
    CHECK(std::string(chorus_comm_last_error(comm.c)).find("failed earlier") != std::string::npos);
    MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("a receive whose message never comes times out under CHORUS_TIMEOUT_MS", "[mpi][p2p]") {
    setenv("CHORUS_TIMEOUT_MS", "300", 1);
    {
        Comm comm;
        unsetenv("CHORUS_TIMEOUT_MS");
        if (comm.me == 0) {
            uint32_t x = 0;
            const chorus_result_t rc = chorus_recv(&x, 1, CHORUS_UINT32, comm.p - 1, 77, comm.c, nullptr);
            CHECK(rc == CHORUS_ERR_TIMEOUT);
            const std::string why = chorus_comm_last_error(comm.c);
            INFO(why);
            CHECK(why.find("CHORUS_TIMEOUT_MS=300") != std::string::npos);
            CHECK(why.find("tag 77") != std::string::npos);
            // The communicator has failed.
            CHECK(chorus_send(&x, 1, CHORUS_UINT32, 0, 0, comm.c, nullptr) == CHORUS_ERR_COMM_FAILED);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    unsetenv("CHORUS_TIMEOUT_MS");
}
