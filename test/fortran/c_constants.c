/* chorus.h's constants as the C compiler sees them, in the order of the list
 * in test_chorus_fortran.f90 (test_constants), so a value that changes in
 * chorus.h but not in lib/fortran/chorus.F90 fails the test. */
#include "chorus.h"

int chorus_test_c_constants(int* out, int n);

int chorus_test_c_constants(int* out, int n) {
    static const int v[] = {
        CHORUS_VERSION_MAJOR,
        CHORUS_VERSION_MINOR,
        CHORUS_VERSION_PATCH,
        CHORUS_SUCCESS,
        CHORUS_ERR_INVALID_ARGUMENT,
        CHORUS_ERR_UNSUPPORTED,
        CHORUS_ERR_OUT_OF_MEMORY,
        CHORUS_ERR_TRANSPORT,
        CHORUS_ERR_CUDA,
        CHORUS_ERR_TIMEOUT,
        CHORUS_ERR_PEER_FAILED,
        CHORUS_ERR_COMM_FAILED,
        CHORUS_ERR_MISMATCH,
        CHORUS_ERR_INTERNAL,
        CHORUS_ERR_CONFIG,
        CHORUS_INT8,
        CHORUS_UINT8,
        CHORUS_INT16,
        CHORUS_UINT16,
        CHORUS_INT32,
        CHORUS_UINT32,
        CHORUS_INT64,
        CHORUS_UINT64,
        CHORUS_FLOAT16,
        CHORUS_BFLOAT16,
        CHORUS_FLOAT32,
        CHORUS_FLOAT64,
        CHORUS_NUM_DATATYPES,
        CHORUS_SUM,
        CHORUS_PROD,
        CHORUS_MIN,
        CHORUS_MAX,
        CHORUS_AVG,
        CHORUS_BAND,
        CHORUS_BOR,
        CHORUS_BXOR,
        CHORUS_LAND,
        CHORUS_LOR,
        CHORUS_LXOR,
        CHORUS_NUM_OPS,
    };
    const int count = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; i < count && i < n; i++) out[i] = v[i];
    return count;
}
