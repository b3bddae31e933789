// The nonblocking test's other modes: freed requests, errors, threads,
// progress while a peer waits, and a request that fails in flight.
#include "icall_modes.h"

#include <unistd.h>

#include <cstring>
#include <thread>

namespace icalls {

namespace {

// `rc` must be an error of the interposer's own class whose text names
// every one of `words`.
void expect_error(int rc, const std::string& what, const std::vector<const char*>& words) {
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    const std::string text = rc != MPI_SUCCESS ? error_text(rc) : "";
    bool named = true;
    for (const char* w : words) named = named && text.find(w) != std::string::npos;
    if (rc == MPI_SUCCESS || cls <= MPI_ERR_LASTCODE || !named)
        fail(what + ": want a Chorus error naming the argument, got rc " + std::to_string(rc) + " '" + text + "'");
}

// Starts every case (references first), then hands each request to `gone`.
// With `late_peers`, the other ranks start theirs a moment after rank 0.
template <typename Gone>
void start_all(std::vector<Case>& cases, Tally& t, Gone&& gone, bool late_peers = false) {
    references(cases);
    if (late_peers && g_rank != 0) usleep(300000);
    for (Case& c : cases) {
        MPI_Request r = MPI_REQUEST_NULL;
        if (c.start(0, &r) != MPI_SUCCESS) fail(c.what + ": the call failed");
        t.count(c.eligible);
        gone(r);
    }
}

void compare_all(const std::vector<Case>& cases, const std::string& how) {
    for (const Case& c : cases) compare(c, nullptr, kWait, how);
}

}  // namespace

// MPI_Request_free on requests of the interposer's in flight: they complete
// all the same, through later calls of the interposer's, or when their
// communicator is freed.
void freeing(Tally& t) {
    g_current = "MPI_Request_free";
    const unsigned long long before = tracked();
    std::vector<Case> cases;
    for (Case& c : all_cases(MPI_COMM_WORLD, MPI_COMM_NULL, 500))
        if (c.eligible) cases.push_back(std::move(c));  // not those MPI computes: it refuses to free them
    auto drop = [](MPI_Request r) {
        MPI_Request_free(&r);
        if (r != MPI_REQUEST_NULL) fail("MPI_Request_free left the request");
    };
    start_all(cases, t, drop, true);
    // On rank 0 they cannot have finished: its peers had not started theirs.
    if (g_size > 1 && g_rank == 0 && tracked() == before) fail("no freed request was pending");
    while (tracked() > before) {  // any call of the interposer's lets them progress
        MPI_Request none = MPI_REQUEST_NULL;
        int flag = 0;
        MPI_Test(&none, &flag, MPI_STATUS_IGNORE);
    }
    compare_all(cases, " freed while in flight");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    std::vector<Case> more = quick_cases(dup, 501);
    start_all(more, t, drop);
    MPI_Comm_free(&dup);
    if (tracked() != before) fail("MPI_Comm_free left freed requests behind");
    compare_all(more, " freed while in flight, then MPI_Comm_free");
}

// Misuse is reported by the call, as the blocking one reports it; so is a
// failure of Chorus at the start. The communicator stays usable.
void errors(Tally& t) {
    g_current = "errors";
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    std::vector<int> buf(9, 1), out(9, -1);
    MPI_Request keep, r;
    MPI_Ibarrier(c, &keep);  // a live handle, to see the failed calls overwrite it
    t.count(true);
    r = keep;
    expect_error(MPI_Iallreduce(buf.data(), MPI_IN_PLACE, 8, MPI_INT, MPI_SUM, c, &r),
                 "MPI_Iallreduce into MPI_IN_PLACE", {"MPI_Iallreduce", "MPI_IN_PLACE"});
    if (r != MPI_REQUEST_NULL) fail("a failed call left its request set");
    r = keep;
    expect_error(MPI_Iallreduce(buf.data(), buf.data() + 1, 8, MPI_INT, MPI_SUM, c, &r), "overlapping buffers",
                 {"MPI_Iallreduce", "overlap"});
    t.count(true);  // it reached Chorus, which refused it
    if (r != MPI_REQUEST_NULL) fail("a call Chorus refused left its request set");
    expect_error(MPI_Iallreduce(buf.data(), out.data(), 8, MPI_INT, MPI_SUM, c, nullptr), "a null request",
                 {"MPI_Iallreduce", "request"});
    if (MPI_Wait(&keep, MPI_STATUS_IGNORE) != MPI_SUCCESS) fail("the barrier before the errors");
    for (int i = 0; i < 3; ++i) buf[i] = g_rank == 0 ? 40 + i : -1;
    if (MPI_Ibcast(buf.data(), 3, MPI_INT, 0, c, &r) != MPI_SUCCESS || MPI_Wait(&r, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
        buf[0] != 40 || buf[2] != 42)
        fail("MPI_Ibcast after the errors");
    t.count(true);
    MPI_Comm_free(&c);
}

// MPI_THREAD_MULTIPLE: threads on communicators of their own at once; then
// two threads completing requests of one communicator at once.
void threads(Tally& t) {
    g_current = "threads";
    const int n = 3, rounds = 20;
    std::vector<MPI_Comm> comms(n);
    for (MPI_Comm& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
    std::vector<std::thread> pool;
    for (int id = 0; id < n; ++id)
        pool.emplace_back([&, id] {
            for (int k = 0; k < rounds; ++k)
                one_by_one(quick_cases(comms[static_cast<size_t>(id)], 100 * id + k), t, k + id);
        });
    for (std::thread& th : pool) th.join();
    MPI_Comm c = comms[0];
    for (int k = 0; k < rounds; ++k) {
        std::vector<Case> cases = quick_cases(c, 7000 + k);
        std::vector<MPI_Request> q;
        start_all(cases, t, [&](MPI_Request r) { q.push_back(r); });
        // One thread completes the even ones, the other the odd ones.
        auto half = [&](size_t first, Method m) {
            std::vector<MPI_Request> mine;
            for (size_t i = first; i < q.size(); i += 2) mine.push_back(q[i]);
            std::vector<MPI_Status> st;
            complete(mine, m, st, true, "two threads on one communicator", fail);
        };
        std::thread a(half, 0, static_cast<Method>(k % kMethods)), b(half, 1, static_cast<Method>((k + 3) % kMethods));
        a.join();
        b.join();
        compare_all(cases, " completed by two threads at once");
    }
    for (MPI_Comm& x : comms) MPI_Comm_free(&x);
}

// A wait in the interposer keeps MPI moving (a peer blocked in MPI_Recv for
// this rank's earlier MPI_Isend), and a blocking collective keeps the
// requests of other communicators moving (a peer waits for one first).
void progress(Tally& t) {
    if (g_size < 2) return;
    g_current = "progress: a peer in MPI_Recv";
    MPI_Barrier(MPI_COMM_WORLD);  // the Chorus communicator exists from here on
    t.count(true);
    std::vector<int> msg(1 << 20);
    for (Method m : {kWait, kWaitall, kTest}) {
        int one = 1, sum = 0;
        std::vector<MPI_Request> q(1);
        std::vector<MPI_Status> st;
        if (g_rank == 0) {
            for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<int>(i) + m;
            MPI_Request send;
            MPI_Isend(msg.data(), static_cast<int>(msg.size()), MPI_INT, 1, 5, MPI_COMM_WORLD, &send);
            MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
            complete(q, m, st, true, "a peer in MPI_Recv", fail);
            MPI_Wait(&send, MPI_STATUS_IGNORE);
        } else {
            if (g_rank == 1) {
                MPI_Recv(msg.data(), static_cast<int>(msg.size()), MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < msg.size(); ++i)
                    if (msg[i] != static_cast<int>(i) + m) {
                        fail("the message received while rank 0 waited");
                        break;
                    }
            }
            MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
            complete(q, m, st, true, "a peer in MPI_Recv", fail);
        }
        t.count(true);
        if (sum != g_size) fail("MPI_Iallreduce while a peer was in MPI_Recv");
    }
    g_current = "progress: a blocking collective while a peer waits";
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Barrier(dup);
    t.count(true);
    const size_t n = size_t{1} << 20;
    std::vector<double> in(n, 1.0 + g_rank), out(n, -1.0);
    int one = 1, sum = 0;
    MPI_Request r;
    MPI_Iallreduce(in.data(), out.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    if (g_rank == 0) {
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
    }
    t.count(true);
    t.count(true);
    const double want = g_size * (g_size + 1) / 2.0;
    if (sum != g_size || out[0] != want || out[n - 1] != want) fail("MPI_Iallreduce across a blocking MPI_Allreduce");
    MPI_Comm_free(&dup);
}

// With a short CHORUS_TIMEOUT_MS, rank 0 starts a barrier its peers join
// only later: its request fails in flight, and the error comes back from
// the call that completes it, in the MPI_ERROR of the status for
// MPI_Waitall. (The peers may fail too, at the start or at completion, or
// finish: rank 0 had arrived.)
void failure() {
    if (g_size < 2) return;
    g_current = "failure";
    for (Method m : {kWait, kWaitall}) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        MPI_Barrier(c);  // the Chorus communicator, while every rank is here
        if (g_rank != 0) sleep(3);
        MPI_Request r = MPI_REQUEST_NULL;
        int rc = MPI_Ibarrier(c, &r);
        if (g_rank == 0 && rc != MPI_SUCCESS) fail("rank 0's MPI_Ibarrier failed at once: " + error_text(rc));
        MPI_Status st;
        st.MPI_ERROR = MPI_SUCCESS;
        if (rc == MPI_SUCCESS) {
            rc = m == kWait ? MPI_Wait(&r, &st) : MPI_Waitall(1, &r, &st);
            if (m == kWaitall && rc != MPI_SUCCESS) {
                if (rc != MPI_ERR_IN_STATUS)
                    fail("MPI_Waitall returned " + std::to_string(rc) + ", not MPI_ERR_IN_STATUS");
                rc = st.MPI_ERROR;
            }
            if (r != MPI_REQUEST_NULL) fail("the request was not freed");
        }
        if (g_rank == 0 || rc != MPI_SUCCESS)
            expect_error(rc, std::string("a request failed in flight, by ") + method_name(m), {"MPI_Ibarrier"});
        MPI_Comm_free(&c);
        PMPI_Barrier(MPI_COMM_WORLD);
    }
    if (tracked() != 0) fail("requests tracked after the failures");
}

}  // namespace icalls
