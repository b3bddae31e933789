// The tag budget: the arithmetic of (step, piece) tags, and every algorithm's
// schedule built (not run) at rank counts past the old 13-bit step field, up
// to the wire tag's 2^20 ranks.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "coll/algorithm.h"
#include "coll/steps.h"
#include "net/transport.h"

using namespace chorus;
using namespace chorus::coll;

TEST_CASE("a tag space gives the steps the bits they need and the pieces the rest", "[unit][tags]") {
    REQUIRE(bits_for(0) == 0);
    REQUIRE(bits_for(1) == 1);
    REQUIRE(bits_for(8191) == 13);
    REQUIRE(bits_for(8192) == 14);
    REQUIRE(ceil_log2(1) == 0);
    REQUIRE(ceil_log2(8192) == 13);
    REQUIRE(ceil_log2(8193) == 14);
    for (auto [steps, step_bits] : {std::pair<uint64_t, uint32_t>{1, 0},
                                    {2, 1},
                                    {3, 2},
                                    {8192, 13},
                                    {8193, 14},
                                    {(1u << 20) + 31, 21},
                                    {1u << 27, 27},
                                    {1u << 28, 28}}) {
        CAPTURE(steps);
        TagSpace t(steps);
        REQUIRE(t.step_bits() == step_bits);
        REQUIRE(t.piece_bits() == kStepTagBits - step_bits);
        REQUIRE(t.max_pieces() >= 1);
        REQUIRE(t.max_pieces() <= size_t(1) << t.piece_bits());
        REQUIRE(t.max_pieces() == std::max<size_t>(1, std::min(size_t(1) << t.piece_bits(), kPieceBudget / steps)));
        // The largest tag fits the schedule's tag field.
        REQUIRE(t.tag(steps - 1, t.max_pieces() - 1) <= kMaxStepTag);
        REQUIRE_THROWS_AS(t.tag(steps, 0), Error);
        REQUIRE_THROWS_AS(t.tag(0, t.max_pieces()), Error);
    }
    REQUIRE_THROWS_AS(TagSpace((1ull << 28) + 1), Error);
    // Few steps: the piece budget, not the bits, bounds the pieces.
    REQUIRE(TagSpace(1).max_pieces() == kPieceBudget);
    REQUIRE(TagSpace(3).max_pieces() == kPieceBudget / 3);
}

TEST_CASE("tags are distinct for distinct (step, piece) pairs", "[unit][tags]") {
    for (uint64_t steps : {1ull, 5ull, 8193ull, (1ull << 20) + 31}) {
        TagSpace t(steps);
        // The corners and the middle of the space.
        std::set<std::pair<uint64_t, size_t>> pairs;
        for (uint64_t s : {uint64_t(0), steps / 2, steps - 1})
            for (size_t p : {size_t(0), size_t(1), t.max_pieces() / 2, t.max_pieces() - 1})
                if (p < t.max_pieces()) pairs.insert({s, p});
        std::set<uint32_t> tags;
        for (auto [s, p] : pairs) {
            uint32_t tag = t.tag(s, p);
            REQUIRE(tag >> t.piece_bits() == s);
            REQUIRE((tag & ((1u << t.piece_bits()) - 1)) == p);
            tags.insert(tag);
        }
        REQUIRE(tags.size() == pairs.size());
    }
}

TEST_CASE("the wire tag keeps source, sequence and the algorithm's tag apart", "[unit][tags]") {
    static_assert(net::kTagSourceBits + net::kTagSeqBits + net::kTagStepBits == 64, "the wire tag is 64 bits");
    const int top = net::kMaxRanks - 1;
    net::Tag t = net::make_tag(top, 0xffff, kMaxStepTag);
    REQUIRE(t == ~net::Tag(0));
    REQUIRE(net::make_tag(top, 0, 0) >> (net::kTagSeqBits + net::kTagStepBits) == net::Tag(top));
    REQUIRE(net::make_tag(1, 0, kMaxStepTag) != net::make_tag(0, 1, kMaxStepTag));
    // The sequence number wraps within its field, never into the rank's.
    REQUIRE(net::make_tag(3, 1u << net::kTagSeqBits, 7) == net::make_tag(3, 0, 7));
}

