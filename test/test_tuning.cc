// The interposer's trials (lib/mpi/tuning.h): which way each trial goes,
// what is timed, and a decision every rank makes alike from the maxima.
#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "mpi/tuning.h"

using chorus_mpi::decide;
using chorus_mpi::Route;
using chorus_mpi::size_class;
using chorus_mpi::trial_plan;
using chorus_mpi::TrialPlan;
using chorus_mpi::TuneCell;
using chorus_mpi::Tuner;

namespace {

// Runs a cell's trials with calls that take `cost(mpi, i)` seconds (i: the
// trial's number), as a rank's loop of calls would; returns the cell.
TuneCell run_trials(const TrialPlan& plan, const std::function<double(bool, int)>& cost) {
    TuneCell c;
    double now = 100;
    for (int i = 0; i < plan.calls(); ++i) {
        now += cost(c.mpi_turn(plan), i);
        // Only the times timed() asks for are read; the others are garbage.
        const bool last = c.record(plan, c.timed(plan) ? now : -1e9);
        REQUIRE(last == (i == plan.calls() - 1));
    }
    return c;
}

}  // namespace

TEST_CASE("size classes are powers of two, and every rank's bytes give the same", "[unit]") {
    CHECK(size_class(0) == 0);
    CHECK(size_class(1) == 1);
    CHECK(size_class(4) == 3);
    CHECK(size_class(7) == 3);
    CHECK(size_class(8) == 4);
    CHECK(size_class(size_t{1} << 20) == 21);
    CHECK(size_class((size_t{1} << 20) - 1) == 20);
    CHECK(size_class(~size_t{0}) == chorus_mpi::kSizeClasses - 1);
    Tuner t(3);
    CHECK(&t.cell(1, 8) == &t.cell(1, 15));
    CHECK(&t.cell(1, 8) != &t.cell(1, 16));
    CHECK(&t.cell(1, 8) != &t.cell(2, 8));
}

TEST_CASE("trials alternate blocks of calls, Chorus first, and end after the plan's calls", "[unit]") {
    for (size_t bytes : {size_t{8}, size_t{128} << 10, size_t{64} << 20}) {
        CAPTURE(bytes);
        const TrialPlan plan = trial_plan(bytes);
        REQUIRE(plan.block >= 2);
        REQUIRE(plan.rounds >= 2);  // an untimed round, then at least one timed
        TuneCell c;
        for (int i = 0; i < plan.calls(); ++i) {
            CAPTURE(i);
            REQUIRE(c.mpi_turn(plan) == ((i / plan.block) % 2 == 1));
            REQUIRE(c.record(plan, i) == (i == plan.calls() - 1));
        }
    }
    // Larger messages try fewer calls.
    CHECK(trial_plan(size_t{64} << 20).calls() < trial_plan(4096).calls());
}

TEST_CASE("a trial block times its calls after the skipped ones; the untimed round and the switches do not count",
          "[unit]") {
    const TrialPlan plan = trial_plan(64);
    // Chorus 1 us a call, MPI 2 us; in the first round Chorus 1 ms a call
    // (warming up) and MPI 0.1 us (not yet what it will be); the first
    // `skip` calls of every block 50 us for Chorus (the switch: a peer still
    // working through MPI's calls) and 0.1 us for MPI (its root leaving
    // before the others have its messages).
    REQUIRE(plan.skip >= 1);
    REQUIRE(plan.skip < plan.block);
    const TuneCell c = run_trials(plan, [&](bool mpi, int i) {
        if (i < 2 * plan.block) return mpi ? 0.1e-6 : 1e-3;
        if (i % plan.block < plan.skip) return mpi ? 0.1e-6 : 50e-6;
        return mpi ? 2e-6 : 1e-6;
    });
    CHECK(c.typical(0) == Approx(1e-6));
    CHECK(c.typical(1) == Approx(2e-6));
    CHECK(decide(c.typical(0), c.typical(1)) == Route::Chorus);
}

TEST_CASE("each way takes the median of its blocks: one disturbed or one lucky block does not decide", "[unit]") {
    const TrialPlan plan = trial_plan(64);
    REQUIRE(plan.rounds == 4);  // three timed blocks each way
    // MPI's blocks: 3 us, disturbed 10 us, 3 us; Chorus's: 4 us, lucky 1 us,
    // 4 us. MPI is faster.
    const TuneCell c = run_trials(plan, [&](bool mpi, int i) {
        const int block = i / plan.block;  // 2..7 are timed, Chorus even
        if (mpi) return block == 5 ? 10e-6 : 3e-6;
        return block == 4 ? 1e-6 : 4e-6;
    });
    CHECK(c.typical(0) == Approx(4e-6));
    CHECK(c.typical(1) == Approx(3e-6));
    CHECK(decide(c.typical(0), c.typical(1)) == Route::Mpi);
    // Two blocks: their mean.
    const TrialPlan large = trial_plan(size_t{64} << 20);
    REQUIRE(large.rounds == 3);
    const TuneCell l = run_trials(large, [&](bool mpi, int i) {
        const int block = i / large.block;
        return mpi ? 1e-3 : (block == 2 ? 2e-3 : 4e-3);
    });
    CHECK(l.typical(0) == Approx(3e-3));
    CHECK(l.typical(1) == Approx(1e-3));
}

TEST_CASE("ranks that time differently decide alike from the maxima over the ranks", "[unit]") {
    const TrialPlan plan = trial_plan(4096);
    // Rank 0 finds Chorus faster, rank 1 MPI: on their own they would split
    // (and hang each other); from the maxima both take the same way.
    const TuneCell r0 = run_trials(plan, [](bool mpi, int) { return mpi ? 3e-6 : 2e-6; });
    const TuneCell r1 = run_trials(plan, [](bool mpi, int) { return mpi ? 3.5e-6 : 5e-6; });
    REQUIRE(decide(r0.typical(0), r0.typical(1)) != decide(r1.typical(0), r1.typical(1)));
    const double chorus = std::max(r0.typical(0), r1.typical(0)), mpi = std::max(r0.typical(1), r1.typical(1));
    CHECK(decide(chorus, mpi) == Route::Mpi);  // 5 us against 3.5 us
    // A tie goes through Chorus.
    CHECK(decide(2e-6, 2e-6) == Route::Chorus);
}
