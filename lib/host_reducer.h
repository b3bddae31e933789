// Element-wise reduction of host buffers, and datatype/op metadata.
#pragma once

#include <cstddef>

#include "chorus.h"

namespace chorus {

// dst[i] = a[i] op b[i] for i < count. dst may be the same buffer as a or b
// (or both), but must not partially overlap either. AVG reduces as SUM.
// dt and op must already be valid and supported together (op_supported).
// An out-of-place result of 8 MiB or more is written with non-temporal
// (cache-bypassing) stores; smaller results, and in-place ones, stay cached.
void host_reduce(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count);

// AVG finalisation: dst[i] = dst[i] / divisor, divisor >= 1. Floating types
// divide in their own arithmetic (float16/bfloat16 in float, then rounded to
// nearest even once); integer types use C division, truncating toward zero.
void host_divide(chorus_datatype_t dt, void* dst, size_t count, int divisor);

// Bytes per element; 0 for an invalid datatype.
size_t datatype_size(chorus_datatype_t dt);

// "int8", "uint8", ..., "float16", "bfloat16", "float32", "float64";
// "invalid" for anything else.
const char* datatype_name(chorus_datatype_t dt);

// "sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "land", "lor",
// "lxor"; "invalid" for anything else.
const char* op_name(chorus_op_t op);

bool datatype_valid(int dt);
bool op_valid(int op);

// Whether `op` is defined on `dt`: SUM, PROD, MIN, MAX and AVG on every
// datatype; the bitwise and logical operators on integer types only. False
// when either is invalid.
bool op_supported(chorus_datatype_t dt, chorus_op_t op);

}  // namespace chorus
