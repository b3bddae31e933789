// Small messages between ranks on one host through shared memory (Chorus's
// own, one segment per communicator: shm_segment.h), bigger ones and other
// hosts through another transport (UCX); and the publish slots of the small
// collectives when every rank of the communicator is on this host.
//
// A sender copies a message of at most eager_bytes into cells of the
// receiver's inbound queue, a fragment of up to kCellPayload bytes per cell,
// and hands each cell over; the receiver, in progress(), takes cells in
// order (fragments of different senders may interleave: each sender's are in
// order), matches a message's first fragment with a posted receive on
// (source, tag) and copies the fragments straight into its buffer (or keeps
// the message until it is asked for). A send completes as soon as its last
// fragment is in the queue (fragments wait in order behind a full queue).
// Both sides choose the path from the size alone, which they agree on (a
// receive is posted with the exact size the sender sends).
//
// Larger messages between ranks of this host go by rendezvous when every
// local rank may read every other's memory (cross-memory attach, shm/cma.h):
// the sender puts one cell (a Rendezvous: the data's address, an
// acknowledgement word of its own in the segment and a token); the receiver,
// once its receive is posted, reads the data straight into its buffer (one
// copy) and stores the token in that word; the send completes when the
// sender sees it. The receiver owes nothing once its receive is complete, so
// a rank may leave the library right after an operation, and its peers'
// sends still complete (over UCX a rendezvous send waits for an
// acknowledgement that only the receiver's progress sends).
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
#include "net/shm/mapped.h"
#include "net/shm/shm_segment.h"
#include "net/transport.h"

namespace chorus::net {

class ShmTransport final : public Transport, public PublishSlots, public PeerMemory, public KeyedMemory {
public:
    // The largest eager_bytes: beyond, UCX's single copy (CMA) wins.
    static constexpr size_t kMaxEager = 256 * 1024;

    // Finds the ranks on this host, creates the segment (its first local
    // rank does), maps it on every local rank (unlinked as soon as every
    // local rank has), and wraps `inner`. Collective over `boot`.
    // With `rendezvous`, larger messages between local ranks go by the
    // rendezvous above where every local rank may read every other's memory
    // and the inner transport takes no device memory.
    // With `one_sided` false, get() and put() are not offered even then.
    static std::unique_ptr<Transport> create(Bootstrap& boot, std::unique_ptr<Transport> inner, size_t eager_bytes,
                                             bool rendezvous = true, bool one_sided = true);

    // From parts (tests: several ranks in one process). `local_index[r]` is
    // r's index among the ranks on this host, or -1; `segment` is the host's
    // segment (Segment::init'ed for as many ranks as have an index), mapped
    // here; `pids[r]` r's process id, or 0 when liveness is not to be checked.
    // With `mapped_bytes`, the transport unmaps the segment when destroyed.
    ShmTransport(std::unique_ptr<Transport> inner, size_t eager_bytes, std::vector<int> local_index, void* segment,
                 std::vector<int> pids, size_t mapped_bytes = 0);
    ~ShmTransport() override;
    ShmTransport(const ShmTransport&) = delete;
    ShmTransport& operator=(const ShmTransport&) = delete;

    int rank() const override { return inner_->rank(); }
    int size() const override { return inner_->size(); }
    Handle send(int peer, Tag tag, const void* buf, size_t bytes) override;
    Handle recv(int peer, Tag tag, void* buf, size_t bytes) override;
    bool test(Handle handle) override;
    void cancel(Handle handle) override;
    void wait_cancelled() override { inner_->wait_cancelled(); }
    bool progress() override;
    void check_peers() override;
    bool settled() override;
    int local_ranks() const override { return inner_->local_ranks(); }
    std::vector<int> host_labels() const override { return inner_->host_labels(); }
    bool device_memory() const override { return inner_->device_memory(); }
    size_t host_only_max() const override { return eager_; }
    const char* name() const override { return inner_->name(); }
    // Notices go through the inner transport.
    void notify(int peer, const std::string& notice) override { inner_->notify(peer, notice); }
    bool poll_notice(int* source, std::string* notice) override { return inner_->poll_notice(source, notice); }
    void flush_notices(int ms) override { inner_->flush_notices(ms); }

