// An ordinary MPI program, written against mpi.h only, that checks the
// nonblocking collectives (MPI_Iallreduce ...) and the completion calls
// under libchorus_mpi.so: every result and status against MPI's own
// (PMPI_I* on the same inputs, past the interposer), each call completed
// by each of MPI_Wait, MPI_Test, MPI_Waitall, MPI_Testall, MPI_Waitany,
// MPI_Testany, MPI_Waitsome, MPI_Testsome and MPI_Request_get_status,
// arrays mixing them with MPI_Isend/MPI_Irecv, many in flight at once,
// MPI_Request_free on pending ones, errors, and the call counters.
//
// Usage: interposer_icalls MODE, with MODE one of
//   preload   libchorus_mpi.so is preloaded: eligible calls intercepted
//   control   nothing preloaded: the same program on MPI alone
//   none      preloaded with CHORUS_MPI_INTERCEPT=none: all passed through
//   multiple  preloaded, MPI_THREAD_MULTIPLE: threads starting and
//             completing requests, two of them on one communicator at once
//   progress  preloaded (run over TCP): waits must keep MPI and the other
//             requests moving while a peer waits for them
//   failure   preloaded with CHORUS_TIMEOUT_MS: a request that fails while
//             in flight reports the error where it completes
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "icall_modes.h"

