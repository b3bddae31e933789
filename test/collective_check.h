// Runs any collective on a loopback group and checks every rank's output
// bitwise against references built from per-rank seeds (test/reference.h).
// Bytes a rank must not write (outside its output, or a non-root's receive
// buffer in reduce) are poisoned and checked unchanged.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "host_reducer.h"
#include "loopback_driver.h"
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

// A group whose communicators force `algo` for the collective (or choose
// automatically when algo is empty).
inline chorus::Config forced(Collective coll, const std::string& algo, size_t chunk_bytes = 64 * 1024, int window = 4) {
    chorus::Config cfg;
    if (!algo.empty()) cfg.algo[chorus::coll::collective_name(coll)] = algo;
    cfg.chunk_bytes = chunk_bytes;
    cfg.window = window;
    return cfg;
}

inline void check_collective(LoopbackGroup& group, const CollCase& c) {
    const int p = group.size();
    const size_t w = ref::esize(c.dt);
    const char poison = '\x5a';
    CollArgs args;
    args.coll = c.coll;
    args.count = c.count;
    args.counts = c.counts;
    args.dtype = c.dt;
    args.op = c.op;
    args.root = c.root;
    args.size = p;
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
    auto rc = group.run(args, send, recv, &error);
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

}  // namespace test
