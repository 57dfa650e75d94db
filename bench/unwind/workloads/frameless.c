/* frameless.c — bench/unwind's cost workload: a fixed amount of single-threaded work in a known
 * chain of non-inlined functions (main → outer → middle → leaf_a / leaf_b, 3:1), built twice by
 * bench/unwind/unwind.py: `gcc -O2` (GCC omits the frame pointer: every frame needs .eh_frame
 * to be walked) and `gcc -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer`. Usage:
 * frameless ROUNDS. Prints a checksum and the program's own CPU time at the end of main, from
 * getrusage: `cpu_ns PROCESS MAIN_THREAD`, as bench/workloads/fixed.c does. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static __attribute__((noinline)) uint64_t leaf_a(uint64_t x)
{
    for (int i = 0; i < 300; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}

static __attribute__((noinline)) uint64_t leaf_b(uint64_t x)
{
    for (int i = 0; i < 100; i++)
        x ^= (x << 13) ^ (x >> 7) ^ (uint64_t)i;
    return x;
}

static __attribute__((noinline)) uint64_t middle(uint64_t x, int n)
{
    for (int i = 0; i < n; i++)
        x = leaf_a(x) + leaf_b(x + (uint64_t)i);
    return x;
}

static __attribute__((noinline)) uint64_t outer(uint64_t x)
{
    for (int i = 0; i < 10; i++)
        x = middle(x, 10 + (int)(x & 1));
    return x;
}

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
    long rounds = argc > 1 ? atol(argv[1]) : 1000;
    if (rounds < 1) {
        fprintf(stderr, "usage: frameless ROUNDS\n");
        return 2;
    }
    uint64_t x = 1;
    for (long r = 0; r < rounds; r++)
        x = outer(x);
    printf("checksum %llu\n", (unsigned long long)(x & 0xffff));
    printf("cpu_ns %lld %lld\n", usage_ns(RUSAGE_SELF), usage_ns(RUSAGE_THREAD));
    return 0;
}
