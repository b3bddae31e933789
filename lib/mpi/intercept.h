// What every intercepted collective shares (collectives.cc, movement.cc):
// the gate and the hand-off to PMPI, the communicator's Chorus twin, the
// wait for a Chorus call, and the errors raised on misuse.
#pragma once

#include <climits>
#include <new>
#include <string>
#include <vector>

#include "interposer.h"

namespace chorus_mpi {

constexpr int kPassThrough = -1;  // from a body: hand the call to PMPI

inline bool is_inter(MPI_Comm comm) {
    int flag = 0;
    return PMPI_Comm_test_inter(comm, &flag) == MPI_SUCCESS && flag != 0;
}

// Hands the call to PMPI: `pmpi(staging)` passes each buffer through
// staging.view() and calls the PMPI function. With `stage`, device and
// managed buffers reach MPI as host copies (written ones copied back after
// the call); on an intercommunicator they are refused with an error.
template <typename Pmpi>
int to_pmpi(Fn fn, MPI_Comm comm, bool stage, Pmpi&& pmpi) {
    stage = stage && comm != MPI_COMM_NULL;
    HostStaging staging(stage, stage && is_inter(comm));
    const int rc = pmpi(staging);
    if (staging.failed()) return staging.raise(fn, comm);
    if (rc == MPI_SUCCESS && !staging.finish()) return staging.raise(fn, comm);
    return rc;
}

inline int rank_of(MPI_Comm comm) {
    int r = 0;
    PMPI_Comm_rank(comm, &r);
    return r;
}

inline size_t size_of(MPI_Comm comm) {
    int n = 0;
    PMPI_Comm_size(comm, &n);
    return static_cast<size_t>(n);
}

inline size_t elems(int count) {
    return count > 0 ? static_cast<size_t>(count) : 0;
}

// `pmpi(staging)` is called as to_pmpi describes. Calls from Chorus itself,
// and those MPI is not running for, go to PMPI as they are.
template <typename Pmpi, typename Body>
int intercept(Fn fn, MPI_Comm comm, Pmpi&& pmpi, Body&& body) {
    int error = MPI_SUCCESS;
    switch (open_gate(fn, comm, &error)) {
        case Gate::Quiet: return to_pmpi(fn, comm, false, pmpi);
        case Gate::Refused: return error;
        case Gate::Pass: count_passed(fn); return to_pmpi(fn, comm, true, pmpi);
        case Gate::Chorus: break;
    }
    int rc;
    try {
        rc = body();
    } catch (const std::bad_alloc&) {
        return raise_error(comm, CHORUS_ERR_OUT_OF_MEMORY, std::string(fn_name(fn)) + ": out of memory");
    }
    if (rc != kPassThrough) return rc;
    count_passed(fn);
    return to_pmpi(fn, comm, true, pmpi);
}

// The communicator's Chorus twin: Gate::Chorus, or what to return instead.
struct Twin {
    Target t;
    int rc = MPI_SUCCESS;
    bool ok = false;
    Twin(Fn fn, MPI_Comm comm) {
        switch (chorus_comm_of(fn, comm, &t, &rc)) {
            case Gate::Chorus: ok = true; break;
            case Gate::Refused: break;
            default: rc = kPassThrough; break;
        }
    }
};

inline int finish(Fn fn, MPI_Comm comm, chorus_comm_t cc, chorus_result_t result) {
    if (result == CHORUS_SUCCESS) return MPI_SUCCESS;
    return raise_error(comm, result, std::string(fn_name(fn)) + ": " + chorus_comm_last_error(cc));
}

// Run a blocking Chorus collective, `call()`; the result as an MPI code.
// While it waits, the communicator's idle hook (comms.cc) turns MPI's
// progress engine.
template <typename Call>
int run_chorus(Fn fn, MPI_Comm comm, chorus_comm_t cc, Call&& call) {
    chorus_result_t rc;
    {
        InsideChorus inside;
        rc = call();
    }
    return finish(fn, comm, cc, rc);
}

inline int misuse(Fn fn, MPI_Comm comm, const std::string& what) {
    return raise_error(comm, CHORUS_ERR_INVALID_ARGUMENT, std::string(fn_name(fn)) + ": " + what);
}

// PMPI_Pack / PMPI_Unpack take int sizes.
inline bool packable(size_t bytes) {
    return bytes <= static_cast<size_t>(INT_MAX);
}

inline int too_large(Fn fn, MPI_Comm comm, size_t bytes) {
    return raise_error(comm, CHORUS_ERR_UNSUPPORTED,
                       std::string(fn_name(fn)) + ": " + std::to_string(bytes) +
                           " bytes of a derived datatype are more than PMPI_Pack can stage (2 GiB)");
}

// Two byte counts that must be equal on this rank, and are not.
inline int mismatch(Fn fn, MPI_Comm comm, const char* a, size_t a_bytes, const char* b, size_t b_bytes) {
    return misuse(
        fn, comm,
        std::string(a) + " is " + std::to_string(a_bytes) + " bytes but " + b + " is " + std::to_string(b_bytes));
}

// ---------------------------------------------------------------------------
// Buffers of per-rank blocks, as the bytes Chorus moves (blocks.cc)

// Block i of a buffer: counts[i] elements of the buffer's datatype, starting
// displs[i] extents from its address (an MPI v-form; the regular forms have
// block i at i * count).
struct Shape {
    std::vector<int> counts, displs;
    static Shape regular(size_t n, int count);
    static Shape one(int count) { return regular(1, count); }
    static Shape of(size_t n, const int* counts, const int* displs);
    bool negative() const;  // a negative count: left to MPI to report
};

// A buffer of blocks as Chorus sees it: a predefined type in place, its
// counts and displacements turned into bytes; any other type packed, block
// after block, into a staging buffer (PMPI_Pack on a host view of the user's
// buffer). Every rank moves the same bytes either way: MPI's type matching
// makes count * type size agree, however each rank spells the type.
class Blocks {
public:
    Blocks() = default;
    Blocks(const Blocks&) = delete;
    Blocks& operator=(const Blocks&) = delete;

