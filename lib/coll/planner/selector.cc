#include "coll/planner/selector.h"

#include <algorithm>
#include <limits>

#include "base/error.h"
#include "reduce/datatype.h"

namespace chorus::coll {

int Selector::size_class(size_t bytes) {
    int c = 0;
    while (bytes > 1) {
        bytes >>= 1;
        ++c;
    }
    return c;
}

namespace {
// 2^(s/4) in 128ths, s = 0..3.
constexpr size_t kQuarter[4] = {128, 152, 181, 215};

// An all-gatherv's largest block, as an octave (agreed by every rank; 0 for
// every other collective and for the block form).
int shape_of(const CollArgs& a) {
    if (a.coll != Collective::Allgatherv || a.counts.empty()) return 0;
    size_t most = 0;
    for (int i = 0; i < a.size; ++i) most = std::max(most, a.block(Side::Recv, i).count);
    return Selector::size_class(most * datatype_size(a.dtype));
}

// The representative arguments of a message of `bytes`: the block form,
// rooted at 0. An all-gatherv's blocks are modelled by their mean (`bytes`)
// and its largest block (the octave `shape`, at its lower end): one block of
// the largest size, the rest shared evenly by the other ranks.
CollArgs model_of(const CollArgs& args, size_t bytes, int shape) {
    const size_t esize = datatype_size(args.dtype);
    const int avg = args.op == CHORUS_AVG ? 1 : 0;
    CollArgs model = args;
    model.op = avg ? CHORUS_AVG : CHORUS_SUM;
    model.root = 0;
    model.rank = 0;
    // A broadcast is priced in place, as MPI_Bcast always is: its root's
    // copy to its own result, when it passes two buffers, is one copy
    // whatever the algorithm, and the one-sided broadcast, whose root
    // copies as well, would otherwise be priced behind that copy.
    model.in_place = args.coll == Collective::Broadcast;
    model.counts.clear();
    model.displs.clear();
    model.send_counts.clear();
    model.send_displs.clear();
    model.held.reset();
    const size_t elems = bytes / esize;
    model.count = elems;
    // A reduce-scatter's blocks rounded up: the model's total is at least
    // `bytes`, in its size class as every message priced by it (rounded
    // down, the first class past a slot would price a total that fits one).
    if (args.coll == Collective::ReduceScatter)
        model.count = (elems + static_cast<size_t>(args.size) - 1) / static_cast<size_t>(args.size);
    if (args.coll == Collective::Allgatherv && args.size > 1 && !args.counts.empty()) {
        const size_t total = elems * static_cast<size_t>(args.size);
        const size_t most = std::min(total, std::max(elems, (size_t(1) << shape) / esize));
        const size_t rest = (total - most) / static_cast<size_t>(args.size - 1);
        model.counts.assign(static_cast<size_t>(args.size), rest);
        model.counts[0] = most;
        model.count = most;
        for (int i = 0; i < args.size; ++i) model.displs.push_back(i == 0 ? 0 : most + rest * (i - 1));
    }
    return model;
}

}  // namespace

size_t Selector::class_floor(size_t cls) {
    const size_t octave = cls / 4, q = cls % 4;
    if (octave >= 63) return size_t(1) << 63;
    const size_t base = size_t(1) << octave;
    return octave >= 7 ? (base >> 7) * kQuarter[q] : base * kQuarter[q] / 128;
}

size_t Selector::quarter_class(size_t bytes) {
    if (bytes == 0) return 0;
    size_t cls = static_cast<size_t>(size_class(bytes)) * 4;
    while (cls % 4 < 3 && class_floor(cls + 1) <= bytes) ++cls;
    return cls;
}

const Prediction* Selector::prediction(const Algorithm& algo, const CollArgs& args, size_t bytes) {
    const size_t esize = datatype_size(args.dtype);
    const int avg = args.op == CHORUS_AVG ? 1 : 0, shape = shape_of(args);
    auto key = std::make_pair(
        Key{static_cast<int>(args.coll), args.size, bytes, esize, avg, args.slot_bytes, shape, args.mapped}, &algo);
    auto it = predicted_.find(key);
    if (it == predicted_.end()) {
        const CollArgs model = model_of(args, bytes, shape);
        Cached c{true, {}};
        if (!algo.supports || algo.supports(model)) {
            try {
                c = {false, predict(algo, model, params_)};
            } catch (const Error& e) {
                // An algorithm that declines these arguments is not a candidate.
                if (e.code() != CHORUS_ERR_UNSUPPORTED) throw;
            }
        }
        it = predicted_.emplace(key, c).first;
    }
    return it->second.declined ? nullptr : &it->second.prediction;
}

Predictions Selector::predictions(const CollArgs& args, size_t bytes) {
    Predictions out;
    for (const Algorithm& a : algorithms_for(args.coll))
        if (const Prediction* p = prediction(a, args, bytes)) out.emplace_back(&a, *p);
    return out;
}

bool Selector::sizes_agreed(Collective c) {
    return c != Collective::Gatherv && c != Collective::Scatterv && c != Collective::Alltoallv;
}

Selector::Key Selector::choice_key(const CollArgs& args) {
    // Where only pairs of ranks agree on sizes, the choice cannot depend on
    // them.
    const size_t msg = sizes_agreed(args.coll) ? args.message_bytes() : 0;
    const int avg = args.op == CHORUS_AVG ? 1 : 0;
    return Key{static_cast<int>(args.coll),
               args.size,
               quarter_class(msg),
               datatype_size(args.dtype),
               avg,
               args.slot_bytes,
               shape_of(args),
               args.mapped};
}

std::vector<size_t> Selector::unagreed_blocks(const CollArgs& args) {
    const size_t esize = datatype_size(args.dtype);
    const size_t most = std::max(kUnagreedBlocks[0], kUnagreedPieces * args.chunk_bytes);
    std::vector<size_t> out;
    for (size_t block : kUnagreedBlocks) out.push_back(std::max(esize, std::min(block, most) / esize * esize));
    return out;
}

// Where ranks agree on no size, the choice rests on what they do agree on:
// the rank count, the hosts and the element type. Each candidate is predicted
// for equal blocks of every size of unagreed_blocks(), and the choice is the
// one whose worst ratio to the best prediction over them is the smallest
// (ties to the earlier algorithm in the registry).
void Selector::choose_unagreed(const CollArgs& args, Choice& choice) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::vector<const Algorithm*> candidates;
    CollArgs model = model_of(args, 0, 0);
    model.cost = &params_;
    for (const Algorithm& a : algorithms_for(args.coll))
        if ((!a.supports || a.supports(args)) && (!a.selectable || a.selectable(model))) candidates.push_back(&a);
    if (candidates.empty())
        fail(CHORUS_ERR_UNSUPPORTED, "no ", collective_name(args.coll), " algorithm supports these arguments");
    std::vector<double> worst(candidates.size(), 1);
    const std::vector<size_t> blocks = unagreed_blocks(args);
    bool first = true;
    for (size_t bytes : blocks) {
        std::vector<double> t;
        double best = kInf;
        for (const Algorithm* a : candidates) {
            const Prediction* p = prediction(*a, args, bytes);
            t.push_back(p ? p->us : kInf);
            best = std::min(best, t.back());
            if (first && p) choice.predictions.emplace_back(a, p->us);
        }
        first = false;
        for (size_t i = 0; i < candidates.size(); ++i)
            worst[i] = std::max(worst[i], t[i] <= best ? 1.0 : best > 0 ? t[i] / best : kInf);
    }
    size_t pick = 0;
    for (size_t i = 1; i < candidates.size(); ++i)
        if (worst[i] < worst[pick] * (1 - 1e-9)) pick = i;
    choice.algorithm = candidates[pick];
    choice.regret = worst[pick];
    choice.model_bytes = blocks[0];
}

