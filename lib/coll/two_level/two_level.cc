#include "coll/two_level/two_level.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "base/error.h"
#include "coll/planner/selector.h"
#include "coll/steps.h"
#include "reduce/datatype.h"

namespace chorus::coll {

bool two_level_applies(const CollArgs& a) {
    return a.hosts && a.hosts->ranks() == a.size && !a.hosts->flat();
}

bool two_level_even(const CollArgs& a) {
    if (!two_level_applies(a)) return false;
    const HostMap& m = *a.hosts;
    for (int h = 1; h < m.hosts(); ++h)
        if (m.members(h).size() != m.members(0).size()) return false;
    return true;
}

const Algorithm& fixed_phase_algorithm(const CollArgs& sa) {
    const size_t bytes = sa.message_bytes();
    const bool small = bytes <= kSmallPhaseBytes;
    // A butterfly or tree moves the whole message once a round.
    const bool few_rounds =
        bytes * std::max<uint32_t>(1, ceil_log2(static_cast<uint64_t>(sa.size))) <= 2 * kSmallPhaseBytes;
    const bool pow2 = (sa.size & (sa.size - 1)) == 0;
    const char* name = "ring";
    switch (sa.coll) {
        case Collective::Allreduce: name = few_rounds ? "recursive_doubling" : pow2 ? "rabenseifner" : "ring"; break;
        case Collective::ReduceScatter: name = small ? "halving" : "ring"; break;
        case Collective::Reduce: name = few_rounds ? "binomial" : "reduce_scatter_gather"; break;
        case Collective::Broadcast: name = few_rounds ? "binomial" : "scatter_allgather"; break;
        case Collective::Allgather: name = small ? "bruck" : "ring"; break;
        case Collective::Allgatherv: name = "ring"; break;
        case Collective::Gather: name = small ? "binomial" : "linear"; break;
        case Collective::Scatter: name = small ? "binomial" : "linear"; break;
        case Collective::Gatherv:
        case Collective::Scatterv: name = "linear"; break;
        case Collective::Alltoallv: name = "pairwise"; break;
        case Collective::Barrier: name = "dissemination"; break;
        default: fail(CHORUS_ERR_INTERNAL, "two-level: no phase algorithm for ", collective_name(sa.coll));
    }
    return find_algorithm(sa.coll, name);
}

namespace {

// Everything a phase's choice depends on: every cost parameter but the host
// map (the link class and the group's size stand for it), the link class,
// what the selector's choice depends on (Selector::choice_key), and the
// chunk size, window and tag bits the candidates are built with.
struct PhaseKey {
    std::vector<double> params;
    int link;
    Selector::Key choice;
    size_t chunk_bytes;
    int depth;
    uint32_t tag_bits;
    bool operator<(const PhaseKey& o) const {
        return std::tie(params, link, choice, chunk_bytes, depth, tag_bits) <
               std::tie(o.params, o.link, o.choice, o.chunk_bytes, o.depth, o.tag_bits);
    }
};

std::vector<double> numbers(const CostParams& p) {
    return {p.alpha_us,
            p.rendezvous_us,
            p.overhead_us,
            static_cast<double>(p.eager_bytes),
            p.bandwidth_gbs,
            p.net_alpha_us,
            p.net_gbs,
            p.reduce_gbs,
            p.copy_gbs,
            p.stream_gbs,
            p.all_local ? 1.0 : 0.0,
            p.local_alpha_us,
            p.slot_us,
            p.get_gbs,
            p.get_us,
            p.get_reduce_gbs,
            p.mapped_get_us,
            static_cast<double>(p.max_simulated_steps),
            p.use_symmetry ? 1.0 : 0.0};
}

// The phases' choices, shared by every communicator and every thread (the
// cost model's workers): a few per collective and size class.
struct PhaseChoices {
    std::mutex mu;
    std::map<PhaseKey, const Algorithm*> chosen;
};
PhaseChoices& phase_choices() {
    static PhaseChoices c;
    return c;
}

}  // namespace

CostParams phase_params(const CostParams& p, PhaseLink link, int size) {
    CostParams out = p;
    // A phase is one part of a prediction: a smaller simulation budget
    // (beyond it, a sample of the group's ranks) keeps the choice for a
    // group of thousands from costing as much as the whole prediction.
    out.max_simulated_steps = std::max<size_t>(1, p.max_simulated_steps / kPhaseBudgetShare);
    if (link == PhaseLink::Host) {
        out.hosts.reset();
        return out;
    }
    out.all_local = false;
    out.hosts = std::make_shared<const HostMap>(HostMap::from_layout(std::vector<int>(static_cast<size_t>(size), 1)));
    return out;
}

const Algorithm& phase_algorithm(const CollArgs& sa, PhaseLink link) {
    if (!sa.cost || sa.size <= 1) return fixed_phase_algorithm(sa);
    // Composer::phase_args leaves these off: the group shares no publish
    // slots, exposes no memory and has one link class.
    if (sa.hosts || sa.slot_bytes || sa.one_sided || sa.rma)
        fail(CHORUS_ERR_INTERNAL, "two-level: a phase with slots, one-sided steps or a host map");
    const PhaseKey key{numbers(*sa.cost), static_cast<int>(link), Selector::choice_key(sa), sa.chunk_bytes, sa.depth,
                       sa.tag_bits};
    PhaseChoices& cache = phase_choices();
    {
        std::lock_guard<std::mutex> lock(cache.mu);
        auto it = cache.chosen.find(key);
        if (it != cache.chosen.end()) return *it->second;
    }
    // Chosen outside the lock, so that other threads' phases go on; the
    // choice is a function of the key, so two threads that both make it
    // make the same.
    CollArgs m = sa;
    m.cost = nullptr;
    m.rank = 0;
    Selector selector(phase_params(*sa.cost, link, sa.size));
    const Algorithm* algo = selector.choose(m).algorithm;
    std::lock_guard<std::mutex> lock(cache.mu);
    return *cache.chosen.emplace(key, algo).first->second;
}

void run_phase(Composer& c, uint32_t tag_phase, const CollArgs& sa, const std::vector<int>& group, Place send,
               Place recv) {
    // Every group is a host's ranks or one rank a host.
    const HostMap* m = c.args().hosts;
    const PhaseLink link =
        m && group.size() > 1 && !m->same_host(group[0], group[1]) ? PhaseLink::Hosts : PhaseLink::Host;
    c.add(tag_phase, *phase_algorithm(sa, link).build(sa), sa, group, send, recv);
}

HostView::HostView(const CollArgs& a)
    : map(*a.hosts), host(map.host_of(a.rank)), local(map.local_index(a.rank)), hosts(map.hosts()) {}

std::vector<int> HostView::rail(int j) const {
    std::vector<int> out(static_cast<size_t>(hosts));
    for (int h = 0; h < hosts; ++h) out[h] = map.members(h).at(static_cast<size_t>(j));
    return out;
}

std::vector<int> HostView::by_rail() const {
    std::vector<int> out;
    for (int j = 0; j < local_size(); ++j) {
        const std::vector<int> r = rail(j);
        out.insert(out.end(), r.begin(), r.end());
    }
    return out;
}

std::vector<int> HostView::leaders() const {
    return rail(0);
}

int HostView::rep(int h, int root) const {
    return map.host_of(root) == h ? root : map.members(h)[0];
}

std::vector<int> HostView::reps(int root) const {
    std::vector<int> out(static_cast<size_t>(hosts));
    for (int h = 0; h < hosts; ++h) out[h] = rep(h, root);
    return out;
}

Staging::Staging(std::vector<int> order_, const std::vector<size_t>& counts)
    : order(std::move(order_)), at_(counts.size()), counts_(counts) {
    for (int r : order) {
        at_[r] = total;
        total += counts[r];
    }
}

Staging::Staging(std::vector<int> order_, const std::vector<size_t>& counts, const std::vector<size_t>& at)
    : order(std::move(order_)), at_(at), counts_(counts) {
    for (int r : order) total = std::max(total, at_[r] + counts_[r]);
}

bool Staging::identity() const {
    for (size_t i = 0; i < order.size(); ++i)
        if (order[i] != static_cast<int>(i)) return false;
    return true;
}

std::vector<int> host_order(const HostMap& m) {
    std::vector<int> out;
    for (int h = 0; h < m.hosts(); ++h) out.insert(out.end(), m.members(h).begin(), m.members(h).end());
    return out;
}

std::vector<int> rank_order(int size) {
    std::vector<int> out(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) out[r] = r;
    return out;
}

void append_move(std::vector<Composer::Move>& out, Region dst, Region src, size_t bytes) {
    if (!bytes) return;
    if (!out.empty()) {
        Composer::Move& last = out.back();
        if (last.src.buf == src.buf && last.dst.buf == dst.buf && last.src.offset + last.bytes == src.offset &&
            last.dst.offset + last.bytes == dst.offset) {
            last.bytes += bytes;
            return;
        }
    }
    out.push_back({dst, src, bytes});
}

std::vector<Composer::Move> moves(const Staging& from, Region src, const Staging& to, Region dst, size_t esize,
                                  int skip) {
    std::vector<Composer::Move> out;
    for (int q : to.order)
        if (q != skip)
            append_move(out, {dst.buf, dst.offset + to.at(q) * esize}, {src.buf, src.offset + from.at(q) * esize},
                        to.count(q) * esize);
    return out;
}

}  // namespace chorus::coll
