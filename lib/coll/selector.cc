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

namespace {

// Elements of the largest block of an all-gatherv (agreed by every rank).
size_t largest_block(const CollArgs& a) {
    size_t most = 0;
    for (int i = 0; i < a.size; ++i) most = std::max(most, a.block(Side::Recv, i).count);
    return most;
}

// The representative arguments of a size class: the block form, rooted at 0,
// at the class's lower bound. An all-gatherv's blocks are modelled by its
// mean (the class) and its largest block (`shape`, a size class too): one
// block of the largest size, the rest shared evenly by the other ranks.
CollArgs model_of(const CollArgs& args, int cls, int shape) {
    const size_t esize = datatype_size(args.dtype);
    CollArgs model = args;
    model.root = 0;
    model.rank = 0;
    model.in_place = false;
    model.counts.clear();
    model.displs.clear();
    model.send_counts.clear();
    model.send_displs.clear();
    auto lower_bound = [&](int c) { return (size_t(1) << std::min(c, kLargestModelledClass)) / esize; };
    const size_t elems = args.message_bytes() ? lower_bound(cls) : 0;
    model.count = args.coll == Collective::ReduceScatter ? elems / static_cast<size_t>(args.size) : elems;
    if (args.coll == Collective::Allgatherv && args.size > 1 && !args.counts.empty()) {
        const size_t total = elems * static_cast<size_t>(args.size);
        const size_t most = std::min(total, std::max(elems, lower_bound(shape)));
        const size_t rest = (total - most) / static_cast<size_t>(args.size - 1);
        model.counts.assign(static_cast<size_t>(args.size), rest);
        model.counts[0] = most;
        model.count = most;
        for (int i = 0; i < args.size; ++i) model.displs.push_back(i == 0 ? 0 : most + rest * (i - 1));
    }
    return model;
}

}  // namespace

const Choice& Selector::choose(const CollArgs& args, bool* fresh) {
    size_t esize = datatype_size(args.dtype);
    int cls = size_class(args.message_bytes());
    int shape =
        args.coll == Collective::Allgatherv && !args.counts.empty() ? size_class(largest_block(args) * esize) : 0;
    auto key =
        std::make_tuple(static_cast<int>(args.coll), args.size, cls, esize, args.op == CHORUS_AVG ? 1 : 0, shape);
    auto it = cache_.find(key);
    if (fresh) *fresh = it == cache_.end();
    if (it != cache_.end()) return it->second;

    CollArgs model = model_of(args, cls, shape);

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
