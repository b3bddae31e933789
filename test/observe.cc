// Seeing what happened, under mpirun: test/run_observe.sh runs a mode and
// checks what the ranks print (or write).
//
//   observe sigusr1     np 2: rank 1 waits in a broadcast while rank 0 sends
//                       it SIGUSR1 (its record is dumped from the wait), and
//                       rank 0 signals itself outside Chorus (dumped at its
//                       next call)
//   observe hang        np 3: rank 2 enters the all-reduce 4 s late
//                       (CHORUS_HANG_WARN_S=1: the others report it)
//   observe disagree    np 2: rank 0 in a reduce, rank 1 in a broadcast
//                       (the report says so, printed by rank 0 alone though
//                       rank 1 warns first; CHORUS_TIMEOUT_MS ends it)
//   observe stragglers  np 3: rank 1 arrives 20 ms late at every all-reduce
//   observe trace       np 2: every collective, small and large, labelled
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "chorus.h"

namespace {

int me = 0, np = 1;

bool check(chorus_result_t rc, chorus_comm_t c, const char* what) {
    if (rc == CHORUS_SUCCESS) return true;
    std::fprintf(stderr, "rank %d: %s: %s: %s\n", me, what, chorus_get_error_string(rc), chorus_comm_last_error(c));
    return false;
}

bool run_sigusr1(chorus_comm_t c) {
    std::vector<int> pids(static_cast<size_t>(np));
    int pid = getpid();
    MPI_Allgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
    chorus_comm_set_label(c, "first phase");
    float x[4] = {1, 2, 3, 4};
    bool ok = true;
    for (int i = 0; i < 3; ++i)
        ok = check(chorus_allreduce(x, x, 4, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr), c, "allreduce") && ok;
    chorus_comm_set_label(c, nullptr);
    MPI_Barrier(MPI_COMM_WORLD);
    double v = me == 0 ? 7.0 : 0.0;
    if (me == 0) {
        usleep(500000);
        kill(pids[1], SIGUSR1);  // rank 1 is waiting in the broadcast
        usleep(700000);
        raise(SIGUSR1);  // outside Chorus: dumped at the next call
    }
    ok = check(chorus_broadcast(&v, &v, 1, CHORUS_FLOAT64, 0, c, nullptr), c, "broadcast") && ok;
    return ok && v == 7.0;
}

bool run_hang(chorus_comm_t c) {
    double v = 1.0;
    bool ok = check(chorus_broadcast(&v, &v, 1, CHORUS_FLOAT64, 0, c, nullptr), c, "broadcast");
    if (me == np - 1) sleep(4);
    chorus_comm_set_label(c, "CG dot product");
    ok = check(chorus_allreduce(&v, &v, 1, CHORUS_FLOAT64, CHORUS_SUM, c, nullptr), c, "allreduce") && ok;
    return ok && v == np;
}

bool run_disagree(chorus_comm_t c) {
    float x[4] = {1, 2, 3, 4}, y[4];
    chorus_result_t rc = me == 0 ? chorus_reduce(x, y, 4, CHORUS_FLOAT32, CHORUS_SUM, 0, c, nullptr)
                                 : chorus_broadcast(x, y, 4, CHORUS_FLOAT32, 0, c, nullptr);
    // Nothing can complete: both ranks must end with an error, their own
    // timeout, or the peer's failure where the other rank timed out first
    // and left (its endpoint closed before this rank's timer fired).
    std::fprintf(stderr, "rank %d: %s\n", me, chorus_get_error_string(rc));
    return rc == CHORUS_ERR_TIMEOUT || rc == CHORUS_ERR_COMM_FAILED || rc == CHORUS_ERR_PEER_FAILED;
}

bool run_stragglers(chorus_comm_t c) {
    bool ok = true;
    for (int i = 0; i < 40; ++i) {
        if (me == 1) usleep(20000);  // well above the noise of oversubscribed ranks
        float x = 1;
        ok = check(chorus_allreduce(&x, &x, 1, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr), c, "allreduce") && ok;
        ok = ok && x == np;
    }
    return ok;
}

bool run_trace(chorus_comm_t c) {
    bool ok = true;
    chorus_comm_set_label(c, "phase A");
    for (size_t n : {size_t(4), size_t(200000)}) {
        std::vector<float> a(n * static_cast<size_t>(np), 1.0f), b(n * static_cast<size_t>(np));
        ok = check(chorus_allreduce(a.data(), b.data(), n, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr), c, "allreduce") &&
             ok;
        ok = check(chorus_broadcast(a.data(), b.data(), n, CHORUS_FLOAT32, 0, c, nullptr), c, "broadcast") && ok;
        ok = check(chorus_reduce(a.data(), b.data(), n, CHORUS_FLOAT32, CHORUS_MAX, 0, c, nullptr), c, "reduce") && ok;
        ok = check(chorus_reduce_scatter(a.data(), b.data(), n, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr), c,
                   "reduce_scatter") &&
             ok;
        ok = check(chorus_allgather(a.data(), b.data(), n, CHORUS_FLOAT32, c, nullptr), c, "allgather") && ok;
        chorus_comm_set_label(c, "phase B");
    }
    chorus_request_t r = nullptr;
    float x = 1, y = 0;
    ok = check(chorus_iallreduce(&x, &y, 1, CHORUS_FLOAT32, CHORUS_SUM, c, nullptr, &r), c, "iallreduce") && ok;
    ok = check(chorus_wait(r), c, "wait") && ok;
    return ok && y == np;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    std::string mode = argc > 1 ? argv[1] : "";
    // Disagree: rank 1's hang warning comes a second before rank 0's, and
    // rank 0 answers rank 1's question before asking its own; rank 0 (the
    // lowest rank that asks) must still be the only one to print.
    if (mode == "disagree" && me == 0) setenv("CHORUS_HANG_WARN_S", "2", 1);
    chorus_comm_t c = nullptr;
    if (chorus_comm_create(MPI_COMM_WORLD, &c) != CHORUS_SUCCESS) {
        std::fprintf(stderr, "create: %s\n", chorus_comm_last_error(nullptr));
        return 1;
    }
    bool ok = false;
    if (mode == "sigusr1")
        ok = run_sigusr1(c);
    else if (mode == "hang")
        ok = run_hang(c);
    else if (mode == "disagree")
        ok = run_disagree(c);
    else if (mode == "stragglers")
        ok = run_stragglers(c);
    else if (mode == "trace")
        ok = run_trace(c);
    else
        std::fprintf(stderr, "usage: observe sigusr1|hang|disagree|stragglers|trace\n");
    // A too-long label is refused, naming the argument.
    std::string long_label(300, 'x');
    ok = ok && chorus_comm_set_label(c, long_label.c_str()) == CHORUS_ERR_INVALID_ARGUMENT &&
         std::strstr(chorus_comm_last_error(c), "label") != nullptr;
    chorus_comm_destroy(c);
    int mine = ok, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (me == 0) std::printf("observe %s: %s\n", mode.c_str(), all ? "ok" : "FAILED");
    MPI_Finalize();
    return all ? 0 : 1;
}
