// Broadcast and all-gather algorithms on the loopback transport: each one
// forced by name, for many rank counts, roots and awkward counts, in and out
// of place, every datatype, with many small pipeline pieces and with sends
// that complete only when the receiver takes them. The oracle checks every
// rank's output bitwise and that nothing outside it was written.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "collective_check.h"

using chorus::coll::Collective;

using test::rank_counts;
using test::roots_of;

namespace {

const char* const kBcastAlgos[] = {"binomial", "chain", "scatter_allgather"};
const char* const kAllgatherAlgos[] = {"ring", "bruck"};

std::vector<size_t> counts_of(int p, size_t large) {
    return {0, 1, size_t(p - 1), size_t(p + 1), large};
}

void run_both_places(test::LoopbackGroup& group, test::CollCase c) {
    for (bool in_place : {false, true}) {
        c.in_place = in_place;
        test::check_collective(group, c);
    }
}

// Every rank count, root and count in float32, then every datatype once.
void sweep_bcast(const char* algo) {
    for (int p : rank_counts()) {
        test::LoopbackGroup group(p, test::forced(Collective::Broadcast, algo));
        test::CollCase c;
        c.coll = Collective::Broadcast;
        for (int root : roots_of(p))
            for (size_t count : counts_of(p, 100003)) {
                c.root = root;
                c.count = count;
                c.seed = 17 + p + root;
                run_both_places(group, c);
            }
        c.root = p / 2;
        c.count = 3 * size_t(p) + 5;
        for (auto dt : ref::kAllTypes) {
            c.dt = dt;
            run_both_places(group, c);
        }
    }
}

void sweep_allgather(const char* algo) {
    for (int p : rank_counts()) {
        test::LoopbackGroup group(p, test::forced(Collective::Allgather, algo));
        test::CollCase c;
        c.coll = Collective::Allgather;
        for (size_t count : counts_of(p, 10007)) {
            c.count = count;
            c.seed = 29 + p;
            run_both_places(group, c);
        }
        c.count = size_t(p) + 3;
        for (auto dt : ref::kAllTypes) {
            c.dt = dt;
            run_both_places(group, c);
        }
    }
}

}  // namespace

TEST_CASE("binomial broadcast is exact for every rank count, root and count", "[loopback][bcast]") {
    sweep_bcast("binomial");
}

TEST_CASE("chain broadcast is exact for every rank count, root and count", "[loopback][bcast]") {
    sweep_bcast("chain");
}

TEST_CASE("scatter-allgather broadcast is exact for every rank count, root and count", "[loopback][bcast]") {
    sweep_bcast("scatter_allgather");
}

TEST_CASE("ring allgather is exact for every rank count and count", "[loopback][allgather]") {
    sweep_allgather("ring");
}

TEST_CASE("bruck allgather is exact for every rank count and count", "[loopback][allgather]") {
    sweep_allgather("bruck");
}

TEST_CASE("broadcasts pipeline many small pieces", "[loopback][bcast]") {
    // 64-byte chunks and a window of 2: hundreds of pieces per message, and
    // windows full most of the time.
    for (const char* algo : kBcastAlgos)
        for (int p : {2, 3, 5, 8, 13, 31}) {
            test::LoopbackGroup group(p, test::forced(Collective::Broadcast, algo, 64, 2));
            test::CollCase c;
            c.coll = Collective::Broadcast;
            for (auto dt : {CHORUS_INT8, CHORUS_FLOAT16, CHORUS_FLOAT64})
                for (int root : roots_of(p)) {
                    c.dt = dt;
                    c.root = root;
                    c.count = 4099;
                    c.seed = 5 + root;
                    run_both_places(group, c);
                }
        }
}

TEST_CASE("allgathers pipeline many small pieces", "[loopback][allgather]") {
    for (const char* algo : kAllgatherAlgos)
        for (int p : {2, 3, 5, 8, 13, 31}) {
            test::LoopbackGroup group(p, test::forced(Collective::Allgather, algo, 64, 2));
            test::CollCase c;
            c.coll = Collective::Allgather;
            for (auto dt : {CHORUS_INT8, CHORUS_FLOAT16, CHORUS_FLOAT64}) {
                c.dt = dt;
                c.count = 517;
                run_both_places(group, c);
            }
        }
}

TEST_CASE("broadcasts and allgathers complete when sends wait for their receivers", "[loopback][bcast][allgather]") {
    // Rendezvous loopback: a send completes only once the peer has taken it.
    // A schedule that needs sends to finish early deadlocks, and the driver
    // reports it.
    for (int window : {1, 2, 5})
        for (int p : {2, 3, 4, 7, 16, 31}) {
            for (const char* algo : kBcastAlgos) {
                test::LoopbackGroup group(p, test::forced(Collective::Broadcast, algo, 64, window), true);
                test::CollCase c;
                c.coll = Collective::Broadcast;
                c.count = 5003;
                for (int root : roots_of(p)) {
                    c.root = root;
                    run_both_places(group, c);
                }
            }
            for (const char* algo : kAllgatherAlgos) {
                test::LoopbackGroup group(p, test::forced(Collective::Allgather, algo, 64, window), true);
                test::CollCase c;
                c.coll = Collective::Allgather;
                c.count = 1001;
                run_both_places(group, c);
            }
        }
}