    // The publish slots, when every rank of the communicator is on this host.
    PublishSlots* slots() override { return all_local_ ? this : nullptr; }
    size_t slot_bytes() const override { return all_local_ ? shm::kPubBytes : 0; }
    size_t slot_line() const override { return shm::kPubLine; }
    char* slot(int rank, uint64_t n) override { return areas_[rank]->slots[n % shm::kPubSlots].data; }
    bool slot_free(uint64_t n) override {
        // The peers' counts are read only when the last reading does not say
        // enough: in a steady stream of calls they are a few operations
        // ahead, so most calls touch no peer's line here.
        return n < shm::kPubSlots || free_through_ >= n - shm::kPubSlots + 1 || refresh_free(n - shm::kPubSlots + 1);
    }
    void publish(uint64_t n) override {
        areas_[me_]->slots[n % shm::kPubSlots].op.store(n + 1, std::memory_order_release);
    }
    bool published(int rank, uint64_t n) override {
        if (dead_ >= 0) peer_failed();
        shm::SlotArea* a = areas_[rank];
        if (a->slots[n % shm::kPubSlots].op.load(std::memory_order_acquire) != n + 1) return false;
        // The peer's next slot (its flag line and the next, 112 bytes of
        // data): in a loop of calls it is often in already, and arrives
        // while this operation goes on.
        const char* next = reinterpret_cast<const char*>(&a->slots[(n + 1) % shm::kPubSlots]);
        __builtin_prefetch(next);
        __builtin_prefetch(next + 64);
        return true;
    }
    void slot_done(uint64_t n) override { areas_[me_]->done.store(done_.finish(n), std::memory_order_release); }
    void slot_memory(void** base, size_t* bytes) const override;

    // Cross-memory attach (shm/cma.h), when create() found it works between
    // every pair of ranks, all on this host.
    PeerMemory* peer_memory() override { return one_sided_ ? this : nullptr; }
    // Single-copy access between the local ranks (their pids given): messages
    // past eager_bytes between them go by rendezvous (`rendezvous`), and
    // get()/put() work (`one_sided`: every rank is local). Every rank of the
    // communicator must say the same.
    void enable_single_copy(bool rendezvous, bool one_sided) {
        rendezvous_ = rendezvous;
        one_sided_ = one_sided;
    }
    void get(int peer, void* dst, uint64_t remote, size_t bytes) override;
    void put(int peer, uint64_t remote, const void* src, size_t bytes) override;
    // Memory the host's ranks map into each other (shm/mapped.h).
    bool mapped_here(const void* addr, size_t bytes, MappedRef* ref) override { return mapped::find(addr, bytes, ref); }
    char* map_peer(int peer, const MappedRef& ref) override;
    void unmap_peer(int peer, uint64_t serial) override { peer_maps_.drop(peers_[peer].pid, serial); }
    // Keyed access is the inner transport's (UCX RMA), its handles wrapped
    // so that this transport's test() completes them.
    KeyedMemory* keyed_memory() override { return inner_->keyed_memory() ? this : nullptr; }
    size_t rma_register(void* addr, size_t bytes, void* key, uint64_t* region) override {
        return inner_->keyed_memory()->rma_register(addr, bytes, key, region);
    }
    void rma_release(uint64_t region) override { inner_->keyed_memory()->rma_release(region); }
    Handle rma_get(int peer, void* dst, uint64_t remote, size_t bytes, const void* key, size_t key_bytes) override {
        return wrap(inner_->keyed_memory()->rma_get(peer, dst, remote, bytes, key, key_bytes), peer);
    }
    Handle rma_put(int peer, uint64_t remote, const void* src, size_t bytes, const void* key,
                   size_t key_bytes) override {
        return wrap(inner_->keyed_memory()->rma_put(peer, remote, src, bytes, key, key_bytes), peer);
    }

private:
    struct Request;
    struct Message {
        Tag tag;
        std::vector<char> data;
        bool complete = false;
        struct Request* waiter = nullptr;  // a receive posted while it arrives
        bool rendezvous = false;           // the data is still in the sender's memory:
        shm::Rendezvous rts{};             // where, and how to acknowledge it
        size_t total = 0;                  // of the whole message
    };
    // The message whose fragments are arriving from one source.
    struct Incoming {
        bool active = false;
        size_t total = 0, got = 0;
        char* dst = nullptr;            // where fragments go (null: discarded)
        struct Request* req = nullptr;  // the receive it completes, or
        Message* msg = nullptr;         // the unexpected message it fills
    };
    struct Peer {
        int local = -1;                      // index among this host's ranks, -1 elsewhere
        std::deque<Request*> waiting_sends;  // behind a full queue, in order
        std::vector<Request*> posted;        // receives not matched yet
        std::list<Message> unexpected;       // messages not asked for yet
        Incoming in;
        int pid = 0;
    };
    bool small(int peer, size_t bytes) const { return bytes <= eager_ && peers_[peer].local >= 0; }
    bool by_rendezvous(int peer, size_t bytes) const {
        return rendezvous_ && bytes > eager_ && peers_[peer].local >= 0;
    }
    // Put the Rendezvous cell of send `r` into its peer's queue; false while
    // the queue (or this rank's acknowledgement words) are full.
    bool put_rendezvous(Request* r);
    // Read a rendezvous message into `dst`, then acknowledge it.
    void take_rendezvous(int peer, const shm::Rendezvous& rts, void* dst, size_t bytes);
    void acknowledge(int peer, const shm::Rendezvous& rts);
    // The next cell of `peer`'s queue, claimed (its position in *position),
    // or null while the queue is full.
    shm::Cell* claim(int peer, uint64_t* position);
    // Put fragments of a message into `peer`'s queue, from byte *sent on,
    // while cells are free; true once the whole message is in.
    bool put(int peer, Tag tag, const void* buf, size_t bytes, size_t* sent);
    void finish_incoming(Peer& p);
    bool poll_queue();
    bool push_waiting();
    // An unexpected message of `total` bytes at the end of p.unexpected, on
    // a recycled node (and its data's capacity) where one is spare.
    Message& new_message(Peer& p, Tag tag, size_t total);
    // A taken message: a small one keeps its node and buffer, so that a
    // steady stream of them arriving before their receives allocates nothing.
    void drop_message(Peer& p, std::list<Message>::iterator it);
    Request* new_request();
    Handle wrap(Handle inner, int peer);  // an inner transport's transfer
    void free_request(Request* r);
    [[noreturn]] void peer_failed() const;
    // Reads every local rank's count of finished slot operations; whether
    // all have finished `need`.
    bool refresh_free(uint64_t need);

