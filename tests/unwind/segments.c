/* segments.c — a program whose code is in two PF_X segments: far_work lives in a section of
 * its own placed far from .text (-Wl,--section-start=far_text=0x200000), which the linker
 * gives a PT_LOAD of its own, as node's three executable segments. Runs far_work for 0.4 s,
 * then prints one bit. */
#include <stdio.h>
#include <time.h>

__attribute__((section("far_text"), noinline)) unsigned long far_work(unsigned long n)
{
    volatile unsigned long s = 0; /* a loop the compiler keeps */
    for (unsigned long i = 0; i < n; i++)
        s += i % 7;
    return s;
}

int main(void)
{
    struct timespec t0, t;
    unsigned long s = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        s += far_work(2000000);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 400000000L);
    printf("%lu\n", s & 1);
    return 0;
}
