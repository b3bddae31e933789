// Predicted run time of a collective, computed from the schedules the
// algorithms build (not from formulas written a second time): the ranks'
// schedules are simulated together, step by step.
//
// The machine model (alpha-beta with ports): a message of n bytes takes
// alpha + n / bandwidth; it starts when both its send and its receive are
// ready and the sender's outgoing and the receiver's incoming port are free,
// and occupies both ports for overhead + n / bandwidth (the overhead, part
// of alpha, is the CPU time each end spends on a message: it is what makes
// a root that takes size - 1 small messages slower than a tree; between
// hosts, the host links are taken for n / bandwidth alone). Reductions and copies run on
// their rank's CPU, one at a time, at their own per-byte rates. A message
// between two hosts is priced by the network's link class, and shares each
// host's link with the host's other ranks' messages. A publish is
// a copy into the rank's slot, and an await ends slot_us after the slot it
// waits for is published (or when it is ready, if later). Steps ready at
// the same time are taken in the order (time, step index, rank), so the
// outcome never depends on how a queue breaks ties.
//
// Which ranks are simulated (SimMode):
//   Symmetric  the schedules are images of those of the first block of
//              ranks under relabellings that keep the host map: with every
//              pair of ranks of one link class (HostMap::flat) the block is
//              rank 0 alone and rank r's schedule is rank 0's with every
//              peer q replaced by q + r (mod size; rings, Bruck) or q xor r
//              (power-of-two sizes; recursive doubling and halving); with
//              hosts of n consecutive ranks (HostMap::block) the block is
//              host 0, and a rank on host h has the schedule of its place
//              on host 0 with every peer moved h hosts on, or to the same
//              place on host (its host xor h). The same kinds, tags, sizes
//              and dependencies, step by step, with messages only (no
//              slots), checked against blocks 1, blocks/2 + 1 and the last.
//              Every block then lives the same timeline, so the first
//              alone is simulated, a transfer with a rank outside standing
//              for the image of one of its own: exact, at the cost of one
//              block.
//   Full       every rank, while their steps add up to at most
//              max_simulated_steps: exact.
//   Sampled    beyond that budget: as many ranks as fit it, chosen so that
//              the ranks each one receives from come with it (the whole
//              path down a tree, a run of a ring): rank 0 and evenly spaced
//              ranks first. A message from a rank left out is taken to
//              leave when this rank's own send with the same tag starts (as
//              far along as this rank), or as soon as the receive is ready
//              when there is no such send; a message to a rank left out
//              finds its receive ready. An approximation: optimistic where
//              ranks left out would be late.
#pragma once

#include <memory>
#include <string>

#include "coll/algorithm.h"
#include "coll/planner/topology.h"

