// MPI_Alloc_mem and MPI_Free_mem: memory for MPI's buffers from
// chorus_mem_alloc, which the host's ranks map into each other, so that the
// collectives Chorus runs on it read and write peers' buffers in place
// (single copy; docs/interposer.md). Memory from MPI's own allocator, or any
// other, is freed by MPI. Every policy but `none` serves the allocations.
#include <mpi.h>

#include <string>

#include "chorus.h"
#include "interposer.h"

using namespace chorus_mpi;

extern "C" {

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void* baseptr) {
    const char* policy = nullptr;
    if (size > 0 && baseptr && !inside_chorus() &&
        (chorus_setting("CHORUS_MPI_INTERCEPT", &policy) != CHORUS_SUCCESS || std::string(policy) != "none")) {
        void* p = nullptr;
        if (chorus_mem_alloc(static_cast<size_t>(size), &p) == CHORUS_SUCCESS) {
            *static_cast<void**>(baseptr) = p;
            return MPI_SUCCESS;
        }
    }
    return PMPI_Alloc_mem(size, info, baseptr);
}

int MPI_Free_mem(void* base) {
    if (base && chorus_mem_mapped(base, 1)) return chorus_mem_free(base) == CHORUS_SUCCESS ? MPI_SUCCESS : MPI_ERR_ARG;
    return PMPI_Free_mem(base);
}

}  // extern "C"
