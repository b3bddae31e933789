// The MPI_Wait and MPI_Test families, and MPI_Request_free and
// MPI_Request_get_status, over arrays that mix the interposer's requests
// (requests.h) with MPI's own.
//
// While no request of the interposer's is in flight every call goes to
// PMPI as it is. Otherwise a wait never blocks in PMPI (that would leave
// the interposer's requests, here or anywhere, without progress, and a
// peer waiting for them): it loops, each turn testing the interposer's
// requests, then MPI's with the PMPI_Test* twin of the call, then backing
// off (spin, yield, nap). A single request of the interposer's, the only
// one in flight, is waited for as a blocking collective waits.
//
// Statuses of the interposer's requests are MPI's empty status
// (requests.cc); in the calls that complete several requests each status's
// MPI_ERROR is set, and a failed
// request of the interposer's makes the call return MPI_ERR_IN_STATUS, as
// MPI does for its own.
#include <vector>

#include "requests.h"

namespace chorus_mpi {

namespace {

bool bypass() {
    return !requests_live() || inside_chorus();
}

// An array of requests, the interposer's and MPI's apart.
struct Split {
    std::vector<RequestPtr> ours;  // per index; null where the request is MPI's
    std::vector<int> index;        // the indices of MPI's requests
    std::vector<MPI_Request> mpi;  // their handles, for PMPI_Test* on them alone
    std::vector<MPI_Status> st;    // their statuses
    bool any_ours = false;

