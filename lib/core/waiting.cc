#include "core/waiting.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"

namespace chorus {

Waiter::Waiter(const Config& config, int local_ranks) {
    if (config.spin_before_yield >= 0) {
        spin_ = static_cast<unsigned>(config.spin_before_yield);
        return;
    }
    // The host's cores, not this process's affinity mask: mpirun binds
    // each rank to one core when they fit, and then spinning is right.
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    spin_ = local_ranks <= (cores > 0 ? cores : 1) ? 1u << 20 : 64;
}

bool Waiter::after_pass(bool moved) {
    if (moved) {
        idle_polls_ = 0;
        return false;
    }
    // While spinning, a pass is a few polls: the idle check (a clock read,
    // the peers' notices) every 1024 of them. Once each pass yields or naps,
    // a pass can take a time slice on a busy host, and 1024 of them seconds:
    // check every 16.
    ++idle_polls_;
    return (idle_polls_ & (idle_polls_ > spin_ ? 15u : 1023u)) == 0;
}

void Waiter::pause(unsigned idle) const {
    // Ranks that outnumber cores must give the CPU away soon, or the peer
    // they wait for cannot run; with a core each, spinning is fastest.
    if (idle <= spin_) return;
    if (idle < spin_ + 4096) {
        sched_yield();
    } else {
        struct timespec ts {
            0, 20000
        };
        nanosleep(&ts, nullptr);
    }
}

void Watchdog::moved(std::vector<std::unique_ptr<Operation>>& ops) {
    for (auto& op : ops) op->last_change = {};
}

bool Watchdog::check(std::vector<std::unique_ptr<Operation>>& ops, net::Transport& transport, const std::string& where,
                     const std::function<void(Operation&, const std::string&)>& timed_out) {
    auto now = std::chrono::steady_clock::now();
    bool warned = false;
    for (auto& op : ops)
        if (op->last_change == std::chrono::steady_clock::time_point{}) op->last_change = now;
    // After a quarter second without progress, look for dead peers.
    if (now - last_peer_check_ > std::chrono::milliseconds(250)) {
        last_peer_check_ = now;
        bool stalled = false;
        for (auto& op : ops)
            stalled = stalled || (!op->finished && now - op->last_change > std::chrono::milliseconds(250));
        if (stalled) transport.check_peers();
    }
    for (auto& op : ops) {
        if (op->finished) continue;
        auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - op->last_change).count();
        if (warn_s_ && !op->warned && static_cast<uint64_t>(idle) >= warn_s_ * 1000) {
            op->warned = warned = true;
            std::vector<int> peers = op->executor->waiting_peers();
            std::string who;
            for (int p : peers) who += cat(who.empty() ? "" : ",", p);
            log(LogLevel::Warn, transport.rank(), coll::collective_name(op->args.coll), " #", op->seq, " on ", where,
                " has made no progress for ", idle / 1000, " s; it waits for ",
                peers.empty() ? std::string("local work") : cat(peers.size() == 1 ? "rank " : "ranks ", who), " (",
                op->executor->pending_summary(), "). Still waiting (CHORUS_HANG_WARN_S=", warn_s_,
                timeout_ms_ ? cat(", CHORUS_TIMEOUT_MS=", timeout_ms_) : std::string(", no CHORUS_TIMEOUT_MS"), ").");
        }
        if (timeout_ms_ && static_cast<uint64_t>(idle) >= timeout_ms_)
            timed_out(*op, cat("no progress for ", idle, " ms (CHORUS_TIMEOUT_MS=", timeout_ms_,
                               "); pending: ", op->executor->pending_summary()));
    }
    return warned;
}

}  // namespace chorus
