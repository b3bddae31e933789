// chorus::gpu in a build without CUDA: no GPU is ever available, every
// pointer is host memory, and everything else fails with CHORUS_ERR_CUDA.
#include <string>

#include "base/error.h"
#include "cuda/cuda_runtime_api.h"

namespace chorus {
namespace gpu {
namespace {

constexpr const char* kWhy = "Chorus was built without CUDA";

[[noreturn]] void no_cuda(const char* what) {
    fail(CHORUS_ERR_CUDA, what, ": ", kWhy);
}

}  // namespace

bool built_with_cuda() {
    return false;
}

bool available(std::string* why) {
    if (why) *why = kWhy;
    return false;
}

MemKind memory_kind(const void*) {
    return MemKind::Host;
}

bool device_memory_possible() {
    return false;
}

void* create_stream() {
    no_cuda("create_stream");
}

void destroy_stream(void*) noexcept {}

void* create_event() {
    no_cuda("create_event");
}

void destroy_event(void*) noexcept {}

void record_event(void*, void*) {
    no_cuda("record_event");
}

bool event_done(void*) {
    no_cuda("event_done");
}

void stream_wait_event(void*, void*) {
    no_cuda("stream_wait_event");
}

void synchronize_stream(void*) {
    no_cuda("synchronize_stream");
}

void* alloc_device(size_t) {
    no_cuda("alloc_device");
}

void free_device(void*) noexcept {}

void register_host(void*, size_t) {
    no_cuda("register_host");
}

void unregister_host(void*) noexcept {}

void* alloc_pinned(size_t) {
    no_cuda("alloc_pinned");
}

void free_pinned(void*) noexcept {}

void* alloc_managed(size_t) {
    no_cuda("alloc_managed");
}

void free_managed(void*) noexcept {}

void copy_async(void*, const void*, size_t, void*) {
    no_cuda("copy_async");
}

void reduce_async(chorus_datatype_t, chorus_op_t, void*, const void*, const void*, size_t, void*) {
    no_cuda("reduce_async");
}

void divide_async(chorus_datatype_t, void*, size_t, int, void*) {
    no_cuda("divide_async");
}

}  // namespace gpu
}  // namespace chorus
