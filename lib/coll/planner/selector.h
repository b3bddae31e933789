// Chooses an algorithm per (collective, size class, rank count) from the
// cost model. The choice depends only on arguments every rank agrees on and
// on the configuration, so every rank makes the same one.
//
// A size class is a quarter of an octave of message sizes: [2^c, 2^(c+1))
// bytes cut at 2^c times 152/128, 181/128 and 215/128 (2^(1/4), 2^(1/2),
// 2^(3/4), in integers so that every rank cuts alike). The candidates are
// the algorithms predicted within kNearBest of the best at the class's lower
// end. One candidate is the choice; between several, the one whose worse
// ratio to the best candidate, over the class's two ends, is the smallest
// (ties to the earlier algorithm in the registry). So at the lower end the
// choice is never more than kNearBest off the best prediction, and inside the
// class the two ends bound how far off it is wherever predictions are close
// to affine in the size (the ratio of two affine functions is monotone); a
// jump inside the class (a piece crossing the eager size, say) can escape.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "coll/algorithm.h"
#include "coll/planner/cost_model.h"

namespace chorus::coll {

// Every candidate with its prediction, in registry order (an algorithm that
// declines the arguments is left out).
using Predictions = std::vector<std::pair<const Algorithm*, Prediction>>;

struct Choice {
    const Algorithm* algorithm = nullptr;
    // Every candidate with its predicted time at the class's lower end, in
    // registry order.
    std::vector<std::pair<const Algorithm*, double>> predictions;
    size_t model_bytes = 0;  // the class's lower end
    // The chosen algorithm's worse ratio to the best prediction at the two
    // ends of the class (1 when it is the best at both).
    double regret = 1;
};

class Selector {
public:
    explicit Selector(CostParams params) : params_(params) {}
    // The choice for these arguments; `fresh` is set when it was computed now
    // (not cached), so the caller can log it once.
    const Choice& choose(const CollArgs& args, bool* fresh = nullptr);
    // Every candidate's prediction for a message of `bytes` in the block
    // form of args.coll (rooted at 0; reduce-scatter: at least one element a
    // block; an all-gatherv with counts: `bytes` its mean block, with one
    // block of its largest block's octave), cached per algorithm.
    Predictions predictions(const CollArgs& args, size_t bytes);
    // One algorithm's, or nullptr where it declines the arguments.
    const Prediction* prediction(const Algorithm& algo, const CollArgs& args, size_t bytes);
    const CostParams& params() const { return params_; }
    // Takes the predictions `other` made and this one did not; `other` must
    // have the same parameters (a tool predicting rows on several threads).
    void adopt_predictions(const Selector& other) {
        predicted_.insert(other.predicted_.begin(), other.predicted_.end());
    }

    // What a choice depends on besides the parameters (and the chunk size,
    // window and tag bits, fixed for a selector's life): (collective, ranks,
    // class or bytes, element size, AVG, slot room, all-gatherv's largest
    // block octave, whether every rank's buffers are mapped: Call::mapped).
    using Key = std::tuple<int, int, size_t, size_t, int, size_t, int, bool>;
    static Key choice_key(const CollArgs& args);

    // The octave of a message: floor(log2(bytes)), and 0 for 0 bytes.
    static int size_class(size_t bytes);
    // The quarter-octave class of a message, and its lower end.
    static size_t quarter_class(size_t bytes);
    // Whether every rank knows the sizes of the whole collective (false for
    // gatherv, scatterv and all-to-allv, whose counts agree pair by pair):
    // only then may the choice depend on them.
    static bool sizes_agreed(Collective c);
    static size_t class_floor(size_t cls);
    static constexpr double kNearBest = 1.02;
    // The block sizes (bytes per rank or per peer) at which the collectives
    // whose sizes are not agreed are predicted (choose_unagreed): these, in
    // whole elements, each at most kUnagreedPieces pipeline chunks (so that
    // a small CHORUS_CHUNK_BYTES does not make the choice cost thousands of
    // pieces a block).
    static constexpr size_t kUnagreedBlocks[4] = {8, 512, 32 * 1024, 2 * 1024 * 1024};
    static constexpr size_t kUnagreedPieces = 16;
    static std::vector<size_t> unagreed_blocks(const CollArgs& args);

private:
    void choose_unagreed(const CollArgs& args, Choice& choice);
    CostParams params_;
    std::map<Key, Choice> cache_;
    struct Cached {
        bool declined;
        Prediction prediction;
    };
    std::map<std::pair<Key, const Algorithm*>, Cached> predicted_;
};

}  // namespace chorus::coll
