/* boot.c — the time from exec to main of a program preloaded with the shim, with and without a
 * seccomp filter (bench/seccomp/run.sh).
 *
 * Usage: boot ROUNDS SHIM_SO[,SHIM_SO...] OSPREYD OUT_DIR
 * Each round runs, interleaved, the target (this program with --main) once per shim with no
 * filter and once per shim under a filter that kills one call nobody here makes (acct), so the
 * process runs with Seccomp: 2 and nothing of the shim's is forbidden, and prints one line per
 * configuration: the median and quartiles of exec-to-main in microseconds over ROUNDS. The
 * launcher reads CLOCK_MONOTONIC before its fork and the target at main, written to a pipe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "filter.h"

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* One run: microseconds from before the fork to the target's main. */
static double run(const char *self, const char *shim, const char *daemon, const char *out,
                  int filtered)
{
    int fds[2];
    if (pipe(fds) != 0)
        exit(1);
    long long start = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 3);
        if (filtered && filter_acct() != 0)
            _exit(126);
        char preload[4200], profile[4200], daemon_env[4200];
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", shim);
        snprintf(profile, sizeof profile, "OSPREY_PROFILE=%s/boot.raw.json", out);
        snprintf(daemon_env, sizeof daemon_env, "OSPREY_DAEMON=%s", daemon);
        char *envp[] = {preload, profile, daemon_env, NULL};
        char *argv[] = {(char *)self, "--main", NULL};
        execve(self, argv, envp);
        _exit(127);
    }
    close(fds[1]);
    long long at_main = 0;
    if (read(fds[0], &at_main, sizeof at_main) != (ssize_t)sizeof at_main)
        at_main = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || at_main == 0) {
        fprintf(stderr, "boot: a run failed (status %d)\n", status);
        exit(1);
    }
    return (double)(at_main - start) / 1000.0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--main") == 0) {
        long long t = now_ns();
        return write(3, &t, sizeof t) == (ssize_t)sizeof t ? 0 : 1;
    }
    if (argc != 5) {
        fprintf(stderr, "usage: boot ROUNDS SHIM_SO[,SHIM_SO...] OSPREYD OUT_DIR\n");
        return 2;
    }
    int rounds = atoi(argv[1]);
    char *shims[8];
    int count = 0;
    for (char *s = strtok(argv[2], ","); s != NULL && count < 8; s = strtok(NULL, ","))
        shims[count++] = s;
    double *times = calloc((size_t)(2 * count * rounds), sizeof *times);
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < 2 * count; c++)
            times[c * rounds + r] =
                run(argv[0], shims[c / 2], argv[3], argv[4], c % 2 /* filtered */);
    for (int c = 0; c < 2 * count; c++) {
        double *t = times + c * rounds;
        qsort(t, (size_t)rounds, sizeof *t, by_value);
        printf("%-60s %-11s exec to main: median %7.0f us (quartiles %.0f-%.0f)\n", shims[c / 2],
               c % 2 ? "filtered" : "unfiltered", t[rounds / 2], t[rounds / 4], t[3 * rounds / 4]);
    }
    return 0;
}
