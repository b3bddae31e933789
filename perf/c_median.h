/* The median of the C benchmarks' blocks (sorts `v` in place). */
#pragma once

#include <stdlib.h>

static inline int chorus_perf_compare(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

static inline double chorus_perf_median(double* v, int n) {
    qsort(v, (size_t)n, sizeof *v, chorus_perf_compare);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
