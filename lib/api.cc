// The C API: handle checks, argument validation, and the mapping of C++
// errors to chorus_result_t. No exception leaves this file.
//
// Handles are opaque numbers, never pointers to freed memory: a destroyed
// communicator or completed request is recognised as such, reliably.
#include <cstdint>
#include <mutex>
#include <new>
#include <unordered_map>

#include "chorus.h"
#include "communicator.h"
#include "host_reducer.h"
#include "log.h"

using chorus::Communicator;
using chorus::Error;
using chorus::Operation;

namespace {

struct Request {
    uint64_t comm_id;
    Operation* op;
};

struct Registry {
    std::mutex mutex;
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, std::unique_ptr<Communicator>> comms;
    std::unordered_map<uint64_t, Request> requests;
};

Registry& registry() {
    static Registry* r = new Registry;  // never destroyed: usable from atexit paths
    return *r;
}

thread_local std::string t_last_error;

uint64_t id_of(const void* handle) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)); }
template <typename H>
H handle_of(uint64_t id) {
    return reinterpret_cast<H>(static_cast<uintptr_t>(id));
}

Communicator* lookup(chorus_comm_t comm) {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.comms.find(id_of(comm));
    return it == r.comms.end() ? nullptr : it->second.get();
}

// Run `body`, turning exceptions into a result code and a last-error message
// stored on `comm` (or the thread when there is none).
template <typename F>
chorus_result_t guarded(Communicator* comm, F&& body) {
    std::string message;
    chorus_result_t rc;
    try {
        return body();
    } catch (const Error& e) {
        rc = e.code();
        message = e.what();
    } catch (const std::bad_alloc&) {
        rc = CHORUS_ERR_OUT_OF_MEMORY;
        message = "out of memory";
    } catch (const std::exception& e) {
        rc = CHORUS_ERR_INTERNAL;
        message = chorus::cat("internal error: ", e.what());
    } catch (...) {
        rc = CHORUS_ERR_INTERNAL;
        message = "internal error: unknown exception";
    }
    if (comm) comm->last_error() = message;
    t_last_error = message;
    return rc;
}

chorus_result_t invalid(Communicator* comm, const std::string& message) {
    if (comm) comm->last_error() = message;
    t_last_error = message;
    return CHORUS_ERR_INVALID_ARGUMENT;
}

#define CHORUS_LOOKUP(comm_var, handle, fn)                                                         \
    Communicator* comm_var = lookup(handle);                                                        \
    if (!comm_var)                                                                                  \
        return invalid(nullptr, chorus::cat(fn, ": comm is ", handle ? "not a live communicator" : "NULL", \
                                            " (destroyed, or never created)"));

bool overlaps(const void* a, size_t abytes, const void* b, size_t bbytes) {
    auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
    return abytes && bbytes && x < y + bbytes && y < x + abytes;
}

// One collective call: the arguments after validation, ready to start.
struct Call {
    const char* fn;
    Communicator* comm;
    chorus::coll::CollArgs args;
    const void* send;
    void* recv;
    void* stream;
};

// Checks shared by every collective: enum values, the communicator's health.
chorus_result_t check_common(Communicator* c, const char* fn, int dtype, int op, bool has_op) {
    if (!chorus::datatype_valid(dtype))
        return invalid(c, chorus::cat(fn, ": datatype ", dtype, " is not a chorus_datatype_t"));
    if (has_op && !chorus::op_valid(op)) return invalid(c, chorus::cat(fn, ": op ", op, " is not a chorus_op_t"));
    if (has_op && !chorus::op_supported(static_cast<chorus_datatype_t>(dtype), static_cast<chorus_op_t>(op))) {
        std::string message = chorus::cat(fn, ": op ", chorus::op_name(static_cast<chorus_op_t>(op)),
                                          " is not defined on datatype ",
                                          chorus::datatype_name(static_cast<chorus_datatype_t>(dtype)),
                                          " (bitwise and logical ops take integer types only)");
        c->last_error() = message;
        t_last_error = message;
        return CHORUS_ERR_UNSUPPORTED;
    }
    if (c->failed()) {
        c->last_error() = chorus::cat(fn, ": communicator failed earlier: ", c->failure());
        return CHORUS_ERR_COMM_FAILED;
    }
    return CHORUS_SUCCESS;
}

chorus_result_t check_root(Communicator* c, const char* fn, int root) {
    if (root < 0 || root >= c->size())
        return invalid(c, chorus::cat(fn, ": root ", root, " is out of range for ", c->size(), " ranks"));
    return CHORUS_SUCCESS;
}

