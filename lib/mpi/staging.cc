// Host copies of device and managed buffers for the calls this library hands
// to the PMPI_* functions (interposer.h). The MPI underneath may not be
// CUDA-aware, so it must never see a device pointer.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "interposer.h"

namespace chorus_mpi {

namespace {

bool special(const void* p) {
    return p == nullptr || p == MPI_IN_PLACE || p == MPI_BOTTOM;
}

// Device and managed memory are copied; pinned and ordinary host memory are
// what MPI reads anyway (copied too under CHORUS_MPI_STAGING=all).
bool needs_staging(const void* p) {
    if (special(p)) return false;
    if (stage_host_buffers()) return true;
    chorus_memory_kind_t k = CHORUS_MEMORY_HOST;
    chorus_memory_kind(p, &k);
    return k == CHORUS_MEMORY_DEVICE || k == CHORUS_MEMORY_MANAGED;
}

}  // namespace

HostStaging::~HostStaging() {
    for (Region& r : regions_) std::free(r.host);
}

void* HostStaging::view(const void* buf, size_t count, MPI_Datatype type, bool read, bool write) {
    void* const as_is = const_cast<void*>(buf);
    if (!enabled_ || failed() || count == 0 || type == MPI_DATATYPE_NULL || !needs_staging(buf)) return as_is;
    if (refuse_) {
        error_ = "device or managed buffers on an intercommunicator are not supported when the call goes to MPI";
        refused_ = true;
        return as_is;
    }
    // The bytes the call may touch: element i spans [i * extent + true_lb,
    // i * extent + true_lb + true_extent).
    MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    int size = 0;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(type, &true_lb, &true_extent) != MPI_SUCCESS ||
        PMPI_Type_size(type, &size) != MPI_SUCCESS) {
        error_ = "cannot query the datatype's extent";
        return as_is;
    }
    const MPI_Aint last = static_cast<MPI_Aint>(count - 1) * extent;
    const MPI_Aint lo = true_lb + std::min<MPI_Aint>(0, last);
    const MPI_Aint hi = true_lb + std::max<MPI_Aint>(0, last) + true_extent;
    if (hi <= lo) return as_is;
    Region r;
    r.bytes = static_cast<size_t>(hi - lo);
    r.user = const_cast<char*>(static_cast<const char*>(buf)) + lo;
    r.write = write;
    r.host = static_cast<char*>(std::malloc(r.bytes));
    if (!r.host) {
        error_ = "cannot allocate " + std::to_string(r.bytes) + " bytes of host memory";
        return as_is;
    }
    regions_.push_back(r);
    // An output with gaps keeps the bytes in its gaps: copied in too.
    const bool dense = r.bytes == count * static_cast<size_t>(size);
    if ((read || (write && !dense)) && chorus_memcpy(r.host, r.user, r.bytes) != CHORUS_SUCCESS) {
        error_ = chorus_comm_last_error(nullptr);
        return as_is;
    }
    return r.host - lo;
}

bool HostStaging::finish() {
    if (failed()) return false;
    for (const Region& r : regions_) {
        if (r.write && chorus_memcpy(r.user, r.host, r.bytes) != CHORUS_SUCCESS) {
            error_ = chorus_comm_last_error(nullptr);
            return false;
        }
    }
    return true;
}

int HostStaging::raise(Fn fn, MPI_Comm comm) const {
    if (refused_) return raise_error(comm, CHORUS_ERR_UNSUPPORTED, std::string(fn_name(fn)) + ": " + error_);
    return raise_error(comm, CHORUS_ERR_CUDA,
                       std::string(fn_name(fn)) + ": staging a device buffer through host memory: " + error_);
}

}  // namespace chorus_mpi
