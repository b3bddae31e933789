// The one-sided algorithms (expose, get, put) on the loopback transport with
// emulated single-copy access to peers' buffers, in place (cross-memory
// attach), through registered regions and their keys (UCX RMA) and through
// mappings of peers' buffers (mapped memory): each
// forced by name at many rank counts, counts, roots, datatypes and ops, in
// and out of place, with sends that complete only when received; on
// emulated device memory (where the data must travel as messages instead,
// on some ranks or all); and with a dead peer. Outputs are checked bitwise against per-rank references.
#include <catch2/catch.hpp>
#include <vector>

#include "collective_check.h"

using chorus::coll::Collective;
using test::MemKind;

namespace {

const Collective kAll[] = {Collective::Allreduce, Collective::Broadcast, Collective::Reduce, Collective::ReduceScatter,
                           Collective::Allgather, Collective::Gather,    Collective::Scatter};

test::CollCase make_case(Collective coll, size_t count, int p, uint64_t seed) {
    test::CollCase c;
    c.coll = coll;
    c.count = count;
    c.root = p / 2;
    c.seed = seed;
    return c;
}

// How peers' memory is reached: in place (cross-memory attach, one host),
// through registered regions and their keys (UCX RMA, between hosts), or
// through mappings of the peers' buffers (mapped memory, chorus_mem_alloc).
enum class Access { InPlace, Keys, Mapped };
const Access kAccess[] = {Access::InPlace, Access::Keys, Access::Mapped};
const char* access_name(Access a) {
    return a == Access::Keys ? "keys" : a == Access::Mapped ? "mapped" : "in place";
}

// A group whose transport offers single-copy access; small chunks, so that
// a message is cut into many pieces.
struct OneSidedGroup {
    std::shared_ptr<test::EmulatedMemory> mem = std::make_shared<test::EmulatedMemory>();
    test::LoopbackGroup group;
    OneSidedGroup(int p, Collective coll, bool rendezvous, bool device = false, size_t chunk = 1024,
                  Access access = Access::InPlace)
        : group(p, test::forced(coll, "one_sided", chunk, 4), rendezvous,
                device ? std::function<std::unique_ptr<chorus::Device>()>(
                             [this] { return std::make_unique<test::EmulatedDevice>(mem, 1); })
                       : nullptr) {
        if (access == Access::Keys)
            group.hub->enable_rma();
        else
            group.hub->enable_one_sided();
        if (access == Access::Mapped) group.hub->enable_mapped();
        auto m = mem;
        if (device) group.hub->emulate_device([m](const void* q) { return m->is_device(q); }, false);
    }
};

}  // namespace

TEST_CASE("one-sided: every collective, rank count, count and place", "[one_sided]") {
    for (Access access : kAccess)
        for (Collective coll : kAll)
            for (int p : {1, 2, 3, 4, 5, 7, 8, 13}) {
                for (bool rendezvous : {false, true}) {
                    INFO(access_name(access));
                    OneSidedGroup g(p, coll, rendezvous, false, 1024, access);
                    for (size_t count : {size_t(0), size_t(1), size_t(p - 1), size_t(p + 1), size_t(20011)})
                        for (bool in_place : {false, true}) {
                            test::CollCase c = make_case(coll, count, p, 7 + p + count);
                            c.in_place = in_place;
                            for (int root : {0, p - 1}) {
                                c.root = root;
                                test::check_collective(g.group, c);
                            }
                        }
                    // The data went through single-copy access, not
                    // messages (mapped: through the mappings alone, no
                    // get or put); every registration was given back.
                    if (p > 1 && access != Access::Mapped) CHECK(g.group.hub->one_sided_bytes() > 0);
                    if (p > 1 && access == Access::Mapped) {
                        CHECK(g.group.hub->mapped_bytes() > 0);
                        CHECK(g.group.hub->one_sided_bytes() == 0);
                    }
                    if (p > 1 && access == Access::Keys) CHECK(g.group.hub->rma_registered() > 0);
                    CHECK(g.group.hub->rma_held() == 0);
                }
            }
}

TEST_CASE("one-sided: pieces larger than a reduction's read block", "[one_sided]") {
    // 256 KiB pieces: a get that reduces reads each in several blocks.
    for (Access access : kAccess)
        for (Collective coll : kAll)
            for (int p : {2, 3}) {
                OneSidedGroup g(p, coll, false, false, 64 * 1024, access);
                for (bool in_place : {false, true}) {
                    test::CollCase c = make_case(coll, 300007, p, 70 + p);
                    c.in_place = in_place;
                    test::check_collective(g.group, c);
                    c.dt = CHORUS_FLOAT64;
                    c.op = CHORUS_MAX;
                    test::check_collective(g.group, c);
                }
            }
}

