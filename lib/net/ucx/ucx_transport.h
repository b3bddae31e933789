// The real transport: UCX tagged messages between the ranks of an MPI
// communicator (shared memory and CMA inside a node; InfiniBand, RoCE or TCP
// across nodes, as UCX selects). Each communicator owns a UCX context and a
// single-threaded worker; worker addresses are exchanged over the bootstrap.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <string>
#include <vector>

#include "net/bootstrap.h"
#include "net/transport.h"

namespace chorus::net {

class UcxTransport final : public Transport {
public:
    // Collective over `boot` (which the caller owns and keeps alive).
    // With `peer_errors`, endpoints use UCX's peer failure detection.
    UcxTransport(Bootstrap& boot, bool peer_errors);
    // Collective: closes endpoints while every rank keeps progressing.
    ~UcxTransport() override;
    UcxTransport(const UcxTransport&) = delete;
    UcxTransport& operator=(const UcxTransport&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    Handle send(int peer, Tag tag, const void* buf, size_t bytes) override;
    Handle recv(int peer, Tag tag, void* buf, size_t bytes) override;
    bool test(Handle handle) override;
    void cancel(Handle handle) override;
    bool progress() override;
    void settle() override;
    // Peers on this host whose process is gone become failed (kill(pid, 0)).
    void check_peers() override;
    int local_ranks() const override;
    const char* name() const override { return "ucx"; }
    bool device_memory() const override { return device_memory_; }

private:
    void close_endpoints();
    static void on_peer_error(void* arg, ucp_ep_h ep, ucs_status_t status);
    struct PeerArg {
        UcxTransport* self;
        int peer;
    };
    std::vector<PeerArg> peer_args_;
    std::vector<int> peer_pid_;  // 0 for peers on other hosts
    void check_peer(int peer) const;
    // A receive must get exactly the bytes it was posted for.
    static void check_length(int peer, size_t got, size_t expected);

    Bootstrap& boot_;
    int rank_ = 0;
    int size_ = 0;
    ucp_context_h context_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    bool device_memory_ = false;
    std::vector<ucp_ep_h> eps_;
    // Set by UCX's error callback when a peer fails (0 = healthy).
    std::vector<std::atomic<int>> peer_status_;
};

}  // namespace chorus::net
