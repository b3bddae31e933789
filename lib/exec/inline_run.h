// A schedule without transfers (local steps and publish slots: a flat
// collective, or any collective on one rank) run on the calling thread, in
// step order, on host buffers: the way the smallest collectives complete
// without an executor. It spins at most `polls` times at a publish whose
// slot is still being read or an await whose peer has not published; it
// then stops, and an Executor started with the steps done so far finishes
// the schedule (Executor::reset's `done`). Steps are built after the steps
// they depend on, so step order is a valid order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec/executor.h"
#include "exec/schedule.h"
#include "net/transport.h"

namespace chorus {

// The number of steps done (all of them: the schedule has finished, and its
// slot operation is released). `slots`: the transport's publish slots (null
// only for a schedule that uses none). With `arrived`, the rank's arrival is
// stamped there (base/clock.h ticks()) where the stamp delays no peer: right
// after its contribution is published, or at the first poll that finds it
// must wait, whichever comes first (at the start for a schedule without
// slots).
size_t run_in_order(const Schedule& s, net::PublishSlots* slots, const Buffers& b, unsigned polls,
                    uint64_t* arrived = nullptr);
// run_in_order for the publish slots of one kind of transport, chosen once
// per communicator: the shared-memory transport's slot calls inline (its
// class is final; a small collective is a handful of them), any other's
// through PublishSlots. `slots` must be that transport's.
using InPlaceRunner = size_t (*)(const Schedule& s, net::PublishSlots* slots, const Buffers& b, unsigned polls,
                                 uint64_t* arrived);
InPlaceRunner in_place_runner(net::Transport& t);

}  // namespace chorus
