// Buffers of per-rank blocks as the bytes Chorus moves (blocks.cc), and
// what a nonblocking call keeps of them until it completes.
#pragma once

#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "interposer.h"
#include "small_vector.h"

namespace chorus_mpi {

inline size_t elems(int count) {
    return count > 0 ? static_cast<size_t>(count) : 0;
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

// ---------------------------------------------------------------------------
// Buffers of per-rank blocks, as the bytes Chorus moves (blocks.cc)

// Block i of a buffer: counts[i] elements of the buffer's datatype, starting
// displs[i] extents from its address (an MPI v-form; the regular forms have
// block i at i * count).
struct Shape {
    SmallVector<int, 16> counts, displs;
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
    // device buffers back; nothing unless init() said `write`.
    int unpack_all();
    // Keeps the datatype valid until this is destroyed: a nonblocking
    // call's blocks outlive the call, and MPI lets the program free the
    // handle meanwhile. Called once the call has started on every rank, so
    // a failure (out of memory) fails nothing: the program's own handle is
    // used then, as it is until the call returns.
    void hold_type();
    // Errors from now on are raised on `comm` (MPI_COMM_SELF once the
    // call's communicator was freed).
    void rebind(MPI_Comm comm) { comm_ = comm; }
    ~Blocks();

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
    MPI_Datatype held_ = MPI_DATATYPE_NULL;  // hold_type()'s duplicate, freed with this
    Layout unit_;
    Shape shape_;
    bool write_ = false;
    char* user_ = nullptr;  // the user's buffer (or its host view)
    char* base_ = nullptr;  // what Chorus reads and writes
    SmallVector<size_t, 16> bytes_, offsets_;
    std::vector<char> staged_;
    HostStaging host_;
};

// The pointer to hand to PMPI for the blocks of `shape` at `buf` (staged as
// HostStaging::view does, over the span the blocks cover).
void* view_blocks(HostStaging& st, const void* buf, const Shape& shape, MPI_Datatype type, bool read, bool write);

// ---------------------------------------------------------------------------
// A nonblocking call's buffers

// What a call through Chorus keeps until it completes: its buffers as the
// bytes Chorus moves (packed copies, host views of device buffers).
struct Pending {
    Blocks recv, send;

    // What this rank contributes to a gather (all-gather(v), gather(v)):
    // sendbuf's block, packed into `send`, or in place block `me` of `recv`
    // (initialized first). Returns MPI_SUCCESS or the error raised.
    int own_block(Fn fn, MPI_Comm comm, bool in_place, size_t me, const void* sendbuf, int sendcount,
                  MPI_Datatype sendtype, const Layout& su);
    // For a nonblocking call: the datatypes held (Blocks::hold_type).
    void hold_types() {
        recv.hold_type();
        send.hold_type();
    }
    void rebind(MPI_Comm comm) {
        recv.rebind(comm);
        send.rebind(comm);
    }
    const void* own() const { return in_place_ ? recv.block(me_) : send.base(); }
    size_t own_bytes() const { return in_place_ ? recv.bytes(me_) : send.bytes(0); }

private:
    bool in_place_ = false;
    size_t me_ = 0;
};

}  // namespace chorus_mpi
