/* three.c — a program of three threads for tests/e2e-attach-ptrace.sh, started without the
 * profiler: main burns CPU in three_hot_leaf, and in the kernel reading /dev/zero from
 * three_kernel_site (the kernel's frames, where it shows them), and counts its own signals (SIGALRM
 * from a 100 Hz interval timer, and SIGRTMIN, which the test sends and the kernel queues, so none
 * is merged); "napper" naps 5 ms at a time in three_nap_site; "blocked" blocks in
 * three_blocked_site, reading a pipe no one writes until the end. After argv[1] seconds it
 * prints "ready" at the start, then "done rt N alarms ok|short naps ok|slow" and exits with
 * status 5. "alarms ok": at least 30% of the timer's signals came (a merged signal is one that
 * came while the previous was pending: a thread stopped too long, or kept off a CPU by a loaded
 * machine, which the margin allows); "naps ok": 5 ms naps took
 * less than 4 times their time in all (a nap interrupted and not restarted ends early, one
 * restarted from its start ends late).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t alarms, rt;
static int blocker[2];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

static void on_rt(int sig)
{
    (void)sig;
    rt++;
}

__attribute__((noinline)) void three_hot_leaf(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i * i;
}

__attribute__((noinline)) void three_kernel_site(int zero)
{
    static char buffer[1 << 20];
    if (read(zero, buffer, sizeof buffer) > 0)
        sink += (unsigned char)buffer[4096];
}

__attribute__((noinline)) void three_nap_site(void)
{
    struct timespec nap = {0, 5000000};
    nanosleep(&nap, NULL);
    sink++;
}

__attribute__((noinline)) void three_blocked_site(void)
{
    char byte;
    while (read(blocker[0], &byte, 1) < 0)
        ;
    sink++;
}

static volatile int stop;
static double nap_seconds;
static unsigned long naps;

static void *napper(void *arg)
{
    (void)arg;
    while (!stop) {
        double t = now();
        three_nap_site();
        nap_seconds += now() - t;
        naps++;
    }
    return NULL;
}

static void *blocked(void *arg)
{
    (void)arg;
    three_blocked_site();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 || pipe(blocker) != 0)
        return 2;
    double seconds = atof(argv[1]);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the threads take no signal: main counts them */
    pthread_t t1, t2;
    if (pthread_create(&t1, NULL, napper, NULL) != 0 || pthread_create(&t2, NULL, blocked, NULL))
        return 2;
    pthread_setname_np(t1, "napper");
    pthread_setname_np(t2, "blocked");
    pthread_sigmask(SIG_UNBLOCK, &all, NULL);
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_rt;
    sigaction(SIGRTMIN, &sa, NULL);
    setvbuf(stdout, NULL, _IONBF, 0);
    struct itimerval every = {{0, 10000}, {0, 10000}};
    double start = now();
    setitimer(ITIMER_REAL, &every, NULL);
    printf("ready\n");
    int zero = open("/dev/zero", O_RDONLY);
    while (now() - start < seconds) {
        three_hot_leaf(200000);
        three_kernel_site(zero);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    double elapsed = now() - start;
    stop = 1;
    if (write(blocker[1], "x", 1) != 1)
        return 2;
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("done rt %d alarms %s naps %s\n", (int)rt,
           alarms >= 0.3 * elapsed * 100 ? "ok" : "short",
           naps > 0 && nap_seconds < 4 * 0.005 * (double)naps ? "ok" : "slow");
    return 5;
}
