// The C API: handle checks, argument validation (validate.cc), and the
// mapping of C++ errors to chorus_result_t. No exception leaves this file.
#include <cstring>
#include <memory>
#include <new>

#include "base/log.h"
#include "chorus.h"
#include "core/communicator.h"
#include "core/handles.h"
#include "core/validate.h"

using chorus::Communicator;
using chorus::Error;
using chorus::Operation;
using chorus::api::guarded;
using chorus::api::invalid;
using chorus::api::no_request;
using chorus::api::not_live;
using chorus::coll::Collective;

namespace {

// The live communicator of `handle`, or null with the message recorded.
inline Communicator* live(chorus_comm_t handle, const char* fn) {
    Communicator* c = chorus::api::find_comm(handle);
    if (!c) not_live(handle, fn);
    return c;
}

struct Validated {
    Collective coll = Collective::Allreduce;
    chorus_comm_t comm = nullptr;
    chorus::api::Args in;
    bool valid = false;
    // Where the call ran in place: its plan, which the next call that
    // repeats it runs at once (Communicator::run).
    Communicator::RanInPlace ran;
};

bool same_args(const chorus::api::Args& a, const chorus::api::Args& b) {
    return a.sendbuf == b.sendbuf && a.recvbuf == b.recvbuf && a.count == b.count && a.datatype == b.datatype &&
           a.op == b.op && a.root == b.root && a.counts == b.counts && a.displs == b.displs &&
           a.send_counts == b.send_counts && a.send_displs == b.send_displs && a.reduce_scatterv == b.reduce_scatterv;
}

// Whether the arrays of `in` hold what the last validation copied into `a`
// (an empty copy: that array is not read, as the form, rank and root say).
bool same_arrays(const chorus::api::Args& in, const chorus::coll::CollArgs& a, size_t p) {
    auto same = [p](const size_t* given, const std::vector<size_t>& kept) {
        return kept.empty() || (given && kept.size() == p && std::memcmp(given, kept.data(), p * sizeof(size_t)) == 0);
    };
    return same(in.counts, a.counts) && same(in.displs, a.displs) && same(in.send_counts, a.send_counts) &&
           same(in.send_displs, a.send_displs);
}

// The fast path of a repeated call, the one place that remembers calls: a
// thread's last call, its arrays' storage kept from one call to the next,
// the arguments it was last validated for and, where it ran in place, its
// plan. A call repeats the last when its communicator, form and arguments
// are the same (the arrays it reads compared by content with the copies the
// last one kept, as their contents may change at the same address): it then
// skips the checks, which depend on nothing else (handles are never reused)
// but the communicator's failure, and, where the last ran in place, the
// plan too while the communicator's plans and state are unchanged
// (Communicator::run). A solver's loop of dot products takes this path.
struct ThreadCalls;
// The path of every call reads one pointer of initial-exec TLS (no
// __tls_get_addr); the owner, general-dynamic, only on a thread's first call.
#if defined(__GNUC__) && defined(__ELF__)
__attribute__((tls_model("initial-exec")))
#endif
thread_local ThreadCalls* t_calls = nullptr;
thread_local bool t_calls_gone = false;
struct ThreadCalls {
    chorus::api::Call call;
    Validated last;
    bool in_use = false;
    ~ThreadCalls() {
        t_calls = nullptr;
        t_calls_gone = true;
    }
};

// Null once the thread's own has been destroyed (calls from other
// thread-exit destructors).
ThreadCalls* thread_calls() {
    if (t_calls) return t_calls;
    if (t_calls_gone) return nullptr;
    thread_local std::unique_ptr<ThreadCalls> owner(new ThreadCalls);
    t_calls = owner.get();
    return t_calls;
}

// A call on `call` (the thread's, or one of its own): validate unless it
// repeats `last` (the thread's last call, when `call` is the thread's), then
// start it, and wait for it unless it is nonblocking.
[[gnu::always_inline]] inline chorus_result_t run_call(Collective coll, const char* fn, const chorus::api::Args& in,
                                                       chorus_comm_t handle, Communicator* c, void* stream,
                                                       bool nonblocking, chorus_request_t* request,
                                                       chorus::api::Call& call, Validated* last) {
    const bool repeat = last && last->valid && last->coll == coll && last->comm == handle && same_args(last->in, in) &&
                        same_arrays(in, call.args, static_cast<size_t>(c->size()));
    if (repeat) {
        if (c->failed_before_next()) return chorus::api::check_not_failed(fn, c);
    } else {
        if (last) {
            last->valid = false;
            last->ran = Communicator::RanInPlace{};
        }
        chorus_result_t rc = chorus::api::validate(coll, fn, c, in, &call);
        if (rc != CHORUS_SUCCESS) return rc;
        if (last) {
            last->coll = coll;
            last->comm = handle;
            last->in = in;
            last->valid = true;
        }
    }
    return guarded(c, [&] {
        if (!nonblocking) return c->run(call.args, call.send, call.recv, stream, last ? &last->ran : nullptr);
        Operation* o = c->start(call.args, call.send, call.recv, stream);
        *request = chorus::api::add_request(handle, o);
        return CHORUS_SUCCESS;
    });
}

// Every collective entry point: look up, validate, then start the call, and
// wait for it unless `request` is given (the nonblocking twins).
chorus_result_t collective(Collective coll, const char* fn, const chorus::api::Args& in, chorus_comm_t handle,
                           void* stream, bool nonblocking, chorus_request_t* request) {
    Communicator* c = live(handle, fn);
    if (!c) return CHORUS_ERR_INVALID_ARGUMENT;
    if (nonblocking) {
        if (!request) return no_request(c, fn);
        *request = nullptr;
    }
    // The thread's call (a call made from inside another, from an idle hook,
    // or while the thread exits, has its own, and checks everything).
    ThreadCalls* t = thread_calls();
    if (!t || t->in_use) {
        chorus::api::Call own;
        return run_call(coll, fn, in, handle, c, stream, nonblocking, request, own, nullptr);
    }
    struct Use {
        ThreadCalls* t;
        ~Use() { t->in_use = false; }
    } use{t};
    t->in_use = true;
    return run_call(coll, fn, in, handle, c, stream, nonblocking, request, t->call, &t->last);
}

chorus::api::Args args(const void* sendbuf, void* recvbuf, size_t count, int datatype, int op = 0, int root = 0,
                       const size_t* counts = nullptr) {
    chorus::api::Args a;
    a.sendbuf = sendbuf;
    a.recvbuf = recvbuf;
    a.count = count;
    a.counts = counts;
    a.datatype = datatype;
    a.op = op;
    a.root = root;
    return a;
}

// The v forms: each side's count (one block) or counts and displacements.
chorus::api::Args vargs(const void* sendbuf, size_t count, const size_t* send_counts, const size_t* send_displs,
                        void* recvbuf, const size_t* counts, const size_t* displs, int datatype, int root = 0) {
    chorus::api::Args a = args(sendbuf, recvbuf, count, datatype, 0, root, counts);
    a.displs = displs;
    a.send_counts = send_counts;
    a.send_displs = send_displs;
    return a;
}

// reduce_scatterv: recvcounts instead of a recvcount.
chorus::api::Args reduce_scatterv_args(const void* sendbuf, void* recvbuf, const size_t* recvcounts, int datatype,
                                       int op) {
    chorus::api::Args a = args(sendbuf, recvbuf, 0, datatype, op, 0, recvcounts);
    a.reduce_scatterv = true;
    return a;
}

}  // namespace

