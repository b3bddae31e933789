// Cross-memory attach: one process copies straight from or into another's
// memory (process_vm_readv / process_vm_writev), one copy, no registration
// and nothing mapped. The kernel pins the pages for the duration of the call
// and holds the peer's address space while it copies, so a peer that exits
// meanwhile makes the next call fail (ESRCH), never this process crash.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus::net::cma {

// Copy `bytes` at address `remote` of process `pid` into `dst`, or `src` to
// `remote`. Throw Error naming rank `rank`: CHORUS_ERR_PEER_FAILED when the
// process is gone, CHORUS_ERR_TRANSPORT otherwise (bad address, no permission).
void read(int pid, int rank, void* dst, uint64_t remote, size_t bytes);
void write(int pid, int rank, uint64_t remote, const void* src, size_t bytes);

// Whether this process may read `pid`'s memory: reads 8 bytes at `remote`
// and compares them with `expect`.
bool probe(int pid, uint64_t remote, uint64_t expect);

// The address and the value of a word of this process that peers probe.
uint64_t probe_address();
uint64_t probe_value();

}  // namespace chorus::net::cma
