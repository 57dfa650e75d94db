/* check.c — what the shim's check for a seccomp filter costs at boot (bench/seccomp/run.sh):
 * osp__seccomp_check (shim/seccomp.c) called ROUNDS times without a filter (one read of
 * /proc/self/status), then ROUNDS times under a filter that kills one call nobody here makes
 * (acct: Seccomp 2, nothing of the shim's forbidden, every call tried in a child), with the
 * CPU time of the children. Linked with the shim's archive (the profile is off: its boot does
 * nothing). Usage: check ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "filter.h"

int osp__seccomp_check(void);

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(const char *what, int rounds)
{
    double *t = calloc((size_t)rounds, sizeof *t);
    for (int r = 0; r < rounds; r++) {
        double start = now_us();
        if (osp__seccomp_check() != 0)
            exit(1);
        t[r] = now_us() - start;
    }
    qsort(t, (size_t)rounds, sizeof *t, by_value);
    printf("%-11s osp__seccomp_check: median %8.1f us (quartiles %.1f-%.1f)\n", what, t[rounds / 2],
           t[rounds / 4], t[3 * rounds / 4]);
    free(t);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    measure("unfiltered", rounds);
    if (filter_acct() != 0)
        return 1;
    measure("filtered", rounds);
    struct rusage children;
    getrusage(RUSAGE_CHILDREN, &children);
    printf("probe children's CPU, all rounds: %.1f ms user + %.1f ms system\n",
           children.ru_utime.tv_sec * 1e3 + children.ru_utime.tv_usec / 1e3,
           children.ru_stime.tv_sec * 1e3 + children.ru_stime.tv_usec / 1e3);
    return 0;
}
