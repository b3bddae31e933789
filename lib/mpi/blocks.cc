// Buffers of per-rank blocks as bytes (intercept.h).
#include <algorithm>

#include "blocks.h"

namespace chorus_mpi {

namespace {

// The span of elements the blocks with data cover: [lo, hi) extents from
// the buffer's address. Empty (lo == hi) when no block holds data. And
// `held`, the elements of the blocks together (below hi - lo: gaps).
void span_of(const Shape& s, long long* lo, long long* hi, long long* held) {
    *lo = *hi = *held = 0;
    bool any = false;
    for (size_t i = 0; i < s.counts.size(); ++i) {
        if (s.counts[i] <= 0) continue;
        *held += s.counts[i];
        const long long a = s.displs[i], b = a + s.counts[i];
        *lo = any ? std::min(*lo, a) : a;
        *hi = any ? std::max(*hi, b) : b;
        any = true;
    }
}

}  // namespace

Shape Shape::regular(size_t n, int count) {
    Shape s;
    s.counts.assign(n, count);
    s.displs.resize(n);
    for (size_t i = 0; i < n; ++i) s.displs[i] = static_cast<int>(i) * count;
    return s;
}

Shape Shape::of(size_t n, const int* counts, const int* displs) {
    Shape s;
    s.counts.assign(counts, counts + n);
    s.displs.assign(displs, displs + n);
    return s;
}

bool Shape::negative() const {
    for (int c : counts)
        if (c < 0) return true;
    return false;
}

int Blocks::init(Fn fn, MPI_Comm comm, const void* buf, MPI_Datatype type, const Layout& unit, Shape shape, bool read,
                 bool write) {
    fn_ = fn;
    comm_ = comm;
    type_ = type;
    unit_ = unit;
    shape_ = std::move(shape);
    write_ = write;
    const size_t n = shape_.counts.size();
    const size_t size = unit.bytes;
    bytes_.resize(n);
    offsets_.resize(n);
    for (size_t i = 0; i < n; ++i) bytes_[i] = elems(shape_.counts[i]) * size;
    if (unit.direct) {
        // Chorus takes unsigned displacements: count them from the lowest.
        long long lo = 0;
        for (int d : shape_.displs) lo = std::min<long long>(lo, d);
        base_ = const_cast<char*>(static_cast<const char*>(buf)) + lo * static_cast<long long>(size);
        for (size_t i = 0; i < n; ++i) offsets_[i] = static_cast<size_t>(shape_.displs[i] - lo) * size;
        return MPI_SUCCESS;
    }
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) {
        offsets_[i] = total;
        total += bytes_[i];
    }
    if (!packable(total)) return too_large(fn, comm, total);
    // PMPI_Pack and PMPI_Unpack read and write host memory only: a device
    // buffer is seen through a host copy of the span its blocks cover.
    user_ = static_cast<char*>(view_blocks(host_, buf, shape_, type, read, write));
    if (host_.failed()) return host_.raise(fn, comm);
    staged_.resize(std::max<size_t>(total, 1));
    base_ = staged_.data();
    return MPI_SUCCESS;
}

char* Blocks::user_at(size_t i) const {
    return user_ + static_cast<MPI_Aint>(shape_.displs[i]) * unit_.extent;
}

int Blocks::pack(size_t i) {
    if (unit_.direct || bytes_[i] == 0) return MPI_SUCCESS;
    int pos = 0;
    // chorus_mpi::pack: MPI_BOTTOM too (MPICH refuses it in PMPI_Pack).
    return chorus_mpi::pack(user_at(i), shape_.counts[i], type_, block(i), static_cast<int>(bytes_[i]), &pos, comm_);
}

int Blocks::pack_all() {
    for (size_t i = 0; i < bytes_.size(); ++i)
        if (const int rc = pack(i); rc != MPI_SUCCESS) return rc;
    return MPI_SUCCESS;
}

Blocks::~Blocks() {
    if (held_ != MPI_DATATYPE_NULL) PMPI_Type_free(&held_);
}

// Only a packed buffer uses its datatype after the call returns (a
// received one to unpack it; a sent one is packed at the start). A
// duplicate is a new handle to the same type map, which MPI keeps for it.
void Blocks::hold_type() {
    if (unit_.direct || !write_ || type_ == MPI_DATATYPE_NULL || held_ != MPI_DATATYPE_NULL) return;
    if (PMPI_Type_dup(type_, &held_) != MPI_SUCCESS) {
        held_ = MPI_DATATYPE_NULL;
        return;
    }
    type_ = held_;
}

int Blocks::unpack_all() {
    if (!write_ || unit_.direct) return MPI_SUCCESS;
    for (size_t i = 0; i < bytes_.size(); ++i) {
        if (bytes_[i] == 0) continue;
        int pos = 0;
        const int rc =
            chorus_mpi::unpack(block(i), static_cast<int>(bytes_[i]), &pos, user_at(i), shape_.counts[i], type_, comm_);
        if (rc != MPI_SUCCESS) return rc;
    }
    return host_.finish() ? MPI_SUCCESS : host_.raise(fn_, comm_);
}

int Pending::own_block(Fn fn, MPI_Comm comm, bool in_place, size_t me, const void* sendbuf, int sendcount,
                       MPI_Datatype sendtype, const Layout& su) {
    in_place_ = in_place;
    me_ = me;
    if (in_place) return recv.pack(me);  // already where it goes
    const int rc = send.init(fn, comm, sendbuf, sendtype, su, Shape::one(sendcount), true, false);
    return rc != MPI_SUCCESS ? rc : send.pack_all();
}

void* view_blocks(HostStaging& st, const void* buf, const Shape& shape, MPI_Datatype type, bool read, bool write) {
    long long lo = 0, hi = 0, held = 0;
    span_of(shape, &lo, &hi, &held);
    if (hi <= lo || !st.enabled() || type == MPI_DATATYPE_NULL) return const_cast<void*>(buf);
    MPI_Aint lb = 0, extent = 0;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS) return const_cast<void*>(buf);
    const MPI_Aint shift = static_cast<MPI_Aint>(lo) * extent;
    const char* first = static_cast<const char*>(buf) + shift;
    // An output whose blocks leave gaps between them keeps what is in the
    // gaps: the host copy starts as a copy of the user's buffer, or writing
    // it back would fill the gaps with whatever the host copy held.
    const bool gaps = held < hi - lo;
    char* v = static_cast<char*>(st.view(first, static_cast<size_t>(hi - lo), type, read || (write && gaps), write));
    return v - shift;
}

}  // namespace chorus_mpi
