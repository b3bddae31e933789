// A communicator: a transport to every peer, the configuration, and the
// operations in flight. Operations are numbered in the order they start
// (every rank starts them in the same order), and the number is part of
// every wire tag. What a call runs comes from the ScheduleCache, the memory
// it runs on from OpBuffers, and how a rank waits from Waiter and Watchdog.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "coll/algorithm.h"
#include "core/config.h"
#include "core/op_buffers.h"
#include "core/operation.h"
#include "core/schedule_cache.h"
#include "core/waiting.h"
#include "exec/device.h"
#include "net/bootstrap.h"
#include "net/transport.h"

namespace chorus {

class Communicator {
public:
    // Collective over `comm`: duplicates it and bootstraps the transports.
    static std::unique_ptr<Communicator> create_mpi(MPI_Comm comm, const Config& config);
    // Over an existing transport (loopback tests). Takes ownership. Without
    // a device, CUDA's (tests pass an emulated one). `boot`, if any, is kept
    // alive as long as the transport.
    Communicator(std::unique_ptr<net::Transport> transport, const Config& config,
                 std::unique_ptr<Device> device = nullptr, std::unique_ptr<net::Bootstrap> boot = nullptr);
    ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int rank() const { return transport_->rank(); }
    int size() const { return transport_->size(); }
    const Config& config() const { return config_; }

    // Start a collective. Arguments are validated by the caller. The returned
    // operation stays owned by the communicator until release(). `stream`
    // (a cudaStream_t) orders it after work queued there before the call:
    // always when a buffer is device memory (null: the legacy default
    // stream), and for host buffers when it is not null.
    Operation* start(coll::CollArgs args, const void* sendbuf, void* recvbuf, void* stream = nullptr);
    // End every operation in flight with CHORUS_ERR_COMM_FAILED and mark the
    // communicator failed (local: peers learn of it by timeout or UCX error).
    void abort(const std::string& why);
    // Progress every operation in flight; true if `op` has finished.
    bool progress(Operation* op);
    // Progress until `op` finishes (spinning briefly, then yielding the CPU).
    void wait(Operation* op);
    // Forget a finished operation; returns its result (the error message, if
    // any, goes to last_error()).
    chorus_result_t release(Operation* op);
    // Blocking convenience: start + wait + release.
    chorus_result_t run(const coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream = nullptr);

    bool failed() const { return failed_; }
    const std::string& failure() const { return failure_; }
    std::string& last_error() { return last_error_; }
    size_t inflight() const { return ops_.size(); }

private:
    void fail_op(Operation& op, chorus_result_t code, const std::string& message);
    Operation* launch(const coll::CollArgs& args, const Plan& plan, const void* sendbuf, void* recvbuf,
                      void* stream = nullptr);
    // CHORUS_CHECK: exchange the call's fingerprint first.
    void check_agreement(const coll::CollArgs& args);

    Config config_;
    std::unique_ptr<net::Bootstrap> boot_;  // before the transport: it outlives it
    std::unique_ptr<net::Transport> transport_;
    OpBuffers buffers_;
    ScheduleCache plans_;
    Waiter waiter_;
    Watchdog watchdog_;
    std::vector<std::unique_ptr<Operation>> ops_;
    // Finished operations kept for reuse, executor included: a steady
    // stream of calls allocates nothing.
    std::vector<std::unique_ptr<Operation>> spare_ops_;
    uint64_t next_seq_ = 0;
    bool failed_ = false;
    std::string failure_;
    std::string last_error_;
};

}  // namespace chorus
