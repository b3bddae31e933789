// The data-movement collectives on the loopback transport: all-gatherv,
// all-to-all(v), gather(v), scatter(v) and barrier, each algorithm forced by
// name, at p = 1..16, 31 and 64, roots 0, p/2 and p-1, equal, irregular
// (zeros included) and skewed blocks at shuffled displacements with gaps,
// in and out of place, with many small pipeline pieces and with sends that
// complete only when received. The oracle (test/movement_check.h) checks
// every block bitwise and that nothing else was written.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "collective_check.h"

using chorus::coll::Collective;
using test::Shape;

using test::rank_counts;
using test::roots_of;

namespace {

bool is_v(Collective c) {
    return c == Collective::Allgatherv || c == Collective::Alltoallv || c == Collective::Gatherv ||
           c == Collective::Scatterv;
}
bool has_root(Collective c) {
    return c == Collective::Gather || c == Collective::Gatherv || c == Collective::Scatter || c == Collective::Scatterv;
}

// Every algorithm but the two-level ones (test_loopback_two_level.cc runs
// those, on emulated hosts).
std::vector<std::string> algos_of(Collective c) {
    std::vector<std::string> out;
    for (const std::string& algo : chorus::known_algorithms().at(chorus::coll::collective_name(c)))
        if (!test::needs_hosts(algo)) out.push_back(algo);
    return out;
}

// Every rank count, root, shape and count in float32, in and out of place,
// then every datatype once; `large` bounds the biggest blocks.
void sweep(Collective coll, const std::string& algo, size_t large) {
    for (int p : rank_counts()) {
        test::LoopbackGroup group(p, test::forced(coll, algo));
        test::CollCase c;
        c.coll = coll;
        const std::vector<int> roots = has_root(coll) ? roots_of(p) : std::vector<int>{0};
        const std::vector<Shape> shapes = is_v(coll) ? std::vector<Shape>{Shape::Even, Shape::Irregular, Shape::Skewed}
                                                     : std::vector<Shape>{Shape::Even};
        for (int root : roots)
            for (Shape shape : shapes)
                for (size_t count : {size_t(0), size_t(1), size_t(p + 1), large})
                    for (bool in_place : {false, true}) {
                        if (shape == Shape::Skewed && count == large) continue;  // count * p in one block
                        c.root = root;
                        c.shape = shape;
                        c.count = count;
                        c.in_place = in_place;
                        c.seed = 41 + p + root + static_cast<int>(shape);
                        test::check_collective(group, c);
                    }
        c.root = p / 2;
        c.count = size_t(p) + 3;
        c.shape = is_v(coll) ? Shape::Irregular : Shape::Even;
        for (auto dt : ref::kAllTypes) {
            c.dt = dt;
            c.in_place = false;
            test::check_collective(group, c);
        }
    }
}

void sweep_all(Collective coll, size_t large) {
    for (const std::string& algo : algos_of(coll)) {
        INFO(chorus::coll::collective_name(coll) << "=" << algo);
        sweep(coll, algo, large);
    }
}

const Collective kMovement[] = {Collective::Allgatherv, Collective::Alltoall, Collective::Alltoallv,
                                Collective::Gather,     Collective::Gatherv,  Collective::Scatter,
                                Collective::Scatterv,   Collective::Barrier};

}  // namespace

TEST_CASE("allgatherv algorithms are exact for every rank count and block shape", "[loopback][allgatherv]") {
    sweep_all(Collective::Allgatherv, 2003);
}

TEST_CASE("alltoall algorithms are exact for every rank count and count", "[loopback][alltoall]") {
    sweep_all(Collective::Alltoall, 517);
}

TEST_CASE("alltoallv is exact for every rank count and block shape", "[loopback][alltoall]") {
    sweep_all(Collective::Alltoallv, 517);
}

TEST_CASE("gather algorithms are exact for every rank count, root and block shape", "[loopback][gather]") {
    sweep_all(Collective::Gather, 4099);
    sweep_all(Collective::Gatherv, 4099);
}

