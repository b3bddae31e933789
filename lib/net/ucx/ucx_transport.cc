#include "net/ucx/ucx_transport.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "base/error.h"
#include "net/host.h"
#include "net/ucx/ucx_retired.h"
#include "net/ucx/ucx_status.h"

namespace chorus::net {

namespace {

// Each posted transfer remembers its peer so failures can name it. It lives
// in the space UCX reserves in every request (UcxContext::request_bytes), so
// a transfer in flight costs no allocation of ours: the handle is the
// request itself.
struct Pending {
    int peer;
    bool is_recv;
    size_t bytes;
    ucp_rkey_h rkey;  // a get, or a put's flush: RMA (the key is destroyed with it)
};
static_assert(sizeof(Pending) <= 32, "Pending fits UCX's request space");

Pending* pending_of(void* request) {
    return static_cast<Pending*>(request);
}

// How long a cancelled receive or a forced endpoint close may take to end
// (they need only this rank's progress).
constexpr int kCloseMs = 2000;
// How long teardown progresses its endpoints' flush itself before leaving
// the rest to the background.
constexpr int kSettleMs = 20;
// How long an abandoned send may take to end (see wait_cancelled).
constexpr int kCancelSendMs = 200;

// Notices' epochs (in the step field).
constexpr uint32_t kMaxNoticeEpoch = (uint32_t(1) << kTagStepBits) - 1;
// How far the sequence numbers of consecutive epochs are rotated apart: the
// range over the golden ratio, so that the rotations of epochs near each
// other stay far apart (epochs k apart, k up to 2000: at least 9048 / k).
constexpr Tag kEpochSeqStride = 40503;

}  // namespace

void UcxTransport::on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* link = static_cast<EpLink*>(arg);
    link->status.store(static_cast<int>(status));
    if (link->target) link->target->store(static_cast<int>(status));
}

