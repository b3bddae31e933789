// What the two halves of the cost model's simulation share: simulation.cc
// (the steps added and paired) and simulation_run.cc (the run). Internal to
// them.
#pragma once

#include <cstdint>
#include <limits>

#include "coll/planner/simulation.h"
#include "exec/schedule.h"

namespace chorus::coll::sim {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
// Node::lockstep values.
constexpr uint8_t kWaitsForOwnSend = 1;  // a receive from a rank not simulated
constexpr uint8_t kAwaited = 2;          // a send such a receive waits for
// Node::state values (0: it waits for its dependencies).
constexpr uint8_t kParked = 1;    // for its partner (the other end, the publish it awaits)
constexpr uint8_t kFinished = 2;  // done

// Messages, and the one-sided pairs (an expose meets its peer's get or
// put the way a send meets a receive).
inline bool is_transfer(StepKind k) {
    return k == StepKind::Send || k == StepKind::Recv || k == StepKind::Expose || k == StepKind::Get ||
           k == StepKind::Put;
}
inline bool is_send(StepKind k) {
    return k == StepKind::Send || k == StepKind::Expose;
}
inline bool one_sided(StepKind k) {
    return k == StepKind::Expose || k == StepKind::Get || k == StepKind::Put;
}

// The microseconds `bytes` take at `gbs` GB/s.
inline double us(uint64_t bytes, double gbs) {
    return static_cast<double>(bytes) / (gbs * 1e3);
}

}  // namespace chorus::coll::sim