// count * multiple elements of esize bytes, or false on overflow.
bool bytes_of(size_t count, size_t multiple, size_t esize, size_t* out) {
    if (multiple && count > SIZE_MAX / multiple) return false;
    size_t n = count * multiple;
    if (esize && n > SIZE_MAX / esize) return false;
    *out = n * esize;
    return true;
}

chorus_result_t need(Communicator* c, const char* fn, const void* p, const char* name, size_t bytes) {
    if (bytes && !p) return invalid(c, chorus::cat(fn, ": ", name, " is NULL with a non-zero count"));
    return CHORUS_SUCCESS;
}

// Start the call; if `request` is NULL, wait for it too.
chorus_result_t launch(Call& call, chorus_comm_t handle, chorus_request_t* request) {
    Communicator* c = call.comm;
    return guarded(c, [&] {
        if (!request) return c->run(call.args, call.send, call.recv, call.stream);
        Operation* o = c->start(call.args, call.send, call.recv, call.stream);
        auto& r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        uint64_t id = r.next_id++;
        r.requests.emplace(id, Request{id_of(handle), o});
        *request = handle_of<chorus_request_t>(id);
        return CHORUS_SUCCESS;
    });
}

#define CHORUS_CHECK(expr)                          \
    do {                                            \
        chorus_result_t rc_ = (expr);               \
        if (rc_ != CHORUS_SUCCESS) return rc_;      \
    } while (0)

#define CHORUS_REQUEST_OUT(c, fn, request)                                                      \
    if (nonblocking) {                                                                          \
        if (!request) return invalid(c, chorus::cat(fn, ": request (output) is NULL"));         \
        *request = nullptr;                                                                     \
    }

using chorus::coll::Collective;