UcxTransport::UcxTransport(Bootstrap& boot, bool peer_errors, RmaUse rma_use)
    : rank_(boot.rank()), size_(boot.size()), peer_errors_(peer_errors) {
    progress_retired();
    // Each rank's blob: pid, its worker's last epoch, whether it offers RMA,
    // host identity, then its worker address.
    std::vector<std::string> blobs;
    try {
        blobs = allgather_agreed(boot, [&] {
            if (size_ > kMaxRanks)
                fail(CHORUS_ERR_UNSUPPORTED, "communicator of ", size_, " ranks: at most ", kMaxRanks);
            context_ = UcxContext::get();
            IdleWorker idle = take_idle_worker(context_);
            worker_ = idle.worker;
            kept_ = std::move(idle.eps);
            if (!worker_) {
                ucp_worker_params_t wparams{};
                wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
                wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
                check_ucs(ucp_worker_create(context_->handle(), &wparams, &worker_), "ucp_worker_create");
            }
            ucp_address_t* addr = nullptr;
            size_t addr_len = 0;
            check_ucs(ucp_worker_get_address(worker_, &addr, &addr_len), "ucp_worker_get_address");
            int pid = static_cast<int>(getpid());
            std::string mine(reinterpret_cast<const char*>(&pid), sizeof pid);
            mine.append(reinterpret_cast<const char*>(&idle.epoch), sizeof idle.epoch);
            mine += rma_use != RmaUse::Off && context_->rma() ? '1' : '0';
            mine += host_identity() + '\0';
            mine.append(reinterpret_cast<const char*>(addr), addr_len);
            ucp_worker_release_address(worker_, addr);
            return mine;
        });
    } catch (...) {
        if (worker_) ucp_worker_destroy(worker_);
        throw;
    }
    peer_pid_.assign(size_, 0);
    addresses_.resize(size_);
    host_labels_.resize(size_);
    std::map<std::string, int> host_first;  // host identity -> its lowest rank
    constexpr size_t kRma = sizeof(int) + sizeof(uint32_t), kHost = kRma + 1;
    rma_ = true;
    for (int r = 0; r < size_; ++r) {
        const std::string& b = blobs[r];
        rma_ = rma_ && b[kRma] == '1';
        uint32_t last = 0;
        std::memcpy(&last, b.data() + sizeof(int), sizeof last);
        epoch_ = std::max(epoch_, last);
        size_t end = b.find('\0', kHost);
        host_labels_[r] = host_first.emplace(b.substr(kHost, end - kHost), r).first->second;
        // Only a peer on this host can be checked for life by its pid.
        if (b.compare(kHost, end - kHost, host_identity()) == 0) {
            std::memcpy(&peer_pid_[r], b.data(), sizeof(int));
            local_ranks_ += r != rank_;
        }
        addresses_[r] = b.substr(end + 1);
    }
    // Between hosts only, unless asked for everywhere: where every rank is
    // on this host, cross-memory attach (or messages) serve instead.
    if (rma_use == RmaUse::BetweenHosts && local_ranks_ == size_) rma_ = false;
    // Above every epoch these workers served (within a notice tag's step
    // field); the shift is 0 for the first communicator of fresh workers.
    epoch_ = (epoch_ + 1) & kMaxNoticeEpoch;
    seq_shift_ = (Tag(epoch_ - 1) * kEpochSeqStride) % kNoticeSeq;
    peer_pid_[rank_] = 0;
    eps_.assign(size_, nullptr);
    peer_status_ = std::vector<std::atomic<int>>(size_);
    // The endpoints an earlier communicator left: failed ones are closed.
    kept_of_.assign(size_, -1);
    for (size_t i = 0; i < kept_.size();) {
        if (kept_[i].link->status.load()) {
            ucp_request_param_t p{};
            p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            p.flags = UCP_EP_CLOSE_FLAG_FORCE;
            ucs_status_ptr_t r = ucp_ep_close_nbx(kept_[i].ep, &p);
            if (UCS_PTR_IS_PTR(r)) ucp_request_free(r);
            kept_[i] = std::move(kept_.back());
            kept_.pop_back();
            continue;
        }
        kept_index_.emplace(kept_[i].address, i);
        ++i;
    }
    notice_in_ = std::make_unique<std::string>(kMaxNotice, '\0');
    post_notice_recv();
}

UcxTransport::~UcxTransport() {
    wait_cancelled();
    std::vector<ucs_status_ptr_t> pending;
    std::vector<std::unique_ptr<std::string>> buffers;
    if (notice_recv_) {
        ucp_request_cancel(worker_, notice_recv_);
        pending.push_back(notice_recv_);
    }
    buffers.push_back(std::move(notice_in_));
    for (auto& n : notices_out_) {
        pending.push_back(n.first);
        buffers.push_back(std::move(n.second));
    }
    for (Flush& f : flushes_) pending.push_back(f.request);
    int final_ms = 0;
    const bool done = finalizing(&final_ms);
    // A worker that may serve again keeps its endpoints open (flushing those
    // used here); otherwise every endpoint closes, in flush mode but to a
    // failed peer.
    const bool keep = !done && clean();
    for (int peer : connected_) {
        if (!eps_[peer] || !keep) continue;
        ucp_request_param_t p{};
        p.op_attr_mask = 0;
        ucs_status_ptr_t r = ucp_ep_flush_nbx(eps_[peer], &p);
        if (UCS_PTR_IS_PTR(r)) pending.push_back(r);
    }
    for (KeptEndpoint& e : kept_) {
        if (!e.ep || keep) continue;
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = e.link->status.load() ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        ucs_status_ptr_t r = ucp_ep_close_nbx(e.ep, &p);
        e.ep = nullptr;
        if (UCS_PTR_IS_PTR(r)) pending.push_back(r);
    }
    // Usually everything has ended after a few rounds (shared memory, or a
    // peer that is progressing too); otherwise it goes on in the background.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(done ? final_ms : kSettleMs);
    while (!pending.empty()) {
        ucp_worker_progress(worker_);
        for (size_t i = 0; i < pending.size();) {
            if (ucp_request_check_status(pending[i]) == UCS_INPROGRESS) {
                ++i;
                continue;
            }
            ucp_request_free(pending[i]);
            pending[i] = pending.back();
            pending.pop_back();
        }
        if (std::chrono::steady_clock::now() > deadline) break;
    }
    // A message that no receive took (a peer ran an operation this rank did
    // not) would wait in the worker for the next communicator.
    ucp_tag_recv_info_t info{};
    if (!pending.empty()) {
        retire_worker(worker_, std::move(pending), std::move(buffers), std::move(kept_), context_);
    } else if (keep && ucp_tag_probe_nb(worker_, 0, 0, 0, &info) == nullptr) {
        IdleWorker w;
        w.worker = worker_;
        w.epoch = epoch_;
        for (KeptEndpoint& e : kept_)
            if (e.ep) w.eps.push_back(std::move(e));
        keep_idle_worker(std::move(w), context_);
    } else {
        // Destroys the endpoints still open; their links go after it.
        ucp_worker_destroy(worker_);
    }
    progress_retired();
}