    Split(int n, const MPI_Request* requests, bool statuses) : ours(static_cast<size_t>(n)) {
        any_ours = find_requests(n, requests, ours.data());
        for (int i = 0; i < n; ++i) {
            if (ours[static_cast<size_t>(i)]) continue;
            index.push_back(i);
            mpi.push_back(requests[i]);
        }
        if (statuses) st.resize(mpi.size());
    }
    int n_mpi() const { return static_cast<int>(mpi.size()); }
    bool mpi_null() const {
        for (MPI_Request h : mpi)
            if (h != MPI_REQUEST_NULL) return false;
        return true;
    }
    // When the only request in flight anywhere is one of ours here: wait
    // for it as a blocking call waits. False if not (or not now).
    bool wait_lone() {
        if (running_requests() != 1) return false;
        for (const RequestPtr& r : ours)
            if (r && !r->done.load(std::memory_order_acquire)) return wait_alone(*r);
        return false;
    }
    MPI_Status* statuses() { return st.empty() ? MPI_STATUSES_IGNORE : st.data(); }
    bool ours_done() const {
        for (const RequestPtr& r : ours)
            if (r && !r->done.load(std::memory_order_acquire)) return false;
        return true;
    }
    // MPI's handles, completed ones now MPI_REQUEST_NULL, back where they were.
    void put_back(MPI_Request* requests) const {
        for (size_t k = 0; k < mpi.size(); ++k) requests[index[k]] = mpi[k];
    }
};

// Completes our request i of `s` into requests[i] and, unless ignored, *status
// (MPI_ERROR set). True if it failed.
bool retire_into(Split& s, int i, MPI_Request* requests, MPI_Status* status) {
    MPI_Status st;
    const int rc = retire(s.ours[static_cast<size_t>(i)], &requests[i], &st);
    if (status != MPI_STATUS_IGNORE) {
        *status = st;
        status->MPI_ERROR = rc;
    }
    return rc != MPI_SUCCESS;
}

// One turn of MPI_Testall (MPI_Waitall when `block`: MPI's requests are
// then the only ones left in flight anywhere).
int all_turn(int n, MPI_Request* requests, MPI_Status* statuses, Split& s, bool block, int* flag) {
    *flag = 0;
    if (!s.ours_done()) {
        // Keep MPI's moving without completing any: all or none complete.
        for (MPI_Request h : s.mpi) {
            int ignored = 0;
            PMPI_Request_get_status(h, &ignored, MPI_STATUS_IGNORE);
        }
        if (s.mpi.empty()) turn_mpi();
        return MPI_SUCCESS;
    }
    int mpi_flag = 1, rc = MPI_SUCCESS;
    if (!s.mpi.empty()) {
        if (block)
            rc = PMPI_Waitall(s.n_mpi(), s.mpi.data(), s.statuses());
        else
            rc = PMPI_Testall(s.n_mpi(), s.mpi.data(), &mpi_flag, s.statuses());
    }
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) return rc;
    if (!mpi_flag) return MPI_SUCCESS;
    s.put_back(requests);
    const bool with = statuses != MPI_STATUSES_IGNORE;
    bool failed = rc == MPI_ERR_IN_STATUS;
    for (size_t k = 0; with && k < s.st.size(); ++k) {
        statuses[s.index[k]] = s.st[k];
        if (rc == MPI_SUCCESS) statuses[s.index[k]].MPI_ERROR = MPI_SUCCESS;
    }
    for (int i = 0; i < n; ++i)
        if (s.ours[static_cast<size_t>(i)])
            failed |= retire_into(s, i, requests, with ? &statuses[i] : MPI_STATUS_IGNORE);
    *flag = 1;
    return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

// One turn of MPI_Testany: a done request of ours first, else MPI's.
int any_turn(int n, MPI_Request* requests, int* index, int* flag, MPI_Status* status, Split& s) {
    *flag = 0;
    *index = MPI_UNDEFINED;
    for (int i = 0; i < n; ++i) {
        const RequestPtr& r = s.ours[static_cast<size_t>(i)];
        if (r && r->done.load(std::memory_order_acquire)) {
            *flag = 1;
            *index = i;
            return retire(r, &requests[i], status);
        }
    }
    int k = MPI_UNDEFINED, mpi_flag = 1, rc = MPI_SUCCESS;
    if (!s.mpi.empty()) rc = PMPI_Testany(s.n_mpi(), s.mpi.data(), &k, &mpi_flag, status);
    if (k != MPI_UNDEFINED) {
        s.put_back(requests);
        *flag = 1;
        *index = s.index[static_cast<size_t>(k)];
        return rc;
    }
    if (rc != MPI_SUCCESS) return rc;
    if (mpi_flag && !s.any_ours) *flag = 1;  // no active request at all: index MPI_UNDEFINED
    return MPI_SUCCESS;
}

// One turn of MPI_Testsome: MPI's done requests, then ours.
int some_turn(int n, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses, Split& s) {
    int k = MPI_UNDEFINED, rc = MPI_SUCCESS;
    std::vector<int> done(s.mpi.size());
    if (!s.mpi.empty()) rc = PMPI_Testsome(s.n_mpi(), s.mpi.data(), &k, done.data(), s.statuses());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) return rc;
    const bool with = statuses != MPI_STATUSES_IGNORE;
    bool failed = rc == MPI_ERR_IN_STATUS;
    int count = 0;
    if (k != MPI_UNDEFINED && k > 0) {
        s.put_back(requests);
        for (int j = 0; j < k; ++j, ++count) {
            indices[count] = s.index[static_cast<size_t>(done[static_cast<size_t>(j)])];
            if (!with) continue;
            statuses[count] = s.st[static_cast<size_t>(j)];
            if (rc == MPI_SUCCESS) statuses[count].MPI_ERROR = MPI_SUCCESS;
        }
    }
    for (int i = 0; i < n; ++i) {
        const RequestPtr& r = s.ours[static_cast<size_t>(i)];
        if (!r || !r->done.load(std::memory_order_acquire)) continue;
        indices[count] = i;
        failed |= retire_into(s, i, requests, with ? &statuses[count] : MPI_STATUS_IGNORE);
        ++count;
    }
    *outcount = count == 0 && k == MPI_UNDEFINED && !s.any_ours ? MPI_UNDEFINED : count;
    return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

}  // namespace

int wait(MPI_Request* request, MPI_Status* status) {
    if (bypass() || !request) return PMPI_Wait(request, status);
    RequestPtr r = find_request(*request);
    Backoff backoff;
    if (!r) {  // MPI's own, while the interposer's are in flight
        progress_requests();
        for (;;) {
            if (running_requests() == 0) return PMPI_Wait(request, status);
            int flag = 0;
            const int rc = PMPI_Test(request, &flag, status);
            if (rc != MPI_SUCCESS || flag) return rc;
            backoff.pause();
            progress_requests();
        }
    }
    // Alone in flight, it is waited for as a blocking call waits.
    while (!r->done.load(std::memory_order_acquire)) {
        if (running_requests() == 1 && wait_alone(*r)) break;
        progress_requests();
        if (r->done.load(std::memory_order_acquire)) break;
        backoff.pause();
    }
    return retire(r, request, status);
}

int test(MPI_Request* request, int* flag, MPI_Status* status) {
    if (bypass()) return PMPI_Test(request, flag, status);
    progress_requests();
    if (!request || !flag) return PMPI_Test(request, flag, status);
    RequestPtr r = find_request(*request);
    if (!r) return PMPI_Test(request, flag, status);
    *flag = r->done.load(std::memory_order_acquire) ? 1 : 0;
    if (*flag) return retire(r, request, status);
    turn_mpi();
    return MPI_SUCCESS;
}

int waitall(int count, MPI_Request* requests, MPI_Status* statuses) {
    if (bypass()) return PMPI_Waitall(count, requests, statuses);
    progress_requests();
    if (count <= 0 || !requests) return PMPI_Waitall(count, requests, statuses);
    Split s(count, requests, statuses != MPI_STATUSES_IGNORE);
    Backoff backoff;
    for (;;) {
        if (!s.any_ours && running_requests() == 0) return PMPI_Waitall(count, requests, statuses);
        s.wait_lone();  // MPI's requests progress meanwhile through the idle hook
        int flag = 0;
        const int rc = all_turn(count, requests, statuses, s, running_requests() == 0, &flag);
        if (flag || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)) return rc;
        progress_requests();
        backoff.pause();
    }
}

