// What every algorithm receives, and the table of algorithms per collective.
// An algorithm only builds a Schedule; the choice of algorithm depends only on
// values every rank agrees on (never on where this rank's buffers live).
//
// Buffer conventions (byte offsets into the three buffers of a schedule):
//   allreduce       Send: count elements; Recv: count elements.
//   broadcast       root reads Send (count); every rank writes Recv (count).
//                   On other ranks Send is bound to Recv.
//   reduce          every rank reads Send (count); only the root writes Recv.
//   reduce_scatter  Send: the sum of all block counts; Recv: this rank's block.
//                   In place (`in_place`), Recv aliases the start of Send, so
//                   the result is written only after every read of Send.
//   allgather       Send: count elements; Recv: size * count, block r at r * count.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "chorus.h"
#include "exec/schedule.h"

namespace chorus::coll {

enum class Collective { Allreduce, Broadcast, Reduce, ReduceScatter, Allgather };
constexpr int kNumCollectives = 5;

const char* collective_name(Collective c);

struct CollArgs {
    Collective coll = Collective::Allreduce;
    size_t count = 0;  // elements: the message (allgather: per rank; reduce_scatter: per block unless `counts`)
    std::vector<size_t> counts;  // reduce_scatterv: elements of each rank's block
    chorus_datatype_t dtype = CHORUS_FLOAT32;
    chorus_op_t op = CHORUS_SUM;
    int root = 0;
    int rank = 0;
    int size = 1;
    bool in_place = false;            // only local step ordering may depend on it
    size_t chunk_bytes = 256 * 1024;  // pipeline chunk
    int depth = 16;                   // chunks in flight per phase (scratch slots)
    size_t slot_bytes = 0;            // room in a publish slot (0: the ranks share no memory)
    bool one_sided = false;           // every rank on one host, each reading the others' memory

    // reduce_scatter: elements of block i, and where it starts in Send.
    size_t block_count(int i) const { return counts.empty() ? count : counts[i]; }
    size_t block_offset(int i) const;
    size_t total_count() const;  // reduce_scatter: sum of the blocks
    // Bytes each rank contributes (the benchmark's "message size").
    size_t message_bytes() const;
};

using Builder = std::unique_ptr<Schedule> (*)(const CollArgs&);

struct Algorithm {
    Collective coll;
    const char* name;
    Builder build;
    // Whether the algorithm handles these arguments (all of ours handle any
    // rank count; some are restricted by size or op).
    bool (*supports)(const CollArgs&) = nullptr;
};

// Every algorithm of a collective.
const std::vector<Algorithm>& algorithms_for(Collective c);
// The algorithm named `name` for `c`; throws Error(CHORUS_ERR_CONFIG) if unknown.
const Algorithm& find_algorithm(Collective c, const std::string& name);

// Builders, one file each.
std::unique_ptr<Schedule> build_ring_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_recursive_doubling_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_rabenseifner_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_binomial_bcast(const CollArgs& args);
std::unique_ptr<Schedule> build_chain_bcast(const CollArgs& args);
std::unique_ptr<Schedule> build_scatter_allgather_bcast(const CollArgs& args);
std::unique_ptr<Schedule> build_halving_reduce_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_ring_reduce_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_ring_allgather(const CollArgs& args);
std::unique_ptr<Schedule> build_bruck_allgather(const CollArgs& args);
std::unique_ptr<Schedule> build_binomial_reduce(const CollArgs& args);
std::unique_ptr<Schedule> build_reduce_scatter_gather_reduce(const CollArgs& args);
// One round through the publish slots (every rank on one host), shm_flat.cc.
std::unique_ptr<Schedule> build_flat_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_bcast(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_reduce(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_reduce_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_allgather(const CollArgs& args);
// One-sided steps (CollArgs::one_sided), one_sided_*.cc.
std::unique_ptr<Schedule> build_one_sided_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_bcast(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_reduce(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_reduce_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_allgather(const CollArgs& args);
// Whether a message of this size class fits a publish slot.
bool fits_slot(const CollArgs& args);

}  // namespace chorus::coll
