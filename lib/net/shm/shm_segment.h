// The shared memory of a communicator's ranks on one host: one segment,
// mapped by each of its L local ranks, that holds per local rank
//  - an inbound queue of kCells cells, into which any local rank writes
//    point-to-point messages for it (a bounded multi-producer queue: a
//    sender claims a cell by advancing the queue's tail, fills it, then
//    hands it over by its turn number; the receiver takes cells in order);
//  - kPubSlots publish slots, where it puts its contribution to a small
//    collective for every local rank to read, and a count of the slot
//    operations it has completed (a slot is reused once every rank has);
//  - kAcks acknowledgement words of its rendezvous sends: a receiver that
//    has read a large message straight from the sender's memory stores the
//    send's token in one, and the sender's send is complete.
// The segment grows linearly with L: about 256 KiB of queue, 128 KiB of
// slots and 8 KiB of acknowledgements per rank. A waiting receiver looks at
// one cell of its own queue.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "net/transport.h"

namespace chorus::net::shm {

constexpr size_t kCells = 64;        // per inbound queue
constexpr size_t kCellBytes = 4096;  // a cell, header included
constexpr size_t kPubSlots = 8;      // slot operations in flight
constexpr size_t kPubBytes = 16432;  // payload of a publish slot: a size class of 8 KiB (to 16383 bytes) fits
constexpr size_t kAcks = 1024;       // rendezvous sends in flight per rank

// A cell: 32 bytes of header, then the payload, so a message of up to 32
// bytes is a single cache line handed from sender to receiver.
struct Cell {
    std::atomic<uint64_t> turn;  // = position + 1 when full; position + kCells when free again
    uint32_t source;             // the sender's rank in the communicator
    uint32_t bytes;              // of this fragment
    Tag tag;
    uint64_t total;  // of the whole message
};
constexpr size_t kCellPayload = kCellBytes - sizeof(Cell);
// In Cell::bytes: the cell holds a Rendezvous, not a fragment of data; the
// message (Cell::total bytes) stays in the sender's memory for the receiver
// to read (cross-memory attach, shm/cma.h).
constexpr uint32_t kRendezvousBit = 1u << 31;
struct Rendezvous {
    uint64_t address;  // of the data, in the sender's process
    uint64_t token;    // stored in the sender's acknowledgement word once read
    uint64_t ack;      // which of the sender's words
};
inline char* payload(Cell* c) {
    return reinterpret_cast<char*>(c + 1);
}

struct alignas(64) QueueHeader {
    std::atomic<uint64_t> tail;  // the next position to claim
};

// A publish slot: the flag and the first 48 bytes of data share a line.
struct alignas(64) PubSlot {
    std::atomic<uint64_t> op;  // slot operation n + 1 once its data is in
    uint64_t reserved;
    char data[kPubBytes];
};

// The first offset in a slot's data that starts a line.
constexpr size_t kPubLine = (64 - offsetof(PubSlot, data) % 64) % 64;

struct alignas(64) SlotArea {
    std::atomic<uint64_t> done;  // slot operations completed by this rank
    PubSlot slots[kPubSlots];
};

struct alignas(64) AckArea {
    std::atomic<uint64_t> word[kAcks];
};

class Segment {
public:
    static size_t bytes(int local);
    // Lay out an empty segment in `mem` (bytes(local) bytes, 64-aligned).
    static void init(void* mem, int local);
    Segment() = default;
    Segment(void* mem, int local) : base_(static_cast<char*>(mem)), local_(local) {}

    QueueHeader* queue(int i) const;
    Cell* cell(int i, uint64_t position) const;
    SlotArea* slots(int i) const;
    AckArea* acks(int i) const;
    char* base() const { return base_; }
    int local() const { return local_; }

private:
    char* base_ = nullptr;
    int local_ = 0;
};

}  // namespace chorus::net::shm
