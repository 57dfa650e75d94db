/* fixed.c — benchmark workload: a fixed amount of single-threaded work (ROUNDS calls of a
 * known call chain, main → crunch → step), so a profiler's cost shows as extra CPU time, not
 * as less work done. Usage: fixed ROUNDS. Prints a checksum and the program's own CPU time at
 * the end of main, from getrusage: `cpu_ns PROCESS MAIN_THREAD` (RUSAGE_SELF, RUSAGE_THREAD),
 * so the caller can tell the program's CPU from whatever runs around it (perf, the loader,
 * exit handlers). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "chain.h"

static long long usage_ns(int who)
{
    struct rusage ru;
    if (getrusage(who, &ru) != 0)
        return -1;
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 10000;
    if (rounds < 1) {
        fprintf(stderr, "usage: fixed ROUNDS\n");
        return 2;
    }
    uint64_t x = 1;
    for (long r = 0; r < rounds; r++)
        x = crunch(x);
    printf("checksum %llu\n", (unsigned long long)(x & 0xffff));
    printf("cpu_ns %lld %lld\n", usage_ns(RUSAGE_SELF), usage_ns(RUSAGE_THREAD));
    return 0;
}
