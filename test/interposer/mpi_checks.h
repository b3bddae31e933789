// Checks of the intercepted collectives, against references computed from
// per-rank seeds. Written against mpi.h only.
#pragma once

#include <mpi.h>

#include <string>

namespace checks {

// "returned RC (MPI's text for it)", for the message of a failed call.
inline std::string returned(int rc) {
    char text[MPI_MAX_ERROR_STRING] = {0};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return "returned " + std::to_string(rc) + " (" + text + ")";
}

// The calls made: `eligible` ones are those the interposer must run
// through Chorus (predefined datatypes and ops it maps, intracommunicators),
// `ineligible` ones those it must hand to PMPI.
struct Tally {
    unsigned long long eligible = 0;
    unsigned long long ineligible = 0;
};

// Every check on MPI_COMM_WORLD and communicators derived from it. Returns
// the number of failures on this rank (each is printed to stderr).
// `plain_mpi`: the calls reach MPI itself, so the pairs it computes wrongly
// are left out (see mpi_checks.cc).
int run_all(int rank, int size, bool plain_mpi, Tally& tally);

}  // namespace checks
