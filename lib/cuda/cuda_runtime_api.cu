// chorus::gpu over the CUDA runtime (linked statically: the library loads on
// machines without CUDA, where available() is simply false).
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "base/error.h"
#include "cuda/cuda_runtime_api.h"

namespace chorus {
namespace gpu {
namespace {

// Throws CHORUS_ERR_CUDA for a failed call, after clearing the thread's
// last-error state (sticky errors stay, as CUDA keeps them).
void check(cudaError_t err, const char* what) {
    if (err == cudaSuccess) return;
    (void)cudaGetLastError();
    fail(CHORUS_ERR_CUDA, what, ": ", cudaGetErrorString(err), " (CUDA error ", static_cast<int>(err), ")");
}

struct Presence {
    bool ok = false;
    std::string why;
};

const Presence& presence() {
    static const Presence p = [] {
        Presence r;
        int n = 0;
        const cudaError_t err = cudaGetDeviceCount(&n);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            r.why = cat("cudaGetDeviceCount: ", cudaGetErrorString(err), " (CUDA error ", static_cast<int>(err), ")");
        } else if (n <= 0) {
            r.why = "no CUDA device";
        } else {
            r.ok = true;
        }
        return r;
    }();
    return p;
}

// Throws the reason CUDA cannot be used, if it cannot.
void require(const char* what) {
    const Presence& p = presence();
    if (!p.ok) fail(CHORUS_ERR_CUDA, what, ": no usable GPU: ", p.why);
}

// Whether the process holds any CUDA context: one current on this thread,
// or an active primary context (the one the runtime API uses) on any
// device. Asked through the driver's entry points, which create none.
// Once true it stays true: contexts are long-lived, and a false positive
// only costs one cudaPointerGetAttributes.
using CtxGetCurrentFn = CUresult(CUDAAPI*)(CUcontext*);
using DeviceGetFn = CUresult(CUDAAPI*)(CUdevice*, int);
using PrimaryCtxStateFn = CUresult(CUDAAPI*)(CUdevice, unsigned int*, int*);

struct DriverEntries {
    CtxGetCurrentFn ctx_get_current = nullptr;
    DeviceGetFn device_get = nullptr;
    PrimaryCtxStateFn primary_state = nullptr;
    int devices = 0;
    bool ok = false;
};

const DriverEntries& driver_entries() {
    static const DriverEntries d = [] {
        DriverEntries r;
        if (!presence().ok) return r;
        void* fn[3] = {};
        const char* names[3] = {"cuCtxGetCurrent", "cuDeviceGet", "cuDevicePrimaryCtxGetState"};
        for (int i = 0; i < 3; ++i) {
            cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
            if (cudaGetDriverEntryPointByVersion(names[i], &fn[i], 12000, cudaEnableDefault, &status) != cudaSuccess ||
                status != cudaDriverEntryPointSuccess || fn[i] == nullptr) {
                (void)cudaGetLastError();
                return r;
            }
        }
        r.ctx_get_current = reinterpret_cast<CtxGetCurrentFn>(fn[0]);
        r.device_get = reinterpret_cast<DeviceGetFn>(fn[1]);
        r.primary_state = reinterpret_cast<PrimaryCtxStateFn>(fn[2]);
        r.ok = cudaGetDeviceCount(&r.devices) == cudaSuccess;
        return r;
    }();
    return d;
}

bool context_exists() {
    static std::atomic<bool> seen{false};
    if (seen.load(std::memory_order_relaxed)) return true;
    const DriverEntries& d = driver_entries();
    if (!d.ok) return true;  // cannot tell: ask CUDA about the pointer
    bool any = false;
    CUcontext cur = nullptr;
    if (d.ctx_get_current(&cur) == CUDA_SUCCESS && cur != nullptr) any = true;
    for (int i = 0; i < d.devices && !any; ++i) {
        CUdevice dev = 0;
        unsigned int flags = 0;
        int active = 0;
        if (d.device_get(&dev, i) == CUDA_SUCCESS && d.primary_state(dev, &flags, &active) == CUDA_SUCCESS &&
            active != 0)
            any = true;
    }
    if (any) seen.store(true, std::memory_order_relaxed);
    return any;
}

cudaStream_t as_stream(void* s) {
    return static_cast<cudaStream_t>(s);
}
cudaEvent_t as_event(void* e) {
    return static_cast<cudaEvent_t>(e);
}

}  // namespace

bool built_with_cuda() {
    return true;
}

bool available(std::string* why) {
    const Presence& p = presence();
    if (why) *why = p.ok ? std::string() : p.why;
    return p.ok;
}

bool device_memory_possible() {
    return presence().ok && context_exists();
}

MemKind memory_kind(const void* p) {
    if (p == nullptr || !presence().ok || !context_exists()) return MemKind::Host;
    cudaPointerAttributes attr{};
    const cudaError_t err = cudaPointerGetAttributes(&attr, p);
    if (err != cudaSuccess) {
        // Older drivers report memory they do not know as an invalid value.
        (void)cudaGetLastError();
        return MemKind::Host;
    }
    switch (attr.type) {
        case cudaMemoryTypeDevice: return MemKind::Device;
        case cudaMemoryTypeManaged: return MemKind::Managed;
        case cudaMemoryTypeHost: return MemKind::PinnedHost;
        default: return MemKind::Host;
    }
}

void* create_stream() {
    require("cudaStreamCreateWithFlags");
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return s;
}

void destroy_stream(void* stream) noexcept {
    if (stream == nullptr) return;
    if (cudaStreamDestroy(as_stream(stream)) != cudaSuccess) (void)cudaGetLastError();
}

void* create_event() {
    require("cudaEventCreateWithFlags");
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return e;
}

void destroy_event(void* ev) noexcept {
    if (ev == nullptr) return;
    if (cudaEventDestroy(as_event(ev)) != cudaSuccess) (void)cudaGetLastError();
}

void record_event(void* ev, void* stream) {
    require("cudaEventRecord");
    check(cudaEventRecord(as_event(ev), as_stream(stream)), "cudaEventRecord");
}

bool event_done(void* ev) {
    require("cudaEventQuery");
    const cudaError_t err = cudaEventQuery(as_event(ev));
    if (err == cudaSuccess) return true;
    if (err == cudaErrorNotReady) return false;
    check(err, "cudaEventQuery");
    return false;
}

void stream_wait_event(void* stream, void* ev) {
    require("cudaStreamWaitEvent");
    check(cudaStreamWaitEvent(as_stream(stream), as_event(ev), 0), "cudaStreamWaitEvent");
}

void synchronize_stream(void* stream) {
    require("cudaStreamSynchronize");
    check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize");
}

void* alloc_device(size_t bytes) {
    require("cudaMalloc");
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        fail(CHORUS_ERR_CUDA, "cudaMalloc(", bytes, " bytes): ", cudaGetErrorString(err), " (CUDA error ",
             static_cast<int>(err), ")");
    }
    return p;
}

