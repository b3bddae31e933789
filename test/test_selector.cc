// The cost model and the selector: predictions come from simulating the
// schedules, choices are always supported algorithms, and the model's
// verdicts follow the textbook where the textbook is clear.
#include <catch2/catch.hpp>

#include "coll/cost_model.h"
#include "coll/selector.h"
#include "core/config.h"

using namespace chorus;
using namespace chorus::coll;

namespace {
CollArgs args_for(Collective c, int p, size_t bytes) {
    CollArgs a;
    a.coll = c;
    a.size = p;
    a.dtype = CHORUS_FLOAT32;
    size_t elems = bytes / 4;
    a.count = c == Collective::ReduceScatter ? elems / p : elems;
    return a;
}
}  // namespace

TEST_CASE("the selector returns a supported algorithm for every collective, size and rank count", "[unit][selector]") {
    Selector sel{CostParams{}};
    for (int c = 0; c < kNumCollectives; ++c)
        for (int p : {1, 2, 3, 5, 8, 13, 16, 31, 64, 100})
            for (size_t bytes :
                 {size_t(0), size_t(4), size_t(100), size_t(4096), size_t(65536), size_t(1) << 20, size_t(16) << 20}) {
                CollArgs a = args_for(Collective(c), p, bytes);
                const Choice& choice = sel.choose(a);
                REQUIRE(choice.algorithm != nullptr);
                REQUIRE(choice.algorithm->coll == Collective(c));
                // Every algorithm that supports the arguments is weighed.
                size_t supported = 0;
                for (const Algorithm& alg : algorithms_for(Collective(c)))
                    if (!alg.supports || alg.supports(a)) ++supported;
                REQUIRE(choice.predictions.size() == supported);
                // The chosen one really builds a schedule for these arguments.
                a.rank = p - 1;
                REQUIRE(choice.algorithm->build(a) != nullptr);
            }
}

TEST_CASE("the choice is cached per size class and the same for every rank", "[unit][selector]") {
    Selector sel{CostParams{}};
    CollArgs a = args_for(Collective::Allreduce, 8, 4096);
    bool fresh = false;
    const Choice* first = &sel.choose(a, &fresh);
    REQUIRE(fresh);
    a.rank = 5;
    a.count = 1500;  // 6000 bytes: same class as 4096
    REQUIRE(&sel.choose(a, &fresh) == first);
    REQUIRE_FALSE(fresh);
    REQUIRE(Selector::size_class(4096) == 12);
    REQUIRE(Selector::size_class(8191) == 12);
    REQUIRE(Selector::size_class(0) == 0);
}

TEST_CASE("predicted time grows with the message and the ring wins large all-reduces at few ranks",
          "[unit][costmodel]") {
    CostParams params;
    const Algorithm& ring = find_algorithm(Collective::Allreduce, "ring");
    const Algorithm& rd = find_algorithm(Collective::Allreduce, "recursive_doubling");
    double small = predict_us(ring, args_for(Collective::Allreduce, 4, 1024), params);
    double large = predict_us(ring, args_for(Collective::Allreduce, 4, 16 << 20), params);
    REQUIRE(small > 0);
    REQUIRE(large > small * 100);
    // 2(p-1)/p of the message on the wire against log2(p) full copies.
    REQUIRE(predict_us(ring, args_for(Collective::Allreduce, 8, 64 << 20), params) <
            predict_us(rd, args_for(Collective::Allreduce, 8, 64 << 20), params));
    // log2(p) latencies against 2(p-1).
    REQUIRE(predict_us(rd, args_for(Collective::Allreduce, 16, 8), params) <
            predict_us(ring, args_for(Collective::Allreduce, 16, 8), params));
}

TEST_CASE("the latency term counts the ring's 2(p-1) sequential steps", "[unit][costmodel]") {
    CostParams params;
    params.alpha_us = 10;
    params.bandwidth_gbs = 1e6;  // wire time negligible
    params.reduce_gbs = params.copy_gbs = 1e6;
    const Algorithm& ring = find_algorithm(Collective::Allreduce, "ring");
    for (int p : {2, 3, 8}) {
        CollArgs a = args_for(Collective::Allreduce, p, 4 * p);  // one element per block
        double t = predict_us(ring, a, params);
        REQUIRE(t == Approx(10.0 * 2 * (p - 1)).epsilon(0.01));
    }
}

TEST_CASE("cost settings are read from CHORUS_COST_*", "[unit][config]") {
    Config c = Config::from_strings({"CHORUS_COST_ALPHA_US=2.5", "CHORUS_COST_LINK_GBS=12"});
    REQUIRE(c.cost.alpha_us == 2.5);
    REQUIRE(c.cost.bandwidth_gbs == 12);
    REQUIRE_THROWS_AS(Config::from_strings({"CHORUS_COST_REDUCE_GBS=0"}), Error);
    REQUIRE_THROWS_AS(Config::from_strings({"CHORUS_COST_COPY_GBS=fast"}), Error);
}

