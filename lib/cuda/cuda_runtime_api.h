// The CUDA runtime as Chorus uses it: GPU presence, pointer classification,
// streams and events, memory, and element-wise reductions on the device.
//
// This header names no CUDA type, so plain C++ code includes it whether or
// not CUDA was built (streams and events travel as void*). A build without
// CUDA links stubs (cuda_stubs.cc): available() is false and every other call
// except memory_kind() and the release functions throws.
//
// Errors: every failure throws chorus::Error with CHORUS_ERR_CUDA and a
// message "<what failed>: <cudaGetErrorString>". Having no GPU or no driver
// is such an error, never a crash. The release functions (destroy_*, free_*)
// never throw: they run on cleanup paths, and an error there (after a sticky
// fault, say) is reported by the next synchronizing call instead.
//
// Include as "cuda/cuda_runtime_api.h": CUDA ships a header of the same base
// name, so lib/cuda itself must not be on an include path.
#pragma once

#include <cstddef>
#include <string>

#include "chorus.h"

namespace chorus {
namespace gpu {

// Whether CUDA was compiled into this library (not whether a GPU exists).
bool built_with_cuda();

// At least one CUDA device and a driver that can run this library's code.
// Decided once per process and cached; never creates a CUDA context. When
// false and `why` is not null, *why says what is missing.
bool available(std::string* why = nullptr);

enum class MemKind { Host, PinnedHost, Device, Managed };

// What kind of memory `p` points into. Memory CUDA does not know (ordinary
// malloc, stack, null) is Host, and so is everything when CUDA is not built
// or not available. As long as the process holds no CUDA context no pointer
// can be device memory, so the answer is Host without any CUDA call that
// could create one.
MemKind memory_kind(const void* p);
// False while memory_kind() answers Host for every pointer without a CUDA
// call: no CUDA build, no GPU, or no CUDA context yet. Once true it stays
// true.
bool device_memory_possible();

inline const char* memory_kind_name(MemKind k) {
    switch (k) {
        case MemKind::Host: return "host";
        case MemKind::PinnedHost: return "pinned host";
        case MemKind::Device: return "device";
        case MemKind::Managed: return "managed";
    }
    return "invalid";
}

// Streams (non-blocking with respect to the legacy default stream) and
// events (without timing). A null stream is the legacy default stream.
void* create_stream();
void destroy_stream(void* stream) noexcept;
void* create_event();
void destroy_event(void* ev) noexcept;
void record_event(void* ev, void* stream);
// True once all work captured by the last record_event has finished; false
// while it is pending. A fault in that work throws.
bool event_done(void* ev);
// Work queued on `stream` after this call waits for `ev`.
void stream_wait_event(void* stream, void* ev);
void synchronize_stream(void* stream);

// Device memory and page-locked host memory. Zero bytes give null.
void* alloc_device(size_t bytes);
void free_device(void* p) noexcept;
void* alloc_pinned(size_t bytes);
void free_pinned(void* p) noexcept;
// Page-lock `bytes` of host memory at `p` (shared memory, say) so that
// device copies and kernels may use it directly; the same range again is no
// error. unregister_host undoes it (never throws).
void register_host(void* p, size_t bytes);
void unregister_host(void* p) noexcept;
// Managed (unified) memory, attached globally: any stream and the host may
// touch it. For tests and tools; Chorus itself never allocates it.
void* alloc_managed(size_t bytes);
void free_managed(void* p) noexcept;
// Any direction (cudaMemcpyDefault); asynchronous with respect to the host
// only where the memory kinds allow it.
void copy_async(void* dst, const void* src, size_t bytes, void* stream);

// dst[i] = a[i] op b[i] for i < count, queued on `stream`: the same results,
// bit for bit, as host_reduce (lib/reduce/host_reducer.h). dst may be exactly a
// and/or b but must not partially overlap either; AVG reduces as SUM. All
// three pointers must be device-accessible. A (dt, op) pair that host_reduce
// does not support throws CHORUS_ERR_UNSUPPORTED.
void reduce_async(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count,
                  void* stream);

// AVG finalisation, as host_divide: dst[i] = dst[i] / divisor (divisor >= 1).
void divide_async(chorus_datatype_t dt, void* dst, size_t count, int divisor, void* stream);

}  // namespace gpu
}  // namespace chorus