chorus_result_t do_allreduce(const char* fn, const void* sendbuf, void* recvbuf, size_t count, int dt, int op,
                             chorus_comm_t comm, void* stream, chorus_request_t* request, bool nonblocking) {
    CHORUS_LOOKUP(c, comm, fn);
    CHORUS_REQUEST_OUT(c, fn, request);
    CHORUS_CHECK(check_common(c, fn, dt, op, true));
    size_t bytes;
    if (!bytes_of(count, 1, chorus::datatype_size(static_cast<chorus_datatype_t>(dt)), &bytes))
        return invalid(c, chorus::cat(fn, ": count ", count, " overflows the byte size"));
    CHORUS_CHECK(need(c, fn, sendbuf, "sendbuf", bytes));
    CHORUS_CHECK(need(c, fn, recvbuf, "recvbuf", bytes));
    if (sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
        return invalid(c, chorus::cat(fn, ": sendbuf and recvbuf overlap without being equal (in place is sendbuf == recvbuf)"));
    Call call{fn, c, {}, sendbuf, recvbuf, stream};
    call.args.coll = Collective::Allreduce;
    call.args.count = count;
    call.args.dtype = static_cast<chorus_datatype_t>(dt);
    call.args.op = static_cast<chorus_op_t>(op);
    call.args.in_place = sendbuf == recvbuf;
    return launch(call, comm, nonblocking ? request : nullptr);
}

chorus_result_t do_broadcast(const char* fn, const void* sendbuf, void* recvbuf, size_t count, int dt, int root,
                             chorus_comm_t comm, void* stream, chorus_request_t* request, bool nonblocking) {
    CHORUS_LOOKUP(c, comm, fn);
    CHORUS_REQUEST_OUT(c, fn, request);
    CHORUS_CHECK(check_common(c, fn, dt, 0, false));
    CHORUS_CHECK(check_root(c, fn, root));
    size_t bytes;
    if (!bytes_of(count, 1, chorus::datatype_size(static_cast<chorus_datatype_t>(dt)), &bytes))
        return invalid(c, chorus::cat(fn, ": count ", count, " overflows the byte size"));
    bool is_root = c->rank() == root;
    if (is_root) CHORUS_CHECK(need(c, fn, sendbuf, "sendbuf (on the root)", bytes));
    CHORUS_CHECK(need(c, fn, recvbuf, "recvbuf", bytes));
    if (is_root && sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
        return invalid(c, chorus::cat(fn, ": sendbuf and recvbuf overlap without being equal on the root"));
    // Outside the root the send buffer is never read: bind it to recvbuf.
    Call call{fn, c, {}, is_root ? sendbuf : recvbuf, recvbuf, stream};
    call.args.coll = Collective::Broadcast;
    call.args.count = count;
    call.args.dtype = static_cast<chorus_datatype_t>(dt);
    call.args.root = root;
    call.args.in_place = call.send == recvbuf;
    return launch(call, comm, nonblocking ? request : nullptr);
}

chorus_result_t do_reduce(const char* fn, const void* sendbuf, void* recvbuf, size_t count, int dt, int op, int root,
                          chorus_comm_t comm, void* stream, chorus_request_t* request, bool nonblocking) {
    CHORUS_LOOKUP(c, comm, fn);
    CHORUS_REQUEST_OUT(c, fn, request);
    CHORUS_CHECK(check_common(c, fn, dt, op, true));
    CHORUS_CHECK(check_root(c, fn, root));
    size_t bytes;
    if (!bytes_of(count, 1, chorus::datatype_size(static_cast<chorus_datatype_t>(dt)), &bytes))
        return invalid(c, chorus::cat(fn, ": count ", count, " overflows the byte size"));
    bool is_root = c->rank() == root;
    CHORUS_CHECK(need(c, fn, sendbuf, "sendbuf", bytes));
    if (is_root) CHORUS_CHECK(need(c, fn, recvbuf, "recvbuf (on the root)", bytes));
    if (is_root && sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
        return invalid(c, chorus::cat(fn, ": sendbuf and recvbuf overlap without being equal on the root"));
    Call call{fn, c, {}, sendbuf, is_root ? recvbuf : nullptr, stream};
    call.args.coll = Collective::Reduce;
    call.args.count = count;
    call.args.dtype = static_cast<chorus_datatype_t>(dt);
    call.args.op = static_cast<chorus_op_t>(op);
    call.args.root = root;
    call.args.in_place = is_root && sendbuf == recvbuf;
    return launch(call, comm, nonblocking ? request : nullptr);
}

chorus_result_t do_reduce_scatter(const char* fn, const void* sendbuf, void* recvbuf, size_t recvcount,
                                  const size_t* recvcounts, bool irregular, int dt, int op, chorus_comm_t comm,
                                  void* stream, chorus_request_t* request, bool nonblocking) {
    CHORUS_LOOKUP(c, comm, fn);
    CHORUS_REQUEST_OUT(c, fn, request);
    CHORUS_CHECK(check_common(c, fn, dt, op, true));
    if (irregular && !recvcounts) return invalid(c, chorus::cat(fn, ": recvcounts is NULL"));
    size_t esize = chorus::datatype_size(static_cast<chorus_datatype_t>(dt));
    Call call{fn, c, {}, sendbuf, recvbuf, stream};
    auto& a = call.args;
    a.coll = Collective::ReduceScatter;
    a.dtype = static_cast<chorus_datatype_t>(dt);
    a.op = static_cast<chorus_op_t>(op);
    a.size = c->size();
    size_t total = 0, mine = 0;
    if (irregular) {
        a.counts.assign(recvcounts, recvcounts + c->size());
        for (size_t k : a.counts) {
            if (k > SIZE_MAX / esize - total) return invalid(c, chorus::cat(fn, ": the sum of recvcounts overflows"));
            total += k;
        }
        mine = a.counts[c->rank()];
    } else {
        a.count = recvcount;
        if (!bytes_of(recvcount, static_cast<size_t>(c->size()), esize, &total))
            return invalid(c, chorus::cat(fn, ": recvcount ", recvcount, " times ", c->size(), " ranks overflows"));
        total /= esize;
        mine = recvcount;
    }
    size_t total_bytes = total * esize, mine_bytes = mine * esize;
    CHORUS_CHECK(need(c, fn, sendbuf, "sendbuf", total_bytes));
    CHORUS_CHECK(need(c, fn, recvbuf, "recvbuf", mine_bytes));
    a.in_place = sendbuf == recvbuf;
    if (!a.in_place && overlaps(sendbuf, total_bytes, recvbuf, mine_bytes))
        return invalid(c, chorus::cat(fn, ": sendbuf and recvbuf overlap without being equal (in place is sendbuf == recvbuf)"));
    return launch(call, comm, nonblocking ? request : nullptr);
}

chorus_result_t do_allgather(const char* fn, const void* sendbuf, void* recvbuf, size_t count, int dt,
                             chorus_comm_t comm, void* stream, chorus_request_t* request, bool nonblocking) {
    CHORUS_LOOKUP(c, comm, fn);
    CHORUS_REQUEST_OUT(c, fn, request);
    CHORUS_CHECK(check_common(c, fn, dt, 0, false));
    size_t esize = chorus::datatype_size(static_cast<chorus_datatype_t>(dt)), bytes, all;
    if (!bytes_of(count, static_cast<size_t>(c->size()), esize, &all))
        return invalid(c, chorus::cat(fn, ": sendcount ", count, " times ", c->size(), " ranks overflows"));
    bytes = count * esize;
    CHORUS_CHECK(need(c, fn, sendbuf, "sendbuf", bytes));
    CHORUS_CHECK(need(c, fn, recvbuf, "recvbuf", all));
    const char* own = static_cast<const char*>(recvbuf) + static_cast<size_t>(c->rank()) * bytes;
    bool in_place = bytes && sendbuf == own;
    if (!in_place && overlaps(sendbuf, bytes, recvbuf, all))
        return invalid(c, chorus::cat(fn, ": sendbuf overlaps recvbuf without being this rank's block (in place is sendbuf == recvbuf + rank * sendcount)"));
    Call call{fn, c, {}, sendbuf, recvbuf, stream};
    call.args.coll = Collective::Allgather;
    call.args.count = count;
    call.args.dtype = static_cast<chorus_datatype_t>(dt);
    call.args.in_place = in_place;
    return launch(call, comm, nonblocking ? request : nullptr);
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
    if (!comm) return t_last_error.c_str();
    Communicator* c = lookup(comm);
    if (!c) {
        t_last_error = "chorus_comm_last_error: comm is not a live communicator";
        return t_last_error.c_str();
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
    if (inter) {
        t_last_error = "chorus_comm_create: intercommunicators are not supported";
        return CHORUS_ERR_UNSUPPORTED;
    }
    return guarded(nullptr, [&] {
        chorus::Config config = chorus::Config::from_env();
        chorus::set_log_level(config.log_level);
        auto c = Communicator::create_mpi(mpi_comm, config);
        auto& r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        uint64_t id = r.next_id++;
        r.comms.emplace(id, std::move(c));
        *comm = handle_of<chorus_comm_t>(id);
        return CHORUS_SUCCESS;
    });
}

chorus_result_t chorus_comm_destroy(chorus_comm_t comm) {
    CHORUS_LOOKUP(c, comm, "chorus_comm_destroy");
    std::unique_ptr<Communicator> owned;
    {
        auto& r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        auto it = r.comms.find(id_of(comm));
        owned = std::move(it->second);
        r.comms.erase(it);
        for (auto q = r.requests.begin(); q != r.requests.end();)
            q = q->second.comm_id == id_of(comm) ? r.requests.erase(q) : std::next(q);
    }
    return guarded(nullptr, [&] {
        owned.reset();
        return CHORUS_SUCCESS;
    });
}

chorus_result_t chorus_comm_abort(chorus_comm_t comm) {
    CHORUS_LOOKUP(c, comm, "chorus_comm_abort");
    c->abort("chorus_comm_abort was called");
    return CHORUS_SUCCESS;
}

chorus_result_t chorus_comm_rank(chorus_comm_t comm, int* rank) {
    CHORUS_LOOKUP(c, comm, "chorus_comm_rank");
    if (!rank) return invalid(c, "chorus_comm_rank: rank (output) is NULL");
    *rank = c->rank();
    return CHORUS_SUCCESS;
}

chorus_result_t chorus_comm_size(chorus_comm_t comm, int* size) {
    CHORUS_LOOKUP(c, comm, "chorus_comm_size");
    if (!size) return invalid(c, "chorus_comm_size: size (output) is NULL");
    *size = c->size();
    return CHORUS_SUCCESS;
}

chorus_result_t chorus_allreduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                 chorus_op_t op, chorus_comm_t comm, void* stream) {
    return do_allreduce("chorus_allreduce", sendbuf, recvbuf, count, datatype, op, comm, stream, nullptr, false);
}

chorus_result_t chorus_iallreduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                  chorus_op_t op, chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return do_allreduce("chorus_iallreduce", sendbuf, recvbuf, count, datatype, op, comm, stream, request, true);
}

chorus_result_t chorus_broadcast(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                 int root, chorus_comm_t comm, void* stream) {
    return do_broadcast("chorus_broadcast", sendbuf, recvbuf, count, datatype, root, comm, stream, nullptr, false);
}

chorus_result_t chorus_ibroadcast(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                                  int root, chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return do_broadcast("chorus_ibroadcast", sendbuf, recvbuf, count, datatype, root, comm, stream, request, true);
}

chorus_result_t chorus_reduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                              chorus_op_t op, int root, chorus_comm_t comm, void* stream) {
    return do_reduce("chorus_reduce", sendbuf, recvbuf, count, datatype, op, root, comm, stream, nullptr, false);
}

chorus_result_t chorus_ireduce(const void* sendbuf, void* recvbuf, size_t count, chorus_datatype_t datatype,
                               chorus_op_t op, int root, chorus_comm_t comm, void* stream,
                               chorus_request_t* request) {
    return do_reduce("chorus_ireduce", sendbuf, recvbuf, count, datatype, op, root, comm, stream, request, true);
}

chorus_result_t chorus_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                      chorus_datatype_t datatype, chorus_op_t op, chorus_comm_t comm,
                                      void* stream) {
    return do_reduce_scatter("chorus_reduce_scatter", sendbuf, recvbuf, recvcount, nullptr, false, datatype, op,
                             comm, stream, nullptr, false);
}

