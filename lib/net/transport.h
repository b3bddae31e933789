// The contract between the executor and the wire, by ability.
//
// Every transport moves messages (Transport): tagged, nonblocking,
// point-to-point transfers between the ranks of one communicator, and
// notices. A transfer is posted with send()/recv() and returns a handle;
// nullptr means it completed at once. test() reports completion of a handle
// (and releases it when it returns true) or throws Error naming the peer.
// progress() lets the transport move data. Messages match on (source, tag)
// exactly; a receive must be posted with the exact size the sender sends.
//
// Some transports offer more, each ability a small interface of its own that
// the transport hands out (null where it has not got it, the same on every
// rank: decided at creation):
//   PublishSlots  slots in memory every rank of the communicator maps (all on
//                 this host): the small collectives' rounds;
//   PeerMemory    single-copy reads and writes of a peer's memory (all on
//                 this host: cross-memory attach);
//   KeyedMemory   remote memory access with registration keys (UCX RMA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace chorus::net {

using Tag = uint64_t;
using Handle = void*;

// Publish slots, when every rank of the communicator shares one host's
// memory. Small collectives number their slot operations 0, 1, 2, ... (the
// same on every rank; a schedule of slot rounds takes one number per round);
// operation n uses each rank's slot n % kSlots, which a rank may write once
// every rank has completed operation n - kSlots (slot_free). Its
// contribution is in once it calls publish(n); a peer reads it after
// published(peer, n). slot_done(n) says this rank is done with operation n
// (in any order: the count advances over the finished prefix).
class PublishSlots {
public:
    static constexpr uint64_t kSlots = 8;
    virtual ~PublishSlots() = default;
    // The room in a slot, and the first offset in it that starts a cache
    // line (a pipelined schedule puts its chunks there).
    virtual size_t slot_bytes() const = 0;
    virtual size_t slot_line() const = 0;
    virtual char* slot(int rank, uint64_t n) = 0;
    virtual bool slot_free(uint64_t n) = 0;
    virtual void publish(uint64_t n) = 0;
    virtual bool published(int rank, uint64_t n) = 0;
    virtual void slot_done(uint64_t n) = 0;
    // The memory the slots live in (a device registers it to read slots).
    virtual void slot_memory(void** base, size_t* bytes) const = 0;
};

// Single-copy access to peers' memory, when every rank of the communicator
// is on this host and one process may read and write another's memory.
// get() copies `bytes` at address `remote` of `peer`'s memory into `dst`,
// put() copies `src` there; both return when the copy is done and throw
// Error (CHORUS_ERR_PEER_FAILED when the peer is gone).
//
// Memory that the host's ranks map into each other (chorus_mem_alloc; see
// shm/mapped.h) is reached without a copy through the kernel: a region in
// it has a reference (mapped_here()), which its owner sends, and with which
// a peer finds where it sees the region (map_peer(): its allocation's
// start, or null when it cannot map it, and then copies by get()/put());
// unmap_peer() lets go of a peer's allocation (a window deregistered).
struct MappedRef {
    uint64_t serial = 0;  // the allocation's, never reused by its process
    uint64_t fd = 0;      // its memory file in the owner's process
    uint64_t offset = 0;  // of the region in the allocation
    uint64_t size = 0;    // of the allocation
};
class PeerMemory {
public:
    virtual ~PeerMemory() = default;
    virtual void get(int peer, void* dst, uint64_t remote, size_t bytes) = 0;
    virtual void put(int peer, uint64_t remote, const void* src, size_t bytes) = 0;
    virtual bool mapped_here(const void* addr, size_t bytes, MappedRef* ref) = 0;
    virtual char* map_peer(int peer, const MappedRef& ref) = 0;
    virtual void unmap_peer(int peer, uint64_t serial) = 0;
};

// Remote memory access with registration keys (UCX RMA: RDMA between hosts,
// UCX's own single-copy transports inside one), when every rank may reach
// every other's registered memory. rma_register() registers a region (a
// cache keeps registrations across calls; one whose memory the program
// unmaps is dropped) and writes the key a peer needs into `key` (room for
// kMaxKey bytes); it returns the key's bytes, or 0 when the region cannot be
// registered (its data then travels as messages), and sets `*region`, which
// rma_release() gives back once the peers are done. rma_get() and rma_put()
// return a handle that the transport's test() completes once the data has
// landed (a put: in the peer's memory), or nullptr if it already has; they
// throw Error (CHORUS_ERR_PEER_FAILED when the peer is gone).
class KeyedMemory {
public:
    static constexpr size_t kMaxKey = 512;
    virtual ~KeyedMemory() = default;
    virtual size_t rma_register(void* addr, size_t bytes, void* key, uint64_t* region) = 0;
    virtual void rma_release(uint64_t region) = 0;
    virtual Handle rma_get(int peer, void* dst, uint64_t remote, size_t bytes, const void* key, size_t key_bytes) = 0;
    virtual Handle rma_put(int peer, uint64_t remote, const void* src, size_t bytes, const void* key,
                           size_t key_bytes) = 0;
};

