/* timing.h — what the walk benchmarks share (walk.c, ../stacks/stacks.c): the monotonic clock
 * in ns and the order qsort needs for a median and a percentile of times. */
#ifndef BENCH_WALK_TIMING_H
#define BENCH_WALK_TIMING_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#endif
