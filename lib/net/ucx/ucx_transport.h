// The real transport: UCX tagged messages between the ranks of a
// communicator (shared memory and CMA inside a node; InfiniBand, RoCE or TCP
// across nodes, as UCX selects). The process's UCX context is shared by
// every communicator; each communicator has its own single-threaded worker,
// whose address every rank learns at creation. Endpoints are created on
// first use, so a communicator whose ranks talk to few peers connects to
// few. Teardown is local: it flushes and closes this rank's endpoints and
// never waits for a peer to take part.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "net/bootstrap.h"
#include "net/transport.h"
#include "net/ucx/ucx_context.h"

namespace chorus::net {

class UcxTransport final : public Transport {
public:
    // Collective over `boot`, all or nothing: if creating the worker fails
    // on any rank, it throws on every rank. With `peer_errors`, endpoints
    // use UCX's peer failure detection.
    UcxTransport(Bootstrap& boot, bool peer_errors);
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

private:
    ucp_ep_h endpoint(int peer);
    void post_notice_recv();
    void reap_notices();
    // Drive `request` to completion (progressing the worker) for at most
    // `ms` milliseconds; true if it completed. Frees it either way if done.
    bool finish(ucs_status_ptr_t request, int ms);
    void check_peer(int peer) const;
    static void on_peer_error(void* arg, ucp_ep_h ep, ucs_status_t status);

    struct PeerArg {
        UcxTransport* self;
        int peer;
    };
    int rank_ = 0;
    int size_ = 0;
    bool peer_errors_ = false;
    int local_ranks_ = 1;
    std::vector<int> host_labels_;  // by rank: the lowest rank on its host
    std::shared_ptr<UcxContext> context_;
    ucp_worker_h worker_ = nullptr;
    std::vector<std::string> addresses_;  // every rank's worker address
    std::vector<int> peer_pid_;           // 0 unless the peer shares this host (net/host.h)
    std::vector<ucp_ep_h> eps_;           // null until first used
    std::vector<int> connected_;          // the peers whose endpoint exists
    struct Flush {
        ucs_status_ptr_t request;
        int peer;
    };
    std::vector<Flush> flushes_;  // endpoint flushes under way (settled())
    std::vector<PeerArg> peer_args_;
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
    };
    std::vector<Cancelled> cancelled_;
};

}  // namespace chorus::net