namespace {

// Up to 65537 ranks: messages of 3p+5 elements (the block-cut algorithms'
// blocks of 3 or 4, uneven) and blocks of 40 where a message is a block per
// rank (all-gather(v), reduce-scatter, all-to-all(v), gather(v), scatter(v)),
// in pieces of 16 elements up to 8200 ranks (several pieces a block, many a
// message, and still small schedules).
// At 2^20 ranks a one- or two-element message, so that the build stays
// quick: the ring's 2^20 - 1 step indices are still used, by the blocks
// that are not empty.
CollArgs args_at(Collective c, int p, int rank) {
    CollArgs a;
    a.coll = c;
    a.size = p;
    a.rank = rank;
    a.dtype = CHORUS_FLOAT32;
    a.chunk_bytes = p <= 8200 ? 64 : 256 * 1024;
    const bool huge = p > 65537;
    switch (c) {
        case Collective::ReduceScatter:
        case Collective::Allgather:
        case Collective::Allgatherv:
        case Collective::Alltoall:
        case Collective::Alltoallv:
        case Collective::Gather:
        case Collective::Gatherv:
        case Collective::Scatter:
        case Collective::Scatterv: a.count = huge ? 1 : 40; break;  // per block: p blocks a message
        default: a.count = huge ? 2 : 3 * static_cast<size_t>(p) + 5; break;
    }
    return a;
}

using Key = std::tuple<int, uint32_t, size_t>;  // peer, tag, bytes

// Every transfer of `s` with a peer in `built` must meet its counterpart
// there: the same tag and size, the other direction.
void require_matching(const std::map<int, std::unique_ptr<Schedule>>& built, bool some) {
    std::map<int, std::pair<std::vector<Key>, std::vector<Key>>> sets;  // rank -> (sends, recvs)
    for (const auto& [r, s] : built)
        for (const Step& st : s->steps()) {
            if (st.kind == StepKind::Send) sets[r].first.emplace_back(st.peer, st.tag, st.bytes);
            if (st.kind == StepKind::Recv) sets[r].second.emplace_back(st.peer, st.tag, st.bytes);
        }
    for (auto& [r, sr] : sets) {
        std::sort(sr.first.begin(), sr.first.end());
        std::sort(sr.second.begin(), sr.second.end());
    }
    size_t checked = 0, unmatched = 0;
    for (const auto& [r, sr] : sets) {
        for (int dir = 0; dir < 2; ++dir)
            for (const Key& k : dir ? sr.second : sr.first) {
                auto peer = sets.find(std::get<0>(k));
                if (peer == sets.end()) continue;
                const std::vector<Key>& other = dir ? peer->second.first : peer->second.second;
                ++checked;
                if (!std::binary_search(other.begin(), other.end(), Key{r, std::get<1>(k), std::get<2>(k)})) {
                    if (!unmatched++)
                        UNSCOPED_INFO("rank " << r << (dir ? " receives from " : " sends to ") << std::get<0>(k)
                                              << " tag " << std::get<1>(k) << ", " << std::get<2>(k)
                                              << " bytes: no counterpart");
                }
            }
    }
    if (some) REQUIRE(checked > 0);
    REQUIRE(unmatched == 0);
}

// Builds rank 0, a middle rank and the last (and, when `with_peers`, up to
// 16 of the ranks each exchanges messages with), checks each schedule's
// tags, and the matching of the transfers between the ranks built.
void build_and_check(const Algorithm& algo, int p, bool with_peers) {
    std::map<int, std::unique_ptr<Schedule>> built;
    auto build = [&](int r) {
        if (!built.count(r)) built[r] = algo.build(args_at(algo.coll, p, r));
    };
    const std::vector<int> sample = {0, p / 2 + 1, p - 1};
    for (int r : sample) build(r);
    for (int r : sample) {
        const Schedule& s = *built.at(r);
        REQUIRE(s.num_transfers() > 0);
        s.check_tags();
        if (!with_peers) continue;
        std::set<int> peers;
        for (const Step& st : s.steps())
            if (st.peer >= 0 && peers.size() < 16) peers.insert(st.peer);
        for (int q : peers) build(q);
    }
    for (const auto& [r, s] : built) s->check_tags();
    require_matching(built, with_peers);
}

}  // namespace

TEST_CASE("every algorithm builds valid, matching schedules past 8161 ranks", "[unit][tags][scale]") {
    // Around the old limits (8162 ranks for broadcast, 8194 for all-gather
    // and reduce-scatter) and the power of two between them, where a field
    // of the tag grows by a bit.
    for (int c = 0; c < kNumCollectives; ++c)
        for (const Algorithm& algo : algorithms_for(Collective(c)))
            for (int p : {8161, 8162, 8163, 8191, 8192, 8193, 8194, 8195, 8200}) {
                if (algo.supports && !algo.supports(args_at(algo.coll, p, 0))) continue;  // slots: no messages
                CAPTURE(collective_name(algo.coll), algo.name, p);
                // Peers' schedules too at the old limits (8162, 8194) and a few more.
                const bool peers = p == 8161 || p == 8162 || p == 8192 || p == 8193 || p == 8194 || p == 8200;
                build_and_check(algo, p, peers);
            }
}

