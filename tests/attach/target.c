/* target.c — a program started without the profiler, for tests/e2e-attach.sh: built without
 * frame pointers, its main thread burns CPU in attach_hot_leaf (under attach_hot_middle,
 * under main) and naps in attach_wait_site between bursts; once the file argv[1] exists it
 * starts a thread that burns in attach_late_leaf for 0.8 s and ends (one started and
 * joined at the start has set up what glibc keeps for threads). After argv[2] seconds it
 * prints "done N" and exits with status 3.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void attach_hot_leaf(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i * i;
}

__attribute__((noinline)) void attach_hot_middle(unsigned long n)
{
    attach_hot_leaf(n);
    sink++;
}

__attribute__((noinline)) void attach_wait_site(void)
{
    struct timespec nap = {0, 5000000}; /* 5 ms */
    nanosleep(&nap, NULL);
    sink++;
}

__attribute__((noinline)) void attach_late_leaf(double until)
{
    while (now() < until)
        for (int i = 0; i < 100000; i++)
            sink += (unsigned long)i;
}

static void *nothing(void *arg)
{
    return arg;
}

static void *late(void *arg)
{
    (void)arg;
    attach_late_leaf(now() + 0.8);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    double end = now() + atof(argv[2]);
    /* A thread started and joined first: what glibc sets up at the first pthread_create (its
     * handlers, the heap, a cached stack) is there before any snapshot is taken. */
    pthread_t warm;
    if (pthread_create(&warm, NULL, nothing, NULL) == 0)
        pthread_join(warm, NULL);
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("ready\n");
    int started = 0;
    pthread_t thread;
    unsigned long rounds = 0;
    while (now() < end) {
        attach_hot_middle(3000000);
        attach_wait_site();
        rounds++;
        if (!started && access(argv[1], F_OK) == 0)
            started = pthread_create(&thread, NULL, late, NULL) == 0;
    }
    if (started)
        pthread_join(thread, NULL);
    /* The program's first timer after the profile: id 0, as without it (nothing of ours took
     * one). */
    timer_t timer;
    struct sigevent none = {.sigev_notify = SIGEV_NONE};
    long id = timer_create(CLOCK_MONOTONIC, &none, &timer) == 0 ? (long)(intptr_t)timer : -1;
    printf("done %s timer %ld\n", rounds > 0 ? "ok" : "none", id);
    return 3;
}
