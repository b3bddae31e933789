#include "net/oob_bootstrap.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace chorus::net {

void OobBootstrap::exchange(const void* send, void* recv, size_t bytes) {
    if (failed_) fail(CHORUS_ERR_TRANSPORT, "the out-of-band allgather failed earlier on this rank");
    const uint64_t call = ++calls_;
    const int rc = oob_.allgather(send, recv, bytes, oob_.arg);
    if (rc != 0) {
        failed_ = true;
        fail(CHORUS_ERR_TRANSPORT, "the out-of-band allgather (call ", call, ", ", bytes, " bytes a rank) returned ",
             rc, " on rank ", oob_.rank, " of ", oob_.size);
    }
}

std::vector<std::string> OobBootstrap::allgather(const std::string& mine) {
    const auto p = static_cast<size_t>(oob_.size);
    // Round 1: (rank, size, length) of every rank, which also proves that
    // the callback puts each rank's bytes in its place.
    struct Head {
        uint64_t rank, size, length;
    };
    const Head head{static_cast<uint64_t>(oob_.rank), static_cast<uint64_t>(oob_.size), mine.size()};
    std::vector<Head> heads(p);
    exchange(&head, heads.data(), sizeof head);
    size_t longest = 0;
    for (size_t r = 0; r < p; ++r) {
        if (heads[r].rank != r || heads[r].size != p)
            fail(CHORUS_ERR_INVALID_ARGUMENT, "out-of-band allgather: the bytes at place ", r, " of ", p,
                 " came from a rank that says it is rank ", heads[r].rank, " of ", heads[r].size,
                 " (each rank passes its own rank and the same size, and the callback puts rank i's bytes at i)");
        longest = std::max(longest, static_cast<size_t>(heads[r].length));
    }
    // Round 2: the blobs, padded to the longest (none: every blob is empty,
    // on every rank alike).
    std::vector<std::string> out(p);
    if (longest == 0) return out;
    std::string padded = mine;
    padded.resize(longest, '\0');
    std::string all(longest * p, '\0');
    exchange(padded.data(), all.data(), longest);
    for (size_t r = 0; r < p; ++r) out[r] = all.substr(r * longest, heads[r].length);
    return out;
}

bool OobBootstrap::all(bool mine) {
    const char flag = mine ? 1 : 0;
    std::string flags(static_cast<size_t>(oob_.size), '\0');
    exchange(&flag, flags.data(), 1);
    return std::all_of(flags.begin(), flags.end(), [](char f) { return f != 0; });
}

void OobBootstrap::barrier(const std::function<void()>& progress) {
    progress();
    all(true);
    progress();
}

}  // namespace chorus::net
