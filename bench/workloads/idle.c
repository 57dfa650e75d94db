/* idle.c — benchmark workload: THREADS threads that only wait, for SECONDS seconds, then
 * exit. Usage: idle THREADS SECONDS [cond|sleep]. `cond` (the default): every thread blocks in
 * pthread_cond_wait until main broadcasts at the end; `sleep`: every thread loops on 100 ms
 * nanosleeps until main sets the stop flag; `timed`: every thread loops on 100 ms timed waits
 * on a condition variable nobody signals (futex waits the profiler does not wrap: 10 wake-ups
 * a second each). What a profiler costs here is its cost for a
 * thread pool that has nothing to do. Prints the thread count when done, and the program's
 * own CPU time over the waiting alone (from when every thread is started to the end of the
 * wait, getrusage RUSAGE_SELF): `idle_cpu_ns CPU_NS WALL_NS`, so the cost of starting the
 * threads can be told from the cost of their waiting. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "own_clocks.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static atomic_int stop;
static int use_sleep, use_timed;

static void *waiter(void *arg)
{
    (void)arg;
    if (use_sleep) {
        struct timespec step = {0, 100000000};
        while (!atomic_load(&stop))
            nanosleep(&step, NULL);
        return NULL;
    }
    if (use_timed) {
        pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
        pthread_cond_t never = PTHREAD_COND_INITIALIZER;
        pthread_mutex_lock(&own);
        while (!atomic_load(&stop)) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 100000000;
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&never, &own, &until);
        }
        pthread_mutex_unlock(&own);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    while (!atomic_load(&stop))
        pthread_cond_wait(&wake, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 100;
    double seconds = argc > 2 ? atof(argv[2]) : 6.0;
    use_sleep = argc > 3 && strcmp(argv[3], "sleep") == 0;
    use_timed = argc > 3 && strcmp(argv[3], "timed") == 0;
    if (threads < 1 || threads > 10000 || seconds <= 0 ||
        (argc > 3 && !use_sleep && !use_timed && strcmp(argv[3], "cond") != 0)) {
        fprintf(stderr, "usage: idle THREADS SECONDS [cond|sleep|timed]\n");
        return 2;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&ids[started], &attr, waiter, NULL) != 0)
            break;
    long long cpu0 = usage_ns(), wall0 = mono_ns();
    struct timespec nap = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    while (nanosleep(&nap, &nap) != 0)
        ;
    long long cpu1 = usage_ns(), wall1 = mono_ns();
    pthread_mutex_lock(&lock);
    atomic_store(&stop, 1);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    for (int t = 0; t < started; t++)
        pthread_join(ids[t], NULL);
    free(ids);
    printf("%d threads idled\n", started);
    printf("idle_cpu_ns %lld %lld\n", cpu1 - cpu0, wall1 - wall0);
    return started == threads ? 0 : 1;
}
