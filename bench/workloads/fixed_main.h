/* fixed_main.h — the main of a fixed-work benchmark workload (fixed.c, bench/unwind's
 * frameless.c): ROUNDS calls of the workload's own chain, then a checksum and the program's
 * own CPU time at the end of main, from getrusage: `cpu_ns PROCESS MAIN_THREAD`
 * (RUSAGE_SELF, RUSAGE_THREAD), so the caller can tell the program's CPU from whatever runs
 * around it (perf, the loader, exit handlers). Header-only: each workload is one file built
 * alone; inlined into main, so the chain's root is main. */
#ifndef OSP_BENCH_FIXED_MAIN_H
#define OSP_BENCH_FIXED_MAIN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static long long usage_ns(int who)
{
    struct rusage ru;
    if (getrusage(who, &ru) != 0)
        return -1;
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

/* `name ROUNDS` (default_rounds without one): `round` called ROUNDS times on a running value. */
static inline __attribute__((always_inline)) int fixed_main(int argc, char **argv, const char *name,
                                                            long default_rounds,
                                                            uint64_t (*round)(uint64_t))
{
    long rounds = argc > 1 ? atol(argv[1]) : default_rounds;
    if (rounds < 1) {
        fprintf(stderr, "usage: %s ROUNDS\n", name);
        return 2;
    }
    uint64_t x = 1;
    for (long r = 0; r < rounds; r++)
        x = round(x);
    printf("checksum %llu\n", (unsigned long long)(x & 0xffff));
    printf("cpu_ns %lld %lld\n", usage_ns(RUSAGE_SELF), usage_ns(RUSAGE_THREAD));
    return 0;
}

#endif
