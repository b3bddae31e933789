#include "net/ucx/ucx_transport.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace chorus::net {

namespace {


chorus_result_t classify(ucs_status_t status) {
    switch (status) {
        case UCS_ERR_MESSAGE_TRUNCATED: return CHORUS_ERR_MISMATCH;
        case UCS_ERR_ENDPOINT_TIMEOUT:
        case UCS_ERR_CONNECTION_RESET:
        case UCS_ERR_UNREACHABLE:
        case UCS_ERR_REJECTED: return CHORUS_ERR_PEER_FAILED;
        case UCS_ERR_NO_MEMORY: return CHORUS_ERR_OUT_OF_MEMORY;
        default: return CHORUS_ERR_TRANSPORT;
    }
}

void check_ucs(ucs_status_t status, const char* what) {
    if (status != UCS_OK) fail(classify(status), "UCX ", what, ": ", ucs_status_string(status));
}

// Each posted transfer remembers its peer so failures can name it. It lives
// in the space UCX reserves in every request (ucp_params_t::request_size),
// so a transfer in flight costs no allocation of ours: the handle is the
// request itself.
struct Pending {
    int peer;
    bool is_recv;
    size_t bytes;
};

Pending* pending_of(void* request) { return static_cast<Pending*>(request); }

}  // namespace

void UcxTransport::on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* pa = static_cast<PeerArg*>(arg);
    pa->self->peer_status_[pa->peer].store(static_cast<int>(status));
}

UcxTransport::UcxTransport(Bootstrap& boot, bool peer_errors)
    : boot_(boot), rank_(boot.rank()), size_(boot.size()) {
    if (size_ > kMaxRanks) fail(CHORUS_ERR_UNSUPPORTED, "communicator of ", size_, " ranks: at most ", kMaxRanks);
    peer_status_ = std::vector<std::atomic<int>>(size_);
    peer_args_.resize(size_);
    for (int i = 0; i < size_; ++i) peer_args_[i] = {this, i};

    if (peer_errors) setenv("UCX_KEEPALIVE_INTERVAL", "200ms", /*overwrite=*/0);
    ucp_config_t* config = nullptr;
    check_ucs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
    // A peer that dies while this rank only waits to receive from it is
    // found by UCX's keepalive, whose default period (tens of seconds) is too
    // slow to report a dead peer promptly. UCX's transports read it from the
    // environment (ucp_config_modify does not reach them); the user's own
    // setting wins.
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME | UCP_PARAM_FIELD_REQUEST_SIZE;
    params.features = UCP_FEATURE_TAG;
    params.request_size = sizeof(Pending);
    params.name = "chorus";
    ucs_status_t st = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    check_ucs(st, "ucp_init");

    try {
        // Whether this UCX moves CUDA memory itself (built with CUDA, and its
        // cuda transports loaded); otherwise device buffers are staged.
        ucp_context_attr_t attr{};
        attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
        if (ucp_context_query(context_, &attr) == UCS_OK)
            device_memory_ = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;

        ucp_worker_params_t wparams{};
        wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
        check_ucs(ucp_worker_create(context_, &wparams, &worker_), "ucp_worker_create");

        ucp_address_t* addr = nullptr;
        size_t addr_len = 0;
        check_ucs(ucp_worker_get_address(worker_, &addr, &addr_len), "ucp_worker_get_address");
        // Each rank's blob: pid, host name, then its worker address.
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        int pid = static_cast<int>(getpid());
        std::string mine(reinterpret_cast<const char*>(&pid), sizeof pid);
        mine += std::string(host) + '\0';
        mine.append(reinterpret_cast<const char*>(addr), addr_len);
        ucp_worker_release_address(worker_, addr);
        std::vector<std::string> addrs = boot_.allgather(mine);
        peer_pid_.assign(size_, 0);
        for (int r = 0; r < size_; ++r) {
            std::memcpy(&peer_pid_[r], addrs[r].data(), sizeof(int));
            size_t end = addrs[r].find('\0', sizeof(int));
            // Only a peer on this host can be checked for life by its pid.
            if (addrs[r].compare(sizeof(int), end - sizeof(int), host) != 0) peer_pid_[r] = 0;
            addrs[r].erase(0, end + 1);
        }

        eps_.assign(size_, nullptr);
        for (int peer = 0; peer < size_; ++peer) {
            if (peer == rank_) continue;
            ucp_ep_params_t ep{};
            ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                            UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep.address = reinterpret_cast<const ucp_address_t*>(addrs[peer].data());
            // Peer error handling: a peer that dies becomes an error on its
            // endpoint (UCX keepalive) instead of a hang.
            ep.err_mode = peer_errors ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
            ep.err_handler.cb = &UcxTransport::on_peer_error;
            ep.err_handler.arg = &peer_args_[peer];
            check_ucs(ucp_ep_create(worker_, &ep, &eps_[peer]), "ucp_ep_create");
        }
        // Every endpoint exists before anyone sends.
        boot_.barrier([this] { ucp_worker_progress(worker_); });
    } catch (...) {
        for (auto& e : eps_)
            if (e) {
                ucp_request_param_t p{};
                p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
                p.flags = UCP_EP_CLOSE_FLAG_FORCE;
                ucs_status_ptr_t r = ucp_ep_close_nbx(e, &p);
                if (UCS_PTR_IS_PTR(r)) {
                    while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(worker_);
                    ucp_request_free(r);
                }
            }
        if (worker_) ucp_worker_destroy(worker_);
        ucp_cleanup(context_);
        throw;
    }
}