extern "C" {

const char* chorus_get_error_string(chorus_result_t result) {
    switch (result) {
        case CHORUS_SUCCESS: return "success";
        case CHORUS_ERR_INVALID_ARGUMENT: return "invalid argument";
        case CHORUS_ERR_UNSUPPORTED: return "unsupported";
        case CHORUS_ERR_OUT_OF_MEMORY: return "out of memory";
        case CHORUS_ERR_TRANSPORT: return "transport error";
        case CHORUS_ERR_CUDA: return "CUDA error";
        case CHORUS_ERR_TIMEOUT: return "timed out";
        case CHORUS_ERR_PEER_FAILED: return "peer failed";
        case CHORUS_ERR_COMM_FAILED: return "communicator failed";
        case CHORUS_ERR_MISMATCH: return "arguments mismatch across ranks";
        case CHORUS_ERR_INTERNAL: return "internal error";
        case CHORUS_ERR_CONFIG: return "bad CHORUS_* setting";
    }
    return "unknown result code";
}

const char* chorus_comm_last_error(chorus_comm_t comm) {
    if (!comm) return chorus::api::thread_error().c_str();
    Communicator* c = chorus::api::find_comm(comm);
    if (!c) {
        chorus::api::thread_error() = "chorus_comm_last_error: comm is not a live communicator";
        return chorus::api::thread_error().c_str();
    }
    return c->last_error().c_str();
}

chorus_result_t chorus_comm_create(MPI_Comm mpi_comm, chorus_comm_t* comm) {
    if (!comm) return invalid(nullptr, "chorus_comm_create: comm (output) is NULL");
    *comm = nullptr;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return invalid(nullptr, "chorus_comm_create: MPI is not initialized (or already finalized)");
    if (mpi_comm == MPI_COMM_NULL) return invalid(nullptr, "chorus_comm_create: mpi_comm is MPI_COMM_NULL");
    int inter = 0;
    MPI_Comm_test_inter(mpi_comm, &inter);
    if (inter)
        return chorus::api::report(nullptr, CHORUS_ERR_UNSUPPORTED,
                                   "chorus_comm_create: intercommunicators are not supported");
    return guarded(nullptr, [&] {
        *comm = chorus::api::add_comm(Communicator::create_mpi(mpi_comm));
        return CHORUS_SUCCESS;
    });
}

chorus_result_t chorus_comm_destroy(chorus_comm_t comm) {
    std::unique_ptr<Communicator> owned = chorus::api::remove_comm(comm);
    if (!owned) {
        live(comm, "chorus_comm_destroy");  // records why
        return CHORUS_ERR_INVALID_ARGUMENT;
    }
    return guarded(nullptr, [&] {
        owned.reset();
        return CHORUS_SUCCESS;
    });
}

chorus_result_t chorus_comm_abort(chorus_comm_t comm) {
    Communicator* c = live(comm, "chorus_comm_abort");
    if (!c) return CHORUS_ERR_INVALID_ARGUMENT;
    c->abort("chorus_comm_abort was called");
    return CHORUS_SUCCESS;
}

chorus_result_t chorus_comm_set_label(chorus_comm_t comm, const char* label) {
    Communicator* c = live(comm, "chorus_comm_set_label");
    if (!c) return CHORUS_ERR_INVALID_ARGUMENT;
    if (label && std::strlen(label) > 255)
        return invalid(
            c, chorus::cat("chorus_comm_set_label: label is ", std::strlen(label), " characters long (at most 255)"));
    return guarded(c, [&] {
        c->set_label(label);
        return CHORUS_SUCCESS;
    });
}

chorus_result_t chorus_comm_set_idle(chorus_comm_t comm, chorus_idle_fn_t fn, void* arg) {
    Communicator* c = live(comm, "chorus_comm_set_idle");
    if (!c) return CHORUS_ERR_INVALID_ARGUMENT;
    c->set_idle(fn, arg);
    return CHORUS_SUCCESS;
}

chorus_result_t chorus_comm_rank(chorus_comm_t comm, int* rank) {
    Communicator* c = live(comm, "chorus_comm_rank");
    if (!c) return CHORUS_ERR_INVALID_ARGUMENT;
    if (!rank) return invalid(c, "chorus_comm_rank: rank (output) is NULL");
    *rank = c->rank();
    return CHORUS_SUCCESS;
}

chorus_result_t chorus_comm_size(chorus_comm_t comm, int* size) {
    Communicator* c = live(comm, "chorus_comm_size");
    if (!c) return CHORUS_ERR_INVALID_ARGUMENT;
    if (!size) return invalid(c, "chorus_comm_size: size (output) is NULL");
    *size = c->size();
    return CHORUS_SUCCESS;
}

chorus_result_t chorus_allreduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                 chorus_op_t op, chorus_comm_t comm, void* stream) {
    return collective(Collective::Allreduce, "chorus_allreduce", args(sendbuf, recvbuf, count, datatype, op), comm,
                      stream, false, nullptr);
}