const Choice& Selector::choose(const CollArgs& args, bool* fresh) {
    const Key key = choice_key(args);
    auto it = cache_.find(key);
    if (fresh) *fresh = it == cache_.end();
    if (it != cache_.end()) return it->second;
    // Where only pairs of ranks agree on sizes, by the layout alone.
    if (!sizes_agreed(args.coll)) {
        Choice choice;
        choose_unagreed(args, choice);
        return cache_.emplace(key, std::move(choice)).first->second;
    }

    // The class's two ends (one point for empty messages).
    const size_t msg = args.message_bytes();
    const size_t cls = std::get<2>(key);
    const size_t lo = msg ? class_floor(cls) : 0;
    const size_t hi = msg && cls / 4 < 62 ? class_floor(cls + 1) : lo;
    const Predictions at_lo = predictions(args, lo);
    auto ratio = [](double t, double best) {
        if (best > 0) return t / best;
        return t > 0 ? std::numeric_limits<double>::infinity() : 1.0;
    };
    double best_lo = std::numeric_limits<double>::infinity();
    CollArgs model = model_of(args, lo, std::get<6>(key));
    model.cost = &params_;
    auto selectable = [&](const Algorithm* a) { return !a->selectable || a->selectable(model); };
    for (const auto& [a, pr] : at_lo)
        if (selectable(a)) best_lo = std::min(best_lo, pr.us);
    Choice choice;
    choice.model_bytes = lo;
    std::vector<std::pair<const Algorithm*, double>> near;  // candidates, with their ratio at lo
    for (const auto& [a, pr] : at_lo) {
        choice.predictions.emplace_back(a, pr.us);
        if (selectable(a) && ratio(pr.us, best_lo) <= kNearBest) near.emplace_back(a, ratio(pr.us, best_lo));
    }
    if (near.size() == 1) {
        choice.algorithm = near[0].first;
        choice.regret = near[0].second;
    } else if (near.size() > 1) {
        // The upper end, for the candidates only (each against the best of
        // them there).
        double best_hi = std::numeric_limits<double>::infinity();
        std::vector<double> t_hi;
        for (const auto& [a, r] : near) {
            const Prediction* at_hi = prediction(*a, args, hi);
            t_hi.push_back(at_hi ? at_hi->us : std::numeric_limits<double>::infinity());
            best_hi = std::min(best_hi, t_hi.back());
        }
        choice.regret = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < near.size(); ++i) {
            const double r = std::max(near[i].second, ratio(t_hi[i], best_hi));
            // Ties go to the earlier algorithm in the registry.
            if (!choice.algorithm || r < choice.regret * (1 - 1e-9)) {
                choice.regret = r;
                choice.algorithm = near[i].first;
            }
        }
    }
    if (!choice.algorithm)
        fail(CHORUS_ERR_UNSUPPORTED, "no ", collective_name(args.coll), " algorithm supports these arguments");
    return cache_.emplace(key, std::move(choice)).first->second;
}

}  // namespace chorus::coll
