// The executor's device paths, on machines without a GPU: every collective
// and algorithm with buffers in emulated device memory (test/emulated_device.h),
// whose queued work runs late. Staged (the transport refuses device memory,
// so every transfer must go through a pinned staging buffer) and direct;
// device and host buffers mixed across ranks and within a rank; managed
// memory; input written through the caller's stream just before the call.
// Results are checked bitwise against references from per-rank seeds.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "collective_check.h"
#include "core/config.h"

using chorus::coll::Collective;
using test::MemKind;

namespace {

using test::DeviceGroup;

MemKind all_device(int, bool) {
    return MemKind::Device;
}

const Collective kAll[] = {Collective::Allreduce,     Collective::Broadcast, Collective::Reduce,
                           Collective::ReduceScatter, Collective::Allgather, Collective::Allgatherv,
                           Collective::Alltoall,      Collective::Alltoallv, Collective::Gather,
                           Collective::Gatherv,       Collective::Scatter,   Collective::Scatterv,
                           Collective::Barrier};

test::CollCase make_case(Collective coll, size_t count, int p, chorus_datatype_t dt = CHORUS_FLOAT32,
                         chorus_op_t op = CHORUS_SUM) {
    test::CollCase c;
    c.coll = coll;
    c.count = count;
    c.dt = dt;
    c.op = op;
    c.root = p / 2;
    c.seed = 101 + p + static_cast<int>(coll);
    // The v forms: irregular blocks (zeros too) at displacements with gaps,
    // which a host buffer's device mirror must cover.
    c.shape = test::Shape::Irregular;
    return c;
}

}  // namespace

TEST_CASE("device buffers: every algorithm, staged through pinned buffers", "[device]") {
    for (Collective coll : kAll) {
        for (const auto& algo : chorus::known_algorithms().at(chorus::coll::collective_name(coll))) {
            if (test::needs_hosts(algo)) continue;
            for (int p : {1, 2, 3, 5, 8}) {
                for (bool rendezvous : {false, true}) {
                    DeviceGroup g(p, test::forced(coll, algo, 4096, 3), false, rendezvous);
                    for (size_t count : {size_t(0), size_t(1), size_t(p + 1), size_t(5003)}) {
                        for (bool in_place : {false, true}) {
                            test::CollCase c = make_case(coll, count, p);
                            c.in_place = in_place;
                            INFO(algo << " rendezvous=" << rendezvous);
                            g.check(c, all_device);
                        }
                    }
                }
            }
        }
    }
}

TEST_CASE("device buffers: every datatype and op on the device reducer", "[device]") {
    const chorus_datatype_t types[] = {CHORUS_INT8,    CHORUS_UINT8,    CHORUS_INT16,   CHORUS_UINT16,
                                       CHORUS_INT32,   CHORUS_UINT32,   CHORUS_INT64,   CHORUS_UINT64,
                                       CHORUS_FLOAT16, CHORUS_BFLOAT16, CHORUS_FLOAT32, CHORUS_FLOAT64};
    const chorus_op_t ops[] = {CHORUS_SUM, CHORUS_PROD, CHORUS_MIN, CHORUS_MAX, CHORUS_AVG};
    for (int p : {2, 3}) {
        DeviceGroup g(p, test::forced(Collective::Allreduce, "", 4096, 4), false);
        for (auto dt : types)
            for (auto op : ops)
                for (Collective coll : {Collective::Allreduce, Collective::ReduceScatter, Collective::Reduce})
                    g.check(make_case(coll, 3001, p, dt, op), all_device);
    }
}

TEST_CASE("device buffers: direct to a transport that takes device memory", "[device]") {
    for (Collective coll : kAll)
        for (int p : {2, 4, 7}) {
            DeviceGroup g(p, test::forced(coll, "", 4096, 4), true, true);
            for (bool in_place : {false, true}) {
                test::CollCase c = make_case(coll, 20011, p);
                c.in_place = in_place;
                g.check(c, all_device);
            }
        }
}

TEST_CASE("device buffers: host and device ranks in one collective", "[device]") {
    for (Collective coll : kAll)
        for (int p : {2, 3, 6})
            for (bool direct : {false, true}) {
                DeviceGroup g(p, test::forced(coll, "", 4096, 4), direct);
                // Even ranks on the device, odd ranks in host memory; then
                // managed memory against pinned host memory.
                g.check(make_case(coll, 7777, p), [](int r, bool) { return r % 2 ? MemKind::Host : MemKind::Device; });
                g.check(make_case(coll, 7777, p, CHORUS_INT32, CHORUS_MAX),
                        [](int r, bool) { return r % 2 ? MemKind::PinnedHost : MemKind::Managed; });
            }
}

TEST_CASE("device buffers: host input with device output on one rank, and the reverse", "[device]") {
    for (Collective coll : kAll)
        for (int p : {1, 2, 5})
            for (bool direct : {false, true}) {
                DeviceGroup g(p, test::forced(coll, "", 4096, 4), direct);
                g.check(make_case(coll, 3333, p), [](int, bool out) { return out ? MemKind::Device : MemKind::Host; });
                g.check(make_case(coll, 3333, p, CHORUS_FLOAT64, CHORUS_AVG),
                        [](int, bool out) { return out ? MemKind::Host : MemKind::Device; });
                // Ranks disagree too.
                g.check(make_case(coll, 3333, p, CHORUS_INT16, CHORUS_MIN),
                        [](int r, bool out) { return (r + out) % 2 ? MemKind::Device : MemKind::Host; });
            }
}

