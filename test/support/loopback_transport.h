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

#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
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
    std::vector<bool> dead_;
    std::function<bool(const void*)> is_device_;
    bool direct_ = false;
};

class LoopbackTransport final : public Transport {
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
    bool device_memory() const override { return hub_->direct_; }

private:
    void check_host(const void* buf, const char* what) const;
    std::shared_ptr<LoopbackHub> hub_;
    int rank_;
};

}  // namespace chorus::net