UcxTransport::~UcxTransport() {
    try {
        // Every rank has finished its operations before endpoints close.
        boot_.barrier([this] { ucp_worker_progress(worker_); });
        close_endpoints();
        boot_.barrier([this] { ucp_worker_progress(worker_); });
    } catch (...) {
        // Destruction must not throw; the worker is torn down regardless.
    }
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
}

void UcxTransport::close_endpoints() {
    std::vector<ucs_status_ptr_t> closing;
    for (int peer = 0; peer < size_; ++peer) {
        if (!eps_[peer]) continue;
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = UCP_EP_CLOSE_FLAG_FORCE;
        ucs_status_ptr_t r = ucp_ep_close_nbx(eps_[peer], &p);
        if (UCS_PTR_IS_PTR(r)) closing.push_back(r);
        eps_[peer] = nullptr;
    }
    for (ucs_status_ptr_t r : closing) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(worker_);
        ucp_request_free(r);
    }
}

void UcxTransport::check_peer(int peer) const {
    int st = peer_status_[peer].load(std::memory_order_relaxed);
    if (st) fail(classify(static_cast<ucs_status_t>(st)), "UCX: rank ", peer, " failed: ",
                 ucs_status_string(static_cast<ucs_status_t>(st)));
}

Handle UcxTransport::send(int peer, Tag tag, const void* buf, size_t bytes) {
    check_peer(peer);
    ucp_request_param_t p{};
    p.op_attr_mask = 0;
    ucs_status_ptr_t r = ucp_tag_send_nbx(eps_[peer], buf, bytes, tag, &p);
    if (r == nullptr) return nullptr;
    if (UCS_PTR_IS_ERR(r)) check_ucs(UCS_PTR_STATUS(r), cat("send to rank ", peer).c_str());
    *pending_of(r) = {peer, false, bytes};
    return r;
}

Handle UcxTransport::recv(int peer, Tag tag, void* buf, size_t bytes) {
    check_peer(peer);
    // Always a request: UCX 1.13 does not report the length of a receive
    // that completes at once (recv_info), and a short message must be caught.
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_, buf, bytes, tag, ~Tag(0), &p);
    if (UCS_PTR_IS_ERR(r)) check_ucs(UCS_PTR_STATUS(r), cat("receive from rank ", peer).c_str());
    *pending_of(r) = {peer, true, bytes};
    return r;
}

void UcxTransport::check_length(int peer, size_t got, size_t expected) {
    if (got != expected)
        fail(CHORUS_ERR_MISMATCH, "UCX: message from rank ", peer, " has ", got, " bytes, expected ", expected);
}

bool UcxTransport::test(Handle handle) {
    if (!handle) return true;
    Pending p = *pending_of(handle);
    ucs_status_t st;
    size_t got = p.bytes;
    if (p.is_recv) {
        ucp_tag_recv_info_t info{};
        st = ucp_tag_recv_request_test(handle, &info);
        if (st == UCS_OK) got = info.length;
    } else {
        st = ucp_request_check_status(handle);
    }
    if (st == UCS_INPROGRESS) {
        if (!peer_status_[p.peer].load(std::memory_order_relaxed)) return false;
        // The peer is gone: this transfer will never complete.
        cancel(handle);
        check_peer(p.peer);
        fail(CHORUS_ERR_PEER_FAILED, "UCX: rank ", p.peer, " failed");
    }
    ucp_request_free(handle);
    if (st != UCS_OK)
        fail(classify(st), "UCX ", p.is_recv ? "receive from" : "send to", " rank ", p.peer, ": ",
             ucs_status_string(st));
    if (p.is_recv) check_length(p.peer, got, p.bytes);
    return true;
}

void UcxTransport::cancel(Handle handle) {
    if (!handle) return;
    if (ucp_request_check_status(handle) == UCS_INPROGRESS) ucp_request_cancel(worker_, handle);
    ucp_request_free(handle);
}

bool UcxTransport::progress() { return ucp_worker_progress(worker_) != 0; }

void UcxTransport::settle() {
    for (int i = 0; i < 64 && ucp_worker_progress(worker_) != 0; ++i) {
    }
}

int UcxTransport::local_ranks() const {
    int n = 1;
    for (int r = 0; r < size_; ++r) n += r != rank_ && peer_pid_[r] != 0;
    return n;
}

void UcxTransport::check_peers() {
    for (int r = 0; r < size_; ++r) {
        if (r == rank_ || !peer_pid_[r] || peer_status_[r].load()) continue;
        if (kill(peer_pid_[r], 0) != 0 && errno == ESRCH) peer_status_[r].store(UCS_ERR_CONNECTION_RESET);
    }
}

}  // namespace chorus::net
