// The documented order of the two-level reductions (lib/coll/two_level_*.cc)
// for inputs that round (rounding.h): each phase combines in the documented
// order of the algorithm lib/coll/two_level/two_level.h's phase_algorithm picks for
// it (with the communicator's cost parameters), over its group in group rank order (a host's ranks; rail j, one rank a
// host in host order; the leaders or representatives), and AVG divides
// once at the end by the whole rank count.
#pragma once

#include <string>
#include <vector>

#include "coll/two_level/two_level.h"
#include "rounding.h"

namespace rounding {

using chorus::coll::Collective;
using chorus::coll::HostMap;

using chorus::coll::PhaseLink;

// What a phase's choice depends on besides its arguments: the cost model's
// parameters (null: the fixed rule), chunk size and window of the
// communicator that builds the two-level schedule.
struct PhaseContext {
    const chorus::coll::CostParams* cost = nullptr;
    size_t chunk_bytes = 256 * 1024;
    int depth = 16;
};

// The algorithm a phase of `c` among `size` ranks of link class `link` runs
// for a message of `count` elements (a reduce-scatter: `counts`).
inline std::string phase_algo(const PhaseContext& pc, PhaseLink link, Collective c, int size, chorus_datatype_t dt,
                              size_t count, const std::vector<size_t>& counts = {}) {
    chorus::coll::CollArgs a;
    a.coll = c;
    a.size = size;
    a.dtype = dt;
    a.count = count;
    a.counts = counts;
    a.cost = pc.cost;
    a.chunk_bytes = pc.chunk_bytes;
    a.depth = pc.depth;
    a.tag_bits = chorus::kStepTagBits - chorus::coll::kPhaseTagBits;
    return chorus::coll::phase_algorithm(a, link).name;
}

// Which of split(total, parts, .) holds element i.
inline int block_of(size_t total, int parts, size_t i) {
    int b = 0;
    while (b + 1 < parts && chorus::coll::split(total, parts, b + 1).begin <= i) ++b;
    return b;
}

// What `algo` (two_level_rails or two_level_leaders; two_level for reduce)
// of `coll` must give for every element, as in_documented_order does for
// the flat algorithms.
inline std::vector<char> two_level_order(const std::string& coll, const std::string& algo, const HostMap& m,
                                         chorus_datatype_t dt, chorus_op_t op, int root,
                                         const std::vector<size_t>& counts, const std::vector<std::vector<char>>& in,
                                         const PhaseContext& pc, std::string* why) {
    // A host's ranks, and one rank a host.
    auto inside = [&](Collective c, int size, size_t count, const std::vector<size_t>& cs = {}) {
        return phase_algo(pc, PhaseLink::Host, c, size, dt, count, cs);
    };
    auto across = [&](Collective c, int size, size_t count, const std::vector<size_t>& cs = {}) {
        return phase_algo(pc, PhaseLink::Hosts, c, size, dt, count, cs);
    };
    const int p = m.ranks(), H = m.hosts();
    const size_t total = in[0].size() / esize(dt);
    const chorus_op_t sum_op = op == CHORUS_AVG ? CHORUS_SUM : op;
    std::vector<uint64_t> x(p);
    // The value a group of ranks computes for the element with `name`.
    auto over = [&](const std::string& c, const std::string& name, const std::vector<uint64_t>& xs, int r, int b) {
        const Element el{dt, sum_op, xs};
        uint64_t v = 0;
        if (!flat_order(c, name, el, static_cast<int>(xs.size()), r, b, &v) && why)
            *why = "no documented order for phase " + c + ":" + name;
        return v;
    };
    auto host_inputs = [&](int h) {
        std::vector<uint64_t> xs;
        for (int q : m.members(h)) xs.push_back(x[q]);
        return xs;
    };
    // Reduce-scatter: whose block each element is.
    std::vector<int> owner(total, 0);
    if (coll == "reduce_scatter")
        for (size_t q = 0, e = 0; q < counts.size(); ++q)
            for (size_t k = 0; k < counts[q]; ++k) owner[e++] = static_cast<int>(q);
    const int L0 = static_cast<int>(m.members(0).size());
    std::vector<size_t> shares, super(static_cast<size_t>(L0), 0), host_total(static_cast<size_t>(H), 0);
    for (int j = 0; j < L0; ++j) shares.push_back(chorus::coll::split(total, L0, j).size());
    for (size_t q = 0; q < counts.size(); ++q) {
        if (algo == "two_level_rails") super[m.local_index(static_cast<int>(q))] += counts[q];
        host_total[m.host_of(static_cast<int>(q))] += counts[q];
    }
    std::vector<char> out(total * esize(dt));
    for (size_t i = 0; i < total; ++i) {
        for (int r = 0; r < p; ++r) x[r] = load_bits(dt, in[r].data(), i);
        std::vector<uint64_t> y(static_cast<size_t>(H));
        uint64_t v = 0;
        if (coll == "allreduce" && algo == "two_level_rails") {
            const int j = block_of(total, L0, i);
            const std::string rs = inside(Collective::ReduceScatter, L0, 0, shares);
            for (int h = 0; h < H; ++h) y[h] = over("reduce_scatter", rs, host_inputs(h), 0, j);
            const size_t e = i - chorus::coll::split(total, L0, j).begin;
            v = over("allreduce", across(Collective::Allreduce, H, shares[j]), y, 0, block_of(shares[j], H, e));
        } else if (coll == "allreduce") {
            for (int h = 0; h < H; ++h) {
                const int L = static_cast<int>(m.members(h).size());
                y[h] = over("reduce", inside(Collective::Reduce, L, total), host_inputs(h), 0, 0);
            }
            v = over("allreduce", across(Collective::Allreduce, H, total), y, 0, block_of(total, H, i));
        } else if (coll == "reduce") {
            for (int h = 0; h < H; ++h) {
                const int L = static_cast<int>(m.members(h).size());
                const int rep = m.host_of(root) == h ? root : m.members(h)[0];
                y[h] = over("reduce", inside(Collective::Reduce, L, total), host_inputs(h), m.local_index(rep), 0);
            }
            v = over("reduce", across(Collective::Reduce, H, total), y, m.host_of(root), 0);
        } else if (coll == "reduce_scatter" && algo == "two_level_rails") {
            const int q = owner[i], j = m.local_index(q);
            const std::string rs = inside(Collective::ReduceScatter, L0, 0, super);
            for (int h = 0; h < H; ++h) y[h] = over("reduce_scatter", rs, host_inputs(h), 0, j);
            std::vector<size_t> rail;
            for (int h = 0; h < H; ++h) rail.push_back(counts[m.members(h)[j]]);
            v = over("reduce_scatter", across(Collective::ReduceScatter, H, 0, rail), y, 0, m.host_of(q));
        } else if (coll == "reduce_scatter") {
            for (int h = 0; h < H; ++h) {
                const int L = static_cast<int>(m.members(h).size());
                y[h] = over("reduce", inside(Collective::Reduce, L, total), host_inputs(h), 0, 0);
            }
            v = over("reduce_scatter", across(Collective::ReduceScatter, H, 0, host_total), y, 0, m.host_of(owner[i]));
        } else if (why) {
            *why = "no documented order for " + coll + ":" + algo;
        }
        if (why && !why->empty()) return {};
        if (op == CHORUS_AVG) v = divide(dt, v, p);
        store_bits(dt, out.data(), i, v);
    }
    return out;
}

}  // namespace rounding
