// The collectives pipelined through the publish slots in rounds
// (coll/shm/shm_pipeline.cc: all-reduce, reduce, broadcast, all-gather) on
// loopback ranks whose hub emulates shared slots: many rank counts, roots,
// messages of one chunk to hundreds (many more rounds than there are slots,
// so every slot is reused), datatypes, ops, in and out of place; several
// all-reduces in flight at once; device buffers on the emulated device; and
// the order of the rounds in each rank's schedule, which a rank that runs
// its steps in order relies on.
#include <catch2/catch.hpp>
#include <map>

#include "coll/algorithm.h"
#include "collective_check.h"
#include "net/shm/shm_segment.h"

using chorus::Schedule;
using chorus::Step;
using chorus::StepKind;
using chorus::coll::CollArgs;
using chorus::coll::Collective;

namespace {

const Collective kPipelined[] = {Collective::Allreduce, Collective::Reduce, Collective::Broadcast,
                                 Collective::Allgather};

test::LoopbackGroup pipeline_group(int p, size_t slot_bytes, Collective coll = Collective::Allreduce) {
    test::LoopbackGroup group(p, test::forced(coll, "shm_pipeline"));
    group.hub->enable_slots(slot_bytes);
    return group;
}

}  // namespace

TEST_CASE("pipelined collectives through the slots, at many rank counts and sizes", "[pipeline]") {
    const struct {
        chorus_datatype_t dt;
        chorus_op_t op;
    } kinds[] = {{CHORUS_FLOAT32, CHORUS_SUM}, {CHORUS_INT64, CHORUS_MIN},    {CHORUS_FLOAT64, CHORUS_AVG},
                 {CHORUS_UINT8, CHORUS_BOR},   {CHORUS_BFLOAT16, CHORUS_SUM}, {CHORUS_UINT16, CHORUS_LXOR}};
    // Small slots (chunks of 64 bytes to a few hundred): many rounds for
    // small messages; and the real slot size.
    for (Collective coll : kPipelined)
        for (size_t slot : {size_t(1024), chorus::net::shm::kPubBytes})
            for (int p : {1, 2, 3, 4, 5, 7, 8, 13, 16}) {
                auto group = pipeline_group(p, slot, coll);
                const bool reduces = coll == Collective::Allreduce || coll == Collective::Reduce;
                for (const auto& k : kinds)
                    for (size_t count : {size_t(0), size_t(1), size_t(p + 1), size_t(1000), size_t(20011)})
                        for (bool in_place : {false, true})
                            for (int root : {0, p / 2, p - 1}) {
                                if (slot > 1024 && count < 20011 && count) continue;
                                if (!reduces && k.op != CHORUS_SUM) continue;
                                if (root && coll != Collective::Reduce && coll != Collective::Broadcast) continue;
                                if (coll == Collective::Allgather && count > 1000) continue;
                                test::CollCase c;
                                c.coll = coll;
                                c.dt = k.dt;
                                c.op = k.op;
                                c.count = count;
                                c.root = root;
                                c.in_place = in_place;
                                c.seed = 3 + p * 7 + count;
                                test::check_collective(group, c);
                            }
            }
}

