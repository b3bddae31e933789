// Which MPI datatypes and ops Chorus computes, and how data is moved as bytes.
//
// Predefined types are mapped by what they are on this platform (their size,
// their signedness, the signedness of char), not by their names, so that
// MPI_LONG, MPI_INTEGER and friends land on the matching fixed-width type.
#include <climits>
#include <limits>
#include <vector>

#include "interposer.h"

namespace chorus_mpi {

namespace {

enum class Kind {
    Signed,  // integer arithmetic, bitwise and logical ops
    Unsigned,
    Float,    // SUM, PROD, MIN, MAX
    Logical,  // C _Bool, Fortran LOGICAL: LAND, LOR, LXOR
    Bytes,    // data movement only (MPI_BYTE, MPI_CHARACTER)
};

struct Basic {
    MPI_Datatype type;
    Kind kind;
    size_t size;
};

template <typename T>
Basic c_int(MPI_Datatype type) {
    return {type, std::numeric_limits<T>::is_signed ? Kind::Signed : Kind::Unsigned, sizeof(T)};
}

// Fortran types have the sizes the Fortran compiler gave them when MPI was
// built; ask MPI. A type this MPI does not provide has size 0 and is dropped.
Basic sized(MPI_Datatype type, Kind kind) {
    int size = 0;
    if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) size = 0;
    return {type, kind, static_cast<size_t>(size > 0 ? size : 0)};
}

std::vector<Basic> build_table() {
    std::vector<Basic> t = {
        // The most common first: the table is searched in order.
        {MPI_DOUBLE, Kind::Float, sizeof(double)},
        {MPI_FLOAT, Kind::Float, sizeof(float)},
        c_int<int>(MPI_INT),
        c_int<long>(MPI_LONG),
        c_int<long long>(MPI_LONG_LONG),
        c_int<long long>(MPI_LONG_LONG_INT),
        c_int<unsigned>(MPI_UNSIGNED),
        c_int<unsigned long>(MPI_UNSIGNED_LONG),
        c_int<unsigned long long>(MPI_UNSIGNED_LONG_LONG),
        c_int<short>(MPI_SHORT),
        c_int<unsigned short>(MPI_UNSIGNED_SHORT),
        c_int<char>(MPI_CHAR),
        c_int<signed char>(MPI_SIGNED_CHAR),
        c_int<unsigned char>(MPI_UNSIGNED_CHAR),
        c_int<int8_t>(MPI_INT8_T),
        c_int<uint8_t>(MPI_UINT8_T),
        c_int<int16_t>(MPI_INT16_T),
        c_int<uint16_t>(MPI_UINT16_T),
        c_int<int32_t>(MPI_INT32_T),
        c_int<uint32_t>(MPI_UINT32_T),
        c_int<int64_t>(MPI_INT64_T),
        c_int<uint64_t>(MPI_UINT64_T),
        {MPI_C_BOOL, Kind::Logical, sizeof(bool)},
        {MPI_BYTE, Kind::Bytes, 1},
        sized(MPI_DOUBLE_PRECISION, Kind::Float),
        sized(MPI_REAL, Kind::Float),
        sized(MPI_REAL4, Kind::Float),
        sized(MPI_REAL8, Kind::Float),
        sized(MPI_INTEGER, Kind::Signed),
        sized(MPI_INTEGER1, Kind::Signed),
        sized(MPI_INTEGER2, Kind::Signed),
        sized(MPI_INTEGER4, Kind::Signed),
        sized(MPI_INTEGER8, Kind::Signed),
        sized(MPI_LOGICAL, Kind::Logical),
        sized(MPI_CHARACTER, Kind::Bytes),
    };
    std::vector<Basic> usable;
    for (const Basic& b : t)
        if (b.type != MPI_DATATYPE_NULL && b.size > 0) usable.push_back(b);
    return usable;
}

const Basic* find(MPI_Datatype type) {
    static const std::vector<Basic> table = build_table();  // first use is after MPI_Init
    for (const Basic& b : table)
        if (b.type == type) return &b;
    return nullptr;
}

bool integer_type(Kind kind, size_t size, chorus_datatype_t* dt) {
    const bool s = kind == Kind::Signed;
    switch (size) {
        case 1: *dt = s ? CHORUS_INT8 : CHORUS_UINT8; return true;
        case 2: *dt = s ? CHORUS_INT16 : CHORUS_UINT16; return true;
        case 4: *dt = s ? CHORUS_INT32 : CHORUS_UINT32; return true;
        case 8: *dt = s ? CHORUS_INT64 : CHORUS_UINT64; return true;
        default: return false;
    }
}

bool map_op(MPI_Op op, chorus_op_t* out) {
    static const struct {
        MPI_Op mpi;
        chorus_op_t chorus;
    } ops[] = {
        {MPI_SUM, CHORUS_SUM},   {MPI_MAX, CHORUS_MAX},   {MPI_MIN, CHORUS_MIN},   {MPI_PROD, CHORUS_PROD},
        {MPI_BAND, CHORUS_BAND}, {MPI_BOR, CHORUS_BOR},   {MPI_BXOR, CHORUS_BXOR}, {MPI_LAND, CHORUS_LAND},
        {MPI_LOR, CHORUS_LOR},   {MPI_LXOR, CHORUS_LXOR},
    };
    for (const auto& o : ops) {
        if (o.mpi == op) {
            *out = o.chorus;
            return true;
        }
    }
    return false;  // MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP, user-defined ops
}

bool logical(chorus_op_t op) {
    return op == CHORUS_LAND || op == CHORUS_LOR || op == CHORUS_LXOR;
}

bool map_uncached(MPI_Datatype type, MPI_Op op, chorus_datatype_t* dt, chorus_op_t* cop) {
    const Basic* b = find(type);
    if (!b || !map_op(op, cop)) return false;
    switch (b->kind) {
        case Kind::Signed:
        case Kind::Unsigned: return integer_type(b->kind, b->size, dt);
        case Kind::Float:
            if (*cop != CHORUS_SUM && *cop != CHORUS_PROD && *cop != CHORUS_MIN && *cop != CHORUS_MAX) return false;
            if (b->size == 4)
                *dt = CHORUS_FLOAT32;
            else if (b->size == 8)
                *dt = CHORUS_FLOAT64;
            else
                return false;
            return true;
        case Kind::Logical:
            // Inputs are 0 or 1 (C) or the Fortran compiler's .false./.true.
            // (gfortran: 0 and 1); the logical ops give 0 or 1.
            return logical(*cop) && integer_type(Kind::Unsigned, b->size, dt);
        case Kind::Bytes: return false;
    }
    return false;
}

}  // namespace

