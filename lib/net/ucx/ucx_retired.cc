#include "net/ucx/ucx_retired.h"

#include <atomic>
#include <chrono>
#include <mutex>

namespace chorus::net {

namespace {

struct Retired {
    ucp_worker_h worker;
    std::vector<ucs_status_ptr_t> requests;
    std::vector<std::unique_ptr<std::string>> buffers;
    std::vector<KeptEndpoint> eps;
    std::shared_ptr<UcxContext> context;
};

std::mutex g_mutex;
std::atomic<int> g_finalizing_ms{0};
std::vector<Retired>* g_retired = new std::vector<Retired>;  // never destroyed: used at exit
struct Idle {
    IdleWorker w;
    std::shared_ptr<UcxContext> context;
};
std::vector<Idle>* g_idle = new std::vector<Idle>;  // likewise

// Free the requests that have ended; true when none is left.
bool settled(Retired& r) {
    for (size_t i = 0; i < r.requests.size();) {
        if (ucp_request_check_status(r.requests[i]) == UCS_INPROGRESS) {
            ++i;
            continue;
        }
        ucp_request_free(r.requests[i]);
        r.requests[i] = r.requests.back();
        r.requests.pop_back();
    }
    return r.requests.empty();
}

void destroy(Retired& r) {
    // Requests that never ended are released to UCX (it frees them with
    // the worker).
    for (ucs_status_ptr_t q : r.requests) ucp_request_free(q);
    ucp_worker_destroy(r.worker);
}

// Progress each worker `rounds` times; destroy and drop the settled ones.
void sweep(unsigned rounds) {
    auto& list = *g_retired;
    for (size_t i = 0; i < list.size();) {
        for (unsigned k = 0; k < rounds && ucp_worker_progress(list[i].worker) != 0; ++k) {
        }
        if (!settled(list[i])) {
            ++i;
            continue;
        }
        destroy(list[i]);
        list[i] = std::move(list.back());
        list.pop_back();
    }
}

}  // namespace

void retire_worker(ucp_worker_h worker, std::vector<ucs_status_ptr_t> requests,
                   std::vector<std::unique_ptr<std::string>> buffers, std::vector<KeptEndpoint> eps,
                   std::shared_ptr<UcxContext> context) {
    for (KeptEndpoint& e : eps) e.link->target = nullptr;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_retired->push_back({worker, std::move(requests), std::move(buffers), std::move(eps), std::move(context)});
}

void progress_retired() {
    std::unique_lock<std::mutex> lock(g_mutex, std::try_to_lock);
    if (!lock.owns_lock() || g_retired->empty()) return;
    sweep(16);
}

bool finalizing(int* ms) {
    *ms = g_finalizing_ms.load();
    return *ms > 0;
}

void drain_retired(int ms) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_finalizing_ms.store(ms > 0 ? ms : 1);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!g_retired->empty() && std::chrono::steady_clock::now() < deadline) sweep(64);
    for (Retired& r : *g_retired) destroy(r);
    g_retired->clear();
    for (Idle& i : *g_idle) ucp_worker_destroy(i.w.worker);
    g_idle->clear();
}

void keep_idle_worker(IdleWorker w, std::shared_ptr<UcxContext> context) {
    for (KeptEndpoint& e : w.eps) e.link->target = nullptr;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (g_finalizing_ms.load() == 0 && g_idle->size() < kIdleWorkers) {
            g_idle->push_back({std::move(w), std::move(context)});
            return;
        }
    }
    // The worker destroys its endpoints (their links outlive it).
    ucp_worker_destroy(w.worker);
}

IdleWorker take_idle_worker(const std::shared_ptr<UcxContext>& context) {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (size_t i = g_idle->size(); i-- > 0;) {
        if ((*g_idle)[i].context != context) continue;
        IdleWorker w = std::move((*g_idle)[i].w);
        g_idle->erase(g_idle->begin() + static_cast<std::ptrdiff_t>(i));
        return w;
    }
    return {};
}

}  // namespace chorus::net