void free_device(void* p) noexcept {
    if (p == nullptr) return;
    if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
}

void register_host(void* p, size_t bytes) {
    require("cudaHostRegister");
    if (!p || bytes == 0) return;
    const cudaError_t err = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (err == cudaErrorHostMemoryAlreadyRegistered) {
        (void)cudaGetLastError();
        return;
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        fail(CHORUS_ERR_CUDA, "cudaHostRegister(", bytes, " bytes): ", cudaGetErrorString(err), " (CUDA error ",
             static_cast<int>(err), ")");
    }
}

void unregister_host(void* p) noexcept {
    if (p && cudaHostUnregister(p) != cudaSuccess) (void)cudaGetLastError();
}

void* alloc_pinned(size_t bytes) {
    require("cudaMallocHost");
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    const cudaError_t err = cudaMallocHost(&p, bytes);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        fail(CHORUS_ERR_CUDA, "cudaMallocHost(", bytes, " bytes): ", cudaGetErrorString(err), " (CUDA error ",
             static_cast<int>(err), ")");
    }
    return p;
}

void free_pinned(void* p) noexcept {
    if (p == nullptr) return;
    if (cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}

void* alloc_managed(size_t bytes) {
    require("cudaMallocManaged");
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    const cudaError_t err = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        fail(CHORUS_ERR_CUDA, "cudaMallocManaged(", bytes, " bytes): ", cudaGetErrorString(err), " (CUDA error ",
             static_cast<int>(err), ")");
    }
    return p;
}

void free_managed(void* p) noexcept {
    if (p == nullptr) return;
    if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
}

void copy_async(void* dst, const void* src, size_t bytes, void* stream) {
    require("cudaMemcpyAsync");
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)), "cudaMemcpyAsync");
}

}  // namespace gpu
}  // namespace chorus
