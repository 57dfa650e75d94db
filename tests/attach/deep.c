/* deep.c — a program started without the profiler, for tests/e2e-attach-deep.sh: built with
 * frame pointers, its main thread recurses DEPTH deep (default 300, deeper than a record's
 * 128 frames: main -> deep_descend x DEPTH -> deep_spin) and burns CPU in deep_spin for
 * SECONDS of wall time (default 5), then prints "done DEPTH" and exits with status 0. A
 * frame of the descent is about 32 bytes: the whole stack fits a sample's 16 KiB copy.
 * Prints "ready" once it spins at the bottom. Usage: deep [SECONDS [DEPTH]]. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void deep_spin(double seconds)
{
    printf("ready\n");
    fflush(stdout);
    double until = now() + seconds;
    while (now() < until)
        for (int i = 0; i < 100000; i++)
            sink += (unsigned long)i;
}

/* One frame of the descent; the use after the call keeps it from becoming a jump. */
__attribute__((noinline)) static void deep_descend(int depth, double seconds)
{
    if (depth <= 1)
        deep_spin(seconds);
    else
        deep_descend(depth - 1, seconds);
    sink += (unsigned long)depth;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    int depth = argc > 2 ? atoi(argv[2]) : 300;
    deep_descend(depth, seconds);
    printf("done %d\n", depth);
    return 0;
}
