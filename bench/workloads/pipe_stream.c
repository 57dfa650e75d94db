/* pipe_stream.c — benchmark workload: one thread streams COUNT writes of 4 KiB to another
 * through a pipe the program makes (pipe(2)), the reader reads them back 4 KiB at a time.
 * Usage: pipe_stream [COUNT]. Both sides block in turn (the pipe holds 16 such writes), and
 * most calls find room or data. Prints the program's own CPU time (getrusage RUSAGE_SELF) and
 * its wall time: `pipe_cpu_ns CPU_NS WALL_NS`. What a profiler costs here is its cost for a
 * program whose calls on a pipe are many and short. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "own_clocks.h"

static int fds[2];
static long count = 200000;

static void *writer(void *arg)
{
    (void)arg;
    static char buf[4096];
    memset(buf, 'x', sizeof buf);
    for (long i = 0; i < count; i++)
        for (size_t done = 0; done < sizeof buf;) {
            ssize_t n = write(fds[1], buf + done, sizeof buf - done);
            if (n <= 0) {
                perror("write");
                exit(1);
            }
            done += (size_t)n;
        }
    close(fds[1]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        count = atol(argv[1]);
    if (count < 1 || pipe(fds) != 0) {
        fprintf(stderr, "usage: pipe_stream [COUNT]\n");
        return 2;
    }
    long long cpu0 = usage_ns(), t0 = mono_ns();
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    static char buf[4096];
    long long total = 0;
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        total += n;
    pthread_join(t, NULL);
    if (total != count * 4096LL) {
        fprintf(stderr, "pipe_stream: read %lld bytes of %lld\n", total, count * 4096LL);
        return 1;
    }
    printf("pipe_cpu_ns %lld %lld\n", usage_ns() - cpu0, mono_ns() - t0);
    return 0;
}
