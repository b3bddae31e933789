// Point-to-point messages between two ranks of a communicator (chorus_send,
// chorus_recv and their nonblocking twins), beside the collectives and
// never in their way: p2p traffic has a tag space of its own and takes no
// operation sequence number, so only the two ranks involved call.
//
// A message is an envelope (the user's tag and the size in bytes) and, when
// it has bytes, the data, as two transfers numbered by a per-direction
// message counter: message n from rank s to rank d travels under
// p2p_tag(s, envelope/data, n). The sender copies the data into memory of
// its own first, so a send is complete, and its buffer free, as soon as it
// is posted, whatever the receiver does; its transfers finish in the
// background, progressed by every later call on the communicator and waited
// for at chorus_comm_destroy. The receiver asks for envelopes from a peer
// while a receive from it is waiting, in the order they were sent, and
// matches each with the earliest waiting receive of its tag; an envelope no
// receive wants yet is kept (announced), its data left with the transport
// (and the sender's copy) until a receive asks for it. So messages of one
// (peer, tag) arrive in the order they were sent, and any other tag may be
// received first. A receive whose size differs from the message's fails
// with CHORUS_ERR_MISMATCH; the data is then taken and dropped.
//
// Device buffers are staged through pinned host memory from the
// communicator's device: a send copies device to host before it is posted,
// a receive lands in host memory and is copied to the device at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chorus.h"
#include "exec/device.h"
#include "net/transport.h"

namespace chorus {

// The wire tags of point-to-point messages: the top bit of the source field
// set (collectives' sources are below it), the message number in the
// sequence field (never the notices' value) and the step field, a bit for
// envelope or data. Ranks at or above kP2pMaxRanks cannot be told apart
// from this bit: such communicators have no point-to-point.
constexpr int kP2pMaxRanks = net::kMaxRanks / 2;
inline net::Tag p2p_tag(int source, bool data, uint64_t n) {
    constexpr int kNumberBits = net::kTagStepBits - 1;
    const uint64_t seq = (n >> kNumberBits) % net::kNoticeSeq;
    const uint32_t step = (data ? uint32_t(1) << kNumberBits : 0) | uint32_t(n & ((uint64_t(1) << kNumberBits) - 1));
    return net::make_tag(source + kP2pMaxRanks, seq, step);
}

// One send or receive, as a C API request sees it.
struct P2pRequest {
    bool is_send = false;
    int peer = 0;
    int tag = 0;
    size_t bytes = 0;
    size_t count = 0;
    chorus_datatype_t dtype = CHORUS_UINT8;
    void* user = nullptr;  // a receive's buffer
    MemKind kind = MemKind::Host;
    bool finished = false;
    chorus_result_t result = CHORUS_SUCCESS;
    std::string error;
    // A receive once matched: its data in flight, then (device) copied in.
    net::Handle data = nullptr;
    void* staging = nullptr;                      // pinned host memory for a device buffer
    uint64_t mark = 0;                            // the copy to the device queued
    std::chrono::steady_clock::time_point since;  // last progress (idle checks)
    bool warned = false;
};

class PointToPoint {
public:
    // The owner calls abandon() before the transport and the device go.
    PointToPoint(net::Transport& transport, Device& device);
    PointToPoint(const PointToPoint&) = delete;
    PointToPoint& operator=(const PointToPoint&) = delete;

    // Start a send of `bytes` from `buf` (`kind` memory): copied, posted,
    // and finished on return. Throws Error when it cannot start.
    P2pRequest* send(const void* buf, size_t count, chorus_datatype_t dtype, size_t bytes, MemKind kind, int peer,
                     int tag);
    // Start a receive into `buf`; it finishes in progress().
    P2pRequest* recv(void* buf, size_t count, chorus_datatype_t dtype, size_t bytes, MemKind kind, int peer, int tag);
    // Forget a finished request.
    void release(P2pRequest* r);

