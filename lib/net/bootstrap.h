// What the transports ask of the group they connect: exchange blobs of
// different lengths, agree on a flag, and wait for every rank while the
// transport keeps making progress (a rank blocked in a plain MPI call would
// starve a peer that waits on it over UCX). MPI is one implementation
// (mpi_bootstrap.h); nothing in lib/net below this interface knows MPI.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace chorus::net {

class Bootstrap {
public:
    virtual ~Bootstrap() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // Every rank contributes `mine`; returns every rank's blob, by rank.
    virtual std::vector<std::string> allgather(const std::string& mine) = 0;
    // True on every rank if `mine` is true on every rank.
    virtual bool all(bool mine) = 0;
    // Returns once every rank has called it, calling `progress` meanwhile.
    virtual void barrier(const std::function<void()>& progress) = 0;
};

}  // namespace chorus::net

namespace chorus::net {

// All or nothing: every rank runs `local` (which returns this rank's blob,
// or throws Error), then the ranks exchange the outcomes. If `local` failed
// on any rank, every rank throws, with the first failing rank's code and a
// message naming the failing ranks and their reasons; otherwise every
// rank's blob is returned, by rank. One allgather either way.
std::vector<std::string> allgather_agreed(Bootstrap& boot, const std::function<std::string()>& local);

}  // namespace chorus::net