chorus_result_t chorus_ireduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                       chorus_datatype_t datatype, chorus_op_t op, chorus_comm_t comm,
                                       void* stream, chorus_request_t* request) {
    return do_reduce_scatter("chorus_ireduce_scatter", sendbuf, recvbuf, recvcount, nullptr, false, datatype, op,
                             comm, stream, request, true);
}

chorus_result_t chorus_reduce_scatterv(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                       chorus_datatype_t datatype, chorus_op_t op, chorus_comm_t comm,
                                       void* stream) {
    return do_reduce_scatter("chorus_reduce_scatterv", sendbuf, recvbuf, 0, recvcounts, true, datatype, op, comm,
                             stream, nullptr, false);
}

chorus_result_t chorus_ireduce_scatterv(const void* sendbuf, void* recvbuf, const size_t* recvcounts,
                                        chorus_datatype_t datatype, chorus_op_t op, chorus_comm_t comm,
                                        void* stream, chorus_request_t* request) {
    return do_reduce_scatter("chorus_ireduce_scatterv", sendbuf, recvbuf, 0, recvcounts, true, datatype, op, comm,
                             stream, request, true);
}

chorus_result_t chorus_allgather(const void* sendbuf, void* recvbuf, size_t sendcount, chorus_datatype_t datatype,
                                 chorus_comm_t comm, void* stream) {
    return do_allgather("chorus_allgather", sendbuf, recvbuf, sendcount, datatype, comm, stream, nullptr, false);
}

