// Fortran entry points of the calls that complete requests (see fortran.h):
// Open MPI's mpi_wait_ and the rest call PMPI_Wait and the rest, which would
// wait forever for a request of the interposer's that nothing progresses.
// These convert the requests and statuses as Open MPI's own wrappers do and
// share the C path (completion.cc). Indices are 1-based in Fortran.
#include <vector>

#include "fortran.h"

#if defined(OPEN_MPI)

namespace {

using namespace chorus_mpi::fortran;

// A Fortran status is MPI_STATUS_SIZE integers: the C status's size.
constexpr size_t kStatusSize = sizeof(MPI_Status) / sizeof(MPI_Fint);
static_assert(sizeof(MPI_Status) % sizeof(MPI_Fint) == 0, "a status is a whole number of Fortran integers");

bool ignored(const MPI_Fint* status) {
    return is_one_of(status, sentinels().status_ignore);
}

bool ignored_all(const MPI_Fint* statuses) {
    return is_one_of(statuses, sentinels().statuses_ignore);
}

void set_flag(MPI_Fint* flag, int value) {
    *flag = static_cast<MPI_Fint>(value != 0);  // LOGICAL: .true. is 1 for the compilers Open MPI supports
}

// An array of Fortran requests as C ones, and back.
struct Requests {
    std::vector<MPI_Request> c;
    Requests(MPI_Fint n, const MPI_Fint* f) : c(n > 0 ? static_cast<size_t>(n) : 0) {
        for (size_t i = 0; i < c.size(); ++i) c[i] = PMPI_Request_f2c(f[i]);
    }
    void back(MPI_Fint* f) const {
        for (size_t i = 0; i < c.size(); ++i) f[i] = PMPI_Request_c2f(c[i]);
    }
};

// C statuses for `n` Fortran ones, unless MPI_STATUSES_IGNORE.
struct Statuses {
    bool keep;
    std::vector<MPI_Status> c;
    Statuses(MPI_Fint n, const MPI_Fint* f) : keep(!ignored_all(f)), c(keep && n > 0 ? static_cast<size_t>(n) : 0) {}
    MPI_Status* get() { return keep ? c.data() : MPI_STATUSES_IGNORE; }
    void back(MPI_Fint* f, size_t n) const {
        for (size_t i = 0; keep && i < n; ++i) PMPI_Status_c2f(&c[i], f + i * kStatusSize);
    }
};

// The calls that complete several requests convert back on MPI_ERR_IN_STATUS too.
bool converted(int rc) {
    return rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS;
}

void f_wait(MPI_Fint* request, MPI_Fint* status, MPI_Fint* ierr) {
    MPI_Request c = PMPI_Request_f2c(*request);
    MPI_Status s;
    const bool keep = !ignored(status);
    const int rc = chorus_mpi::wait(&c, keep ? &s : MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) {
        *request = PMPI_Request_c2f(c);
        if (keep) PMPI_Status_c2f(&s, status);
    }
    set_ierr(ierr, rc);
}

void f_test(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierr) {
    MPI_Request c = PMPI_Request_f2c(*request);
    MPI_Status s;
    int done = 0;
    const bool keep = !ignored(status);
    const int rc = chorus_mpi::test(&c, &done, keep ? &s : MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) {
        *request = PMPI_Request_c2f(c);
        set_flag(flag, done);
        if (done && keep) PMPI_Status_c2f(&s, status);
    }
    set_ierr(ierr, rc);
}

void f_waitall(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* statuses, MPI_Fint* ierr) {
    Requests q(*count, requests);
    Statuses s(*count, statuses);
    const int rc = chorus_mpi::waitall(*count, q.c.data(), s.get());
    if (converted(rc)) {
        q.back(requests);
        s.back(statuses, q.c.size());
    }
    set_ierr(ierr, rc);
}

void f_testall(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, MPI_Fint* statuses, MPI_Fint* ierr) {
    Requests q(*count, requests);
    Statuses s(*count, statuses);
    int done = 0;
    const int rc = chorus_mpi::testall(*count, q.c.data(), &done, s.get());
    if (converted(rc)) {
        q.back(requests);
        set_flag(flag, done);
        if (done) s.back(statuses, q.c.size());
    }
    set_ierr(ierr, rc);
}

void f_testany(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierr) {
    Requests q(*count, requests);
    MPI_Status s;
    const bool keep = !ignored(status);
    int i = MPI_UNDEFINED, done = 1;
    const int rc = flag ? chorus_mpi::testany(*count, q.c.data(), &i, &done, keep ? &s : MPI_STATUS_IGNORE)
                        : chorus_mpi::waitany(*count, q.c.data(), &i, keep ? &s : MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) {
        q.back(requests);
        *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
        if (flag) set_flag(flag, done);
        if (done && keep) PMPI_Status_c2f(&s, status);
    }
    set_ierr(ierr, rc);
}

void f_waitany(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* status, MPI_Fint* ierr) {
    f_testany(count, requests, index, nullptr, status, ierr);
}

// MPI_Testsome (MPI_Waitsome when `wait`).
void f_some(bool wait, MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, MPI_Fint* statuses,
            MPI_Fint* ierr) {
    Requests q(*incount, requests);
    Statuses s(*incount, statuses);
    std::vector<int> done(q.c.size());
    int n = 0;
    const int rc = wait ? chorus_mpi::waitsome(*incount, q.c.data(), &n, done.data(), s.get())
                        : chorus_mpi::testsome(*incount, q.c.data(), &n, done.data(), s.get());
    if (converted(rc)) {
        q.back(requests);
        *outcount = n;
        const size_t k = n == MPI_UNDEFINED ? 0 : static_cast<size_t>(n);
        for (size_t j = 0; j < k; ++j) indices[j] = done[j] + 1;
        s.back(statuses, k);
    }
    set_ierr(ierr, rc);
}

void f_waitsome(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, MPI_Fint* statuses,
                MPI_Fint* ierr) {
    f_some(true, incount, requests, outcount, indices, statuses, ierr);
}

void f_testsome(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, MPI_Fint* statuses,
                MPI_Fint* ierr) {
    f_some(false, incount, requests, outcount, indices, statuses, ierr);
}

void f_request_free(MPI_Fint* request, MPI_Fint* ierr) {
    MPI_Request c = PMPI_Request_f2c(*request);
    const int rc = chorus_mpi::request_free(&c);
    if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(c);
    set_ierr(ierr, rc);
}

void f_request_get_status(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierr) {
    MPI_Status s;
    int done = 0;
    const bool keep = !ignored(status);
    const int rc = chorus_mpi::request_get_status(PMPI_Request_f2c(*request), &done, keep ? &s : MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) {
        set_flag(flag, done);
        if (done && keep) PMPI_Status_c2f(&s, status);
    }
    set_ierr(ierr, rc);
}

}  // namespace

