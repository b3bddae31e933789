// Checks the data-movement collectives on a loopback group: all-gatherv,
// all-to-all(v), gather(v), scatter(v) and barrier. Every rank's call goes
// through the C API's own argument check (api::validate), as a user's call
// would, so the buffers the collective runs on, the in-place forms and the
// root-only arguments are the API's. The v forms' blocks sit in a shuffled
// order with gaps between them, a different layout on every rank and side.
// The block rank s sends rank d is drawn from per-rank seeds (s, d), so the
// reference is independent of Chorus. Every rank checks each block it
// received bitwise, that no other byte of its buffers changed (the gaps, the
// guard bytes past the end, a send buffer), and a non-root that receives
// nothing, that nothing was written at all.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "block_layout.h"
#include "collective_check.h"
#include "core/validate.h"

namespace test {

namespace movement {

inline size_t pair_count(const CollCase& c, int p, int s, int d) {
    return layout::pair_count(c.shape, c.count, c.seed, (c.root + 1) % p, p, s, d);
}

// What rank s sends rank d (d = -1: every rank): n elements.
inline void fill(const CollCase& c, int p, int s, int d, char* buf, size_t n) {
    ref::fill_input(c.dt, CHORUS_SUM, s, p, layout::block_seed(c.seed, d), buf, n);
}

inline Collective form_of(Collective c) {
    switch (c) {
        case Collective::Allgatherv: return Collective::Allgatherv;
        case Collective::Alltoall: return Collective::Alltoall;
        case Collective::Alltoallv: return Collective::Alltoallv;
        case Collective::Gather: return Collective::Gather;
        case Collective::Gatherv: return Collective::Gatherv;
        case Collective::Scatter: return Collective::Scatter;
        case Collective::Scatterv: return Collective::Scatterv;
        default: return Collective::Barrier;
    }
}

// A block this rank must end up with: `count` elements at byte `at` of its
// receive allocation, what rank `src` sent rank `dst`.
struct Expect {
    size_t at, count;
    int src, dst;
};

// One rank's call: its arrays and what it must receive.
struct RankCall {
    std::vector<size_t> counts, displs, send_counts, send_displs;
    chorus::api::Args args;
    bool recv_in_in = false;  // the result lands in `in` (a scatter root in place)
    bool in_place = false;    // what the API must make of the call
    std::vector<Expect> expect;
};

}  // namespace movement

inline void check_movement(LoopbackGroup& group, const CollCase& given, const Placement& place) {
    using namespace movement;
    const int p = group.size();
    const auto up = static_cast<size_t>(p);
    const size_t w = ref::esize(given.dt);
    const char poison = '\x5a';
    const bool v = given.coll == Collective::Allgatherv || given.coll == Collective::Alltoallv ||
                   given.coll == Collective::Gatherv || given.coll == Collective::Scatterv;
    CollCase c = given;  // the block forms have equal blocks
    if (!v) c.shape = Shape::Even;
    std::vector<std::vector<char>> in(up), out(up);
    std::vector<RankCall> rc(up);
    // Lay out side `counts` of rank r: shuffled for the v forms, else in rank order.
    auto layout = [&](const std::vector<size_t>& counts, uint64_t salt, size_t* extent) {
        if (v) return layout::shuffled(counts, salt, extent);
        std::vector<size_t> d(counts.size());
        for (size_t i = 0; i < d.size(); ++i) d[i] = i * c.count;
        *extent = c.count * counts.size();
        return d;
    };
    auto alloc = [&](std::vector<char>& b, size_t elems) { b.assign(elems * w + w + 3, poison); };
    for (int r = 0; r < p; ++r) {
        RankCall& k = rc[r];
        chorus::api::Args& a = k.args;
        a.datatype = c.dt;
        a.root = c.root;
        const bool root = r == c.root;
        size_t ext = 0;
        switch (c.coll) {
            case Collective::Allgatherv:
            case Collective::Gather:
            case Collective::Gatherv: {
                a.count = pair_count(c, p, r, -1);
                alloc(in[r], a.count);
                fill(c, p, r, -1, in[r].data(), a.count);
                a.sendbuf = in[r].data();
                if (c.coll != Collective::Allgatherv && !root) break;
                for (int i = 0; i < p; ++i) k.counts.push_back(pair_count(c, p, i, -1));
                k.displs = layout(k.counts, seeds::mix(c.seed + 2 * r), &ext);
                alloc(out[r], ext);
                a.recvbuf = out[r].data();
                if (v) {
                    a.counts = k.counts.data();
                    a.displs = k.displs.data();
                }
                for (int i = 0; i < p; ++i) k.expect.push_back({k.displs[i] * w, k.counts[i], i, -1});
                if (c.in_place) {
                    fill(c, p, r, -1, out[r].data() + k.displs[r] * w, k.counts[r]);
                    a.sendbuf = out[r].data() + k.displs[r] * w;
                    k.in_place = k.counts[r] > 0;  // an empty own block is no in-place form
                    // In place, all-gatherv's sendcount is ignored (as with MPI_IN_PLACE).
                    if (k.in_place && c.coll == Collective::Allgatherv) a.count += 7;
                }
                break;
            }
            case Collective::Alltoall:
            case Collective::Alltoallv: {
                // In place the counts are symmetric, as the in-place form requires.
                auto count = [&](int s, int d) {
                    return c.in_place ? pair_count(c, p, std::min(s, d), std::max(s, d)) : pair_count(c, p, s, d);
                };
                size_t sext = 0;
                for (int i = 0; i < p; ++i) {
                    k.counts.push_back(count(i, r));
                    k.send_counts.push_back(count(r, i));
                }
                k.displs = layout(k.counts, seeds::mix(c.seed + 2 * r), &ext);
                k.send_displs = layout(k.send_counts, seeds::mix(c.seed + 2 * r + 1), &sext);
                alloc(out[r], ext);
                alloc(in[r], c.in_place ? 0 : sext);
                for (int i = 0; i < p; ++i) {
                    k.expect.push_back({k.displs[i] * w, k.counts[i], i, r});
                    char* src = c.in_place ? out[r].data() + k.displs[i] * w : in[r].data() + k.send_displs[i] * w;
                    fill(c, p, r, i, src, k.send_counts[i]);
                }
                a.count = c.count;
                k.in_place = c.in_place;
                a.sendbuf = c.in_place ? out[r].data() : in[r].data();
                a.recvbuf = out[r].data();
                if (v) {
                    a.counts = k.counts.data();
                    a.displs = k.displs.data();
                    a.send_counts = c.in_place ? nullptr : k.send_counts.data();
                    a.send_displs = c.in_place ? nullptr : k.send_displs.data();
                }
                break;
            }
            case Collective::Scatter:
            case Collective::Scatterv: {
                a.count = pair_count(c, p, c.root, r);
                alloc(out[r], a.count);
                a.recvbuf = out[r].data();
                k.expect.push_back({size_t(0), a.count, c.root, r});
                k.in_place = !root;  // the unused send buffer is bound to the receive buffer
                if (!root) break;
                for (int i = 0; i < p; ++i) k.send_counts.push_back(pair_count(c, p, c.root, i));
                k.send_displs = layout(k.send_counts, seeds::mix(c.seed + 2 * r + 1), &ext);
                alloc(in[r], ext);
                for (int i = 0; i < p; ++i) fill(c, p, r, i, in[r].data() + k.send_displs[i] * w, k.send_counts[i]);
                a.sendbuf = in[r].data();
                if (v) {
                    a.send_counts = k.send_counts.data();
                    a.send_displs = k.send_displs.data();
                }
                if (c.in_place) {
                    a.recvbuf = in[r].data() + k.send_displs[r] * w;
                    k.recv_in_in = true;
                    k.in_place = k.send_counts[r] > 0;
                    k.expect = {{k.send_displs[r] * w, k.send_counts[r], r, r}};
                }
                break;
            }
            default: break;  // barrier: no buffers
        }
    }
    // Each rank's call as the C API sees it.
    std::vector<CollArgs> args(up);
    std::vector<const void*> send(up);
    std::vector<void*> recv(up);
    for (int r = 0; r < p; ++r) {
        chorus::api::Call call;
        chorus_result_t v_rc = chorus::api::validate(form_of(c.coll), "check", group.comms[r].get(), rc[r].args, &call);
        INFO(describe(c, p) << " rank " << r << ": " << group.comms[r]->last_error());
        REQUIRE(v_rc == CHORUS_SUCCESS);
        REQUIRE(call.args.in_place == rc[r].in_place);
        args[r] = call.args;
        send[r] = call.send;
        recv[r] = call.recv;
    }
    const std::vector<std::vector<char>> in_before = in, out_before = out;
    std::string error;
    auto result = run_placed(group, args, in, out, send, recv, place, &error, poison);
    INFO(describe(c, p) << " " << error);
    std::vector<char> want;
    for (int r = 0; r < p; ++r) {
        INFO("rank " << r);
        REQUIRE(result[r] == CHORUS_SUCCESS);
        std::vector<char>& got = rc[r].recv_in_in ? in[r] : out[r];
        const std::vector<char>& before = rc[r].recv_in_in ? in_before[r] : out_before[r];
        std::vector<bool> covered(got.size(), false);
        for (const Expect& e : rc[r].expect) {
            want.assign(e.count * w + 1, 0);
            fill(c, p, e.src, e.dst, want.data(), e.count);
            long diff = ref::first_difference(got.data() + e.at, want.data(), e.count, w);
            INFO("block from rank " << e.src << ": first wrong element " << diff);
            REQUIRE(diff == -1);
            std::fill(covered.begin() + static_cast<long>(e.at),
                      covered.begin() + static_cast<long>(e.at + e.count * w), true);
        }
        size_t written = got.size();
        for (size_t i = 0; i < got.size() && written == got.size(); ++i)
            if (!covered[i] && got[i] != before[i]) written = i;
        INFO("byte " << written << " of " << got.size() << " outside the blocks was written");
        REQUIRE(written == got.size());
        // The other buffer (a send buffer) is never written.
        REQUIRE((rc[r].recv_in_in ? out[r] == out_before[r] : in[r] == in_before[r]));
    }
}

}  // namespace test
