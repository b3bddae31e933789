// The bootstrap over an exchange the caller supplies (chorus_oob_t: a
// fixed-size allgather, e.g. over torch's c10d Store under torchrun, where
// nobody calls MPI_Init). Blobs of different lengths travel in two calls:
// every rank's length (with its rank and the size it was given, checked
// against its place), then every blob padded to the longest. The callback
// is only valid while chorus_comm_create_oob runs: a communicator keeps no
// OobBootstrap.
#pragma once

#include <cstdint>

#include "chorus.h"
#include "net/bootstrap.h"

namespace chorus::net {

class OobBootstrap final : public Bootstrap {
public:
    // `oob` has been checked (a callback, 0 <= rank < size).
    explicit OobBootstrap(const chorus_oob_t& oob) : oob_(oob) {}

    int rank() const override { return oob_.rank; }
    int size() const override { return oob_.size; }
    // Throws Error(CHORUS_ERR_TRANSPORT) when the callback fails on this
    // rank (and calls it no more), CHORUS_ERR_INVALID_ARGUMENT on every rank
    // when the ranks' rank and size do not fit together.
    std::vector<std::string> allgather(const std::string& mine) override;
    bool all(bool mine) override;
    // The callback blocks: `progress` is called before and after it only.
    void barrier(const std::function<void()>& progress) override;

private:
    // One call of the callback; throws if it fails (then, or earlier).
    void exchange(const void* send, void* recv, size_t bytes);

    chorus_oob_t oob_;
    uint64_t calls_ = 0;   // callbacks made, for messages
    bool failed_ = false;  // a callback failed: no more calls
};

}  // namespace chorus::net
