// The collectives of chorus-bench: how each is called (Chorus's and MPI's,
// blocking or nonblocking), how a message size maps to its buffers, and how
// its output is checked.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "bench_types.h"
#include "chorus.h"
#include "internal.h"

namespace bench {

// Which collective: the library's own enumeration.
using Kind = chorus::coll::Collective;

// The arguments of one collective call at one message size.
struct Call {
    const void* send = nullptr;
    void* recv = nullptr;
    size_t count = 0;  // the count argument of the call
    // The v forms: equal blocks of `count`, block i at i * count.
    const size_t* counts = nullptr;
    const size_t* displs = nullptr;
    const int* mpi_counts = nullptr;
    const int* mpi_displs = nullptr;
    const TypeInfo* type = nullptr;
    MPI_Datatype mpi_type = MPI_DATATYPE_NULL;  // what MPI moves (for data movement: any type of the same size)
    const OpInfo* op = nullptr;
    int root = 0;
    int rank = 0;
    bool in_place = false;
    chorus_comm_t comm = nullptr;
    void* stream = nullptr;  // -d cuda: the benchmark's CUDA stream
    // Nonblocking: start the i-call, to be completed through the request.
    chorus_request_t* request = nullptr;
    MPI_Request* mpi_request = nullptr;
};

using ChorusFn = chorus_result_t (*)(const Call&);
using MpiFn = int (*)(const Call&);

struct Collective {
    const char* name;
    const char* title;
    const char* symbol;
    Kind kind;
    ChorusFn chorus;
    MpiFn mpi;
    bool uses_op;
    bool has_root;
};

// nullptr when unknown.
const Collective* find_collective(const std::string& name);
// "allreduce | bcast | ...", for the usage text.
std::string collective_names();

// nccl-tests' factor from algorithm bandwidth to bus bandwidth.
double bus_factor(Kind k, int n);

// Element counts at one message size.
struct Layout {
    size_t count = 0;       // count argument of the call
    size_t send_elems = 0;  // input elements on each rank (the root's, for bcast and scatter)
    size_t recv_elems = 0;  // output elements on each rank (the root's, for reduce and gather)
    size_t nccl_bytes = 0;  // bytes in nccl-tests' algbw
};
Layout layout_for(Kind k, size_t bytes, size_t elem, int n);

// Whether this rank's call reads its input, and writes its output.
bool reads_input(Kind k, int rank, int root);
bool writes_output(Kind k, int rank, int root);

// The call's buffers: `a` and `b` out of place, `a` alone in place (with this
// rank's block of it as the collective's in-place form wants it).
void place_buffers(Kind k, void* a, void* b, const Layout& l, size_t elem, Call& c);

// Output elements of this rank that differ from the exact result (`out`
// as the call left it on the host).
size_t check_output(Kind k, const TypeInfo& t, chorus_op_t op, int rank, int n, int root, const Layout& l,
                    const void* out);

}  // namespace bench