bool UcxTransport::clean() const {
    if (!clean_) return false;
    for (int peer = 0; peer < size_; ++peer)
        if (peer_status_[peer].load()) return false;
    return true;
}

ucp_ep_h UcxTransport::endpoint(int peer) {
    if (eps_[peer]) return eps_[peer];
    auto it = kept_index_.find(addresses_[peer]);
    if (it != kept_index_.end() && kept_[it->second].ep && kept_[it->second].peer_errors == peer_errors_ &&
        !kept_[it->second].link->status.load()) {
        // An earlier communicator's endpoint to this worker.
        KeptEndpoint& e = kept_[it->second];
        e.link->target = &peer_status_[peer];
        kept_of_[peer] = static_cast<int>(it->second);
        eps_[peer] = e.ep;
    } else {
        KeptEndpoint e;
        e.address = addresses_[peer];
        e.peer_errors = peer_errors_;
        e.link = std::make_unique<EpLink>();
        e.link->target = &peer_status_[peer];
        ucp_ep_params_t ep{};
        ep.field_mask =
            UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.address = reinterpret_cast<const ucp_address_t*>(addresses_[peer].data());
        // Peer error handling: a peer that dies becomes an error on its
        // endpoint (UCX keepalive) instead of a hang.
        ep.err_mode = peer_errors_ ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
        ep.err_handler.cb = &UcxTransport::on_peer_error;
        ep.err_handler.arg = e.link.get();
        check_ucs(ucp_ep_create(worker_, &ep, &e.ep), cat("ucp_ep_create to rank ", peer).c_str());
        eps_[peer] = e.ep;
        kept_of_[peer] = static_cast<int>(kept_.size());
        kept_index_[e.address] = kept_.size();
        kept_.push_back(std::move(e));
    }
    if (std::find(connected_.begin(), connected_.end(), peer) == connected_.end()) connected_.push_back(peer);
    return eps_[peer];
}

bool UcxTransport::finish(ucs_status_ptr_t request, int ms) {
    if (!UCS_PTR_IS_PTR(request)) return true;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    unsigned polls = 0;
    while (ucp_request_check_status(request) == UCS_INPROGRESS) {
        ucp_worker_progress(worker_);
        if ((++polls & 255) == 0 && std::chrono::steady_clock::now() > deadline) return false;
    }
    ucp_request_free(request);
    return true;
}

void UcxTransport::check_peer(int peer) const {
    int st = peer_status_[peer].load(std::memory_order_relaxed);
    if (st)
        fail(classify(static_cast<ucs_status_t>(st)), "UCX: rank ", peer,
             " failed: ", ucs_status_string(static_cast<ucs_status_t>(st)));
}

