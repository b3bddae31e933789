// Element-wise reduction of host buffers.
#pragma once

#include <cstddef>
#include <cstring>

#include "chorus.h"
#include "reduce/datatype.h"

namespace chorus {

// dst[i] = a[i] op b[i] for i < count. dst may be the same buffer as a or b
// (or both), but must not partially overlap either. AVG reduces as SUM.
// dt and op must already be valid and supported together (op_supported).
// When both operands of a floating SUM or PROD are NaN, a's NaN (quieted)
// is the result, in every loop, as on the device.
// An out-of-place result of 8 MiB or more is written with non-temporal
// (cache-bypassing) stores; smaller results, and in-place ones, stay cached.
void host_reduce(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count);
// host_reduce with an out-of-place result written with non-temporal stores
// whatever its size (a piece of a result far larger than the caches).
void host_reduce_stream(chorus_datatype_t dt, chorus_op_t op, void* dst, const void* a, const void* b, size_t count);

// dst = src, `bytes`, written with non-temporal stores where the CPU has
// them (a large result that will not be read again soon: it does not evict
// what the caches hold, nor read dst's lines first). The buffers must not
// overlap.
void host_copy_stream(void* dst, const void* src, size_t bytes);

// dst = src, `bytes` (not overlapping): the copies into and out of the
// publish slots and the schedules' other host copies. From kRepMovsbBytes
// on, x86's string move (fast on CPUs with ERMS/FSRM): measured at np=2 in
// loops of broadcasts through the slots, the reader pulling the lines from
// the writer's cache, 2 KiB took 0.32-0.35 us a call against 0.61-0.67 with
// the C library's vector loop (which it keeps below its own threshold),
// 1 KiB 0.27 against 0.40, 768 bytes 0.25 against 0.29-0.32; 512 bytes
// 0.26 against 0.19-0.20.
constexpr size_t kRepMovsbBytes = 768;
inline void host_copy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
    if (bytes >= kRepMovsbBytes) {
        asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(bytes) : : "memory");
        return;
    }
#endif
    std::memcpy(dst, src, bytes);
}

// AVG finalisation: dst[i] = dst[i] / divisor, divisor >= 1. Floating types
// divide in their own arithmetic (float16/bfloat16 in float, then rounded to
// nearest even once); integer types use C division, truncating toward zero.
void host_divide(chorus_datatype_t dt, void* dst, size_t count, int divisor);

}  // namespace chorus
