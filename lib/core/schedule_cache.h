// Which algorithm runs a call and the schedule it runs, computed once per
// shape: CHORUS_ALGO's forced choices, the selector's cached choices, the
// schedules built so far, and the last call's shape (a steady loop of one
// call skips the rest). Everything here depends only on arguments every rank
// agrees on and on the configuration.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "coll/algorithm.h"
#include "coll/planner/selector.h"
#include "core/config.h"
#include "exec/schedule.h"

namespace chorus {

struct Plan {
    const coll::Algorithm* algo = nullptr;
    std::shared_ptr<const Schedule> schedule;
};

class ScheduleCache {
public:
    // `log_choices`: print each fresh choice (CHORUS_LOG=info), on one rank.
    ScheduleCache(const Config& config, const coll::CostParams& cost, bool log_choices);

    // The plan for a call (args.rank, size, chunk_bytes and depth filled in).
    // Valid until the next call. A two-stage algorithm's schedule is its
    // first stage (coll/planner/two_stage.h).
    const Plan& plan(const coll::CollArgs& args);
    // Changes whenever plan() makes a new plan: a caller that kept a plan
    // for arguments that have not changed since may use it while this holds.
    uint64_t version() const { return version_; }
    // Drop the last plan and change the version (what calls agree on
    // before planning has changed: a window registered).
    void forget_last() {
        last_ = Plan{};
        ++version_;
    }
    // The schedule of a given algorithm for these arguments (a two-stage
    // one's first stage, or with `second` its second: args.host_sizes
    // filled on the gatherer).
    std::shared_ptr<const Schedule> schedule(const coll::CollArgs& args, const coll::Algorithm& algo,
                                             bool second = false);

private:
    const coll::Algorithm& choose(const coll::CollArgs& args);

    struct Key {
        const coll::Algorithm* algo;
        size_t count;
        int dtype, op, root, in_place;
        std::vector<size_t> counts, displs, send_counts, send_displs;
        int stage;  // 0: one stage; 1, 2: a two-stage algorithm's
        std::vector<size_t> host_sizes;
        bool operator==(const Key& o) const {
            return algo == o.algo && count == o.count && dtype == o.dtype && op == o.op && root == o.root &&
                   in_place == o.in_place && counts == o.counts && displs == o.displs && send_counts == o.send_counts &&
                   send_displs == o.send_displs && stage == o.stage && host_sizes == o.host_sizes;
        }
    };
    struct KeyHash {
        size_t operator()(const Key& k) const;
    };

    coll::Selector selector_;
    bool log_choices_;
    uint64_t version_ = 0;
    // CHORUS_ALGO, resolved once per collective (nullptr: choose).
    std::vector<const coll::Algorithm*> forced_;
    // Per collective: whether the forced algorithm was logged as taken (1)
    // and as declining a call (2).
    std::vector<uint8_t> forced_logged_ = std::vector<uint8_t>(coll::kNumCollectives, 0);
    std::unordered_map<Key, std::shared_ptr<const Schedule>, KeyHash> schedules_;
    // The last call's shape and plan.
    coll::CollArgs last_args_;
    Plan last_;
};

}  // namespace chorus
