/* bench/field/progs/setsid-workers.c — a server's workers as PostgreSQL makes them: each forked
 * child calls setsid() (a session and process group of its own, so the server can signal the
 * group) and works 1.5 s of CPU; the parent waits for both. Under `osprey ./setsid-workers
 * --profile` each child's profile should hold its 1.5 s.
 *   gcc -O2 -g -o setsid-workers setsid-workers.c */
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void work(void)
{
    volatile unsigned long x = 0;
    while (cpu_seconds() < 1.5)
        x++;
}

int main(void)
{
    for (int i = 0; i < 2; i++)
        if (fork() == 0) {
            setsid();
            work();
            printf("child %d: %.2f s CPU\n", i, cpu_seconds());
            return 0;
        }
    while (wait(NULL) > 0) {
    }
    return 0;
}