TEST_CASE("pipelined collectives: the rounds of a rank's schedule, in step order", "[pipeline]") {
    // Each round is claimed, published and released once on every rank; a
    // rank releases a round only after its own publish of it; and in step
    // order the claim of round n comes after the releases of rounds up to
    // n - 8 (the slot it reuses), so a rank that runs its steps in order
    // never waits for a release of its own that comes later.
    const uint64_t slots = chorus::net::Transport::kSlots;
    const std::pair<Collective, std::unique_ptr<Schedule> (*)(const CollArgs&)> builders[] = {
        {Collective::Allreduce, chorus::coll::build_pipeline_allreduce},
        {Collective::Reduce, chorus::coll::build_pipeline_reduce},
        {Collective::Broadcast, chorus::coll::build_pipeline_bcast},
        {Collective::Allgather, chorus::coll::build_pipeline_allgather}};
    for (const auto& [coll, build] : builders)
        for (int p : {2, 3, 5, 9})
            for (size_t count : {size_t(1), size_t(17), size_t(700), size_t(5000)}) {
                CollArgs a;
                a.coll = coll;
                a.root = p / 2;
                a.dtype = CHORUS_FLOAT32;
                a.op = CHORUS_SUM;
                a.count = count;
                a.size = p;
                a.slot_bytes = 1024;
                for (a.rank = 0; a.rank < p; ++a.rank) {
                    auto s = build(a);
                    INFO(chorus::coll::collective_name(coll) << " p " << p << " count " << count << " rank " << a.rank);
                    const uint32_t rounds = s->slot_rounds();
                    REQUIRE(rounds >= 1);
                    REQUIRE(s->releases_rounds());
                    std::vector<long> claim(rounds, -1), publish(rounds, -1), release(rounds, -1);
                    const auto& steps = s->steps();
                    for (size_t i = 0; i < steps.size(); ++i) {
                        const Step& st = steps[i];
                        std::vector<long>* at = st.kind == StepKind::Claim     ? &claim
                                                : st.kind == StepKind::Publish ? &publish
                                                : st.kind == StepKind::Release ? &release
                                                                               : nullptr;
                        if (!at) continue;
                        REQUIRE((*at)[st.round] == -1);
                        (*at)[st.round] = static_cast<long>(i);
                    }
                    for (uint32_t r = 0; r < rounds; ++r) {
                        INFO("round " << r);
                        REQUIRE(claim[r] >= 0);
                        REQUIRE(publish[r] > claim[r]);
                        REQUIRE(release[r] > publish[r]);
                        // (The slot's count is of rounds released in a row.)
                        for (uint32_t m = 0; m + slots <= r; ++m) CHECK(claim[r] > release[m]);
                        // The claims come in round order.
                        if (r) CHECK(claim[r] > claim[r - 1]);
                    }
                }
            }
}

TEST_CASE("pipelined all-reduce: several operations in flight, each of more rounds than slots", "[pipeline]") {
    const int p = 3, ops = 4;
    auto group = pipeline_group(p, 1024);
    std::vector<std::vector<std::vector<float>>> buf(ops, std::vector<std::vector<float>>(p));
    std::vector<std::vector<chorus::Operation*>> op(ops, std::vector<chorus::Operation*>(p));
    CollArgs args;
    args.coll = Collective::Allreduce;
    args.count = 3001;  // 24 rounds a call at p=3 with 1 KiB slots
    // Rank 0 starts every operation before the others start any: its later
    // operations wait for slots the others have not read yet.
    for (int r = 0; r < p; ++r)
        for (int k = 0; k < ops; ++k) {
            buf[k][r].resize(args.count);
            for (size_t i = 0; i < args.count; ++i) buf[k][r][i] = float(r + 1) * float(k + 1) + float(i % 5);
            op[k][r] = group.comms[r]->start(args, buf[k][r].data(), buf[k][r].data());
        }
    test::progress_all(group, op, 200000);
    for (int k = 0; k < ops; ++k)
        for (int r = 0; r < p; ++r) {
            INFO("operation " << k << " rank " << r << ": " << group.comms[r]->last_error());
            REQUIRE(group.comms[r]->release(op[k][r]) == CHORUS_SUCCESS);
            for (size_t i = 0; i < args.count; ++i)
                REQUIRE(buf[k][r][i] == float(k + 1) * float(p * (p + 1) / 2) + float(p) * float(i % 5));
        }
}

TEST_CASE("pipelined collectives on the emulated device, host and device ranks mixed", "[pipeline]") {
    auto mem = std::make_shared<test::EmulatedMemory>();
    for (Collective coll : kPipelined)
        for (int p : {2, 3, 6}) {
            test::LoopbackGroup group(p, test::forced(coll, "shm_pipeline"), false,
                                      [&] { return std::make_unique<test::EmulatedDevice>(mem, 1); });
            group.hub->enable_slots(1024);
            auto m = mem;
            group.hub->emulate_device([m](const void* q) { return m->is_device(q); }, false);
            test::Placement place;
            place.mem = mem.get();
            place.kind = [](int r, bool out) { return (r + out) % 2 ? test::MemKind::Device : test::MemKind::Host; };
            for (size_t count : {size_t(1), size_t(40), size_t(3000)})
                for (bool in_place : {false, true}) {
                    test::CollCase c;
                    c.coll = coll;
                    c.count = count;
                    c.root = p - 1;
                    c.in_place = in_place;
                    c.seed = 9 + count;
                    test::check_collective(group, c, place);
                }
        }
}
