// The cost model and the selector: predictions come from simulating the
// schedules (rank 0 alone for symmetric ones, exactly; a sample within the
// budget), messages must match, choices are always supported algorithms and
// within 5% of the best prediction, and the model's verdicts follow the
// textbook where the textbook is clear.
#include <catch2/catch.hpp>

#include "coll/planner/cost_model.h"
#include "coll/planner/selector.h"
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
// Where sizes are agreed pair by pair only: the algorithm that applies
// whose worst ratio to the best prediction over the blocks of
// Selector::unagreed_blocks() is the smallest (the earlier one on a tie).
const Algorithm* least_worst(Selector& sel, const CollArgs& a) {
    const Algorithm* pick = nullptr;
    double pick_worst = 0;
    for (const Algorithm& alg : algorithms_for(a.coll)) {
        if (alg.supports && !alg.supports(a)) continue;
        double worst = 1;
        for (size_t block : Selector::unagreed_blocks(a)) {
            double best = 0;
            for (const auto& [other, pr] : sel.predictions(a, block))
                if (best == 0 || pr.us < best) best = pr.us;
            const Prediction* mine = sel.prediction(alg, a, block);
            REQUIRE(mine != nullptr);
            worst = std::max(worst, mine->us / best);
        }
        if (!pick || worst < pick_worst * (1 - 1e-9)) {
            pick = &alg;
            pick_worst = worst;
        }
    }
    return pick;
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
                if (!Selector::sizes_agreed(Collective(c))) REQUIRE(choice.algorithm == least_worst(sel, a));
                // The chosen one really builds a schedule for these arguments.
                a.rank = p - 1;
                REQUIRE(choice.algorithm->build(a) != nullptr);
            }
}

TEST_CASE("the irregular forms are predicted at four block sizes, each at most 16 pipeline chunks",
          "[unit][selector]") {
    CollArgs a = args_for(Collective::Gatherv, 4, 64);
    REQUIRE(Selector::unagreed_blocks(a) == std::vector<size_t>{8, 512, 32768, 2097152});
    a.chunk_bytes = 64;
    REQUIRE(Selector::unagreed_blocks(a) == std::vector<size_t>{8, 512, 1024, 1024});
    a.dtype = CHORUS_FLOAT64;
    a.chunk_bytes = 1;  // 16 bytes: whole elements
    REQUIRE(Selector::unagreed_blocks(a) == std::vector<size_t>{8, 16, 16, 16});
    a.dtype = CHORUS_INT8;
    a.chunk_bytes = 0;  // never below the smallest
    REQUIRE(Selector::unagreed_blocks(a) == std::vector<size_t>{8, 8, 8, 8});
}

TEST_CASE("the choice is cached per size class and the same for every rank", "[unit][selector]") {
    Selector sel{CostParams{}};
    CollArgs a = args_for(Collective::Allreduce, 8, 4096);
    bool fresh = false;
    const Choice* first = &sel.choose(a, &fresh);
    REQUIRE(fresh);
    a.rank = 5;
    a.count = 1200;  // 4800 bytes: the class of 4096 (a quarter octave, up to 4864)
    REQUIRE(&sel.choose(a, &fresh) == first);
    REQUIRE_FALSE(fresh);
    a.count = 1300;  // 5200 bytes: the next class
    REQUIRE(&sel.choose(a, &fresh) != first);
    REQUIRE(fresh);
    REQUIRE(Selector::size_class(4096) == 12);
    REQUIRE(Selector::size_class(8191) == 12);
    REQUIRE(Selector::size_class(0) == 0);
    // Quarter octaves: 2^c times 1, 152/128, 181/128, 215/128.
    REQUIRE(Selector::quarter_class(4096) == 48);
    REQUIRE(Selector::class_floor(48) == 4096);
    REQUIRE(Selector::class_floor(49) == 4864);
    REQUIRE(Selector::class_floor(50) == 5792);
    REQUIRE(Selector::class_floor(51) == 6880);
    REQUIRE(Selector::class_floor(52) == 8192);
    REQUIRE(Selector::quarter_class(4863) == 48);
    REQUIRE(Selector::quarter_class(4864) == 49);
    REQUIRE(Selector::quarter_class(8191) == 51);
    for (size_t bytes :
         {size_t(1), size_t(7), size_t(100), size_t(65537), size_t(1) << 40, (size_t(1) << 40) + 12345}) {
        const size_t c = Selector::quarter_class(bytes);
        REQUIRE(Selector::class_floor(c) <= bytes);
        REQUIRE(Selector::class_floor(c + 1) > bytes);
    }
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
    // Buffers beyond the caches (cache_mib) move at the memory's rate.
    CostParams wire;
    for (bool cached : {true, false})
        for (int p : {4, 16})
            for (size_t bytes : {size_t(32) << 10, size_t(8) << 20}) {
                wire.cache_mib = cached ? 1e9 : 1;
                const double gbs = cached || bytes * p < (size_t(1) << 20) ? wire.bandwidth_gbs : wire.memory_gbs;
                double t = predict_us(find_algorithm(Collective::Alltoall, "pairwise"),
                                      args_for(Collective::Alltoall, p, bytes), wire);
                const double link = static_cast<double>((p - 1) * bytes) / (gbs * 1e3);
                INFO(p << " ranks, " << bytes << " bytes per peer, cached " << cached);
                REQUIRE(t > link);
                REQUIRE(t < 1.05 * link + 10);
            }
}

