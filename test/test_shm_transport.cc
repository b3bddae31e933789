// The shared-memory transport for small messages, with ranks in one process:
// the rings, matching out of order, a full ring, size mismatches, dead peers,
// and every collective on top of it (small messages through the rings,
// larger ones through the loopback transport underneath).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "collective_check.h"
#include "net/shm/shm_transport.h"

using chorus::coll::Collective;
using chorus::net::LoopbackHub;
using chorus::net::LoopbackTransport;
using chorus::net::ShmTransport;
using chorus::net::Transport;

namespace {

// Segments for `n` ranks of one host, in this process.
struct Segments {
    std::vector<std::unique_ptr<char[]>> mem;
    std::vector<void*> ptrs;
    explicit Segments(int n) {
        for (int r = 0; r < n; ++r) {
            size_t bytes = ShmTransport::segment_bytes(n) + 64;
            mem.emplace_back(new char[bytes]);
            void* p = mem.back().get() + (64 - reinterpret_cast<uintptr_t>(mem.back().get()) % 64) % 64;
            ShmTransport::init_segment(p, n);
            ptrs.push_back(p);
        }
    }
};

std::vector<int> all_local(int n) {
    std::vector<int> idx(n);
    for (int r = 0; r < n; ++r) idx[r] = r;
    return idx;
}

// Drive a handle to completion (progressing both transports).
bool complete(Transport& a, Transport& b, chorus::net::Handle h, int rounds = 100) {
    for (int i = 0; i < rounds; ++i) {
        a.progress();
        b.progress();
        if (a.test(h)) return true;
    }
    return false;
}

}  // namespace

TEST_CASE("shm transport: messages match by tag in any order, through a full ring", "[shm]") {
    auto hub = std::make_shared<LoopbackHub>(2);
    Segments seg(2);
    ShmTransport t0(std::make_unique<LoopbackTransport>(hub, 0), 4096, all_local(2), seg.ptrs, {});
    ShmTransport t1(std::make_unique<LoopbackTransport>(hub, 1), 4096, all_local(2), seg.ptrs, {});
    const int n = static_cast<int>(ShmTransport::kSlots) * 3;
    std::vector<std::vector<int>> data(n);
    std::vector<chorus::net::Handle> sends;
    for (int i = 0; i < n; ++i) {
        data[i].assign(1 + i * 7, i);
        sends.push_back(t0.send(1, 1000 + i, data[i].data(), data[i].size() * sizeof(int)));
    }
    // The ring holds kSlots messages; the rest wait, in order.
    int immediate = 0;
    for (auto h : sends) immediate += h == nullptr;
    CHECK(immediate == static_cast<int>(ShmTransport::kSlots));
    // Receive in reverse order: early messages wait as unexpected ones.
    for (int i = n - 1; i >= 0; --i) {
        std::vector<int> got(data[i].size(), -1);
        auto h = t1.recv(0, 1000 + i, got.data(), got.size() * sizeof(int));
        REQUIRE(complete(t1, t0, h));
        CHECK(got == data[i]);
    }
    for (auto h : sends) CHECK(complete(t0, t1, h));
}

TEST_CASE("shm transport: posted receives, zero bytes, large messages underneath, mismatches", "[shm]") {
    auto hub = std::make_shared<LoopbackHub>(3, /*rendezvous=*/true);
    Segments seg(3);
    // Rank 2 is on another host: its messages all go through loopback.
    std::vector<int> idx{0, 1, -1};
    ShmTransport t0(std::make_unique<LoopbackTransport>(hub, 0), 1024, idx, seg.ptrs, {});
    ShmTransport t1(std::make_unique<LoopbackTransport>(hub, 1), 1024, idx, seg.ptrs, {});
    LoopbackTransport t2(hub, 2);

    char small[100], got[100] = {};
    for (int i = 0; i < 100; ++i) small[i] = static_cast<char>(i);
    auto r = t1.recv(0, 7, got, sizeof got);
    REQUIRE(r != nullptr);
    CHECK(t0.send(0 + 1, 7, small, sizeof small) == nullptr);
    CHECK(complete(t1, t0, r));
    CHECK(std::memcmp(got, small, sizeof got) == 0);

    CHECK(t0.send(1, 8, nullptr, 0) == nullptr);
    CHECK(complete(t1, t0, t1.recv(0, 8, nullptr, 0)));

    // Above eager_bytes: the loopback transport (rendezvous: pending until received).
    std::vector<char> big(5000, 'x'), big_got(5000);
    auto s = t0.send(1, 9, big.data(), big.size());
    CHECK(s != nullptr);
    CHECK(complete(t1, t0, t1.recv(0, 9, big_got.data(), big_got.size())));
    CHECK(complete(t0, t1, s));
    CHECK(big_got == big);

    // A rank on another host.
    char from2[10] = {};
    auto h2 = t0.recv(2, 3, from2, 10);
    CHECK(t2.send(0, 3, "123456789", 10) == nullptr);
    CHECK(complete(t0, t1, h2));
    CHECK(std::string(from2) == "123456789");

    // Sizes must agree, on both orders of arrival.
    CHECK(t0.send(1, 10, small, 50) == nullptr);
    CHECK_THROWS_AS(complete(t1, t0, t1.recv(0, 10, got, 60)), chorus::Error);
    auto late = t1.recv(0, 11, got, 60);
    CHECK(t0.send(1, 11, small, 50) == nullptr);
    try {
        complete(t1, t0, late);
        FAIL("expected a size mismatch");
    } catch (const chorus::Error& e) {
        CHECK(e.code() == CHORUS_ERR_MISMATCH);
    }
}

