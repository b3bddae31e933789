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
//   faster      preloaded with the default CHORUS_MPI_INTERCEPT=faster: every
//               call right (the pairs some MPIs compute otherwise always run
//               through Chorus), the eligible calls split between Chorus and
//               MPI (the trials send calls both ways), alike on every rank
//   (preload and multiple run with CHORUS_MPI_INTERCEPT=all)
//   progress    preloaded: a peer blocked in MPI_Recv for a message sent
//               before a collective must not deadlock (run it over TCP)
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
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

// Loops of calls long enough that every size class finishes its trials and
// runs decided (CHORUS_MPI_INTERCEPT=faster), on a communicator of their
// own: each call checked against a reference from per-rank values (integer
// sums, exact in any order). Every other call of a reduction is in place,
// and every other broadcast a derived type of the same bytes, so the quick
// and the whole way of the interposer share a size class's trials. Returns
// the number of wrong results.
int decided_loops(int rank, int size) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int bad = 0;
    const size_t p = static_cast<size_t>(size);
    for (int n : {2, 1024, 65536}) {  // ints: 8 B, 4 KiB, 256 KiB
        const size_t m = static_cast<size_t>(n);
        std::vector<int> in(m), out(m), all(m * p), ref(m), blocks(m * p);
        for (int it = 0; it < 80; ++it) {
            // All-reduce and reduce: sum_r (r + 1) * (i + it).
            for (size_t i = 0; i < m; ++i) {
                in[i] = (rank + 1) * static_cast<int>(i % 1000 + it);
                ref[i] = size * (size + 1) / 2 * static_cast<int>(i % 1000 + it);
            }
            if (it % 2) {
                out = in;
                MPI_Allreduce(MPI_IN_PLACE, out.data(), n, MPI_INT, MPI_SUM, comm);
            } else {
                MPI_Allreduce(in.data(), out.data(), n, MPI_INT, MPI_SUM, comm);
            }
            bad += out != ref;
            const int root = it % size;
            std::fill(out.begin(), out.end(), -1);
            MPI_Reduce(in.data(), out.data(), n, MPI_INT, MPI_SUM, root, comm);
            if (rank == root) bad += out != ref;
            // Broadcast from a moving root, as ints or as pairs of them.
            for (size_t i = 0; i < m; ++i) out[i] = rank == root ? static_cast<int>(i) * 3 + it : -1;
            if (it % 2)
                MPI_Bcast(out.data(), n / 2, pair, root, comm);
            else
                MPI_Bcast(out.data(), n, MPI_INT, root, comm);
            for (size_t i = 0; i < m; ++i) bad += out[i] != static_cast<int>(i) * 3 + it;
            // All-gather, all-to-all, gather, scatter of n / p ints a rank.
            const int b = std::max(1, n / size);
            const size_t bs = static_cast<size_t>(b);
            for (size_t i = 0; i < bs; ++i) in[i] = rank * 100000 + static_cast<int>(i) + it;
            MPI_Allgather(in.data(), b, MPI_INT, all.data(), b, MPI_INT, comm);
            for (size_t r = 0; r < p; ++r)
                for (size_t i = 0; i < bs; ++i)
                    bad += all[r * bs + i] != static_cast<int>(r) * 100000 + static_cast<int>(i) + it;
            for (size_t r = 0; r < p; ++r)
                for (size_t i = 0; i < bs; ++i)
                    blocks[r * bs + i] = rank * 100000 + static_cast<int>(r * 1000 + i) + it;
            MPI_Alltoall(blocks.data(), b, MPI_INT, all.data(), b, MPI_INT, comm);
            for (size_t r = 0; r < p; ++r)
                for (size_t i = 0; i < bs; ++i)
                    bad += all[r * bs + i] != static_cast<int>(r) * 100000 + rank * 1000 + static_cast<int>(i) + it;
            MPI_Gather(in.data(), b, MPI_INT, all.data(), b, MPI_INT, root, comm);
            if (rank == root)
                for (size_t r = 0; r < p; ++r)
                    for (size_t i = 0; i < bs; ++i)
                        bad += all[r * bs + i] != static_cast<int>(r) * 100000 + static_cast<int>(i) + it;
            MPI_Scatter(blocks.data(), b, MPI_INT, out.data(), b, MPI_INT, root, comm);
            for (size_t i = 0; i < bs; ++i) bad += out[i] != root * 100000 + rank * 1000 + static_cast<int>(i) + it;
            MPI_Barrier(comm);
        }
    }
    MPI_Type_free(&pair);
    MPI_Comm_free(&comm);
    if (bad) std::fprintf(stderr, "rank %d: FAIL %d wrong results in the decided loops\n", rank, bad);
    return bad;
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
    } else if (mode == "faster" && intercepted) {
        const unsigned long long in0 = intercepted(), out0 = passed();
        checks::Tally tally;
        failures += checks::run_all(rank, size, false, tally);
        failures += decided_loops(rank, size);
        tally.eligible += 3 * 80 * 8;  // the loops' calls, all eligible
        const unsigned long long in = intercepted() - in0, out = passed() - out0;
        if (in + out != tally.eligible + tally.ineligible || out < tally.ineligible)
            fail("counters: " + std::to_string(in) + " intercepted, " + std::to_string(out) + " passed through, for " +
                 std::to_string(tally.eligible) + " eligible and " + std::to_string(tally.ineligible) + " other calls");
        if (in == 0 || out == tally.ineligible) fail("the trials sent no call through Chorus, or none to MPI");
        // Every rank took the same way in every call.
        unsigned long long mine[2] = {in, out}, lo[2], hi[2];
        PMPI_Allreduce(mine, lo, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
        PMPI_Allreduce(mine, hi, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (lo[0] != hi[0] || lo[1] != hi[1]) fail("the ranks split the calls differently between Chorus and MPI");
        if (rank == 0)
            std::printf("faster: %llu eligible and %llu other calls on %d ranks: %llu through Chorus, %llu to MPI\n",
                        tally.eligible, tally.ineligible, size, in, out);
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
