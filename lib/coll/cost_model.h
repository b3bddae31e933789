// Predicted run time of a collective, computed from the schedules the
// algorithms build (not from formulas written a second time): every rank's
// schedule is simulated together, step by step.
//
// The machine model (alpha-beta with ports): a message of n bytes takes
// alpha + n / bandwidth; it starts when both its send and its receive are
// ready and the sender's outgoing and the receiver's incoming port are free,
// and occupies both ports for n / bandwidth. Reductions and copies run on
// their rank's CPU, one at a time, at their own per-byte rates.
#pragma once

#include <string>

#include "coll/algorithm.h"

namespace chorus::coll {

struct CostParams {
    double alpha_us = 1.5;       // per message (latency + software overhead)
    double rendezvous_us = 2.5;  // more per message above eager_bytes (rendezvous handshake, page pinning)
    size_t eager_bytes = 8192;
    double bandwidth_gbs = 6.0;  // per link direction
    double reduce_gbs = 6.0;     // bytes of output per second of a reduction
    double copy_gbs = 8.0;       // memcpy
    // Every rank on one host (Chorus's shared memory): a message of at most
    // eager_bytes costs local_alpha_us instead of alpha_us, and a published
    // slot is seen by a peer slot_us after it is written.
    bool all_local = false;
    double local_alpha_us = 0.3;
    double slot_us = 0.1;
    // One-sided steps (single-copy access on one host): a get or put is a
    // descriptor message (local_alpha_us), then the copy on the reader's (or
    // writer's) CPU at get_gbs, or get_reduce_gbs of output for a get that
    // reduces as it reads; the expose completes a reply later. The rates
    // are those of two processes copying at once.
    double get_gbs = 9.0;
    double get_reduce_gbs = 7.0;
    // Every rank's schedule is simulated while the group's steps (this many
    // in all) fit; beyond, the model follows rank 0 alone and takes each
    // receive's sender to be as far along as rank 0 itself (a message with
    // tag T arrives after rank 0's own send with tag T starts): exact for
    // rank-symmetric algorithms such as ring, recursive doubling, halving and
    // Bruck; for a rank that only receives (a tree's leaves) it is optimistic.
    size_t max_simulated_steps = 1000000;

    std::string describe() const;
};

// Predicted microseconds for `algo` on these arguments (rank is ignored:
// the whole group is modelled).
double predict_us(const Algorithm& algo, const CollArgs& args, const CostParams& params);

}  // namespace chorus::coll
