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
//
// The collectives that move blocks between ranks describe each buffer as
// blocks (see block()): block i of the side with one block per rank is
// counts[i] elements at displs[i] (send_counts/send_displs on the send side);
// with `counts` empty, count elements at i * count; with `displs` empty,
// packed in rank order. Gaps between blocks are never written.
//   allgatherv      Send: count elements (== counts[rank]); Recv: block i of
//                   every rank. In place, Send aliases Recv's block `rank`.
//   alltoall(v)     Send block i goes to rank i; Recv block i comes from rank
//                   i. In place (`in_place`), Send is bound to Recv and the
//                   send blocks are the receive blocks: a block is sent
//                   before its place is overwritten.
//   gather(v)       every rank reads Send (count elements); only the root
//                   writes Recv, block i from rank i; in place, the root's
//                   Send aliases its Recv block `root`.
//   scatter(v)      only the root reads Send, block i for rank i; every rank
//                   writes Recv (count elements); in place, the root's Recv
//                   aliases its Send block `root`. Elsewhere Send is bound to
//                   Recv and never read.
//   barrier         no user buffers: a byte of scratch per round.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "chorus.h"
#include "exec/schedule.h"

namespace chorus::coll {

class HostMap;
struct CostParams;

enum class Collective {
    Allreduce,
    Broadcast,
    Reduce,
    ReduceScatter,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Barrier
};
constexpr int kNumCollectives = 13;

const char* collective_name(Collective c);

// A block of a user buffer, in elements.
struct Block {
    size_t offset = 0;
    size_t count = 0;
};
enum class Side { Send, Recv };

// A call's arguments come in three parts, each with its own source:
//   Call         the call itself, as every rank agrees on it (the entry
//                point's validated arguments, this rank's place);
//   Abilities    what the communicator offers its schedules, fixed at its
//                creation and the same on every rank;
//   PlanContext  the planner's settings for this build (pipelining, the
//                cost model, the tag space of a phase, cached lookups).
// CollArgs, what an algorithm receives, is the three together.

// The call, as every rank agrees on it.
struct Call {
    Collective coll = Collective::Allreduce;
    // Elements: the message (allgather(v), gather(v): what this rank sends;
    // scatter(v): what it receives; alltoall: per peer; reduce_scatter: per
    // block unless `counts`).
    size_t count = 0;
    std::vector<size_t> counts;       // per-rank blocks: reduce_scatterv, allgatherv, gatherv (root), alltoallv (recv)
    std::vector<size_t> displs;       // where they start: allgatherv, gatherv (root), alltoallv (rdispls)
    std::vector<size_t> send_counts;  // scatterv (root), alltoallv (sendcounts, unless in place)
    std::vector<size_t> send_displs;  // scatterv (root), alltoallv (sdispls, unless in place)
    chorus_datatype_t dtype = CHORUS_FLOAT32;
    chorus_op_t op = CHORUS_SUM;
    int root = 0;
    int rank = 0;
    int size = 1;
    bool in_place = false;  // only local step ordering may depend on it
    // Every rank's buffers lie in memory the host's ranks map into each
    // other (chorus_mem_alloc), as the ranks agreed before the call: the
    // one-sided steps then copy at a plain copy's rates, which only the
    // choice of algorithm takes into account (the steps are the same).
    bool mapped = false;

    // reduce_scatter: elements of block i, and where it starts in Send.
    size_t block_count(int i) const { return counts.empty() ? count : counts[i]; }
    size_t block_offset(int i) const;
    size_t total_count() const;  // reduce_scatter: sum of the blocks
    // Bytes each rank contributes (the benchmark's "message size"; alltoall:
    // per peer; allgatherv: the mean block).
    size_t message_bytes() const;

