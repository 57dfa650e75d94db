/* compute_read.c — the shape of every event loop and client: compute for about a
 * millisecond, send a request, then block reading the reply, which another thread sends a
 * millisecond later. The reader is blocked half the time; its on-CPU time is almost all
 * compute_ms, and its time inside read is what the kernel spends copying a byte (its system
 * time, which it prints from getrusage), not the time it sleeps there. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 1000

static int pipe_fds[2], request_fds[2];
static volatile uint64_t sink;

static __attribute__((noinline)) void compute_ms(void)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start); /* the vDSO's clock: no system call */
    uint64_t x = sink;
    do {
        for (int i = 0; i < 2000; i++)
            x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ULL;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 1000000L);
    sink = x;
}

static void *writer(void *arg)
{
    (void)arg;
    struct timespec ms = {0, 1000000};
    char c;
    for (int i = 0; i < ROUNDS; i++) {
        if (read(request_fds[0], &c, 1) != 1)
            break;
        nanosleep(&ms, NULL);
        if (write(pipe_fds[1], "x", 1) != 1)
            break;
    }
    return NULL;
}

int main(void)
{
    if (pipe(pipe_fds) != 0 || pipe(request_fds) != 0)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    char c;
    for (int i = 0; i < ROUNDS; i++) {
        compute_ms();
        if (write(request_fds[1], "?", 1) != 1 || read(pipe_fds[0], &c, 1) != 1)
            return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    double user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    double sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    pthread_join(t, NULL);
    printf("reader system time %.2f%%\n", 100.0 * sys / (user + sys));
    return 0;
}
