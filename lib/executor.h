// Runs one rank's schedule over a transport. Each step starts once the steps
// it depends on are done. Receives and sends are posted in step order within
// a bounded window each (separate windows, so a rank whose receive window is
// full still sends what its peers wait for; and the earliest ready transfer is
// never held back by later ones, see may_post). Reductions and copies run as
// soon as they are ready, inside progress().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/transport.h"
#include "schedule.h"

namespace chorus {

struct Buffers {
    const void* send = nullptr;
    void* recv = nullptr;
    void* scratch = nullptr;
};

class Executor {
public:
    Executor(const Schedule& schedule, net::Transport& transport, Buffers buffers, uint64_t seq, int window);
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    // Do what can be done now without blocking. Returns true once every step
    // is complete. Throws Error (with the step and peer in its message).
    bool progress();
    bool done() const { return completed_ == schedule_.steps().size(); }
    // Cancel transfers in flight (after a failure elsewhere).
    void abort();
    // Transfers still pending, for timeout messages: "recv from 3 (step 7)".
    std::string pending_summary() const;
    // Number of steps completed so far (progress indicator for timeouts).
    size_t completed() const { return completed_; }

private:
    struct InFlight {
        StepId step;
        net::Handle handle;
    };
    void make_ready(StepId s);
    void finish(StepId s);
    void run_local(StepId s);
    void post(StepId s);
    void drain_local();
    bool may_post(StepId s, StepKind kind, int inflight) const;
    char* resolve(Region r) const;
    [[noreturn]] void rethrow_with_context(StepId s, const class Error& e) const;

    const Schedule& schedule_;
    net::Transport& transport_;
    Buffers buffers_;
    uint64_t seq_;
    int window_;
    size_t completed_ = 0;
    std::vector<uint32_t> remaining_;
    // Ready transfers, kept as min-heaps on the step id (build order).
    std::vector<StepId> ready_send_, ready_recv_;
    std::vector<StepId> ready_local_;
    std::vector<InFlight> inflight_;
    int sends_inflight_ = 0, recvs_inflight_ = 0;
};

}  // namespace chorus
