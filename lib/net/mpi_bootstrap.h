// What Chorus asks of MPI: exchange blobs of different lengths, and wait for
// every rank while another transport keeps making progress (a rank blocked
// in a plain MPI call would starve a peer that waits on it over UCX).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

namespace chorus::net {

// Every rank contributes `mine`; returns every rank's blob, by rank.
std::vector<std::string> allgather_blobs(MPI_Comm comm, const std::string& mine);

// A barrier that calls `progress` while it waits.
void barrier_with_progress(MPI_Comm comm, const std::function<void()>& progress);

// Turn an MPI error code into an Error(CHORUS_ERR_TRANSPORT) naming `what`.
void check_mpi(int rc, const char* what);

}  // namespace chorus::net