    // `unit` is layout_of(type, 1). `read`: the call reads the user's blocks
    // (then pack() them); `write`: it writes them (then unpack()). Returns
    // MPI_SUCCESS or the error code already raised on `comm`.
    int init(Fn fn, MPI_Comm comm, const void* buf, MPI_Datatype type, const Layout& unit, Shape shape, bool read,
             bool write);
    // Packs block i (every block) into the staging buffer; nothing in place.
    int pack(size_t i);
    int pack_all();
    // Unpacks every block into the user's buffer, and copies host views of
    // device buffers back.
    int unpack_all();

    char* base() const { return base_; }
    const size_t* counts() const { return bytes_.data(); }
    const size_t* displs() const { return offsets_.data(); }
    size_t bytes(size_t i) const { return bytes_[i]; }
    char* block(size_t i) const { return base_ + offsets_[i]; }

private:
    char* user_at(size_t i) const;

    Fn fn_ = kNumFns;
    MPI_Comm comm_ = MPI_COMM_NULL;
    MPI_Datatype type_ = MPI_DATATYPE_NULL;
    Layout unit_;
    Shape shape_;
    char* user_ = nullptr;  // the user's buffer (or its host view)
    char* base_ = nullptr;  // what Chorus reads and writes
    std::vector<size_t> bytes_, offsets_;
    std::vector<char> staged_;
    HostStaging host_;
};

// The pointer to hand to PMPI for the blocks of `shape` at `buf` (staged as
// HostStaging::view does, over the span the blocks cover).
void* view_blocks(HostStaging& st, const void* buf, const Shape& shape, MPI_Datatype type, bool read, bool write);

}  // namespace chorus_mpi
