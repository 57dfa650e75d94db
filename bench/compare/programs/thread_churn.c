/* thread_churn.c — many short-lived threads: 400 threads, two at a time, each running
 * short_job for about 2 ms of CPU. Samples near thread start and exit are where a
 * profiler that registers threads can lose time; perf sees the whole life of each thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static __attribute__((noinline)) uint64_t short_job(uint64_t x)
{
    for (long i = 0; i < 1500000; i++)
        x = (x ^ (x >> 29)) * 0x94d049bb133111ebULL;
    return x;
}

static void *run_job(void *arg)
{
    uint64_t *slot = arg;
    *slot = short_job(*slot);
    return NULL;
}

int main(void)
{
    uint64_t results[2], sum = 0;
    for (int round = 0; round < 200; round++) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++) {
            results[i] = (uint64_t)(round * 2 + i + 1);
            pthread_create(&t[i], NULL, run_job, &results[i]);
        }
        for (int i = 0; i < 2; i++) {
            pthread_join(t[i], NULL);
            sum ^= results[i];
        }
    }
    printf("%llx\n", (unsigned long long)sum);
    return 0;
}
