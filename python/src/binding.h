// The Python binding of chorus.h: what its files share.
//
//   arrays.cc       arrays (DLPack or buffer protocol) -> pointers, counts, datatypes
//   collectives.cc  each collective's Python arguments -> one Call of the C API
//   comm.cc         communicators, requests, MPI's start and end, errors
//   issue.cc        a Call -> the C function of its collective
//   module.cc       the module: classes, functions, docstrings
//
// The binding is a client of chorus.h only. Every check that Python can make
// cheaply is made here and raised as TypeError or ValueError on the rank
// that passed the argument; what only the library can check comes back as
// chorus.ChorusError. Nothing a Python caller passes may crash the process.
#ifndef CHORUS_PYTHON_BINDING_H
#define CHORUS_PYTHON_BINDING_H

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chorus.h"

namespace chorus_py {

namespace nb = nanobind;

// ---- arrays.cc ------------------------------------------------------------

// How an array's elements travel: as a Chorus datatype, `scale` of them per
// element (a type Chorus does not compute on, such as complex, moves as its
// bytes: UINT8, scale = its size).
struct Elem {
    chorus_datatype_t dtype = CHORUS_UINT8;
    size_t scale = 1;
    size_t itemsize = 1;  // bytes of one array element
};

// What keeps an array's memory valid while Chorus uses it: a buffer-protocol
// view (NumPy arrays, bytearray, memoryview: the cheaper way in) or a DLPack
// import (torch, CuPy, ...). Released with the GIL held.
struct BufferRelease {
    void operator()(Py_buffer* view) const {
        PyBuffer_Release(view);
        delete view;
    }
};
struct Held {
    std::unique_ptr<Py_buffer, BufferRelease> view;
    nb::ndarray<nb::ro> dlpack;
    void reset() {
        view.reset();
        dlpack = {};
    }
};

// An array as the C API sees it: where its elements start and how many.
struct Array {
    Held held;
    char* data = nullptr;
    size_t size = 0;
    nb::dlpack::dtype dtype;
};
using Input = Array;   // only read
using Output = Array;  // written: checked writable

// The array `obj` (argument `name`): TypeError if it is no array, or of a
// kind of memory or element Chorus cannot take; ValueError if it is not
// C-contiguous, or (as output) read-only.
Input input_array(nb::handle obj, const char* name);
Output output_array(nb::handle obj, const char* name);

// The element mapping of `dtype` for a data-movement collective (op null)
// or a reduction with *op (TypeError for a pair Chorus does not compute).
Elem element_of(nb::dlpack::dtype dtype, const chorus_op_t* op);
// TypeError unless the two arrays hold the same element type.
void same_dtype(nb::dlpack::dtype a, nb::dlpack::dtype b, const char* what);
// "float32", "bfloat16", "complex64", ...
std::string dtype_name(nb::dlpack::dtype dtype);

// An op argument: a chorus.Op, or its name as a string ("sum", "max", ...).
chorus_op_t op_arg(nb::handle obj);
// A stream argument: None, or an object naming a CUDA stream
// (__cuda_stream__(), .cuda_stream as torch's, .ptr as CuPy's).
void* stream_arg(nb::handle obj);
// A counts argument: one non-negative integer per rank.
std::vector<size_t> counts_arg(nb::handle obj, int size, const char* name);
// A displacements argument, or (None) the blocks one after another.
std::vector<size_t> displs_arg(nb::handle obj, const std::vector<size_t>& counts, const char* name);
// Elements a buffer needs to hold the blocks: the end of the last one.
size_t blocks_extent(const std::vector<size_t>& counts, const std::vector<size_t>& displs, const char* name);

// ---- a call: collectives.cc fills it, issue.cc issues it ----------------

// One C API call, ready to be issued: what collectives.cc makes of the
// Python arguments. Counts are in Chorus elements (array elements x scale).
enum class Coll {
    Allreduce,
    Broadcast,
    Reduce,
    ReduceScatter,
    ReduceScatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Barrier
};

struct Call {
    Coll coll = Coll::Barrier;
    const void* send = nullptr;
    void* recv = nullptr;
    size_t count = 0;                              // count, sendcount or recvcount
    std::vector<size_t> counts, displs;            // the receive side's, or scatterv's send side's
    std::vector<size_t> send_counts, send_displs;  // alltoallv's send side
    chorus_datatype_t dtype = CHORUS_UINT8;
    chorus_op_t op = CHORUS_SUM;
    int root = 0;
    void* stream = nullptr;
    // Kept alive until the operation completes (a request holds them).
    Held send_held, recv_held;
    nb::object value;  // what the call returns: the result's array (or None)
};

// Issue `call` on `comm`: blocking when `request` is null.
chorus_result_t issue(const Call& call, chorus_comm_t comm, chorus_request_t* request);

// ---- comm.cc --------------------------------------------------------------

// Raise chorus.ChorusError(code, message).
[[noreturn]] void raise_chorus(chorus_result_t rc, const std::string& message);

// A communicator's state, shared with its requests (which outlive it).
struct Pending;
struct CommState {
    chorus_comm_t comm = nullptr;  // null once closed
    int rank = 0, size = 0;
    std::mutex mutex;                                 // one C API call on the communicator at a time
    std::vector<std::shared_ptr<Pending>> in_flight;  // changed with the GIL held
};

// An operation started by a nonblocking call.
struct Pending {
    std::shared_ptr<CommState> state;
    chorus_request_t request = nullptr;  // null once complete
    chorus_result_t result = CHORUS_SUCCESS;
    std::string error;
    Call call;
};

class Request {
public:
    explicit Request(std::shared_ptr<Pending> p) : pending_(std::move(p)) {}
    nb::object wait();
    bool test();
    bool done() const { return !pending_->request; }

private:
    std::shared_ptr<Pending> pending_;
};

class Communicator {
public:
    explicit Communicator(nb::handle mpi_comm);
    // Over an out-of-band exchange (chorus_comm_create_oob): `allgather`
    // takes this rank's bytes and returns every rank's, in rank order.
    Communicator(int rank, int size, nb::handle allgather);
    ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int rank() const { return state_->rank; }
    int size() const { return state_->size; }
    bool closed() const { return !state_->comm; }
    void close();
    void set_label(nb::handle label);
    // Register (collective) or deregister `array`, in mapped memory, as a
    // window (chorus_comm_register, chorus_comm_deregister).
    void window(nb::handle array, bool add);

    // Run `call` to completion and return its value; start it as a request.
    nb::object run(Call& call);
    Request start(Call& call);

private:
    // Take `c`, created on every rank; raise (nothing taken) on failure.
    void adopt(chorus_result_t rc, chorus_comm_t c, const std::string& error);

    std::shared_ptr<CommState> state_;
};

// A one-dimensional uint8 NumPy array of `bytes` (at least 1) in mapped
// memory (chorus_mem_alloc), freed when the last array over it goes.
nb::object mapped_bytes(size_t bytes);

// Close every communicator, then finalize MPI if this module initialized it
// (registered with atexit when the first communicator is created).
void shutdown();
// Whether this module called MPI_Init_thread.
bool initialized_mpi();
// MPI_COMM_WORLD as a launcher would describe it (initializing MPI if
// needed): (rank, size, local rank, ranks on this host, rank 0's
// `root_info`). Collective over MPI_COMM_WORLD.
nb::tuple mpi_world(const std::string& root_info);

// ---- module.cc ------------------------------------------------------------

// The sentinel chorus.IN_PLACE.
bool is_in_place(nb::handle obj);

}  // namespace chorus_py

#endif  // CHORUS_PYTHON_BINDING_H
