/* test-selfprof.c — a program that profiles itself with SIGPROF, for tests/e2e-selfprof.sh.
 *
 * THREADS threads (2 unless told) share SECONDS of CPU time while the program's own profiler
 * counts its ticks at 100 Hz, the way a program's built-in profiler does (gperftools, a
 * language runtime):
 *   itimer         setitimer(ITIMER_PROF), signal() handler (process-directed);
 *   process-timer  timer_create(CLOCK_PROCESS_CPUTIME_ID, SIGEV_SIGNAL SIGPROF), sigaction
 *                  with SA_SIGINFO (process-directed, queued as a POSIX timer's);
 *   thread-timer   timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID SIGPROF) on each
 *                  thread, as Go's runtime does since 1.18;
 *   raw-handler    the same, its handler installed by an rt_sigaction system call made
 *                  without the C library (an inline syscall instruction), as Go's runtime
 *                  does where cgo gives it no sigaction (x86-64 and arm64; elsewhere it
 *                  prints `unsupported` and exits 3);
 *   raw-mask       thread-timer's, each thread started with every signal blocked, then its
 *                  mask set as Go's runtime sets it (go_like_mask; x86-64 and arm64).
 * Meanwhile another thread sleeps 2 ms at a time in nanosleep. It prints `ticks N` (a POSIX
 * timer's overruns counted), `cpu_ns C` (the process's CPU time over the work), `expected E`
 * (C at 100 Hz: a run that gets its own signals has N close to E) and `cut K of S` (the sleeps
 * a signal cut short, EINTR: the program's own CPU-time timers fire on a thread that runs,
 * never on the sleeper, so K is 0 plain).
 * Usage: test-selfprof MODE [SECONDS [THREADS]]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define HZ 100

static atomic_long ticks;
static atomic_long foreign; /* a SIGPROF that is not the program's own timer's */
static double seconds = 2.0;
static int threads = 2;
static const char *mode;

static void on_tick(int sig)
{
    (void)sig;
    atomic_fetch_add(&ticks, 1);
}

static void on_tick_info(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)context;
    if (info->si_code != SI_TIMER)
        atomic_fetch_add(&foreign, 1);
    atomic_fetch_add(&ticks, 1 + (info->si_code == SI_TIMER ? info->si_overrun : 0));
}

/* The kernel's struct sigaction (the C library's differs). */
struct kernel_sigaction {
    void (*handler)(int, siginfo_t *, void *);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

/* A system call without the C library (its syscall() is interposed by the preload shim). */
static long raw_syscall4(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__)
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
#else
    (void)nr;
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    return -ENOSYS;
#endif
}

static long raw_rt_sigaction(long sig, const struct kernel_sigaction *act,
                             struct kernel_sigaction *old)
{
    return raw_syscall4(SYS_rt_sigaction, sig, (long)act, (long)old, sizeof(unsigned long));
}

/* The handler installed as a runtime that bypasses the C library does: the C library's
 * signal return trampoline read back from an action it set for another signal. */
static int install_raw(void)
{
    struct sigaction ign;
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    struct kernel_sigaction k;
    if (sigaction(SIGURG, &ign, NULL) != 0 || raw_rt_sigaction(SIGURG, NULL, &k) != 0)
        return -1;
    k.handler = on_tick_info;
    k.flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_RESTORER;
    k.mask = 0;
    return raw_rt_sigaction(SIGPROF, &k, NULL) == 0 ? 0 : -1;
}

static long long cpu_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void thread_timer(void)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_t t;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t) != 0) {
        perror("timer_create");
        exit(2);
    }
    struct itimerspec its = {{0, 1000000000 / HZ}, {0, 1000000000 / HZ}};
    timer_settime(t, 0, &its, NULL);
}

static volatile unsigned long sink;
static atomic_int working, armed;

static void *sleeper(void *arg)
{
    int *cut = arg;
    while (atomic_load(&working)) {
        struct timespec ts = {0, 2000000};
        if (nanosleep(&ts, NULL) != 0 && errno == EINTR)
            cut[0]++;
        cut[1]++;
    }
    return NULL;
}

/* What Go's runtime does on each thread cgo starts with every signal blocked: its own mask set
 * by a raw rt_sigprocmask (SIGPROF unblocked), then, to start another thread through cgo, every
 * signal blocked and the old mask restored through the C library. */