TEST_CASE("the data-movement choices follow the textbook where it is clear", "[unit][costmodel]") {
    CostParams params;
    auto t = [&](Collective c, const char* algo, int p, size_t bytes) {
        return predict_us(find_algorithm(c, algo), args_for(c, p, bytes), params);
    };
    // log2(p) messages against p - 1, for tiny blocks at many ranks; the
    // minimum of bytes for large ones.
    REQUIRE(t(Collective::Alltoall, "bruck", 1024, 8) < t(Collective::Alltoall, "pairwise", 1024, 8));
    REQUIRE(t(Collective::Alltoall, "pairwise", 16, 8 << 20) < t(Collective::Alltoall, "bruck", 16, 8 << 20));
    REQUIRE(t(Collective::Gather, "binomial", 1024, 8) < t(Collective::Gather, "linear", 1024, 8));
    REQUIRE(t(Collective::Scatter, "binomial", 1024, 8) < t(Collective::Scatter, "linear", 1024, 8));
    // One block of everything: a broadcast tree for small, the ring's
    // pipelined chain for large.
    auto skewed = [&](const char* algo, int p, size_t bytes) {
        CollArgs a = args_for(Collective::Allgatherv, p, bytes);
        a.counts.assign(static_cast<size_t>(p), 0);
        a.counts[0] = a.count * static_cast<size_t>(p);
        a.displs.assign(static_cast<size_t>(p), a.counts[0]);
        a.displs[0] = 0;
        return predict_us(find_algorithm(Collective::Allgatherv, algo), a, params);
    };
    REQUIRE(skewed("bcast", 128, 64) < skewed("ring", 128, 64));
    REQUIRE(skewed("ring", 16, 8 << 20) < skewed("bcast", 16, 8 << 20));
}

TEST_CASE("a rank's messages share its ports: overhead per message, wire time per byte", "[unit][costmodel]") {
    CostParams params;
    params.alpha_us = 2;
    params.overhead_us = 0.5;
    params.bandwidth_gbs = 1e6;  // wire time negligible
    params.copy_gbs = 1e6;
    for (int p : {2, 5, 17}) {
        // The direct gather's root takes p - 1 messages one overhead apart
        // (its window holds all of them at once).
        CollArgs a = args_for(Collective::Gather, p, 4);
        double t = predict_us(find_algorithm(Collective::Gather, "linear"), a, params);
        REQUIRE(t == Approx(2.0 + 0.5 * (p - 2)).epsilon(0.01));
    }
    // The pairwise exchange keeps every link busy: (p - 1) blocks each way
    // per rank at the link's rate, whether its window holds one step (large
    // blocks) or many (small ones: the transfers every rank has ready at once
    // must pair up step by step, not leave ports idle).
    CostParams wire;
    for (int p : {4, 16})
        for (size_t bytes : {size_t(32) << 10, size_t(8) << 20}) {
            double t = predict_us(find_algorithm(Collective::Alltoall, "pairwise"),
                                  args_for(Collective::Alltoall, p, bytes), wire);
            const double link = static_cast<double>((p - 1) * bytes) / (wire.bandwidth_gbs * 1e3);
            INFO(p << " ranks, " << bytes << " bytes per peer");
            REQUIRE(t > link);
            REQUIRE(t < 1.05 * link + 10);
        }
}

TEST_CASE("ranks that share memory take the flat shared-memory algorithms for small messages only",
          "[unit][selector]") {
    CostParams params;
    params.all_local = true;
    Selector sel{params};
    for (int c = 0; c < kNumCollectives; ++c) {
        for (int p : {2, 4}) {
            INFO(collective_name(Collective(c)) << " p=" << p);
            bool has_flat = false;
            for (const Algorithm& alg : algorithms_for(Collective(c))) has_flat |= alg.name == std::string("shm_flat");
            if (!has_flat) continue;
            for (size_t bytes : {size_t(4) * p, size_t(64), size_t(1024)}) {  // reduce_scatter: 4 B a block
                CollArgs small = args_for(Collective(c), p, bytes);
                small.slot_bytes = 16368;
                INFO(bytes << " bytes");
                REQUIRE(fits_slot(small));
                REQUIRE(sel.choose(small).algorithm->name == std::string("shm_flat"));
            }
            if (Collective(c) == Collective::Barrier) continue;  // no message: always flat
            CollArgs large = args_for(Collective(c), p, size_t(4) << 20);
            large.slot_bytes = 16368;
            REQUIRE(sel.choose(large).algorithm->name != std::string("shm_flat"));
        }
    }
    // Without shared slots the flat algorithms are never candidates.
    Selector remote{CostParams{}};
    CollArgs a = args_for(Collective::Allreduce, 2, 64);
    for (const auto& [alg, t] : remote.choose(a).predictions) REQUIRE(alg->name != std::string("shm_flat"));
}
