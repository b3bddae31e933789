// Communicators and requests, MPI's start and end, and errors.
//
// Locking: the GIL guards the Python objects and each communicator's list
// of operations in flight; a communicator's mutex serializes its C API
// calls (the C API takes one thread at a time per communicator). The GIL is
// always released before the mutex is waited for, never the other way
// round, so a thread blocked in a collective never holds up Python.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

#include "binding.h"

namespace chorus_py {

namespace {

bool g_initialized_mpi = false;  // this module called MPI_Init_thread
bool g_atexit_registered = false;
std::vector<CommState*> g_live;  // every open communicator (GIL held)

// Text that may not be valid UTF-8 (a peer's host name, a path).
nb::str text(const std::string& s) {
    return nb::steal<nb::str>(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
}

bool mpi_finalized() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    return finalized != 0;
}

// Start MPI as mpi4py does (MPI_THREAD_MULTIPLE) unless it runs already.
void ensure_mpi() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (mpi_finalized()) raise_chorus(CHORUS_ERR_INVALID_ARGUMENT, "MPI has been finalized: no new communicator");
    if (initialized) return;
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        raise_chorus(CHORUS_ERR_INTERNAL, "MPI_Init_thread failed");
    g_initialized_mpi = true;
}

// An MPI handle as mpi4py shows it, and back: Open MPI's are pointers,
// MPICH's ints (templates, so that only the one that fits is compiled).
template <typename H>
uintptr_t handle_value(H comm) {
    if constexpr (std::is_pointer_v<H>)
        return reinterpret_cast<uintptr_t>(comm);
    else
        return static_cast<uintptr_t>(comm);
}
template <typename H>
H handle_from(uintptr_t value) {
    if constexpr (std::is_pointer_v<H>)
        return reinterpret_cast<H>(value);
    else
        return static_cast<H>(value);
}

// The MPI_Comm behind an mpi4py communicator (the same MPI, checked: a
// handle of another MPI's ABI would be a wild pointer here).
MPI_Comm from_mpi4py(nb::handle obj) {
    nb::object mod = nb::borrow(obj.type().attr("__module__"));
    const bool from_mpi4py =
        nb::isinstance<nb::str>(mod) && nb::borrow<nb::str>(mod).c_str() == std::string("mpi4py.MPI");
    if (!from_mpi4py)
        throw nb::type_error(
            ("comm must be None or an mpi4py communicator, not " + std::string(nb::type_name(obj.type()).c_str()))
                .c_str());
    nb::module_ MPI = nb::module_::import_("mpi4py.MPI");
    if (!nb::isinstance(obj, MPI.attr("Comm")))
        throw nb::type_error("comm must be an mpi4py.MPI.Comm (an intracommunicator)");
    auto handle_of = [&](nb::handle c) -> uintptr_t {
        nb::object h = nb::hasattr(c, "handle") ? nb::borrow(c.attr("handle")) : MPI.attr("_handleof")(c);
        return nb::cast<uintptr_t>(h);
    };
    // MPI_COMM_WORLD names one object of one library: mpi4py's must be ours.
    if (handle_of(MPI.attr("COMM_WORLD")) != handle_value<MPI_Comm>(MPI_COMM_WORLD))
        throw nb::value_error(("mpi4py is built against another MPI than Chorus (" +
                               std::string(nb::str(MPI.attr("Get_library_version")()).c_str()).substr(0, 60) +
                               "...): rebuild mpi4py against the MPI Chorus was built with")
                                  .c_str());
    const MPI_Comm comm = handle_from<MPI_Comm>(handle_of(obj));
    if (comm == MPI_COMM_NULL) throw nb::value_error("comm is MPI.COMM_NULL");
    int inter = 0;
    MPI_Comm_test_inter(comm, &inter);
    if (inter) throw nb::value_error("comm is an intercommunicator: Chorus takes intracommunicators");
    return comm;
}

// One chorus_comm_create_oob's exchange: the Python callable, and the
// first exception it raised (kept, GIL held, for the error's cause).
struct OobExchange {
    nb::handle fn;
    int size;
    std::optional<nb::python_error> error;
};

// Raise a Python exception of `type` as a C++ exception that carries it.
[[noreturn]] void raise_py(PyObject* type, const std::string& message) {
    PyErr_SetString(type, message.c_str());
    throw nb::python_error();
}

// `part` into `out` when it is a bytes-like object of exactly `bytes`
// bytes; a TypeError or ValueError otherwise.
void take_part(nb::handle part, size_t bytes, char* out, const std::string& what) {
    Py_buffer view;
    if (PyObject_GetBuffer(part.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
        PyErr_Clear();
        raise_py(PyExc_TypeError, what + " is not a bytes-like object but " + nb::type_name(part.type()).c_str());
    }
    const size_t len = static_cast<size_t>(view.len);
    if (len == bytes) std::memcpy(out, view.buf, bytes);
    PyBuffer_Release(&view);
    if (len != bytes)
        raise_py(PyExc_ValueError,
                 what + " holds " + std::to_string(len) + " bytes where " + std::to_string(bytes) + " were expected");
}

// chorus_oob_t's allgather over a Python callable: allgather(bytes) returns
// a sequence of `size` bytes-like objects (rank order) or one of size * n
// bytes. Non-zero when it raised or returned something else.
int oob_allgather(const void* sendbuf, void* recvbuf, size_t bytes, void* arg) {
    auto& x = *static_cast<OobExchange*>(arg);
    nb::gil_scoped_acquire gil;
    try {
        nb::object got = x.fn(nb::bytes(static_cast<const char*>(sendbuf), bytes));
        char* out = static_cast<char*>(recvbuf);
        const size_t n = static_cast<size_t>(x.size);
        if (PyObject_CheckBuffer(got.ptr())) {
            take_part(got, n * bytes, out, "allgather's result");
        } else {
            if (!PySequence_Check(got.ptr()) || PySequence_Size(got.ptr()) != static_cast<Py_ssize_t>(n)) {
                PyErr_Clear();
                raise_py(PyExc_ValueError, "allgather must return a sequence of " + std::to_string(n) +
                                               " bytes-like objects (one per rank), or one of " + std::to_string(n) +
                                               " x " + std::to_string(bytes) + " bytes");
            }
            for (size_t i = 0; i < n; ++i)
                take_part(got[i], bytes, out + i * bytes, "rank " + std::to_string(i) + "'s part");
        }
        return 0;
    } catch (nb::python_error& e) {
        if (!x.error) x.error.emplace(std::move(e));
    }
    return 1;
}

void register_atexit() {
    if (g_atexit_registered) return;
    // Registered after mpi4py's own hook when mpi4py is in use (its
    // communicator came first), so it runs before MPI is finalized.
    nb::module_::import_("atexit").attr("register")(nb::module_::import_("chorus._chorus").attr("_shutdown"));
    g_atexit_registered = true;
}

// Complete p's operation (the mutex held, no GIL) and record its result.
void finish_locked(Pending& p, chorus_comm_t comm) {
    if (!p.request) return;
    const chorus_result_t rc = chorus_wait(p.request);
    p.request = nullptr;
    p.result = rc;
    if (rc != CHORUS_SUCCESS) p.error = chorus_comm_last_error(comm);
}

// Drop a completed operation from its communicator's list and release its
// arrays (GIL held).
void retire(const std::shared_ptr<Pending>& p) {
    auto& v = p->state->in_flight;
    auto it = std::find(v.begin(), v.end(), p);
    if (it != v.end()) {
        std::swap(*it, v.back());
        v.pop_back();
    }
    p->call.send_held.reset();
    p->call.recv_held.reset();
}

// Complete everything in flight, then destroy (GIL held on entry).
void close_state(CommState& s) {
    if (!s.comm) return;
    std::vector<std::shared_ptr<Pending>> ops = std::move(s.in_flight);
    s.in_flight.clear();
    chorus_result_t rc = CHORUS_SUCCESS;
    std::string error;
    {
        nb::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.comm) {
            for (auto& p : ops) finish_locked(*p, s.comm);
            // After MPI_Finalize the library can no longer free its MPI
            // communicator: the communicator is left as it is.
            if (!mpi_finalized()) {
                rc = chorus_comm_destroy(s.comm);
                if (rc != CHORUS_SUCCESS) error = chorus_comm_last_error(nullptr);
            }
            s.comm = nullptr;
        }
    }
    for (auto& p : ops) {
        p->call.send_held.reset();
        p->call.recv_held.reset();
    }
    g_live.erase(std::remove(g_live.begin(), g_live.end(), &s), g_live.end());
    if (rc != CHORUS_SUCCESS) raise_chorus(rc, error);
}

}  // namespace

