// What the two-level algorithms (two_level_*.cc) share: when a host map calls
// for them, a rank's place in it and the groups their phases run among, the
// algorithm each phase runs, and blocks staged in the order a phase needs.
//
// Groups: a host's ranks (in rank order, so a rank's local index is its rank
// in the group); rail j, the ranks of local index j on every host, in host
// order (hosts are numbered by their lowest rank); the leaders, local index
// 0 of every host; or the representatives of a rooted collective: the root
// on its own host, the leader on the others.
#pragma once

#include <vector>

#include "coll/algorithm.h"
#include "coll/planner/compose.h"
#include "coll/planner/cost_model.h"
#include "coll/planner/topology.h"

namespace chorus::coll {

// Whether `a` carries a host map of several hosts that is not one rank per
// host (HostMap::flat): only then is there a second level.
bool two_level_applies(const CollArgs& a);
// And every host has the same number of ranks (the rails forms).
bool two_level_even(const CollArgs& a);

// The link class of a phase's group: a host's ranks, or one rank a host (a
// rail, the leaders, the representatives).
enum class PhaseLink { Host, Hosts };

// The algorithm a phase runs, from the phase's arguments and its group's
// link class only (so every rank of its group picks the same). With cost
// parameters (sa.cost), the cost model's choice (Selector::choose) among
// the algorithms that take the phase's arguments (no slots, no one-sided
// steps, no host map: never shm_flat, one_sided or a two-level one), for
// the group alone, priced by phase_params; cached process-wide, per
// parameters, link class and everything the choice depends on. Without
// them, fixed_phase_algorithm.
const Algorithm& phase_algorithm(const CollArgs& sa, PhaseLink link);
// The parameters a phase's group is priced with: inside a host, one host;
// one rank a host, every pair of its `size` ranks between hosts.
constexpr size_t kPhaseBudgetShare = 16;  // of max_simulated_steps, a phase's
CostParams phase_params(const CostParams& p, PhaseLink link, int size);
// The fixed rule, by size: the latency-bound algorithm (recursive doubling,
// binomial trees: while the message times their ceil(log2 size) rounds is
// at most 2 kSmallPhaseBytes, as they move it whole each round; halving,
// Bruck, binomial gather and scatter: for at most kSmallPhaseBytes a rank,
// a reduce-scatter's whole input, an all-gather's block), beyond it the
// bandwidth-bound one (Rabenseifner at a power of two, else the ring;
// reduce-scatter + gather; scatter + all-gather; the ring reduce-scatter
// and all-gather; the direct gather and scatter). All-gatherv runs the
// ring, gatherv and scatterv the direct ones, all-to-allv pairwise, a
// barrier dissemination.
constexpr size_t kSmallPhaseBytes = 64 * 1024;
const Algorithm& fixed_phase_algorithm(const CollArgs& sa);
// Build the algorithm of the phase for `group` (ranks of the composed
// schedule: its link class is theirs) and add it to `c` (Composer::add).
void run_phase(Composer& c, uint32_t tag_phase, const CollArgs& sa, const std::vector<int>& group, Place send,
               Place recv);

// This rank in the host map.
struct HostView {
    explicit HostView(const CollArgs& a);
    const HostMap& map;
    int host, local, hosts;
    const std::vector<int>& members() const { return map.members(host); }
    int local_size() const { return static_cast<int>(members().size()); }
    std::vector<int> rail(int j) const;
    // Every rank, rail by rail (hosts of one size).
    std::vector<int> by_rail() const;
    std::vector<int> leaders() const;
    // The root's host's representative is the root, the others' their leader.
    int rep(int h, int root) const;
    std::vector<int> reps(int root) const;
};

// Blocks laid out one after the other in a given order of the ranks: rank
// order[i]'s block of counts[order[i]] elements after those of order[0..i)
// (or where a layout of displacements puts them).
struct Staging {
    Staging(std::vector<int> order, const std::vector<size_t>& counts);
    // Blocks at given element offsets (an all-gatherv's displacements).
    Staging(std::vector<int> order, const std::vector<size_t>& counts, const std::vector<size_t>& at);
    size_t at(int rank) const { return at_[rank]; }
    size_t count(int rank) const { return counts_[rank]; }
    // Whether the order is rank order (every block where a packed buffer of
    // blocks in rank order has it).
    bool identity() const;
    std::vector<int> order;
    size_t total = 0;

private:
    std::vector<size_t> at_, counts_;
};
// Ranks by host, in local order within each (host 0's first).
std::vector<int> host_order(const HostMap& m);
// Rank order.
std::vector<int> rank_order(int size);

// Appends the copy of `bytes` from `src` to `dst`, joined to the last copy
// in `out` where both sides continue it.
void append_move(std::vector<Composer::Move>& out, Region dst, Region src, size_t bytes);

// The copies that move every block but rank `skip`'s from layout `from`
// (elements from `src`) to layout `to` (from `dst`), a run of blocks
// adjacent in both one copy.
std::vector<Composer::Move> moves(const Staging& from, Region src, const Staging& to, Region dst, size_t esize,
                                  int skip = -1);

}  // namespace chorus::coll
