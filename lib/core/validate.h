// Argument validation for the collective entry points, from one table: per
// collective, which arguments it has (op, root, recvcounts), whose buffers
// matter on this rank (everyone's, or the root's only), how many elements
// each buffer holds, and what the in-place form is. Every check happens
// before anything is sent, so a bad argument never leaves a peer waiting.
#pragma once

#include <cstddef>

#include "chorus.h"
#include "coll/algorithm.h"
#include "core/communicator.h"

namespace chorus::api {

// The entry points' shapes (the v form differs from the block form).
enum class Form { Allreduce, Broadcast, Reduce, ReduceScatter, ReduceScatterV, Allgather };

// What an entry point was given.
struct Args {
    const void* sendbuf = nullptr;
    void* recvbuf = nullptr;
    size_t count = 0;                // count, sendcount or recvcount
    const size_t* counts = nullptr;  // recvcounts of the v forms
    int datatype = 0;
    int op = 0;
    int root = 0;
};

// A validated call, ready to start.
struct Call {
    coll::CollArgs args;
    const void* send = nullptr;  // the buffers to run on: one that does not
    void* recv = nullptr;        // matter here is null or bound to the other
};

// Checks `in` for `form` on `comm`; on success fills `call`. Otherwise
// returns the error, with the message (naming `fn` and the argument) on the
// communicator and the thread.
chorus_result_t validate(Form form, const char* fn, Communicator* comm, const Args& in, Call* call);

// Record a failure's message on the communicator (if any) and the thread.
chorus_result_t report(Communicator* comm, chorus_result_t rc, const std::string& message);

}  // namespace chorus::api
