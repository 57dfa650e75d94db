/* A process that burns CPU in one known function, for `osprey top` (tests/e2e-top.sh): built
 * without frame pointers, it prints "ready" and spins until killed. */
#include <stdio.h>

volatile unsigned long burn_sink;

__attribute__((noinline)) static void burn_cycles(void)
{
    for (unsigned long i = 0; i < 100000; i++)
        burn_sink = burn_sink * 6364136223846793005ul + i; /* volatile: every round is work */
}

int main(void)
{
    printf("ready\n");
    fflush(stdout);
    for (;;)
        burn_cycles();
}
