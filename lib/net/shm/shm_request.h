// ShmTransport's request, shared by its send side (shm_transport.cc) and
// its receive side (shm_receive.cc). Private to the transport.
#pragma once

#include <cstdint>

#include "net/shm/shm_transport.h"

namespace chorus::net {

struct ShmTransport::Request {
    enum class Kind : uint8_t { Inner, Send, Recv } kind;
    bool done;
    int peer;
    Tag tag;
    const void* src;
    void* dst;
    size_t bytes, got;
    Handle inner;
    // A rendezvous send: its cell (rts) is in the peer's queue once `put`.
    // A rendezvous receive: its cell has arrived (rts), and test() reads the
    // data. The read waits for test(), not the cell's arrival: the executor
    // posts its own transfers before it tests, so that its peers may read
    // while it reads.
    bool rendezvous = false, put = false;
    shm::Rendezvous rts{};
};

constexpr uint64_t kNoAck = ~uint64_t(0);

}  // namespace chorus::net
