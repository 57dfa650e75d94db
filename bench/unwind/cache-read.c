/* cache-read.c — what reading an object's unwind rows back from the cache costs ospreyd:
 * ospd_unwind_build on each object given, once to build and keep its rows in CACHE_DIR, then
 * 30 times from the cache; the median of those, beside the build's time. Built and run by
 * cache-read.sh against a build directory's libraries.
 * Usage: cache-read CACHE_DIR OBJECT... */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ospd_unwind.h"

#define ROUNDS 30

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: cache-read CACHE_DIR OBJECT...\n");
        return 2;
    }
#if defined(__aarch64__)
    const uint16_t machine = EM_AARCH64;
#else
    const uint16_t machine = EM_X86_64;
#endif
    for (int i = 2; i < argc; i++) {
        struct ospd_unwind_source src = {.path = argv[i], .machine = machine, .cache_dir = argv[1]};
        struct ospd_unwind_rows rows;
        char err[256];
        double start = now();
        if (ospd_unwind_build(&src, &rows, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            continue;
        }
        double built = now() - start;
        uint32_t count = rows.count;
        ospd_unwind_rows_free(&rows);
        double times[ROUNDS];
        int cached = 0;
        for (int k = 0; k < ROUNDS; k++) {
            start = now();
            if (ospd_unwind_build(&src, &rows, err, sizeof err) == 0)
                cached += rows.from_cache;
            times[k] = now() - start;
            ospd_unwind_rows_free(&rows);
        }
        qsort(times, ROUNDS, sizeof *times, by_value);
        printf("%s: %u rows, built in %.1f ms, read back in %.2f ms (median of %d; %d from the "
               "cache)\n",
               argv[i], count, built * 1e3, times[ROUNDS / 2] * 1e3, ROUNDS, cached);
    }
    return 0;
}