TEST_CASE("simulating rank 0 of symmetric schedules predicts what simulating every rank does",
          "[unit][costmodel][scale]") {
    CostParams every;
    every.use_symmetry = false;
    every.max_simulated_steps = size_t(1) << 30;
    CostParams shortcut = every;
    shortcut.use_symmetry = true;
    size_t symmetric = 0, cases = 0;
    for (int c = 0; c < kNumCollectives; ++c)
        for (const Algorithm& algo : algorithms_for(Collective(c)))
            for (int p : {2, 3, 4, 5, 8, 12, 16, 32})
                for (size_t bytes : {size_t(4), size_t(4) * p, size_t(12) * p + 4, size_t(4096) * p, size_t(1) << 20}) {
                    for (chorus_op_t op : {CHORUS_SUM, CHORUS_AVG}) {
                        CollArgs a = args_for(Collective(c), p, bytes);
                        a.op = op;
                        a.chunk_bytes = 1024;
                        a.depth = 4;
                        if (algo.supports && !algo.supports(a)) continue;  // the slots: one host's ranks only
                        CAPTURE(algo.name, collective_name(algo.coll), p, bytes, op);
                        Prediction full = predict(algo, a, every), fast = predict(algo, a, shortcut);
                        REQUIRE(full.mode == SimMode::Full);
                        REQUIRE(full.ranks == p);
                        REQUIRE(fast.us == full.us);  // the same arithmetic, not merely close
                        if (fast.mode == SimMode::Symmetric) {
                            ++symmetric;
                            REQUIRE(fast.ranks == 1);
                        }
                        ++cases;
                    }
                }
    // Rings, recursive doubling and Bruck at powers of two, and more.
    REQUIRE(symmetric > cases / 5);
    CollArgs ring = args_for(Collective::Allreduce, 16, 1 << 20);
    REQUIRE(predict(find_algorithm(Collective::Allreduce, "ring"), ring, shortcut).mode == SimMode::Symmetric);
    REQUIRE(predict(find_algorithm(Collective::Allreduce, "recursive_doubling"), ring, shortcut).mode ==
            SimMode::Symmetric);
    // A rooted tree is not.
    REQUIRE(predict(find_algorithm(Collective::Broadcast, "binomial"), ring, shortcut).mode == SimMode::Full);
}

TEST_CASE("past its budget the model simulates a sample of ranks that fits it", "[unit][costmodel]") {
    CostParams params;
    const Algorithm& tree = find_algorithm(Collective::Broadcast, "binomial");
    CollArgs a = args_for(Collective::Broadcast, 256, 64 << 20);  // 256 pieces a rank
    params.max_simulated_steps = 100000000;
    Prediction full = predict(tree, a, params);
    REQUIRE(full.mode == SimMode::Full);
    params.max_simulated_steps = full.steps / 4;
    Prediction part = predict(tree, a, params);
    REQUIRE(part.mode == SimMode::Sampled);
    REQUIRE_FALSE(part.exact());
    REQUIRE(part.steps <= params.max_simulated_steps);
    REQUIRE(part.ranks < 256);
    REQUIRE(part.ranks > 8);  // the ranks on the paths down to the sampled ones
    // The broadcast's ranks wait only for the ranks above them, which come
    // with them: the sample's prediction is the full one's, or a little
    // below where the last rank to finish was left out.
    REQUIRE(part.us <= full.us);
    REQUIRE(part.us >= 0.9 * full.us);
}