static void go_like_mask(void)
{
    unsigned long none = 0;
    raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof(none));
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void *burn(void *arg)
{
    (void)arg;
    if (strcmp(mode, "raw-mask") == 0)
        go_like_mask();
    if (strcmp(mode, "thread-timer") == 0 || strcmp(mode, "raw-handler") == 0 ||
        strcmp(mode, "raw-mask") == 0)
        thread_timer();
    atomic_fetch_add(&armed, 1);
    long long end = cpu_ns(CLOCK_THREAD_CPUTIME_ID) + (long long)(seconds / threads * 1e9);
    unsigned long x = 1;
    while (cpu_ns(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 20000; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: test-selfprof itimer|process-timer|thread-timer|raw-handler|raw-mask "
                "[SECONDS [THREADS]]\n");
        return 2;
    }
    mode = argv[1];
    if (argc > 2)
        seconds = atof(argv[2]);
    if (argc > 3)
        threads = atoi(argv[3]);
    if (seconds <= 0 || threads < 1 || threads > 64) {
        fprintf(stderr, "test-selfprof: SECONDS > 0 and 1-64 THREADS\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (strcmp(mode, "itimer") == 0) {
        signal(SIGPROF, on_tick);
    } else if (strcmp(mode, "raw-handler") == 0) {
        if (install_raw() != 0) {
            printf("unsupported\n");
            return 3;
        }
    } else {
        sa.sa_sigaction = on_tick_info;
        sa.sa_flags |= SA_SIGINFO;
        sigaction(SIGPROF, &sa, NULL);
    }
    long long start = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    struct itimerspec its = {{0, 1000000000 / HZ}, {0, 1000000000 / HZ}};
    timer_t process_timer;
    if (strcmp(mode, "itimer") == 0) {
        struct itimerval it = {{0, 1000000 / HZ}, {0, 1000000 / HZ}};
        setitimer(ITIMER_PROF, &it, NULL);
    } else if (strcmp(mode, "process-timer") == 0) {
        struct sigevent sev;
        memset(&sev, 0, sizeof(sev));
        sev.sigev_notify = SIGEV_SIGNAL;
        sev.sigev_signo = SIGPROF;
        if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &process_timer) != 0) {
            perror("timer_create");
            return 2;
        }
        timer_settime(process_timer, 0, &its, NULL);
    } else if (strcmp(mode, "thread-timer") != 0 && strcmp(mode, "raw-handler") != 0 &&
               strcmp(mode, "raw-mask") != 0) {
        fprintf(stderr, "test-selfprof: unknown mode %s\n", mode);
        return 2;
    }
    pthread_t workers[64], sleeping;
    int cut[2] = {0, 0};
    atomic_store(&working, 1);
    sigset_t all, before;
    sigfillset(&all);
    int raw_mask = strcmp(mode, "raw-mask") == 0;
    if (raw_mask) { /* the workers start with every signal blocked, as cgo starts them */
        if (raw_syscall4(SYS_getpid, 0, 0, 0, 0) < 0) {
            printf("unsupported\n");
            return 3;
        }
        pthread_sigmask(SIG_SETMASK, &all, &before);
    }
    for (int i = 0; i < threads; i++)
        pthread_create(&workers[i], NULL, burn, NULL);
    if (raw_mask)
        pthread_sigmask(SIG_SETMASK, &before, NULL);
    while (atomic_load(&armed) < threads) /* the sleeper starts once every timer is armed */
        sched_yield();
    pthread_create(&sleeping, NULL, sleeper, cut);
    for (int i = 0; i < threads; i++)
        pthread_join(workers[i], NULL);
    atomic_store(&working, 0);
    pthread_join(sleeping, NULL);
    long long used = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - start;
    if (strcmp(mode, "itimer") == 0) {
        struct itimerval off;
        memset(&off, 0, sizeof(off));
        setitimer(ITIMER_PROF, &off, NULL);
    } else if (strcmp(mode, "process-timer") == 0) {
        timer_delete(process_timer);
    }
    printf("ticks %ld\ncpu_ns %lld\nexpected %lld\nforeign %ld\ncut %d of %d\n",
           atomic_load(&ticks), used, used * HZ / 1000000000LL, atomic_load(&foreign), cut[0],
           cut[1]);
    return 0;
}
