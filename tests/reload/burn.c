/* burn.c — the library tests/e2e-reload.sh builds twice, as liba.so (BURN = burn_a) and
 * libb.so (BURN = burn_b): the same code and layout under two names, so the second, loaded
 * after the first is unloaded, lands where the first was. */
#include <time.h>

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Burns `seconds` of CPU time; returns a value that depends on the work. */
__attribute__((noinline)) unsigned long BURN(double seconds)
{
    double end = cpu_seconds() + seconds;
    unsigned long x = 1;
    while (cpu_seconds() < end)
        for (int i = 0; i < 20000; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
    return x;
}
