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
#include <memory>
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
    // Traces: stamp each step when it becomes ready and when it is done
    // (steps ready now, and those done before, are stamped now). Off again
    // at reset().
    void time_steps();
    const std::vector<uint64_t>& ready_ticks() const { return ready_ticks_; }
    const std::vector<uint64_t>& done_ticks() const { return done_ticks_; }

private:
    // The messages of a one-sided step (executor_one_sided.cc): its
    // descriptor, the reply, and the data itself when it travels as a
    // message (device memory), the keyed get or put itself (Access: UCX
    // RMA); None for a send or a receive step.
    enum class Part : uint8_t { None, Desc, Reply, Data, Reduced, Access };
    struct InFlight {
        StepId step;
        net::Handle handle;
        void* slot;  // staging buffer, or null
        Part part = Part::None;
        bool send = false;
        char* buf = nullptr;  // a staged receive: where the data goes
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
        Part part = Part::None;
    };
    // A one-sided step's state: the descriptor (address, bytes, how the
    // region is reached) and the reply, which the transport reads or writes
    // while they are in flight, and the parts still to complete.
    struct OneSided {
        // address, bytes, mode; for a region in mapped memory, its
        // net::MappedRef (serial, fd, offset, size)
        uint64_t desc[7] = {};
        uint64_t reply = 0;
        int pending = 0;
    };
    // With keyed access (UCX RMA), the descriptor also carries the exposed
    // region's key, and the exposer holds its registration until the peer
    // replies.
    struct KeyedDesc {
        uint64_t desc[4];  // address, bytes, mode, the key's bytes
        char key[net::Transport::kMaxKey];
    };
    struct Keyed {
        KeyedDesc msg;
        uint64_t region = 0;  // the registration held, or 0
    };
    // The descriptor's message of step s.
    void* desc_of(StepId s) { return keyed_.empty() ? static_cast<void*>(os_[s].desc) : &keyed_[s].msg; }
    size_t desc_bytes() const { return keyed_.empty() ? sizeof(OneSided::desc) : sizeof(KeyedDesc); }
    void os_release(StepId s);
    struct FinalCopy {
        void* dst;
        const void* src;
        size_t bytes;
    };
    void make_ready(StepId s);
    void finish(StepId s);
    void run_local(StepId s);
    void post(StepId s);
    // Send or receive st.bytes of `buf` for step s (part `part`), staged
    // through pinned host memory when the buffers are device-side.
    void transfer(StepId s, Part part, bool is_send, char* buf);
    void post_send(StepId s, const void* src, void* slot, Part part);
    // A transfer of step s is complete: the step, or its part.
    void done(StepId s, Part part);
    // One-sided steps: start, a part complete, the copy itself, a control
    // message (never staged, outside the windows).
    void os_start(StepId s);
    void os_done(StepId s, Part part);
    void os_copy(StepId s, uint64_t remote);
    // The copy (or the get that reduces) straight through `remote`, where
    // this process sees the peer's region.
    void os_copy_mapped(StepId s, char* remote);
    void os_access(StepId s);  // keyed: the get or put through the transport
    // A get's data, landed in scratch, reduced into place: at once on the
    // host (false), or queued on the device (true: the step ends later).
    bool reduce_landed(StepId s);
    void os_message(StepId s, Part part, bool is_send, void* buf, size_t bytes);
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
    // Its abilities beyond messages (net/transport.h), null where it has none.
    net::PublishSlots* slots_ = nullptr;
    net::PeerMemory* peer_memory_ = nullptr;
    net::KeyedMemory* keyed_memory_ = nullptr;
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
    std::vector<StepId> ready_one_sided_;
    std::vector<OneSided> os_;  // per step, when the schedule has one-sided steps
    std::vector<Keyed> keyed_;  // per step, when they use keyed access
    struct FreeBounce {
        void operator()(char* p) const;
    };
    std::unique_ptr<char, FreeBounce> bounce_;  // a get that reduces reads a block at a time into it
    std::vector<StepId> awaiting_;              // await steps whose peer has not published yet
    size_t await_next_ = 0;                     // the await poll_slots reads first
    std::vector<StepId> publishing_;            // publishes waiting for their slot to be free
    std::vector<StepId> claiming_;              // claims waiting for their slot to be free
    std::vector<StepId> releasing_;             // releases ready to run
    std::vector<InFlight> inflight_;
    std::vector<Queued> queued_;  // in mark order
    size_t queued_head_ = 0;
    std::vector<FinalCopy> final_copies_;
    int sends_inflight_ = 0, recvs_inflight_ = 0;
    bool timed_ = false;
    std::vector<uint64_t> ready_ticks_, done_ticks_;  // base/clock.h ticks()
};

}  // namespace chorus
