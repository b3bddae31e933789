// Chooses an algorithm per (collective, size class, rank count) from the
// cost model. The choice depends only on arguments every rank agrees on and
// on the configuration, so every rank makes the same one.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "coll/algorithm.h"
#include "coll/cost_model.h"

namespace chorus::coll {

struct Choice {
    const Algorithm* algorithm = nullptr;
    // Every candidate with its predicted time, in registry order.
    std::vector<std::pair<const Algorithm*, double>> predictions;
    size_t model_bytes = 0;  // the size class's representative message size
};

class Selector {
public:
    explicit Selector(CostParams params) : params_(params) {}
    // The choice for these arguments; `fresh` is set when it was computed now
    // (not cached), so the caller can log it once.
    const Choice& choose(const CollArgs& args, bool* fresh = nullptr);
    const CostParams& params() const { return params_; }

    // The size class of a message: floor(log2(bytes)), and 0 for 0 bytes.
    static int size_class(size_t bytes);

private:
    CostParams params_;
    // (collective, ranks, size class, element size, AVG, all-gatherv's largest block class)
    std::map<std::tuple<int, int, int, size_t, int, int>, Choice> cache_;
};

}  // namespace chorus::coll
