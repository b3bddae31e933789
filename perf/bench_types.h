// Datatypes and operators of chorus-bench: names, sizes, MPI equivalents,
// half-precision encodings, and the validation inputs with their exact
// reference results.
//
// Inputs are chosen so that the result does not depend on reduction order:
//  - floating SUM/AVG: small integers in [-3, 3], sums are exact;
//  - floating PROD: +-1 everywhere, except one +-2 per element (from rank
//    i % n), so every product is exactly +-2;
//  - floating MIN/MAX: integers in [-100, 100] (exact even in bfloat16);
//  - integer types: hashed values over the whole range; SUM and PROD wrap and
//    the reference wraps the same way with unsigned modular arithmetic.
// Comparison is bitwise.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "chorus.h"

namespace bench {

struct TypeInfo {
    const char* name;
    chorus_datatype_t dt;
    size_t size;
    bool is_float;
    bool is_signed;
    MPI_Datatype mpi;  // MPI_DATATYPE_NULL when MPI has no equivalent
};

struct OpInfo {
    const char* name;
    chorus_op_t op;
    MPI_Op mpi;  // MPI_OP_NULL when MPI has no equivalent
};

// Lookups by name; nullptr when unknown.
const TypeInfo* find_type(const std::string& name);
const OpInfo* find_op(const std::string& name);
// An MPI type of `size` bytes that MPI moves as they are (data movement
// needs no arithmetic: float16 travels as uint16).
MPI_Datatype same_size_type(size_t size);
// Comma-separated list of all names, for help and error messages.
std::string type_names();
std::string op_names();

// IEEE binary16 and bfloat16 encodings, rounding to nearest even.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t h);

// Fill `count` elements of `buf` with what rank `rank` of `nranks`
// contributes; `first` is the global index of buf[0].
void fill_input(const TypeInfo& t, chorus_op_t op, int rank, int nranks, size_t first, void* buf, size_t count);

// Check `count` elements of `buf` against the reduction with `op` over all
// `nranks` ranks' inputs (global indices first, first+1, ...). Returns the
// number of elements that differ bitwise.
size_t check_reduced(const TypeInfo& t, chorus_op_t op, int nranks, size_t first, const void* buf, size_t count);

// Check `count` elements of `buf` against rank `src`'s input at global
// indices first, first+1, ... (broadcast and all-gather results).
size_t check_copied(const TypeInfo& t, chorus_op_t op, int src, int nranks, size_t first, const void* buf,
                    size_t count);

}  // namespace bench