void raise_chorus(chorus_result_t rc, const std::string& message) {
    // chorus.ChorusError is Python (chorus/_errors.py); looked up once and
    // kept for the life of the process.
    static PyObject* cls = nb::object(nb::module_::import_("chorus._errors").attr("ChorusError")).release().ptr();
    nb::object code = nb::module_::import_("chorus._chorus").attr("Result")(static_cast<int>(rc));
    nb::object exc = nb::handle(cls)(code, text(chorus_get_error_string(rc)), text(message));
    PyErr_SetObject(cls, exc.ptr());
    throw nb::python_error();
}

bool initialized_mpi() {
    return g_initialized_mpi;
}

nb::tuple mpi_world(const std::string& root_info) {
    ensure_mpi();
    register_atexit();
    int rank = 0, size = 0, local_rank = 0, local_size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm local = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_size);
    MPI_Comm_free(&local);
    // The root's text, at most 4 KiB, to every rank.
    std::string info = root_info.substr(0, 4096);
    int len = static_cast<int>(info.size());
    MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
    info.resize(static_cast<size_t>(len));
    MPI_Bcast(info.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
    return nb::make_tuple(rank, size, local_rank, local_size, text(info));
}

Communicator::Communicator(nb::handle mpi_comm) : state_(std::make_shared<CommState>()) {
    MPI_Comm comm = MPI_COMM_WORLD;
    if (mpi_comm.is_none()) {
        ensure_mpi();
    } else {
        if (mpi_finalized()) raise_chorus(CHORUS_ERR_INVALID_ARGUMENT, "MPI has been finalized");
        comm = from_mpi4py(mpi_comm);
    }
    register_atexit();
    chorus_comm_t c = nullptr;
    chorus_result_t rc;
    std::string error;
    {
        nb::gil_scoped_release nogil;
        rc = chorus_comm_create(comm, &c);
        if (rc != CHORUS_SUCCESS) error = chorus_comm_last_error(nullptr);  // this thread's
    }
    adopt(rc, c, error);
}

