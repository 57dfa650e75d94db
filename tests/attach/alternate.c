/* alternate.c — a program for tests/e2e-attach-ptrace.sh, started without the profiler: its
 * thread "alternate" alternates 5 ms of CPU in alternate_work with a wait of about 5 ms in a
 * system call, in turn fdatasync of a block just written to argv[2] (alternate_sync) and a read
 * of a pipe its thread "answerer" writes 5 ms after being asked (alternate_pipe): the
 * sites where it waits use next to no CPU. After argv[1] seconds it prints "ready" at the
 * start, then "done user U sys S" (the alternating thread's CPU times, in seconds, from
 * getrusage) and exits with status 0.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static int ask[2], answer[2], file = -1;
static volatile int over;

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void alternate_work(void)
{
    double until = clock_s(CLOCK_THREAD_CPUTIME_ID) + 0.005;
    while (clock_s(CLOCK_THREAD_CPUTIME_ID) < until)
        for (int i = 0; i < 50000; i++)
            sink = sink * 6364136223846793005ul + 1442695040888963407ul;
}

__attribute__((noinline)) static void alternate_sync(void)
{
    static char block[4096];
    block[0]++;
    if (pwrite(file, block, sizeof block, 0) < 0 || fdatasync(file) != 0)
        perror("alternate: fdatasync");
}

__attribute__((noinline)) static void alternate_pipe(void)
{
    char c = 1;
    if (write(ask[1], &c, 1) != 1 || read(answer[0], &c, 1) != 1)
        perror("alternate: pipe");
}

static void *answerer(void *arg)
{
    (void)arg;
    char c;
    while (read(ask[0], &c, 1) == 1) {
        nanosleep(&(struct timespec){0, 5000000}, NULL);
        if (write(answer[1], &c, 1) != 1)
            break;
    }
    return NULL;
}

static void *alternate(void *arg)
{
    (void)arg;
    for (unsigned n = 0; !over; n++) {
        alternate_work();
        if (n % 2 == 0)
            alternate_sync();
        else
            alternate_pipe();
    }
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    printf("done user %.3f sys %.3f\n", (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3 || pipe(ask) != 0 || pipe(answer) != 0)
        return 2;
    file = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (file < 0) {
        perror(argv[2]);
        return 2;
    }
    pthread_t a, w;
    pthread_create(&w, NULL, answerer, NULL);
    pthread_setname_np(w, "answerer");
    pthread_create(&a, NULL, alternate, NULL);
    pthread_setname_np(a, "alternator");
    printf("ready\n");
    fflush(stdout);
    nanosleep(&(struct timespec){atoi(argv[1]), 0}, NULL);
    over = 1;
    pthread_join(a, NULL);
    close(ask[1]);
    pthread_join(w, NULL);
    return 0;
}
