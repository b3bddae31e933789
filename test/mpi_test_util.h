// Small helpers shared by the tests that run under mpirun.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdio>

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
