// Workers of destroyed communicators whose endpoints are still flushing.
// Destroying a communicator is local: its endpoints are closed in flush mode
// (the data this rank has sent must still reach peers that may be busy
// elsewhere), and a worker whose flush does not end at once is kept here and
// progressed later: whenever Chorus creates or destroys a communicator or a
// waiting rank makes its idle checks, and at MPI_Finalize, when every rank
// flushes what is left.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>
#include <vector>

#include "net/ucx/ucx_context.h"

namespace chorus::net {

// Take over `worker` with the requests still in flight on it (endpoint
// closes, sends) and the buffers they use; `context` stays alive until the
// worker is destroyed.
void retire_worker(ucp_worker_h worker, std::vector<ucs_status_ptr_t> requests,
                   std::vector<std::unique_ptr<std::string>> buffers, std::shared_ptr<UcxContext> context);
// Progress the retired workers a little; destroy those that are done. Never
// blocks (another thread already at it: returns).
void progress_retired();
// Progress the retired workers until they are done or `ms` milliseconds
// have passed, then destroy them all. From then on (MPI is finalizing) a
// destroyed communicator's worker is flushed at once instead of retired.
void drain_retired(int ms);
// Whether drain_retired() has run; and the bound it was given.
bool finalizing(int* ms);

}  // namespace chorus::net
