/* threads.c — threads with different hot functions and two that mostly wait: worker_a runs
 * hot_a for twice the work of worker_b's hot_b; a sleeper thread sleeps in 10 ms steps; a
 * waiter blocks on a condition variable until the workers finish; main joins. On-CPU shares
 * expected ≈ 2/3 hot_a, 1/3 hot_b; the waiting threads add waiting samples, not CPU. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int workers_done;

static __attribute__((noinline)) uint64_t hot_a(uint64_t x, long n)
{
    for (long i = 0; i < n; i++)
        x = (x ^ (x >> 29)) * 0x94d049bb133111ebULL;
    return x;
}

static __attribute__((noinline)) uint64_t hot_b(uint64_t x, long n)
{
    for (long i = 0; i < n; i++)
        x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ULL;
    return x;
}

static void finish(void)
{
    pthread_mutex_lock(&lock);
    workers_done++;
    pthread_cond_broadcast(&done_cond);
    pthread_mutex_unlock(&lock);
}

static uint64_t result_a, result_b;

static void *worker_a(void *arg)
{
    (void)arg;
    result_a = hot_a(1, 400000000L);
    finish();
    return NULL;
}

static void *worker_b(void *arg)
{
    (void)arg;
    result_b = hot_b(1, 200000000L);
    finish();
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 50; i++)
        nanosleep(&ten_ms, NULL);
    return NULL;
}

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (workers_done < 2)
        pthread_cond_wait(&done_cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    pthread_create(&t[0], NULL, worker_a, NULL);
    pthread_create(&t[1], NULL, worker_b, NULL);
    pthread_create(&t[2], NULL, sleeper, NULL);
    pthread_create(&t[3], NULL, waiter, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("%llx %llx\n", (unsigned long long)result_a, (unsigned long long)result_b);
    return 0;
}
