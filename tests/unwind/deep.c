/* deep.c — a program whose samples are deeper than a record's 128 frames, and whose stack is
 * longer than a 32 KiB stack copy: main -> descend (DEPTH calls, default 300, a 128-byte
 * array each) -> chain.h's run_for -> middle -> leaf_a / leaf_b, for SECONDS of the thread's
 * CPU time (default 1.0). Built without frame pointers (gcc -O2) by tests/e2e-deep.sh.
 * Usage: deep [SECONDS [DEPTH]]. */
#include <stdio.h>
#include <stdlib.h>

#define CHAIN_CLOCK      CLOCK_THREAD_CPUTIME_ID
#define CHAIN_LEAF_STEPS 20000
#include "chain.h"

/* One frame of the descent: the array keeps it about 144 bytes, the use after the call keeps
 * the call from becoming a jump. */
__attribute__((noinline)) static long descend(int depth, double seconds)
{
    volatile unsigned char frame[128];
    frame[depth % 128] = (unsigned char)depth;
    long r = depth <= 0 ? run_for(seconds) : descend(depth - 1, seconds);
    return r + frame[depth % 128];
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int depth = argc > 2 ? atoi(argv[2]) : 300;
    (void)worker; /* chain.h's, for programs with threads */
    sink = (double)descend(depth, seconds);
    printf("deep: %d frames\n", depth);
    return 0;
}
