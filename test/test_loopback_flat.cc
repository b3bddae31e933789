// The flat collectives through the publish slots (coll/shm_flat.cc) on
// loopback ranks whose hub emulates shared slots: every collective, many rank
// counts, roots, datatypes and ops, in and out of place; more operations in
// flight than there are slots (a slot is reused only once every rank is
// done with it); and device buffers on the emulated device.
#include <catch2/catch.hpp>

#include "collective_check.h"

using chorus::coll::Collective;

namespace {

const Collective kAll[] = {Collective::Allreduce, Collective::Broadcast, Collective::Reduce, Collective::ReduceScatter,
                           Collective::Allgather};

test::LoopbackGroup flat_group(int p, Collective coll) {
    test::LoopbackGroup group(p, test::forced(coll, "shm_flat"));
    group.hub->enable_slots(16368);
    return group;
}

}  // namespace

TEST_CASE("flat collectives through the publish slots, at many rank counts", "[flat]") {
    for (Collective coll : kAll)
        for (int p : {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64}) {
            auto group = flat_group(p, coll);
            const struct {
                chorus_datatype_t dt;
                chorus_op_t op;
            } kinds[] = {{CHORUS_FLOAT32, CHORUS_SUM},
                         {CHORUS_INT32, CHORUS_MAX},
                         {CHORUS_FLOAT64, CHORUS_AVG},
                         {CHORUS_INT8, CHORUS_BXOR},
                         {CHORUS_FLOAT16, CHORUS_PROD}};
            // Reduce-scatter publishes all blocks, all-gather gets p of them.
            const size_t most = coll == Collective::ReduceScatter || coll == Collective::Allgather ? 48 / p : 900;
            for (const auto& k : kinds)
                for (size_t count : {size_t(0), size_t(1), size_t(p + 1) % (most + 1), most})
                    for (bool in_place : {false, true})
                        for (int root : {0, p / 2, p - 1}) {
                            if (root && coll != Collective::Broadcast && coll != Collective::Reduce) continue;
                            test::CollCase c;
                            c.coll = coll;
                            c.dt = k.dt;
                            c.op = coll == Collective::Broadcast || coll == Collective::Allgather ? CHORUS_SUM : k.op;
                            c.count = count;
                            c.root = root;
                            c.in_place = in_place;
                            c.seed = 11 + p * 3 + count;
                            test::check_collective(group, c);
                        }
        }
}

TEST_CASE("flat collectives: irregular reduce-scatter blocks, zeros included", "[flat]") {
    for (int p : {2, 5, 8}) {
        auto group = flat_group(p, Collective::ReduceScatter);
        test::CollCase c;
        c.coll = Collective::ReduceScatter;
        for (int r = 0; r < p; ++r) c.counts.push_back(static_cast<size_t>(r % 3 == 1 ? 0 : r + 2));
        for (bool in_place : {false, true}) {
            c.in_place = in_place;
            test::check_collective(group, c);
        }
    }
}

TEST_CASE("flat collectives: more operations in flight than slots", "[flat]") {
    const int p = 5, ops = 3 * static_cast<int>(chorus::net::Transport::kSlots) + 1;
    auto group = flat_group(p, Collective::Allreduce);
    std::vector<std::vector<std::vector<float>>> buf(ops, std::vector<std::vector<float>>(p));
    std::vector<std::vector<chorus::Operation*>> op(ops, std::vector<chorus::Operation*>(p));
    chorus::coll::CollArgs args;
    args.coll = Collective::Allreduce;
    args.count = 100;
    // Rank 0 starts every operation before the others start any
    // (nonblocking): its later operations must wait for slots the others
    // have not read yet.
    for (int r = 0; r < p; ++r)
        for (int k = 0; k < ops; ++k) {
            buf[k][r].assign(args.count, float(r + 1) * float(k + 1));
            op[k][r] = group.comms[r]->start(args, buf[k][r].data(), buf[k][r].data());
        }
    for (int round = 0; round < 5000; ++round) {
        bool all = true;
        for (int k = ops - 1; k >= 0; --k)  // the later ones first: they must wait
            for (int r = 0; r < p; ++r) all = group.comms[r]->progress(op[k][r]) && all;
        if (all) break;
    }
    bool all = true;
    for (int k = 0; k < ops; ++k)
        for (int r = 0; r < p; ++r) all = all && op[k][r]->finished;
    if (!all) {
        std::string report;
        for (int r = 0; r < p; ++r)
            for (int k = 0; k < ops; ++k)
                if (!op[k][r]->finished)
                    report += chorus::cat(" [op ", k, " rank ", r, ": ", op[k][r]->executor->pending_summary(), "]");
        for (auto& c : group.comms) c->abort("the test gave up");  // no wait at destruction
        FAIL("deadlock:" << report);
    }
    for (int k = 0; k < ops; ++k)
        for (int r = 0; r < p; ++r) {
            INFO("operation " << k << " rank " << r << ": " << group.comms[r]->last_error());
            REQUIRE(group.comms[r]->release(op[k][r]) == CHORUS_SUCCESS);
            CHECK(buf[k][r][99] == float(k + 1) * float(p * (p + 1) / 2));
        }
}

TEST_CASE("flat collectives on the emulated device, host and device ranks mixed", "[flat][device]") {
    auto mem = std::make_shared<test::EmulatedMemory>();
    for (Collective coll : kAll)
        for (int p : {2, 3, 6}) {
            test::LoopbackGroup group(p, test::forced(coll, "shm_flat"), false,
                                      [&] { return std::make_unique<test::EmulatedDevice>(mem, 1); });
            group.hub->enable_slots(16368);
            auto m = mem;
            group.hub->emulate_device([m](const void* q) { return m->is_device(q); }, false);
            test::Placement place;
            place.mem = mem.get();
            place.kind = [](int r, bool out) { return (r + out) % 2 ? test::MemKind::Device : test::MemKind::Host; };
            for (size_t count : {size_t(1), size_t(40)})
                for (bool in_place : {false, true}) {
                    test::CollCase c;
                    c.coll = coll;
                    c.count = count;
                    c.root = p - 1;
                    c.in_place = in_place;
                    c.seed = 5 + count;
                    test::check_collective(group, c, place);
                }
        }
}