Handle UcxTransport::send(int peer, Tag tag, const void* buf, size_t bytes) {
    check_peer(peer);
    ucp_request_param_t p{};
    p.op_attr_mask = 0;
    ucs_status_ptr_t r = ucp_tag_send_nbx(endpoint(peer), buf, bytes, wire(tag), &p);
    if (r == nullptr) return nullptr;
    if (UCS_PTR_IS_ERR(r)) check_ucs(UCS_PTR_STATUS(r), cat("send to rank ", peer).c_str());
    *pending_of(r) = {peer, false, bytes, nullptr};
    return r;
}

Handle UcxTransport::recv(int peer, Tag tag, void* buf, size_t bytes) {
    check_peer(peer);
    // Always a request: UCX 1.13 does not report the length of a receive
    // that completes at once (recv_info), and a short message must be caught.
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_, buf, bytes, wire(tag), ~Tag(0), &p);
    if (UCS_PTR_IS_ERR(r)) check_ucs(UCS_PTR_STATUS(r), cat("receive from rank ", peer).c_str());
    *pending_of(r) = {peer, true, bytes, nullptr};
    return r;
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
    if (p.rkey) ucp_rkey_destroy(p.rkey);
    if (st != UCS_OK)
        fail(classify(st), "UCX ",
             p.rkey      ? "RMA with"
             : p.is_recv ? "receive from"
                         : "send to",
             " rank ", p.peer, ": ", ucs_status_string(st));
    if (p.is_recv && got != p.bytes)
        fail(CHORUS_ERR_MISMATCH, "UCX: message from rank ", p.peer, " has ", got, " bytes, expected ", p.bytes);
    return true;
}

void UcxTransport::cancel(Handle handle) {
    if (!handle) return;
    clean_ = false;
    Pending p = *pending_of(handle);
    if (ucp_request_check_status(handle) != UCS_INPROGRESS) {
        ucp_request_free(handle);
        if (p.rkey) ucp_rkey_destroy(p.rkey);
        return;
    }
    if (p.is_recv) {
        ucp_request_cancel(worker_, handle);
    } else if (eps_[p.peer]) {
        // UCX cannot cancel a send (nor a get or a put); closing its endpoint by force ends
        // every transfer on it (a rendezvous may otherwise go on reading
        // the buffer after the caller has moved on).
        ucp_request_param_t rp{};
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
        ucs_status_ptr_t r = ucp_ep_close_nbx(eps_[p.peer], &rp);
        eps_[p.peer] = nullptr;
        kept_[static_cast<size_t>(kept_of_[p.peer])].ep = nullptr;
        kept_of_[p.peer] = -1;
        if (UCS_PTR_IS_PTR(r)) cancelled_.push_back({r, p.peer, false, nullptr});
    }
    cancelled_.push_back({handle, p.peer, p.is_recv, p.rkey});
}

void UcxTransport::wait_cancelled() {
    // A cancelled receive ends at once. A send ends when its endpoint's
    // forced close reaches it or when the peer finishes a rendezvous read
    // already under way (a peer that learnt of the failure starts none):
    // waited for briefly. A dead peer reads nothing: not waited for. What
    // has not ended by then is released to UCX, which frees it when it ends.
    auto start = std::chrono::steady_clock::now();
    for (const Cancelled& c : cancelled_) {
        int bound = peer_status_[c.peer].load() ? 0 : c.is_recv ? kCloseMs : kCancelSendMs;
        auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
        int ms = static_cast<int>(std::max<long>(0, bound - spent.count()));
        if (finish(c.request, ms)) {
            if (c.rkey) ucp_rkey_destroy(c.rkey);
        } else {
            // Released to UCX; its key stays (a few bytes) lest UCX still read it.
            ucp_request_free(c.request);
        }
    }
    cancelled_.clear();
}