    // The blocks of this rank's send or receive buffer the collective reads
    // or writes: 0 (a root-only buffer elsewhere, or none), 1 or size.
    int blocks(Side side) const;
    // Whether that side has one block per rank (where it is used), even at
    // size 1; block(side, i) then is rank i's, else block 0 is the only one.
    bool per_rank(Side side) const;
    Block block(Side side, int i) const;
    // Elements from the buffer's start to the end of its last block (0 when
    // unused); false when that overflows size_t.
    bool extent(Side side, size_t* elems) const;
};

// What the communicator offers schedules (decided at its creation, the same
// on every rank).
struct Abilities {
    size_t slot_bytes = 0;   // room in a publish slot (0: the ranks share no memory)
    size_t slot_line = 0;    // the first offset in a slot at a cache line's start
    bool one_sided = false;  // every rank on one host, each reading the others' memory
    bool rma = false;        // otherwise: every rank reaching the others' registered memory (UCX RMA)
    // Which ranks share a host (null: one host), as every rank agrees
    // (topology.h); owned by the communicator, or whoever builds.
    const HostMap* hosts = nullptr;
};

// The planner's settings for one build.
struct PlanContext {
    size_t chunk_bytes = 256 * 1024;  // pipeline chunk
    int depth = 16;                   // chunks in flight per phase (scratch slots)
    // The cost model's parameters (configuration every rank agrees on),
    // where a schedule is built to run or to be predicted: a two-level
    // algorithm's phases are then the model's choice (two_level.h); null:
    // a fixed rule. Owned by whoever builds; other algorithms ignore it.
    const CostParams* cost = nullptr;
    // The bits of a message's algorithm tag this schedule may use (steps.h's
    // TagSpace); a two-level algorithm builds its phases with fewer.
    uint32_t tag_bits = kStepTagBits;
    // Built as a phase of a composed schedule (compose.h): a later phase may
    // take its messages piece by piece as they land.
    bool phase = false;
    // The receive blocks that hold elements (allgatherv with counts), in rank
    // order, where whoever builds many ranks' schedules from one set of
    // counts found them once (the cost model); null: held_blocks() scans.
    std::shared_ptr<const std::vector<int>> held;
    // A two-stage algorithm's second stage (Algorithm::two_stage), on the
    // rank that gathers its host's sizes: what the first stage brought it,
    // each member's own_sizes() in local order (two_stage.h); empty
    // elsewhere and in the first stage.
    std::vector<size_t> host_sizes;
};

struct CollArgs : Call, Abilities, PlanContext {
    Abilities& abilities() { return *this; }
    // The receive blocks with elements, in rank order: `held` if set, else
    // found into `scratch` (O(size)).
    const std::vector<int>& held_blocks(std::vector<int>& scratch) const;
};
// Every receive block with elements, in rank order (what `held` holds).
std::vector<int> find_held_blocks(const Call& a);

using Builder = std::unique_ptr<Schedule> (*)(const CollArgs&);

struct Algorithm {
    Collective coll;
    const char* name;
    Builder build;
    // Whether the algorithm handles these arguments (all of ours handle any
    // rank count; some are restricted by size or op).
    bool (*supports)(const CollArgs&) = nullptr;
    // Two stages (the irregular two-level forms, two_stage.h): first a small
    // schedule that brings each host's gatherer its members' sizes
    // (build_sizes_stage), then `build` with CollArgs::host_sizes filled.
    bool two_stage = false;
    // Where the selector may take it (null: wherever it applies); elsewhere
    // it runs only when CHORUS_ALGO names it.
    bool (*selectable)(const CollArgs&) = nullptr;
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
std::unique_ptr<Schedule> build_bcast_allgatherv(const CollArgs& args);
std::unique_ptr<Schedule> build_pairwise_alltoall(const CollArgs& args);
std::unique_ptr<Schedule> build_bruck_alltoall(const CollArgs& args);
std::unique_ptr<Schedule> build_binomial_gather(const CollArgs& args);
std::unique_ptr<Schedule> build_linear_gather(const CollArgs& args);
std::unique_ptr<Schedule> build_binomial_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_linear_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_dissemination_barrier(const CollArgs& args);
// One round through the publish slots (every rank on one host), shm_flat.cc.
std::unique_ptr<Schedule> build_flat_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_bcast(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_reduce(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_reduce_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_allgather(const CollArgs& args);  // and all-gatherv
std::unique_ptr<Schedule> build_flat_alltoall(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_gather(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_barrier(const CollArgs& args);
// The irregular forms, each block by the slots or by a message as its size
// says (every rank on one host, any sizes).
std::unique_ptr<Schedule> build_flat_gatherv(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_scatterv(const CollArgs& args);
std::unique_ptr<Schedule> build_flat_alltoallv(const CollArgs& args);
// One-sided steps (CollArgs::one_sided), one_sided_*.cc.
std::unique_ptr<Schedule> build_one_sided_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_bcast(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_reduce(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_reduce_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_allgather(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_gather(const CollArgs& args);
std::unique_ptr<Schedule> build_one_sided_scatter(const CollArgs& args);
// Two levels, hosts then ranks (CollArgs::hosts), two_level_*.cc: rails
// for hosts of one size, leaders (or the root's host's representative) for
// any layout.
std::unique_ptr<Schedule> build_two_level_rails_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_leaders_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_bcast(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_reduce(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_rails_reduce_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_leaders_reduce_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_rails_allgather(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_leaders_allgather(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_gather(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_leaders_alltoall(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_scatter(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_barrier(const CollArgs& args);
// The irregular forms' second stages (their first: two_stage.h).
std::unique_ptr<Schedule> build_two_level_gatherv(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_scatterv(const CollArgs& args);
std::unique_ptr<Schedule> build_two_level_leaders_alltoallv(const CollArgs& args);
// Whether the largest message of this size class fits a publish slot, as
// many blocks of it as the collective's flat algorithm publishes.
bool fits_slot(const CollArgs& args);
// Through the publish slots in rounds, a chunk at a time (every rank on one
// host), shm_pipeline.cc; whether a slot holds a chunk of every peer's block.
std::unique_ptr<Schedule> build_pipeline_allreduce(const CollArgs& args);
std::unique_ptr<Schedule> build_pipeline_reduce(const CollArgs& args);
std::unique_ptr<Schedule> build_pipeline_bcast(const CollArgs& args);
std::unique_ptr<Schedule> build_pipeline_allgather(const CollArgs& args);
bool fits_pipeline(const CollArgs& args);

}  // namespace chorus::coll