TEST_CASE("one-sided: every datatype and op", "[one_sided]") {
    const chorus_op_t ops[] = {CHORUS_SUM, CHORUS_PROD, CHORUS_MIN, CHORUS_MAX, CHORUS_AVG};
    for (int p : {2, 3, 4}) {
        for (Collective coll : kAll) {
            OneSidedGroup g(p, coll, false);
            for (auto dt : ref::kAllTypes) {
                test::CollCase c = make_case(coll, 3001, p, 40 + p);
                c.dt = dt;
                if (coll == Collective::Broadcast || coll == Collective::Allgather || coll == Collective::Gather ||
                    coll == Collective::Scatter) {
                    test::check_collective(g.group, c);
                    continue;
                }
                for (auto op : ops) {
                    c.op = op;
                    if (!chorus::op_supported(dt, op)) continue;
                    test::check_collective(g.group, c);
                }
            }
        }
    }
}

TEST_CASE("one-sided: reduce_scatterv blocks of different sizes, some empty", "[one_sided]") {
    for (int p : {2, 3, 5}) {
        OneSidedGroup g(p, Collective::ReduceScatter, true);
        test::CollCase c = make_case(Collective::ReduceScatter, 0, p, 91);
        c.counts.clear();
        for (int r = 0; r < p; ++r) c.counts.push_back(r == 1 ? 0 : 1000 * size_t(r + 1) + 7);
        for (bool in_place : {false, true}) {
            c.in_place = in_place;
            test::check_collective(g.group, c);
        }
    }
}

TEST_CASE("one-sided: device memory travels as messages, mixed with host ranks", "[one_sided]") {
    for (Access access : kAccess)
        for (Collective coll : kAll)
            for (int p : {2, 3, 5}) {
                OneSidedGroup g(p, coll, false, true, 1024, access);
                test::Placement all_dev;
                all_dev.mem = g.mem.get();
                all_dev.kind = [](int, bool) { return MemKind::Device; };
                for (bool in_place : {false, true}) {
                    test::CollCase c = make_case(coll, 5003, p, 300 + p);
                    c.in_place = in_place;
                    test::check_collective(g.group, c, all_dev);
                }
                CHECK(g.group.hub->one_sided_bytes() == 0);
                // Even ranks on the device, odd ranks on the host; and one rank's
                // input on the device, its output on the host.
                test::Placement mixed = all_dev;
                mixed.kind = [](int r, bool) { return r % 2 ? MemKind::Host : MemKind::Device; };
                test::check_collective(g.group, make_case(coll, 7777, p, 500 + p), mixed);
                mixed.kind = [](int r, bool out) { return (r + out) % 2 ? MemKind::Device : MemKind::Host; };
                test::check_collective(g.group, make_case(coll, 7777, p, 600 + p), mixed);
                CHECK(g.group.hub->rma_held() == 0);
            }
}

TEST_CASE("one-sided: a dead peer fails the operation on the ranks that need it", "[one_sided]") {
    for (Access access : kAccess)
        for (Collective coll : kAll) {
            INFO(access_name(access));
            const int p = 4, dead = 2;
            OneSidedGroup g(p, coll, false, false, 1024, access);
            // Inputs and outputs large enough for every collective: a scatter's
            // root sends p blocks, a gather's receives them.
            std::vector<std::vector<float>> in(p, std::vector<float>(160000, 1.0f)), out(p, std::vector<float>(160000));
            chorus::coll::CollArgs args;
            args.coll = coll;
            args.count = coll == Collective::ReduceScatter ? 10000 : 40000;
            std::vector<chorus::Operation*> ops(p, nullptr);
            for (int r = 0; r < p; ++r)
                if (r != dead) ops[r] = g.group.comms[r]->start(args, in[r].data(), out[r].data());
            // Rank 2 never starts: it dies.
            g.group.hub->kill(dead);
            auto all_finished = [&] {
                for (auto* op : ops)
                    if (op && !op->finished) return false;
                return true;
            };
            // Keyed accesses complete on their second test, so the ranks
            // may need many rounds to reach the dead peer's steps.
            for (int rounds = 0; rounds < 100000 && !all_finished(); ++rounds)
                for (int r = 0; r < p; ++r)
                    if (ops[r]) g.group.comms[r]->progress(ops[r]);
            INFO(chorus::coll::collective_name(coll));
            REQUIRE(all_finished());
            int failed = 0;
            for (int r = 0; r < p; ++r) {
                if (!ops[r]) continue;
                chorus_result_t rc = g.group.comms[r]->release(ops[r]);
                INFO("rank " << r << ": " << g.group.comms[r]->last_error());
                // A rank that reads from or is read by rank 2 fails, naming it;
                // a broadcast's other leaves need nothing from it, and of a
                // gather's (or scatter's) ranks only the root does.
                CHECK((rc == CHORUS_ERR_PEER_FAILED || rc == CHORUS_SUCCESS));
                if (rc == CHORUS_ERR_PEER_FAILED) {
                    ++failed;
                    CHECK(g.group.comms[r]->last_error().find("rank 2") != std::string::npos);
                }
            }
            CHECK(failed >= (coll == Collective::Broadcast || coll == Collective::Gather || coll == Collective::Scatter
                                 ? 1
                                 : p - 1));
            // A failed operation gives its registrations back too.
            CHECK(g.group.hub->rma_held() == 0);
        }
}