chorus_result_t chorus_iallreduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                  chorus_op_t op, chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::Allreduce, "chorus_iallreduce", args(sendbuf, recvbuf, count, datatype, op), comm,
                      stream, true, request);
}

chorus_result_t chorus_broadcast(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                                 chorus_comm_t comm, void* stream) {
    return collective(Collective::Broadcast, "chorus_broadcast", args(sendbuf, recvbuf, count, datatype, 0, root), comm,
                      stream, false, nullptr);
}

chorus_result_t chorus_ibroadcast(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                  int root, chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::Broadcast, "chorus_ibroadcast", args(sendbuf, recvbuf, count, datatype, 0, root),
                      comm, stream, true, request);
}

chorus_result_t chorus_reduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                              chorus_op_t op, int root, chorus_comm_t comm, void* stream) {
    return collective(Collective::Reduce, "chorus_reduce", args(sendbuf, recvbuf, count, datatype, op, root), comm,
                      stream, false, nullptr);
}

chorus_result_t chorus_ireduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                               chorus_op_t op, int root, chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::Reduce, "chorus_ireduce", args(sendbuf, recvbuf, count, datatype, op, root), comm,
                      stream, true, request);
}

chorus_result_t chorus_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, chorus_datatype_t datatype,
                                      chorus_op_t op, chorus_comm_t comm, void* stream) {
    return collective(Collective::ReduceScatter, "chorus_reduce_scatter",
                      args(sendbuf, recvbuf, recvcount, datatype, op), comm, stream, false, nullptr);
}

