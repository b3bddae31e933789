// The table of requests the interposer completes itself (requests.h).
//
// Locks: the table's mutex guards the table and each request's `freed`;
// a request's `claimed` flag lets one thread at a time test or complete it;
// a communicator's lane lets one thread at a time into Chorus on it. A
// thread takes them in that order, and calls no error handler (which may
// call MPI) while it holds the table's mutex or a lane.
#include "requests.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <vector>

namespace chorus_mpi {

namespace {

// The table's all.size(), outside it: read on the way of every intercepted call,
// where a function's static costs a guard check.
std::atomic<size_t> g_live{0};

struct Table {
    std::mutex mutex;
    std::vector<RequestPtr> all;
    std::atomic<size_t> running{0};  // those not done
};

Table& table() {
    static Table* t = new Table;  // never destroyed: used until the process exits
    return *t;
}

// The generalized request's callbacks. Its state lives in the table, so
// they need none. The status is MPI's empty one (MPI_ANY_SOURCE,
// MPI_ANY_TAG, no data, not cancelled): MPI leaves the source and tag of a
// collective's status undefined (Open MPI's hold whatever the request's
// memory held), and errors are returned by the completion calls.
int query_status(void*, MPI_Status* status) {
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    return MPI_SUCCESS;
}
int free_nothing(void*) {
    return MPI_SUCCESS;
}
int cancel_nothing(void*, int) {  // a collective cannot be cancelled
    return MPI_SUCCESS;
}

int new_grequest(MPI_Request* out) {
    return PMPI_Grequest_start(query_status, free_nothing, cancel_nothing, nullptr, out);
}

void add(const RequestPtr& r) {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    t.all.push_back(r);
    g_live.store(t.all.size(), std::memory_order_release);
    t.running.fetch_add(1, std::memory_order_acq_rel);
}

// With the table's mutex held.
void erase_locked(Table& t, const Request* r) {
    auto it = std::find_if(t.all.begin(), t.all.end(), [&](const RequestPtr& p) { return p.get() == r; });
    if (it == t.all.end()) return;
    std::swap(*it, t.all.back());
    t.all.pop_back();
    g_live.store(t.all.size(), std::memory_order_release);
}

// One thread at a time tests or completes a request.
class Claim {
public:
    explicit Claim(Request& r) : r_(r), ok_(!r.claimed.exchange(true, std::memory_order_acquire)) {}
    ~Claim() {
        if (ok_) r_.claimed.store(false, std::memory_order_release);
    }
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    bool ok() const { return ok_; }

private:
    Request& r_;
    bool ok_;
};

// The call behind `r` has finished with `code`: release its buffers,
// complete the grequest, and forget it if the program freed it already.
void complete(Request& r, int code) {
    r.pending.reset();
    r.staging.reset();
    r.result = code;
    PMPI_Grequest_complete(r.handle);
    Table& t = table();
    MPI_Request forget = MPI_REQUEST_NULL;
    {
        std::lock_guard<std::mutex> lock(t.mutex);
        r.done.store(true, std::memory_order_release);
        t.running.fetch_sub(1, std::memory_order_acq_rel);
        if (r.freed) {
            forget = r.handle;
            erase_locked(t, &r);
        }
    }
    if (forget != MPI_REQUEST_NULL) PMPI_Request_free(&forget);
    if (r.orphan) reap_freed_comms();
}

// A Chorus call has finished with `rc` (`why`: its message): its error is
// raised as a blocking call's would be, or its received blocks unpacked.
void conclude(Request& r, chorus_result_t rc, const std::string& why) {
    if (rc != CHORUS_SUCCESS)
        complete(r, raise_error(r.comm, rc, std::string(fn_name(r.fn)) + ": " + why));
    else
        complete(r, r.pending ? r.pending->recv.unpack_all() : MPI_SUCCESS);
}

// A call handed to PMPI has finished with `rc`: copy its written host copies back.
void conclude_staged(Request& r, int rc) {
    if (rc == MPI_SUCCESS && !r.staging->finish()) rc = r.staging->raise(r.fn, r.comm);
    complete(r, rc);
}

thread_local LaneLock* t_lanes CHORUS_MPI_TLS = nullptr;  // the innermost lane this thread holds

}  // namespace

LaneLock::LaneLock(std::mutex* lane) : lane_(lane), owns_(true), outer_(t_lanes) {
    lane_->lock();
    t_lanes = this;
}

LaneLock::LaneLock(std::mutex* lane, std::try_to_lock_t) : lane_(lane), owns_(lane->try_lock()), outer_(t_lanes) {
    if (owns_) t_lanes = this;
}

LaneLock::~LaneLock() {
    if (!owns_) return;
    t_lanes = outer_;
    lane_->unlock();
}

bool LaneLock::held_here(const std::mutex* lane) {
    for (const LaneLock* l = t_lanes; l; l = l->outer_)
        if (l->lane_ == lane) return true;
    return false;
}

bool requests_live() {
    return g_live.load(std::memory_order_relaxed) > 0;
}

size_t table_size() {
    return g_live.load(std::memory_order_acquire);
}

size_t running_requests() {
    return table().running.load(std::memory_order_acquire);
}

RequestPtr find_request(MPI_Request handle) {
    if (handle == MPI_REQUEST_NULL) return nullptr;
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    for (const RequestPtr& r : t.all)
        if (r->handle == handle) return r;
    return nullptr;
}

bool find_requests(int n, const MPI_Request* handles, RequestPtr* out) {
    Table& t = table();
    bool any = false;
    std::lock_guard<std::mutex> lock(t.mutex);
    for (int i = 0; i < n; ++i) {
        out[i] = nullptr;
        if (handles[i] == MPI_REQUEST_NULL) continue;
        for (const RequestPtr& r : t.all) {
            if (r->handle == handles[i]) {
                out[i] = r;
                any = true;
                break;
            }
        }
    }
    return any;
}

bool poll(Request& r) {
    if (r.done.load(std::memory_order_acquire)) return true;
    Claim claim(r);
    if (!claim.ok() || r.done.load(std::memory_order_acquire)) return r.done.load(std::memory_order_acquire);
    if (!r.cc) {
        int flag = 0;
        const int rc = PMPI_Test(&r.inner, &flag, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && !flag) return false;
        conclude_staged(r, rc);
        return true;
    }
    chorus_result_t rc;
    std::string why;
    if (LaneLock::held_here(r.lane)) return false;  // this thread waits in Chorus on its communicator
    {
        LaneLock lane(r.lane, std::try_to_lock);
        if (!lane.owns()) return false;  // another thread is in Chorus on this communicator
        int finished = 0;
        InsideChorus inside;
        rc = chorus_test(r.chorus, &finished);
        if (rc == CHORUS_SUCCESS && !finished) return false;
        if (rc != CHORUS_SUCCESS) why = chorus_comm_last_error(r.cc);
        r.chorus = nullptr;
    }
    conclude(r, rc, why);
    return true;
}

bool wait_alone(Request& r) {
    Claim claim(r);
    if (!claim.ok()) return false;
    if (r.done.load(std::memory_order_acquire)) return true;
    if (!r.cc) {
        conclude_staged(r, PMPI_Wait(&r.inner, MPI_STATUS_IGNORE));
        return true;
    }
    chorus_result_t rc;
    std::string why;
    if (LaneLock::held_here(r.lane)) return false;
    {
        LaneLock lane(r.lane);
        InsideChorus inside;
        rc = chorus_wait(r.chorus);
        if (rc != CHORUS_SUCCESS) why = chorus_comm_last_error(r.cc);
        r.chorus = nullptr;
    }
    conclude(r, rc, why);
    return true;
}

bool orphan_requests(chorus_comm_t cc) {
    std::vector<RequestPtr> mine;
    {
        Table& t = table();
        std::lock_guard<std::mutex> lock(t.mutex);
        for (const RequestPtr& r : t.all)
            if (!r->done.load(std::memory_order_acquire) && r->cc == cc) mine.push_back(r);
    }
    bool running = false;
    for (const RequestPtr& r : mine) {
        // Under the claim: no other thread concludes it meanwhile, reading
        // the communicator this rebinds. A claim is held for a test, or for
        // a wait by another thread, which ends.
        Backoff backoff;
        for (;;) {
            Claim claim(*r);
            if (claim.ok()) {
                if (!r->done.load(std::memory_order_acquire)) {
                    r->comm = MPI_COMM_SELF;
                    if (r->pending) r->pending->rebind(MPI_COMM_SELF);
                    r->orphan = true;
                    running = true;
                }
                break;
            }
            if (r->done.load(std::memory_order_acquire)) break;
            backoff.pause();
        }
    }
    return running;
}

bool comm_busy(chorus_comm_t cc) {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    for (const RequestPtr& r : t.all)
        if (!r->done.load(std::memory_order_acquire) && r->cc == cc) return true;
    return false;
}

void progress_requests() {
    // A thread's own list, kept between calls; a nested call (from an
    // error handler) gets one of its own.
    thread_local std::vector<RequestPtr> kept;
    thread_local bool busy = false;
    std::vector<RequestPtr> nested;
    std::vector<RequestPtr>& running = busy ? nested : kept;
    const bool outer = !busy;
    busy = true;
    {
        Table& t = table();
        std::lock_guard<std::mutex> lock(t.mutex);
        for (const RequestPtr& r : t.all)
            if (!r->done.load(std::memory_order_acquire)) running.push_back(r);
    }
    for (const RequestPtr& r : running) poll(*r);
    running.clear();
    if (outer) busy = false;
    reap_freed_comms();
}

int retire(const RequestPtr& r, MPI_Request* handle, MPI_Status* status) {
    {
        Table& t = table();
        std::lock_guard<std::mutex> lock(t.mutex);
        erase_locked(t, r.get());  // first: MPI may give the handle to a new request at once
    }
    const int rc = PMPI_Wait(handle, status);
    return rc != MPI_SUCCESS ? rc : r->result;
}

void release(const RequestPtr& r) {
    Table& t = table();
    MPI_Request forget = MPI_REQUEST_NULL;
    {
        std::lock_guard<std::mutex> lock(t.mutex);
        if (r->done.load(std::memory_order_acquire)) {
            forget = r->handle;
            erase_locked(t, r.get());
        } else {
            r->freed = true;
        }
    }
    if (forget != MPI_REQUEST_NULL) PMPI_Request_free(&forget);
}

// Every request is tested on every turn, those of other communicators too:
// waiting for one communicator at a time could wait for a peer that waits
// for another one first.
void finish_requests(chorus_comm_t cc, bool only_freed) {
    std::vector<RequestPtr> mine;
    {
        Table& t = table();
        std::lock_guard<std::mutex> lock(t.mutex);
        for (const RequestPtr& r : t.all)
            if (!r->done.load(std::memory_order_acquire) && (!cc || r->cc == cc) && (!only_freed || r->freed))
                mine.push_back(r);
    }
    Backoff backoff;
    for (;;) {
        bool all = true;
        for (const RequestPtr& r : mine) all = poll(*r) && all;
        if (all) return;
        progress_requests();
        backoff.pause();
    }
}

int start_request(Fn fn, MPI_Comm comm, MPI_Request* request, const Target& t, std::unique_ptr<Pending> pending,
                  const std::function<chorus_result_t(chorus_request_t*)>& start) {
    auto r = std::make_shared<Request>();
    r->fn = fn;
    r->comm = comm;
    r->cc = t.cc;
    r->lane = t.lane;
    r->pending = std::move(pending);
    if (const int rc = new_grequest(&r->handle); rc != MPI_SUCCESS) return rc;
    chorus_result_t rc;
    std::string why;
    {
        LaneLock lane(t.lane);
        InsideChorus inside;
        rc = start(&r->chorus);
        if (rc != CHORUS_SUCCESS) why = chorus_comm_last_error(t.cc);
    }
    if (rc != CHORUS_SUCCESS) {
        PMPI_Grequest_complete(r->handle);
        PMPI_Request_free(&r->handle);
        return raise_error(comm, rc, std::string(fn_name(fn)) + ": " + why);
    }
    if (r->pending) r->pending->hold_types();
    add(r);
    *request = r->handle;
    return MPI_SUCCESS;
}

int track_staged(Fn fn, MPI_Comm comm, MPI_Request* request, HostStaging&& staging) {
    auto r = std::make_shared<Request>();
    r->fn = fn;
    r->comm = comm;
    r->inner = *request;
    r->staging = std::make_unique<HostStaging>(std::move(staging));
    if (const int rc = new_grequest(&r->handle); rc != MPI_SUCCESS) {
        // No request to hand out: finish the call here instead.
        const int done = PMPI_Wait(&r->inner, MPI_STATUS_IGNORE);
        if (done != MPI_SUCCESS) return done;
        return r->staging->finish() ? rc : r->staging->raise(fn, comm);
    }
    add(r);
    *request = r->handle;
    return MPI_SUCCESS;
}

namespace {

// A receive that never matches, on a private duplicate of MPI_COMM_SELF:
// MPI_Test on it turns the whole of MPI's progress engine in every MPI.
// MPI_Iprobe does not: MPICH's progresses point-to-point messages but not
// the schedules of its own nonblocking collectives, so a rank waiting in
// Chorus left a peer's MPI_Iscan (or any call handed to MPI) without this
// rank's part, and the peer, blocked in MPI_Waitall on it, never started
// the Chorus call this rank waited for.
struct Poke {
    std::mutex mutex;  // one thread tests the request at a time
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
    char byte = 0;
    bool failed = false;
};

Poke& poke() {
    static Poke* p = new Poke;  // never destroyed: finish_turning() cancels its receive
    return *p;
}

}  // namespace

void turn_mpi() {
    Poke& p = poke();
    std::unique_lock<std::mutex> lock(p.mutex, std::try_to_lock);
    if (lock.owns_lock() && !p.failed && p.request == MPI_REQUEST_NULL && !torn_down()) {
        p.failed = PMPI_Comm_dup(MPI_COMM_SELF, &p.comm) != MPI_SUCCESS ||
                   PMPI_Irecv(&p.byte, 1, MPI_BYTE, 0, 0, p.comm, &p.request) != MPI_SUCCESS;
    }
    if (lock.owns_lock() && p.request != MPI_REQUEST_NULL) {
        int flag = 0;
        PMPI_Test(&p.request, &flag, MPI_STATUS_IGNORE);
        return;
    }
    int flag = 0;  // another thread turns it now, or it could not be made
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

void finish_turning() {
    Poke& p = poke();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (p.request != MPI_REQUEST_NULL) {
        PMPI_Cancel(&p.request);
        PMPI_Wait(&p.request, MPI_STATUS_IGNORE);
    }
    if (p.comm != MPI_COMM_NULL) PMPI_Comm_free(&p.comm);
    p.failed = true;  // no more after teardown
}

void Backoff::pause() {
    ++turns_;
    if (turns_ < 64) return;  // spin
    turn_mpi();               // a peer may wait for a message of this rank's
    if (turns_ < 64 + 1024) {
        sched_yield();
        return;
    }
    const timespec nap = {0, 20000};
    nanosleep(&nap, nullptr);
}

}  // namespace chorus_mpi

// For tests and tools: the requests the interposer tracks on this rank
// (started and not yet completed by the program, or freed and not done).
extern "C" unsigned long long chorus_mpi_tracked_requests(void) {
    return chorus_mpi::table_size();
}
