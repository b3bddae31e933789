// The shared-memory transport for small messages, with ranks in one process:
// the queues, matching out of order, a full queue, several senders into one
// queue, size mismatches, dead peers, the publish slots, and every
// collective on top of it (small messages through the queues, larger ones
// through the loopback transport underneath).
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collective_check.h"
#include "net/shm/shm_transport.h"

using chorus::coll::Collective;
using chorus::net::LoopbackHub;
using chorus::net::LoopbackTransport;
using chorus::net::ShmTransport;
using chorus::net::Transport;

namespace {

// The segment of `n` ranks of one host, in this process.
struct Segments {
    std::unique_ptr<char[]> mem;
    void* ptrs = nullptr;
    explicit Segments(int n) {
        size_t bytes = chorus::net::shm::Segment::bytes(n) + 64;
        mem.reset(new char[bytes]);
        ptrs = mem.get() + (64 - reinterpret_cast<uintptr_t>(mem.get()) % 64) % 64;
        chorus::net::shm::Segment::init(ptrs, n);
    }
};

std::vector<int> all_local(int n) {
    std::vector<int> idx(n);
    for (int r = 0; r < n; ++r) idx[r] = r;
    return idx;
}

// An inner transport that must not be used: every message between the
// ranks of a test on it goes through shared memory.
class NoInner final : public Transport {
public:
    NoInner(int rank, int size) : rank_(rank), size_(size) {}
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    chorus::net::Handle send(int, chorus::net::Tag, const void*, size_t) override { throw std::logic_error("send"); }
    chorus::net::Handle recv(int, chorus::net::Tag, void*, size_t) override { throw std::logic_error("recv"); }
    bool test(chorus::net::Handle) override { throw std::logic_error("test"); }
    void cancel(chorus::net::Handle) override {}
    bool progress() override { return false; }
    const char* name() const override { return "none"; }
    void notify(int, const std::string&) override {}
    bool poll_notice(int*, std::string*) override { return false; }

private:
    int rank_, size_;
};

// Ranks 0 .. n-1 of one process, with single-copy access to each other (this
// process's pid, or `pids` where given): messages past `eager` bytes go by
// rendezvous.
std::vector<std::unique_ptr<ShmTransport>> rendezvous_ranks(int n, void* seg, size_t eager,
                                                            std::vector<int> pids = {}) {
    if (pids.empty()) pids.assign(n, static_cast<int>(getpid()));
    std::vector<std::unique_ptr<ShmTransport>> t;
    for (int r = 0; r < n; ++r) {
        t.push_back(std::make_unique<ShmTransport>(std::make_unique<NoInner>(r, n), eager, all_local(n), seg, pids));
        t.back()->enable_single_copy(true, false);
    }
    return t;
}

// The code of the Error that f() throws (CHORUS_SUCCESS if none).
template <class F>
chorus_result_t error_of(F f) {
    try {
        f();
    } catch (const chorus::Error& e) {
        return e.code();
    }
    return CHORUS_SUCCESS;
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

TEST_CASE("shm transport: messages match by tag in any order, through a full queue", "[shm]") {
    auto hub = std::make_shared<LoopbackHub>(2);
    Segments seg(2);
    ShmTransport t0(std::make_unique<LoopbackTransport>(hub, 0), 4096, all_local(2), seg.ptrs, {});
    ShmTransport t1(std::make_unique<LoopbackTransport>(hub, 1), 4096, all_local(2), seg.ptrs, {});
    const int n = static_cast<int>(chorus::net::shm::kCells) * 3;
    std::vector<std::vector<int>> data(n);
    std::vector<chorus::net::Handle> sends;
    for (int i = 0; i < n; ++i) {
        data[i].assign(1 + (i * 7) % 1000, i);  // each fits one cell
        sends.push_back(t0.send(1, 1000 + i, data[i].data(), data[i].size() * sizeof(int)));
    }
    // The queue holds kCells messages; the rest wait, in order.
    int immediate = 0;
    for (auto h : sends) immediate += h == nullptr;
    CHECK(immediate == static_cast<int>(chorus::net::shm::kCells));
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
    Segments seg(2);
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

TEST_CASE("shm transport: every collective over the queues and the rendezvous", "[shm]") {
    for (int p : {2, 3, 4, 7}) {
        // Larger messages through loopback (which completes sends on
        // arrival, or only once received), or by Chorus's rendezvous.
        for (int mode = 0; mode < 3; ++mode) {
            const bool rendezvous = mode > 0, single_copy = mode == 2;
            Segments seg(p);  // a fresh segment for every group
            test::LoopbackGroup group(p, test::forced(Collective::Allreduce, "", 4096, 4), rendezvous, nullptr,
                                      [&](std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
                                          auto shm = std::make_unique<ShmTransport>(
                                              std::move(t), single_copy ? 4096 : 65536, all_local(p), seg.ptrs,
                                              std::vector<int>(single_copy ? p : 0, static_cast<int>(getpid())));
                                          shm->enable_single_copy(single_copy, false);
                                          return shm;
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

TEST_CASE("shm transport: messages larger than a cell go in fragments, larger than the queue in turns", "[shm]") {
    auto hub = std::make_shared<LoopbackHub>(2);
    Segments seg(2);
    ShmTransport t0(std::make_unique<LoopbackTransport>(hub, 0), 256 * 1024, all_local(2), seg.ptrs, {});
    ShmTransport t1(std::make_unique<LoopbackTransport>(hub, 1), 256 * 1024, all_local(2), seg.ptrs, {});
    const size_t ring = chorus::net::shm::kCells * chorus::net::shm::kCellPayload;
    const size_t cell = chorus::net::shm::kCellPayload;
    for (size_t bytes : {size_t(0), cell - 1, cell, cell + 1, size_t(20000), ring, ring + 1, ShmTransport::kMaxEager}) {
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
    // Two large messages back to back (more than the queue holds), taken in
    // the other order.
    std::vector<char> a(ring - 1000, 'a'), b(ring + 5, 'b'), ga(a.size()), gb(b.size());
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

TEST_CASE("shm transport: several senders into one queue, their fragments interleaved", "[shm]") {
    const int p = 4;
    auto hub = std::make_shared<LoopbackHub>(p);
    Segments seg(p);
    std::vector<std::unique_ptr<ShmTransport>> t;
    for (int r = 0; r < p; ++r)
        t.push_back(std::make_unique<ShmTransport>(std::make_unique<LoopbackTransport>(hub, r), 256 * 1024,
                                                   all_local(p), seg.ptrs, std::vector<int>{}));
    // Ranks 1..3 each send rank 0 three messages of several cells; the
    // queue is far smaller than all of it, so the senders take turns.
    const size_t bytes = 5 * chorus::net::shm::kCellPayload + 123;
    std::vector<std::vector<char>> data, got;
    std::vector<chorus::net::Handle> sends, recvs;
    for (int k = 0; k < 3; ++k)
        for (int r = 1; r < p; ++r) {
            data.emplace_back(bytes);
            for (size_t i = 0; i < bytes; ++i) data.back()[i] = static_cast<char>(r * 31 + k * 7 + i);
            sends.push_back(t[r]->send(0, 100 + k, data.back().data(), bytes));
        }
    // Received in another order than sent: by tag, then by sender.
    got.assign(data.size(), std::vector<char>(bytes));
    for (int k = 2; k >= 0; --k)
        for (int r = p - 1; r >= 1; --r) recvs.push_back(t[0]->recv(r, 100 + k, got[k * 3 + r - 1].data(), bytes));
    for (int round = 0; round < 1000; ++round)
        for (auto& x : t) x->progress();
    for (auto h : recvs) CHECK(t[0]->test(h));
    for (size_t i = 0; i < sends.size(); ++i) CHECK(t[1 + i % 3]->test(sends[i]));
    for (size_t i = 0; i < data.size(); ++i) CHECK(got[i] == data[i]);
}

TEST_CASE("shm transport: publish slots, reused once every rank is done with them", "[shm]") {
    const int p = 3;
    auto hub = std::make_shared<LoopbackHub>(p);
    Segments seg(p);
    std::vector<std::unique_ptr<ShmTransport>> t;
    for (int r = 0; r < p; ++r)
        t.push_back(std::make_unique<ShmTransport>(std::make_unique<LoopbackTransport>(hub, r), 4096, all_local(p),
                                                   seg.ptrs, std::vector<int>{}));
    REQUIRE(t[0]->slot_bytes() == chorus::net::shm::kPubBytes);
    const uint64_t K = chorus::net::Transport::kSlots;
    // Operations 0..K-1 may be written at once; K only when all are done with 0.
    for (uint64_t n = 0; n < K; ++n) CHECK(t[1]->slot_free(n));
    CHECK_FALSE(t[1]->slot_free(K));
    std::memcpy(t[1]->slot(1, 0), "hello", 6);
    CHECK_FALSE(t[0]->published(1, 0));
    t[1]->publish(0);
    CHECK(t[0]->published(1, 0));
    CHECK(std::string(t[0]->slot(1, 0)) == "hello");
    CHECK_FALSE(t[0]->published(1, K));  // the same slot, a later operation
    // Done out of order on rank 2: the count moves once 0 is done too.
    for (int r = 0; r < 2; ++r) t[r]->slot_done(0);
    t[2]->slot_done(1);
    CHECK_FALSE(t[0]->slot_free(K));
    t[2]->slot_done(0);
    CHECK(t[0]->slot_free(K));
    CHECK_FALSE(t[0]->slot_free(K + 1));  // ranks 0 and 1 are not done with 1
    // A communicator that spans hosts has no slots.
    std::vector<int> idx{0, 1, -1};
    Segments two(2);
    ShmTransport split(std::make_unique<LoopbackTransport>(hub, 0), 4096, idx, two.ptrs, {});
    CHECK(split.slot_bytes() == 0);
}

TEST_CASE("shm transport: larger messages by rendezvous, read from the sender's memory", "[shm]") {
    Segments seg(2);
    auto t = rendezvous_ranks(2, seg.ptrs, 4096);
    for (size_t bytes : {size_t(4097), size_t(100000), size_t(3) << 20}) {
        INFO(bytes << " bytes");
        std::vector<unsigned char> data(bytes), got(bytes, 0xee);
        for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(i * 31 + bytes);
        // Receive posted first: the data is read when the receive is tested.
        auto r = t[1]->recv(0, 5, got.data(), bytes);
        auto s = t[0]->send(1, 5, data.data(), bytes);
        REQUIRE(s != nullptr);
        t[1]->progress();
        CHECK(got[0] == 0xee);
        CHECK_FALSE(t[0]->test(s));
        REQUIRE(complete(*t[1], *t[0], r));
        CHECK(got == data);
        // The receiver owes nothing more: the send completes with no call of
        // the receiver's.
        CHECK(t[0]->test(s));
        // Message first: kept until its receive is posted.
        std::fill(got.begin(), got.end(), 0xee);
        s = t[0]->send(1, 6, data.data(), bytes);
        t[1]->progress();
        r = t[1]->recv(0, 6, got.data(), bytes);
        REQUIRE(r != nullptr);
        REQUIRE(t[1]->test(r));
        CHECK(got == data);
        CHECK(t[0]->test(s));
    }
    // Up to eager bytes: through the cells, complete at once.
    std::vector<char> small(4096, 's'), small_got(4096);
    CHECK(t[0]->send(1, 7, small.data(), small.size()) == nullptr);
    CHECK(complete(*t[1], *t[0], t[1]->recv(0, 7, small_got.data(), small_got.size())));
    CHECK(small_got == small);
}

TEST_CASE("shm transport: rendezvous behind a full queue and beyond the acknowledgement words", "[shm]") {
    Segments seg(2);
    auto t = rendezvous_ranks(2, seg.ptrs, 1024);
    // More sends than cells and than acknowledgement words, some eager among
    // them, received in the reverse order (the early ones unexpected).
    const int n = static_cast<int>(chorus::net::shm::kAcks) + 200;
    std::vector<std::vector<int>> data(n), got(n);
    std::vector<chorus::net::Handle> sends(n), recvs(n);
    for (int i = 0; i < n; ++i) {
        data[i].assign(i % 5 == 0 ? 100 : 300 + i % 7, i);
        got[i].assign(data[i].size(), -1);
        sends[i] = t[0]->send(1, 1000 + i, data[i].data(), data[i].size() * sizeof(int));
    }
    for (int round = 0; round < 100; ++round) {
        t[0]->progress();
        t[1]->progress();
    }
    for (int i = n - 1; i >= 0; --i) {
        recvs[i] = t[1]->recv(0, 1000 + i, got[i].data(), got[i].size() * sizeof(int));
        // The later sends wait for the queue and for acknowledgement words
        // that only these receives free.
        for (int k = 0; k < 3; ++k) {
            t[1]->progress();
            t[0]->progress();
        }
    }
    for (int i = 0; i < n; ++i) REQUIRE(complete(*t[1], *t[0], recvs[i]));
    for (int i = 0; i < n; ++i) CHECK(complete(*t[0], *t[1], sends[i]));
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += got[i] != data[i];
    CHECK(wrong == 0);
}

TEST_CASE("shm transport: a rendezvous size mismatch or cancelled receive still completes the send", "[shm]") {
    Segments seg(2);
    auto t = rendezvous_ranks(2, seg.ptrs, 1024);
    std::vector<char> data(5000, 'd'), got(6000, 'g');
    // Receive posted first, then message first.
    auto r = t[1]->recv(0, 1, got.data(), 6000);
    auto s = t[0]->send(1, 1, data.data(), data.size());
    CHECK(error_of([&] { complete(*t[1], *t[0], r); }) == CHORUS_ERR_MISMATCH);
    CHECK(t[0]->test(s));
    s = t[0]->send(1, 2, data.data(), data.size());
    t[1]->progress();
    CHECK(error_of([&] { t[1]->recv(0, 2, got.data(), 4000); }) == CHORUS_ERR_MISMATCH);
    CHECK(t[0]->test(s));
    CHECK(got[0] == 'g');
    // A receive cancelled once the message is there: nothing is read.
    r = t[1]->recv(0, 3, got.data(), data.size());
    s = t[0]->send(1, 3, data.data(), data.size());
    t[1]->progress();
    t[1]->cancel(r);
    CHECK(t[0]->test(s));
    CHECK(got[0] == 'g');
}

TEST_CASE("shm transport: a rendezvous with a dead peer fails on either side", "[shm]") {
    pid_t child = fork();
    if (child == 0) _exit(0);
    REQUIRE(child > 0);
    waitpid(child, nullptr, 0);  // now a pid with no process
    const int me = static_cast<int>(getpid()), gone = static_cast<int>(child);
    Segments seg(2);
    // Rank 1 reads from a rank 0 that is gone.
    auto reader = rendezvous_ranks(2, seg.ptrs, 1024, {gone, me});
    std::vector<char> data(5000, 'd'), got(5000, 'g');
    auto r = reader[1]->recv(0, 1, got.data(), got.size());
    auto s = reader[0]->send(1, 1, data.data(), data.size());
    CHECK(error_of([&] { complete(*reader[1], *reader[0], r); }) == CHORUS_ERR_PEER_FAILED);
    reader[0]->cancel(s);
    // Rank 0 waits for a rank 1 that is gone.
    Segments seg2(2);
    auto sender = rendezvous_ranks(2, seg2.ptrs, 1024, {me, gone});
    s = sender[0]->send(1, 1, data.data(), data.size());
    CHECK_FALSE(sender[0]->test(s));
    sender[0]->check_peers();
    CHECK(error_of([&] { sender[0]->test(s); }) == CHORUS_ERR_PEER_FAILED);
}