bool UcxTransport::progress() {
    return ucp_worker_progress(worker_) != 0;
}

bool UcxTransport::settled() {
    ucp_worker_progress(worker_);
    if (flushes_.empty()) {
        for (int peer : connected_) {
            // Peers on this host only: a flush toward another host (TCP) can
            // wait for that peer's own progress, which a peer gone into MPI
            // does not make (the rank would then wait for it in turn).
            if (!eps_[peer] || !peer_pid_[peer] || peer_status_[peer].load(std::memory_order_relaxed)) continue;
            ucp_request_param_t p{};
            p.op_attr_mask = 0;
            ucs_status_ptr_t r = ucp_ep_flush_nbx(eps_[peer], &p);
            // An error is the peer's failure, which its transfers report.
            if (UCS_PTR_IS_PTR(r)) flushes_.push_back({r, peer});
        }
        if (flushes_.empty()) return true;
        ucp_worker_progress(worker_);
    }
    for (size_t i = 0; i < flushes_.size();) {
        // A failed peer's flush is left to UCX (freed when it ends).
        if (ucp_request_check_status(flushes_[i].request) == UCS_INPROGRESS &&
            !peer_status_[flushes_[i].peer].load(std::memory_order_relaxed)) {
            ++i;
            continue;
        }
        ucp_request_free(flushes_[i].request);
        flushes_[i] = flushes_.back();
        flushes_.pop_back();
    }
    return flushes_.empty();
}

void UcxTransport::check_peers() {
    progress_retired();
    for (int r = 0; r < size_; ++r)
        if (peer_pid_[r] && !peer_status_[r].load() && process_gone(peer_pid_[r]))
            peer_status_[r].store(UCS_ERR_CONNECTION_RESET);
}

size_t UcxTransport::rma_register(void* addr, size_t bytes, void* key, uint64_t* region) {
    if (!rma_) return 0;
    return context_->registrations()->acquire(addr, bytes, key, KeyedMemory::kMaxKey, region);
}

void UcxTransport::rma_release(uint64_t region) {
    context_->registrations()->release(region);
}

Handle UcxTransport::access(int peer, bool is_get, void* local, uint64_t remote, size_t bytes, const void* key) {
    if (!rma_) fail(CHORUS_ERR_INTERNAL, "ucx transport: no keyed access to rank ", peer, "'s memory");
    check_peer(peer);
    ucp_ep_h ep = endpoint(peer);
    ucp_rkey_h rkey = nullptr;
    check_ucs(ucp_ep_rkey_unpack(ep, key, &rkey), cat("unpacking rank ", peer, "'s memory key").c_str());
    ucp_request_param_t p{};
    p.op_attr_mask = 0;
    ucs_status_ptr_t r =
        is_get ? ucp_get_nbx(ep, local, bytes, remote, rkey, &p) : ucp_put_nbx(ep, local, bytes, remote, rkey, &p);
    if (!is_get && !UCS_PTR_IS_ERR(r)) {
        // A put is done when it has landed in the peer's memory: when a
        // flush of the endpoint behind it completes (which ends the put too).
        if (UCS_PTR_IS_PTR(r)) ucp_request_free(r);
        r = ucp_ep_flush_nbx(ep, &p);
    }
    if (!UCS_PTR_IS_PTR(r)) {
        // A flush that fails at once (the endpoint failed) may leave the put
        // it follows outstanding, which still uses the key: it stays.
        if (is_get || !UCS_PTR_IS_ERR(r)) ucp_rkey_destroy(rkey);
        if (UCS_PTR_IS_ERR(r))
            fail(classify(UCS_PTR_STATUS(r)), "UCX ", is_get ? "get from" : "put to", " rank ", peer, ": ",
                 ucs_status_string(UCS_PTR_STATUS(r)));
        return nullptr;
    }
    *pending_of(r) = {peer, false, bytes, rkey};
    return r;
}

}  // namespace chorus::net
