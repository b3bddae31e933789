// Point-to-point messages (core/p2p.h) with buffers in emulated device
// memory, whose queued copies run late: a send must copy the data out
// before it returns, and a receive must not finish before its copy into
// the device buffer has run. Device and host buffers mixed across ranks;
// the loopback transport refuses device memory, so everything is staged.
// Checked against per-rank seeded references.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "collective_check.h"
#include "core/config.h"
#include "seeds.h"

namespace {

using test::MemKind;

uint32_t value(int from, int tag, size_t i) {
    return static_cast<uint32_t>(seeds::bits(static_cast<uint64_t>(tag), from, i));
}

// Progress every rank until all of `reqs` have finished (a bounded number
// of rounds: loopback transfers complete as they are progressed).
bool drive(test::DeviceGroup& g, const std::vector<std::pair<int, chorus::P2pRequest*>>& reqs) {
    for (int round = 0; round < 100000; ++round) {
        bool all = true;
        for (const auto& [rank, r] : reqs) all = g.group.comms[rank]->progress(r) && all;
        if (all) return true;
    }
    return false;
}

// Drive `reqs` to the end; each must succeed, and is released.
void complete(test::DeviceGroup& g, const std::vector<std::pair<int, chorus::P2pRequest*>>& reqs) {
    REQUIRE(drive(g, reqs));
    for (const auto& [rank, r] : reqs) {
        INFO(r->error);
        CHECK(r->result == CHORUS_SUCCESS);
        g.group.comms[rank]->release(r);
    }
}

}  // namespace

TEST_CASE("p2p: device buffers, staged, in a ring and to the rank itself", "[p2p]") {
    for (int p : {1, 2, 3}) {
        for (bool rendezvous : {false, true}) {
            test::DeviceGroup g(p, chorus::Config{}, false, rendezvous);
            for (size_t count : {size_t(0), size_t(1), size_t(5003)}) {
                INFO("p=" << p << " count=" << count << " rendezvous=" << rendezvous);
                const size_t bytes = count * sizeof(uint32_t);
                std::vector<void*> out(p), in(p), self_in(p);
                std::vector<std::pair<int, chorus::P2pRequest*>> reqs;
                for (int r = 0; r < p; ++r) {
                    // Sends from device memory; receives into device memory on
                    // even ranks and host memory on odd ones.
                    out[r] = g.mem->alloc(bytes, MemKind::Device);
                    in[r] = g.mem->alloc(bytes, r % 2 ? MemKind::Host : MemKind::Device);
                    self_in[r] = g.mem->alloc(bytes, MemKind::Device);
                    for (size_t i = 0; i < count; ++i) static_cast<uint32_t*>(out[r])[i] = value(r, 4, i);
                    std::memset(in[r], 0, bytes);
                    std::memset(self_in[r], 0, bytes);
                }
                for (int r = 0; r < p; ++r) {
                    chorus::Communicator& c = *g.group.comms[r];
                    reqs.push_back({r, c.recv(in[r], count, CHORUS_UINT32, (r + p - 1) % p, 4, nullptr)});
                    reqs.push_back({r, c.send(out[r], count, CHORUS_UINT32, (r + 1) % p, 4, nullptr)});
                    // The send copied the data: overwriting the buffer changes nothing.
                    std::memset(out[r], 0xab, bytes);
                    reqs.push_back({r, c.send(nullptr, 0, CHORUS_UINT32, r, 5, nullptr)});
                    reqs.push_back({r, c.recv(nullptr, 0, CHORUS_UINT32, r, 5, nullptr)});
                }
                complete(g, reqs);
                for (int r = 0; r < p; ++r) {
                    const int from = (r + p - 1) % p;
                    size_t wrong = 0;
                    for (size_t i = 0; i < count; ++i) wrong += static_cast<uint32_t*>(in[r])[i] != value(from, 4, i);
                    CHECK(wrong == 0);
                }
                // To itself, with data, receive posted first.
                reqs.clear();
                for (int r = 0; r < p; ++r) {
                    chorus::Communicator& c = *g.group.comms[r];
                    for (size_t i = 0; i < count; ++i) static_cast<uint32_t*>(out[r])[i] = value(r, 6, i);
                    reqs.push_back({r, c.recv(self_in[r], count, CHORUS_UINT32, r, 6, nullptr)});
                    reqs.push_back({r, c.send(out[r], count, CHORUS_UINT32, r, 6, nullptr)});
                }
                complete(g, reqs);
                for (int r = 0; r < p; ++r) {
                    size_t wrong = 0;
                    for (size_t i = 0; i < count; ++i) wrong += static_cast<uint32_t*>(self_in[r])[i] != value(r, 6, i);
                    CHECK(wrong == 0);
                    g.mem->free(out[r]);
                    g.mem->free(in[r]);
                    g.mem->free(self_in[r]);
                }
            }
        }
    }
}

TEST_CASE("p2p: a device receive of the wrong size fails and frees its staging", "[p2p]") {
    test::DeviceGroup g(2, chorus::Config{}, false);
    void* out = g.mem->alloc(400, MemKind::Device);
    void* in = g.mem->alloc(800, MemKind::Device);
    std::memset(out, 1, 400);
    chorus::P2pRequest* s = g.group.comms[0]->send(out, 100, CHORUS_UINT32, 1, 3, nullptr);
    chorus::P2pRequest* r = g.group.comms[1]->recv(in, 200, CHORUS_UINT32, 0, 3, nullptr);
    REQUIRE(drive(g, {{0, s}, {1, r}}));
    CHECK(r->result == CHORUS_ERR_MISMATCH);
    CHECK(r->error.find("400 bytes") != std::string::npos);
    CHECK(r->error.find("800 bytes") != std::string::npos);
    g.group.comms[0]->release(s);
    g.group.comms[1]->release(r);
    CHECK_FALSE(g.group.comms[1]->failed());
    g.mem->free(out);
    g.mem->free(in);
}
