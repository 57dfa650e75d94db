/* latency.c — what a profiler adds to one process image's wall time, as its parent sees it:
 * N posix_spawns of /bin/true, one after another, each timed from the spawn to its reaping;
 * prints the 10th, 50th and 90th percentiles in ms. bench/spawn/latency.sh runs it. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    double *ms = n > 0 ? malloc((size_t)n * sizeof *ms) : NULL;
    if (ms == NULL)
        return 2;
    for (int i = 0; i < n; i++) {
        char *args[] = {"/bin/true", NULL};
        pid_t pid;
        int status;
        double start = now_ms();
        if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) != 0 ||
            waitpid(pid, &status, 0) != pid)
            return 1;
        ms[i] = now_ms() - start;
    }
    qsort(ms, (size_t)n, sizeof *ms, by_value);
    printf("p10 %.2f p50 %.2f p90 %.2f\n", ms[n / 10], ms[n / 2], ms[n * 9 / 10]);
    return 0;
}
