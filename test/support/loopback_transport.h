// N virtual ranks inside one process, for tests: every algorithm runs at many
// rank counts without mpirun. A LoopbackHub holds the message queues; each
// rank talks through its own LoopbackTransport. Thread-safe, so ranks may be
// threads, but the usual driver is a single thread that progresses every
// rank's executor in turn (see test/loopback_driver.h).
//
// The data is copied into the matching posted receive or into a queue of
// unexpected messages. Faults can be injected: a killed
// rank's peers see CHORUS_ERR_PEER_FAILED on transfers with it.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/transport.h"

namespace chorus::net {

class LoopbackHub {
public:
    // With `rendezvous`, a send completes only once a matching receive has
    // taken it (like UCX's rendezvous protocol), which exposes schedules that
    // rely on sends completing early; otherwise sends complete at once.
    explicit LoopbackHub(int size, bool rendezvous = false);
    int size() const { return size_; }
    // Mark a rank dead: its pending and future transfers fail on its peers.
    void kill(int rank);
    bool dead(int rank) const;
    // Tests with emulated device memory: `is_device` tells device pointers.
    // With `direct`, the transport claims to take device memory (it is host
    // memory underneath); without, a device pointer reaching send() or
    // recv() is an error (the executor failed to stage it).
    // Publish slots of `bytes` each, as shared memory would give them
    // (Transport's publish slots), for every rank.
    void enable_slots(size_t bytes);
    // Single-copy access to peers' memory (Transport::one_sided()), as
    // cross-memory attach gives it: get() and put() copy between the ranks'
    // buffers (one address space here). Reaching device memory that way is
    // an error (the executor must send it instead), and so is a dead peer.
    void enable_one_sided() { one_sided_ = true; }
    // With single-copy access, every host buffer is also memory the ranks
    // map into each other (PeerMemory::mapped_here): its reference is its
    // address, which map_peer() gives back; copies through such mappings
    // are counted apart (mapped_bytes()).
    void enable_mapped() { mapped_ = true; }
    size_t mapped_bytes() const { return mapped_bytes_; }
    // Keyed access to peers' memory (Transport::rma()), as UCX RMA gives it
    // between hosts: a region is registered and its key (here the
    // registration's number) sent; rma_get() and rma_put() check that the
    // key is the peer's and covers the range, and complete on the second
    // test() of their handle (so the executor meets transfers in flight).
    void enable_rma() { rma_ = true; }
    // Registrations made, and those not yet released.
    size_t rma_registered() const;
    size_t rma_held() const;
    // Bytes copied by get() and put(), or rma_get() and rma_put(), so far.
    size_t one_sided_bytes() const { return one_sided_bytes_; }
    // Publish flags read so far (Transport::published), by every rank.
    size_t flag_reads() const { return flag_reads_; }
    // Emulated hosts: rank r on the host labelled labels[r] (as the
    // bootstrap would report them; the ranks still share this process).
    void emulate_hosts(std::vector<int> labels) { host_labels_ = std::move(labels); }
    void emulate_device(std::function<bool(const void*)> is_device, bool direct) {
        is_device_ = std::move(is_device);
        direct_ = direct;
    }

private:
    friend class LoopbackTransport;
    struct Pending {
        int source;
        Tag tag;
        void* buf;
        size_t bytes;
        struct Slot* slot;
    };
    struct Unexpected {
        int source;
        Tag tag;
        std::vector<char> data;
        struct Slot* sender;  // rendezvous: completed when matched
    };
    struct Mailbox {
        std::list<Pending> posted;
        std::deque<Unexpected> unexpected;
    };
    int size_;
    bool rendezvous_;
    mutable std::mutex mutex_;
    std::vector<Mailbox> boxes_;
    std::vector<std::deque<std::pair<int, std::string>>> notices_;
    // Publish slots: rank r's slot k at slots_ + (r * kSlots + k) * slot_bytes_.
    size_t slot_bytes_ = 0;
    std::unique_ptr<char[]> slots_;
    std::unique_ptr<std::atomic<uint64_t>[]> published_;  // per rank and slot: operation + 1
    std::unique_ptr<std::atomic<uint64_t>[]> done_;       // per rank
    std::vector<bool> dead_;
    std::function<bool(const void*)> is_device_;
    bool direct_ = false;
    bool one_sided_ = false;
    bool mapped_ = false;
    std::atomic<size_t> mapped_bytes_{0};
    bool rma_ = false;
    struct Registration {
        int owner;
        uintptr_t begin, end;
        bool held;
    };
    std::vector<Registration> registrations_;  // key k: registrations_[k - 1]
    std::atomic<size_t> one_sided_bytes_{0};
    std::atomic<size_t> flag_reads_{0};
    std::vector<int> host_labels_;
};

class LoopbackTransport final : public Transport, public PublishSlots, public PeerMemory, public KeyedMemory {
public:
    LoopbackTransport(std::shared_ptr<LoopbackHub> hub, int rank);
    ~LoopbackTransport() override;
    int rank() const override { return rank_; }
    int size() const override { return hub_->size(); }
    Handle send(int peer, Tag tag, const void* buf, size_t bytes) override;
    Handle recv(int peer, Tag tag, void* buf, size_t bytes) override;
    bool test(Handle handle) override;
    void cancel(Handle handle) override;
    bool progress() override { return false; }
    const char* name() const override { return "loopback"; }
    void notify(int peer, const std::string& notice) override;
    bool poll_notice(int* source, std::string* notice) override;
    PublishSlots* slots() override { return hub_->slot_bytes_ ? this : nullptr; }
    size_t slot_bytes() const override { return hub_->slot_bytes_; }
    size_t slot_line() const override { return 0; }
    char* slot(int rank, uint64_t n) override;
    bool slot_free(uint64_t n) override;
    void publish(uint64_t n) override;
    bool published(int rank, uint64_t n) override;
    void slot_done(uint64_t n) override;
    void slot_memory(void** base, size_t* bytes) const override;
    bool device_memory() const override { return hub_->direct_; }
    PeerMemory* peer_memory() override { return hub_->one_sided_ ? this : nullptr; }
    void get(int peer, void* dst, uint64_t remote, size_t bytes) override;
    void put(int peer, uint64_t remote, const void* src, size_t bytes) override;
    bool mapped_here(const void* addr, size_t bytes, MappedRef* ref) override;
    char* map_peer(int peer, const MappedRef& ref) override;
    void unmap_peer(int, uint64_t) override {}
    KeyedMemory* keyed_memory() override { return hub_->rma_ ? this : nullptr; }
    size_t rma_register(void* addr, size_t bytes, void* key, uint64_t* region) override;
    void rma_release(uint64_t region) override;
    Handle rma_get(int peer, void* dst, uint64_t remote, size_t bytes, const void* key, size_t key_bytes) override;
    Handle rma_put(int peer, uint64_t remote, const void* src, size_t bytes, const void* key,
                   size_t key_bytes) override;
    std::vector<int> host_labels() const override { return hub_->host_labels_; }

private:
    void check_host(const void* buf, const char* what) const;
    Handle rma(int peer, void* dst, const void* src, uint64_t remote, size_t bytes, const void* key, size_t key_bytes,
               bool is_get);
    std::shared_ptr<LoopbackHub> hub_;
    int rank_;
    SlotCount done_;
};

}  // namespace chorus::net
