#include "core/schedule_cache.h"

#include "base/log.h"
#include "coll/planner/topology.h"
#include "coll/planner/two_stage.h"

namespace chorus {

namespace {
constexpr size_t kMaxCachedSchedules = 256;

bool same_shape(const coll::CollArgs& a, const coll::CollArgs& b) {
    return a.coll == b.coll && a.count == b.count && a.dtype == b.dtype && a.op == b.op && a.root == b.root &&
           a.in_place == b.in_place && a.mapped == b.mapped && a.counts == b.counts && a.displs == b.displs &&
           a.send_counts == b.send_counts && a.send_displs == b.send_displs && a.host_sizes == b.host_sizes;
}
}  // namespace

ScheduleCache::ScheduleCache(const Config& config, const coll::CostParams& cost, bool log_choices)
    : selector_(cost), log_choices_(log_choices) {
    for (int c = 0; c < coll::kNumCollectives; ++c) {
        auto coll = static_cast<coll::Collective>(c);
        std::string name = config.forced_algo(coll::collective_name(coll));
        forced_.push_back(name.empty() ? nullptr : &coll::find_algorithm(coll, name));
    }
}

size_t ScheduleCache::KeyHash::operator()(const Key& k) const {
    uint64_t h = reinterpret_cast<uintptr_t>(k.algo);
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
    mix(k.count);
    mix(static_cast<uint64_t>(k.dtype) << 32 | static_cast<uint32_t>(k.op));
    mix(static_cast<uint64_t>(k.root) << 1 | static_cast<uint64_t>(k.in_place));
    mix(static_cast<uint64_t>(k.stage));
    for (const auto* v : {&k.counts, &k.displs, &k.send_counts, &k.send_displs, &k.host_sizes}) {
        mix(v->size());
        for (size_t c : *v) mix(c);
    }
    return static_cast<size_t>(h);
}

const coll::Algorithm& ScheduleCache::choose(const coll::CollArgs& args) {
    // A forced algorithm that cannot take these arguments (a flat one whose
    // message does not fit a slot, a two-level one on a single level, say)
    // leaves the choice to the selector. CHORUS_LOG=info says which, once.
    const size_t ci = static_cast<size_t>(args.coll);
    if (const coll::Algorithm* forced = forced_[ci]) {
        const bool takes = !forced->supports || forced->supports(args);
        const uint8_t bit = takes ? 1 : 2;
        if (log_choices_ && !(forced_logged_[ci] & bit) && log_level() >= LogLevel::Info) {
            forced_logged_[ci] |= bit;
            if (takes)
                log(LogLevel::Info, args.rank, coll::collective_name(args.coll), ": ", forced->name, " (CHORUS_ALGO)");
            else
                log(LogLevel::Info, args.rank, coll::collective_name(args.coll), ": CHORUS_ALGO's ", forced->name,
                    " does not take these arguments (",
                    args.hosts ? args.hosts->describe() : cat(args.size, " ranks on one host"),
                    "); the cost model chooses");
        }
        if (takes) return *forced;
    }
    // Nothing to choose (and the v forms' sizes need not agree across ranks).
    const auto& algos = coll::algorithms_for(args.coll);
    if (algos.size() == 1) return algos.front();
    bool fresh = false;
    const coll::Choice& c = selector_.choose(args, &fresh);
    if (fresh && log_choices_ && log_level() >= LogLevel::Info) {
        std::string line;
        for (const auto& [algo, us] : c.predictions) line += cat(" ", algo->name, "=", us, "us");
        if (coll::Selector::sizes_agreed(args.coll))
            log(LogLevel::Info, args.rank, coll::collective_name(args.coll), " of ~", c.model_bytes, " bytes on ",
                args.size, " ranks: ", c.algorithm->name, " (predicted:", line, ")");
        else
            log(LogLevel::Info, args.rank, coll::collective_name(args.coll), " on ", args.size,
                " ranks, any size: ", c.algorithm->name, " (worst ratio to the best ", c.regret, "; predicted for ",
                c.model_bytes, "-byte blocks:", line, ")");
    }
    return *c.algorithm;
}

std::shared_ptr<const Schedule> ScheduleCache::schedule(const coll::CollArgs& a, const coll::Algorithm& algo,
                                                        bool second) {
    // Chunk size and depth are the communicator's, fixed for its life.
    const int stage = algo.two_stage ? (second ? 2 : 1) : 0;
    Key key{
        &algo,    a.count,  a.dtype,       a.op,          a.root, a.in_place ? 1 : 0,
        a.counts, a.displs, a.send_counts, a.send_displs, stage,  stage == 2 ? a.host_sizes : std::vector<size_t>()};
    auto it = schedules_.find(key);
    if (it != schedules_.end()) return it->second;
    // A two-level algorithm's phases are the cost model's choice too.
    coll::CollArgs b = a;
    b.cost = &selector_.params();
    std::shared_ptr<const Schedule> s = stage == 1 ? coll::build_sizes_stage(b) : algo.build(b);
    if (schedules_.size() >= kMaxCachedSchedules) schedules_.clear();
    schedules_.emplace(std::move(key), s);
    return s;
}

const Plan& ScheduleCache::plan(const coll::CollArgs& args) {
    // Repeated calls of one shape (the common case in a time-step loop)
    // skip the selector and the schedule cache.
    if (last_.schedule && same_shape(last_args_, args)) return last_;
    const coll::Algorithm& algo = choose(args);
    last_ = Plan{&algo, schedule(args, algo)};
    last_args_ = args;
    ++version_;
    return last_;
}

}  // namespace chorus
