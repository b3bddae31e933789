// How a rank waits. A blocking call progresses every operation in flight;
// while nothing moves it spins, then yields the CPU, then naps, so ranks that
// outnumber cores do not starve each other. Every 1024 idle polls while it
// spins, every 16 once it yields or naps, it reads the clock (never on the
// way of a call that makes progress) to look for dead peers, peers' notices
// and operations that made no progress for CHORUS_TIMEOUT_MS.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/operation.h"
#include "net/transport.h"

namespace chorus {

class Waiter {
public:
    // `local_ranks`: ranks of the communicator on this host.
    Waiter(const Config& config, int local_ranks);

    // After a pass over the operations in flight (`moved`: some step
    // completed). True when the idle checks are due.
    bool after_pass(bool moved);
    // One turn of a waiting loop that has made `idle` passes without
    // progress: nothing, a yield, or a nap.
    void pause(unsigned idle) const;
    // Whether the last pass moved (a waiting loop restarts its count).
    bool just_moved() const { return idle_polls_ == 0; }
    // How long a call run in place may spin for a peer before it waits as
    // an operation (it then yields as the spin policy says).
    unsigned inline_polls() const { return spin_ < 4096 ? spin_ : 4096; }

private:
    unsigned idle_polls_ = 0;
    unsigned spin_ = 64;  // idle polls before yielding
};

// Idle checks over the operations in flight: stamps when each became idle,
// asks the transport to look for dead peers after a quarter second without
// progress, warns once about an operation idle for CHORUS_HANG_WARN_S (and
// keeps waiting: a slow peer is not a dead one), and reports operations idle
// for longer than CHORUS_TIMEOUT_MS, if set.
class Watchdog {
public:
    explicit Watchdog(const Config& config) : timeout_ms_(config.timeout_ms), warn_s_(config.hang_warn_s) {}
    // A moved operation's idle time restarts at the next check.
    static void moved(std::vector<std::unique_ptr<Operation>>& ops);
    // `where`: the communicator, for messages ("comm 3 (4 ranks)"). True
    // when it printed the hang warning now.
    bool check(std::vector<std::unique_ptr<Operation>>& ops, net::Transport& transport, const std::string& where,
               const std::function<void(Operation&, const std::string&)>& timed_out);

private:
    uint64_t timeout_ms_;
    uint64_t warn_s_;
    std::chrono::steady_clock::time_point last_peer_check_;
};

}  // namespace chorus