TEST_CASE("scatter algorithms are exact for every rank count, root and block shape", "[loopback][scatter]") {
    sweep_all(Collective::Scatter, 4099);
    sweep_all(Collective::Scatterv, 4099);
}

TEST_CASE("data movement pipelines many small pieces, and completes when sends wait for receivers",
          "[loopback][pieces]") {
    // 64-byte chunks, small windows (full most of the time), and rendezvous
    // sends: a schedule that needs a send to finish early deadlocks.
    for (Collective coll : kMovement)
        for (const std::string& algo : algos_of(coll))
            for (int window : {1, 2, 5})
                for (int p : {2, 3, 5, 8, 13, 31}) {
                    INFO(chorus::coll::collective_name(coll) << "=" << algo << " window " << window);
                    test::LoopbackGroup group(p, test::forced(coll, algo, 64, window), window != 5);
                    test::CollCase c;
                    c.coll = coll;
                    c.count = 301;
                    c.shape = Shape::Irregular;
                    c.dt = window == 1 ? CHORUS_INT8 : CHORUS_FLOAT64;
                    for (int root : has_root(coll) ? roots_of(p) : std::vector<int>{0})
                        for (bool in_place : {false, true}) {
                            c.root = root;
                            c.in_place = in_place;
                            test::check_collective(group, c);
                        }
                }
}

namespace {

// Each rank in turn late: the others start the barrier and progress a while
// first; none may complete before the late one has started.
void check_no_early_leaver(test::LoopbackGroup& group, const std::string& algo) {
    const int p = group.size();
    for (int late = 0; late < p; late += std::max(1, p / 4)) {
        INFO("p " << p << " late " << late);
        chorus::coll::CollArgs args;
        args.coll = Collective::Barrier;
        args.dtype = CHORUS_UINT8;
        std::vector<chorus::Operation*> ops(p, nullptr);
        for (int r = 0; r < p; ++r)
            if (r != late) ops[r] = group.comms[r]->start(args, nullptr, nullptr);
        int left_early = -1;  // checked once every rank is out again
        for (int round = 0; round < 50; ++round)
            for (int r = 0; r < p; ++r)
                if (ops[r] && group.comms[r]->progress(ops[r]) && left_early < 0) left_early = r;
        ops[late] = group.comms[late]->start(args, nullptr, nullptr);
        int rounds = 0;
        for (int left = p; left > 0 && rounds < 1000; ++rounds) {
            left = 0;
            for (int r = 0; r < p; ++r) left += group.comms[r]->progress(ops[r]) ? 0 : 1;
        }
        REQUIRE(rounds < 1000);
        for (int r = 0; r < p; ++r) REQUIRE(group.comms[r]->release(ops[r]) == CHORUS_SUCCESS);
        INFO("rank " << left_early << " left before rank " << late << " entered");
        REQUIRE(left_early == -1);
    }
    // And through the checker (the API's argument check included).
    test::CollCase c;
    c.coll = Collective::Barrier;
    test::check_collective(group, c);
    if (p > 1)
        for (const char* ran : group.algorithms) REQUIRE(ran == algo);
}

}  // namespace

TEST_CASE("no rank leaves the barrier before the last one has entered it", "[loopback][barrier]") {
    for (int p : rank_counts()) {
        test::LoopbackGroup group(p, test::forced(Collective::Barrier, "dissemination"));
        check_no_early_leaver(group, "dissemination");
    }
    // The two-level barrier on emulated hosts (host labels by rank).
    const std::vector<std::vector<int>> layouts = {{0, 0, 1, 1},
                                                   {0, 0, 1, 2},
                                                   {0, 0, 0, 1},
                                                   {0, 1, 0, 1},
                                                   {2, 0, 1, 1, 0, 2, 0, 1, 2},
                                                   {0, 1, 1, 0, 1, 2, 2, 1},
                                                   {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3}};
    for (const auto& labels : layouts) {
        test::LoopbackGroup group(static_cast<int>(labels.size()), test::forced(Collective::Barrier, "two_level"),
                                  false, nullptr, nullptr, labels);
        INFO(group.comms[0]->hosts().describe());
        check_no_early_leaver(group, "two_level");
    }
}
