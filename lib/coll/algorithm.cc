#include "coll/algorithm.h"

#include <algorithm>
#include <cstdint>

#include "base/error.h"
#include "coll/one_sided/one_sided_steps.h"
#include "coll/planner/cost_model.h"
#include "coll/two_level/two_level.h"
#include "reduce/datatype.h"

namespace chorus::coll {

const char* collective_name(Collective c) {
    switch (c) {
        case Collective::Allreduce: return "allreduce";
        case Collective::Broadcast: return "bcast";
        case Collective::Reduce: return "reduce";
        case Collective::ReduceScatter: return "reduce_scatter";
        case Collective::Allgather: return "allgather";
        case Collective::Allgatherv: return "allgatherv";
        case Collective::Alltoall: return "alltoall";
        case Collective::Alltoallv: return "alltoallv";
        case Collective::Gather: return "gather";
        case Collective::Gatherv: return "gatherv";
        case Collective::Scatter: return "scatter";
        case Collective::Scatterv: return "scatterv";
        case Collective::Barrier: return "barrier";
    }
    return "?";
}

size_t Call::block_offset(int i) const {
    if (counts.empty()) return count * static_cast<size_t>(i);
    size_t off = 0;
    for (int k = 0; k < i; ++k) off += counts[k];
    return off;
}

size_t Call::total_count() const {
    return block_offset(size);
}

size_t Call::message_bytes() const {
    size_t esize = datatype_size(dtype);
    switch (coll) {
        case Collective::ReduceScatter: return total_count() * esize;
        case Collective::Allgatherv: return counts.empty() ? count * esize : total_count() / size * esize;
        case Collective::Barrier: return 0;
        default: return count * esize;
    }
}

namespace {

bool any(const CollArgs&) {
    return true;
}
bool slots(const CollArgs& a) {
    return fits_slot(a);
}
bool pipeline(const CollArgs& a) {
    return fits_pipeline(a);
}
// Beyond what one slot holds (where it does, the flat algorithm's one round
// is quicker than the pipeline's rounds, whose handoffs the model does not
// price in full).
bool beyond_slot(const CollArgs& a) {
    return !fits_slot(a);
}
// Beyond the caches only (measured at np=2: the pipelined broadcast is
// 1.9-2.1x the other algorithms at 32-64 MiB, and 0.6-0.9x from 16 KiB to
// 16 MiB, where the cost model prices it ahead of the one-sided one).
bool beyond_caches(const CollArgs& a) {
    return a.cost && coll::beyond_caches(a, *a.cost);
}
// The broadcast through the slots' pipeline: from a slot up to
// kPipelinedBcastBytes, at every size with one reader (two ranks), and
// beyond the caches. Against the one-sided broadcast the cost model prices
// ahead of it (its copy rate is memory's, while these chunks are copied in
// the caches), measured at np=2 (chorus-bench bcast -c, medians of 5
// alternating runs; cold: --cold-cache): 2.9-3.4x at 16 KiB, 1.9-2.2x at
// 32 KiB, 1.3-1.5x at 64 KiB, 0.93-1.19x at 128 KiB (1.31-1.56x cold);
// from 256 KiB to 4 MiB 0.78-0.89x warm and 1.37-2.05x cold, at 8 MiB
// 0.94x and 1.28x, at 16 MiB 1.29x and 1.13x: where one loses warm, the
// other loses more cold, so with one reader the pipeline is taken at every
// size (a call cannot tell whether its data is in a cache). Oversubscribed
// at np=3 and 4 (three runs) the pipeline's readers wait on each other and
// the one-sided broadcast is ahead from 512 KiB.
constexpr size_t kPipelinedBcastBytes = size_t{128} << 10;
bool pipeline_over_one_sided_bcast(const CollArgs& a) {
    return fits_pipeline(a) && (a.message_bytes() <= kPipelinedBcastBytes || a.size == 2);
}
bool pipelined_bcast(const CollArgs& a) {
    return beyond_caches(a) || pipeline_over_one_sided_bcast(a);
}
// The one-sided broadcast, where the pipeline is not taken instead.
bool one_sided_bcast(const CollArgs& a) {
    return !pipeline_over_one_sided_bcast(a);
}
// The one-sided scatter and gather, with more than one peer of the root.
// Measured at np=3 and 4 (oversubscribed, chorus-bench scatter -c, two
// runs): 1.1-2.0x the binomial scatter at np=4 and 0.9-1.3x at np=3 from
// 128 KiB to 4 MiB, the readers all copying at once. With one peer the
// binomial algorithm's one message is the same single copy (cross-memory
// attach, by the receiver) without the exposure's messages: at np=2 the
// one-sided scatter was 0.81-1.19x warm and 0.80-0.96x cold from 512 KiB,
// and the one-sided gather, against the binomial one's 0.99-1.04x MPI
// warm and 0.83-0.99x cold at 256 KiB-16 MiB (medians of three and two
// alternating runs), 0.87-1.01x and 0.82-0.93x: the peer's write into the
// root's buffer while the root copies its own block does not go faster
// than the root's read and copy one after the other.
bool one_sided_rooted(const CollArgs& a) {
    return a.size > 2;
}
// Every rank on one host, with publish slots (any message: blocks too large
// for them go as messages).
bool shared(const CollArgs& a) {
    return a.slot_bytes > 0;
}

// The arrays behind a side with one block per rank (empty: blocks of count).
void side_arrays(const Call& a, Side side, const std::vector<size_t>** c, const std::vector<size_t>** d) {
    const bool own_send = side == Side::Send && !a.in_place;
    const bool send_side = a.coll == Collective::Scatter || a.coll == Collective::Scatterv ||
                           ((a.coll == Collective::Alltoall || a.coll == Collective::Alltoallv) && own_send);
    *c = send_side ? &a.send_counts : &a.counts;
    *d = send_side ? &a.send_displs : &a.displs;
}

bool one_sided(const CollArgs& a) {
    return os_supported(a);
}
bool two_level(const CollArgs& a) {
    return two_level_applies(a);
}
bool rails(const CollArgs& a) {
    return two_level_even(a);
}

}  // namespace

int Call::blocks(Side side) const {
    const bool send = side == Side::Send, root_here = rank == root;
    bool used = true;
    switch (coll) {
        case Collective::Broadcast:
        case Collective::Scatter:
        case Collective::Scatterv: used = !send || root_here; break;
        case Collective::Reduce:
        case Collective::Gather:
        case Collective::Gatherv: used = send || root_here; break;
        case Collective::Barrier: used = false; break;
        default: break;
    }
    return !used ? 0 : per_rank(side) ? size : 1;
}

bool Call::per_rank(Side side) const {
    const bool send = side == Side::Send;
    switch (coll) {
        case Collective::ReduceScatter:
        case Collective::Scatter:
        case Collective::Scatterv: return send;
        case Collective::Allgather:
        case Collective::Allgatherv:
        case Collective::Gather:
        case Collective::Gatherv: return !send;
        case Collective::Alltoall:
        case Collective::Alltoallv: return true;
        default: return false;
    }
}

Block Call::block(Side side, int i) const {
    if (!per_rank(side)) return {0, coll == Collective::ReduceScatter ? block_count(rank) : count};
    if (coll == Collective::ReduceScatter) return {block_offset(i), block_count(i)};
    const std::vector<size_t>*c, *d;
    side_arrays(*this, side, &c, &d);
    if (c->empty()) return {count * static_cast<size_t>(i), count};
    if (d->empty()) {
        size_t off = 0;
        for (int k = 0; k < i; ++k) off += (*c)[k];
        return {off, (*c)[i]};
    }
    return {(*d)[i], (*c)[i]};
}

std::vector<int> find_held_blocks(const Call& a) {
    std::vector<int> out;
    for (int b = 0; b < a.size; ++b)
        if (a.block(Side::Recv, b).count) out.push_back(b);
    return out;
}

const std::vector<int>& CollArgs::held_blocks(std::vector<int>& scratch) const {
    if (held) return *held;
    scratch = find_held_blocks(*this);
    return scratch;
}

bool Call::extent(Side side, size_t* elems) const {
    const int n = blocks(side);
    *elems = 0;
    if (n == 0 || !per_rank(side)) {
        *elems = n ? block(side, 0).count : 0;
        return true;
    }
    const std::vector<size_t>*c = &counts, *d = &displs;
    if (coll == Collective::ReduceScatter)
        d = nullptr;
    else
        side_arrays(*this, side, &c, &d);
    if (c->empty()) {
        if (count && static_cast<size_t>(n) > SIZE_MAX / count) return false;
        *elems = count * static_cast<size_t>(n);
        return true;
    }
    for (int i = 0; i < n; ++i) {
        const size_t start = d && !d->empty() ? (*d)[i] : *elems;
        if ((*c)[i] > SIZE_MAX - start) return false;
        *elems = std::max(*elems, start + (*c)[i]);
    }
    return true;
}

const std::vector<Algorithm>& algorithms_for(Collective c) {
    static const std::vector<Algorithm> allreduce = {
        {Collective::Allreduce, "ring", build_ring_allreduce, any},
        {Collective::Allreduce, "recursive_doubling", build_recursive_doubling_allreduce, any},
        {Collective::Allreduce, "rabenseifner", build_rabenseifner_allreduce, any},
        {Collective::Allreduce, "shm_flat", build_flat_allreduce, slots},
        {Collective::Allreduce, "one_sided", build_one_sided_allreduce, one_sided},
        {Collective::Allreduce, "shm_pipeline", build_pipeline_allreduce, pipeline, false, beyond_slot},
        {Collective::Allreduce, "two_level_rails", build_two_level_rails_allreduce, rails},
        {Collective::Allreduce, "two_level_leaders", build_two_level_leaders_allreduce, two_level},
    };
    static const std::vector<Algorithm> bcast = {
        {Collective::Broadcast, "binomial", build_binomial_bcast, any},
        {Collective::Broadcast, "chain", build_chain_bcast, any},
        {Collective::Broadcast, "scatter_allgather", build_scatter_allgather_bcast, any},
        {Collective::Broadcast, "shm_flat", build_flat_bcast, slots},
        {Collective::Broadcast, "one_sided", build_one_sided_bcast, one_sided, false, one_sided_bcast},
        {Collective::Broadcast, "shm_pipeline", build_pipeline_bcast, pipeline, false, pipelined_bcast},
        {Collective::Broadcast, "two_level", build_two_level_bcast, two_level},
    };
    static const std::vector<Algorithm> reduce = {
        {Collective::Reduce, "binomial", build_binomial_reduce, any},
        {Collective::Reduce, "reduce_scatter_gather", build_reduce_scatter_gather_reduce, any},
        {Collective::Reduce, "shm_flat", build_flat_reduce, slots},
        {Collective::Reduce, "one_sided", build_one_sided_reduce, one_sided},
        {Collective::Reduce, "shm_pipeline", build_pipeline_reduce, pipeline, false, beyond_slot},
        {Collective::Reduce, "two_level", build_two_level_reduce, two_level},
    };
    static const std::vector<Algorithm> reduce_scatter = {
        {Collective::ReduceScatter, "halving", build_halving_reduce_scatter, any},
        {Collective::ReduceScatter, "ring", build_ring_reduce_scatter, any},
        {Collective::ReduceScatter, "shm_flat", build_flat_reduce_scatter, slots},
        {Collective::ReduceScatter, "one_sided", build_one_sided_reduce_scatter, one_sided},
        {Collective::ReduceScatter, "two_level_rails", build_two_level_rails_reduce_scatter, rails},
        {Collective::ReduceScatter, "two_level_leaders", build_two_level_leaders_reduce_scatter, two_level},
    };
    static const std::vector<Algorithm> allgather = {
        {Collective::Allgather, "ring", build_ring_allgather, any},
        {Collective::Allgather, "bruck", build_bruck_allgather, any},
        {Collective::Allgather, "shm_flat", build_flat_allgather, slots},
        {Collective::Allgather, "one_sided", build_one_sided_allgather, one_sided},
        {Collective::Allgather, "shm_pipeline", build_pipeline_allgather, pipeline, false, beyond_caches},
        {Collective::Allgather, "two_level_rails", build_two_level_rails_allgather, rails},
        {Collective::Allgather, "two_level_leaders", build_two_level_leaders_allgather, two_level},
    };
    static const std::vector<Algorithm> allgatherv = {
        {Collective::Allgatherv, "ring", build_ring_allgather, any},
        {Collective::Allgatherv, "bcast", build_bcast_allgatherv, any},
        {Collective::Allgatherv, "shm_flat", build_flat_allgather, slots},
        {Collective::Allgatherv, "two_level_leaders", build_two_level_leaders_allgather, two_level},
    };
    static const std::vector<Algorithm> alltoall = {
        {Collective::Alltoall, "pairwise", build_pairwise_alltoall, any},
        {Collective::Alltoall, "bruck", build_bruck_alltoall, any},
        {Collective::Alltoall, "shm_flat", build_flat_alltoall, slots},
        {Collective::Alltoall, "two_level_leaders", build_two_level_leaders_alltoall, two_level},
    };
    // The irregular forms' sizes are agreed pair by pair only: the selector
    // chooses among them by the layout alone (Selector::choose_unagreed).
    static const std::vector<Algorithm> alltoallv = {
        {Collective::Alltoallv, "shm_flat", build_flat_alltoallv, shared},
        {Collective::Alltoallv, "pairwise", build_pairwise_alltoall, any},
        {Collective::Alltoallv, "two_level_leaders", build_two_level_leaders_alltoallv, two_level, true},
    };
    static const std::vector<Algorithm> gather = {
        {Collective::Gather, "linear", build_linear_gather, any},
        {Collective::Gather, "binomial", build_binomial_gather, any},
        {Collective::Gather, "shm_flat", build_flat_gather, slots},
        {Collective::Gather, "one_sided", build_one_sided_gather, one_sided, false, one_sided_rooted},
        {Collective::Gather, "two_level", build_two_level_gather, two_level},
    };
    static const std::vector<Algorithm> gatherv = {
        {Collective::Gatherv, "shm_flat", build_flat_gatherv, shared},
        {Collective::Gatherv, "linear", build_linear_gather, any},
        {Collective::Gatherv, "two_level", build_two_level_gatherv, two_level, true},
    };
    static const std::vector<Algorithm> scatter = {
        {Collective::Scatter, "linear", build_linear_scatter, any},
        {Collective::Scatter, "binomial", build_binomial_scatter, any},
        {Collective::Scatter, "shm_flat", build_flat_scatter, slots},
        {Collective::Scatter, "one_sided", build_one_sided_scatter, one_sided, false, one_sided_rooted},
        {Collective::Scatter, "two_level", build_two_level_scatter, two_level},
    };
    static const std::vector<Algorithm> scatterv = {
        {Collective::Scatterv, "shm_flat", build_flat_scatterv, shared},
        {Collective::Scatterv, "linear", build_linear_scatter, any},
        {Collective::Scatterv, "two_level", build_two_level_scatterv, two_level, true},
    };
    static const std::vector<Algorithm> barrier = {
        {Collective::Barrier, "dissemination", build_dissemination_barrier, any},
        {Collective::Barrier, "shm_flat", build_flat_barrier, slots},
        {Collective::Barrier, "two_level", build_two_level_barrier, two_level},
    };
    switch (c) {
        case Collective::Allreduce: return allreduce;
        case Collective::Broadcast: return bcast;
        case Collective::Reduce: return reduce;
        case Collective::ReduceScatter: return reduce_scatter;
        case Collective::Allgather: return allgather;
        case Collective::Allgatherv: return allgatherv;
        case Collective::Alltoall: return alltoall;
        case Collective::Alltoallv: return alltoallv;
        case Collective::Gather: return gather;
        case Collective::Gatherv: return gatherv;
        case Collective::Scatter: return scatter;
        case Collective::Scatterv: return scatterv;
        case Collective::Barrier: return barrier;
    }
    return allreduce;
}

const Algorithm& find_algorithm(Collective c, const std::string& name) {
    std::string valid;
    for (const auto& a : algorithms_for(c)) {
        if (name == a.name) return a;
        valid += (valid.empty() ? "" : ", ") + std::string(a.name);
    }
    fail(CHORUS_ERR_CONFIG, "no algorithm '", name, "' for ", collective_name(c), " (valid: ", valid, ")");
}

}  // namespace chorus::coll
