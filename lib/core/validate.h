// Argument validation for the collective entry points, from one table: per
// collective, which arguments it has (count, op, root, the counts and
// displacement arrays), whose buffers matter on this rank (everyone's, or
// the root's only) and what the in-place form is. The blocks each buffer
// holds come from the collective's own description (CollArgs::block), the
// one the algorithms and the device mirrors use. Every check happens before
// anything is sent, so a bad argument never leaves a peer waiting.
#pragma once

#include <cstddef>
#include <exception>
#include <new>
#include <string>

#include "chorus.h"
#include "coll/algorithm.h"
#include "core/communicator.h"

namespace chorus::api {

// What an entry point was given.
struct Args {
    const void* sendbuf = nullptr;
    void* recvbuf = nullptr;
    size_t count = 0;                     // count, sendcount or recvcount
    const size_t* counts = nullptr;       // recvcounts of the v forms
    const size_t* displs = nullptr;       // their displacements (displs, rdispls)
    const size_t* send_counts = nullptr;  // sendcounts (scatterv, alltoallv)
    const size_t* send_displs = nullptr;  // their displacements (displs, sdispls)
    int datatype = 0;
    int op = 0;
    int root = 0;
    // reduce_scatterv: recvcounts given instead of a recvcount (every other
    // irregular form is a collective of its own).
    bool reduce_scatterv = false;
};

// A validated call, ready to start.
struct Call {
    coll::CollArgs args;
    const void* send = nullptr;  // the buffers to run on: one that does not
    void* recv = nullptr;        // matter here is null or bound to the other
};

// Checks `in` for the entry point of `coll` on `comm`; on success fills `call`. Otherwise
// returns the error, with the message (naming `fn` and the argument) on the
// communicator and the thread.
chorus_result_t validate(coll::Collective coll, const char* fn, Communicator* comm, const Args& in, Call* call);
// CHORUS_ERR_COMM_FAILED, with the message on `comm`, once the communicator
// has failed before this call (what validate() checks that changes between
// calls with the same arguments).
chorus_result_t check_not_failed(const char* fn, Communicator* comm);

// Record a failure's message on the communicator (if any) and the thread.
chorus_result_t report(Communicator* comm, chorus_result_t rc, const std::string& message);
// report() of CHORUS_ERR_INVALID_ARGUMENT.
chorus_result_t invalid(Communicator* comm, const std::string& message);
// The errors of a handle that names no live communicator and of a NULL
// request output, recorded (out of line: the way of every call keeps no
// string in its frame).
[[gnu::cold, gnu::noinline]] chorus_result_t not_live(chorus_comm_t handle, const char* fn);
[[gnu::cold, gnu::noinline]] chorus_result_t no_request(Communicator* c, const char* fn);

// Checks a point-to-point call (chorus_send, chorus_recv and their twins):
// the datatype, buf (NULL only with no bytes), peer in [0, size), tag >= 0,
// the communicator's size (at most kP2pMaxRanks) and that it has not failed.
chorus_result_t validate_p2p(const char* fn, Communicator* c, const void* buf, size_t count, int datatype, int peer,
                             int tag);

// Run `body`, turning exceptions into a result code and a last-error message
// stored on `comm` (or the thread when there is none).
template <typename F>
chorus_result_t guarded(Communicator* comm, F&& body) {
    try {
        return body();
    } catch (const Error& e) {
        return report(comm, e.code(), e.what());
    } catch (const std::bad_alloc&) {
        return report(comm, CHORUS_ERR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception& e) {
        return report(comm, CHORUS_ERR_INTERNAL, cat("internal error: ", e.what()));
    } catch (...) {
        return report(comm, CHORUS_ERR_INTERNAL, "internal error: unknown exception");
    }
}

}  // namespace chorus::api
