/* single_threaded.c — prints glibc's __libc_single_threaded at three points of a program that
 * never starts a thread: first thing in main, after ~200 ms of computing, and after a 100 ms
 * sleep. A profiler that adds a thread libc can see turns it to 0 (and with it glibc's
 * single-thread fast paths in malloc, stdio and the mutexes). Output: `start=1 busy=1 end=1`. */
#include <stdint.h>
#include <stdio.h>
#include <sys/single_threaded.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
    int start = __libc_single_threaded;
    volatile uint64_t x = 1;
    for (double end = now() + 0.2; now() < end;)
        for (int i = 0; i < 10000; i++)
            x = x * 6364136223846793005u + 1;
    int busy = __libc_single_threaded;
    struct timespec nap = {0, 100000000};
    nanosleep(&nap, NULL);
    printf("start=%d busy=%d end=%d\n", start, busy, (int)__libc_single_threaded);
    return 0;
}
