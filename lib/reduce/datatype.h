// Facts about Chorus datatypes and operators: sizes, names, validity and
// which (datatype, op) pairs are defined. Everything above the reducers
// (algorithms, the cost model, argument checks) needs these and nothing else
// of lib/reduce.
#pragma once

#include <cstddef>

#include "chorus.h"

namespace chorus {

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
