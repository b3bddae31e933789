// Completing arrays of requests with each of MPI's completion functions,
// and checking what they report, for the interposer's tests of the
// nonblocking collectives. Written against mpi.h only.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace icalls {

enum Method {
    kWait,          // MPI_Wait on each, first to last
    kWaitBackward,  // MPI_Wait on each, last to first
    kTest,          // MPI_Test on each until it completes
    kWaitall,
    kTestall,  // until it reports all done
    kWaitany,  // until every request is done and it says MPI_UNDEFINED
    kTestany,
    kWaitsome,
    kTestsome,
    kGetStatus,  // MPI_Request_get_status until complete, then MPI_Wait
    kFree,       // not a completion: MPI_Request_free (tests use it apart)
    kMethods = kFree
};

const char* method_name(Method m);
// MPI's text for an error code.
std::string error_text(int rc);
// The methods that set each status's MPI_ERROR.
bool sets_error(Method m);

// Completes every request of `requests` with `m`, MPI_REQUEST_NULL entries
// included. statuses[i] receives request i's status (none with `ignore`:
// MPI_STATUS(ES)_IGNORE is passed). Failures are reported through `fail`
// (prefixed with `what`); returns false after one.
bool complete(std::vector<MPI_Request>& requests, Method m, std::vector<MPI_Status>& statuses, bool ignore,
              const std::string& what, void (*fail)(const std::string&));

// What is wrong with the status of a request of the interposer's, against
// MPI's empty status (MPI_ANY_SOURCE, MPI_ANY_TAG, no data, not cancelled);
// with `error_set`, MPI_ERROR must be MPI_SUCCESS too. (MPI leaves every
// field of a collective's status undefined but MPI_ERROR, and Open MPI's
// hold whatever its request's memory held, so MPI's own are not checked.)
std::string status_difference(const MPI_Status& got, bool error_set);

}  // namespace icalls