namespace {
// Rank 0 sends with tag 1; rank 1 expects tag 2.
std::unique_ptr<Schedule> mismatched(const CollArgs& a) {
    auto s = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    if (a.rank == 0) s->send(1, 1, {Buf::Send, 0}, 4);
    if (a.rank == 1) s->recv(0, 2, {Buf::Recv, 0}, 4);
    s->finalize();
    return s;
}
// Rank 0 awaits rank 1's slot, which rank 1 never publishes.
std::unique_ptr<Schedule> unpublished(const CollArgs& a) {
    auto s = std::make_unique<Schedule>(a.dtype, a.op, a.rank, a.size);
    if (a.rank == 0) s->copy(Region(Buf::Recv, 0), Region::slot(1, 0), 4, {s->await(1)});
    s->finalize();
    return s;
}
}  // namespace

TEST_CASE("the model refuses schedules whose messages do not match", "[unit][costmodel]") {
    const Algorithm broken{Collective::Broadcast, "mismatched", mismatched, nullptr};
    CollArgs a = args_for(Collective::Broadcast, 2, 4);
    REQUIRE_THROWS_WITH(predict(broken, a, CostParams{}), Catch::Contains("no such message"));
    const Algorithm never{Collective::Broadcast, "unpublished", unpublished, nullptr};
    REQUIRE_THROWS_WITH(predict(never, a, CostParams{}), Catch::Contains("publishes none"));
}

TEST_CASE("a publish costs a copy and an await ends the slot's latency after the peer's publish", "[unit][costmodel]") {
    CostParams params;
    params.all_local = true;
    const double copy_us = 4096 / (params.copy_gbs * 1e3), reduce_us = 4096 / (params.reduce_gbs * 1e3);
    // Every rank publishes, awaits the three others, and reduces four slots
    // in rank order (three reductions) once the slots are there.
    CollArgs a = args_for(Collective::Allreduce, 4, 4096);
    a.slot_bytes = 16368;
    Prediction all = predict(find_algorithm(Collective::Allreduce, "shm_flat"), a, params);
    REQUIRE(all.mode == SimMode::Full);
    REQUIRE(all.us == Approx(copy_us + params.slot_us + 3 * reduce_us));
    // The root publishes; the others wait for its slot, then copy out of it.
    a = args_for(Collective::Broadcast, 16, 4096);
    a.slot_bytes = 16368;
    const Algorithm& bcast = find_algorithm(Collective::Broadcast, "shm_flat");
    Prediction full = predict(bcast, a, params);
    REQUIRE(full.mode == SimMode::Full);
    REQUIRE(full.us == Approx(copy_us + params.slot_us + copy_us));
    // A sample of the ranks: each waits for the root, which is in it.
    params.max_simulated_steps = full.steps / 3;
    Prediction part = predict(bcast, a, params);
    REQUIRE(part.mode == SimMode::Sampled);
    REQUIRE(part.us == full.us);
    // The ranks left out of a reduce publish when the root does.
    a = args_for(Collective::Reduce, 16, 4096);
    a.slot_bytes = 16368;
    const Algorithm& reduce = find_algorithm(Collective::Reduce, "shm_flat");
    params.max_simulated_steps = size_t(1) << 20;
    full = predict(reduce, a, params);
    params.max_simulated_steps = full.steps / 2;
    part = predict(reduce, a, params);
    REQUIRE(part.mode == SimMode::Sampled);
    REQUIRE(part.us == Approx(full.us));
}

TEST_CASE("the selector's choice is within 5% of the best prediction across sizes and rank counts",
          "[unit][selector][scale]") {
    Selector sel{CostParams{}};
    size_t points = 0;
    for (int c = 0; c < kNumCollectives; ++c)
        for (int p : {2, 3, 16, 100, 1024})
            for (size_t bytes = 8; bytes <= (size_t(256) << 20); bytes *= 16) {
                CollArgs a = args_for(Collective(c), p, bytes);
                if (a.message_bytes() != bytes) continue;  // a reduce-scatter block rounded
                const Choice& choice = sel.choose(a);
                double best = 0, chosen = 0;
                for (const auto& [algo, pr] : sel.predictions(a, bytes)) {
                    if (best == 0 || pr.us < best) best = pr.us;
                    if (algo == choice.algorithm) chosen = pr.us;
                }
                CAPTURE(collective_name(Collective(c)), p, bytes, choice.algorithm->name, chosen, best);
                REQUIRE(chosen <= best * 1.05);
                ++points;
            }
    REQUIRE(points > 150);
}

