#include "coll/algorithm.h"

#include "base/error.h"
#include "coll/one_sided_steps.h"
#include "reduce/datatype.h"

namespace chorus::coll {

const char* collective_name(Collective c) {
    switch (c) {
        case Collective::Allreduce: return "allreduce";
        case Collective::Broadcast: return "bcast";
        case Collective::Reduce: return "reduce";
        case Collective::ReduceScatter: return "reduce_scatter";
        case Collective::Allgather: return "allgather";
    }
    return "?";
}

size_t CollArgs::block_offset(int i) const {
    if (counts.empty()) return count * static_cast<size_t>(i);
    size_t off = 0;
    for (int k = 0; k < i; ++k) off += counts[k];
    return off;
}

size_t CollArgs::total_count() const {
    return block_offset(size);
}

size_t CollArgs::message_bytes() const {
    size_t esize = datatype_size(dtype);
    switch (coll) {
        case Collective::ReduceScatter: return total_count() * esize;
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
bool one_sided(const CollArgs& a) {
    return os_supported(a);
}
}  // namespace

const std::vector<Algorithm>& algorithms_for(Collective c) {
    static const std::vector<Algorithm> allreduce = {
        {Collective::Allreduce, "ring", build_ring_allreduce, any},
        {Collective::Allreduce, "recursive_doubling", build_recursive_doubling_allreduce, any},
        {Collective::Allreduce, "rabenseifner", build_rabenseifner_allreduce, any},
        {Collective::Allreduce, "shm_flat", build_flat_allreduce, slots},
        {Collective::Allreduce, "one_sided", build_one_sided_allreduce, one_sided},
    };
    static const std::vector<Algorithm> bcast = {
        {Collective::Broadcast, "binomial", build_binomial_bcast, any},
        {Collective::Broadcast, "chain", build_chain_bcast, any},
        {Collective::Broadcast, "scatter_allgather", build_scatter_allgather_bcast, any},
        {Collective::Broadcast, "shm_flat", build_flat_bcast, slots},
        {Collective::Broadcast, "one_sided", build_one_sided_bcast, one_sided},
    };
    static const std::vector<Algorithm> reduce = {
        {Collective::Reduce, "binomial", build_binomial_reduce, any},
        {Collective::Reduce, "reduce_scatter_gather", build_reduce_scatter_gather_reduce, any},
        {Collective::Reduce, "shm_flat", build_flat_reduce, slots},
        {Collective::Reduce, "one_sided", build_one_sided_reduce, one_sided},
    };
    static const std::vector<Algorithm> reduce_scatter = {
        {Collective::ReduceScatter, "halving", build_halving_reduce_scatter, any},
        {Collective::ReduceScatter, "ring", build_ring_reduce_scatter, any},
        {Collective::ReduceScatter, "shm_flat", build_flat_reduce_scatter, slots},
        {Collective::ReduceScatter, "one_sided", build_one_sided_reduce_scatter, one_sided},
    };
    static const std::vector<Algorithm> allgather = {
        {Collective::Allgather, "ring", build_ring_allgather, any},
        {Collective::Allgather, "bruck", build_bruck_allgather, any},
        {Collective::Allgather, "shm_flat", build_flat_allgather, slots},
        {Collective::Allgather, "one_sided", build_one_sided_allgather, one_sided},
    };
    switch (c) {
        case Collective::Allreduce: return allreduce;
        case Collective::Broadcast: return bcast;
        case Collective::Reduce: return reduce;
        case Collective::ReduceScatter: return reduce_scatter;
        case Collective::Allgather: return allgather;
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
