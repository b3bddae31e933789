// Schedules and the executor, without a network: dependency bookkeeping, the
// shape of the ring, and the windows.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "coll/algorithm.h"
#include "exec/executor.h"
#include "loopback_transport.h"

using namespace chorus;

TEST_CASE("finalize computes the reverse edges of every dependency", "[unit][schedule]") {
    Schedule s(CHORUS_FLOAT32, CHORUS_SUM, 0, 2);
    StepId a = s.recv(1, 0, {Buf::Scratch, 0}, 16);
    StepId b = s.reduce({Buf::Recv, 0}, {Buf::Send, 0}, {Buf::Scratch, 0}, 4, {a});
    StepId c = s.send(1, 1, {Buf::Recv, 0}, 16, {b});
    StepId d = s.copy({Buf::Recv, 16}, {Buf::Send, 16}, 8);
    StepId e = s.recv(1, 2, {Buf::Scratch, 0}, 16);
    s.add_dep(e, b);  // the scratch slot is reused after the reduction read it
    s.finalize();
    REQUIRE(s.ndeps(c) == 1);
    REQUIRE(s.ndeps(d) == 0);
    REQUIRE(s.ndeps(e) == 1);
    REQUIRE(s.ndependents(a) == 1);
    REQUIRE(s.dependents_of(a)[0] == b);
    REQUIRE(s.ndependents(b) == 2);
    REQUIRE(s.ndependents(c) == 0);
    REQUIRE_THROWS_AS(s.add_dep(a, e), Error);
    REQUIRE(s.num_transfers() == 3);
}

TEST_CASE("a step may only depend on earlier steps, and transfers must be sane", "[unit][schedule]") {
    Schedule s(CHORUS_FLOAT32, CHORUS_SUM, 0, 2);
    StepId a = s.copy({Buf::Recv, 0}, {Buf::Send, 0}, 4);
    REQUIRE_THROWS_AS(s.send(1, 0, {Buf::Send, 0}, 4, {a + 1}), Error);
    REQUIRE_THROWS_AS(s.send(2, 0, {Buf::Send, 0}, 4), Error);  // no such peer
    REQUIRE_THROWS_AS(s.send(1, kMaxStepTag + 1, {Buf::Send, 0}, 4), Error);
    REQUIRE_THROWS_AS(s.recv(1, 0, {Buf::Recv, 0}, 0), Error);  // empty transfer
}

TEST_CASE("the ring has 2(p-1) sends and receives per chunk and p-1 reductions", "[unit][schedule]") {
    for (int p : {2, 3, 8}) {
        coll::CollArgs a;
        a.count = 1000 * p;
        a.size = p;
        a.rank = p - 1;
        a.chunk_bytes = 1 << 20;  // one chunk
        auto s = coll::build_ring_allreduce(a);
        size_t sends = 0, recvs = 0, reduces = 0;
        for (const auto& st : s->steps()) {
            sends += st.kind == StepKind::Send;
            recvs += st.kind == StepKind::Recv;
            reduces += st.kind == StepKind::Reduce;
            if (st.kind == StepKind::Send) REQUIRE(st.peer == 0);      // next
            if (st.kind == StepKind::Recv) REQUIRE(st.peer == p - 2);  // prev
        }
        REQUIRE(sends == size_t(2 * (p - 1)));
        REQUIRE(recvs == size_t(2 * (p - 1)));
        REQUIRE(reduces == size_t(p - 1));
        a.chunk_bytes = 400;  // 100 floats: 10 chunks per block
        auto t = coll::build_ring_allreduce(a);
        REQUIRE(t->num_transfers() == size_t(4 * (p - 1) * 10));
        // Scratch is bounded by the window of slots, not the message.
        REQUIRE(t->scratch_bytes() <= size_t(a.depth) * 400);
    }
}

