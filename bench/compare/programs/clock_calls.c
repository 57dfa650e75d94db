/* clock_calls.c — time spent in the vDSO: clock_gettime(CLOCK_MONOTONIC) in a loop runs in
 * the kernel-provided [vdso] object, which has no file on disk. read_clock is the caller. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static __attribute__((noinline)) uint64_t read_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) uint64_t mix(uint64_t x, long n)
{
    for (long i = 0; i < n; i++)
        x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ULL;
    return x;
}

int main(void)
{
    uint64_t odd = 0;
    for (long i = 0; i < 12000000; i++)
        odd += read_clock() & 1;
    uint64_t x = mix(odd > 0, 100000000L);
    printf("%d\n", (int)(x != 0)); /* the clock values themselves are not deterministic */
    return 0;
}
