/* own_clocks.h — the clocks a waiting workload reports its own cost with (idle.c,
 * pipe_stream.c): the process's CPU time (getrusage RUSAGE_SELF, user and system) and the
 * monotonic clock, in nanoseconds. Header-only: each workload is one file built alone. */
#ifndef OSP_BENCH_OWN_CLOCKS_H
#define OSP_BENCH_OWN_CLOCKS_H

#include <sys/resource.h>
#include <time.h>

static long long usage_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
