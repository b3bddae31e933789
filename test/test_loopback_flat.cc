// The flat collectives through the publish slots (coll/shm/shm_flat.cc) on
// loopback ranks whose hub emulates shared slots: every collective, many rank
// counts, roots, datatypes and ops, in and out of place; the data-movement
// ones (all-gatherv, all-to-all, gather, scatter, barrier) up to the largest
// message a slot takes, with irregular and skewed all-gatherv blocks; the
// irregular gatherv, scatterv and all-to-allv with blocks on both sides of
// what the slots take (each goes its own way in one call); more
// operations in flight than there are slots (a slot is reused only once
// every rank is done with it); and device buffers on the emulated device.
#include <catch2/catch.hpp>

#include "collective_check.h"
#include "net/shm/shm_segment.h"

using chorus::coll::Collective;

namespace {

const Collective kAll[] = {Collective::Allreduce, Collective::Broadcast, Collective::Reduce, Collective::ReduceScatter,
                           Collective::Allgather};

const Collective kMovement[] = {Collective::Allgatherv, Collective::Alltoall, Collective::Gather, Collective::Scatter,
                                Collective::Barrier};

constexpr size_t kSlotBytes = chorus::net::shm::kPubBytes;  // the real slots'

test::LoopbackGroup flat_group(int p, Collective coll) {
    test::LoopbackGroup group(p, test::forced(coll, "shm_flat"));
    group.hub->enable_slots(kSlotBytes);
    return group;
}

// The largest count of `esize`-byte elements per block whose whole size
// class fits a slot, `blocks` of them: the class [2^k, 2^(k+1)) fits when
// blocks * (2^(k+1) - 1) bytes do.
size_t largest_flat_count(size_t blocks, size_t esize) {
    blocks = std::max(blocks, size_t(1));  // one rank publishes nothing: any block would do
    size_t top = 1;
    while (blocks * (2 * top - 1) <= kSlotBytes) top *= 2;
    return (top - 1) / esize;
}

// The blocks of the largest message a rank publishes: all-to-all's ranks
// and scatter's root publish the span from the first block another rank
// reads to the last (a rank at either end leaves its own out).
size_t published_blocks(Collective coll, int p) {
    if (coll != Collective::Alltoall && coll != Collective::Scatter) return 1;
    return p <= 2 ? static_cast<size_t>(p - 1) : static_cast<size_t>(p);
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

TEST_CASE("flat data movement through the publish slots, up to the largest message a slot takes", "[flat]") {
    for (Collective coll : kMovement)
        for (int p : {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64}) {
            INFO(chorus::coll::collective_name(coll) << " p=" << p);
            auto group = flat_group(p, coll);
            const bool rooted = coll == Collective::Gather || coll == Collective::Scatter;
            const std::vector<test::Shape> shapes =
                coll == Collective::Allgatherv
                    ? std::vector<test::Shape>{test::Shape::Even, test::Shape::Irregular, test::Shape::Skewed}
                    : std::vector<test::Shape>{test::Shape::Even};
            for (chorus_datatype_t dt : {CHORUS_FLOAT32, CHORUS_INT8, CHORUS_FLOAT64, CHORUS_FLOAT16})
                for (test::Shape shape : shapes) {
                    // A skewed all-gatherv's big block holds count * p elements.
                    const size_t per = shape == test::Shape::Skewed ? static_cast<size_t>(p) : 1;
                    const size_t most = largest_flat_count(published_blocks(coll, p), ref::esize(dt)) / per;
                    // The largest message really goes through the slots.
                    chorus::coll::CollArgs args;
                    args.coll = coll;
                    args.size = p;
                    args.dtype = dt;
                    args.count = most * per;
                    args.slot_bytes = kSlotBytes;
                    REQUIRE((coll == Collective::Barrier || most > 0));
                    REQUIRE(chorus::coll::fits_slot(args));
                    for (size_t count : {size_t(0), size_t(1), std::min(most, size_t(p + 1)), most})
                        for (bool in_place : {false, true})
                            for (int root : test::roots_of(p)) {
                                if (root && !rooted) continue;
                                test::CollCase c;
                                c.coll = coll;
                                c.dt = dt;
                                c.shape = shape;
                                c.count = count;
                                c.root = root;
                                c.in_place = in_place;
                                c.seed = 17 + p * 5 + count;
                                test::check_collective(group, c);
                            }
                }
        }
}

TEST_CASE("a flat all-to-all or scatter a slot cannot hold goes to the message-passing algorithms", "[flat]") {
    for (Collective coll : {Collective::Alltoall, Collective::Scatter})
        for (int p : {2, 3, 8}) {
            INFO(chorus::coll::collective_name(coll) << " p=" << p);
            chorus::coll::CollArgs args;
            args.coll = coll;
            args.size = p;
            args.dtype = CHORUS_UINT8;
            args.slot_bytes = kSlotBytes;
            args.count = largest_flat_count(published_blocks(coll, p), 1);
            REQUIRE(chorus::coll::fits_slot(args));
            args.count += 1;  // the next size class
            REQUIRE_FALSE(chorus::coll::fits_slot(args));
            // Forced, it gives way to the selector, and the result is right.
            auto group = flat_group(p, coll);
            test::CollCase c;
            c.coll = coll;
            c.dt = CHORUS_UINT8;
            c.count = args.count;
            c.root = p - 1;
            test::check_collective(group, c);
        }
}

TEST_CASE("the flat barrier holds every rank until the last one has entered", "[flat]") {
    for (int p : {2, 3, 8, 31}) {
        auto group = flat_group(p, Collective::Barrier);
        for (int late : {0, p - 1}) {
            INFO("p " << p << " late " << late);
            chorus::coll::CollArgs args;
            args.coll = Collective::Barrier;
            std::vector<chorus::Operation*> ops(p, nullptr);
            for (int r = 0; r < p; ++r)
                if (r != late) ops[r] = group.comms[r]->start(args, nullptr, nullptr);
            bool left_early = false;
            for (int round = 0; round < 50; ++round)
                for (int r = 0; r < p; ++r) left_early = left_early || (ops[r] && group.comms[r]->progress(ops[r]));
            ops[late] = group.comms[late]->start(args, nullptr, nullptr);
            for (int round = 0; round < 1000; ++round) {
                bool all = true;
                for (int r = 0; r < p; ++r) all = group.comms[r]->progress(ops[r]) && all;
                if (all) break;
            }
            for (int r = 0; r < p; ++r) REQUIRE(group.comms[r]->release(ops[r]) == CHORUS_SUCCESS);
            REQUIRE_FALSE(left_early);
        }
    }
}

TEST_CASE("a rank waiting for many peers reads one peer's flag per turn that finds nothing new", "[flat]") {
    // Rank 0 of 16 waits for every other rank's contribution: a progress
    // turn that finds none reads one flag (in rotation), not fifteen; once
    // the others come, the operation completes with the right sum.
    const int p = 16;
    auto group = flat_group(p, Collective::Allreduce);
    chorus::coll::CollArgs args;
    args.coll = Collective::Allreduce;
    args.count = 8;
    std::vector<std::vector<float>> buf(p);
    for (int r = 0; r < p; ++r) buf[r].assign(args.count, float(r) + 0.25f);
    std::vector<std::vector<chorus::Operation*>> op(1, std::vector<chorus::Operation*>(p, nullptr));
    auto& ops = op[0];
    ops[0] = group.comms[0]->start(args, buf[0].data(), buf[0].data());
    REQUIRE_FALSE(group.comms[0]->progress(ops[0]));
    const size_t before = group.hub->flag_reads();
    const int turns = 200;
    for (int t = 0; t < turns; ++t) REQUIRE_FALSE(group.comms[0]->progress(ops[0]));
    const size_t reads = group.hub->flag_reads() - before;
    INFO(reads << " flag reads in " << turns << " turns");
    CHECK(reads <= size_t(2) * turns);
    // Every peer's flag was read all the same (rotation): a late peer
    // anywhere in the list is found.
    for (int r = 1; r < p; ++r) ops[r] = group.comms[r]->start(args, buf[r].data(), buf[r].data());
    test::progress_all(group, op, 5000);
    float sum = 0;
    for (int r = 0; r < p; ++r) sum += float(r) + 0.25f;
    for (int r = 0; r < p; ++r) {
        INFO("rank " << r << ": " << group.comms[r]->last_error());
        REQUIRE(group.comms[r]->release(ops[r]) == CHORUS_SUCCESS);
        CHECK(buf[r][7] == sum);
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
    test::progress_all(group, op, 5000);
    for (int k = 0; k < ops; ++k)
        for (int r = 0; r < p; ++r) {
            INFO("operation " << k << " rank " << r << ": " << group.comms[r]->last_error());
            REQUIRE(group.comms[r]->release(op[k][r]) == CHORUS_SUCCESS);
            CHECK(buf[k][r][99] == float(k + 1) * float(p * (p + 1) / 2));
        }
}

TEST_CASE("flat collectives on the emulated device, host and device ranks mixed", "[flat][device]") {
    auto mem = std::make_shared<test::EmulatedMemory>();
    std::vector<Collective> all(std::begin(kAll), std::end(kAll));
    all.insert(all.end(), std::begin(kMovement), std::end(kMovement));
    all.insert(all.end(), {Collective::Gatherv, Collective::Scatterv, Collective::Alltoallv});
    for (Collective coll : all)
        for (int p : {2, 3, 6}) {
            test::LoopbackGroup group(p, test::forced(coll, "shm_flat"), false,
                                      [&] { return std::make_unique<test::EmulatedDevice>(mem, 1); });
            group.hub->enable_slots(kSlotBytes);
            auto m = mem;
            group.hub->emulate_device([m](const void* q) { return m->is_device(q); }, false);
            test::Placement place;
            place.mem = mem.get();
            place.kind = [](int r, bool out) { return (r + out) % 2 ? test::MemKind::Device : test::MemKind::Host; };
            // 3000: the irregular forms' blocks go as messages.
            for (size_t count : {size_t(1), size_t(40), size_t(3000)})
                for (bool in_place : {false, true}) {
                    if (count == 3000 && coll != Collective::Gatherv && coll != Collective::Scatterv &&
                        coll != Collective::Alltoallv)
                        continue;
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

TEST_CASE("flat irregular forms: each block by the slots or by a message, as its size says", "[flat]") {
    // Blocks from none to more than a whole slot (kSlotBytes), so that in
    // one call some go through the slots and some as messages; all-to-allv
    // in place too (its blocks then pair up in size).
    for (Collective coll : {Collective::Gatherv, Collective::Scatterv, Collective::Alltoallv})
        for (int p : {1, 2, 3, 4, 5, 8, 13}) {
            INFO(chorus::coll::collective_name(coll) << " p=" << p);
            auto group = flat_group(p, coll);
            for (chorus_datatype_t dt : {CHORUS_FLOAT32, CHORUS_INT8})
                for (test::Shape shape : {test::Shape::Even, test::Shape::Irregular, test::Shape::Skewed})
                    for (size_t count : {size_t(0), size_t(1), size_t(p + 3), size_t(1500), size_t(5000)})
                        for (bool in_place : {false, true})
                            for (int root : test::roots_of(p)) {
                                if (root && coll == Collective::Alltoallv) continue;
                                if (in_place && coll == Collective::Alltoallv && shape != test::Shape::Even) continue;
                                test::CollCase c;
                                c.coll = coll;
                                c.dt = dt;
                                c.shape = shape;
                                c.count = count;
                                c.root = root;
                                c.in_place = in_place;
                                c.seed = 91 + p * 7 + count;
                                test::check_collective(group, c);
                            }
        }
}
