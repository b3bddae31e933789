// The torch.distributed backend "chorus": a c10d::Backend over one Chorus
// communicator, created through torch's Store (chorus_comm_create_oob), so
// that it works under torchrun as under mpirun.
//
// Threads and locks. The C API takes one thread at a time per communicator:
// every call on it holds Comm::mu, and nothing else is done while holding it
// (no Python, no future callbacks). A collective is started on the calling
// thread (chorus_i...) and returns a Work, which completes when a thread
// polls it: Work::wait(), is_completed(), or get_future(). get_future()
// completes the Work before it returns, so that the future's callbacks run
// on the calling thread, in program order: DDP's communication hooks start
// collectives from their callbacks (PowerSGD waits for them there), and
// collectives must start in the same order on every rank. A CPU backend
// whose callbacks ran on a thread of its own would order them by timing.
#pragma once

#include <chorus.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace chorus_c10d {

// The communicator and its lock, shared by the backend and its Works (a
// Work may outlive its backend).
struct Comm {
    std::mutex mu;                  // held around every C API call on `handle`
    chorus_comm_t handle = nullptr; // null once destroyed
    std::string group;              // torch's group name, for messages
    std::vector<int64_t> global_ranks;
    int rank = 0, size = 0;
    std::atomic<int64_t> timeout_ms{0};
    bool aborted = false;  // under mu
    // Requests of Works dropped before they completed, with the tensors
    // they use (under mu): tested by later calls, waited for at shutdown.
    struct Orphan {
        std::vector<chorus_request_t> requests;
        std::vector<at::Tensor> tensors;
    };
    std::vector<Orphan> orphans;
    void reap_locked(bool wait);

    // The last error of the communicator, with the group named (under mu).
    std::string last_error(chorus_result_t rc) const;
};

class Work final : public c10d::Work {
public:
    Work(std::shared_ptr<Comm> comm, c10d::OpType type, const char* what, std::vector<at::Tensor> outputs);
    ~Work() override;

    // Building (before the Work is returned; caller holds comm->mu).
    void keep(const at::Tensor& t) { keep_.push_back(t); }
    void add(chorus_request_t request) { requests_.push_back(request); }
    void on_success(std::function<void()> fn) { finish_ = std::move(fn); }
    // The requests started so far are waited for (they are in flight on every
    // rank), then the failure is raised (caller holds comm->mu).
    [[noreturn]] void fail_start(chorus_result_t rc);

    bool isCompleted() override;
    bool isSuccess() const override;
    std::exception_ptr exception() const override;
    std::vector<at::Tensor> result() override;
    bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
    void synchronize() override {}
    void abort() override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
    std::chrono::milliseconds getTimeout() const override;

    // Progress the communicator and test this Work's requests; true once
    // they are all done (and the Work is then published). Not under mu.
    bool poll();

private:
    // Under comm->mu: test the requests; true when none is left.
    bool test_locked();
    void publish();
    void complete_future(const c10::intrusive_ptr<c10::ivalue::Future>& f);

    std::shared_ptr<Comm> comm_;
    const char* what_;
    std::vector<at::Tensor> outputs_;
    std::vector<at::Tensor> keep_;
    std::vector<chorus_request_t> requests_;  // under comm->mu
    std::function<void()> finish_;            // under comm->mu
    std::exception_ptr error_;                // under comm->mu
    bool done_ = false;                       // under comm->mu
    c10::intrusive_ptr<c10::ivalue::Future> future_;  // under mutex_
    std::vector<c10::Device> devices_;
};

class Backend final : public c10d::Backend {
public:
    struct Options : c10d::Backend::Options {
        explicit Options(std::chrono::milliseconds timeout = kBackendDefaultTimeout)
            : c10d::Backend::Options("chorus", timeout) {}
        c10::intrusive_ptr<c10d::Backend::Options> clone() const override {
            return c10::make_intrusive<Options>(*this);
        }
    };

    // Collective over the group's ranks: creates the communicator through
    // `store` (keys under "chorus/<group>/"). Raises on every rank if
    // creation fails anywhere.
    Backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, c10::intrusive_ptr<Options> options);
    ~Backend() override;

    const std::string getBackendName() const override { return "chorus"; }
    c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override { return options_; }
    bool supportsSplitting() const override { return true; }
    c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                            const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;
    void setTimeout(std::chrono::milliseconds timeout) override;
    void abort() override;
    void shutdown() override;
    uint64_t getSequenceNumberForGroup() override { return seq_; }

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const c10d::BroadcastOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const c10d::AllreduceOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                       const c10d::AllreduceCoalescedOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> all_gather_single(at::Tensor& output, at::Tensor& input,
                                                     const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const c10d::AllgatherOptions& opts) override {
        return all_gather_single(output, input, opts);
    }
    c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                   std::vector<at::Tensor>& inputs,
                                                                   const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> all_gather_single_coalesced(std::vector<at::Tensor>& outputs,
                                                               std::vector<at::Tensor>& inputs,
                                                               const c10d::AllgatherOptions& opts) override {
        return allgather_into_tensor_coalesced(outputs, inputs, opts);
    }
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                          std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                           std::vector<std::vector<at::Tensor>>& inputs,
                                           const c10d::ScatterOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                  const c10d::ReduceScatterOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter_single(at::Tensor& output, at::Tensor& input,
                                                         const c10d::ReduceScatterOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                        const c10d::ReduceScatterOptions& opts) override {
        return reduce_scatter_single(output, input, opts);
    }
    c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                   std::vector<at::Tensor>& inputs,
                                                                   const c10d::ReduceScatterOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter_single_coalesced(std::vector<at::Tensor>& outputs,
                                                                   std::vector<at::Tensor>& inputs,
                                                                   const c10d::ReduceScatterOptions& opts) override {
        return reduce_scatter_tensor_coalesced(outputs, inputs, opts);
    }
    c10::intrusive_ptr<c10d::Work> all_to_all_single(at::Tensor& output, at::Tensor& input,
                                                     std::vector<int64_t>& output_splits,
                                                     std::vector<int64_t>& input_splits,
                                                     const c10d::AllToAllOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& output_splits,
                                                 std::vector<int64_t>& input_splits,
                                                 const c10d::AllToAllOptions& opts) override {
        return all_to_all_single(output, input, output_splits, input_splits, opts);
    }
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                            const c10d::AllToAllOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;

private:
    // A Work for `outputs`, started under the lock by `start` (which adds
    // its requests); the sequence number counts collectives.
    c10::intrusive_ptr<Work> launch(c10d::OpType type, const char* what, std::vector<at::Tensor> outputs,
                                    const std::function<void(Work&)>& start);
    void* stream_of(const at::Tensor& t) const;

    std::shared_ptr<Comm> comm_;
    c10::intrusive_ptr<Options> options_;
    uint64_t seq_ = 0;
};

}  // namespace chorus_c10d
