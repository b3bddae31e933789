// A communicator: a transport to every peer, the configuration, pooled
// scratch, a cache of schedules, and the operations in flight. Operations are
// numbered in the order they start (every rank starts them in the same
// order), and the number is part of every wire tag.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <vector>
#include <memory>
#include <string>
#include <unordered_map>

#include "coll/algorithm.h"
#include "coll/selector.h"
#include "config.h"
#include "device.h"
#include "executor.h"
#include "net/transport.h"
#include "scratch_pool.h"

namespace chorus {

// One collective in flight.
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
    bool finished = false;
    chorus_result_t result = CHORUS_SUCCESS;
    std::string error;
    size_t last_completed = 0;
    std::chrono::steady_clock::time_point last_change;
};

class Communicator {
public:
    // Collective over `comm`: duplicates it and bootstraps UCX.
    static std::unique_ptr<Communicator> create_mpi(MPI_Comm comm, const Config& config);
    // Over an existing transport (loopback tests). Takes ownership. Without
    // a device, CUDA's (tests pass an emulated one).
    Communicator(std::unique_ptr<net::Transport> transport, const Config& config, MPI_Comm owned = MPI_COMM_NULL,
                 std::unique_ptr<Device> device = nullptr);
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
    std::shared_ptr<const Schedule> schedule_for(const coll::CollArgs& args, const coll::Algorithm& algo);
    const coll::Algorithm& choose(const coll::CollArgs& args);
    void fail_op(Operation& op, chorus_result_t code, const std::string& message);
    void check_timeouts();
    Operation* launch(const coll::CollArgs& args, const coll::Algorithm& algo, std::shared_ptr<const Schedule> schedule,
                      const void* sendbuf, void* recvbuf, void* stream = nullptr);
    // Device-side buffers for `op` (scratch, mirrors of host buffers), queued
    // copies in, and the executor's DeviceUse. Returns the buffers to run on.
    Buffers prepare_device(Operation& op, const void* sendbuf, void* recvbuf, void* stream, MemKind ks, MemKind kr,
                           DeviceUse& use);
    void release_buffers(Operation& op);
    void check_agreement(const coll::CollArgs& args);

    Config config_;
    MPI_Comm mpi_comm_;
    std::unique_ptr<net::Transport> transport_;
    std::unique_ptr<Device> device_;
    ScratchPool scratch_;
    ScratchPool device_scratch_;  // device memory: scratch and mirrors
    ScratchPool staging_;         // pinned host memory: staged transfers
    coll::Selector selector_;
    std::vector<std::unique_ptr<Operation>> ops_;
    // Finished operations kept for reuse, executor included: a steady
    // stream of calls allocates nothing.
    std::vector<std::unique_ptr<Operation>> spare_ops_;
    // Schedules by everything that shapes them.
    struct ScheduleKey {
        const coll::Algorithm* algo;
        size_t count;
        int dtype, op, root, in_place;
        std::vector<size_t> counts;
        bool operator==(const ScheduleKey& o) const {
            return algo == o.algo && count == o.count && dtype == o.dtype && op == o.op && root == o.root &&
                   in_place == o.in_place && counts == o.counts;
        }
    };
    struct ScheduleKeyHash {
        size_t operator()(const ScheduleKey& k) const;
    };
    std::unordered_map<ScheduleKey, std::shared_ptr<const Schedule>, ScheduleKeyHash> schedules_;
    // The last call's shape, algorithm and schedule.
    struct Memo {
        coll::CollArgs args;
        const coll::Algorithm* algo = nullptr;
        std::shared_ptr<const Schedule> schedule;
    } memo_;
    // CHORUS_ALGO, resolved once per collective (nullptr: choose).
    std::vector<const coll::Algorithm*> forced_;
    uint64_t next_seq_ = 0;
    unsigned idle_polls_ = 0;
    int spin_ = 64;  // idle polls before yielding (CHORUS_SPIN, or from ranks per core)
    std::chrono::steady_clock::time_point last_peer_check_;
    bool failed_ = false;
    std::string failure_;
    std::string last_error_;
};

}  // namespace chorus
