// A peer dies (SIGKILL), stops (SIGSTOP) or exits abruptly (_exit, without
// MPI_Finalize or Chorus's teardown) in the middle of a run of all-reduces;
// every survivor must return an error promptly whose message names that
// peer ("rank N", N the victim: the last rank), and every later call must
// say the communicator failed. Each survivor writes its verdict to
// DIR/rank-N.txt for test/run_fault.sh to check (after a rank dies, MPI
// itself can no longer be trusted to collect results). COUNT floats per
// all-reduce (default 2^20, over UCX); a few go through the shared segment
// of the ranks of one host, where only the dead process itself tells.
// With `p2p`, the survivors wait in chorus_recv for a message from the
// victim instead (which never sends it). With `mapped`, the buffer is
// mapped memory registered as a window, which every survivor has mapped
// from the victim too: its death must not crash them.
//
//   fault_test kill|stop|exit DIR [COUNT [p2p|mapped]]
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "chorus.h"

namespace {

// Whether `message` names rank `peer` ("rank 2", but not "rank 21"). The
// survivor's own rank ("on rank 0") never counts: the victim is another rank.
bool names_rank(const std::string& message, int peer) {
    const std::string name = "rank " + std::to_string(peer);
    for (size_t at = message.find(name); at != std::string::npos; at = message.find(name, at + 1)) {
        size_t end = at + name.size();
        if (end == message.size() || !std::isdigit(static_cast<unsigned char>(message[end]))) return true;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string extra = argc == 5 ? argv[4] : "";
    if (argc < 3 || argc > 5 || (argc == 5 && extra != "p2p" && extra != "mapped")) {
        std::fprintf(stderr, "usage: fault_test kill|stop|exit DIR [COUNT [p2p|mapped]]\n");
        return 2;
    }
    std::string mode = argv[1], dir = argv[2];
    const long count = argc >= 4 ? std::atol(argv[3]) : 1L << 20;
    const bool p2p = extra == "p2p", mapped = extra == "mapped";
    if (count <= 0) {
        std::fprintf(stderr, "fault_test: COUNT must be a positive number, not '%s'\n", argv[3]);
        return 2;
    }
    if (mode != "kill" && mode != "stop" && mode != "exit") {
        std::fprintf(stderr, "fault_test: unknown mode '%s' (kill, stop or exit)\n", mode.c_str());
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int victim = size - 1;
    int pid = getpid(), victim_pid = 0;
    MPI_Bcast(&(rank == victim ? victim_pid = pid : victim_pid), 1, MPI_INT, victim, MPI_COMM_WORLD);

    chorus_comm_t comm = nullptr;
    if (chorus_comm_create(MPI_COMM_WORLD, &comm) != CHORUS_SUCCESS) {
        std::fprintf(stderr, "create failed: %s\n", chorus_comm_last_error(nullptr));
        return 1;
    }
    std::vector<float> plain(mapped ? 0 : static_cast<size_t>(count), 1.0f);
    float* data = plain.data();
    if (mapped) {
        void* p = nullptr;
        if (chorus_mem_alloc(static_cast<size_t>(count) * sizeof(float), &p) != CHORUS_SUCCESS ||
            chorus_comm_register(comm, p, static_cast<size_t>(count) * sizeof(float)) != CHORUS_SUCCESS) {
            std::fprintf(stderr, "mapped memory failed: %s\n", chorus_comm_last_error(comm));
            return 1;
        }
        data = static_cast<float*>(p);
        for (long i = 0; i < count; ++i) data[i] = 1.0f;
    }
    const size_t n = static_cast<size_t>(count);
    chorus_result_t rc = chorus_allreduce(data, data, n, CHORUS_FLOAT32, CHORUS_SUM, comm, nullptr);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim) {
        if (mode == "exit") _exit(1);
        raise(mode == "kill" ? SIGKILL : SIGSTOP);
    }

    auto t0 = std::chrono::steady_clock::now();
    int calls = 0;
    while (rc == CHORUS_SUCCESS && calls < 100000) {
        rc = p2p ? chorus_recv(data, n, CHORUS_FLOAT32, victim, 0, comm, nullptr)
                 : chorus_allreduce(data, data, n, CHORUS_FLOAT32, CHORUS_SUM, comm, nullptr);
        ++calls;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string message = chorus_comm_last_error(comm);
    float x = 0;
    chorus_result_t later = p2p ? chorus_recv(&x, 1, CHORUS_FLOAT32, 0, 0, comm, nullptr)
                                : chorus_allreduce(&x, &x, 1, CHORUS_FLOAT32, CHORUS_SUM, comm, nullptr);

    bool expected_code =
        mode != "stop" ? rc == CHORUS_ERR_PEER_FAILED : rc == CHORUS_ERR_TIMEOUT || rc == CHORUS_ERR_PEER_FAILED;
    bool names_peer = names_rank(message, victim);
    // Destroying the communicator returns, though a peer is dead or stopped.
    bool destroyed = chorus_comm_destroy(comm) == CHORUS_SUCCESS;
    bool ok = expected_code && names_peer && later == CHORUS_ERR_COMM_FAILED && destroyed;
    // Written under another name first: a verdict is there whole or not at all.
    std::string path = dir + "/rank-" + std::to_string(rank) + ".txt", part = path + ".part";
    if (FILE* f = std::fopen(part.c_str(), "w")) {
        std::fprintf(f, "%s rank %d: %s after %.3f s (%d calls); later call: %s; destroy %s;%s message: %s\n",
                     ok ? "ok" : "FAIL", rank, chorus_get_error_string(rc), seconds, calls,
                     chorus_get_error_string(later), destroyed ? "returned" : "failed",
                     names_peer ? "" : (" the message does not name rank " + std::to_string(victim) + ";").c_str(),
                     message.c_str());
        std::fclose(f);
        std::rename(part.c_str(), path.c_str());
    }
    // Every survivor stays until all have written their verdicts (at most
    // 30 s): one that ended first would be a second dead peer to those still
    // waiting, whose messages must name the victim.
    for (int r = 0, waited = 0; r < victim && waited < 3000; ++waited) {
        const std::string theirs = dir + "/rank-" + std::to_string(r) + ".txt";
        if (access(theirs.c_str(), F_OK) == 0)
            ++r;
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // The stopped victim never resumes: end it so that the launcher can
    // finish (MPICH's hydra then ends every rank, all verdicts written).
    if (rank == 0 && mode == "stop") kill(victim_pid, SIGKILL);
    _exit(0);
}
