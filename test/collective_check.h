// Runs any collective on a loopback group and checks every rank's output
// bitwise against references built from per-rank seeds (test/reference.h).
// Bytes a rank must not write (outside its output, or a non-root's receive
// buffer in reduce) are poisoned and checked unchanged.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "emulated_device.h"
#include "loopback_driver.h"
#include "reduce/host_reducer.h"
#include "reference.h"

namespace test {

using chorus::coll::CollArgs;
using chorus::coll::Collective;

struct CollCase {
    Collective coll = Collective::Allreduce;
    chorus_datatype_t dt = CHORUS_FLOAT32;
    chorus_op_t op = CHORUS_SUM;
    size_t count = 0;            // elements (allgather: per rank; reduce_scatter: per block)
    std::vector<size_t> counts;  // reduce_scatterv blocks
    int root = 0;
    bool in_place = false;
    uint64_t seed = 1;
};

inline std::string describe(const CollCase& c, int p) {
    std::string counts;
    for (size_t k : c.counts) counts += chorus::cat(k, ",");
    return chorus::cat(chorus::coll::collective_name(c.coll), " p=", p, " ", chorus::datatype_name(c.dt), " ",
                       chorus::op_name(c.op), " count=", c.count, counts.empty() ? "" : " counts=", counts,
                       " root=", c.root, c.in_place ? " in-place" : "");
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

// Run `args` on `group` with rank r's buffers `send[r]` and `recv[r]`, each
// pointing into in[r] or out[r] (or null). On an emulated device the buffers
// the collective sees are copies of in/out in memory of the chosen kind,
// copied back after the run; with `via_stream` each input holds `poison`
// until its rank's stream runs.
inline std::vector<chorus_result_t> run_placed(LoopbackGroup& group, const CollArgs& args,
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
                std::memset(din[r], poison, in[r].size());
                char* d = static_cast<char*>(din[r]);
                const std::vector<char>* src = &in[r];
                user_streams[r].work.push_back([d, src] { std::memcpy(d, src->data(), src->size()); });
                streams.push_back(&user_streams[r]);
            }
        }
    }
    auto rc = group.run(args, run_send, run_recv, error, streams);
    if (place.mem) {
        for (int r = 0; r < p; ++r) {
            std::memcpy(in[r].data(), din[r], in[r].size());
            std::memcpy(out[r].data(), dout[r], out[r].size());
            place.mem->free(din[r]);
            place.mem->free(dout[r]);
        }
    }
    return rc;
}

inline void check_collective(LoopbackGroup& group, const CollCase& c, const Placement& place = {}) {
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
        case Collective::Allgather: break;
    }
    for (int r = 0; r < p; ++r) {
        size_t in_count = c.coll == Collective::Allgather ? c.count : total;
        size_t recv_count = c.coll == Collective::Allgather ? c.count * p
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
            case Collective::Allgather: {
                want[r].resize(c.count * p * w);
                for (int k = 0; k < p; ++k) ref::fill_input(c.dt, c.op, k, p, c.seed, want[r].data() + k * c.count * w, c.count);
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
                case Collective::Allgather:
                    std::memcpy(out[r].data() + r * c.count * w, in[r].data(), c.count * w);
                    send[r] = out[r].data() + r * c.count * w;
                    break;
            }
        }
        // Outside the root, broadcast never reads the send buffer: bind it to
        // the receive buffer as the API does.
        if (c.coll == Collective::Broadcast && r != c.root) send[r] = recv[r];
    }
    std::string error;
    auto rc = run_placed(group, args, in, out, send, recv, place, &error, poison);
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

    DeviceGroup(int p, const chorus::Config& cfg, bool direct, bool rendezvous = false, int items_per_poll = 1)
        : group(p, cfg, rendezvous, [this, items_per_poll] {
              auto d = std::make_unique<EmulatedDevice>(mem, items_per_poll);
              devices.push_back(d.get());
              return d;
          }) {
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