Communicator::Communicator(int rank, int size, nb::handle allgather) : state_(std::make_shared<CommState>()) {
    if (!PyCallable_Check(allgather.ptr())) throw nb::type_error("allgather must be callable");
    if (size < 1) throw nb::value_error("size must be at least 1");
    if (rank < 0 || rank >= size) throw nb::value_error("rank must be in [0, size)");
    OobExchange x{allgather, size, {}};
    chorus_oob_t oob{rank, size, &oob_allgather, &x};
    register_atexit();
    chorus_comm_t c = nullptr;
    chorus_result_t rc;
    std::string error;
    {
        nb::gil_scoped_release nogil;
        rc = chorus_comm_create_oob(&oob, &c);
        if (rc != CHORUS_SUCCESS) error = chorus_comm_last_error(nullptr);
    }
    if (rc != CHORUS_SUCCESS && x.error) {
        // The exchange's own exception, as the ChorusError's cause.
        nb::object cause = nb::borrow(x.error->value());
        const std::string why = std::string(nb::type_name(cause.type()).c_str()) + ": " + nb::str(cause).c_str();
        try {
            raise_chorus(rc, error + " (" + why + ")");
        } catch (nb::python_error& e) {
            PyException_SetCause(e.value().ptr(), cause.release().ptr());
            throw;
        }
    }
    adopt(rc, c, error);
}

void Communicator::adopt(chorus_result_t rc, chorus_comm_t c, const std::string& error) {
    if (rc != CHORUS_SUCCESS) raise_chorus(rc, error);
    state_->comm = c;
    chorus_comm_rank(c, &state_->rank);
    chorus_comm_size(c, &state_->size);
    g_live.push_back(state_.get());
}

Communicator::~Communicator() {
    try {
        close_state(*state_);
    } catch (...) {
        // A failure at destruction has no caller to go to; the message was
        // the library's last error.
        PyErr_Clear();
    }
}

void Communicator::close() {
    close_state(*state_);
}

namespace {

// `fn(comm)`, a call of the C API on the communicator without the GIL and
// with its lock held; raises its failure (or that the communicator is
// closed).
template <typename F>
void call_locked(CommState& st, F fn) {
    chorus_result_t rc;
    std::string error;
    {
        nb::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(st.mutex);
        if (!st.comm) {
            rc = CHORUS_ERR_INVALID_ARGUMENT;
            error = "the communicator is closed";
        } else {
            rc = fn(st.comm);
            if (rc != CHORUS_SUCCESS) error = chorus_comm_last_error(st.comm);
        }
    }
    if (rc != CHORUS_SUCCESS) raise_chorus(rc, error);
}

}  // namespace

