#include "coll/selector.h"

#include <algorithm>
#include <limits>

#include "reduce/datatype.h"
#include "base/error.h"

namespace chorus::coll {

namespace {
// Past this size every algorithm is bandwidth-bound the way it is here:
// larger classes are modelled at this size.
constexpr int kLargestModelledClass = 26;  // 64 MiB
}  // namespace

int Selector::size_class(size_t bytes) {
    int c = 0;
    while (bytes > 1) {
        bytes >>= 1;
        ++c;
    }
    return c;
}

const Choice& Selector::choose(const CollArgs& args, bool* fresh) {
    size_t esize = datatype_size(args.dtype);
    int cls = size_class(args.message_bytes());
    auto key = std::make_tuple(static_cast<int>(args.coll), args.size, cls, esize, args.op == CHORUS_AVG ? 1 : 0);
    auto it = cache_.find(key);
    if (fresh) *fresh = it == cache_.end();
    if (it != cache_.end()) return it->second;

    // Model the class at its lower bound, in the block form, rooted at 0.
    CollArgs model = args;
    model.root = 0;
    model.rank = 0;
    model.in_place = false;
    model.counts.clear();
    size_t bytes = args.message_bytes() ? size_t(1) << std::min(cls, kLargestModelledClass) : 0;
    size_t elems = bytes / esize;
    model.count = args.coll == Collective::ReduceScatter ? elems / static_cast<size_t>(args.size) : elems;

    Choice choice;
    choice.model_bytes = model.message_bytes();
    double best = std::numeric_limits<double>::infinity();
    for (const Algorithm& a : algorithms_for(args.coll)) {
        if (a.supports && !a.supports(args)) continue;
        double t;
        try {
            t = predict_us(a, model, params_);
        } catch (const Error& e) {
            // An algorithm that declines these arguments is not a candidate.
            if (e.code() != CHORUS_ERR_UNSUPPORTED) throw;
            continue;
        }
        choice.predictions.emplace_back(&a, t);
        // Ties go to the earlier algorithm in the registry.
        if (t < best * (1 - 1e-9)) {
            best = t;
            choice.algorithm = &a;
        }
    }
    if (!choice.algorithm)
        fail(CHORUS_ERR_UNSUPPORTED, "no ", collective_name(args.coll), " algorithm supports these arguments");
    return cache_.emplace(key, std::move(choice)).first->second;
}

}  // namespace chorus::coll
