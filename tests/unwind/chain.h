/* chain.h — the call chain whose shape and work split the unwinding tests know by
 * construction: run_for -> middle -> leaf_a (3 parts) / leaf_b (1 part), each call kept a call
 * (noinline, and a store to sink after it), for frameless.c here and tests/arm64/hot.c.
 * Header-only: each program is one file built alone, by its test's script. Before including
 * it, a program may set CHAIN_CLOCK (the clock run_for runs by; CLOCK_MONOTONIC by default)
 * and CHAIN_LEAF_STEPS (each leaf's loop; 4000 by default). */
#ifndef OSP_TEST_CHAIN_H
#define OSP_TEST_CHAIN_H

#include <time.h>

#ifndef CHAIN_CLOCK
#define CHAIN_CLOCK CLOCK_MONOTONIC
#endif
#ifndef CHAIN_LEAF_STEPS
#define CHAIN_LEAF_STEPS 4000
#endif

static volatile double sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CHAIN_CLOCK, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static double leaf_a(double x)
{
    for (int i = 0; i < CHAIN_LEAF_STEPS; i++)
        x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

__attribute__((noinline)) static double leaf_b(double x)
{
    for (int i = 0; i < CHAIN_LEAF_STEPS; i++)
        x = x * 0.9999999 + 0.25 / (x + 2.0);
    return x;
}

/* Three parts leaf_a, one part leaf_b; the sink after each call keeps them calls, not jumps. */
__attribute__((noinline)) static double middle(double x)
{
    x = leaf_a(x);
    sink = x;
    x = leaf_a(x);
    sink = x;
    x = leaf_a(x);
    sink = x;
    x = leaf_b(x);
    sink = x;
    return x;
}

/* The chain for `seconds` of CHAIN_CLOCK; the rounds it made. */
__attribute__((noinline)) static long run_for(double seconds)
{
    double end = now() + seconds, x = 1.0;
    long rounds = 0;
    while (now() < end) {
        x = middle(x);
        rounds++;
    }
    sink = x;
    return rounds;
}

static void *worker(void *arg)
{
    run_for(*(double *)arg);
    return NULL;
}

#endif
