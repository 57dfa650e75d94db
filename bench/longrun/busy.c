/* busy.c — THREADS threads busy for SECONDS seconds, each in a few call stacks of its own
 * (a recursion of 1 to 4 levels over three leaf functions), as a server's workers are: what
 * bench/longrun/run.sh profiles for a long time. Usage: busy THREADS SECONDS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned leaf_a(unsigned x)
{
    for (int i = 0; i < 20000; i++)
        x = x * 1103515245u + 12345u;
    return x;
}
__attribute__((noinline)) static unsigned leaf_b(unsigned x)
{
    for (int i = 0; i < 30000; i++)
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    return x;
}
__attribute__((noinline)) static unsigned leaf_c(unsigned x)
{
    for (int i = 0; i < 10000; i++)
        x = x * 2654435761u ^ (x >> 7);
    return x;
}
__attribute__((noinline)) static unsigned level(unsigned depth, unsigned x)
{
    if (depth > 0)
        return level(depth - 1, x) + 1;
    switch (x % 3) {
    case 0:
        return leaf_a(x);
    case 1:
        return leaf_b(x);
    default:
        return leaf_c(x);
    }
}

static void *worker(void *arg)
{
    unsigned x = (unsigned)(size_t)arg * 7919u + 1u, sink = 0;
    double end = now() + seconds;
    while (now() < end) {
        for (int i = 0; i < 64; i++) {
            x = x * 1664525u + 1013904223u;
            sink += level(x >> 28 & 3u, x >> 8);
        }
    }
    return (void *)(size_t)sink;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    seconds = argc > 2 ? atof(argv[2]) : 120;
    if (threads < 1 || threads > 1024 || seconds <= 0) {
        fprintf(stderr, "usage: busy THREADS SECONDS\n");
        return 2;
    }
    pthread_t t[1024];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(size_t)i) != 0)
            return 1;
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return 0;
}