TEST_CASE("the irregular forms choose alike on every rank, whatever each rank's own counts", "[unit][selector]") {
    for (Collective c : {Collective::Gatherv, Collective::Scatterv, Collective::Alltoallv})
        for (size_t slot : {size_t(0), size_t(16368)}) {
            const Algorithm* chosen = nullptr;
            for (int r = 0; r < 4; ++r) {
                Selector sel{CostParams{}};                                             // each rank's own
                CollArgs a = args_for(c, 4, r == 2 ? size_t(8) << 20 : 8 * size_t(r));  // one rank's block is large
                a.rank = r;
                a.slot_bytes = slot;
                const Algorithm* mine = sel.choose(a).algorithm;
                if (!chosen) chosen = mine;
                CAPTURE(collective_name(c), slot, r);
                REQUIRE(mine == chosen);
            }
            REQUIRE(chosen->name == std::string(slot                         ? "shm_flat"
                                                : c == Collective::Alltoallv ? "pairwise"
                                                                             : "linear"));
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
            // The irregular forms' flat algorithm sends large blocks as messages itself.
            REQUIRE((sel.choose(large).algorithm->name != std::string("shm_flat")) ==
                    Selector::sizes_agreed(Collective(c)));
        }
    }
    // Without shared slots the flat algorithms are never candidates.
    Selector remote{CostParams{}};
    CollArgs a = args_for(Collective::Allreduce, 2, 64);
    for (const auto& [alg, t] : remote.choose(a).predictions) REQUIRE(alg->name != std::string("shm_flat"));
}

TEST_CASE("two ranks of one host choose as measured there: the slots to 4 KiB, the ring for large all-reduces",
          "[unit][selector]") {
    // The defaults were measured at np=2 (README, "One-sided steps" and
    // "Small messages"): the one-sided all-reduce and reduce lose to the
    // messages at every size, the one-sided broadcast wins from 256 KiB to
    // 16 MiB, and the slots win wherever they fit up to 4 KiB, the all-gather
    // included (Bruck's single exchange through the rings copies twice).
    CostParams params;
    params.all_local = true;
    Selector sel{params};
    auto choice = [&](Collective c, size_t bytes) {
        CollArgs a = args_for(c, 2, bytes);
        a.slot_bytes = 16368;
        a.one_sided = true;
        return std::string(sel.choose(a).algorithm->name);
    };
    for (size_t bytes = 32 << 10; bytes <= (size_t(64) << 20); bytes *= 4) {
        INFO(bytes << " bytes");
        CHECK(choice(Collective::Allreduce, bytes) != "one_sided");
        CHECK(choice(Collective::Reduce, bytes) != "one_sided");
    }
    // The broadcast: the slots' pipeline at every size beyond a slot
    // (measured: 1.3-3.4x the one-sided one at 16-64 KiB; from 256 KiB to
    // 16 MiB 0.78-1.29x warm and 1.13-2.05x cold), which the cost model
    // prices behind the one-sided one.
    for (size_t bytes :
         {size_t(16) << 10, size_t(64) << 10, size_t(128) << 10, size_t(256) << 10, size_t(1) << 20, size_t(16) << 20})
        CHECK(choice(Collective::Broadcast, bytes) == "shm_pipeline");
    // The gather and the scatter: the root's one peer's block is one
    // message, read with the same one copy as a one-sided step's
    // (cross-memory attach), so not one-sided (measured at 256 KiB-16 MiB:
    // the one-sided gather 0.87-1.01x MPI warm and 0.82-0.93x cold, the
    // binomial one, its root's copy behind its read, 0.99-1.04x and
    // 0.83-0.99x).
    for (size_t bytes : {size_t(16) << 10, size_t(1) << 20, size_t(4) << 20, size_t(16) << 20}) {
        CHECK(choice(Collective::Gather, bytes) != "one_sided");
        CHECK(choice(Collective::Scatter, bytes) != "one_sided");
    }
    // With more readers, the pipeline to 128 KiB and the one-sided
    // broadcast from 256 KiB until the buffers exceed the caches.
    for (int p : {3, 4}) {
        auto wider = [&](size_t bytes) {
            CollArgs a = args_for(Collective::Broadcast, p, bytes);
            a.slot_bytes = 16368;
            a.one_sided = true;
            return std::string(sel.choose(a).algorithm->name);
        };
        INFO(p << " ranks");
        for (size_t bytes : {size_t(16) << 10, size_t(128) << 10}) CHECK(wider(bytes) == "shm_pipeline");
        // The scatter's readers all read at once (measured from 128 KiB to
        // 4 MiB: 1.1-2.0x the binomial scatter at np=4, 0.9-1.3x at np=3).
        CollArgs sc = args_for(Collective::Scatter, p, size_t(1) << 20);
        sc.slot_bytes = 16368;
        sc.one_sided = true;
        CHECK(sel.choose(sc).algorithm->name == std::string("one_sided"));
        for (size_t bytes : {size_t(256) << 10, size_t(1) << 20, size_t(16) << 20}) CHECK(wider(bytes) == "one_sided");
    }
    for (Collective c :
         {Collective::Allgather, Collective::Allgatherv, Collective::Alltoall, Collective::Gather, Collective::Scatter})
        for (size_t bytes : {size_t(2048), size_t(c == Collective::Allgather ? 2048 : 4096)}) {
            INFO(collective_name(c) << " " << bytes << " bytes");
            CHECK(choice(c, bytes) == "shm_flat");
        }
}

