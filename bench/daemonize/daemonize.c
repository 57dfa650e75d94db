/* daemonize.c — daemonizes once, as a program calling daemon(3) with a double fork does: the
 * child calls setsid, forks the daemon and ends at once (_exit); the daemon burns 0.3 s of CPU
 * in work_daemon and says "daemon PID"; the parent says "parent PID" and ends once the middle
 * process has ("wait", the default) or at once ("nowait"). For run.sh. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void work_daemon(double seconds)
{
    volatile unsigned long spins = 0;
    while (cpu_seconds() < seconds)
        spins++;
}

int main(int argc, char **argv)
{
    int wait_middle = argc < 2 || strcmp(argv[1], "nowait") != 0;
    pid_t middle = fork();
    if (middle == 0) {
        setsid();
        if (fork() == 0) {
            work_daemon(0.3);
            printf("daemon %d\n", (int)getpid());
            fflush(stdout);
            exit(0);
        }
        _exit(0);
    }
    if (wait_middle)
        waitpid(middle, NULL, 0);
    printf("parent %d\n", (int)getpid());
    return 0;
}
