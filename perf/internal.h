// The one way perf/ reaches inside the library. The benchmarks time the
// public API (chorus.h); a few tools look at what it hides: chorus-bench
// allocates device buffers through the runtime wrappers the library uses,
// chorus-model asks the cost model and the selector what they would choose,
// chorus-handoff times the host copy and reduce loops and the shared-memory
// segment's layout, chorus-tune measures them and writes the cost file.
// None of this is an API: it changes with the library,
// and perf/ builds against the static core (libchorus_core.a) to get it.
#pragma once

#include "base/error.h"               // chorus::Error, chorus::parse_bytes
#include "coll/algorithm.h"           // Collective, CollArgs, the registry
#include "coll/planner/cost_model.h"  // CostParams, the model's predictions
#include "coll/planner/selector.h"    // Selector::choose
#include "core/config.h"              // the settings table (CHORUS_*)
#include "core/machine_costs.h"       // the cost file, the cache size
#include "cuda/cuda_runtime_api.h"    // chorus::gpu: device memory and streams
#include "net/shm/shm_segment.h"      // the slots' layout
#include "reduce/datatype.h"          // element sizes
#include "reduce/host_reducer.h"      // host_copy, host_reduce