TEST_CASE("every algorithm builds valid schedules at 65537 and 2^20 ranks", "[unit][tags][scale]") {
    for (int c = 0; c < kNumCollectives; ++c)
        for (const Algorithm& algo : algorithms_for(Collective(c)))
            for (int p : {65537, net::kMaxRanks}) {
                if (algo.supports && !algo.supports(args_at(algo.coll, p, 0))) continue;  // slots: no messages
                CAPTURE(collective_name(algo.coll), algo.name, p);
                build_and_check(algo, p, p == 65537);
            }
}

TEST_CASE("a message past the piece budget travels in fewer, larger pieces", "[unit][tags]") {
    // One step index: at most kPieceBudget pieces, however small the chunk.
    CollArgs a;
    a.coll = Collective::Broadcast;
    a.size = 3;  // a chain that forwards (at two ranks a message goes whole)
    a.count = kPieceBudget + 1000;
    a.chunk_bytes = 4;  // one element a piece, were there no budget
    for (int r : {0, 1}) {
        a.rank = r;
        auto s = find_algorithm(Collective::Broadcast, "chain").build(a);
        s->check_tags();
        size_t moved = 0, transfers = 0;
        for (const Step& st : s->steps())
            if (st.kind == (r == 0 ? StepKind::Send : StepKind::Recv)) {
                moved += st.bytes;
                ++transfers;
            }
        REQUIRE(transfers == kPieceBudget);
        REQUIRE(moved == a.count * 4);
    }
}

TEST_CASE("at two ranks a message nothing forwards travels whole, in a phase in pieces", "[unit][tags]") {
    // Each of these, at two ranks, moves one block between user buffers:
    // one message each way, whatever the chunk size. Three ranks (a ring or
    // chain forwards; where none does, whole blocks would still be many in
    // flight at once) or a phase of a composed schedule (whose pieces the
    // next phase may take as they land) keep the pieces.
    const std::pair<Collective, const char*> algos[] = {
        {Collective::Allgather, "ring"},    {Collective::Allgather, "bruck"},    {Collective::Allgatherv, "ring"},
        {Collective::Alltoall, "pairwise"}, {Collective::Alltoallv, "pairwise"}, {Collective::Gather, "binomial"},
        {Collective::Gather, "linear"},     {Collective::Gatherv, "linear"},     {Collective::Scatter, "binomial"},
        {Collective::Scatter, "linear"},    {Collective::Scatterv, "linear"},    {Collective::Broadcast, "binomial"},
        {Collective::Broadcast, "chain"},   {Collective::Allgatherv, "bcast"},
    };
    for (auto [coll, name] : algos) {
        const Algorithm& algo = find_algorithm(coll, name);
        for (int p : {2, 3})
            for (bool phase : {false, true}) {
                const bool whole = p == 2 && !phase;
                size_t messages = 0, largest = 0;
                for (int r = 0; r < p; ++r) {
                    CollArgs a = args_at(coll, p, r);
                    a.count = 4096;  // 16 KiB of float32 a block: 256 pieces of 64 bytes
                    a.phase = phase;
                    CAPTURE(collective_name(coll), name, p, phase, r);
                    auto s = algo.build(a);
                    s->check_tags();
                    for (const Step& st : s->steps())
                        if (st.kind == StepKind::Send) {
                            ++messages;
                            largest = std::max<size_t>(largest, st.bytes);
                        }
                }
                CAPTURE(collective_name(coll), name, p, phase, messages, largest);
                if (whole) {
                    // One message of the whole block (a broadcast, gather or
                    // scatter one way; the exchanges both ways).
                    REQUIRE(largest == 4096 * 4);
                    REQUIRE(messages <= 2);
                } else {
                    REQUIRE(largest == 64);  // args_at's chunk
                    REQUIRE(messages > 2);
                }
            }
    }
    // "Whole" stops at StepBuilder::kWholeBytes a piece (what staged device
    // buffers pin each way): 130 MiB go in three pieces.
    const Algorithm& ring = find_algorithm(Collective::Allgather, "ring");
    for (int r : {0, 1}) {
        CollArgs a = args_at(Collective::Allgather, 2, r);
        a.count = (size_t(130) << 20) / 4;
        auto s = ring.build(a);
        s->check_tags();
        size_t sends = 0, moved = 0;
        for (const Step& st : s->steps())
            if (st.kind == StepKind::Send) {
                ++sends;
                moved += st.bytes;
                REQUIRE(st.bytes <= StepBuilder::kWholeBytes);
            }
        REQUIRE(sends == 3);
        REQUIRE(moved == a.count * 4);
    }
}
