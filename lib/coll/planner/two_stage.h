// The first stage of the two-stage algorithms (Algorithm::two_stage): the
// irregular two-level forms, whose host leaders must know their members'
// block sizes before their schedule can be built, while MPI tells a rank
// only its own (gatherv, scatterv: its count, the root every count;
// all-to-allv: its send and receive counts).
//
// Stage 1 is a schedule of fixed shape (it depends only on the host map,
// the root and the rank count): inside each host, every member sends its
// own_sizes() (sizes_per_rank() uint64 values) to the host's gatherer (the
// root on its own host for gatherv and scatterv, the leader elsewhere and
// for all-to-allv), which receives them in local order. Stage 2 is the
// algorithm's builder with CollArgs::host_sizes set to what the gatherer
// received (empty elsewhere). The caller runs the two one after the other
// under one operation number: stage 1's single tag has the top bit of the
// schedule's tag bits, stage 2 is built with one bit less (stage_two()),
// so a peer's stage-2 message is never taken for a stage-1 one.
//
// Cost: one message of 8 sizes_per_rank() bytes from every member to its
// gatherer, one round, before the data moves.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "coll/algorithm.h"

namespace chorus::coll {

// uint64 values each rank contributes: 1 (gatherv, scatterv: its count),
// or 2 size (all-to-allv: its send counts, then its receive counts).
size_t sizes_per_rank(const CollArgs& a);
// This rank's contribution.
std::vector<uint64_t> own_sizes(const CollArgs& a);
// The rank that gathers host `h`'s sizes.
int sizes_gatherer(const CollArgs& a, int h);
// uint64 values this rank receives in stage 1 (its host's members' times
// sizes_per_rank() on the gatherer, else 0).
size_t gathered_sizes(const CollArgs& a);
// Stage 1: Send holds own_sizes() and Recv, on the gatherer, room for
// gathered_sizes() (uint64 each).
std::unique_ptr<Schedule> build_sizes_stage(const CollArgs& a);
// What stage 1 brings this rank where every rank is called with `a` (its
// own rank aside): the cost model, which knows every rank's arguments.
std::vector<size_t> model_host_sizes(const CollArgs& a);
// Stage 2's arguments for the Composer: one tag bit less (the top one is
// stage 1's).
CollArgs stage_two(const CollArgs& a);

}  // namespace chorus::coll