namespace {
// The thread's last predefined type, for loops that repeat one call
// (constant-initialized: no guard on the way).
thread_local const Basic* t_last_basic CHORUS_MPI_TLS = nullptr;
const Basic* basic(MPI_Datatype type) {
    const Basic* b = t_last_basic;
    if (b && b->type == type) return b;
    b = find(type);
    if (b) t_last_basic = b;
    return b;
}
}  // namespace

size_t basic_size(MPI_Datatype type) {
    if (type == MPI_DATATYPE_NULL) return 0;
    const Basic* b = basic(type);
    return b ? b->size : 0;
}

bool layout_of(MPI_Datatype type, int count, Layout* out) {
    if (type == MPI_DATATYPE_NULL || count < 0) return false;
    if (const Basic* b = basic(type)) {
        out->bytes = static_cast<size_t>(count) * b->size;
        out->direct = true;
        out->extent = static_cast<MPI_Aint>(b->size);
        return true;
    }
    int ints = 0, addrs = 0, types = 0, combiner = 0;
    MPI_Count size = 0;
    MPI_Aint lb = 0, extent = 0;
    if (PMPI_Type_get_envelope(type, &ints, &addrs, &types, &combiner) != MPI_SUCCESS ||
        PMPI_Type_size_x(type, &size) != MPI_SUCCESS || PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        size < 0)
        return false;
    out->bytes = static_cast<size_t>(count) * static_cast<size_t>(size);
    // Only a predefined type is known to store its typemap in order; a
    // derived one may permute or space out its elements: pack it.
    out->direct = combiner == MPI_COMBINER_NAMED && lb == 0 && extent == static_cast<MPI_Aint>(size);
    out->extent = extent;
    return true;
}

namespace {

// MPICH (4.0.2 and 4.1 at least: pmodels/mpich#6410) takes MPI_BOTTOM, its
// null pointer, for a null buffer in MPI_Pack and MPI_Unpack and fails the
// call, although its collectives take MPI_BOTTOM as MPI defines it. The same
// bytes are named from a base that is not null: one element of the datatype
// wrapped at the displacement that leads from that base back to address 0.
const char kBase = 0;

template <typename Call>
int from_bottom(int count, MPI_Datatype type, Call&& call) {
    MPI_Aint base = 0;
    int rc = PMPI_Get_address(&kBase, &base);
    if (rc != MPI_SUCCESS) return rc;
    MPI_Aint to_bottom = -base;
    MPI_Datatype at_bottom = MPI_DATATYPE_NULL;
    if ((rc = PMPI_Type_create_hindexed(1, &count, &to_bottom, type, &at_bottom)) != MPI_SUCCESS) return rc;
    if ((rc = PMPI_Type_commit(&at_bottom)) == MPI_SUCCESS) rc = call(&kBase, at_bottom);
    PMPI_Type_free(&at_bottom);
    return rc;
}

}  // namespace

int pack(const void* inbuf, int count, MPI_Datatype type, void* outbuf, int outsize, int* position, MPI_Comm comm) {
    if (inbuf != MPI_BOTTOM || count <= 0) return PMPI_Pack(inbuf, count, type, outbuf, outsize, position, comm);
    return from_bottom(count, type, [&](const void* base, MPI_Datatype t) {
        return PMPI_Pack(base, 1, t, outbuf, outsize, position, comm);
    });
}

int unpack(const void* inbuf, int insize, int* position, void* outbuf, int count, MPI_Datatype type, MPI_Comm comm) {
    if (outbuf != MPI_BOTTOM || count <= 0) return PMPI_Unpack(inbuf, insize, position, outbuf, count, type, comm);
    return from_bottom(count, type, [&](const void* base, MPI_Datatype t) {
        return PMPI_Unpack(inbuf, insize, position, const_cast<void*>(base), 1, t, comm);
    });
}

// A thread's last mapping. Only predefined types and ops map, and their
// handles live as long as MPI, so a remembered pair never goes stale.
bool map_reduction(MPI_Datatype type, MPI_Op op, chorus_datatype_t* dt, chorus_op_t* cop) {
    struct Last {
        MPI_Datatype type;
        MPI_Op op;
        chorus_datatype_t dt;
        chorus_op_t cop;
        bool valid;
    };
    static thread_local Last last CHORUS_MPI_TLS = {MPI_DATATYPE_NULL, MPI_OP_NULL, CHORUS_UINT8, CHORUS_SUM, false};
    if (last.valid && last.type == type && last.op == op) {
        *dt = last.dt;
        *cop = last.cop;
        return true;
    }
    if (!map_uncached(type, op, dt, cop)) return false;
    last = {type, op, *dt, *cop, true};
    return true;
}

}  // namespace chorus_mpi