class Transport {
public:
    static constexpr uint64_t kSlots = PublishSlots::kSlots;
    static constexpr size_t kMaxKey = KeyedMemory::kMaxKey;

    virtual ~Transport() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;

    virtual Handle send(int peer, Tag tag, const void* buf, size_t bytes) = 0;
    virtual Handle recv(int peer, Tag tag, void* buf, size_t bytes) = 0;
    // True when the transfer is complete (the handle is then released). A
    // receive may copy its data here (shared memory's rendezvous, a few per
    // progress() call), so callers progress between rounds of tests.
    virtual bool test(Handle handle) = 0;
    // Abandon a transfer that will not complete (after a failure). The
    // handle is released; wait_cancelled() then waits (a bounded time) until
    // the transport touches the abandoned transfers' buffers no more.
    virtual void cancel(Handle handle) = 0;
    virtual void wait_cancelled() {}
    // Move data; returns true if anything happened.
    virtual bool progress() = 0;
    // An operation's steps are all done here; before it may complete, what
    // this rank still owes its peers must have left: a rendezvous
    // acknowledgement or data waiting behind a full queue, which only this
    // rank's progress sends. Once the operation completes, the rank may leave
    // the library for a long time (into a blocking MPI call that waits for
    // the very peer that waits for that acknowledgement). Called on every
    // pass until it returns true; it must not block.
    virtual bool settled() { return true; }
    // Look for peers that died (called when an operation has been idle a
    // while); their transfers then fail with CHORUS_ERR_PEER_FAILED.
    virtual void check_peers() {}
    // Ranks of this communicator on this host, this one included.
    virtual int local_ranks() const { return 1; }
    // Each rank's host as a label (equal labels: one host), the same on
    // every rank (from the bootstrap's exchange); empty: all on one host.
    virtual std::vector<int> host_labels() const { return {}; }
    // Whether send() and recv() take CUDA device memory (otherwise the
    // executor stages it through pinned host buffers).
    virtual bool device_memory() const { return false; }
    // Transfers of at most this many bytes need host memory even when
    // device_memory() is true (they are copied by the CPU).
    virtual size_t host_only_max() const { return 0; }
    // Name for messages: "ucx", "loopback".
    virtual const char* name() const = 0;

    // Notices: a short text (at most kMaxNotice bytes) that one rank sends
    // another outside any operation, such as a failure every rank must learn
    // of at once. notify() never blocks and never throws; a notice that
    // cannot be delivered is dropped. poll_notice() returns one that has
    // arrived, with its sender.
    virtual void notify(int peer, const std::string& notice) = 0;
    virtual bool poll_notice(int* source, std::string* notice) = 0;
    // Progress the notices sent so far until they have left (a connection
    // may have to be made first), for at most `ms` milliseconds: this rank
    // may not come back to the library for a long time.
    virtual void flush_notices(int ms) { (void)ms; }

    // The abilities beyond messages (above), or null.
    virtual PublishSlots* slots() { return nullptr; }
    virtual PeerMemory* peer_memory() { return nullptr; }
    virtual KeyedMemory* keyed_memory() { return nullptr; }
};

constexpr size_t kMaxNotice = 1024;

// The count a rank publishes with slot_done(): slot operations may finish
// out of order, and the count covers the prefix that has all finished.
class SlotCount {
public:
    // Operation n has finished; returns the new count.
    uint64_t finish(uint64_t n) {
        if (n >= count_ && n - count_ < 64) early_ |= uint64_t(1) << (n - count_);
        while (early_ & 1) {
            early_ >>= 1;
            ++count_;
        }
        return count_;
    }
    uint64_t count() const { return count_; }

private:
    uint64_t count_ = 0;
    uint64_t early_ = 0;  // bit k: operation count_ + k has finished
};

// Wire tags: the source rank, the operation's sequence number and the
// algorithm's own tag for the message, so that concurrent operations on one
// communicator never match each other's messages.
constexpr int kTagSourceBits = 20;
constexpr int kTagSeqBits = 16;
constexpr int kTagStepBits = 28;
constexpr int kMaxRanks = 1 << kTagSourceBits;

// The sequence number that no operation uses: the tag of notices.
constexpr uint64_t kNoticeSeq = (uint64_t(1) << kTagSeqBits) - 1;
// Operations are numbered in order, skipping the notices' number.
inline uint64_t next_operation_seq(uint64_t seq) {
    ++seq;
    return (seq & kNoticeSeq) == kNoticeSeq ? seq + 1 : seq;
}

inline Tag make_tag(int source, uint64_t seq, uint32_t step_tag) {
    return (static_cast<Tag>(source) << (kTagSeqBits + kTagStepBits)) |
           ((seq & ((1u << kTagSeqBits) - 1)) << kTagStepBits) | step_tag;
}

}  // namespace chorus::net
