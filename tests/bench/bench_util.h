/* bench_util.h: the clock and the median the benchmark programs share. */
#ifndef GPUDIFF_BENCH_UTIL_H
#define GPUDIFF_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

/* Monotonic time in seconds. */
static inline double
bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double
bench_now_ms(void)
{
    return bench_now_s() * 1e3;
}

/* qsort's comparison of doubles, ascending. */
static inline int
bench_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Sorts v[0..n) and returns v[n / 2] (the median for odd n, the upper one for even n). */
static inline double
bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

#endif
