#include "core/handles.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace chorus::api {

namespace {

struct Request {
    uint64_t comm_id;
    Operation* op;
    P2pRequest* p2p;
};

struct Registry {
    std::mutex mutex;
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, std::unique_ptr<Communicator>> comms;
    std::unordered_map<uint64_t, Request> requests;
};

Registry& registry() {
    static Registry* r = new Registry;  // never destroyed: usable from atexit paths
    return *r;
}

// A thread's last lookup, valid while no communicator has been removed since
// (a steady loop of calls on one communicator takes no lock).
std::atomic<uint64_t> g_removals{0};
struct LastLookup {
    uint64_t id = 0, removals = 0;
    Communicator* comm = nullptr;
};
// Initial-exec: in the static TLS block, no __tls_get_addr per call.
#if defined(__GNUC__) && defined(__ELF__)
__attribute__((tls_model("initial-exec")))
#endif
thread_local LastLookup t_last;

uint64_t id_of(const void* handle) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
}
template <typename H>
H handle_of(uint64_t id) {
    return reinterpret_cast<H>(static_cast<uintptr_t>(id));
}

}  // namespace

std::string& thread_error() {
    thread_local std::string message;
    return message;
}

chorus_comm_t add_comm(std::unique_ptr<Communicator> comm) {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    uint64_t id = r.next_id++;
    r.comms.emplace(id, std::move(comm));
    return handle_of<chorus_comm_t>(id);
}

Communicator* find_comm(chorus_comm_t handle) {
    const uint64_t id = id_of(handle), removals = g_removals.load(std::memory_order_acquire);
    LastLookup& last = t_last;
    if (id && last.id == id && last.removals == removals) return last.comm;
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.comms.find(id);
    Communicator* c = it == r.comms.end() ? nullptr : it->second.get();
    if (c) last = LastLookup{id, removals, c};
    return c;
}

std::unique_ptr<Communicator> remove_comm(chorus_comm_t handle) {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.comms.find(id_of(handle));
    if (it == r.comms.end()) return nullptr;
    std::unique_ptr<Communicator> owned = std::move(it->second);
    r.comms.erase(it);
    g_removals.fetch_add(1, std::memory_order_acq_rel);
    for (auto q = r.requests.begin(); q != r.requests.end();)
        q = q->second.comm_id == id_of(handle) ? r.requests.erase(q) : std::next(q);
    return owned;
}

namespace {
chorus_request_t add(const Request& request) {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    uint64_t id = r.next_id++;
    r.requests.emplace(id, request);
    return handle_of<chorus_request_t>(id);
}
}  // namespace

chorus_request_t add_request(chorus_comm_t comm, Operation* op) {
    return add(Request{id_of(comm), op, nullptr});
}

chorus_request_t add_request(chorus_comm_t comm, P2pRequest* p2p) {
    return add(Request{id_of(comm), nullptr, p2p});
}

bool find_request(chorus_request_t request, Communicator** comm, Operation** op, P2pRequest** p2p, std::string* why) {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.requests.find(id_of(request));
    if (it == r.requests.end()) {
        *why = cat("request is ", request ? "not a live request" : "NULL", " (completed already, or never started)");
        return false;
    }
    auto c = r.comms.find(it->second.comm_id);
    if (c == r.comms.end()) {
        *why = "the request's communicator was destroyed";
        return false;
    }
    *comm = c->second.get();
    *op = it->second.op;
    *p2p = it->second.p2p;
    return true;
}

void remove_request(chorus_request_t request) {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.requests.erase(id_of(request));
}

}  // namespace chorus::api
