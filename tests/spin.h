/* spin.h — the helper programs' clock and CPU burner (test-shim-target.c,
 * test-shim-blocking.c: each a program of its own, built from one file and this header). */
#ifndef OSP_TEST_SPIN_H
#define OSP_TEST_SPIN_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

#ifndef SPIN_ROUNDS
#define SPIN_ROUNDS 1000 /* rounds of arithmetic between two readings of the clock */
#endif

/* Burns the CPU for `ns` of wall time, in a function of its own (a frame in the profile). */
static __attribute__((noinline, unused)) void spin_for(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    uint64_t x = 1;
    while (now_ns() < end)
        for (int i = 0; i < SPIN_ROUNDS; i++)
            x = x * 6364136223846793005u + 1442695040888963407u;
    sink = x;
}

#endif