namespace chorus::coll {

struct CostParams {
    // Within a host (every pair of ranks, when `hosts` is null):
    double alpha_us = 1.5;       // per message (latency + software overhead)
    double rendezvous_us = 2.5;  // more per message above eager_bytes (rendezvous handshake, page pinning)
    double overhead_us = 0.25;   // of alpha, the time a message keeps both its ends' ports busy
    size_t eager_bytes = 8192;
    double bandwidth_gbs = 6.0;  // per rank and direction
    // Beyond the caches: where a rank's largest buffer of the collective
    // (an all-reduce's input and result together; cache_footprint())
    // is cache_mib or more, its messages within the host and its one-sided
    // copies move at memory_gbs (when lower): every pass over the data goes
    // to memory (measured at np=2: the ring all-reduce at 5.9-7.5 GB/s to
    // 16 MiB, 3.1-3.4 at 64 MiB). Copies and reductions (the slots'
    // pipelines are made of them) keep their rates.
    double cache_mib = 32;
    double memory_gbs = 3.0;
    // Between hosts: a message costs net_alpha_us (+ rendezvous_us above
    // eager_bytes) + bytes / net_gbs, and occupies for bytes / net_gbs both
    // ranks' ports and the sending and the receiving host's link, which all
    // the host's ranks share.
    double net_alpha_us = 20;
    double net_gbs = 0.7;  // per host link and direction
    // One-sided steps between hosts (UCX RMA through registration keys):
    // the data crosses the links at net_rma_gbs, a round trip after the
    // descriptor. 0: not priced, so the selector never takes a one-sided
    // algorithm across hosts (CHORUS_ALGO still may): over TCP, UCX emulates
    // RMA with messages that its peer's progress answers, and the one-sided
    // gather at 2x2 on the virtual cluster ran at 0.3x the linear one. On
    // an RDMA network, set it to the link's rate.
    double net_rma_gbs = 0;
    std::shared_ptr<const HostMap> hosts;  // which ranks share a host; null: one host
    double reduce_gbs = 6.0;               // bytes of output per second of a reduction
    double copy_gbs = 8.0;                 // memcpy
    // Beyond the caches, a copy with non-temporal stores (Schedule::stream:
    // the slots' publishes, large results copied out of them) goes at
    // stream_gbs: it does not read the destination's lines first. Measured
    // at np=2: glibc's memcpy of 32 MiB, two processes at once, 11.7-12.8
    // GB/s; the slots' pipelined all-gather, whose copies all stream from 8
    // MiB a rank, 11.2-11.9 GB/s of copies at 8-64 MiB a rank. Within the
    // caches, such a copy is priced as any other.
    double stream_gbs = 11.5;
    // Every rank on one host (Chorus's shared memory): a message of at most
    // eager_bytes costs local_alpha_us instead of alpha_us and one more copy
    // at copy_gbs (through the rings' cells), and a published slot is seen
    // by a peer slot_us after it is written.
    bool all_local = false;
    double local_alpha_us = 0.3;
    double slot_us = 0.1;
    // One-sided steps (single-copy access on one host): a get or put is a
    // descriptor message (local_alpha_us), then the copy on the reader's (or
    // writer's) CPU at get_gbs, or get_reduce_gbs of output for a get that
    // reduces as it reads; the expose completes a reply later. The rates
    // are those of two processes copying at once.
    double get_gbs = 9.0;
    // And a fixed cost per get or put: the system call, the peer's pages
    // looked up, the reply. Measured at np=2: a one-sided broadcast or
    // reduce of 1-4 KiB takes 3.6-8 us, against 0.2-0.7 us for shm_flat.
    double get_us = 3.0;
    // Measured at np=2 on the one-sided all-reduce and reduce (8-9.5 ms at
    // 16 MiB, 60-90 us at 64 KiB): far below a plain copy's rate, and below
    // the ring's, which wins at every size there.
    double get_reduce_gbs = 1.5;
    // The same steps on buffers every rank has mapped (Call::mapped): a
    // get or put is a plain copy (copy_gbs) or reduction (reduce_gbs) on
    // the reader's CPU, after this fixed cost (the descriptor's handling).
    double mapped_get_us = 0.3;
    // Steps (about 40 bytes each in the simulation) of the ranks simulated
    // when the schedules are not symmetric; see SimMode.
    size_t max_simulated_steps = 1000000;
    // Simulate rank 0 alone when the schedules are symmetric (off: every
    // rank, within the budget; for tests of the symmetric shortcut).
    bool use_symmetry = true;

    std::string describe() const;
};

// The bytes of a rank's buffers that the collective passes through its
// caches, and whether they are beyond them (CostParams::cache_mib): the
// largest buffer, or for an all-reduce its input and its result together
// (each the whole message; measured at np=2, chorus-bench allreduce, three
// alternating runs, warm and cold: the slots' pipeline 1.3-1.4x the ring's
// speed at 16 MiB, where the model, pricing the ring's messages at the
// link's rate, had taken the ring).
size_t cache_footprint(const CollArgs& args);
bool beyond_caches(const CollArgs& args, const CostParams& params);

enum class SimMode { Symmetric, Full, Sampled };
const char* sim_mode_name(SimMode m);

struct Prediction {
    double us = 0;
    SimMode mode = SimMode::Full;
    int ranks = 0;     // ranks whose schedules were simulated
    size_t steps = 0;  // their steps
    bool exact() const { return mode != SimMode::Sampled; }
};

// Predicted time for `algo` on these arguments (args.rank is ignored: the
// whole group is modelled).
Prediction predict(const Algorithm& algo, const CollArgs& args, const CostParams& params);
inline double predict_us(const Algorithm& algo, const CollArgs& args, const CostParams& params) {
    return predict(algo, args, params).us;
}

}  // namespace chorus::coll