chorus_result_t chorus_ireduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, chorus_datatype_t datatype,
                                       chorus_op_t op, chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::ReduceScatter, "chorus_ireduce_scatter",
                      args(sendbuf, recvbuf, recvcount, datatype, op), comm, stream, true, request);
}

chorus_result_t chorus_reduce_scatterv(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                       chorus_datatype_t datatype, chorus_op_t op, chorus_comm_t comm, void* stream) {
    return collective(Collective::ReduceScatter, "chorus_reduce_scatterv",
                      reduce_scatterv_args(sendbuf, recvbuf, recvcounts, datatype, op), comm, stream, false, nullptr);
}

chorus_result_t chorus_ireduce_scatterv(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                        chorus_datatype_t datatype, chorus_op_t op, chorus_comm_t comm, void* stream,
                                        chorus_request_t* request) {
    return collective(Collective::ReduceScatter, "chorus_ireduce_scatterv",
                      reduce_scatterv_args(sendbuf, recvbuf, recvcounts, datatype, op), comm, stream, true, request);
}

chorus_result_t chorus_allgather(const void* sendbuf, void* recvbuf, size_t sendcount, chorus_datatype_t datatype,
                                 chorus_comm_t comm, void* stream) {
    return collective(Collective::Allgather, "chorus_allgather", args(sendbuf, recvbuf, sendcount, datatype), comm,
                      stream, false, nullptr);
}

chorus_result_t chorus_iallgather(const void* sendbuf, void* recvbuf, size_t sendcount, chorus_datatype_t datatype,
                                  chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::Allgather, "chorus_iallgather", args(sendbuf, recvbuf, sendcount, datatype), comm,
                      stream, true, request);
}

chorus_result_t chorus_allgatherv(const void* sendbuf, size_t sendcount, void* recvbuf, const size_t* recvcounts,
                                  const size_t* displs, chorus_datatype_t datatype, chorus_comm_t comm, void* stream) {
    return collective(Collective::Allgatherv, "chorus_allgatherv",
                      vargs(sendbuf, sendcount, nullptr, nullptr, recvbuf, recvcounts, displs, datatype), comm, stream,
                      false, nullptr);
}

chorus_result_t chorus_iallgatherv(const void* sendbuf, size_t sendcount, void* recvbuf, const size_t* recvcounts,
                                   const size_t* displs, chorus_datatype_t datatype, chorus_comm_t comm, void* stream,
                                   chorus_request_t* request) {
    return collective(Collective::Allgatherv, "chorus_iallgatherv",
                      vargs(sendbuf, sendcount, nullptr, nullptr, recvbuf, recvcounts, displs, datatype), comm, stream,
                      true, request);
}

chorus_result_t chorus_alltoall(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                chorus_comm_t comm, void* stream) {
    return collective(Collective::Alltoall, "chorus_alltoall", args(sendbuf, recvbuf, count, datatype), comm, stream,
                      false, nullptr);
}