TEST_CASE("a pipelined broadcast overlaps the root's copies into its slots with the others' copies out",
          "[unit][costmodel]") {
    CostParams params;
    params.all_local = true;
    const size_t chunk = 16320, chunks = 40;
    const double copy_us = double(chunk) / (params.copy_gbs * 1e3);
    CollArgs a = args_for(Collective::Broadcast, 2, chunk * chunks);
    a.slot_bytes = 16368;
    a.slot_line = 48;
    a.in_place = true;  // the root copies each chunk once, into its slot
    const Algorithm& pipeline = find_algorithm(Collective::Broadcast, "shm_pipeline");
    // Each chunk is copied out once the root has published it: every copy
    // but the last overlaps one of the root's.
    REQUIRE(predict(pipeline, a, params).us == Approx((chunks + 1) * copy_us + params.slot_us));
    // Out of place, the root also copies each chunk to its result.
    a.in_place = false;
    REQUIRE(predict(pipeline, a, params).us == Approx(2 * chunks * copy_us + params.slot_us));
}

TEST_CASE("beyond the caches a streamed copy goes at the streaming rate, within them at the copy rate",
          "[unit][costmodel]") {
    CostParams params;
    params.all_local = true;
    params.stream_gbs = 2 * params.copy_gbs;
    const size_t chunk = 16320;
    const Algorithm& pipeline = find_algorithm(Collective::Broadcast, "shm_pipeline");
    for (size_t chunks : {size_t(40), size_t(2100)}) {
        CollArgs a = args_for(Collective::Broadcast, 2, chunk * chunks);
        a.slot_bytes = 16368;
        a.slot_line = 48;
        a.in_place = true;
        // Every copy streams here (the root's into its slots; the other's
        // out of them, past 8 MiB): 2100 chunks are beyond 32 MiB.
        const bool beyond = chunk * chunks >= (size_t(32) << 20);
        INFO(chunks << " chunks");
        REQUIRE(beyond_caches(a, params) == beyond);
        const double copy_us = double(chunk) / ((beyond ? params.stream_gbs : params.copy_gbs) * 1e3);
        REQUIRE(predict(pipeline, a, params).us == Approx((chunks + 1) * copy_us + params.slot_us));
    }
}

