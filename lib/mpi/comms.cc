// One Chorus communicator per MPI communicator, created on the first call
// that Chorus runs on it (collective: every rank makes that call) and cached
// in an attribute. MPI_Comm_free deletes the attribute, whose callback
// destroys the Chorus communicator; destroying one is local, so ranks may
// free their communicators in any order, as MPI allows. Whatever is left at
// MPI_Finalize is destroyed then. MPI_Comm_free is local, so it does not
// wait for calls still in flight on the communicator: those go on (their
// errors raised on MPI_COMM_SELF), and the Chorus communicator is destroyed
// after the last of them completes (reap_freed_comms). Only requests the
// program gave up with MPI_Request_free (erroneous for collectives in MPI,
// and waited for by nobody) are completed by MPI_Comm_free, as before.
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

#include "requests.h"

namespace chorus_mpi {

std::atomic<uint64_t> g_generation{0};
thread_local LastLookup t_last CHORUS_MPI_TLS;

struct Entry {
    uint64_t seq = 0;  // creation order on this rank
    MPI_Comm comm = MPI_COMM_NULL;  // null once the program freed it
    Target target;                 // cc is null once destroyed, or if creation failed
    std::mutex lane;               // target.lane
    std::unique_ptr<Tuner> tuner;  // target.tuner
    bool inter = false;
    chorus_result_t failure_result = CHORUS_SUCCESS;
    std::string failure;  // non-empty: creation failed on some rank
};

namespace {

struct Registry {
    std::mutex mutex;
    std::map<uint64_t, Entry*> live;  // by seq
    std::vector<Entry*> freed;        // MPI communicator freed, calls still in flight
    std::atomic<size_t> n_freed{0};   // freed.size(), read without the mutex
    uint64_t next_seq = 1;
    int keyval = MPI_KEYVAL_INVALID;
    int finalize_keyval = MPI_KEYVAL_INVALID;
};

Registry& registry() {
    static Registry* r = new Registry;
    return *r;
}

// While a Chorus call on the communicator waits: one turn of MPI's
// progress engine (see collectives.cc), and of the interposer's requests on
// other communicators (a peer may wait for one of them before it joins
// this call, as MPI's progress rules allow).
void drive_mpi(void* arg) {
    (void)arg;
    turn_mpi();
    if (requests_live()) progress_requests();
}

void destroy(Entry* e) {
    if (!e->target.cc) return;
    finish_requests(e->target.cc);
    chorus_comm_t cc = e->target.cc;
    e->target.cc = nullptr;
    InsideChorus inside;
    chorus_result_t rc = chorus_comm_destroy(cc);
    if (rc != CHORUS_SUCCESS)
        std::fprintf(stderr, "[chorus warn] MPI interposer: destroying a Chorus communicator failed: %s\n",
                     chorus_comm_last_error(nullptr));
}

// Attribute delete callback: MPI_Comm_free, or MPI_Finalize for
// MPI_COMM_WORLD and MPI_COMM_SELF (after teardown has destroyed theirs).
// With calls in flight the entry waits in `freed` until they are done.
int delete_entry(MPI_Comm, int, void* value, void*) {
    Entry* e = static_cast<Entry*>(value);
    g_generation.fetch_add(1, std::memory_order_acq_rel);
    Registry& r = registry();
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        r.live.erase(e->seq);
        // Listed before its requests are orphaned: one that completes
        // meanwhile finds it here.
        if (!torn_down() && e->target.cc && requests_live()) {
            r.freed.push_back(e);
            r.n_freed.store(r.freed.size(), std::memory_order_release);
            e = nullptr;
        }
    }
    if (!e) {
        e = static_cast<Entry*>(value);
        e->comm = MPI_COMM_NULL;
        finish_requests(e->target.cc, true);
        orphan_requests(e->target.cc);
        reap_freed_comms();
        return MPI_SUCCESS;
    }
    if (!torn_down()) destroy(e);
    delete e;
    return MPI_SUCCESS;
}

// MPI_COMM_SELF's attributes are deleted first thing in MPI_Finalize, while
// MPI still works: this catches programs whose MPI_Finalize does not come
// through this library (Fortran's calls PMPI_Finalize directly).
int finalize_hook(MPI_Comm, int, void*, void*) {
    teardown();
    return MPI_SUCCESS;
}

Entry* create_entry(MPI_Comm comm) {
    Registry& r = registry();
    Entry* e = new Entry;
    e->comm = comm;
    e->target.lane = &e->lane;
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        e->seq = r.next_seq++;
    }
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    e->inter = inter != 0;
    if (!e->inter) {
        PMPI_Comm_rank(comm, &e->target.rank);
        PMPI_Comm_size(comm, &e->target.size);
        chorus_comm_t cc = nullptr;
        chorus_result_t rc;
        std::string message;
        {
            InsideChorus inside;
            rc = chorus_comm_create(comm, &cc);
            if (rc != CHORUS_SUCCESS) message = chorus_comm_last_error(nullptr);
        }
        // Creation is all or nothing: it failed on every rank or on none.
        if (rc == CHORUS_SUCCESS) {
            e->target.cc = cc;
            if (tuning()) {
                e->tuner.reset(new Tuner(kNumBlocking));
                e->target.tuner = e->tuner.get();
            }
            chorus_comm_set_idle(cc, drive_mpi, e);
        } else {
            e->failure_result = rc;
            e->failure = "creating its Chorus communicator failed: " + message;
        }
    }
    PMPI_Comm_set_attr(comm, r.keyval, e);
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live.emplace(e->seq, e);
    return e;
}

}  // namespace