TEST_CASE("shm transport: a receive from a dead process fails", "[shm]") {
    pid_t child = fork();
    if (child == 0) _exit(0);
    REQUIRE(child > 0);
    waitpid(child, nullptr, 0);  // now a pid with no process
    auto hub = std::make_shared<LoopbackHub>(2);
    Segments seg(2);
    ShmTransport t0(std::make_unique<LoopbackTransport>(hub, 0), 4096, all_local(2), seg.ptrs,
                    {static_cast<int>(getpid()), static_cast<int>(child)});
    char buf[8];
    auto h = t0.recv(1, 1, buf, sizeof buf);
    CHECK_FALSE(t0.test(h));
    t0.check_peers();
    try {
        t0.test(h);
        FAIL("expected a peer failure");
    } catch (const chorus::Error& e) {
        CHECK(e.code() == CHORUS_ERR_PEER_FAILED);
    }
}

TEST_CASE("shm transport: every collective over the rings", "[shm]") {
    for (int p : {2, 3, 4, 7}) {
        Segments seg(p);
        for (bool rendezvous : {false, true}) {
            int next = 0;
            test::LoopbackGroup group(p, test::forced(Collective::Allreduce, "", 4096, 4), rendezvous, nullptr,
                                      [&](std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
                                          (void)next++;
                                          return std::make_unique<ShmTransport>(std::move(t), 65536, all_local(p),
                                                                                seg.ptrs, std::vector<int>{});
                                      });
            for (Collective coll : {Collective::Allreduce, Collective::Broadcast, Collective::Reduce,
                                    Collective::ReduceScatter, Collective::Allgather})
                for (size_t count : {size_t(1), size_t(100), size_t(1025), size_t(3000), size_t(20000)})
                    for (bool in_place : {false, true}) {
                        test::CollCase c;
                        c.coll = coll;
                        c.count = count;
                        c.root = p - 1;
                        c.in_place = in_place;
                        c.seed = 7 + count;
                        test::check_collective(group, c);
                    }
        }
    }
}

TEST_CASE("shm transport: messages larger than a slot go in fragments, larger than the ring in turns", "[shm]") {
    auto hub = std::make_shared<LoopbackHub>(2);
    Segments seg(2);
    ShmTransport t0(std::make_unique<LoopbackTransport>(hub, 0), 256 * 1024, all_local(2), seg.ptrs, {});
    ShmTransport t1(std::make_unique<LoopbackTransport>(hub, 1), 256 * 1024, all_local(2), seg.ptrs, {});
    const size_t ring = ShmTransport::kSlots * ShmTransport::kSlotPayload;
    for (size_t bytes : {size_t(0), size_t(4095), size_t(4096), size_t(4097), size_t(20000), ring, ring + 1,
                         3 * ring + 17}) {
        std::vector<unsigned char> data(bytes), got(bytes, 0xee);
        for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(i * 31 + bytes);
        INFO(bytes << " bytes");
        // Receive posted first.
        auto r = t1.recv(0, 5, got.data(), bytes);
        auto s = t0.send(1, 5, data.data(), bytes);
        CHECK((s == nullptr) == (bytes <= ring));
        REQUIRE(complete(t1, t0, r));
        REQUIRE(complete(t0, t1, s));
        CHECK(got == data);
        // Message first: unexpected, and for more than a ring, still arriving
        // when the receive is posted.
        std::fill(got.begin(), got.end(), 0xee);
        s = t0.send(1, 6, data.data(), bytes);
        t1.progress();
        r = t1.recv(0, 6, got.data(), bytes);
        REQUIRE(complete(t1, t0, r));
        REQUIRE(complete(t0, t1, s));
        CHECK(got == data);
    }
    // Two large messages back to back, taken in the other order.
    std::vector<char> a(2 * ring, 'a'), b(2 * ring + 5, 'b'), ga(a.size()), gb(b.size());
    auto sa = t0.send(1, 1, a.data(), a.size());
    auto sb = t0.send(1, 2, b.data(), b.size());
    auto rb = t1.recv(0, 2, gb.data(), gb.size());
    auto ra = t1.recv(0, 1, ga.data(), ga.size());
    REQUIRE(complete(t1, t0, rb));
    REQUIRE(complete(t1, t0, ra));
    REQUIRE(complete(t0, t1, sa));
    REQUIRE(complete(t0, t1, sb));
    CHECK(ga == a);
    CHECK(gb == b);
}