    // Move every transfer. True if anything moved. A transfer that fails
    // fails what depends on it (the receives from its peer) and is recorded
    // for take_failure().
    bool progress();
    // The first failure progress() met since the last call, if any.
    bool take_failure(chorus_result_t* code, std::string* why);
    // Whether anything is outstanding: sends still in flight, receives not
    // finished, data being dropped.
    bool busy() const { return !out_.empty() || !drops_.empty() || waiting_ > 0; }
    // Whether data is moving: sends in flight, receives whose message has
    // arrived, data being dropped (what teardown completes; a receive that
    // no message has come for yet is abandoned then).
    bool delivering() const { return !out_.empty() || !drops_.empty() || !receiving_.empty(); }
    // Fail every unfinished receive (from `peer` only, when >= 0).
    void fail_receives(int peer, chorus_result_t code, const std::string& why);
    // Abandon every transfer (after a failure, or at teardown): nothing is
    // sent or received any more, and the buffers are no longer touched.
    void abandon();

    // Idle checks, from the communicator's: look for dead peers after a
    // quarter second without progress, warn once per receive idle for
    // `warn_s` seconds, and time out after `timeout_ms` (0: never) the
    // receives (and, with `sends`, warn of and time out the sends still in
    // flight: at teardown, which waits for them).
    // `where` names the communicator. A timeout fails what timed out and is
    // recorded for take_failure().
    void check(uint64_t timeout_ms, uint64_t warn_s, bool sends, const std::string& where);
    // Progress was made: idle times restart.
    void moved();

private:
    struct Envelope {
        int64_t tag;
        uint64_t bytes;
    };
    // A message whose envelope has arrived and that no receive has asked
    // for yet. A message to this rank itself carries its data along.
    struct Announced {
        uint64_t n;
        int tag;
        uint64_t bytes;
        std::unique_ptr<char[]> local;
    };
    struct Inbox {
        uint64_t next = 0;  // the number of the next envelope from this peer
        Envelope env{};
        net::Handle posted = nullptr;  // the receive of envelope `next`
        bool armed = false;            // `posted` is in flight
        std::deque<Announced> announced;
        std::deque<P2pRequest*> waiting;  // receives with no message yet, in order
    };
    // A send in flight: its envelope and the copy of its data.
    struct Outgoing {
        int peer;
        uint64_t n;
        Envelope env;
        std::unique_ptr<char[]> copy;
        void* pinned = nullptr;
        net::Handle env_h = nullptr, data_h = nullptr;
        std::chrono::steady_clock::time_point since;
        bool warned = false;
    };
    // Data of a mismatched message, taken and dropped.
    struct Drop {
        int peer;
        std::unique_ptr<char[]> buf;
        net::Handle h;
    };

    // A new request (a spare one reused), owned by requests_.
    P2pRequest* make(bool is_send, size_t count, chorus_datatype_t dtype, size_t bytes, MemKind kind, int peer,
                     int tag);
    // Ask for envelopes from `peer` while receives wait for one.
    void arm(int peer, Inbox& in);
    void arrived(int peer, Inbox& in, Announced a);
    // Start receiving the data of `a` into `r`.
    void take(P2pRequest* r, Announced& a);
    void landed(P2pRequest* r);
    void finish(P2pRequest* r, chorus_result_t code = CHORUS_SUCCESS, const std::string& why = std::string());
    // End the unfinished receive `r` with an error (described): taken off
    // its inbox, its data's transfer cancelled.
    void end(P2pRequest* r, chorus_result_t code, const std::string& why);
    // A transfer with `peer` (-1: any) failed: every transfer with it is
    // cancelled and its receives fail.
    void peer_failed(int peer, chorus_result_t code, const std::string& why);
    void record(chorus_result_t code, const std::string& why);
    std::string describe(const P2pRequest& r) const;

    net::Transport& transport_;
    Device& device_;
    int rank_;
    std::unordered_map<int, uint64_t> sent_;  // messages sent to each peer
    std::unordered_map<int, Inbox> inboxes_;
    std::list<Outgoing> out_;
    std::list<Drop> drops_;
    std::vector<P2pRequest*> receiving_;  // matched, data in flight or being copied in
    std::vector<std::unique_ptr<P2pRequest>> requests_;
    std::vector<std::unique_ptr<P2pRequest>> spare_;
    size_t waiting_ = 0;  // receives not finished
    chorus_result_t failure_ = CHORUS_SUCCESS;
    std::string failure_why_;
    std::chrono::steady_clock::time_point last_peer_check_;
};

}  // namespace chorus
