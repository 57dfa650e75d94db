/* forkexec.c — a parent that forks and execs a child (itself with "child"), both doing work
 * in different functions: parent_work in the parent, child_work in the exec'd child. The
 * parent waits for the child, then prints both results. Osprey profiles the parent (and the
 * exec'd child in a profile of its own); perf follows both. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static __attribute__((noinline)) uint64_t parent_work(long n)
{
    uint64_t x = 7;
    for (long i = 0; i < n; i++)
        x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdULL;
    return x;
}

static __attribute__((noinline)) uint64_t child_work(long n)
{
    uint64_t x = 11;
    for (long i = 0; i < n; i++)
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        printf("child %llx\n", (unsigned long long)child_work(150000000L));
        return 0;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(127);
    }
    uint64_t r = parent_work(300000000L);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("parent %llx child status %d\n", (unsigned long long)r,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
