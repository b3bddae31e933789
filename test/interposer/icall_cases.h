// Nonblocking collectives for the interposer's tests, each as a case that
// can run twice on the same inputs: through MPI_I* (the call under test)
// and through PMPI_I*, MPI's own, straight past the interposer (the
// reference). Written against mpi.h only.
#pragma once

#include <mpi.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace icalls {

using Bytes = std::vector<unsigned char>;

struct Case {
    std::string what;
    bool eligible = true;  // the interposer must run it through Chorus
    // out[0]: the call under test's output (and in-place input), out[1]:
    // the reference's; the same bytes before the calls.
    std::shared_ptr<std::array<Bytes, 2>> out;
    // Starts the call: k = 0 through MPI_I*, k = 1 through PMPI_I* on out[1].
    std::function<int(int k, MPI_Request*)> start;
};

// Every nonblocking collective on `comm`, in place and not, on predefined
// and derived datatypes, at several roots, and calls the interposer must
// hand to MPI (MPI_MAXLOC, a user-defined op, an intercommunicator when
// `inter` is not MPI_COMM_NULL). The same list, in the same order, on every
// rank of `comm`. `seed` changes the data.
std::vector<Case> all_cases(MPI_Comm comm, MPI_Comm inter, uint64_t seed);

// A few quick ones (all-reduce, broadcast, all-to-all, barrier), for the
// threads and the loops that repeat them.
std::vector<Case> quick_cases(MPI_Comm comm, uint64_t seed);

// The ops and types all_cases creates once (freed by free_types()).
void free_types();

}  // namespace icalls
