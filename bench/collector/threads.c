/* threads.c — 64 threads, each busy at a stack depth of 0 to 23 frames: the collector at 10 kHz
 * keeps up (bench/collector/run.sh; `osprey threads --profile -F 10000`, then `dropped`). */
#include <pthread.h>
#include <stdio.h>
static volatile unsigned long sink[64 * 8];
__attribute__((noinline)) static void deep(int d, int k)
{
    if (d) {
        deep(d - 1, k);
        return;
    }
    for (unsigned long i = 0; i < 60000000ul; i++)
        sink[k * 8] += i;
}
static void *run(void *a)
{
    int k = (int)(long)a;
    deep(k % 24, k);
    return 0;
}
int main(void)
{
    pthread_t t[64];
    for (long i = 0; i < 64; i++)
        pthread_create(&t[i], 0, run, (void *)i);
    for (int i = 0; i < 64; i++)
        pthread_join(t[i], 0);
    puts("ok");
    return 0;
}
