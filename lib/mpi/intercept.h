// What every intercepted collective shares (collectives.cc, movement.cc,
// rooted.cc): the gate and the hand-off to PMPI, the communicator's Chorus
// twin, the Chorus call (blocking, or started with a request to return),
// and the errors raised on misuse.
#pragma once

#include <climits>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "requests.h"

namespace chorus_mpi {

constexpr int kPassThrough = -1;  // from a body: hand the call to PMPI

inline bool is_inter(MPI_Comm comm) {
    int flag = 0;
    return PMPI_Comm_test_inter(comm, &flag) == MPI_SUCCESS && flag != 0;
}

// `blocking(args...)`, or `nonblocking(args..., request)` when there is a
// request to return: a PMPI_* function and its PMPI_I* twin, or a chorus_*
// function and its chorus_i* twin, called with the same arguments.
template <typename R, typename Blocking, typename Nonblocking, typename... Args>
auto either(R* request, Blocking blocking, Nonblocking nonblocking, Args&&... args) {
    return request ? nonblocking(args..., request) : blocking(args...);
}

inline int rank_of(MPI_Comm comm) {
    int r = 0;
    PMPI_Comm_rank(comm, &r);
    return r;
}

inline size_t size_of(MPI_Comm comm) {
    int n = 0;
    PMPI_Comm_size(comm, &n);
    return static_cast<size_t>(n);
}

inline int finish(Fn fn, MPI_Comm comm, chorus_comm_t cc, chorus_result_t result) {
    if (result == CHORUS_SUCCESS) return MPI_SUCCESS;
    return raise_error(comm, result, std::string(fn_name(fn)) + ": " + chorus_comm_last_error(cc));
}

inline int misuse(Fn fn, MPI_Comm comm, const std::string& what) {
    return raise_error(comm, CHORUS_ERR_INVALID_ARGUMENT, std::string(fn_name(fn)) + ": " + what);
}

// Two byte counts that must be equal on this rank, and are not.
inline int mismatch(Fn fn, MPI_Comm comm, const char* a, size_t a_bytes, const char* b, size_t b_bytes) {
    return misuse(
        fn, comm,
        std::string(a) + " is " + std::to_string(a_bytes) + " bytes but " + b + " is " + std::to_string(b_bytes));
}

// The regular data-movement forms (all-gather, all-to-all): both sides'
// layouts of one element, or false for what MPI reports (a negative count,
// a null datatype); the receive side only in place.
inline bool regular_layouts(bool in_place, int sendcount, MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype,
                            Layout* su, Layout* ru) {
    return recvcount >= 0 && layout_of(recvtype, 1, ru) && (in_place || (sendcount >= 0 && layout_of(sendtype, 1, su)));
}

// Their block, in bytes, which both sides of a rank must agree on.
inline int regular_block(Fn fn, MPI_Comm comm, bool in_place, int sendcount, const Layout& su, int recvcount,
                         const Layout& ru, size_t* block) {
    *block = elems(recvcount) * ru.bytes;
    const size_t sent = elems(sendcount) * su.bytes;
    if (in_place || sent == *block) return MPI_SUCCESS;
    return mismatch(fn, comm, "sendcount * sendtype", sent, "recvcount * recvtype", *block);
}

// Hands the call to PMPI: `pmpi(staging)` passes each buffer through
// staging.view() and calls the PMPI function (its I-form when `request`).
// With `stage`, device and managed buffers reach MPI as host copies
// (written ones copied back after the call, or when a nonblocking one
// completes: then the program gets a request of the interposer's own); on
// an intercommunicator they are refused with an error.
template <typename Pmpi>
int to_pmpi(Fn fn, MPI_Comm comm, MPI_Request* request, bool stage, Pmpi&& pmpi) {
    stage = stage && comm != MPI_COMM_NULL;
    HostStaging staging(stage, stage && is_inter(comm));
    const int rc = pmpi(staging);
    if (staging.failed()) return staging.raise(fn, comm);
    if (request)
        return rc != MPI_SUCCESS || !staging.staged() ? rc : track_staged(fn, comm, request, std::move(staging));
    if (rc == MPI_SUCCESS && !staging.finish()) return staging.raise(fn, comm);
    return rc;
}

// Run a blocking Chorus collective, `call()`, on `t`; the result as an MPI
// code. While it waits, the communicator's idle hook (comms.cc) turns MPI's
// progress engine. While requests are in flight another thread may be
// completing one of this communicator's: the lane keeps them apart (and
// costs nothing otherwise).
template <typename F>
int run_chorus(Fn fn, MPI_Comm comm, const Target& t, F&& call) {
    chorus_result_t rc;
    {
        InsideChorus inside;
        if (requests_live()) {
            LaneLock lane(t.lane);
            rc = call();
        } else {
            rc = call();
        }
    }
    return finish(fn, comm, t.cc, rc);
}

// The way of a blocking call that took the quick way: through Chorus, or
// to MPI (to_mpi()), as its communicator's tuning says for `bytes`
// (chorus_only: always Chorus, as mpi_may_differ says). A trial is timed:
// its end is recorded when this goes out of scope, after the call. The
// whole way holds one too (Call::chorus_turn), in the same cell: a call may
// take the quick way on one rank and not on another. The MPI call is made while
// this lives, and builds its arguments for PMPI only then: the quick way
// into Chorus builds nothing it does not use.
class QuickWay {
public:
    QuickWay() = default;  // no call: nothing to time
    QuickWay(Fn fn, MPI_Comm comm, const Target& t, size_t bytes, bool chorus_only = false) {
        take(fn, comm, t, bytes, chorus_only);
    }
    ~QuickWay() { finish(); }
    // Decides this call's way (as the constructor).
    void take(Fn fn, MPI_Comm comm, const Target& t, size_t bytes, bool chorus_only = false) {
        fn_ = fn;
        comm_ = comm;
        if (!t.tuner || chorus_only) return;
        TuneCell& c = t.tuner->cell(fn, bytes);
        if (c.route == Route::Chorus) return;
        if (c.route == Route::Mpi) {
            mpi_ = true;
            return;
        }
        trial_ = &c;
        bytes_ = bytes;
        mpi_ = c.mpi_turn(trial_plan(bytes));
    }
    // The call is done: a trial's end recorded (once), and after the last
    // one the ranks' agreement.
    void finish() {
        if (!trial_) return;
        TuneCell& c = *trial_;
        trial_ = nullptr;
        const TrialPlan plan = trial_plan(bytes_);
        if (c.record(plan, c.timed(plan) ? now_seconds() : 0)) agree_route(fn_, comm_, bytes_, c);
    }
    QuickWay(const QuickWay&) = delete;
    QuickWay& operator=(const QuickWay&) = delete;
    bool to_mpi() const { return mpi_; }

private:
    Fn fn_ = kNumFns;
    MPI_Comm comm_ = MPI_COMM_NULL;
    bool mpi_ = false;
    TuneCell* trial_ = nullptr;
    size_t bytes_ = 0;
};

// One intercepted call on its way to Chorus: blocking, or nonblocking with
// the request to return. Its buffers (pending().recv and .send) live until
// the call completes: on the stack for a blocking call, on the heap, handed
// to the request, for a nonblocking one.
class Call {
public:
    Call(Fn fn, MPI_Comm comm, MPI_Request* request) : fn_(fn), comm_(comm), request_(request) {}
    // Made on first use: the reductions stage nothing.
    Pending& pending() {
        if (!request_) return local_ ? *local_ : local_.emplace();
        if (!heap_) heap_.reset(new Pending);
        return *heap_;
    }