TEST_CASE("device buffers: a reduce never touches a non-root's receive buffer", "[device]") {
    // A non-root's send buffer on the device puts its operation on the
    // device; its receive buffer (host memory of one byte, or NULL) must
    // still be neither read nor written (the emulated device fails a copy
    // that runs past the end of a buffer).
    for (int p : {2, 3})
        for (bool direct : {false, true}) {
            DeviceGroup g(p, test::forced(Collective::Reduce, "", 4096, 4), direct);
            chorus::coll::CollArgs args;
            args.coll = Collective::Reduce;
            args.count = 1001;
            args.dtype = CHORUS_FLOAT32;
            args.root = p - 1;
            std::vector<float> in(args.count, 1.0f), out(args.count, 0.0f);
            std::vector<const void*> send(p);
            std::vector<void*> recv(p, nullptr);
            for (int r = 0; r < p; ++r) {
                send[r] = g.mem->clone(in.data(), in.size() * 4, MemKind::Device);
                if (r == 0) recv[r] = g.mem->alloc(1, MemKind::Host);
            }
            recv[p - 1] = out.data();
            std::string error;
            auto rc = g.group.run(args, send, recv, &error);
            for (int r = 0; r < p; ++r) {
                INFO("p=" << p << (direct ? " direct" : " staged") << " rank " << r << error);
                CHECK(rc[r] == CHORUS_SUCCESS);
                g.mem->free(const_cast<void*>(send[r]));
            }
            g.mem->free(recv[0]);
            CHECK(out[0] == static_cast<float>(p));
        }
}

TEST_CASE("device buffers: the input is written on the caller's stream just before the call", "[device]") {
    for (Collective coll : kAll)
        for (bool direct : {false, true})
            for (int p : {2, 3}) {
                DeviceGroup g(p, test::forced(coll, "", 4096, 4), direct, false, 3);
                for (bool in_place : {false, true}) {
                    test::CollCase c = make_case(coll, 9000, p);
                    c.in_place = in_place;
                    g.check(c, all_device, true);
                    // Host buffers with a stream wait for it too.
                    g.check(
                        c, [](int, bool) { return MemKind::PinnedHost; }, true);
                }
            }
}

TEST_CASE("device buffers: host buffers never touch the device; pools stop growing", "[device]") {
    DeviceGroup g(3, test::forced(Collective::Allreduce, "ring", 4096, 4), false);
    test::CollCase c = make_case(Collective::Allreduce, 50000, 3);
    g.check(c, [](int, bool) { return MemKind::Host; });
    for (auto* d : g.devices) {
        CHECK(d->marks == 0);
        CHECK(d->allocations() == 0);
    }
    g.check(c, all_device);
    std::vector<size_t> after_first;
    for (auto* d : g.devices) {
        CHECK(d->marks > 0);
        CHECK(d->allocations() > 0);
        after_first.push_back(d->allocations());
    }
    for (int i = 0; i < 3; ++i) g.check(c, all_device);
    for (size_t r = 0; r < g.devices.size(); ++r) CHECK(g.devices[r]->allocations() == after_first[r]);
}

TEST_CASE("device buffers: a transport that refuses device memory catches an unstaged transfer", "[device]") {
    // The check in the loopback transport itself, so the tests above mean
    // something: device memory handed to it directly is an error.
    auto mem = std::make_shared<test::EmulatedMemory>();
    auto hub = std::make_shared<chorus::net::LoopbackHub>(2);
    hub->emulate_device([mem](const void* q) { return mem->is_device(q); }, false);
    chorus::net::LoopbackTransport t0(hub, 0);
    void* d = mem->alloc(64, MemKind::Device);
    CHECK_THROWS_AS(t0.send(1, 1, d, 64), chorus::Error);
    CHECK_THROWS_AS(t0.recv(1, 1, d, 64), chorus::Error);
    mem->free(d);
}

TEST_CASE("without a GPU, a stream to wait for is a clean CUDA error", "[device]") {
    if (chorus::gpu::available()) return;  // a real stream would be needed
    test::LoopbackGroup group(1, chorus::Config{});
    chorus::coll::CollArgs args;
    args.coll = Collective::Allreduce;
    args.count = 4;
    float in[4] = {1, 2, 3, 4}, out[4] = {};
    void* stream = reinterpret_cast<void*>(uintptr_t{0x10});  // never dereferenced without a GPU
    try {
        group.comms[0]->start(args, in, out, stream);
        FAIL("expected CHORUS_ERR_CUDA");
    } catch (const chorus::Error& e) {
        CHECK(e.code() == CHORUS_ERR_CUDA);
        CHECK(std::string(e.what()).find("without a usable GPU") != std::string::npos);
    }
    // A failed start fails the communicator (its peers are told), so a new
    // one shows that host buffers without a stream still work.
    CHECK(group.comms[0]->failed());
    test::LoopbackGroup fresh(1, chorus::Config{});
    std::vector<const void*> send{in};
    std::vector<void*> recv{out};
    auto rc = fresh.run(args, send, recv);
    CHECK(rc[0] == CHORUS_SUCCESS);
    CHECK(out[3] == 4.0f);
}
