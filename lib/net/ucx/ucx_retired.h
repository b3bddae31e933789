// Workers of destroyed communicators: those whose endpoints are still
// flushing, and idle ones kept for the next communicator.
//
// Destroying a communicator is local: its endpoints are closed in flush mode
// (the data this rank has sent must still reach peers that may be busy
// elsewhere), and a worker whose flush does not end at once is kept here and
// progressed later: whenever Chorus creates or destroys a communicator or a
// waiting rank makes its idle checks, and at MPI_Finalize, when every rank
// flushes what is left.
//
// A worker whose communicator ended cleanly (every endpoint flushed, nothing
// cancelled, no failure or notice, no message waiting unmatched) is kept idle
// instead, at most kIdleWorkers of them, with its endpoints open, and the
// next communicator takes it: creating a worker opens every UCX transport
// anew (sockets, shared-memory queues), most of a communicator's creation.
// The endpoints stay open for as long as the worker lives (a communicator
// reuses the one to a peer's worker address): closing one sends the peer a
// message naming it, which, arriving after the id was given to a new
// endpoint, would end that one's transfers. Each worker carries the epoch of
// the last communicator that used it; a new communicator's epoch is above
// every one its ranks' workers have seen (UcxTransport), so that nothing sent
// to an older one can be taken for its own.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/ucx/ucx_context.h"

namespace chorus::net {

// Where UCX reports an endpoint's failure (its error handler's argument):
// kept with the endpoint, and passed on to the communicator using it.
struct EpLink {
    std::atomic<int> status{0};
    std::atomic<int>* target = nullptr;  // the user's peer status, or none
};
// An endpoint of a worker: to which worker address, in which error mode.
struct KeptEndpoint {
    std::string address;
    bool peer_errors = false;
    ucp_ep_h ep = nullptr;  // null once closed
    std::unique_ptr<EpLink> link;
};

// Take over `worker` with the requests still in flight on it (endpoint
// closes and flushes, sends) and the buffers and endpoints they use (the
// worker destroys those left open); `context` stays alive until the worker
// is destroyed.
void retire_worker(ucp_worker_h worker, std::vector<ucs_status_ptr_t> requests,
                   std::vector<std::unique_ptr<std::string>> buffers, std::vector<KeptEndpoint> eps,
                   std::shared_ptr<UcxContext> context);
// Progress the retired workers a little; destroy those that are done. Never
// blocks (another thread already at it: returns).
void progress_retired();
// Progress the retired workers until they are done or `ms` milliseconds
// have passed, then destroy them all. From then on (MPI is finalizing) a
// destroyed communicator's worker is flushed at once instead of retired.
void drain_retired(int ms);
// Whether drain_retired() has run; and the bound it was given.
bool finalizing(int* ms);

// Idle workers kept for reuse (none once finalizing: they are destroyed).
constexpr size_t kIdleWorkers = 4;
struct IdleWorker {
    ucp_worker_h worker = nullptr;
    uint32_t epoch = 0;  // of the last communicator that used it
    std::vector<KeptEndpoint> eps;
};
// Keep `w` (of `context`) idle, or destroy it when the pool is full or MPI
// is finalizing.
void keep_idle_worker(IdleWorker w, std::shared_ptr<UcxContext> context);
// An idle worker of `context` (the one kept last), or none.
IdleWorker take_idle_worker(const std::shared_ptr<UcxContext>& context);

}  // namespace chorus::net
