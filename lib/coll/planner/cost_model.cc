#include "coll/planner/cost_model.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "coll/planner/simulation.h"
#include "coll/planner/two_stage.h"

namespace chorus::coll {

std::string CostParams::describe() const {
    std::string out =
        cat("alpha ", alpha_us, " us (+", rendezvous_us, " us above ", eager_bytes, " bytes; ports busy ", overhead_us,
            " us a message), link ", bandwidth_gbs, " GB/s (", memory_gbs, " beyond ", cache_mib,
            " MiB buffers), reduce ", reduce_gbs, " GB/s, copy ", copy_gbs, " GB/s (", stream_gbs, " streamed)");
    if (all_local) out += cat("; shared memory: alpha ", local_alpha_us, " us, slots ", slot_us, " us");
    out += cat("; single copy ", get_gbs, " GB/s (+", get_us, " us a get; ", get_reduce_gbs, " GB/s reducing)");
    out += cat("; between hosts alpha ", net_alpha_us, " us, link ", net_gbs, " GB/s a host");
    if (net_rma_gbs > 0) out += cat(" (RMA ", net_rma_gbs, " GB/s)");
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

// Whether two steps depend on the same steps (in any order: the
// simulation takes dependencies as a set).
bool same_deps(const Schedule& s, const Schedule& sr, StepId i) {
    const uint32_t n = s.ndeps(i);
    if (n != sr.ndeps(i)) return false;
    if (std::equal(s.deps_of(i), s.deps_of(i) + n, sr.deps_of(i))) return true;
    std::vector<StepId> x(s.deps_of(i), s.deps_of(i) + n), y(sr.deps_of(i), sr.deps_of(i) + n);
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    return x == y;
}

// Whether `sr` (rank r's schedule) is `s` (rank r mod block's) relabelled
// by r's block, step by step.
bool is_image(const Schedule& s, const Schedule& sr, int k, const Relabelling& how) {
    if (s.num_steps() != sr.num_steps()) return false;
    for (StepId i = 0; i < s.num_steps(); ++i) {
        const Step &x = s.steps()[i], &y = sr.steps()[i];
        if (x.kind != y.kind || x.tag != y.tag || x.bytes != y.bytes || x.count != y.count || !same_deps(s, sr, i))
            return false;
        if ((x.peer < 0) != (y.peer < 0) || (x.peer >= 0 && y.peer != how.image(x.peer, k))) return false;
    }
    return true;
}

// The ranks `s` receives from, in the order of its first receive from each.
std::vector<int> senders_of(const Schedule& s) {
    std::vector<int> out;
    std::vector<char> seen(static_cast<size_t>(std::max(s.size(), 0)), 0);
    for (const Step& st : s.steps())
        if (st.kind == StepKind::Recv && !seen[static_cast<size_t>(st.peer)]) {
            seen[static_cast<size_t>(st.peer)] = 1;
            out.push_back(st.peer);
        }
    return out;
}

}  // namespace

namespace {

// Which schedules of an algorithm are simulated: its only one, or one of a
// two-stage algorithm's (two_stage.h).
enum class Stage { Only, Sizes, Data };

Prediction predict_stage(const Algorithm& algo, const CollArgs& args, const CostParams& params, Stage stage);

}  // namespace

size_t cache_footprint(const CollArgs& a) {
    const size_t bytes = a.message_bytes();
    if (a.coll == Collective::ReduceScatter) return bytes;
    if (a.coll == Collective::Allreduce) return 2 * bytes;  // the whole input, the whole result
    return a.per_rank(Side::Send) || a.per_rank(Side::Recv) ? bytes * static_cast<size_t>(a.size) : bytes;
}

bool beyond_caches(const CollArgs& a, const CostParams& params) {
    return static_cast<double>(cache_footprint(a)) >= params.cache_mib * (1 << 20);
}

Prediction predict(const Algorithm& algo, const CollArgs& args, const CostParams& params) {
    if (!algo.two_stage) return predict_stage(algo, args, params, Stage::Only);
    // The second stage starts once the first is done (on every rank, at
    // the latest: a bound the model takes as the time).
    const Prediction sizes = predict_stage(algo, args, params, Stage::Sizes);
    Prediction out = predict_stage(algo, args, params, Stage::Data);
    out.us += sizes.us;
    out.steps += sizes.steps;
    out.ranks = std::min(out.ranks, sizes.ranks);
    if (!sizes.exact()) out.mode = SimMode::Sampled;
    return out;
}

namespace {

Prediction predict_stage(const Algorithm& algo, const CollArgs& args, const CostParams& given, Stage stage) {
    const int p = args.size;
    CostParams params = given;
    if (args.mapped) {
        // Single-copy through mappings: no system call, a copy's rates.
        params.get_us = given.mapped_get_us;
        params.get_gbs = given.copy_gbs;
        params.get_reduce_gbs = given.reduce_gbs;
    }
    if (beyond_caches(args, given)) {
        params.bandwidth_gbs = std::min(given.bandwidth_gbs, given.memory_gbs);
        // Through the kernel (cross-memory attach), not through mappings:
        // those copy as any copy does.
        if (!args.mapped) params.get_gbs = std::min(given.get_gbs, given.memory_gbs);
    } else {
        params.stream_gbs = given.copy_gbs;  // in the caches, a copy is a copy
    }
    CollArgs a = args;
    // A two-level algorithm's phases are chosen by the model it is priced by.
    if (!a.cost) a.cost = &given;
    // Every rank's schedule comes from these counts: find the blocks with
    // elements once, not once a rank.
    if (a.coll == Collective::Allgatherv && !a.counts.empty() && !a.held)
        a.held = std::make_shared<const std::vector<int>>(find_held_blocks(a));
    auto build = [&](int r) {
        a.rank = r;
        if (stage == Stage::Sizes) return build_sizes_stage(a);
        // What the first stage brings each rank, from every rank's arguments.
        if (stage == Stage::Data) a.host_sizes = model_host_sizes(a);
        return algo.build(a);
    };
    Prediction out;
    const HostMap* hosts = params.hosts.get();
    // A broadcast's root in place: its copy to its own result is skipped.
    const bool send_is_recv = a.in_place && a.coll == Collective::Broadcast;
    // Symmetric: relabellings that keep the host map (any, where every pair
    // of ranks is of one class; whole hosts, where hosts are blocks of
    // consecutive ranks) take the first block's schedules to every other
    // block's. Checked against blocks 1, blocks/2 + 1 and the last.
    const int block = !hosts || hosts->flat() ? 1 : hosts->block();
    const size_t budget = std::min<size_t>(params.max_simulated_steps, size_t(1) << 31);
    // The schedules built for the check, kept for the simulation below
    // while their steps fit the budget (Shift and Xor take the first block
    // to the same ranks); rank 0's always.
    std::map<int, std::unique_ptr<Schedule>> kept;
    size_t kept_steps = 0;
    auto rank = [&](int r) -> const Schedule& {
        std::unique_ptr<Schedule>& s = kept[r];
        if (!s) {
            s = build(r);
            kept_steps += s->num_steps();
        }
        return *s;
    };
    auto trim = [&](int r) {
        if (kept_steps <= budget) return;
        kept_steps -= kept[r]->num_steps();
        kept.erase(r);
    };
    const size_t steps0 = rank(0).num_steps();
    if (params.use_symmetry && p > 1 && block > 0 && block < p && !rank(0).uses_slots()) {
        const int blocks = p / block;
        std::vector<int> sample;
        for (int k : {1, blocks / 2 + 1, blocks - 1})
            if (k > 0 && k < blocks && std::find(sample.begin(), sample.end(), k) == sample.end()) sample.push_back(k);
        for (auto how : {Relabelling::How::Shift, Relabelling::How::Xor}) {
            if (how == Relabelling::How::Xor && (blocks & (blocks - 1))) continue;
            const Relabelling r{how, block, p};
            // Rank 0 first: most schedules that are not images differ there.
            // The first block is simulated: rank 0 alone always, a block of
            // several ranks only while their steps fit the budget.
            bool images = true;
            for (int i = 0; i < block && images; ++i) {
                rank(i);
                images = block == 1 || kept_steps <= budget;
                for (size_t j = 0; j < sample.size() && images; ++j) {
                    const int q = r.image(i, sample[j]);
                    images = is_image(rank(i), rank(q), sample[j], r);
                    trim(q);
                }
            }
            if (!images) continue;
            SimGroup g(p, args.dtype, hosts);
            for (int i = 0; i < block; ++i) g.add(i, rank(i), send_is_recv);
            if (!g.pair_images(r)) continue;
            kept.clear();
            out.mode = SimMode::Symmetric;
            out.ranks = block;
            out.steps = g.steps();
            out.us = g.simulate(params, SimGroup::Outside::Mirror);
            return out;
        }
    }

    // Every rank while the budget lasts; the ranks a simulated rank receives
    // from are taken with it (depth first), starting from rank 0 and evenly
    // spaced ranks, then the rest in order.
    SimGroup g(p, args.dtype, hosts);
    g.reserve(std::min<size_t>(budget, static_cast<size_t>(p) * steps0 + 1024));
    // Each rank's schedule, once: those built above, or built now.
    auto built = [&](int r) {
        auto it = kept.find(r);
        if (it == kept.end()) return build(r);
        std::unique_ptr<Schedule> s = std::move(it->second);
        kept.erase(it);
        return s;
    };
    bool room = true;
    auto take = [&](int r, std::unique_ptr<Schedule> s, std::vector<int>* stack) {
        if (g.ranks() > 0 && g.steps() + s->num_steps() > budget) return room = false;
        g.add(r, *s, send_is_recv);
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
            if (!g.has(r)) take(r, built(r), &stack);
        }
    }
    for (int r = 0; r < p && room; ++r)
        if (!g.has(r)) take(r, built(r), nullptr);
    out.mode = g.ranks() == p ? SimMode::Full : SimMode::Sampled;
    out.ranks = g.ranks();
    out.steps = g.steps();
    out.us = g.simulate(params, SimGroup::Outside::Lockstep);
    return out;
}

}  // namespace

}  // namespace chorus::coll