TEST_CASE("ranks that share memory take the slots' pipelines where the buffers exceed the caches", "[unit][selector]") {
    CostParams params;
    params.all_local = true;
    Selector sel{params};
    // Measured at np=2 (64 MiB): all-reduce 15.8 ms against the ring's 21.6,
    // reduce 12.0 against 25.4, broadcast 8.4 against 16.3.
    for (Collective c : {Collective::Allreduce, Collective::Reduce, Collective::Broadcast})
        for (size_t mib : {size_t(32), size_t(64)}) {
            CollArgs a = args_for(c, 2, mib << 20);
            a.slot_bytes = 16368;
            a.slot_line = 48;
            INFO(collective_name(c) << " " << mib << " MiB");
            REQUIRE(sel.choose(a).algorithm->name == std::string("shm_pipeline"));
            // Below the caches' size, the message-passing algorithms, but
            // for the reduce, whose root folds straight into its result
            // there (measured at np=2, 1-16 MiB: 1.3-2.1x the speed of
            // reduce_scatter_gather), and the broadcast with one reader; with
            // two, the broadcast too takes the messages.
            for (size_t below : {size_t(1) << 20, size_t(8) << 20}) {
                a = args_for(c, 2, below);
                a.slot_bytes = 16368;
                a.slot_line = 48;
                INFO(below << " bytes");
                REQUIRE((sel.choose(a).algorithm->name == std::string("shm_pipeline")) ==
                        (c == Collective::Reduce || c == Collective::Broadcast));
                if (c != Collective::Broadcast) continue;
                a = args_for(c, 3, below);
                a.slot_bytes = 16368;
                a.slot_line = 48;
                REQUIRE(sel.choose(a).algorithm->name != std::string("shm_pipeline"));
            }
        }
    // The all-reduce from 16 MiB, whose input and result together exceed
    // the caches (measured at np=2, three alternating runs: 3.4 ms against
    // the ring's 4.4-4.6, warm and cold).
    for (size_t mib : {size_t(4), size_t(16)}) {
        CollArgs a = args_for(Collective::Allreduce, 2, mib << 20);
        a.slot_bytes = 16368;
        a.slot_line = 48;
        INFO("allreduce " << mib << " MiB");
        REQUIRE(beyond_caches(a, params) == (mib == 16));
        REQUIRE((sel.choose(a).algorithm->name == std::string("shm_pipeline")) == (mib == 16));
    }
    // The all-gather from 16 MiB a rank (32 MiB gathered), whose copies all
    // stream (measured at np=2, chorus-bench allgather, three alternating
    // runs: 1.07-1.40x MPI at 16-64 MiB, warm and cold, against 0.92-1.14x
    // for Bruck's); below, Bruck's (the pipeline 0.56-0.65x MPI at 2-4 MiB).
    for (size_t mib : {size_t(1), size_t(4), size_t(16), size_t(64)}) {
        CollArgs a = args_for(Collective::Allgather, 2, mib << 20);
        a.slot_bytes = 16368;
        a.slot_line = 48;
        INFO("allgather " << mib << " MiB a rank");
        REQUIRE((sel.choose(a).algorithm->name == std::string("shm_pipeline")) == (mib >= 16));
    }
}

TEST_CASE("a broadcast is priced in place, as MPI_Bcast runs", "[unit][selector]") {
    CostParams params;
    params.all_local = true;
    const Algorithm& os = find_algorithm(Collective::Broadcast, "one_sided");
    for (size_t bytes : {size_t(1) << 20, size_t(4) << 20, size_t(16) << 20}) {
        CollArgs a = args_for(Collective::Broadcast, 2, bytes);
        a.slot_bytes = 16368;
        a.slot_line = 48;
        a.one_sided = true;
        INFO(bytes << " bytes");
        // The root's copy to its own result, out of place, is one copy of
        // the message at the copy rate on the root, after its put (less
        // the descriptor's latency it overlaps).
        a.in_place = false;
        const double out_of_place = predict(os, a, params).us;
        a.in_place = true;
        const double in_place = predict(os, a, params).us;
        const double copy_us = static_cast<double>(bytes) / (params.copy_gbs * 1e3);
        REQUIRE(out_of_place - in_place == Approx(copy_us).margin(params.local_alpha_us));
        // The selector prices it in place whatever the caller passed: the
        // one-sided broadcast, where each rank copies (p - 1) / p of it
        // (measured at np=2, 1-16 MiB: 1.7-2x the speed of binomial and
        // scatter-allgather), with more than one reader (with one, the
        // slots' pipeline is taken instead).
        Selector sel{params};
        a = args_for(Collective::Broadcast, 3, bytes);
        a.slot_bytes = 16368;
        a.slot_line = 48;
        a.one_sided = true;
        a.in_place = false;
        REQUIRE(sel.choose(a).algorithm == &os);
        a.root = 1;
        a.rank = 1;
        REQUIRE(sel.choose(a).algorithm == &os);
    }
}