namespace icalls {

int g_rank = 0, g_size = 1;
bool g_ours = false;
std::atomic<int> g_failures{0};
std::atomic<const char*> g_current{"start"};

void fail(const std::string& what) {
    std::fprintf(stderr, "rank %d: FAIL %s\n", g_rank, what.c_str());
    ++g_failures;
}

Counter counter(const char* name) {
    return reinterpret_cast<Counter>(dlsym(RTLD_DEFAULT, name));
}

unsigned long long tracked() {
    static Counter c = counter("chorus_mpi_tracked_requests");
    return c ? c() : 0;
}

namespace {

void on_alarm(int) {
    char text[256];
    const int n = std::snprintf(text, sizeof text, "rank %d: FAIL hung in '%s'\n", g_rank, g_current.load());
    ssize_t ignored = write(2, text, n > 0 ? static_cast<size_t>(n) : 0);
    (void)ignored;
    _exit(3);
}

// Every case in flight at once, in one array with point-to-point requests
// (a 1 MiB and a small message around a ring, in both directions) and
// null ones, all completed by `m`.
void all_at_once(std::vector<Case> cases, Method m, bool ignore, Tally& t) {
    g_current = method_name(m);
    references(cases);
    const int left = (g_rank + g_size - 1) % g_size, right = (g_rank + 1) % g_size;
    const size_t big = size_t{1} << 18;
    std::vector<int> send_big(big), recv_big(big, -1), send_small(3), recv_small(3, -1);
    for (size_t i = 0; i < big; ++i) send_big[i] = static_cast<int>(i * 7) + g_rank;
    for (int i = 0; i < 3; ++i) send_small[i] = 100 * g_rank + i;
    std::vector<MPI_Request> q;
    std::vector<int> which;  // per entry of q: the case, or -1 ... -5 for the others
    // Entry `code` of the array: the request `post(&r)` starts (none: null).
    auto p2p = [&](int code, const std::function<int(MPI_Request*)>& post) {
        MPI_Request r = MPI_REQUEST_NULL;
        if (post && post(&r) != MPI_SUCCESS) fail("posting a point-to-point request failed");
        q.push_back(r);
        which.push_back(code);
    };
    const int nbig = static_cast<int>(big);
    p2p(-1, [&](MPI_Request* r) { return MPI_Irecv(recv_big.data(), nbig, MPI_INT, left, 11, MPI_COMM_WORLD, r); });
    p2p(-5, nullptr);
    for (size_t i = 0; i < cases.size(); ++i) {
        if (i == cases.size() / 2) {
            p2p(-2, [&](MPI_Request* r) {
                return MPI_Isend(send_big.data(), nbig, MPI_INT, right, 11, MPI_COMM_WORLD, r);
            });
            p2p(-5, nullptr);
        }
        MPI_Request r = MPI_REQUEST_NULL;
        const int rc = cases[i].start(0, &r);
        t.count(cases[i].eligible);
        if (rc != MPI_SUCCESS) fail(cases[i].what + ": the call failed");
        q.push_back(r);
        which.push_back(static_cast<int>(i));
    }
    p2p(-3, [&](MPI_Request* r) { return MPI_Irecv(recv_small.data(), 3, MPI_INT, right, 12, MPI_COMM_WORLD, r); });
    p2p(-4, [&](MPI_Request* r) { return MPI_Isend(send_small.data(), 3, MPI_INT, left, 12, MPI_COMM_WORLD, r); });
    std::vector<MPI_Status> st;
    const std::string how = std::string(" in an array of ") + std::to_string(q.size()) + " by " + method_name(m);
    if (!complete(q, m, st, ignore, "all at once", fail)) return;
    for (size_t k = 0; k < q.size(); ++k) {
        const int w = which[k];
        if (w >= 0) compare(cases[static_cast<size_t>(w)], ignore ? nullptr : &st[k], m, how);
        int count = -1;
        if (!ignore && (w == -1 || w == -3)) MPI_Get_count(&st[k], MPI_INT, &count);
        const int from = w == -1 ? left : right, tag = w == -1 ? 11 : 12, n = w == -1 ? static_cast<int>(big) : 3;
        if (!ignore && (w == -1 || w == -3) && (st[k].MPI_SOURCE != from || st[k].MPI_TAG != tag || count != n))
            fail("the status of a receive" + how);
    }
    for (size_t i = 0; i < big; ++i)
        if (recv_big[i] != static_cast<int>(i * 7) + left) {
            fail("the 1 MiB message" + how + ": element " + std::to_string(i));
            break;
        }
    for (int i = 0; i < 3; ++i)
        if (recv_small[i] != 100 * right + i) fail("the small message" + how);
}

}  // namespace

void references(std::vector<Case>& cases) {
    for (Case& c : cases) {
        MPI_Request r = MPI_REQUEST_NULL;
        if (c.start(1, &r) != MPI_SUCCESS || PMPI_Wait(&r, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            fail(c.what + ": the reference failed");
    }
}

void compare(const Case& c, const MPI_Status* got, Method m, const std::string& how) {
    if ((*c.out)[0] != (*c.out)[1]) {
        size_t i = 0;
        while ((*c.out)[0][i] == (*c.out)[1][i]) ++i;
        fail(c.what + how + ": byte " + std::to_string(i) + " differs from MPI's");
    }
    if (!got || !c.eligible || !g_ours) return;
    const std::string d = status_difference(*got, sets_error(m));
    if (!d.empty()) fail(c.what + how + ": status" + d);
}

// Each case alone, completed by each method in turn.
void one_by_one(std::vector<Case> cases, Tally& t, int first_method) {
    g_current = "one by one";
    references(cases);
    for (size_t i = 0; i < cases.size(); ++i) {
        const size_t k = i + static_cast<size_t>(first_method);
        const Method m = static_cast<Method>(k % kMethods);
        const bool ignore = k % (2 * kMethods) >= kMethods;
        std::vector<MPI_Request> q(1);
        const int rc = cases[i].start(0, &q[0]);
        t.count(cases[i].eligible);
        if (rc != MPI_SUCCESS) {
            fail(cases[i].what + ": the call failed");
            continue;
        }
        std::vector<MPI_Status> st;
        if (complete(q, m, st, ignore, cases[i].what, fail))
            compare(cases[i], ignore ? nullptr : &st[0], m, std::string(" by ") + method_name(m));
    }
}

// Calls under test, on MPI_COMM_WORLD, a communicator of half the ranks and
// an intercommunicator between the halves.
void correctness(Tally& t) {
    MPI_Comm half, inter = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
    if (g_size >= 2) MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, g_rank % 2 ? 0 : 1, 99, &inter);
    one_by_one(all_cases(MPI_COMM_WORLD, inter, 1), t);
    one_by_one(all_cases(half, MPI_COMM_NULL, 2), t);
    int seed = 10;
    for (Method m : {kWaitall, kTestall, kWaitany, kTestany, kWaitsome, kTestsome, kWaitBackward, kTest}) {
        all_at_once(all_cases(MPI_COMM_WORLD, inter, ++seed), m, false, t);
        if (m == kWaitall || m == kWaitsome) all_at_once(all_cases(half, MPI_COMM_NULL, ++seed), m, true, t);
    }
    if (inter != MPI_COMM_NULL) MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

}  // namespace icalls

int main(int argc, char** argv) {
    using namespace icalls;
    const std::string mode = argc > 1 ? argv[1] : "preload";
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, mode == "multiple" ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    signal(SIGALRM, on_alarm);
    alarm(100);
    Counter intercepted = counter("chorus_mpi_intercepted_calls"), passed = counter("chorus_mpi_passed_calls");
    if ((mode == "control") != (intercepted == nullptr))
        fail(mode == "control" ? "libchorus_mpi.so is loaded in the control run" : "libchorus_mpi.so is not loaded");
    const unsigned long long in0 = intercepted ? intercepted() : 0, out0 = passed ? passed() : 0;
    g_ours = intercepted && mode != "none";
    Tally t;
    if (mode == "preload" || mode == "control" || mode == "none") {
        correctness(t);
        // MPI calls freeing a collective's request erroneous (Open MPI
        // refuses it); the interposer completes such requests all the same.
        if (g_ours) freeing(t);
        if (mode == "preload") errors(t);
    } else if (mode == "multiple") {
        if (provided != MPI_THREAD_MULTIPLE) fail("MPI_THREAD_MULTIPLE was not provided");
        threads(t);
    } else if (mode == "progress") {
        alarm(30);  // a hang here is the failure under test
        progress(t);
    } else if (mode == "failure") {
        failure();
    } else {
        fail("unknown mode " + mode);
    }
    g_current = "the end";
    free_types();
    if (intercepted && mode != "failure") {
        const bool none = mode == "none";
        const unsigned long long in = intercepted() - in0, out = passed() - out0;
        const unsigned long long eligible = t.eligible, other = t.other;
        const unsigned long long want_in = none ? 0 : eligible, want_out = none ? eligible + other : other;
        if (in != want_in || out != want_out)
            fail("counters: " + std::to_string(in) + " intercepted, " + std::to_string(out) + " passed through; want " +
                 std::to_string(want_in) + " and " + std::to_string(want_out));
        if (!none && want_in == 0) fail("no eligible call was made");
        if (tracked() != 0) fail(std::to_string(tracked()) + " requests still tracked at the end");
    }
    int mine = g_failures.load(), any = 0;
    PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0)
        std::printf("icalls %s at np=%d: %llu eligible and %llu other calls, %s\n", mode.c_str(), g_size,
                    t.eligible.load(), t.other.load(), any ? "FAILED" : "passed");
    MPI_Finalize();
    return any ? 1 : 0;
}
