// Small helpers shared by the tests that run under mpirun.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

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

// Whether the MPI is MPICH (or one built from it).
constexpr bool is_mpich() {
#if defined(MPICH_NUMVERSION)
    return true;
#else
    return false;
#endif
}

// Every rank's verdict, so that all ranks fail together (and none waits in a
// collective the others skipped).
inline bool all_ranks(bool ok) {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all == 1;
}

// What the run's own CHORUS_ALGO (the environment of mpirun) forces for
// `coll`, or "" (the virtual cluster forces the two-level algorithms so).
inline std::string run_forces(const std::string& coll) {
    const char* env = std::getenv("CHORUS_ALGO");
    const std::string text = env ? env : "", key = coll + "=";
    std::string found;
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos) end = text.size();
        if (text.compare(pos, key.size(), key) == 0) found = text.substr(pos + key.size(), end - pos - key.size());
        pos = end + 1;
    }
    return found;
}

// The algorithms a test sweeps for `coll`: `all`, or only the one the run's
// CHORUS_ALGO forces for it.
inline std::vector<std::string> algorithms(const std::string& coll, std::initializer_list<const char*> all) {
    const std::string forced = run_forces(coll);
    if (!forced.empty()) return {forced};
    return std::vector<std::string>(all.begin(), all.end());
}

// The same for "coll=algo" items of several collectives: a collective the
// run forces gets one item, of the forced algorithm, where its first was.
inline std::vector<std::string> specs(std::initializer_list<const char*> all) {
    std::vector<std::string> out;
    for (const std::string spec : all) {
        const std::string coll = spec.substr(0, spec.find('=')), forced = run_forces(coll);
        const std::string item = forced.empty() ? spec : coll + "=" + forced;
        if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    }
    return out;
}

// A communicator on MPI_COMM_WORLD that forces `algo` for `coll`
// (CHORUS_ALGO is read at creation; the run's own choices for the other
// collectives stay), with pipeline pieces of `chunk` bytes.
// The caller checks `rc`.
struct ForcedComm {
    chorus_comm_t c = nullptr;
    chorus_result_t rc;
    ForcedComm(const std::string& coll, const std::string& algo, const char* chunk = "16K") {
        const char* env = std::getenv("CHORUS_ALGO");
        const std::string outer = env ? env : "", mine = coll + "=" + algo;
        setenv("CHORUS_ALGO", (outer.empty() ? mine : outer + "," + mine).c_str(), 1);
        setenv("CHORUS_CHUNK_BYTES", chunk, 1);
        rc = chorus_comm_create(MPI_COMM_WORLD, &c);
        if (outer.empty())
            unsetenv("CHORUS_ALGO");
        else
            setenv("CHORUS_ALGO", outer.c_str(), 1);
        unsetenv("CHORUS_CHUNK_BYTES");
    }
    ~ForcedComm() {
        if (c) chorus_comm_destroy(c);
    }
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
