// One collective in flight on a communicator: its arguments, the schedule it
// runs, the executor running it, and its buffers.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chorus.h"
#include "coll/algorithm.h"
#include "exec/executor.h"
#include "exec/schedule.h"

namespace chorus {

struct Operation {
    uint64_t seq = 0;
    coll::CollArgs args;
    const char* algorithm = "";
    std::shared_ptr<const Schedule> schedule;
    std::unique_ptr<Executor> executor;
    void* scratch = nullptr;
    // Device-side operation: scratch and mirrors come from the device pool.
    bool on_device = false;
    // Device copies of host user buffers in a device-side operation.
    void* mirrors[2] = {nullptr, nullptr};  // send, receive
    size_t mirror_bytes = 0;                // of the receive buffer's mirror
    bool steps_done = false;                // every step done; waits for the transport to settle
    bool finished = false;
    chorus_result_t result = CHORUS_SUCCESS;
    std::string error;
    size_t last_completed = 0;
    bool warned = false;  // the hang warning was printed
    uint64_t record = 0;  // its number in the flight recorder
    std::chrono::steady_clock::time_point last_change;
    // A two-stage algorithm (coll::Algorithm::two_stage) in its first stage:
    // the sizes it sends and gathers (host memory, whatever the user's
    // buffers), and what the second stage runs on, prepared at the start.
    bool first_stage = false;
    const coll::Algorithm* algo = nullptr;
    std::vector<uint64_t> sizes_out, sizes_in;
    Buffers user;
    DeviceUse use;
    void* user_recv = nullptr;  // for the final copy out of a mirror

    // Back to the defaults for reuse, keeping the executor and the capacity
    // of the argument arrays (launch() assigns `args` whole). A field added
    // above is reset here too.
    void recycle() {
        seq = 0;
        algorithm = "";
        schedule.reset();
        scratch = nullptr;
        on_device = false;
        mirrors[0] = mirrors[1] = nullptr;
        mirror_bytes = 0;
        steps_done = false;
        finished = false;
        result = CHORUS_SUCCESS;
        error.clear();
        last_completed = 0;
        warned = false;
        record = 0;
        last_change = {};
        first_stage = false;
        algo = nullptr;
        sizes_out.clear();
        sizes_in.clear();
        user = {};
        use = {};
        user_recv = nullptr;
    }
};

}  // namespace chorus
