// The C API's memory and settings calls (chorus.h, "for tools built on
// Chorus"): the MPI interposer uses them instead of reaching into the
// library's internals.
#include <cstring>

#include "chorus.h"
#include "core/config.h"
#include "core/handles.h"
#include "core/validate.h"
#include "cuda/cuda_runtime_api.h"

extern "C" {

chorus_result_t chorus_memory_kind(const void* ptr, chorus_memory_kind_t* kind) {
    if (!kind)
        return chorus::api::report(nullptr, CHORUS_ERR_INVALID_ARGUMENT, "chorus_memory_kind: kind (output) is NULL");
    switch (chorus::gpu::memory_kind(ptr)) {
        case chorus::gpu::MemKind::Host: *kind = CHORUS_MEMORY_HOST; break;
        case chorus::gpu::MemKind::PinnedHost: *kind = CHORUS_MEMORY_PINNED_HOST; break;
        case chorus::gpu::MemKind::Device: *kind = CHORUS_MEMORY_DEVICE; break;
        case chorus::gpu::MemKind::Managed: *kind = CHORUS_MEMORY_MANAGED; break;
    }
    return CHORUS_SUCCESS;
}

int chorus_device_memory_possible(void) {
    return chorus::gpu::device_memory_possible() ? 1 : 0;
}

chorus_result_t chorus_memcpy(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return CHORUS_SUCCESS;
    if (!dst || !src)
        return chorus::api::report(nullptr, CHORUS_ERR_INVALID_ARGUMENT,
                                   "chorus_memcpy: dst or src is NULL with a non-zero size");
    auto host = [](const void* p) {
        chorus::gpu::MemKind k = chorus::gpu::memory_kind(p);
        return k == chorus::gpu::MemKind::Host || k == chorus::gpu::MemKind::PinnedHost;
    };
    if (host(dst) && host(src)) {
        std::memcpy(dst, src, bytes);
        return CHORUS_SUCCESS;
    }
    try {
        chorus::gpu::copy_async(dst, src, bytes, nullptr);
        chorus::gpu::synchronize_stream(nullptr);
    } catch (const chorus::Error& e) {
        return chorus::api::report(nullptr, e.code(), chorus::cat("chorus_memcpy: ", e.what()));
    }
    return CHORUS_SUCCESS;
}

int chorus_has_cuda(void) {
    return chorus::gpu::built_with_cuda() ? 1 : 0;
}

chorus_result_t chorus_setting(const char* name, const char** value) {
    if (!name || !value)
        return chorus::api::report(nullptr, CHORUS_ERR_INVALID_ARGUMENT, "chorus_setting: name or value is NULL");
    *value = "";
    const chorus::Setting* s = chorus::find_setting(name);
    if (!s)
        return chorus::api::report(nullptr, CHORUS_ERR_INVALID_ARGUMENT,
                                   chorus::cat("chorus_setting: ", name, " is not a Chorus setting"));
    thread_local std::string shown;
    try {
        shown = chorus::setting_from_env(*s);
    } catch (const chorus::Error& e) {
        return chorus::api::report(nullptr, e.code(), e.what());
    }
    *value = shown.c_str();
    return CHORUS_SUCCESS;
}

}  // extern "C"