CHORUS_FORTRAN(mpi_wait, MPI_WAIT, f_wait, (MPI_Fint * q, MPI_Fint* s, MPI_Fint* e), (q, s, e))
CHORUS_FORTRAN(mpi_test, MPI_TEST, f_test, (MPI_Fint * q, MPI_Fint* f, MPI_Fint* s, MPI_Fint* e), (q, f, s, e))
CHORUS_FORTRAN(mpi_waitall, MPI_WAITALL, f_waitall, (MPI_Fint * n, MPI_Fint* q, MPI_Fint* s, MPI_Fint* e), (n, q, s, e))
CHORUS_FORTRAN(mpi_testall, MPI_TESTALL, f_testall, (MPI_Fint * n, MPI_Fint* q, MPI_Fint* f, MPI_Fint* s, MPI_Fint* e),
               (n, q, f, s, e))
CHORUS_FORTRAN(mpi_waitany, MPI_WAITANY, f_waitany, (MPI_Fint * n, MPI_Fint* q, MPI_Fint* i, MPI_Fint* s, MPI_Fint* e),
               (n, q, i, s, e))
CHORUS_FORTRAN(mpi_testany, MPI_TESTANY, f_testany,
               (MPI_Fint * n, MPI_Fint* q, MPI_Fint* i, MPI_Fint* f, MPI_Fint* s, MPI_Fint* e), (n, q, i, f, s, e))
CHORUS_FORTRAN(mpi_waitsome, MPI_WAITSOME, f_waitsome,
               (MPI_Fint * n, MPI_Fint* q, MPI_Fint* o, MPI_Fint* i, MPI_Fint* s, MPI_Fint* e), (n, q, o, i, s, e))
CHORUS_FORTRAN(mpi_testsome, MPI_TESTSOME, f_testsome,
               (MPI_Fint * n, MPI_Fint* q, MPI_Fint* o, MPI_Fint* i, MPI_Fint* s, MPI_Fint* e), (n, q, o, i, s, e))
CHORUS_FORTRAN(mpi_request_free, MPI_REQUEST_FREE, f_request_free, (MPI_Fint * q, MPI_Fint* e), (q, e))
CHORUS_FORTRAN(mpi_request_get_status, MPI_REQUEST_GET_STATUS, f_request_get_status,
               (MPI_Fint * q, MPI_Fint* f, MPI_Fint* s, MPI_Fint* e), (q, f, s, e))

#endif  // OPEN_MPI
