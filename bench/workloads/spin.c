/* spin.c — benchmark workload: THREADS threads each burn CPU for SECONDS seconds in a known
 * call chain (worker → crunch → step). Usage: spin THREADS SECONDS. Prints a checksum so the
 * work cannot be optimised away; the output does not depend on timing. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds_to_run;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

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

static void *worker(void *arg)
{
    uint64_t x = (uintptr_t)arg;
    double end = now() + seconds_to_run;
    while (now() < end)
        x = crunch(x);
    return (void *)(uintptr_t)(x & 1);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    seconds_to_run = argc > 2 ? atof(argv[2]) : 2.0;
    if (threads < 1 || threads > 4096 || seconds_to_run <= 0) {
        fprintf(stderr, "usage: spin THREADS SECONDS\n");
        return 2;
    }
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    for (int t = 0; t < threads; t++)
        pthread_create(&ids[t], NULL, worker, (void *)(uintptr_t)(t + 1));
    unsigned ones = 0;
    for (int t = 0; t < threads; t++) {
        void *r;
        pthread_join(ids[t], &r);
        ones += (unsigned)(uintptr_t)r;
    }
    free(ids);
    printf("%d threads done (%u odd)\n", threads, ones);
    return 0;
}
