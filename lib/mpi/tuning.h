// Which way a blocking collective goes under CHORUS_MPI_INTERCEPT=faster:
// through Chorus or to the MPI library underneath, whichever this
// communicator's ranks found faster for this collective and size class.
//
// Per communicator, collective and size class (0 bytes, then [2^(k-1), 2^k)
// bytes for k >= 1), the first calls are trials: `rounds` blocks of `block`
// calls each way, alternating, Chorus first. The first round (a block each
// way) warms both up and is not timed (the Chorus communicator's creation,
// its first calls of a size, MPI's first connection). The first `skip`
// calls of a block absorb the switch and are not timed: an MPI root may
// leave a block of small calls well before the others have its messages,
// and waits for them in its first calls of the next block. The rest of the
// block is timed as a whole, from the end of its skip-th call to the end of
// its last, as a loop of calls runs, so a rooted call's skew between ranks
// (a root that leaves early waits in its next call) counts the same way for
// both. Each rank keeps, per way, the median
// time per call over its blocks; after the last trial every rank takes the
// maxima over the ranks (one MPI_Allreduce on the communicator, at the same
// call on every rank) and every rank makes the same decision from them,
// which holds for the communicator's life.
//
// What decides the trial plan (the size class) and when the trials end (the
// count of calls in the class) is what MPI makes every rank agree on, so the
// ranks of a call always take the same way. The trials run in the program's
// own calls; nothing is timed once a class is decided.
//
// No MPI here: the arithmetic, tested on its own (test/test_tuning.cc).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace chorus_mpi {

enum class Route : uint8_t { Measure, Chorus, Mpi };

constexpr int kSizeClasses = 48;

inline int size_class(size_t bytes) {
    if (bytes == 0) return 0;
    const int k = 64 - __builtin_clzll(static_cast<unsigned long long>(bytes));
    return std::min(k, kSizeClasses - 1);
}

// The trials of a size class: `rounds` blocks of `block` calls each way,
// the first round untimed, and in every block the first `skip` calls.
// Fewer for large messages, whose calls are long.
struct TrialPlan {
    int block = 64, skip = 16, rounds = 4;
    int calls() const { return 2 * block * rounds; }
};

inline TrialPlan trial_plan(size_t bytes) {
    // Small calls in long blocks: only a loop long enough to fill MPI's
    // eager buffers shows what a call costs in a loop (at 8 KiB with pml
    // ucx, 16-call blocks took MPI's calls for 1.5-2x slower than they are).
    if (bytes < (size_t{64} << 10)) return {64, 16, 4};
    if (bytes < (size_t{1} << 20)) return {8, 2, 4};
    return {4, 1, 3};
}

constexpr int kMaxTimedBlocks = 3;  // rounds - 1, at most

struct TuneCell {
    Route route = Route::Measure;
    uint16_t calls = 0;      // trials made
    double block_start = 0;  // when the current block's skip-th call ended
    // Seconds per call of each timed block, per way: [0] Chorus, [1] MPI.
    double rate[2][kMaxTimedBlocks] = {};
    int blocks[2] = {0, 0};

    // Whether the next trial goes to MPI.
    bool mpi_turn(const TrialPlan& p) const { return (calls / p.block) % 2 == 1; }

    // Whether record() reads the time of the trial about to end (the ends of
    // a block's skipped calls and of its last): no clock read per call.
    bool timed(const TrialPlan& p) const {
        const int in_block = calls % p.block;
        return calls >= 2 * p.block && (in_block == p.skip - 1 || in_block == p.block - 1);
    }

    // The trial that mpi_turn() routed ended at `now` (seconds; read only
    // where timed() says). True when it was the last: then every rank
    // agrees on typical() and decides.
    bool record(const TrialPlan& p, double now) {
        if (calls < 2 * p.block) return ++calls == p.calls();  // the untimed round
        const int in_block = calls % p.block;
        const int way = mpi_turn(p) ? 1 : 0;
        if (in_block == p.skip - 1)
            block_start = now;
        else if (in_block == p.block - 1 && blocks[way] < kMaxTimedBlocks)
            rate[way][blocks[way]++] = (now - block_start) / (p.block - p.skip);
        ++calls;
        return calls == p.calls();
    }

    // A way's time per call: the median of its blocks (of two, the mean):
    // neither one disturbed block nor one lucky one decides.
    double typical(int way) const {
        static_assert(kMaxTimedBlocks == 3, "the median of up to three");
        const double* r = rate[way];
        switch (blocks[way]) {
            case 0: return std::numeric_limits<double>::infinity();
            case 1: return r[0];
            case 2: return 0.5 * (r[0] + r[1]);
            default: return std::max(std::min(r[0], r[1]), std::min(std::max(r[0], r[1]), r[2]));
        }
    }
};

// Seconds on a steady clock: the trials' clock.
inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The decision from the maxima over the ranks of each way's time per call:
// MPI only where it was faster.
inline Route decide(double chorus_s, double mpi_s) {
    return mpi_s < chorus_s ? Route::Mpi : Route::Chorus;
}

// The cells of one communicator: `fns` collectives by kSizeClasses.
class Tuner {
public:
    explicit Tuner(int fns) : cells_(static_cast<size_t>(fns) * kSizeClasses) {}
    TuneCell& cell(int fn, size_t bytes) { return cells_[static_cast<size_t>(fn) * kSizeClasses + size_class(bytes)]; }

private:
    std::vector<TuneCell> cells_;
};

}  // namespace chorus_mpi
