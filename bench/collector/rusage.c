/* rusage.c — preloaded beside the profiler under test: at exit, the process's own user + system
 * CPU (getrusage, µs) appended to $RUSAGE_OUT after its name (the profiler's own processes
 * inherit it too). One measure for the program alone, under the
 * timer floor and under Osprey (bench/collector/run.sh), read the same way in each. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>
__attribute__((destructor)) static void report(void)
{
    const char *out = getenv("RUSAGE_OUT");
    struct rusage r;
    if (out == NULL || getrusage(RUSAGE_SELF, &r) != 0)
        return;
    char line[64];
    int n = snprintf(line, sizeof line, "%s %lld\n", program_invocation_short_name,
                     (long long)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000 +
                         r.ru_utime.tv_usec + r.ru_stime.tv_usec);
    int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) < 0) {
        }
        close(fd);
    }
}
