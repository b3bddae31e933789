// Runs one rank's schedule over a transport. Each step starts once the steps
// it depends on are done. Receives and sends are posted in step order within
// a bounded window each (separate windows, so a rank whose receive window is
// full still sends what its peers wait for; and the earliest ready transfer is
// never held back by later ones, see may_post). Reductions and copies run as
// soon as they are ready, inside progress().
//
// Device memory changes how steps run, never which steps run: when the
// operation's buffers are device-side, reductions and copies are queued on
// the communicator's Device and finish when its mark says so; transfers go
// to the transport directly if it takes device memory, and otherwise through
// pinned host staging buffers, one per transfer (device -> staging -> wire,
// wire -> staging -> device), so chunk k+1 is staged while chunk k is on the
// wire.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/device.h"
#include "exec/schedule.h"
#include "exec/scratch_pool.h"
#include "net/transport.h"

namespace chorus {

struct Buffers {
    const void* send = nullptr;
    void* recv = nullptr;
    void* scratch = nullptr;
    uint64_t slot_op = 0;  // the slot operation number, if the schedule uses slots
};

// Where an operation's work runs. Without `on_device`, everything runs on
// the CPU and `device` is used only for the gate.
struct DeviceUse {
    Device* device = nullptr;
    bool on_device = false;          // the three buffers are device-side
    bool direct = false;             // the transport takes device memory itself
    ScratchPool* staging = nullptr;  // pinned buffers otherwise
    uint64_t gate = 0;               // no step starts before this mark is done (0: none)
};

class Executor {
public:
    // With `done`, the first `done` steps (in step order) have run already
    // (run_in_order began the schedule).
    Executor(const Schedule& schedule, net::Transport& transport, Buffers buffers, uint64_t seq, int window,
             DeviceUse device = {}, size_t done = 0);
    // Run another schedule with this executor, whose previous one has
    // finished or been aborted (keeps the memory of its bookkeeping).
    void reset(const Schedule& schedule, Buffers buffers, uint64_t seq, DeviceUse device = {}, size_t done = 0);
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    // Do what can be done now without blocking. Returns true once every step
    // is complete. Throws Error (with the step and peer in its message).
    bool progress();
    bool done() const { return finished_; }
    // Device copies queued after the last step (results copied out of a
    // device mirror of a host buffer); the operation is done after them.
    void add_final_copy(void* dst, const void* src, size_t bytes) { final_copies_.push_back({dst, src, bytes}); }
    // Cancel transfers in flight and wait for queued device work (after a
    // failure elsewhere).
    void abort();
    // Transfers still pending, for timeout messages: "recv from 3 (step 7)".
    std::string pending_summary() const;
    // The distinct peers of the transfers in flight, in rank order.
    std::vector<int> waiting_peers() const;
    // Number of steps completed so far (progress indicator for timeouts).
    size_t completed() const { return completed_; }

private:
    struct InFlight {
        StepId step;
        net::Handle handle;
        void* slot;  // staging buffer, or null
    };
    // Device work a step waits for: a local step itself, a send's copy into
    // its staging buffer (then it goes on the wire), or a receive's copy out
    // of its staging buffer (then it is done).
    enum class Phase : uint8_t { Local, StagedOut, StagedIn, Published };
    struct Queued {
        StepId step;
        uint64_t mark;
        Phase phase;
        void* slot;
    };
    struct FinalCopy {
        void* dst;
        const void* src;
        size_t bytes;
    };
    void make_ready(StepId s);
    void finish(StepId s);
    void run_local(StepId s);
    void post(StepId s);
    void post_send(StepId s, const void* src, void* slot);
    void transfer_done(const InFlight& f);
    void queued_done(const Queued& q);
    void drain_local();
    // Publish and await steps (the publish slots); true if one completed.
    bool poll_slots();
    void publish(StepId s);
    void release_slot(void* slot);
    bool may_post(StepId s, StepKind kind, int inflight) const;
    char* resolve(Region r) const;
    [[noreturn]] void rethrow_with_context(StepId s, const class Error& e) const;

    const Schedule* sched_;
    net::Transport& transport_;
    Buffers buffers_;
    uint64_t seq_;
    int window_;
    DeviceUse dev_;
    size_t completed_ = 0;
    bool finished_ = false;
    bool slots_released_ = false;
    uint64_t final_mark_ = 0;
    std::vector<uint32_t> remaining_;
    // Ready transfers, kept as min-heaps on the step id (build order).
    std::vector<StepId> ready_send_, ready_recv_;
    std::vector<StepId> ready_local_;
    std::vector<StepId> awaiting_;  // await steps whose peer has not published yet
    StepId publishing_ = kNoStep;   // a publish waiting for its slot to be free
    static constexpr StepId kNoStep = ~StepId(0);
    std::vector<InFlight> inflight_;
    std::vector<Queued> queued_;  // in mark order
    size_t queued_head_ = 0;
    std::vector<FinalCopy> final_copies_;
    int sends_inflight_ = 0, recvs_inflight_ = 0;
};

}  // namespace chorus
