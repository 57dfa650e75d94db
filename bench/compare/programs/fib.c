/* fib.c — deep recursion: one recursive function owns nearly all the time, at depths up to
 * ~35 frames. Expected: fib ≈ 100% self. */
#include <stdio.h>

static __attribute__((noinline)) long fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(void)
{
    volatile int n = 39; /* opaque to the optimizer: computed at run time */
    long total = 0;
    for (int i = 0; i < 3; i++)
        total += fib(n + i % 2);
    printf("fib total = %ld\n", total);
    return 0;
}
