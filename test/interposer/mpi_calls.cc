// An ordinary MPI program, written against mpi.h only, that checks the
// intercepted collectives against references every rank computes from
// per-rank seeds, and counts its own calls to prove where they went.
//
// Usage: mpi_calls MODE, with MODE one of
//   preload     libchorus_mpi.so is preloaded: every eligible call must be
//               intercepted, every other one passed through
//   control     nothing is preloaded: the counter symbols must be absent
//   none        preloaded with CHORUS_MPI_INTERCEPT=none (or device): nothing
//               intercepted, everything passed through
//   bad-policy  preloaded with a bad CHORUS_MPI_INTERCEPT: calls fail with an
//               error naming the variable
//   bad-config  preloaded with a bad CHORUS_CHUNK_BYTES: likewise
//   multiple    preloaded, MPI_THREAD_MULTIPLE: as preload (every thread
//               level runs through Chorus)
//   progress    preloaded: a peer blocked in MPI_Recv for a message sent
//               before a collective must not deadlock (run it over TCP)
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_checks.h"

namespace {

using Counter = unsigned long long (*)(void);

Counter counter(const char* name) {
    return reinterpret_cast<Counter>(dlsym(RTLD_DEFAULT, name));
}

// A call the library must refuse with an error that names `variable`.
int expect_refusal(const char* variable) {
    int failures = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int round = 0; round < 2; ++round) {  // and again: no silent fallback later
        int in = 5, out = -1;
        int rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        char text[MPI_MAX_ERROR_STRING] = {0};
        int len = 0, cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS) {
            MPI_Error_string(rc, text, &len);
            MPI_Error_class(rc, &cls);
        }
        if (rc == MPI_SUCCESS || out != -1 || !std::strstr(text, variable) || cls <= MPI_ERR_LASTCODE) {
            std::fprintf(stderr,
                         "round %d: rc=%d class=%d out=%d message '%s' (want an error class of its own naming %s)\n",
                         round, rc, cls, out, text, variable);
            ++failures;
        }
    }
    return failures;
}

void on_alarm(int) {
    const char text[] = "deadlock: a rank inside an intercepted collective kept MPI from progressing\n";
    ssize_t ignored = write(2, text, sizeof text - 1);
    (void)ignored;
    _exit(3);
}

// Rank 0 sends 4 MiB (a rendezvous message) with MPI_Isend, then enters
// MPI_Allreduce; rank 1 receives it with MPI_Recv first. Correct MPI: the
// send must progress while rank 0 waits in the collective.
int progress_check(int rank, int size, Counter intercepted) {
    if (size < 2) return 0;
    signal(SIGALRM, on_alarm);
    alarm(20);
    int one = 1, sum = 0, failures = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  // the Chorus communicator now exists
    const unsigned long long before = intercepted();
    std::vector<int> msg(1 << 20);
    if (rank == 0) {
        for (size_t i = 0; i < msg.size(); ++i) msg[i] = (int)i;
        MPI_Request req;
        MPI_Isend(msg.data(), (int)msg.size(), MPI_INT, 1, 5, MPI_COMM_WORLD, &req);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        if (rank == 1) {
            MPI_Recv(msg.data(), (int)msg.size(), MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (size_t i = 0; i < msg.size(); ++i)
                if (msg[i] != (int)i) ++failures;
        }
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    alarm(0);
    if (sum != size || intercepted() - before != 1 || failures) {
        std::fprintf(stderr, "rank %d: FAIL progress: sum %d, %llu intercepted, %d bad elements\n", rank, sum,
                     intercepted() - before, failures);
        return 1;
    }
    return 0;
}

// A Chorus failure comes back as an error of its own class, through the
// communicator's error handler: here partly overlapping buffers, which
// Chorus rejects on every rank. The communicator stays usable.
int chorus_failure(Counter intercepted) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    std::vector<int> buf(9, 1);
    const unsigned long long before = intercepted();
    int rc = MPI_Allreduce(buf.data(), buf.data() + 1, 8, MPI_INT, MPI_SUM, comm);
    char text[MPI_MAX_ERROR_STRING] = {0};
    int len = 0, cls = 0, failures = 0;
    MPI_Error_string(rc, text, &len);
    MPI_Error_class(rc, &cls);
    if (rc == MPI_SUCCESS || cls <= MPI_ERR_LASTCODE || !std::strstr(text, "overlap")) {
        std::fprintf(stderr, "FAIL overlapping buffers: rc %d class %d '%s'\n", rc, cls, text);
        ++failures;
    }
    int one = 1, sum = 0;
    rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    int size = 0;
    MPI_Comm_size(comm, &size);
    if (rc != MPI_SUCCESS || sum != size || intercepted() - before != 2) {
        std::fprintf(stderr, "FAIL after a failure: rc %d sum %d\n", rc, sum);
        ++failures;
    }
    MPI_Comm_free(&comm);
    return failures;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "preload";
    int provided = MPI_THREAD_SINGLE;
    if (mode == "multiple")
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Counter intercepted = counter("chorus_mpi_intercepted_calls");
    Counter passed = counter("chorus_mpi_passed_calls");
    int failures = 0;
    auto fail = [&](const std::string& what) {
        std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
        ++failures;
    };

    const bool preloaded = mode != "control";
    if (preloaded != (intercepted != nullptr && passed != nullptr))
        fail(preloaded ? "libchorus_mpi.so is not loaded (no chorus_mpi_intercepted_calls)"
                       : "chorus_mpi_intercepted_calls exists in the control run");

    if (mode == "bad-policy" && intercepted) {
        failures += expect_refusal("CHORUS_MPI_INTERCEPT");
        if (intercepted() != 0) fail("a call was intercepted despite the bad setting");
    } else if (mode == "bad-config" && intercepted) {
        failures += expect_refusal("CHORUS_CHUNK_BYTES");
    } else if (mode == "progress" && intercepted) {
        failures += progress_check(rank, size, intercepted);
    } else if (mode == "preload" || mode == "control" || mode == "none" || mode == "multiple") {
        const unsigned long long in0 = intercepted ? intercepted() : 0, out0 = passed ? passed() : 0;
        // Every call goes to MPI itself in these modes.
        const bool none = mode == "none";
        if (mode == "multiple" && provided != MPI_THREAD_MULTIPLE) fail("MPI_THREAD_MULTIPLE was not provided");
        checks::Tally tally;
        double t0 = MPI_Wtime();
        failures += checks::run_all(rank, size, mode == "control" || none, tally);
        double t1 = MPI_Wtime();
        if (intercepted) {
            const unsigned long long in = intercepted() - in0, out = passed() - out0;
            const unsigned long long want_in = none ? 0 : tally.eligible;
            const unsigned long long want_out = none ? tally.eligible + tally.ineligible : tally.ineligible;
            if (in != want_in || out != want_out)
                fail("counters: " + std::to_string(in) + " intercepted, " + std::to_string(out) +
                     " passed through; want " + std::to_string(want_in) + " and " + std::to_string(want_out));
            if (mode == "preload" && want_in == 0) fail("no eligible call was made");
            if (mode == "preload") failures += chorus_failure(intercepted);
        }
        if (rank == 0)
            std::printf("%s: %llu eligible and %llu other calls on %d ranks in %.2f s\n", mode.c_str(), tally.eligible,
                        tally.ineligible, size, t1 - t0);
    } else {
        fail("unknown mode " + mode);
    }

    // Agree on the outcome without going through the library.
    int any = 0;
    PMPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%s at np=%d: %s\n", mode.c_str(), size, any ? "FAILED" : "passed");
    MPI_Finalize();
    return any ? 1 : 0;
}
