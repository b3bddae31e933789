// Internals of libchorus_mpi.so, the PMPI interposer: the MPI collectives it
// defines run through Chorus when every rank can agree that Chorus handles
// the call, and through the matching PMPI_* function otherwise.
//
// Every decision to intercept depends only on what MPI requires to agree
// across the ranks of a call (count, datatype, op, root, the communicator)
// and on the configuration; never on where one rank's buffer lives. The
// nonblocking forms (MPI_Iallreduce ...) decide exactly as their blocking
// twins and return requests the program completes with MPI_Wait and the
// rest (requests.h).
#pragma once

#include <chorus.h>
#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "tuning.h"

// Thread-locals on the path of every call: in the static TLS block (this
// library is preloaded, so it is there from the start), which spares each
// access a __tls_get_addr call.
#if defined(__GNUC__) && defined(__ELF__)
#define CHORUS_MPI_TLS __attribute__((tls_model("initial-exec")))
#else
#define CHORUS_MPI_TLS
#endif

namespace chorus_mpi {

enum Fn {
    kAllreduce,
    kBcast,
    kReduce,
    kReduceScatterBlock,
    kReduceScatter,
    kAllgather,
    kAllgatherv,
    kAlltoall,
    kAlltoallv,
    kGather,
    kGatherv,
    kScatter,
    kScatterv,
    kBarrier,
    // The nonblocking twins, in the same order.
    kIallreduce,
    kIbcast,
    kIreduce,
    kIreduceScatterBlock,
    kIreduceScatter,
    kIallgather,
    kIallgatherv,
    kIalltoall,
    kIalltoallv,
    kIgather,
    kIgatherv,
    kIscatter,
    kIscatterv,
    kIbarrier,
    kNumFns
};

constexpr int kNumBlocking = kIallreduce;
static_assert(kNumFns == 2 * kNumBlocking, "every collective has a nonblocking twin");

// The function a call is: `blocking`'s nonblocking twin when it returns a
// request (request != null).
inline Fn which(Fn blocking, const MPI_Request* request) {
    return request ? static_cast<Fn>(blocking + kNumBlocking) : blocking;
}

const char* fn_name(Fn fn);

// ---------------------------------------------------------------------------
// Settings, statistics, errors (state.cc)

enum class Policy { Faster, All, Device, None, Bad };

// While > 0 the current thread is inside Chorus (or inside this library's
// own bookkeeping), and every MPI call it makes goes straight to PMPI.
extern thread_local int t_inside CHORUS_MPI_TLS;
struct InsideChorus {
    InsideChorus() { ++t_inside; }
    ~InsideChorus() { --t_inside; }
    InsideChorus(const InsideChorus&) = delete;
    InsideChorus& operator=(const InsideChorus&) = delete;
};
// True from the first call after MPI_Init that finds the policy lets calls
// reach Chorus (all, or device in a build with CUDA) until teardown: what
// open_gate() says of every call on a communicator, read in one load.
extern std::atomic<bool> g_gate_open;
bool inside_chorus();

// What the start of an intercepted function decided.
enum class Gate {
    Pass,     // call PMPI_* (counted as passed through)
    Quiet,    // call PMPI_* without counting (Chorus's own traffic, or MPI not running)
    Chorus,   // the call may go to Chorus, if its arguments qualify
    Refused,  // the configuration is bad: *error holds the MPI error code already raised
};

// Reads the configuration on the first call after MPI_Init, then decides
// from the policy, the thread level and the communicator.
Gate open_gate(Fn fn, MPI_Comm comm, int* error);

// CHORUS_MPI_STAGING=all: host buffers handed to MPI go through host
// copies too, as device buffers do (the staging path, checked anywhere).
bool stage_host_buffers();
// Whether a buffer handed to MPI may need host staging: with
// CHORUS_MPI_STAGING=all, or once device memory may exist in this process
// (a CUDA build, a GPU, a CUDA context): until then every pointer is host
// memory and none is asked about.
extern bool g_stage_all;
inline bool may_stage() {
    return g_stage_all || chorus_device_memory_possible();
}
// The calls of each function run through Chorus and handed to PMPI, per
// thread: only its own thread writes them (a relaxed load and store, no
// locked add on the way of every call); readers sum every thread's.
struct CallCounts {
    std::atomic<unsigned long long> intercepted[kNumFns] = {};
    std::atomic<unsigned long long> passed[kNumFns] = {};
};
extern thread_local CallCounts* t_counts CHORUS_MPI_TLS;
CallCounts& new_thread_counts();                // this thread's, made and registered
unsigned long long total(bool passed, int fn);  // over every thread: passed, or intercepted
inline void bump(std::atomic<unsigned long long>& n) {
    n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
inline void count_intercepted(Fn fn) {
    bump((t_counts ? *t_counts : new_thread_counts()).intercepted[fn]);
}
inline void count_passed(Fn fn) {
    bump((t_counts ? *t_counts : new_thread_counts()).passed[fn]);
}

// CHORUS_MPI_INTERCEPT=faster: the blocking calls go through Chorus or to
// MPI as their communicator's trials decide (tuning.h).
bool tuning();
// After the last trial of `cell` (fn, `bytes`' size class) on `comm`: the
// maxima over the ranks of its times, and the decision (the same on every
// rank), logged at CHORUS_LOG=info by the communicator's rank 0.
void agree_route(Fn fn, MPI_Comm comm, size_t bytes, TuneCell& cell);

// Raise a Chorus failure on `comm` through its error handler, as an error
// code of the "Chorus" error class whose string is `message`. Returns the
// code, for when the handler returns.
int raise_error(MPI_Comm comm, chorus_result_t result, const std::string& message);

// Destroy every Chorus communicator (locally: no rank waits for another),
// print the statistics, and pass every later call through. Runs once.
void teardown();
bool torn_down();

// ---------------------------------------------------------------------------
// Communicators (comms.cc)

struct Target {
    chorus_comm_t cc = nullptr;
    int rank = 0;
    int size = 0;
    // Held around every Chorus call on the communicator while requests are
    // in flight: threads may complete requests of one communicator at once
    // (MPI_THREAD_MULTIPLE), and Chorus takes one caller at a time.
    std::mutex* lane = nullptr;
    // The way of each blocking call by size class (CHORUS_MPI_INTERCEPT=
    // faster), or null: every call through Chorus.
    Tuner* tuner = nullptr;
};

// The Chorus communicator of `comm`, created on the first call that reaches
// here (collective: every rank makes the same call). Returns Gate::Chorus
// with *out set, Gate::Pass for communicators Chorus does not handle
// (intercommunicators), or Gate::Refused after raising an error.
Gate chorus_comm_of(Fn fn, MPI_Comm comm, Target* out, int* error);

// The last communicator a thread looked up, so that a loop of calls on one
// communicator skips PMPI_Comm_get_attr. Any deletion changes the
// generation, which voids every thread's cache (a freed handle may come
// back for a new communicator). `ready`: its target, when chorus_comm_of
// returned Gate::Chorus for it. Constant-initialized (MPI_COMM_NULL is an
// address in some MPIs: a thread_local with a dynamic initializer costs a
// call on every access).
struct Entry;
struct LastLookup {
    MPI_Comm comm{};
    Entry* entry = nullptr;
    uint64_t generation = 0;
    const Target* ready = nullptr;
};
extern std::atomic<uint64_t> g_generation;
extern thread_local LastLookup t_last CHORUS_MPI_TLS;

// Create the attribute keyval; register the finalize hook on MPI_COMM_SELF.
void init_comms();
// Destroy the communicators that are left (teardown's first half).
void destroy_all_comms();

// ---------------------------------------------------------------------------
// Datatypes and ops (types.cc)

// The Chorus datatype and op that compute exactly what MPI defines for
// (datatype, op), or false when Chorus cannot (derived types, MPI_MAXLOC,
// user-defined ops, pairs MPI leaves undefined, ...).
bool map_reduction(MPI_Datatype type, MPI_Op op, chorus_datatype_t* dt, chorus_op_t* cop);

// How `count` elements of `type` are moved as bytes. `direct`: the bytes
// sit at the buffer's address in order (a predefined type without gaps);
// otherwise they are packed and unpacked with PMPI_Pack/PMPI_Unpack.
struct Layout {
    size_t bytes = 0;
    bool direct = false;
    MPI_Aint extent = 0;  // of one element
};
// False for MPI_DATATYPE_NULL or a negative count (left to PMPI to report).
bool layout_of(MPI_Datatype type, int count, Layout* out);
// The size of a predefined datatype (stored in order, no gaps), or 0 for
// any other (the blocking calls' quick way: intercept.h).
size_t basic_size(MPI_Datatype type);

// PMPI_Pack and PMPI_Unpack, with the same arguments, that also take
// MPI_BOTTOM as the user's buffer (MPICH's own refuse it).
int pack(const void* inbuf, int count, MPI_Datatype type, void* outbuf, int outsize, int* position, MPI_Comm comm);
int unpack(const void* inbuf, int insize, int* position, void* outbuf, int count, MPI_Datatype type, MPI_Comm comm);

// ---------------------------------------------------------------------------
// Host staging of device buffers (staging.cc)

// The MPI underneath may not be CUDA-aware: whatever this library hands to a
// PMPI_* function (a call passed through, or PMPI_Pack/PMPI_Unpack around a
// Chorus call) sees host copies of device and managed buffers, made for the
// length of one call. Whether a buffer is staged is a local fact that
// changes nothing every rank must agree on: each rank still makes the same
// MPI call.
class HostStaging {
public:
    // Disabled: view() returns every buffer as it is. `refuse_device`: a
    // device or managed buffer is an error (intercommunicators).
    explicit HostStaging(bool enabled = true, bool refuse_device = false) : enabled_(enabled), refuse_(refuse_device) {}
    ~HostStaging();
    HostStaging(const HostStaging&) = delete;
    HostStaging& operator=(const HostStaging&) = delete;
    // A nonblocking call keeps its host copies until it completes.
    HostStaging(HostStaging&&) = default;

    // The pointer to hand to MPI for `count` elements of `type` at `buf`:
    // buf itself for host memory (and MPI_IN_PLACE, MPI_BOTTOM, null), else
    // a host copy (filled when `read`, or when `write` leaves gaps). Copied
    // back by finish() when `write`. On failure, failed() turns true.
    void* view(const void* buf, size_t count, MPI_Datatype type, bool read, bool write);
    // Copies the written copies back to their device buffers.
    bool finish();
    bool failed() const { return !error_.empty(); }
    bool staged() const { return !regions_.empty(); }
    bool enabled() const { return enabled_; }
    bool refusing() const { return refuse_; }
    // Raises the failure on `comm` (as raise_error) and returns the code.
    int raise(Fn fn, MPI_Comm comm) const;

private:
    struct Region {
        char* user = nullptr;  // the first byte of the span the call touches
        char* host = nullptr;
        size_t bytes = 0;
        bool write = false;
    };
    bool enabled_;
    bool refuse_;
    bool refused_ = false;  // a device buffer met refuse_device
    std::vector<Region> regions_;
    std::string error_;
};

// What a blocking call handed to MPI the quick way sees when no buffer can
// need staging (may_stage() is false): every buffer as it is, with no
// HostStaging to make and take down. Disabled, as HostStaging(false).
struct NoStaging {
    void* view(const void* buf, size_t, MPI_Datatype, bool, bool) const { return const_cast<void*>(buf); }
    bool failed() const { return false; }
    bool enabled() const { return false; }
    bool refusing() const { return false; }
};

// ---------------------------------------------------------------------------
// The collectives, shared by the C and Fortran entry points (collectives.cc).
// With `request`, the nonblocking form: *request is set to a request that
// completes through the MPI_Wait and MPI_Test families (requests.h).

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
              MPI_Request* request = nullptr);
int bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request = nullptr);
int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
           MPI_Request* request = nullptr);
int reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                         MPI_Request* request = nullptr);
int reduce_scatter(const void* sendbuf, void* recvbuf, const int* recvcounts, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request = nullptr);
int allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request = nullptr);

// Data movement of irregular blocks, all-to-all, gather, scatter and the
// barrier (movement.cc).
int allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
               const int* displs, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request = nullptr);
int alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request = nullptr);
int alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
              const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm,
              MPI_Request* request = nullptr);
int gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
           MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request = nullptr);
int gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
            const int* displs, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request = nullptr);
int scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request = nullptr);
int scatterv(const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request = nullptr);
int barrier(MPI_Comm comm, MPI_Request* request = nullptr);

// ---------------------------------------------------------------------------
// Completing requests, shared by the C and Fortran entry points
// (completion.cc): the MPI functions of the same names, for arrays that mix
// the requests of nonblocking calls run through Chorus with any others.

int wait(MPI_Request* request, MPI_Status* status);
int test(MPI_Request* request, int* flag, MPI_Status* status);
int waitall(int count, MPI_Request* requests, MPI_Status* statuses);
int testall(int count, MPI_Request* requests, int* flag, MPI_Status* statuses);
int waitany(int count, MPI_Request* requests, int* index, MPI_Status* status);
int testany(int count, MPI_Request* requests, int* index, int* flag, MPI_Status* status);
int waitsome(int count, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses);
int testsome(int count, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses);
int request_free(MPI_Request* request);
int request_get_status(MPI_Request request, int* flag, MPI_Status* status);

}  // namespace chorus_mpi