    // Whether this call goes through Chorus (then counted as intercepted)
    // or, false, to MPI (the body returns kPassThrough): as the
    // communicator's tuning says for `bytes`, which every rank of the call
    // agrees on (QuickWay, below, which times a trial). Nonblocking calls go
    // through Chorus, and so do those `chorus_only` (mpi_may_differ).
    bool chorus_turn(const Target& t, size_t bytes, bool chorus_only = false) {
        if (!request_) {
            way_.take(fn_, comm_, t, bytes, chorus_only);
            if (way_.to_mpi()) return false;
        }
        count_intercepted(fn_);
        return true;
    }
    // Once the call is done, either way: a trial's end recorded, and after
    // the last one the ranks' agreement.
    void finish_trial() { way_.finish(); }

    // Runs `start(req)` (either(req, chorus_X, chorus_iX, ...)) on `t`:
    // blocking, with req null, then unpacks the received blocks; or
    // nonblocking, returning a request that unpacks them at completion.
    template <typename Start>
    int run(const Target& t, Start&& start) {
        if (!request_) {
            const int rc = run_chorus(fn_, comm_, t, [&] { return start(static_cast<chorus_request_t*>(nullptr)); });
            return rc != MPI_SUCCESS || !local_ ? rc : local_->recv.unpack_all();
        }
        return start_request(fn_, comm_, request_, t, std::move(heap_), [&](chorus_request_t* r) { return start(r); });
    }

private:
    Fn fn_;
    MPI_Comm comm_;
    MPI_Request* request_;
    std::optional<Pending> local_;  // made by pending(): most calls need none
    std::unique_ptr<Pending> heap_;
    QuickWay way_;  // chorus_turn's, finished by finish_trial
};

// The quick way of a blocking call whose thread's last lookup was this
// communicator, ready for Chorus (chorus_comm_of), with the gate open and no
// request in flight: what intercept() and chorus_comm_of would decide, from
// a few loads. *t is the communicator's target. A call that does not take it
// goes the whole way, which decides alike (and reports what is wrong).
inline bool quick_target(MPI_Comm comm, Target* t) {
    if (t_inside != 0 || !g_gate_open.load(std::memory_order_acquire)) return false;
    const LastLookup& last = t_last;
    if (!last.ready || last.comm != comm || last.generation != g_generation.load(std::memory_order_acquire) ||
        requests_live())
        return false;
    *t = *last.ready;
    return true;
}

// Reductions that some MPI libraries compute otherwise than the standard
// says, and Chorus as it says: Open MPI's vector reductions saturate 8- and
// 16-bit integer sums (and products) rather than wrapping; Open MPI 4.1.2 to
// 4.1.4 compare MPI_UNSIGNED_LONG as signed in MIN and MAX, and MPICH 4.0 to
// 4.0.2 every unsigned type. Under CHORUS_MPI_INTERCEPT=faster these always
// run through Chorus, so the default gives the results `all` gives. Depends
// on the datatype and op alone, which every rank of a call agrees on.
inline bool mpi_may_differ(chorus_datatype_t dt, chorus_op_t op) {
    const bool narrow = dt == CHORUS_INT8 || dt == CHORUS_UINT8 || dt == CHORUS_INT16 || dt == CHORUS_UINT16;
    const bool is_unsigned = dt == CHORUS_UINT8 || dt == CHORUS_UINT16 || dt == CHORUS_UINT32 || dt == CHORUS_UINT64;
    return (narrow && (op == CHORUS_SUM || op == CHORUS_PROD)) ||
           (is_unsigned && (op == CHORUS_MIN || op == CHORUS_MAX));
}

// The bytes of one element of a Chorus datatype (what count * the MPI
// type's size is for the reductions map_reduction() takes).
inline size_t elem_bytes(chorus_datatype_t dt) {
    static constexpr unsigned char kBytes[CHORUS_NUM_DATATYPES] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
    return static_cast<unsigned>(dt) < CHORUS_NUM_DATATYPES ? kBytes[dt] : 0;
}

// A blocking call handed to MPI the quick way, as intercept() hands it
// over.
template <typename Pmpi>
int quick_pmpi(Fn fn, MPI_Comm comm, Pmpi&& pmpi) {
    count_passed(fn);
    if (may_stage()) return to_pmpi(fn, comm, nullptr, true, pmpi);
    NoStaging as_is;
    return pmpi(as_is);
}

// Runs a blocking Chorus call that took the quick way: counted, inside
// Chorus, its result as an MPI code (as run_chorus, with no lane to take:
// no request is in flight).
template <typename F>
int quick_run(Fn fn, MPI_Comm comm, const Target& t, F&& call) {
    count_intercepted(fn);
    chorus_result_t rc;
    {
        InsideChorus inside;
        rc = call();
    }
    return finish(fn, comm, t.cc, rc);
}

// The quick way of the reductions called as chorus(send, recv, count,
// datatype, op, comm, stream): all-reduce, and reduce-scatter of blocks
// (count: each rank's block). True with *rc set when it was taken. To MPI,
// the call is make_pmpi(sendbuf, recvbuf, count, type, op, comm, nullptr)
// (X_pmpi, a function: nothing is built for it on the way into Chorus).
template <typename Chorus, typename MakePmpi>
bool quick_reduction(Fn fn, MPI_Comm comm, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                     Chorus chorus, MakePmpi make_pmpi, int* rc) {
    Target t;
    chorus_datatype_t dt;
    chorus_op_t cop;
    if (count < 0 || recvbuf == MPI_IN_PLACE || !quick_target(comm, &t) || !map_reduction(type, op, &dt, &cop))
        return false;
    QuickWay way(fn, comm, t, t.tuner ? elems(count) * elem_bytes(dt) : 0, mpi_may_differ(dt, cop));
    if (way.to_mpi()) {
        *rc = quick_pmpi(fn, comm, make_pmpi(sendbuf, recvbuf, count, type, op, comm, nullptr));
        return true;
    }
    const void* send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    *rc = quick_run(fn, comm, t,
                    [&] { return chorus(send, recvbuf, static_cast<size_t>(count), dt, cop, t.cc, nullptr); });
    return true;
}

// The quick way of the regular data-movement calls called as chorus(send,
// recv, block bytes, CHORUS_UINT8, comm, stream): all-gather, all-to-all;
// not in place, both sides' predefined types agreeing on the block's bytes.
// To MPI, as quick_reduction, with the call's own arguments.
template <typename Chorus, typename MakePmpi>
bool quick_blocks(Fn fn, MPI_Comm comm, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, Chorus chorus, MakePmpi make_pmpi, int* rc) {
    Target t;
    size_t su, ru;
    if (sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE || sendcount < 0 || recvcount < 0 ||
        !quick_target(comm, &t) || (su = basic_size(sendtype)) == 0 || (ru = basic_size(recvtype)) == 0 ||
        elems(sendcount) * su != elems(recvcount) * ru)
        return false;
    const size_t block = elems(recvcount) * ru;
    QuickWay way(fn, comm, t, block);
    if (way.to_mpi()) {
        *rc =
            quick_pmpi(fn, comm, make_pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, nullptr));
        return true;
    }
    *rc = quick_run(fn, comm, t, [&] { return chorus(sendbuf, recvbuf, block, CHORUS_UINT8, t.cc, nullptr); });
    return true;
}

