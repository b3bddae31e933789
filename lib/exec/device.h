// Device work as the executor sees it: what kind of memory a pointer is, and
// an in-order queue (one stream the communicator owns) of copies, reductions
// and divisions, with marks to learn when queued work has finished.
//
// The real device is CUDA (make_cuda_device(), over lib/cuda's wrappers); the
// tests drive the same executor paths with an emulated device whose queue
// runs later than it is filled (test/emulated_device.h). Nothing here names a
// CUDA type, so the core stays free of CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "chorus.h"
#include "cuda/cuda_runtime_api.h"

namespace chorus {

using gpu::MemKind;

// Memory the CPU reads and writes at full speed (and UCX without CUDA can
// send from): everything but device and managed memory.
inline bool host_side(MemKind k) {
    return k == MemKind::Host || k == MemKind::PinnedHost;
}

class Device {
public:
    virtual ~Device() = default;

    virtual MemKind kind(const void* p) = 0;

    // Queued work, run in order after everything queued before it. All
    // pointers must be device-accessible, except that copies may also take
    // pinned host memory (staging).
    virtual void copy(void* dst, const void* src, size_t bytes) = 0;
    virtual void reduce(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b,
                        size_t count) = 0;
    virtual void divide(chorus_datatype_t dt, void* dst, size_t count, int divisor) = 0;
    // Work queued from now on also waits for the work queued on the caller's
    // `stream` so far (a cudaStream_t; null is the legacy default stream).
    virtual void wait_for(void* stream) = 0;

    // A mark after everything queued so far. done(m) is true once all of it
    // has finished, and stays true; marks finish in the order they were made.
    virtual uint64_t mark() = 0;
    virtual bool done(uint64_t m) = 0;
    // Wait for everything queued (cleanup paths: nothing may still write into
    // memory about to be reused). Never throws.
    virtual void drain() noexcept = 0;

    virtual void* alloc_device(size_t bytes) = 0;
    virtual void free_device(void* p) noexcept = 0;
    // Make host memory (the publish slots) usable by device copies and
    // kernels, for as long as the device lives; again for the same range is
    // nothing.
    virtual void register_host(void* p, size_t bytes) = 0;
    // Undo every register_host (before that memory goes away). Never throws.
    virtual void forget_host() noexcept = 0;
    virtual void* alloc_pinned(size_t bytes) = 0;
    virtual void free_pinned(void* p) noexcept = 0;
};

// The CUDA device: its stream and events are created at first use, so a
// communicator that only ever sees host memory makes no CUDA call beyond
// pointer queries (which make none while the process has no CUDA context).
std::unique_ptr<Device> make_cuda_device();

}  // namespace chorus
