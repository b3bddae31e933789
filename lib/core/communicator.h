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
#include "coll/planner/topology.h"
#include "core/config.h"
#include "core/observer.h"
#include "core/op_buffers.h"
#include "core/operation.h"
#include "core/p2p.h"
#include "core/schedule_cache.h"
#include "core/waiting.h"
#include "exec/device.h"
#include "exec/inline_run.h"
#include "net/bootstrap.h"
#include "net/transport.h"

namespace chorus {

class Communicator {
public:
    // Collective over `boot`, all or nothing: reads the settings and
    // compares those that change the protocol, bootstraps the transports
    // (addresses, which ranks share a host) and measures the clock offsets
    // when timing is on, every exchange through `boot`. If any of it fails on
    // any rank, it throws on every rank with the reason (a setting that
    // differs: CHORUS_ERR_CONFIG). Only a failure of `boot` itself throws on
    // this rank alone (the peers fail when their own exchange does). The
    // communicator does not keep `boot`.
    static std::unique_ptr<Communicator> create(net::Bootstrap& boot);
    // create() over a private duplicate of `comm` (MPI initialized), which
    // the communicator keeps and frees.
    static std::unique_ptr<Communicator> create_mpi(MPI_Comm comm);
    // Over an existing transport (loopback tests). Takes ownership. Without
    // a device, CUDA's (tests pass an emulated one). `boot`, if any, is kept
    // alive as long as the transport.
    Communicator(std::unique_ptr<net::Transport> transport, const Config& config,
                 std::unique_ptr<Device> device = nullptr, std::unique_ptr<net::Bootstrap> boot = nullptr);
    // Local: completes the operations in flight (unless the communicator
    // failed), then releases everything without waiting for any peer.
    ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    const Config& config() const { return config_; }
    // Which ranks share a host (from the transport, at creation).
    const coll::HostMap& hosts() const { return *hosts_; }

    // Start a collective. Arguments are validated by the caller. The returned
    // operation stays owned by the communicator until release(). `stream`
    // (a cudaStream_t) orders it after work queued there before the call:
    // always when a buffer is device memory (null: the legacy default
    // stream), and for host buffers when it is not null.
    Operation* start(coll::CollArgs args, const void* sendbuf, void* recvbuf, void* stream = nullptr) {
        return start_filled(args, sendbuf, recvbuf, stream, nullptr);
    }
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
    // The record the fast path keeps of a call that ran in place (a
    // schedule without transfers on host buffers, run on the calling thread;
    // blocking.cc): the plan it ran (none: the call did not run in place)
    // and the plan cache's version then.
    struct RanInPlace {
        Plan plan;
        uint64_t version = 0;
    };
    // Blocking convenience: start + wait + release.
    // `args` is filled in place (fill()), or a copy of it. `last`: the fast
    // path's record of the caller's last call (the C API's, per thread),
    // when the caller vouches that this call repeats it (same communicator,
    // arguments and buffers); a record with a plan runs that plan in place
    // at once while the plan cache's version is unchanged and nothing is in
    // flight or failed. Either way, a call that runs in place leaves its
    // plan in `*last`, and one that does not clears it.
    chorus_result_t run(coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream = nullptr,
                        RanInPlace* last = nullptr);
    chorus_result_t run(const coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream = nullptr) {
        coll::CollArgs copy = args;
        return run(copy, sendbuf, recvbuf, stream);
    }

    // Point-to-point (p2p.h; p2p_calls.cc), beside the collectives: only
    // the two ranks involved call, and no operation number is taken.
    // Arguments are validated by the caller. `stream` as for start(). A send
    // has copied its data and is finished on return; a receive finishes in
    // progress(). Both stay owned by the communicator until release().
    P2pRequest* send(const void* buf, size_t count, chorus_datatype_t dtype, int peer, int tag, void* stream);
    P2pRequest* recv(void* buf, size_t count, chorus_datatype_t dtype, int peer, int tag, void* stream);
    // Progress everything in flight; true if `r` has finished.
    bool progress(P2pRequest* r) {
        pass();
        return r->finished;
    }
    void wait(P2pRequest* r) {
        wait_until([r] { return r->finished; });
    }
    chorus_result_t release(P2pRequest* r);

