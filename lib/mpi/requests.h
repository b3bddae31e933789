// The requests of the nonblocking calls the interposer runs itself
// (requests.cc), and what the MPI_Wait and MPI_Test families need of them
// (completion.cc).
//
// The program holds a real MPI request: a generalized request
// (MPI_Grequest_start), so that every MPI function that takes a request
// accepts it. The interposer keeps a small table of them. Nothing in MPI
// completes a generalized request by itself: the interposer's own calls do,
// whenever one of them runs (every intercepted collective, and the MPI_Wait
// and MPI_Test families): each turn tests every Chorus request in flight
// (chorus_test), and completes those that finished: the received blocks
// unpacked, the staging released, MPI_Grequest_complete. Only then is the
// request handed to PMPI_Wait, which returns at once with its status: MPI's
// empty status (MPI_ANY_SOURCE, MPI_ANY_TAG, no data, not cancelled).
//
// A call handed to PMPI whose device buffers were staged through host
// copies gets a request of this table too, completed when MPI's own one
// is (PMPI_Test) and the written copies are back.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "blocks.h"

namespace chorus_mpi {

struct Request {
    MPI_Request handle = MPI_REQUEST_NULL;  // the generalized request the program holds
    Fn fn = kNumFns;
    MPI_Comm comm = MPI_COMM_NULL;
    // A call through Chorus: its communicator, lane and request (null once
    // finished), and its buffers until then.
    chorus_comm_t cc = nullptr;
    std::mutex* lane = nullptr;
    chorus_request_t chorus = nullptr;
    std::unique_ptr<Pending> pending;  // null: nothing staged
    // A call handed to PMPI: MPI's request and the host copies.
    MPI_Request inner = MPI_REQUEST_NULL;
    std::unique_ptr<HostStaging> staging;

    bool orphan = false;  // its communicator was freed: errors go to MPI_COMM_SELF (set under the claim)

    std::atomic<bool> claimed{false};  // a thread is testing or completing it
    std::atomic<bool> done{false};     // completed: `result` set, the grequest complete
    int result = MPI_SUCCESS;          // the call's MPI error code (already raised)
    bool freed = false;                // MPI_Request_free'd: forgotten once done (table's mutex)
};

using RequestPtr = std::shared_ptr<Request>;

// True while the interposer tracks any request (one relaxed load).
bool requests_live();

// Holds a communicator's lane (Target::lane), and knows which lanes the
// calling thread holds: a blocking call's idle hook progresses the requests
// of other communicators, never of the one it waits on.
class LaneLock {
public:
    explicit LaneLock(std::mutex* lane);
    LaneLock(std::mutex* lane, std::try_to_lock_t);
    ~LaneLock();
    LaneLock(const LaneLock&) = delete;
    LaneLock& operator=(const LaneLock&) = delete;
    bool owns() const { return owns_; }
    static bool held_here(const std::mutex* lane);

private:
    std::mutex* lane_;
    bool owns_;
    LaneLock* outer_;
};

// One turn of every request in flight: each one finished is completed.
void progress_requests();

// Starts a Chorus call with `start(&req)` under the lane of `t`, and sets
// *request to a generalized request that completes with it (unpacking
// `pending`'s received blocks first). Errors as a blocking call's.
int start_request(Fn fn, MPI_Comm comm, MPI_Request* request, const Target& t, std::unique_ptr<Pending> pending,
                  const std::function<chorus_result_t(chorus_request_t*)>& start);
// A nonblocking call handed to PMPI with host copies of device buffers:
// *request (MPI's) is replaced with a request that completes when MPI's
// does, once the written copies are back.
int track_staged(Fn fn, MPI_Comm comm, MPI_Request* request, HostStaging&& staging);

// The tracked request whose handle is `handle`, or null: MPI's own.
RequestPtr find_request(MPI_Request handle);
// The same for an array (out[i] for handles[i]); true if any is tracked.
bool find_requests(int n, const MPI_Request* handles, RequestPtr* out);
// Requests in the table, and those that have not completed yet.
size_t table_size();
size_t running_requests();

// Tests `r` once (unless another thread is at it); completes it if it has
// finished. True when it is done.
bool poll(Request& r);
// Waits for `r` alone, the way a blocking call waits (chorus_wait, with
// MPI's progress turned meanwhile); false if that is not possible now (the
// request is claimed by another thread, or is not a Chorus call).
bool wait_alone(Request& r);

// The program completes a done request: *handle (r's) is completed by
// PMPI_Wait, which fills *status (the empty status) and sets
// *handle to MPI_REQUEST_NULL; the request leaves the table. Returns its
// error code.
int retire(const RequestPtr& r, MPI_Request* handle, MPI_Status* status);

// MPI_Request_free on `r`: freed now if done, else once it completes.
void release(const RequestPtr& r);

// Completes every request of `cc` (every request when null), waiting for
// each: before a Chorus communicator is destroyed, and at MPI_Finalize.
// `only_freed`: only those the program gave up with MPI_Request_free.
void finish_requests(chorus_comm_t cc, bool only_freed = false);

// The program freed the MPI communicator of `cc` while calls on it are in
// flight (MPI_Comm_free is local: it must not wait for them). Those calls
// the program still holds go on (those it freed with MPI_Request_free,
// which MPI calls erroneous for collectives and nobody waits for, are
// completed by MPI_Comm_free first: finish_requests(cc, true)); their errors are raised on MPI_COMM_SELF from now on. True if any
// is still running: then the communicator is destroyed after the last one
// (comms.cc, reap_freed_comms).
bool orphan_requests(chorus_comm_t cc);
// Whether a request of `cc` is still running.
bool comm_busy(chorus_comm_t cc);
// Destroys the Chorus communicators whose MPI communicators were freed
// with calls in flight, once those calls are done; only outside Chorus
// (not from a waiting call's idle hook). Cheap when there are none.
void reap_freed_comms();

// One turn of MPI's progress engine, as any MPI_Test would give it: a
// test of the interposer's requests that finds one unfinished gives MPI a
// turn too (a peer may wait in MPI_Recv for a message of this rank's, or
// for this rank's part of a nonblocking collective handed to MPI).
void turn_mpi();
// At teardown: the receive turn_mpi() tests is cancelled and freed.
void finish_turning();

// Between two fruitless turns of a waiting loop: spin a little, then yield
// the CPU (turning MPI's progress engine), then nap, as the library's own
// waits do, so that ranks that outnumber the cores do not starve each other.
class Backoff {
public:
    void pause();
    void reset() { turns_ = 0; }

private:
    unsigned turns_ = 0;
};

}  // namespace chorus_mpi
