// The real transport: UCX tagged messages between the ranks of a
// communicator (shared memory and CMA inside a node; InfiniBand, RoCE or TCP
// across nodes, as UCX selects). The process's UCX context is shared by
// every communicator; each communicator has its own single-threaded worker,
// whose address every rank learns at creation: an idle one that an earlier
// communicator left cleanly, or a new one (net/ucx/ucx_retired.h).
// Endpoints are created on first use, so a communicator whose ranks talk to
// few peers connects to few. Teardown is local: it flushes and closes this
// rank's endpoints and never waits for a peer to take part.
//
// Epochs keep a reused worker's communicators apart: a communicator's epoch
// is above that of every communicator its ranks' workers served before.
// Notices carry it in their tag (a notice of another epoch never matches),
// and operation messages have their tag's sequence number rotated by an
// amount that changes with it, so a message left over from an earlier
// communicator does not meet an operation of the same number.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "net/bootstrap.h"
#include "net/transport.h"
#include "net/ucx/ucx_context.h"
#include "net/ucx/ucx_retired.h"

namespace chorus::net {

class UcxTransport final : public Transport, public KeyedMemory {
public:
    // Where RMA is offered (keyed_memory()): nowhere, only when the communicator
    // spans hosts, or always (every rank's UCX offering it).
    enum class RmaUse { Off, BetweenHosts, Always };
    // Collective over `boot`, all or nothing: if creating the worker fails
    // on any rank, it throws on every rank. With `peer_errors`, endpoints
    // use UCX's peer failure detection. RMA is offered where `rma_use` asks
    // for it and every rank's UCX offers RMA.
    UcxTransport(Bootstrap& boot, bool peer_errors, RmaUse rma_use = RmaUse::BetweenHosts);
    // Local: closes this rank's endpoints in flush mode; what does not
    // flush at once goes on in the background (net/ucx/ucx_retired.h).
    ~UcxTransport() override;
    UcxTransport(const UcxTransport&) = delete;
    UcxTransport& operator=(const UcxTransport&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    Handle send(int peer, Tag tag, const void* buf, size_t bytes) override;
    Handle recv(int peer, Tag tag, void* buf, size_t bytes) override;
    bool test(Handle handle) override;
    // A receive is cancelled, a send's endpoint closed by force (UCX cannot
    // cancel a send); wait_cancelled() waits for them to end.
    void cancel(Handle handle) override;
    void wait_cancelled() override;
    bool progress() override;
    // Flushes every endpoint used so far to a peer on this host (UCX sends
    // what waits behind a full shared-memory queue, a rendezvous
    // acknowledgement say, before a flush behind it completes).
    bool settled() override;
    // Peers on this host whose process is gone become failed.
    void check_peers() override;
    int local_ranks() const override { return local_ranks_; }
    std::vector<int> host_labels() const override { return host_labels_; }
    const char* name() const override { return "ucx"; }
    bool device_memory() const override { return context_->device_memory(); }
    void notify(int peer, const std::string& notice) override;
    bool poll_notice(int* source, std::string* notice) override;
    void flush_notices(int ms) override;
    // UCX RMA, where every rank's context offers it and the communicator
    // wants it (agreed at creation).
    KeyedMemory* keyed_memory() override { return rma_ ? this : nullptr; }
    size_t rma_register(void* addr, size_t bytes, void* key, uint64_t* region) override;
    void rma_release(uint64_t region) override;
    Handle rma_get(int peer, void* dst, uint64_t remote, size_t bytes, const void* key, size_t) override {
        return access(peer, true, dst, remote, bytes, key);
    }
    Handle rma_put(int peer, uint64_t remote, const void* src, size_t bytes, const void* key, size_t) override {
        return access(peer, false, const_cast<void*>(src), remote, bytes, key);
    }

private:
    Handle access(int peer, bool is_get, void* local, uint64_t remote, size_t bytes, const void* key);
    ucp_ep_h endpoint(int peer);
    // The tag on the wire: the sequence number rotated by this epoch's shift.
    Tag wire(Tag tag) const {
        constexpr Tag kSeqField = kNoticeSeq << kTagStepBits;
        Tag seq = ((tag & kSeqField) >> kTagStepBits) + seq_shift_;
        if (seq >= kNoticeSeq) seq -= kNoticeSeq;  // never the notices' number
        return (tag & ~kSeqField) | (seq << kTagStepBits);
    }
    // Whether nothing was cancelled, no notice went either way and no peer
    // failed: the worker may then serve another communicator (ucx_retired.h),
    // if no message waits in it unmatched.
    bool clean() const;
    void post_notice_recv();
    void reap_notices();
    // Drive `request` to completion (progressing the worker) for at most
    // `ms` milliseconds; true if it completed. Frees it either way if done.
    bool finish(ucs_status_ptr_t request, int ms);
    void check_peer(int peer) const;
    static void on_peer_error(void* arg, ucp_ep_h ep, ucs_status_t status);

    int rank_ = 0;
    int size_ = 0;
    bool peer_errors_ = false;
    bool rma_ = false;
    int local_ranks_ = 1;
    std::vector<int> host_labels_;  // by rank: the lowest rank on its host
    std::shared_ptr<UcxContext> context_;
    ucp_worker_h worker_ = nullptr;
    uint32_t epoch_ = 0;  // this communicator's
    Tag seq_shift_ = 0;   // below kNoticeSeq
    // Nothing was cancelled and no notice went either way: the worker may
    // serve the next communicator.
    bool clean_ = true;
    std::vector<std::string> addresses_;  // every rank's worker address
    std::vector<int> peer_pid_;           // 0 unless the peer shares this host (net/host.h)
    std::vector<ucp_ep_h> eps_;           // null until first used
    std::vector<int> connected_;          // the peers whose endpoint exists
    struct Flush {
        ucs_status_ptr_t request;
        int peer;
    };
    std::vector<Flush> flushes_;  // endpoint flushes under way (settled())
    // Every endpoint of the worker (this communicator's, and those an
    // earlier one left open, by worker address), and each peer's in it.
    std::vector<KeptEndpoint> kept_;
    std::unordered_map<std::string, size_t> kept_index_;
    std::vector<int> kept_of_;  // by rank: index in kept_, or -1
    // Set by UCX's error callback when a peer fails (0 = healthy).
    std::vector<std::atomic<int>> peer_status_;
    // The posted receive for notices from any rank, and notices being sent.
    std::unique_ptr<std::string> notice_in_;
    ucs_status_ptr_t notice_recv_ = nullptr;
    std::vector<std::pair<ucs_status_ptr_t, std::unique_ptr<std::string>>> notices_out_;
    struct Cancelled {
        ucs_status_ptr_t request;
        int peer;
        bool is_recv;
        ucp_rkey_h rkey;  // of a get or put
    };
    std::vector<Cancelled> cancelled_;
};

}  // namespace chorus::net
