// Mapped memory and windows (chorus_mem_alloc, chorus_mem_free,
// chorus_comm_register, chorus_comm_deregister; net/shm/mapped.h,
// core/windows.cc). No exception leaves this file.
#include <string>

#include "chorus.h"
#include "core/communicator.h"
#include "core/handles.h"
#include "core/validate.h"
#include "net/shm/mapped.h"

using chorus::Communicator;
using chorus::api::guarded;
using chorus::api::invalid;

extern "C" {

chorus_result_t chorus_mem_alloc(size_t bytes, void** ptr) {
    if (!ptr) return invalid(nullptr, "chorus_mem_alloc: ptr (output) is NULL");
    *ptr = nullptr;
    if (bytes == 0) return invalid(nullptr, "chorus_mem_alloc: bytes is 0");
    std::string why;
    *ptr = chorus::net::mapped::allocate(bytes, &why);
    if (*ptr) return CHORUS_SUCCESS;
    return chorus::api::report(nullptr, CHORUS_ERR_OUT_OF_MEMORY, chorus::cat("chorus_mem_alloc(", bytes, "): ", why));
}

chorus_result_t chorus_mem_free(void* ptr) {
    if (!ptr || chorus::net::mapped::release(ptr)) return CHORUS_SUCCESS;
    return invalid(nullptr, "chorus_mem_free: the pointer is not the start of memory from chorus_mem_alloc");
}

int chorus_mem_mapped(const void* ptr, size_t bytes) {
    chorus::net::MappedRef ref;
    return ptr && chorus::net::mapped::find(ptr, bytes, &ref) ? 1 : 0;
}

chorus_result_t chorus_comm_register(chorus_comm_t comm, void* ptr, size_t bytes) {
    Communicator* c = chorus::api::find_comm(comm);
    if (!c) return chorus::api::not_live(comm, "chorus_comm_register");
    return guarded(c, [&] {
        c->register_window(ptr, bytes);
        return CHORUS_SUCCESS;
    });
}

chorus_result_t chorus_comm_deregister(chorus_comm_t comm, void* ptr) {
    Communicator* c = chorus::api::find_comm(comm);
    if (!c) return chorus::api::not_live(comm, "chorus_comm_deregister");
    return guarded(c, [&] {
        c->deregister_window(ptr);
        return CHORUS_SUCCESS;
    });
}

}  // extern "C"