    // Windows (windows.cc): regions of memory the host's ranks map into each
    // other (chorus_mem_alloc), registered by every rank at once, each rank
    // its own. Registering maps every peer's region here at once (a call
    // would otherwise map it at its first use); while a window is
    // registered (CHORUS_MAPPED=auto), blocking calls first agree whether
    // every rank's buffers are mapped memory. Both are collective and throw
    // on every rank alike: a region not in mapped memory or registered
    // already, or a region never registered (CHORUS_ERR_INVALID_ARGUMENT).
    void register_window(void* base, size_t bytes);
    void deregister_window(void* base);
    size_t windows() const { return windows_.size(); }

    // For messages: "comm 3 (4 ranks)"; the number is the same on every rank.
    std::string name() const;
    // Called while wait() idles, every kIdleEvery polls without progress.
    void set_idle(void (*fn)(void*), void* arg) {
        idle_fn_ = fn;
        idle_arg_ = arg;
    }
    bool failed() const { return failed_; }
    // Whether the next operation fails because an earlier one failed, here
    // or at a peer. Not so for the operations before the first a peer's
    // notice names (they go on), nor for that one (it fails in start() with
    // the peer's error).
    bool failed_before_next() const {
        return failed_ &&
               (next_seq_ > failed_from_ || (next_seq_ == failed_from_ && failed_code_ == CHORUS_ERR_COMM_FAILED));
    }
    const std::string& failure() const { return failure_; }
    std::string& last_error() { return last_error_; }
    size_t inflight() const { return ops_.size(); }
    // The label of the operations started from now on (chorus_comm_set_label).
    void set_label(const char* label) { observer_.set_label(label); }

private:
    // Progress every operation in flight and the point-to-point traffic
    // once, with the idle checks when they are due.
    void pass();
    // Pass until `done()` holds, spinning, then yielding the CPU.
    template <typename Done>
    void wait_until(const Done& done) {
        constexpr unsigned kIdleEvery = 8;
        unsigned idle = 0;
        pass();
        while (!done()) {
            if (waiter_.just_moved()) idle = 0;
            ++idle;
            if (idle_fn_ && idle % kIdleEvery == 0) idle_fn_(idle_arg_);
            waiter_.pause(idle);
            pass();
        }
    }
    // Progress point-to-point traffic (its idle checks too, with `idle`);
    // a transfer that failed there fails the communicator.
    bool progress_p2p(bool idle);
    // A point-to-point failure (a dead peer, a timeout): the communicator
    // fails from the next operation on, and the peers are told.
    void p2p_failed();
    // At teardown: the sends still in flight are delivered and the receives
    // whose message came are finished (unless failed); the rest abandoned.
    void close_p2p();