    std::unique_ptr<Transport> inner_;
    size_t eager_;
    shm::Segment seg_;
    int me_local_ = 0;
    bool all_local_ = false;  // every rank of the communicator is on this host
    bool one_sided_ = false;
    bool rendezvous_ = false;          // larger local messages by rendezvous
    std::vector<uint32_t> free_acks_;  // this rank's acknowledgement words not in use
    uint64_t next_token_ = 1;          // of the next rendezvous send
    std::vector<Peer> peers_;
    std::vector<int> local_ranks_;  // communicator ranks by local index
    uint64_t head_ = 0;             // the next cell of this rank's queue to take
    std::vector<int> blocked_;      // peers with sends waiting for free cells
    size_t mapped_bytes_ = 0;
    int dead_ = -1;  // a local rank found dead: shared memory can no longer be trusted
    SlotCount done_;
    int me_ = 0;                         // this rank
    std::vector<shm::SlotArea*> areas_;  // each rank's publish slots, by communicator rank (all local)
    uint64_t free_through_ = 0;          // every local rank has completed this many slot operations
    std::vector<Request*> spare_;
    std::list<Message> spare_messages_;  // nodes of taken unexpected messages, for reuse
    size_t inner_pending_ = 0;           // the inner transport's transfers in flight
    bool inner_used_ = false;            // since the inner transport last settled
    unsigned calls_ = 0;
    // Rendezvous reads test() may still make before the next progress(): one
    // a pass, so that a pass of the executor's tests does not read every
    // arrived piece before it reduces or forwards any (measured: a ring
    // all-reduce of 16 MiB at np=2 took 1.25x as long reading them all).
    int reads_left_ = 1;
    mapped::PeerMaps peer_maps_;  // the local ranks' allocations mapped here (after the hot members)
};

}  // namespace chorus::net
