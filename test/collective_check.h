// Runs any collective on a loopback group and checks every rank's output
// bitwise against references built from per-rank seeds (test/reference.h).
// Bytes a rank must not write (outside its output, or a non-root's receive
// buffer in reduce) are poisoned and checked unchanged. The data-movement
// collectives (all-gatherv, all-to-all, gather, scatter, barrier) are
// checked by test/movement_check.h.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "block_layout.h"
#include "emulated_device.h"
#include "loopback_driver.h"
#include "reduce/host_reducer.h"
#include "reference.h"

namespace test {

using chorus::coll::CollArgs;
using chorus::coll::Collective;

// The blocks of the v forms (test/block_layout.h); skewed: rank root + 1
// holds the big blocks.
using Shape = layout::Shape;

struct CollCase {
    Collective coll = Collective::Allreduce;
    chorus_datatype_t dt = CHORUS_FLOAT32;
    chorus_op_t op = CHORUS_SUM;
    size_t count = 0;            // elements (allgather: per rank; reduce_scatter: per block)
    std::vector<size_t> counts;  // reduce_scatterv blocks
    int root = 0;
    bool in_place = false;
    uint64_t seed = 1;
    Shape shape = Shape::Even;  // the data-movement collectives' blocks
};

// The rank counts every loopback sweep covers, and the roots at p ranks.
inline std::vector<int> rank_counts() {
    std::vector<int> ps;
    for (int p = 1; p <= 16; ++p) ps.push_back(p);
    ps.push_back(31);
    ps.push_back(64);
    return ps;
}

inline std::vector<int> roots_of(int p) {
    std::vector<int> roots{0, p / 2, p - 1};
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    return roots;
}

// The algorithms that need emulated hosts to run at all (elsewhere they
// leave the choice to the cost model): test_loopback_two_level.cc runs them.
inline bool needs_hosts(const std::string& algo) {
    return algo.rfind("two_level", 0) == 0;
}

inline bool is_movement(Collective c) {
    return c != Collective::Allreduce && c != Collective::Broadcast && c != Collective::Reduce &&
           c != Collective::ReduceScatter && c != Collective::Allgather;
}

inline std::string describe(const CollCase& c, int p) {
    std::string counts;
    for (size_t k : c.counts) counts += chorus::cat(k, ",");
    return chorus::cat(chorus::coll::collective_name(c.coll), " p=", p, " ", chorus::datatype_name(c.dt), " ",
                       chorus::op_name(c.op), " count=", c.count, counts.empty() ? "" : " counts=", counts,
                       " root=", c.root, c.in_place ? " in-place" : "",
                       c.shape == Shape::Even        ? ""
                       : c.shape == Shape::Irregular ? " irregular"
                                                     : " skewed");
}

// The arguments of `c` on p ranks.
inline CollArgs args_of(const CollCase& c, int p) {
    CollArgs a;
    a.coll = c.coll;
    a.count = c.count;
    a.counts = c.counts;
    a.dtype = c.dt;
    a.op = c.op;
    a.root = c.root;
    a.size = p;
    return a;
}

// A group whose communicators force `algo` for the collective (or choose
// automatically when algo is empty).
inline chorus::Config forced(Collective coll, const std::string& algo, size_t chunk_bytes = 64 * 1024, int window = 4) {
    chorus::Config cfg;
    if (!algo.empty()) cfg.algo[chorus::coll::collective_name(coll)] = algo;
    cfg.chunk_bytes = chunk_bytes;
    cfg.window = window;
    return cfg;
}

// Where each rank's buffers live, on an emulated device: `kind(rank, out)`
// for the input buffer (out = false) and the output buffer (out = true).
// With `via_stream`, each rank's input reaches its buffer only through work
// queued on that rank's stream just before the call.
struct Placement {
    EmulatedMemory* mem = nullptr;
    std::function<MemKind(int, bool)> kind;
    bool via_stream = false;
};

// Run `args` (one per rank) on `group` with rank r's buffers `send[r]` and
// `recv[r]`, each pointing into in[r] or out[r] (or null). On an emulated
// device the buffers the collective sees are copies of in/out in memory of
// the chosen kind, copied back after the run; with `via_stream` each input
// holds `poison` until its rank's stream runs.
inline std::vector<chorus_result_t> run_placed(LoopbackGroup& group, const std::vector<CollArgs>& args,
                                               std::vector<std::vector<char>>& in, std::vector<std::vector<char>>& out,
                                               const std::vector<const void*>& send, const std::vector<void*>& recv,
                                               const Placement& place, std::string* error, char poison = '\x5a') {
    const int p = group.size();
    std::vector<const void*> run_send = send;
    std::vector<void*> run_recv = recv, streams;
    std::vector<void*> din(p, nullptr), dout(p, nullptr);
    std::vector<EmulatedStream> user_streams(p);
    if (place.mem) {
        for (int r = 0; r < p; ++r) {
            MemKind kin = place.kind(r, false), kout = place.kind(r, true);
            din[r] = place.mem->clone(in[r].data(), in[r].size(), kin);
            dout[r] = place.mem->clone(out[r].data(), out[r].size(), kout);
            auto remap = [&](const void* q) -> char* {
                auto a = static_cast<const char*>(q);
                if (a >= in[r].data() && a < in[r].data() + in[r].size())
                    return static_cast<char*>(din[r]) + (a - in[r].data());
                return static_cast<char*>(dout[r]) + (a - out[r].data());
            };
            run_send[r] = send[r] ? remap(send[r]) : nullptr;
            run_recv[r] = recv[r] ? remap(recv[r]) : nullptr;
            if (place.via_stream) {
                // The buffer holds poison until the stream's work runs.
                if (!in[r].empty()) std::memset(din[r], poison, in[r].size());
                char* d = static_cast<char*>(din[r]);
                const std::vector<char>* src = &in[r];
                user_streams[r].work.push_back([d, src] {
                    if (!src->empty()) std::memcpy(d, src->data(), src->size());
                });
                streams.push_back(&user_streams[r]);
            }
        }
    }
    auto rc = group.run(args, run_send, run_recv, error, streams);
    if (place.mem) {
        for (int r = 0; r < p; ++r) {
            // (empty vectors: no data pointer, which memcpy must not get)
            if (!in[r].empty()) std::memcpy(in[r].data(), din[r], in[r].size());
            if (!out[r].empty()) std::memcpy(out[r].data(), dout[r], out[r].size());
            place.mem->free(din[r]);
            place.mem->free(dout[r]);
        }
    }
    return rc;
}
// The same arguments on every rank.
inline std::vector<chorus_result_t> run_placed(LoopbackGroup& group, const CollArgs& args,
                                               std::vector<std::vector<char>>& in, std::vector<std::vector<char>>& out,
                                               const std::vector<const void*>& send, const std::vector<void*>& recv,
                                               const Placement& place, std::string* error, char poison = '\x5a') {
    return run_placed(group, std::vector<CollArgs>(static_cast<size_t>(group.size()), args), in, out, send, recv, place,
                      error, poison);
}

// Progress operations op[k][r] (operation k on rank r) of a loopback group,
// the later ones first (they must wait for the earlier ones' slots), until
// every one has finished; a test failure that names what each unfinished
// one waits for otherwise.
inline void progress_all(LoopbackGroup& group, std::vector<std::vector<chorus::Operation*>>& op, int tries) {
    const int ops = static_cast<int>(op.size()), p = group.size();
    for (int round = 0; round < tries; ++round) {
        bool all = true;
        for (int k = ops - 1; k >= 0; --k)
            for (int r = 0; r < p; ++r) all = group.comms[r]->progress(op[k][r]) && all;
        if (all) break;
    }
    bool all = true;
    for (int k = 0; k < ops; ++k)
        for (int r = 0; r < p; ++r) all = all && op[k][r]->finished;
    if (all) return;
    std::string report;
    for (int r = 0; r < p; ++r)
        for (int k = 0; k < ops; ++k)
            if (!op[k][r]->finished)
                report += chorus::cat(" [op ", k, " rank ", r, ": ", op[k][r]->executor->pending_summary(), "]");
    for (auto& c : group.comms) c->abort("the test gave up");  // no wait at destruction
    FAIL("deadlock:" << report);
}

inline void check_movement(LoopbackGroup& group, const CollCase& c, const Placement& place);

inline void check_collective(LoopbackGroup& group, const CollCase& c, const Placement& place = {}) {
    if (is_movement(c.coll)) return check_movement(group, c, place);
    const int p = group.size();
    const size_t w = ref::esize(c.dt);
    const char poison = '\x5a';
    const CollArgs args = args_of(c, p);
    const size_t total = c.coll == Collective::ReduceScatter ? args.total_count() : c.count;

    // Inputs and the expected output of every rank (in elements).
    std::vector<std::vector<char>> in(p), out(p), want(p);
    std::vector<size_t> out_count(p), out_offset(p, 0);  // where in `out` the result lands
    std::vector<const void*> send(p);
    std::vector<void*> recv(p);
    std::vector<char> full(total * w + 1);
    switch (c.coll) {
        case Collective::Allreduce:
        case Collective::Reduce:
        case Collective::ReduceScatter: ref::expected(c.dt, c.op, p, c.seed, full.data(), total); break;
        case Collective::Broadcast: ref::fill_input(c.dt, c.op, c.root, p, c.seed, full.data(), total); break;
        default: break;
    }
    for (int r = 0; r < p; ++r) {
        size_t in_count = c.coll == Collective::Allgather ? c.count : total;
        size_t recv_count = c.coll == Collective::Allgather       ? c.count * p
                            : c.coll == Collective::ReduceScatter ? (c.in_place ? total : args.block_count(r))
                                                                  : total;
        in[r].assign(in_count * w + 1, poison);
        ref::fill_input(c.dt, c.op, r, p, c.seed, in[r].data(), in_count);
        out[r].assign(recv_count * w + 1, poison);
        switch (c.coll) {
            case Collective::Allreduce:
                want[r].assign(full.begin(), full.begin() + total * w);
                out_count[r] = total;
                break;
            case Collective::Broadcast:
                want[r].assign(full.begin(), full.begin() + total * w);
                out_count[r] = total;
                break;
            case Collective::Reduce:
                if (r == c.root) want[r].assign(full.begin(), full.begin() + total * w);
                out_count[r] = r == c.root ? total : 0;
                break;
            case Collective::ReduceScatter: {
                size_t off = args.block_offset(r), n = args.block_count(r);
                want[r].assign(full.begin() + off * w, full.begin() + (off + n) * w);
                out_count[r] = n;
                break;
            }
            default: {  // allgather
                want[r].resize(c.count * p * w);
                for (int k = 0; k < p; ++k)
                    ref::fill_input(c.dt, c.op, k, p, c.seed, want[r].data() + k * c.count * w, c.count);
                out_count[r] = c.count * p;
                break;
            }
        }
        send[r] = in[r].data();
        recv[r] = out[r].data();
        if (c.in_place) {
            switch (c.coll) {
                case Collective::Allreduce:
                case Collective::ReduceScatter: recv[r] = in[r].data(); break;
                case Collective::Broadcast:
                case Collective::Reduce:
                    if (r == c.root) recv[r] = in[r].data();
                    break;
                default:  // allgather
                    if (c.count) std::memcpy(out[r].data() + r * c.count * w, in[r].data(), c.count * w);
                    send[r] = out[r].data() + r * c.count * w;
                    break;
            }
        }
        // Outside the root, broadcast never reads the send buffer: bind it to
        // the receive buffer as the API does.
        if (c.coll == Collective::Broadcast && r != c.root) send[r] = recv[r];
    }
    // Each rank's arguments say in place where the API's would (a builder
    // may order its own steps by it): a reduce's root, a broadcast's
    // root and every other rank (whose send buffer is its receive buffer).
    std::vector<CollArgs> ranks_args(static_cast<size_t>(p), args);
    for (int r = 0; r < p; ++r)
        ranks_args[r].in_place = c.coll == Collective::Reduce      ? c.in_place && r == c.root
                                 : c.coll == Collective::Broadcast ? c.in_place || r != c.root
                                                                   : c.in_place;
    std::string error;
    auto rc = run_placed(group, ranks_args, in, out, send, recv, place, &error, poison);
    INFO(describe(c, p) << " " << error);
    for (int r = 0; r < p; ++r) {
        INFO("rank " << r);
        REQUIRE(rc[r] == CHORUS_SUCCESS);
        const char* got = static_cast<const char*>(recv[r]) + out_offset[r];
        long diff = ref::first_difference(got, want[r].data(), out_count[r], w);
        INFO("first wrong element " << diff);
        REQUIRE(diff == -1);
        // Nothing past the output (or, for a reduce's non-root, nothing at all)
        // was written.
        const std::vector<char>& buf = recv[r] == in[r].data() ? in[r] : out[r];
        bool reads_in_place = recv[r] == in[r].data();
        if (!reads_in_place) {
            auto first = std::find_if(buf.begin() + out_count[r] * w, buf.end(), [&](char b) { return b != poison; });
            INFO("byte " << (first - buf.begin()) << " of the receive buffer was written");
            REQUIRE(first == buf.end());
        } else {
            REQUIRE(buf.back() == poison);
        }
    }
}

// A loopback group whose ranks each have an emulated device over one shared
// EmulatedMemory. `direct`: the transport takes device memory; otherwise
// every device transfer must be staged through pinned host memory.
struct DeviceGroup {
    std::shared_ptr<EmulatedMemory> mem = std::make_shared<EmulatedMemory>();
    std::vector<EmulatedDevice*> devices;
    LoopbackGroup group;

    DeviceGroup(int p, const chorus::Config& cfg, bool direct, bool rendezvous = false, int items_per_poll = 1,
                const std::vector<int>& hosts = {})
        : group(
              p, cfg, rendezvous,
              [this, items_per_poll] {
                  auto d = std::make_unique<EmulatedDevice>(mem, items_per_poll);
                  devices.push_back(d.get());
                  return d;
              },
              nullptr, hosts) {
        auto m = mem;
        group.hub->emulate_device([m](const void* q) { return m->is_device(q); }, direct);
    }
    Placement place(std::function<MemKind(int, bool)> kind, bool via_stream = false) {
        Placement pl;
        pl.mem = mem.get();
        pl.kind = std::move(kind);
        pl.via_stream = via_stream;
        return pl;
    }
    void check(const CollCase& c, std::function<MemKind(int, bool)> kind, bool via_stream = false) {
        check_collective(group, c, place(std::move(kind), via_stream));
    }
};

}  // namespace test

#include "movement_check.h"  // IWYU pragma: export