    // End `op` with an error here and mark the communicator failed; with
    // `tell`, every peer learns of it at once (a notice).
    void fail_op(Operation& op, chorus_result_t code, const std::string& message, bool tell = true);
    // Tell every peer that this rank failed (`code`, `message`) and will
    // finish no operation from number `from` on.
    void tell_peers(chorus_result_t code, uint64_t from, const std::string& message);
    // Notices from peers: each fails the operations here from its `from` on;
    // earlier ones go on (the sender finished them).
    void poll_notices();
    // Operations from number `from` on fail; the one numbered `from` with
    // `code` unless it is CHORUS_ERR_COMM_FAILED (a peer's error), the rest
    // with CHORUS_ERR_COMM_FAILED. The earliest failure counts.
    void mark_failed(uint64_t from, chorus_result_t code, const std::string& why);
    Operation* take_operation();
    // An operation begun in place by run_in_order: its number, slot
    // operation and the steps it has done.
    struct Resume {
        uint64_t seq, slot_op;
        size_t done;
        uint64_t record;
    };
    Operation* launch(const coll::CollArgs& args, const Plan& plan, const void* sendbuf, void* recvbuf,
                      void* stream = nullptr, const Resume* resume = nullptr);
    // A two-stage operation whose first stage is done: its second stage's
    // schedule, from the call's arguments and the sizes gathered, on the
    // buffers prepared at the start, in the same executor.
    void second_stage(Operation& op);
    // The communicator's part of a call's arguments.
    void fill(coll::CollArgs& args) const;
    // A blocking call without transfers on host buffers, run on this thread
    // (false: it does not qualify). Returns its result in *rc and, with
    // `ran`, records its plan there. `args` filled already; a call that
    // does not qualify after planning leaves the plan in *plan for
    // start_filled.
    bool run_inline(const coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream, chorus_result_t* rc,
                    Plan* plan, RanInPlace* ran);
    // Whether a call may run in place now: nothing in flight, no stream,
    // not failed, and neither CHORUS_CHECK nor injected faults.
    bool may_run_in_place(const void* stream) const {
        return ops_.empty() && !stream && !failed_ && !config_.check && config_.inject.empty();
    }
    // The part of run_inline after the checks: the plan qualifies.
    chorus_result_t run_planned_inline(const coll::CollArgs& args, const Plan& plan, const void* sendbuf,
                                       void* recvbuf);
    // start() with `args` filled in place, and its plan when already made.
    Operation* start_filled(coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream, const Plan* plan);
    // CHORUS_CHECK: exchange the call's fingerprint first (and, for the v
    // collectives whose counts agree pair by pair, those counts).
    void check_agreement(const coll::CollArgs& args);
    // Run `coll` with `algo` on host buffers and wait for it (the check's own
    // traffic, a window's registration: the same shape on every rank).
    // `what` names it in the error.
    void exchange(coll::Collective coll, const char* algo, size_t count, chorus_datatype_t dtype, const void* send,
                  void* recv, const char* what = "CHORUS_CHECK: exchanging arguments");
    // Whether this call first agrees on mapped memory (windows.cc).
    bool agrees_mapped(const coll::CollArgs& args) const;
    // The agreement: true in *mapped when every rank's buffers of the call
    // lie in mapped memory (a 4-byte all-reduce among the ranks).
    chorus_result_t agree_mapped(const coll::CollArgs& args, const void* sendbuf, const void* recvbuf, bool* mapped);
    // run() after the fast path, `args` filled.
    chorus_result_t run_filled(coll::CollArgs& args, const void* sendbuf, void* recvbuf, void* stream,
                               RanInPlace* last);
    struct Window {
        void* base;
        size_t bytes;
        std::vector<uint64_t> serials;  // every rank's allocation
    };
    std::vector<Window> windows_;

    Config config_;
    std::unique_ptr<net::Bootstrap> boot_;  // before the transport: it outlives it
    std::unique_ptr<net::Transport> transport_;
    int rank_, size_;
    std::shared_ptr<const coll::HostMap> hosts_;  // which ranks share a host
    OpBuffers buffers_;
    ScheduleCache plans_;
    Waiter waiter_;
    Watchdog watchdog_;
    std::vector<std::unique_ptr<Operation>> ops_;
    // Finished operations kept for reuse, executor included: a steady
    // stream of calls allocates nothing.
    std::vector<std::unique_ptr<Operation>> spare_ops_;
    Observer observer_;  // records, traces, hang reports: reads ops_
    PointToPoint p2p_;   // over transport_ and the device; closed before them
    // How calls run in place on transport_'s publish slots (exec/inline_run.h):
    // run_in_order, or its instance for the transport's final class.
    InPlaceRunner run_in_place_;
    bool closing_ = false;
    uint64_t next_seq_ = 0;
    uint64_t next_slot_op_ = 0;
    uint64_t id_ = 0;  // agreed at creation
    void (*idle_fn_)(void*) = nullptr;
    void* idle_arg_ = nullptr;
    bool failed_ = false;
    uint64_t failed_from_ = 0;
    chorus_result_t failed_code_ = CHORUS_ERR_COMM_FAILED;
    std::string failure_;
    std::string last_error_;
};

}  // namespace chorus