// `pmpi(staging)` is called as to_pmpi describes; `body(call)` tries
// Chorus, returning kPassThrough to hand the call to PMPI after all. Calls
// from Chorus itself, and those MPI is not running for, go to PMPI as they
// are. Every call that may go to Chorus first lets the requests in flight
// progress.
template <typename Pmpi, typename Body>
int intercept(Fn fn, MPI_Comm comm, MPI_Request* request, Pmpi&& pmpi, Body&& body) {
    if (request) *request = MPI_REQUEST_NULL;  // what a failed call leaves
    int error = MPI_SUCCESS;
    switch (open_gate(fn, comm, &error)) {
        case Gate::Quiet: return to_pmpi(fn, comm, request, false, pmpi);
        case Gate::Refused: return error;
        case Gate::Pass: count_passed(fn); return to_pmpi(fn, comm, request, may_stage(), pmpi);
        case Gate::Chorus: break;
    }
    if (requests_live()) progress_requests();
    int rc;
    Call call(fn, comm, request);
    try {
        rc = body(call);
    } catch (const std::bad_alloc&) {
        rc = raise_error(comm, CHORUS_ERR_OUT_OF_MEMORY, std::string(fn_name(fn)) + ": out of memory");
    }
    if (rc == kPassThrough) {
        count_passed(fn);
        rc = to_pmpi(fn, comm, request, may_stage(), pmpi);
    }
    call.finish_trial();
    return rc;
}

// The communicator's Chorus twin: Gate::Chorus, or what to return instead.
struct Twin {
    Target t;
    int rc = MPI_SUCCESS;
    bool ok = false;
    Twin(Fn fn, MPI_Comm comm) {
        switch (chorus_comm_of(fn, comm, &t, &rc)) {
            case Gate::Chorus: ok = true; break;
            case Gate::Refused: break;
            default: rc = kPassThrough; break;
        }
    }
};

}  // namespace chorus_mpi