chorus_result_t chorus_iallgather(const void* sendbuf, void* recvbuf, size_t sendcount, chorus_datatype_t datatype,
                                  chorus_comm_t comm, void* stream, chorus_request_t* request) {
    return do_allgather("chorus_iallgather", sendbuf, recvbuf, sendcount, datatype, comm, stream, request, true);
}

// Look up a request and its communicator; on success the request stays
// registered until finish_request().
static chorus_result_t find_request(chorus_request_t request, const char* fn, Communicator** comm, Operation** op) {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.requests.find(id_of(request));
    if (it == r.requests.end())
        return invalid(nullptr, chorus::cat(fn, ": request is ", request ? "not a live request" : "NULL",
                                            " (completed already, or never started)"));
    auto c = r.comms.find(it->second.comm_id);
    if (c == r.comms.end()) return invalid(nullptr, chorus::cat(fn, ": the request's communicator was destroyed"));
    *comm = c->second.get();
    *op = it->second.op;
    return CHORUS_SUCCESS;
}

static chorus_result_t finish_request(chorus_request_t request, Communicator* c, Operation* op) {
    {
        auto& r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        r.requests.erase(id_of(request));
    }
    chorus_result_t rc = c->release(op);
    if (rc != CHORUS_SUCCESS) t_last_error = c->last_error();
    return rc;
}

chorus_result_t chorus_test(chorus_request_t request, int* done) {
    if (!done) return invalid(nullptr, "chorus_test: done (output) is NULL");
    *done = 0;
    Communicator* c = nullptr;
    Operation* op = nullptr;
    chorus_result_t rc = find_request(request, "chorus_test", &c, &op);
    if (rc != CHORUS_SUCCESS) return rc;
    rc = guarded(c, [&] {
        *done = c->progress(op) ? 1 : 0;
        return CHORUS_SUCCESS;
    });
    if (rc != CHORUS_SUCCESS || !*done) return rc;
    return finish_request(request, c, op);
}

chorus_result_t chorus_wait(chorus_request_t request) {
    Communicator* c = nullptr;
    Operation* op = nullptr;
    chorus_result_t rc = find_request(request, "chorus_wait", &c, &op);
    if (rc != CHORUS_SUCCESS) return rc;
    rc = guarded(c, [&] {
        c->wait(op);
        return CHORUS_SUCCESS;
    });
    if (rc != CHORUS_SUCCESS) return rc;
    return finish_request(request, c, op);
}

}  // extern "C"
