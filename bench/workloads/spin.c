/* spin.c — benchmark workload: THREADS threads each burn CPU for SECONDS seconds in a known
 * call chain (worker → crunch → step). Usage: spin THREADS SECONDS [cpu]. Prints a checksum so
 * the work cannot be optimised away; the output does not depend on timing. With `cpu`, also
 * one line per worker, `thread TID CPU_NS`: its kernel thread id and its CPU time (its own
 * CPU clock, read as it ends), the reference a sampler's per-thread counts are judged by. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "chain.h"

struct worker_result {
    long tid;
    long long cpu_ns;
};

static double seconds_to_run;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct worker_result *results;

static void *worker(void *arg)
{
    uint64_t x = (uintptr_t)arg;
    double end = now() + seconds_to_run;
    while (now() < end)
        x = crunch(x);
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    struct worker_result *mine = &results[(uintptr_t)arg - 1];
    mine->tid = (long)syscall(SYS_gettid);
    mine->cpu_ns = cpu.tv_sec * 1000000000LL + cpu.tv_nsec;
    return (void *)(uintptr_t)(x & 1);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    seconds_to_run = argc > 2 ? atof(argv[2]) : 2.0;
    int show_cpu = argc > 3 && strcmp(argv[3], "cpu") == 0;
    if (threads < 1 || threads > 4096 || seconds_to_run <= 0 || (argc > 3 && !show_cpu)) {
        fprintf(stderr, "usage: spin THREADS SECONDS [cpu]\n");
        return 2;
    }
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    results = calloc((size_t)threads, sizeof *results);
    for (int t = 0; t < threads; t++)
        pthread_create(&ids[t], NULL, worker, (void *)(uintptr_t)(t + 1));
    unsigned ones = 0;
    for (int t = 0; t < threads; t++) {
        void *r;
        pthread_join(ids[t], &r);
        ones += (unsigned)(uintptr_t)r;
    }
    printf("%d threads done (%u odd)\n", threads, ones);
    for (int t = 0; show_cpu && t < threads; t++)
        printf("thread %ld %lld\n", results[t].tid, results[t].cpu_ns);
    free(ids);
    free(results);
    return 0;
}
