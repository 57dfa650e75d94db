/* mutex_loop.c — benchmark workload: a single-threaded program that locks and unlocks an
 * uncontended pthread mutex around a little work, ROUNDS times (default 40 million). glibc
 * takes a cheaper path for both calls while the process has only one thread
 * (__libc_single_threaded), so a profiler that adds a thread the program can see changes
 * where this program's time goes. Prints a checksum. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t shared_state = 1;

static __attribute__((noinline)) uint64_t mix(uint64_t x)
{
    for (int i = 0; i < 12; i++)
        x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9u;
    return x;
}

static __attribute__((noinline)) void update(long r)
{
    pthread_mutex_lock(&lock);
    shared_state = mix(shared_state + (uint64_t)r);
    pthread_mutex_unlock(&lock);
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 40000000;
    for (long r = 0; r < rounds; r++)
        update(r);
    printf("%llu\n", (unsigned long long)(shared_state & 0xffff));
    return 0;
}