void init_comms() {
    Registry& r = registry();
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_entry, &r.keyval, nullptr);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_hook, &r.finalize_keyval, nullptr);
    PMPI_Comm_set_attr(MPI_COMM_SELF, r.finalize_keyval, nullptr);
}

Gate chorus_comm_of(Fn fn, MPI_Comm comm, Target* out, int* error) {
    Entry* e;
    const uint64_t generation = g_generation.load(std::memory_order_acquire);
    if (t_last.entry && t_last.comm == comm && t_last.generation == generation) {
        e = t_last.entry;
    } else {
        void* value = nullptr;
        int found = 0;
        PMPI_Comm_get_attr(comm, registry().keyval, &value, &found);
        e = found ? static_cast<Entry*>(value) : create_entry(comm);
        t_last = {comm, e, generation, nullptr};
    }
    t_last.ready = nullptr;
    if (e->inter) return Gate::Pass;
    if (!e->failure.empty()) {
        *error = raise_error(comm, e->failure_result, std::string(fn_name(fn)) + ": " + e->failure);
        return Gate::Refused;
    }
    if (!e->target.cc) return Gate::Pass;  // destroyed by teardown
    *out = e->target;
    t_last.ready = &e->target;
    return Gate::Chorus;
}

void reap_freed_comms() {
    Registry& r = registry();
    if (r.n_freed.load(std::memory_order_acquire) == 0 || t_inside != 0) return;
    std::vector<Entry*> idle;
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        for (size_t i = 0; i < r.freed.size();) {
            if (comm_busy(r.freed[i]->target.cc)) {
                ++i;
                continue;
            }
            idle.push_back(r.freed[i]);
            r.freed[i] = r.freed.back();
            r.freed.pop_back();
        }
        r.n_freed.store(r.freed.size(), std::memory_order_release);
    }
    for (Entry* e : idle) {
        destroy(e);
        delete e;
    }
}

void destroy_all_comms() {
    finish_requests(nullptr);  // those handed to PMPI with staged buffers too
    reap_freed_comms();
    finish_turning();
    Registry& r = registry();
    std::map<uint64_t, Entry*> snapshot;
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        snapshot = r.live;
    }
    for (auto& kv : snapshot) destroy(kv.second);
}

}  // namespace chorus_mpi
