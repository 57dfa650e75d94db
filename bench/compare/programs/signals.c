/* signals.c — a program with its own signal handlers: SIGALRM from setitimer(ITIMER_REAL)
 * every 5 ms and SIGUSR1 raised by itself every 2^20 iterations; each handler does a little
 * work (handler_work). The main computation is in crunch. Output is deterministic (it does
 * not print how many alarms arrived). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/time.h>

static volatile sig_atomic_t alarms, usr1s;
static volatile uint64_t sink;

static __attribute__((noinline)) void handler_work(int n)
{
    uint64_t x = (uint64_t)n;
    for (int i = 0; i < 20000; i++)
        x = (x ^ (x >> 31)) * 6364136223846793005ULL;
    sink = x;
}

static void on_alarm(int sig)
{
    alarms++;
    handler_work(sig);
}

static void on_usr1(int sig)
{
    usr1s++;
    handler_work(sig);
}

static __attribute__((noinline)) uint64_t crunch(long n)
{
    uint64_t x = 3;
    for (long i = 0; i < n; i++) {
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        if ((i & ((1 << 20) - 1)) == 0)
            raise(SIGUSR1);
    }
    return x;
}

int main(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    struct itimerval it = {{0, 5000}, {0, 5000}};
    setitimer(ITIMER_REAL, &it, NULL);
    uint64_t r = crunch(600000000L);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("%llx usr1 %d alarms>0 %d\n", (unsigned long long)r, (int)usr1s, alarms > 0);
    return 0;
}
