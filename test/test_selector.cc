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

TEST_CASE("ranks that share memory take the flat shared-memory algorithms for small messages only",
          "[unit][selector]") {
    CostParams params;
    params.all_local = true;
    Selector sel{params};
    for (int c = 0; c < kNumCollectives; ++c) {
        for (int p : {2, 4}) {
            CollArgs small = args_for(Collective(c), p, 64);
            small.slot_bytes = 16368;
            CollArgs large = args_for(Collective(c), p, size_t(4) << 20);
            large.slot_bytes = 16368;
            INFO(collective_name(Collective(c)) << " p=" << p);
            bool has_flat = false;
            for (const Algorithm& alg : algorithms_for(Collective(c))) has_flat |= alg.name == std::string("shm_flat");
            if (!has_flat) continue;
            REQUIRE(sel.choose(small).algorithm->name == std::string("shm_flat"));
            REQUIRE(sel.choose(large).algorithm->name != std::string("shm_flat"));
        }
    }
    // Without shared slots the flat algorithms are never candidates.
    Selector remote{CostParams{}};
    CollArgs a = args_for(Collective::Allreduce, 2, 64);
    for (const auto& [alg, t] : remote.choose(a).predictions) REQUIRE(alg->name != std::string("shm_flat"));
}
