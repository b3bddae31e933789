#include "reduce/datatype.h"

namespace chorus {

namespace {

struct Facts {
    const char* name;
    size_t size;
    bool integer;
};

// Indexed by chorus_datatype_t.
constexpr Facts kFacts[CHORUS_NUM_DATATYPES] = {
    {"int8", 1, true},     {"uint8", 1, true},     {"int16", 2, true},    {"uint16", 2, true},
    {"int32", 4, true},    {"uint32", 4, true},    {"int64", 8, true},    {"uint64", 8, true},
    {"float16", 2, false}, {"bfloat16", 2, false}, {"float32", 4, false}, {"float64", 8, false},
};
static_assert(CHORUS_INT8 == 0 && CHORUS_FLOAT64 == 11 && CHORUS_NUM_DATATYPES == 12,
              "kFacts is indexed by chorus_datatype_t");

}  // namespace

size_t datatype_size(chorus_datatype_t dt) {
    return datatype_valid(dt) ? kFacts[dt].size : 0;
}

const char* datatype_name(chorus_datatype_t dt) {
    return datatype_valid(dt) ? kFacts[dt].name : "invalid";
}

const char* op_name(chorus_op_t op) {
    switch (op) {
        case CHORUS_SUM: return "sum";
        case CHORUS_PROD: return "prod";
        case CHORUS_MIN: return "min";
        case CHORUS_MAX: return "max";
        case CHORUS_AVG: return "avg";
        case CHORUS_BAND: return "band";
        case CHORUS_BOR: return "bor";
        case CHORUS_BXOR: return "bxor";
        case CHORUS_LAND: return "land";
        case CHORUS_LOR: return "lor";
        case CHORUS_LXOR: return "lxor";
    }
    return "invalid";
}

bool datatype_valid(int dt) {
    return dt >= 0 && dt < CHORUS_NUM_DATATYPES;
}

bool op_valid(int op) {
    return op >= 0 && op < CHORUS_NUM_OPS;
}

bool op_supported(chorus_datatype_t dt, chorus_op_t op) {
    if (!datatype_valid(dt) || !op_valid(op)) return false;
    return op <= CHORUS_AVG || kFacts[dt].integer;
}

}  // namespace chorus