void Communicator::window(nb::handle array, bool add) {
    const Input a = input_array(array, "array");
    const size_t bytes = a.size * (a.dtype.bits / 8);
    call_locked(*state_, [&](chorus_comm_t c) {
        return add ? chorus_comm_register(c, a.data, bytes) : chorus_comm_deregister(c, a.data);
    });
}

void Communicator::set_label(nb::handle label) {
    std::string s;
    if (!label.is_none()) {
        if (!nb::isinstance<nb::str>(label)) throw nb::type_error("label must be a str or None");
        s = nb::borrow<nb::str>(label).c_str();
    }
    call_locked(*state_,
                [&](chorus_comm_t c) { return chorus_comm_set_label(c, label.is_none() ? nullptr : s.c_str()); });
}

nb::object Communicator::run(Call& call) {
    CommState& s = *state_;
    chorus_result_t rc;
    std::string error;
    {
        nb::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(s.mutex);
        if (!s.comm) {
            rc = CHORUS_ERR_INVALID_ARGUMENT;
            error = "the communicator is closed";
        } else {
            rc = issue(call, s.comm, nullptr);
            if (rc != CHORUS_SUCCESS) error = chorus_comm_last_error(s.comm);
        }
    }
    if (rc != CHORUS_SUCCESS) raise_chorus(rc, error);
    return call.value.is_valid() ? std::move(call.value) : nb::none();
}

Request Communicator::start(Call& call) {
    CommState& s = *state_;
    auto p = std::make_shared<Pending>();
    chorus_result_t rc;
    std::string error;
    {
        // Starting takes microseconds: the GIL is kept unless another thread
        // holds the communicator.
        std::unique_lock<std::mutex> lock(s.mutex, std::try_to_lock);
        if (!lock.owns_lock()) {
            nb::gil_scoped_release nogil;
            lock.lock();
        }
        if (!s.comm) raise_chorus(CHORUS_ERR_INVALID_ARGUMENT, "the communicator is closed");
        rc = issue(call, s.comm, &p->request);
        if (rc != CHORUS_SUCCESS) error = chorus_comm_last_error(s.comm);
    }
    if (rc != CHORUS_SUCCESS) raise_chorus(rc, error);
    p->state = state_;
    p->call = std::move(call);
    s.in_flight.push_back(p);
    return Request(std::move(p));
}

nb::object Request::wait() {
    Pending& p = *pending_;
    if (p.request) {
        CommState& s = *p.state;
        {
            nb::gil_scoped_release nogil;
            std::lock_guard<std::mutex> lock(s.mutex);
            finish_locked(p, s.comm);
        }
        retire(pending_);
    }
    if (p.result != CHORUS_SUCCESS) raise_chorus(p.result, p.error);
    return p.call.value.is_valid() ? p.call.value : nb::none();
}

bool Request::test() {
    Pending& p = *pending_;
    if (p.request) {
        CommState& s = *p.state;
        int done = 0;
        {
            std::unique_lock<std::mutex> lock(s.mutex, std::try_to_lock);
            if (!lock.owns_lock()) {
                nb::gil_scoped_release nogil;
                lock.lock();
            }
            if (p.request) {
                const chorus_result_t rc = chorus_test(p.request, &done);
                if (done) {
                    p.request = nullptr;
                    p.result = rc;
                    if (rc != CHORUS_SUCCESS) p.error = chorus_comm_last_error(s.comm);
                } else if (rc != CHORUS_SUCCESS) {
                    // The request could not be progressed (it stays pending).
                    raise_chorus(rc, chorus_comm_last_error(s.comm));
                }
            }
        }
        if (p.request) return false;
        retire(pending_);
    }
    if (p.result != CHORUS_SUCCESS) raise_chorus(p.result, p.error);
    return true;
}

void shutdown() {
    // Copied: closing removes each from the list.
    const std::vector<CommState*> live = g_live;
    for (CommState* s : live) {
        try {
            close_state(*s);
        } catch (const nb::python_error&) {
            // At exit there is no one to tell but the log already written.
        }
    }
    if (g_initialized_mpi && !mpi_finalized()) MPI_Finalize();
}

}  // namespace chorus_py
