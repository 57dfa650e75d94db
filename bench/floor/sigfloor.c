/* sigfloor.c — the signal floor: the least a signal-based sampler can cost. Preloaded
 * (LD_PRELOAD=libsigfloor.so), it installs an empty SIGPROF handler and starts one thread
 * that sends SIGPROF with tgkill to the program's main thread at SIGFLOOR_HZ (default 997)
 * to absolute CLOCK_MONOTONIC deadlines, and does nothing else: no clock reads in the
 * handler, no unwinding, no records, no collector. The handler only counts its calls (one
 * relaxed atomic add); with SIGFLOOR_COUNT=FILE the count is written there at exit, so a
 * benchmark can see how many signals really landed.
 *
 * With SIGFLOOR_PROCESS=1 the sender is a forked process instead of a thread (it dies with
 * the program, PR_SET_PDEATHSIG), so the program stays single-threaded as libc sees it: the
 * floor for a sampler whose clock lives outside the program, as ospreyd's does. Whatever a real
 * sampler adds on top of this, on the same machine in the same run, is its own cost. A deadline
 * already passed is not made up for (the next one is a period from now), as a sampler that falls
 * behind would.
 *
 * With SIGFLOOR_TIMER=1 there is no sender at all: the main thread's own periodic timer
 * (timer_create(CLOCK_MONOTONIC) with SIGEV_THREAD_ID) interrupts it in place at the rate, the
 * floor for a sampler whose threads sample themselves, as Osprey's do. Signals from a timer do
 * not merge behind a sender that wakes late, so at 10 kHz this floor really delivers its rate
 * where the sender's falls short. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pid_t target_pid, target_tid;
static long period_ns;
static atomic_ulong handled;

static void empty_handler(int sig)
{
    (void)sig;
    atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
}

__attribute__((destructor)) static void sigfloor_report(void)
{
    const char *path = getenv("SIGFLOOR_COUNT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "%lu\n", atomic_load_explicit(&handled, memory_order_relaxed));
        fclose(f);
    }
}

static void add_ns(struct timespec *t, long ns)
{
    t->tv_nsec += ns;
    while (t->tv_nsec >= 1000000000L) {
        t->tv_nsec -= 1000000000L;
        t->tv_sec++;
    }
}

static void *sender(void *arg)
{
    (void)arg;
    struct timespec next, now;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        add_ns(&next, period_ns);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec)) {
            next = now;
            add_ns(&next, period_ns);
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0)
            ;
        syscall(SYS_tgkill, target_pid, target_tid, SIGPROF);
    }
    return NULL;
}

__attribute__((constructor)) static void sigfloor_start(void)
{
    const char *hz_text = getenv("SIGFLOOR_HZ");
    long hz = hz_text ? atol(hz_text) : 997;
    if (hz < 1 || hz > 100000)
        hz = 997;
    period_ns = 1000000000L / hz;
    target_pid = getpid();
    target_tid = (pid_t)syscall(SYS_gettid);
    struct sigaction sa = {0};
    sa.sa_handler = empty_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    /* The sender never takes the signal itself: it is blocked there from birth. */
    sigset_t prof, old;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &prof, &old);
    const char *timer = getenv("SIGFLOOR_TIMER");
    if (timer && timer[0] == '1') {
        struct sigevent ev = {0};
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = SIGPROF;
        ev._sigev_un._tid = target_tid;
        timer_t id;
        struct itimerspec every = {{0, period_ns}, {0, period_ns}};
        if (timer_create(CLOCK_MONOTONIC, &ev, &id) == 0)
            timer_settime(id, 0, &every, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return;
    }
    const char *process = getenv("SIGFLOOR_PROCESS");
    if (process && process[0] == '1') {
        pid_t child = fork();
        if (child == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != target_pid)
                _exit(0);
            syscall(SYS_close_range, 0u, ~0u, 0u); /* hold none of the program's pipes */
            sender(NULL);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t id;
    pthread_create(&id, &attr, sender, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}
