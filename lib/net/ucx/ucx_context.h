// One UCX context per process, shared by every communicator: each
// communicator has its own worker, and the workers of different
// communicators may be driven by different threads (the context is created
// with shared-worker locking). Created on first use, destroyed with the last
// communicator and the last worker kept idle (at MPI_Finalize, if any was).
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <mutex>

#include "net/ucx/ucx_registrations.h"

namespace chorus::net {

class UcxContext {
public:
    // The process's context (created now if there is none). Throws Error.
    static std::shared_ptr<UcxContext> get();
    ~UcxContext();
    UcxContext(const UcxContext&) = delete;
    UcxContext& operator=(const UcxContext&) = delete;

    ucp_context_h handle() const { return context_; }
    // Whether this UCX moves CUDA memory itself (built with CUDA, its cuda
    // transports loaded); otherwise device buffers are staged.
    bool device_memory() const { return device_memory_; }
    // Whether the context offers RMA (ucp_get/ucp_put with registration
    // keys), and its registrations (made on first use: only then are UCX's
    // memory hooks installed; null without RMA).
    bool rma() const { return rma_; }
    Registrations* registrations();
    // Bytes UCX reserves in every request for the transport's bookkeeping.
    static size_t request_bytes();

private:
    UcxContext();
    ucp_context_h context_ = nullptr;
    bool device_memory_ = false;
    bool rma_ = false;
    std::once_flag registrations_once_;
    std::unique_ptr<Registrations> registrations_;
};

}  // namespace chorus::net
