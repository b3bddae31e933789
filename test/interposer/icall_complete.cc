// Completion of request arrays with every MPI completion function
// (icall_complete.h).
#include "icall_complete.h"

namespace icalls {

namespace {

// The first request that is not MPI_REQUEST_NULL, or -1.
int live_one(const std::vector<MPI_Request>& requests) {
    for (size_t i = 0; i < requests.size(); ++i)
        if (requests[i] != MPI_REQUEST_NULL) return static_cast<int>(i);
    return -1;
}

}  // namespace

std::string error_text(int rc) {
    char text[MPI_MAX_ERROR_STRING] = {0};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return text;
}

const char* method_name(Method m) {
    switch (m) {
        case kWait: return "MPI_Wait";
        case kWaitBackward: return "MPI_Wait (last first)";
        case kTest: return "MPI_Test";
        case kWaitall: return "MPI_Waitall";
        case kTestall: return "MPI_Testall";
        case kWaitany: return "MPI_Waitany";
        case kTestany: return "MPI_Testany";
        case kWaitsome: return "MPI_Waitsome";
        case kTestsome: return "MPI_Testsome";
        case kGetStatus: return "MPI_Request_get_status";
        case kFree: return "MPI_Request_free";
    }
    return "?";
}

bool sets_error(Method m) {
    return m == kWaitall || m == kTestall || m == kWaitsome || m == kTestsome;
}

bool complete(std::vector<MPI_Request>& requests, Method m, std::vector<MPI_Status>& statuses, bool ignore,
              const std::string& what, void (*fail)(const std::string&)) {
    const int n = static_cast<int>(requests.size());
    statuses.resize(requests.size());
    MPI_Request* q = requests.data();
    MPI_Status one;
    MPI_Status* st = ignore ? MPI_STATUS_IGNORE : &one;
    std::vector<MPI_Status> some(requests.size());
    std::vector<int> indices(requests.size());
    const std::string at = what + " (" + method_name(m) + "): ";
    int rc = MPI_SUCCESS, flag = 0, index = 0, out = 0;
    auto keep = [&](int i, const MPI_Status& s) {
        if (i < 0 || i >= n) {
            fail(at + "index " + std::to_string(i) + " out of range");
            return false;
        }
        statuses[static_cast<size_t>(i)] = s;
        return true;
    };
    switch (m) {
        case kWait:
        case kWaitBackward:
            for (int k = 0; k < n && rc == MPI_SUCCESS; ++k) {
                const int i = m == kWait ? k : n - 1 - k;
                rc = MPI_Wait(&q[i], st);
                if (!ignore) keep(i, one);
            }
            break;
        case kTest:
            for (int i = 0; i < n && rc == MPI_SUCCESS; ++i) {
                do rc = MPI_Test(&q[i], &flag, st);
                while (rc == MPI_SUCCESS && !flag);
                if (!ignore) keep(i, one);
            }
            break;
        case kWaitall: rc = MPI_Waitall(n, q, ignore ? MPI_STATUSES_IGNORE : statuses.data()); break;
        case kTestall:
            do rc = MPI_Testall(n, q, &flag, ignore ? MPI_STATUSES_IGNORE : statuses.data());
            while (rc == MPI_SUCCESS && !flag);
            break;
        case kWaitany:
        case kTestany:
            for (int done = 0; rc == MPI_SUCCESS;) {
                flag = 1;
                rc = m == kWaitany ? MPI_Waitany(n, q, &index, st) : MPI_Testany(n, q, &index, &flag, st);
                if (rc != MPI_SUCCESS || !flag) continue;
                if (index == MPI_UNDEFINED) break;
                if (!keep(index, one)) return false;
                if (++done > n) {
                    fail(at + "more completions than requests");
                    return false;
                }
            }
            break;
        case kWaitsome:
        case kTestsome:
            for (int done = 0; rc == MPI_SUCCESS;) {
                MPI_Status* sts = ignore ? MPI_STATUSES_IGNORE : some.data();
                rc = m == kWaitsome ? MPI_Waitsome(n, q, &out, indices.data(), sts)
                                    : MPI_Testsome(n, q, &out, indices.data(), sts);
                if (rc != MPI_SUCCESS || out == MPI_UNDEFINED) break;
                if (m == kWaitsome && out == 0) {
                    fail(at + "MPI_Waitsome completed nothing");
                    return false;
                }
                for (int j = 0; j < out; ++j)
                    if (!keep(indices[static_cast<size_t>(j)], ignore ? one : some[static_cast<size_t>(j)]))
                        return false;
                if ((done += out) > n) {
                    fail(at + "more completions than requests");
                    return false;
                }
            }
            break;
        case kGetStatus:
            for (int i = 0; i < n && rc == MPI_SUCCESS; ++i) {
                do rc = MPI_Request_get_status(q[i], &flag, MPI_STATUS_IGNORE);
                while (rc == MPI_SUCCESS && !flag);
                if (rc == MPI_SUCCESS) rc = MPI_Wait(&q[i], st);
                if (!ignore) keep(i, one);
            }
            break;
        case kFree:
            for (int i = 0; i < n && rc == MPI_SUCCESS; ++i)
                if (q[i] != MPI_REQUEST_NULL) rc = MPI_Request_free(&q[i]);
            break;
    }
    if (rc != MPI_SUCCESS) {
        fail(at + "returned " + std::to_string(rc) + " (" + error_text(rc) + ")");
        return false;
    }
    if (const int i = live_one(requests); i >= 0) {
        fail(at + "request " + std::to_string(i) + " of " + std::to_string(n) + " is not MPI_REQUEST_NULL afterwards");
        return false;
    }
    return true;
}

std::string status_difference(const MPI_Status& got, bool error_set) {
    int count = -1, cancelled = -1;
    MPI_Get_count(&got, MPI_BYTE, &count);
    MPI_Test_cancelled(&got, &cancelled);
    std::string d;
    auto field = [&](const char* name, int g, int w) {
        if (g != w) d += std::string(" ") + name + " " + std::to_string(g) + " (want " + std::to_string(w) + ")";
    };
    field("MPI_SOURCE", got.MPI_SOURCE, MPI_ANY_SOURCE);
    field("MPI_TAG", got.MPI_TAG, MPI_ANY_TAG);
    field("count", count, 0);
    field("cancelled", cancelled, 0);
    if (error_set) field("MPI_ERROR", got.MPI_ERROR, MPI_SUCCESS);
    return d;
}

}  // namespace icalls
