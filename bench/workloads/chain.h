/* chain.h — the known call chain the benchmark workloads burn CPU in (crunch → step), so a
 * profile of any of them has the same two hot functions. Header-only: each workload is one
 * file built alone. */
#ifndef OSP_BENCH_CHAIN_H
#define OSP_BENCH_CHAIN_H

#include <stdint.h>

static __attribute__((noinline)) uint64_t step(uint64_t x)
{
    for (int i = 0; i < 1000; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}

static __attribute__((noinline)) uint64_t crunch(uint64_t x)
{
    for (int i = 0; i < 100; i++)
        x = step(x);
    return x;
}

#endif