TEST_CASE("a rank's copy of its own data trails its sends instead of delaying them", "[unit][schedule]") {
    // The executor runs ready local steps before it posts transfers, so a
    // copy that waits for nothing would hold back the first send.
    using coll::Collective;
    for (int p : {2, 3, 5}) {
        for (auto [coll, name] : {std::pair{Collective::Broadcast, "binomial"},
                                  {Collective::Broadcast, "chain"},
                                  {Collective::Broadcast, "scatter_allgather"},
                                  {Collective::Allgather, "ring"}}) {
            CAPTURE(p, name);
            coll::CollArgs a;
            a.coll = coll;
            a.count = 4000;
            a.size = p;
            a.rank = 0;  // the root of the broadcasts
            a.chunk_bytes = 1024;
            auto s = coll::find_algorithm(coll, name).build(a);
            size_t copied = 0;
            for (StepId k = 0; k < s->num_steps(); ++k) {
                const Step& st = s->steps()[k];
                if (st.kind != StepKind::Copy) continue;
                copied += st.bytes;
                REQUIRE(s->ndeps(k) == 1);
                REQUIRE(s->steps()[s->deps_of(k)[0]].kind == StepKind::Send);
            }
            REQUIRE(copied == a.count * 4);
        }
    }
}

TEST_CASE("one rank's allreduce is a copy, or nothing in place", "[unit][schedule]") {
    coll::CollArgs a;
    a.count = 5;
    a.size = 1;
    auto s = coll::build_ring_allreduce(a);
    REQUIRE(s->steps().size() == 1);
    REQUIRE(s->steps()[0].kind == StepKind::Copy);
    float in[5] = {1, 2, 3, 4, 5}, out[5] = {};
    auto hub = std::make_shared<net::LoopbackHub>(1);
    net::LoopbackTransport t(hub, 0);
    Executor ex(*s, t, {in, out, nullptr}, 0, 4);
    REQUIRE(ex.progress());
    for (int i = 0; i < 5; ++i) REQUIRE(out[i] == in[i]);
}

TEST_CASE("the executor keeps at most `window` receives in flight", "[unit][executor]") {
    // Rank 0 posts 10 independent receives with a window of 3; rank 1 has
    // not sent anything yet.
    Schedule s(CHORUS_UINT8, CHORUS_SUM, 0, 2);
    for (uint32_t k = 0; k < 10; ++k) s.recv(1, k, {Buf::Recv, k}, 1);
    s.finalize();
    auto hub = std::make_shared<net::LoopbackHub>(2);
    net::LoopbackTransport t0(hub, 0), t1(hub, 1);
    unsigned char out[10] = {};
    Executor ex(s, t0, {nullptr, out, nullptr}, 0, 3);
    REQUIRE_FALSE(ex.progress());
    std::string pending = ex.pending_summary();
    size_t in_flight = 0;
    for (size_t at = pending.find("recv from"); at != std::string::npos; at = pending.find("recv from", at + 1))
        ++in_flight;
    REQUIRE(in_flight == 3);
    REQUIRE(ex.pending_summary().find("0 of 10 steps done") != std::string::npos);
    // Deliver the messages in reverse order: the ones outside the window wait
    // as unexpected messages; everything completes in the end.
    for (int k = 9; k >= 0; --k) {
        unsigned char v = static_cast<unsigned char>(k + 1);
        REQUIRE(t1.send(0, net::make_tag(1, 0, k), &v, 1) == nullptr);
    }
    for (int i = 0; i < 10 && !ex.progress(); ++i) {
    }
    REQUIRE(ex.done());
    for (int k = 0; k < 10; ++k) REQUIRE(out[k] == k + 1);
}

TEST_CASE("all-gatherv moves only the blocks that hold elements, found by the builder or given to it",
          "[unit][schedule]") {
    // One rank holds every element (the skewed case chorus-model predicts
    // at 32768 ranks): a rank's ring schedule is a receive and a send of
    // that block, whether the builder finds the block itself or is given it.
    const int p = 4096;
    coll::CollArgs a;
    a.coll = coll::Collective::Allgatherv;
    a.size = p;
    a.counts.assign(p, 0);
    a.counts[7] = 1000;
    a.displs.assign(p, 1000);
    a.displs[7] = 0;
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) a.held = std::make_shared<const std::vector<int>>(coll::find_held_blocks(a));
        for (int r = 0; r < p; r += 97) {
            a.rank = r;
            a.count = a.counts[r];
            const auto ring = coll::find_algorithm(a.coll, "ring").build(a);
            const auto bcast = coll::find_algorithm(a.coll, "bcast").build(a);
            const size_t want = r == 7 || r == 6 ? 1 : 2;  // the holder sends; the last hop only receives
            CHECK(ring->num_transfers() == want);
            CHECK(bcast->num_transfers() <= 13);  // at most 12 rounds' sends and a receive
        }
    }
    REQUIRE(coll::find_held_blocks(a) == std::vector<int>{7});
}
