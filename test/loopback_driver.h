// Runs N ranks of Chorus inside one process over the loopback transport:
// one thread progresses every rank's operation in turn until all finish.
// Because loopback transfers complete synchronously, many rounds in a row in
// which no rank completes a step are a deadlock (one round is not enough with
// an emulated device, whose queued work runs over several polls), reported
// with every rank's pending transfers instead of hanging the test.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "loopback_transport.h"

namespace test {

struct LoopbackGroup {
    std::shared_ptr<chorus::net::LoopbackHub> hub;
    std::vector<std::unique_ptr<chorus::Communicator>> comms;
    // The algorithm each rank ran in the last run().
    std::vector<const char*> algorithms;

    using Wrap = std::function<std::unique_ptr<chorus::net::Transport>(std::unique_ptr<chorus::net::Transport>)>;
    // `device` makes each rank's Device (default: CUDA's); `wrap` puts
    // another transport around each rank's loopback transport; `hosts`
    // emulates a host map (each rank's host label; empty: one host).
    LoopbackGroup(int n, const chorus::Config& config, bool rendezvous = false,
                  const std::function<std::unique_ptr<chorus::Device>()>& device = nullptr, const Wrap& wrap = nullptr,
                  const std::vector<int>& hosts = {})
        : hub(std::make_shared<chorus::net::LoopbackHub>(n, rendezvous)) {
        hub->emulate_hosts(hosts);
        for (int r = 0; r < n; ++r) {
            std::unique_ptr<chorus::net::Transport> t = std::make_unique<chorus::net::LoopbackTransport>(hub, r);
            if (wrap) t = wrap(std::move(t));
            comms.push_back(std::make_unique<chorus::Communicator>(std::move(t), config, device ? device() : nullptr));
        }
    }
    int size() const { return static_cast<int>(comms.size()); }

    // Start `args` on every rank with that rank's buffers and drive all of
    // them to completion. Returns each rank's result; `error` collects the
    // failure messages (and the deadlock report, if any).
    std::vector<chorus_result_t> run(const chorus::coll::CollArgs& args, const std::vector<const void*>& send,
                                     const std::vector<void*>& recv, std::string* error = nullptr,
                                     const std::vector<void*>& streams = {}) {
        return run(std::vector<chorus::coll::CollArgs>(comms.size(), args), send, recv, error, streams);
    }
    // The same with each rank's own arguments (the v forms' counts differ).
    std::vector<chorus_result_t> run(const std::vector<chorus::coll::CollArgs>& args,
                                     const std::vector<const void*>& send, const std::vector<void*>& recv,
                                     std::string* error = nullptr, const std::vector<void*>& streams = {}) {
        int n = size();
        std::vector<chorus::Operation*> ops(n);
        std::vector<chorus_result_t> rc(n, CHORUS_SUCCESS);
        algorithms.assign(static_cast<size_t>(n), "");
        for (int r = 0; r < n; ++r) {
            ops[r] = comms[r]->start(args[r], send[r], recv[r], streams.empty() ? nullptr : streams[r]);
            algorithms[r] = ops[r]->algorithm;
        }
        size_t last_total = ~size_t(0);
        int stalled = 0;
        for (;;) {
            bool all = true;
            size_t total = 0;
            for (int r = 0; r < n; ++r) {
                if (!ops[r]) continue;
                bool done = comms[r]->progress(ops[r]);
                total += ops[r]->executor->completed();
                all = all && done;
            }
            if (all) break;
            stalled = total == last_total ? stalled + 1 : 0;
            if (stalled == 1000) {
                std::string report = "deadlock:";
                for (int r = 0; r < n; ++r)
                    if (!ops[r]->finished)
                        report += chorus::cat(" [rank ", r, ": ", ops[r]->executor->pending_summary(), "]");
                if (error) *error += report;
                for (int r = 0; r < n; ++r) {
                    if (ops[r]->finished) {
                        rc[r] = comms[r]->release(ops[r]);
                    } else {
                        ops[r]->executor->abort();
                        rc[r] = CHORUS_ERR_INTERNAL;
                        ops[r]->finished = true;
                        comms[r]->release(ops[r]);
                    }
                }
                return rc;
            }
            last_total = total;
        }
        for (int r = 0; r < n; ++r) {
            rc[r] = comms[r]->release(ops[r]);
            if (rc[r] != CHORUS_SUCCESS && error)
                *error += chorus::cat(" [rank ", r, ": ", comms[r]->last_error(), "]");
        }
        return rc;
    }
};

}  // namespace test
