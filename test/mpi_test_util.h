// Small helpers shared by the tests that run under mpirun.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "chorus.h"

namespace mpitest {

inline int world_rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

inline int world_size() {
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

// Every rank's verdict, so that all ranks fail together (and none waits in a
// collective the others skipped).
inline bool all_ranks(bool ok) {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all == 1;
}

// A communicator on MPI_COMM_WORLD that forces `algo` for `coll`
// (CHORUS_ALGO is read at creation), with pipeline pieces of `chunk` bytes.
// The caller checks `rc`.
struct ForcedComm {
    chorus_comm_t c = nullptr;
    chorus_result_t rc;
    ForcedComm(const std::string& coll, const std::string& algo, const char* chunk = "16K") {
        setenv("CHORUS_ALGO", (coll + "=" + algo).c_str(), 1);
        setenv("CHORUS_CHUNK_BYTES", chunk, 1);
        rc = chorus_comm_create(MPI_COMM_WORLD, &c);
        unsetenv("CHORUS_ALGO");
        unsetenv("CHORUS_CHUNK_BYTES");
    }
    ~ForcedComm() { chorus_comm_destroy(c); }
    ForcedComm(const ForcedComm&) = delete;
    ForcedComm& operator=(const ForcedComm&) = delete;
};

// This process's resident memory in KiB.
inline size_t rss_kib() {
    size_t kib = 0;
    if (FILE* f = std::fopen("/proc/self/status", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "VmRSS: %zu kB", &kib) == 1) break;
        std::fclose(f);
    }
    return kib;
}

}  // namespace mpitest
