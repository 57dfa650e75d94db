/* hot.c — the arm64 end-to-end program (tests/e2e-arm64.sh): two threads whose call chains
 * and work split are known by construction, built for arm64 with and without frame pointers
 * and run under qemu-aarch64. main -> run_for -> middle -> leaf_a (3 parts) / leaf_b (1 part),
 * and a thread worker -> run_for -> the same. Arguments: seconds to run (default 1.5) and the
 * exit status to end with (default 0); it prints one line, which must come through profiling
 * unchanged. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static double leaf_a(double x)
{
    for (int i = 0; i < 4000; i++)
        x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

__attribute__((noinline)) static double leaf_b(double x)
{
    for (int i = 0; i < 4000; i++)
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

int main(int argc, char **argv)
{
    double seconds = argc >= 2 ? atof(argv[1]) : 1.5;
    int status = argc >= 3 ? atoi(argv[2]) : 0;
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker, &seconds) != 0)
        return 99;
    long rounds = run_for(seconds);
    pthread_join(thread, NULL);
    printf("hot: %s rounds, exit %d\n", rounds > 0 ? "some" : "no", status);
    return status;
}
