#include "coll/cost_model.h"

#include <algorithm>
#include <memory>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "coll/simulation.h"

namespace chorus::coll {

std::string CostParams::describe() const {
    std::string out = cat("alpha ", alpha_us, " us (+", rendezvous_us, " us above ", eager_bytes, " bytes), link ",
                          bandwidth_gbs, " GB/s, reduce ", reduce_gbs, " GB/s, copy ", copy_gbs, " GB/s");
    out += cat("; between hosts alpha ", net_alpha_us, " us, link ", net_gbs, " GB/s a host");
    if (hosts) out += cat("; ", hosts->describe());
    return out;
}

const char* sim_mode_name(SimMode m) {
    switch (m) {
        case SimMode::Symmetric: return "symmetric";
        case SimMode::Full: return "full";
        case SimMode::Sampled: return "sampled";
    }
    return "?";
}

namespace {

// A relabelling of the ranks that maps rank 0 to rank r.
enum class Relabel { Shift, Xor };

int image(Relabel how, int peer, int r, int p) {
    return how == Relabel::Shift ? static_cast<int>((static_cast<long>(peer) + r) % p) : peer ^ r;
}

// Whether rank 0's messages pair up as they must when every rank is an
// image of rank 0: its send with tag T to q is the image of q's send to 0,
// which rank 0 then receives from the image of 0 under the relabelling that
// takes q to 0 (p - q, or q), with the same tag and size; each tag once each
// way.
bool self_paired(const Schedule& s0, Relabel how, int p) {
    std::vector<std::tuple<uint32_t, int, size_t>> sends, recvs;
    for (const Step& st : s0.steps()) {
        if (st.kind == StepKind::Send)
            sends.emplace_back(st.tag, how == Relabel::Shift ? (p - st.peer) % p : st.peer, st.bytes);
        if (st.kind == StepKind::Recv) recvs.emplace_back(st.tag, st.peer, st.bytes);
    }
    if (sends.empty()) return false;
    std::sort(sends.begin(), sends.end());
    std::sort(recvs.begin(), recvs.end());
    auto same_tag = [](const auto& x, const auto& y) { return std::get<0>(x) == std::get<0>(y); };
    return sends == recvs && std::adjacent_find(sends.begin(), sends.end(), same_tag) == sends.end();
}

// Whether `sr` (rank r's schedule) is `s0` relabelled, step by step.
bool is_image(const Schedule& s0, const Schedule& sr, int r, Relabel how, int p) {
    if (s0.num_steps() != sr.num_steps()) return false;
    for (StepId k = 0; k < s0.num_steps(); ++k) {
        const Step &x = s0.steps()[k], &y = sr.steps()[k];
        if (x.kind != y.kind || x.tag != y.tag || x.bytes != y.bytes || x.count != y.count ||
            s0.ndeps(k) != sr.ndeps(k) || !std::equal(s0.deps_of(k), s0.deps_of(k) + s0.ndeps(k), sr.deps_of(k)))
            return false;
        if ((x.peer < 0) != (y.peer < 0) || (x.peer >= 0 && y.peer != image(how, x.peer, r, p))) return false;
    }
    return true;
}

// The ranks `s` receives from, in the order of its first receive from each.
std::vector<int> senders_of(const Schedule& s) {
    std::vector<int> out;
    for (const Step& st : s.steps())
        if (st.kind == StepKind::Recv && std::find(out.begin(), out.end(), st.peer) == out.end())
            out.push_back(st.peer);
    return out;
}

}  // namespace

Prediction predict(const Algorithm& algo, const CollArgs& args, const CostParams& params) {
    const int p = args.size;
    CollArgs a = args;
    auto build = [&](int r) {
        a.rank = r;
        return algo.build(a);
    };
    Prediction out;
    std::unique_ptr<Schedule> s0 = build(0);

    const HostMap* hosts = params.hosts.get();
    if (params.use_symmetry && p > 1 && !s0->uses_slots() && (!hosts || hosts->flat())) {
        std::vector<int> sample;
        for (int r : {1, p / 2 + 1, p - 1})
            if (r > 0 && r < p && std::find(sample.begin(), sample.end(), r) == sample.end()) sample.push_back(r);
        for (Relabel how : {Relabel::Shift, Relabel::Xor}) {
            if (how == Relabel::Xor && (p & (p - 1))) continue;
            if (!self_paired(*s0, how, p)) continue;
            bool images = true;
            for (size_t i = 0; i < sample.size() && images; ++i)
                images = is_image(*s0, *build(sample[i]), sample[i], how, p);
            if (!images) continue;
            SimGroup g(p, args.dtype, hosts);
            g.add(0, *s0);
            s0.reset();
            out.mode = SimMode::Symmetric;
            out.ranks = 1;
            out.steps = g.steps();
            out.us = g.simulate(params, SimGroup::Outside::Mirror);
            return out;
        }
    }

    // Every rank while the budget lasts; the ranks a simulated rank receives
    // from are taken with it (depth first), starting from rank 0 and evenly
    // spaced ranks, then the rest in order.
    const size_t budget = std::min<size_t>(params.max_simulated_steps, size_t(1) << 31);
    SimGroup g(p, args.dtype, hosts);
    g.reserve(std::min<size_t>(budget, static_cast<size_t>(p) * s0->num_steps() + 1024));
    bool room = true;
    auto take = [&](int r, std::unique_ptr<Schedule> s, std::vector<int>* stack) {
        if (g.ranks() > 0 && g.steps() + s->num_steps() > budget) return room = false;
        g.add(r, *s);
        if (stack) {
            std::vector<int> from = senders_of(*s);
            stack->insert(stack->end(), from.rbegin(), from.rend());
        }
        return true;
    };
    std::vector<int> seeds = {0};
    for (int k = 1; k < 16; ++k) seeds.push_back(static_cast<int>(static_cast<long>(k) * p / 16));
    seeds.push_back(p - 1);
    for (size_t i = 0; i < seeds.size() && room; ++i) {
        std::vector<int> stack = {seeds[i]};
        while (!stack.empty() && room) {
            const int r = stack.back();
            stack.pop_back();
            if (!g.has(r)) take(r, r == 0 && s0 ? std::move(s0) : build(r), &stack);
        }
    }
    for (int r = 0; r < p && room; ++r)
        if (!g.has(r)) take(r, build(r), nullptr);
    out.mode = g.ranks() == p ? SimMode::Full : SimMode::Sampled;
    out.ranks = g.ranks();
    out.steps = g.steps();
    out.us = g.simulate(params, SimGroup::Outside::Lockstep);
    return out;
}

}  // namespace chorus::coll
