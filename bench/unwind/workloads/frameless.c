/* frameless.c — bench/unwind's cost workload: a fixed amount of single-threaded work in a known
 * chain of non-inlined functions (main → outer → middle → leaf_a / leaf_b, 3:1), built twice by
 * bench/unwind/unwind.py: `gcc -O2` (GCC omits the frame pointer: every frame needs .eh_frame
 * to be walked) and `gcc -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer`. Usage:
 * frameless ROUNDS. Prints a checksum and the program's own CPU time at the end of main, as
 * bench/workloads/fixed.c does (bench/workloads/fixed_main.h). */
#define _GNU_SOURCE
#include <stdint.h>

#include "../../workloads/fixed_main.h"

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

int main(int argc, char **argv)
{
    return fixed_main(argc, argv, "frameless", 1000, outer);
}
