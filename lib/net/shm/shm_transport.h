// Small messages between ranks on one host through shared memory, bigger
// ones and other hosts through another transport (UCX).
//
// Each rank owns one receive segment with a ring of slots per local sender.
// A sender copies a message of at most eager_bytes into its next slots in
// the receiver's ring, a fragment of up to kSlotPayload bytes per slot, and
// raises each slot's flag; the receiver, in progress(), takes fragments in
// order, matches a message's first fragment with a posted receive on
// (source, tag) and copies the fragments straight into its buffer (or keeps
// the message until it is asked for). Sender and receiver copy at the same
// time, fragment by fragment. A send completes as soon as its last fragment
// is in the ring (fragments wait in order behind a full ring). Both sides
// choose the path from the size alone, which they agree on (a receive is
// posted with the exact size the sender sends).
//
// This is what the MPI libraries' shared-memory transports do for latency: a
// message is one copy in, one copy out and two cache-line handoffs, with no
// library request or worker in between.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "net/bootstrap.h"
#include "net/transport.h"

namespace chorus::net {

class ShmTransport final : public Transport {
public:
    // Segment geometry: slots per (sender, receiver) ring and payload bytes
    // per slot (the largest message that goes through shared memory).
    static constexpr size_t kSlots = 16;
    static constexpr size_t kSlotPayload = 4096;
    // The largest eager_bytes: beyond, UCX's single copy (CMA) wins.
    static constexpr size_t kMaxEager = 256 * 1024;
    // Bytes of one receive segment for `local` senders.
    static size_t segment_bytes(int local);
    // Prepare `mem` (segment_bytes(local) bytes) as an empty segment.
    static void init_segment(void* mem, int local);

    // Finds the ranks on this host, creates and maps the segments (unlinked
    // as soon as every local rank has mapped them), and wraps `inner`.
    // Collective over `boot`.
    static std::unique_ptr<Transport> create(Bootstrap& boot, std::unique_ptr<Transport> inner, size_t eager_bytes);

    // From parts (tests: several ranks in one process). `local_index[r]` is
    // r's index among the ranks on this host, or -1; `segments[r]` is local
    // rank r's receive segment (mapped here); `pids[r]` its process id, or 0
    // when liveness is not to be checked.
    ShmTransport(std::unique_ptr<Transport> inner, size_t eager_bytes, std::vector<int> local_index,
                 std::vector<void*> segments, std::vector<int> pids, std::vector<size_t> mapped_bytes = {});
    ~ShmTransport() override;
    ShmTransport(const ShmTransport&) = delete;
    ShmTransport& operator=(const ShmTransport&) = delete;

    int rank() const override { return inner_->rank(); }
    int size() const override { return inner_->size(); }
    Handle send(int peer, Tag tag, const void* buf, size_t bytes) override;
    Handle recv(int peer, Tag tag, void* buf, size_t bytes) override;
    bool test(Handle handle) override;
    void cancel(Handle handle) override;
    bool progress() override;
    void check_peers() override;
    void settle() override;
    int local_ranks() const override { return inner_->local_ranks(); }
    bool device_memory() const override { return inner_->device_memory(); }
    size_t host_only_max() const override { return eager_; }
    const char* name() const override { return inner_->name(); }

private:
    struct Request;
    struct Message {
        Tag tag;
        std::vector<char> data;
        bool complete = false;
        struct Request* waiter = nullptr;  // a receive posted while it arrives
    };
    // The message whose fragments are arriving from one source.
    struct Incoming {
        bool active = false;
        size_t total = 0, got = 0;
        char* dst = nullptr;                 // where fragments go (null: discarded)
        struct Request* req = nullptr;       // the receive it completes, or
        Message* msg = nullptr;              // the unexpected message it fills
    };
    struct Peer {
        int local = -1;            // index among this host's ranks, -1 elsewhere
        void* ring_out = nullptr;  // my ring in the peer's segment
        void* ring_in = nullptr;   // the peer's ring in my segment
        uint64_t next_out = 0, next_in = 0;
        std::deque<Request*> waiting_sends;  // behind a full ring, in order
        std::vector<Request*> posted;        // receives not matched yet
        std::list<Message> unexpected;       // messages not asked for yet
        Incoming in;
        bool dead = false;
        int pid = 0;
    };
    bool small(int peer, size_t bytes) const { return bytes <= eager_ && peers_[peer].local >= 0; }
    // Put fragments of a message, from byte *sent on, while slots are free;
    // true once the whole message is in the ring.
    bool put(Peer& p, Tag tag, const void* buf, size_t bytes, size_t* sent);
    void finish_incoming(Peer& p);
    bool poll_in(int source);
    Request* new_request();
    Handle wrap(Handle inner, int peer);  // an inner transport's transfer
    void free_request(Request* r);
    [[noreturn]] void peer_failed(int peer) const;

    std::unique_ptr<Transport> inner_;
    size_t eager_;
    std::vector<Peer> peers_;
    std::vector<int> local_sources_;  // ranks with a ring into this one
    std::vector<void*> mapped_;       // segments to unmap (create() only)
    std::vector<size_t> mapped_bytes_;
    std::vector<Request*> spare_;
    size_t inner_pending_ = 0;  // the inner transport's transfers in flight
    bool inner_used_ = false;   // since the last settle()
    unsigned calls_ = 0;
};

}  // namespace chorus::net