chorus_result_t chorus_ialltoall(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                 chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::Alltoall, "chorus_ialltoall", args(sendbuf, recvbuf, count, datatype), comm, stream,
                      true, request);
}

chorus_result_t chorus_alltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls, void* recvbuf,
                                 const size_t* recvcounts, const size_t* rdispls, chorus_datatype_t datatype,
                                 chorus_comm_t comm, void* stream) {
    return collective(Collective::Alltoallv, "chorus_alltoallv",
                      vargs(sendbuf, 0, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype), comm, stream,
                      false, nullptr);
}

chorus_result_t chorus_ialltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls, void* recvbuf,
                                  const size_t* recvcounts, const size_t* rdispls, chorus_datatype_t datatype,
                                  chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::Alltoallv, "chorus_ialltoallv",
                      vargs(sendbuf, 0, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype), comm, stream,
                      true, request);
}

chorus_result_t chorus_gather(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                              chorus_comm_t comm, void* stream) {
    return collective(Collective::Gather, "chorus_gather", args(sendbuf, recvbuf, count, datatype, 0, root), comm,
                      stream, false, nullptr);
}

chorus_result_t chorus_igather(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                               chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::Gather, "chorus_igather", args(sendbuf, recvbuf, count, datatype, 0, root), comm,
                      stream, true, request);
}

chorus_result_t chorus_gatherv(const void* sendbuf, size_t sendcount, void* recvbuf, const size_t* recvcounts,
                               const size_t* displs, chorus_datatype_t datatype, int root, chorus_comm_t comm,
                               void* stream) {
    return collective(Collective::Gatherv, "chorus_gatherv",
                      vargs(sendbuf, sendcount, nullptr, nullptr, recvbuf, recvcounts, displs, datatype, root), comm,
                      stream, false, nullptr);
}

chorus_result_t chorus_igatherv(const void* sendbuf, size_t sendcount, void* recvbuf, const size_t* recvcounts,
                                const size_t* displs, chorus_datatype_t datatype, int root, chorus_comm_t comm,
                                void* stream, chorus_request_t* request) {
    return collective(Collective::Gatherv, "chorus_igatherv",
                      vargs(sendbuf, sendcount, nullptr, nullptr, recvbuf, recvcounts, displs, datatype, root), comm,
                      stream, true, request);
}

chorus_result_t chorus_scatter(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                               chorus_comm_t comm, void* stream) {
    return collective(Collective::Scatter, "chorus_scatter", args(sendbuf, recvbuf, count, datatype, 0, root), comm,
                      stream, false, nullptr);
}

chorus_result_t chorus_iscatter(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype, int root,
                                chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::Scatter, "chorus_iscatter", args(sendbuf, recvbuf, count, datatype, 0, root), comm,
                      stream, true, request);
}

chorus_result_t chorus_scatterv(const void* sendbuf, const size_t* sendcounts, const size_t* displs, void* recvbuf,
                                size_t recvcount, chorus_datatype_t datatype, int root, chorus_comm_t comm,
                                void* stream) {
    return collective(Collective::Scatterv, "chorus_scatterv",
                      vargs(sendbuf, recvcount, sendcounts, displs, recvbuf, nullptr, nullptr, datatype, root), comm,
                      stream, false, nullptr);
}

chorus_result_t chorus_iscatterv(const void* sendbuf, const size_t* sendcounts, const size_t* displs, void* recvbuf,
                                 size_t recvcount, chorus_datatype_t datatype, int root, chorus_comm_t comm,
                                 void* stream, chorus_request_t* request) {
    return collective(Collective::Scatterv, "chorus_iscatterv",
                      vargs(sendbuf, recvcount, sendcounts, displs, recvbuf, nullptr, nullptr, datatype, root), comm,
                      stream, true, request);
}

chorus_result_t chorus_barrier(chorus_comm_t comm, void* stream) {
    return collective(Collective::Barrier, "chorus_barrier", args(nullptr, nullptr, 0, CHORUS_UINT8), comm, stream,
                      false, nullptr);
}

chorus_result_t chorus_ibarrier(chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return collective(Collective::Barrier, "chorus_ibarrier", args(nullptr, nullptr, 0, CHORUS_UINT8), comm, stream,
                      true, request);
}

}  // extern "C"
