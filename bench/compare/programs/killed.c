/* killed.c — work, then killed by SIGTERM (default action) sent to itself. No atexit runs:
 * what the collector drained so far is all there is. Exit status: killed by signal 15. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static __attribute__((noinline)) uint64_t work(long n)
{
    uint64_t x = 1;
    for (long i = 0; i < n; i++)
        x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL;
    return x;
}

int main(void)
{
    printf("%llx\n", (unsigned long long)work(400000000L));
    fflush(stdout);
    kill(getpid(), SIGTERM);
    pause();
    return 0;
}