int testall(int count, MPI_Request* requests, int* flag, MPI_Status* statuses) {
    if (bypass()) return PMPI_Testall(count, requests, flag, statuses);
    progress_requests();
    if (count <= 0 || !requests || !flag) return PMPI_Testall(count, requests, flag, statuses);
    Split s(count, requests, statuses != MPI_STATUSES_IGNORE);
    if (!s.any_ours) return PMPI_Testall(count, requests, flag, statuses);
    return all_turn(count, requests, statuses, s, false, flag);
}

int waitany(int count, MPI_Request* requests, int* index, MPI_Status* status) {
    if (bypass()) return PMPI_Waitany(count, requests, index, status);
    progress_requests();
    if (count <= 0 || !requests || !index) return PMPI_Waitany(count, requests, index, status);
    Split s(count, requests, false);
    Backoff backoff;
    for (;;) {
        if (!s.any_ours && running_requests() == 0) return PMPI_Waitany(count, requests, index, status);
        if (s.mpi_null()) s.wait_lone();  // nothing of MPI's to return first
        int flag = 0;
        const int rc = any_turn(count, requests, index, &flag, status, s);
        if (flag || rc != MPI_SUCCESS) return rc;
        progress_requests();
        backoff.pause();
    }
}

int testany(int count, MPI_Request* requests, int* index, int* flag, MPI_Status* status) {
    if (bypass()) return PMPI_Testany(count, requests, index, flag, status);
    progress_requests();
    if (count <= 0 || !requests || !index || !flag) return PMPI_Testany(count, requests, index, flag, status);
    Split s(count, requests, false);
    if (!s.any_ours) return PMPI_Testany(count, requests, index, flag, status);
    return any_turn(count, requests, index, flag, status, s);
}

int waitsome(int count, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses) {
    if (bypass()) return PMPI_Waitsome(count, requests, outcount, indices, statuses);
    progress_requests();
    if (count <= 0 || !requests || !outcount || !indices)
        return PMPI_Waitsome(count, requests, outcount, indices, statuses);
    Split s(count, requests, statuses != MPI_STATUSES_IGNORE);
    Backoff backoff;
    for (;;) {
        if (!s.any_ours && running_requests() == 0) return PMPI_Waitsome(count, requests, outcount, indices, statuses);
        if (s.mpi_null()) s.wait_lone();
        const int rc = some_turn(count, requests, outcount, indices, statuses, s);
        if (*outcount != 0 || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)) return rc;
        progress_requests();
        backoff.pause();
    }
}

int testsome(int count, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses) {
    if (bypass()) return PMPI_Testsome(count, requests, outcount, indices, statuses);
    progress_requests();
    if (count <= 0 || !requests || !outcount || !indices)
        return PMPI_Testsome(count, requests, outcount, indices, statuses);
    Split s(count, requests, statuses != MPI_STATUSES_IGNORE);
    if (!s.any_ours) return PMPI_Testsome(count, requests, outcount, indices, statuses);
    return some_turn(count, requests, outcount, indices, statuses, s);
}

int request_free(MPI_Request* request) {
    if (bypass()) return PMPI_Request_free(request);
    progress_requests();
    if (!request) return PMPI_Request_free(request);
    RequestPtr r = find_request(*request);
    if (!r) return PMPI_Request_free(request);
    release(r);  // a pending one completes later, in any call of the interposer's, or when its communicator goes
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

int request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
    if (bypass() || !flag) return PMPI_Request_get_status(request, flag, status);
    progress_requests();
    RequestPtr r = find_request(request);
    if (r && !r->done.load(std::memory_order_acquire)) {
        turn_mpi();
        *flag = 0;
        return MPI_SUCCESS;
    }
    return PMPI_Request_get_status(request, flag, status);  // complete: the query callback fills the status
}

}  // namespace chorus_mpi

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
    return chorus_mpi::wait(request, status);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
    return chorus_mpi::test(request, flag, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
    return chorus_mpi::waitall(count, requests, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
    return chorus_mpi::testall(count, requests, flag, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
    return chorus_mpi::waitany(count, requests, index, status);
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
    return chorus_mpi::testany(count, requests, index, flag, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
    return chorus_mpi::waitsome(incount, requests, outcount, indices, statuses);
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
    return chorus_mpi::testsome(incount, requests, outcount, indices, statuses);
}

int MPI_Request_free(MPI_Request* request) {
    return chorus_mpi::request_free(request);
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
    return chorus_mpi::request_get_status(request, flag, status);
}

}  // extern "C"
