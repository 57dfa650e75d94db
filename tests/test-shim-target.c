/* test-shim-target.c — a small program the shim's end-to-end tests run with and without the
 * preloaded shim. Every mode prints a result that does not depend on timing (so a profiled
 * and a plain run print the same), and exits with a known status.
 *
 *   print CODE            print some lines from a worker thread and main; exit CODE
 *   busy THREADS MS       THREADS threads spin for MS milliseconds each
 *   sleep MS              nanosleep MS ms and a few other interruptible waits; says whether
 *                         any returned early or with EINTR
 *   churn N               N short threads, a few at a time, some ending by pthread_exit
 *   sigprof               installs its own SIGPROF handler, then checks it is still there
 *                         and still called
 *   itimer                its own SIGPROF handler driven by setitimer(ITIMER_PROF); says
 *                         whether the timer's signals arrived
 *   killed                no handler; SIGPROF from itself kills it (the default action)
 *   tasks                 prints how many threads the process has, its /dev/shm objects and its
 * ring's mappings named                 a named thread spins briefly spawn                 runs
 * itself ("print 0") as a child through exec, waits for it chdir                 changes to / and
 * spins masked                a thread blocks SIGPROF, spins, then looks for a pending one (what
 *                         its sigwait or signalfd would see)
 *   allblocked            main blocks every signal, then a worker (inheriting that mask)
 *                         spins 300 ms of CPU time, polling sigtimedwait for any signal; both
 *                         say whether their mask shows SIGPROF blocked and what was taken
 *   exec                  spins, then replaces itself (execv) with itself running "print 0"
 *   fork                  forks a child that spins and exits through exit(7)
 *   dlopen                loads test-shim-plugin.so (beside this program), spins in it,
 *                         unloads it, spins a little more
 *   single                a program that never starts a thread: prints what glibc's
 *                         __libc_single_threaded says before and after some work
 *   unshare               unshare(CLONE_NEWUSER) after some work: "unshare ok" or the error
 *   mainexit              main starts a worker and ends with pthread_exit; the worker spins
 *                         300 ms, prints, and the process exits 0 when it returns
 *   rawexec               spins, then execve through syscall(2) into "print 0"
 *   idle N MS             N threads wait on one condition variable for MS ms
 *   stderrfile PATH       puts a data file on fd 2, writes one line to it, exits
 *   smallstack            a thread on a PTHREAD_STACK_MIN stack uses all of it but 1.5 KiB (less
 *                         than the kernel's signal frame) and spins 300 ms of CPU time
 *   coroutine             the same on a 16 KiB makecontext stack
 *   shortthreads N US     N threads, four at a time, each spinning US microseconds of CPU
 *                         time; prints nothing timing-dependent, and on stderr the CPU time
 *                         the threads' code used, their starts included ("threads_cpu_ns N"),
 *                         and all the CPU time they used, their ends included, as the
 *                         process's less the main thread's ("exited_cpu_ns N")
 *   seccomp strict|filter computes, enters a seccomp sandbox (strict mode; or an allow-list
 *                         filter that kills the process on any other call), computes again,
 *                         prints and exits as such a program can
 *   alarmpoll             an event loop (5 ms of work, then poll for 30 ms) with a 7 ms SIGALRM
 *                         whose handler changes the mask, as shells' SIGCHLD handlers do;
 *                         prints its iterations and, on stderr, its CPU time ("cpu_ns N")
 *   longjmp               a SIGALRM handler longjmps out of pause() (the timeout idiom), then
 *                         the program spins 300 ms of CPU; prints whether its mask shows
 *                         SIGPROF blocked, and on stderr its CPU time
 *   timerids              the program's first timer is id 0 and a sweep of ids 0..63 deletes
 *                         only its own; a worker's 0.5 s of CPU after the sweep (cpu_ns on
 *                         stderr)
 *   sigevthread           a SIGEV_THREAD timer whose callback (on a thread the C library starts)
 *                         spins 300 ms of CPU time; main waits for it; on stderr the CPU time
 *                         of the callback ("cpu_ns N")
 *   environment          prints whether any OSPREY_PROFILE_* bookkeeping is in its environment,
 *                         then runs itself ("print 0") through system(3)
 *   notsc                 makes the CPU's counter fault (prctl PR_SET_TSC, PR_TSC_SIGSEGV: every
 *                         rdtsc, the vDSO's clock_gettime's too, is a SIGSEGV), spins about
 *                         0.3 s of arithmetic without a clock, prints its result
 *   zerotimeouts MS      nanosleep, poll, select, ppoll and pselect with zero timeouts in a
 *                         loop for MS ms; prints how many returned EINTR (a plain run: none)
 *
 * With TARGET_SIGPROF_EARLY=1 in the environment a constructor that runs before the shim's
 * installs the program's SIGPROF handler (for the static-archive build of this program).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "spin.h"

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *printer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++)
        printf("worker line %d\n", i);
    fflush(stdout);
    spin_for(50000000);
    return NULL;
}

static int mode_print(int code)
{
    printf("hello from the target\n");
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, NULL, printer, NULL);
    pthread_join(t, NULL);
    spin_for(50000000);
    printf("bye %d\n", code);
    return code;
}

static uint64_t busy_ms;

static void *busy(void *arg)
{
    (void)arg;
    spin_for(busy_ms * 1000000u);
    return NULL;
}

static int mode_busy(int n, int ms)
{
    busy_ms = (uint64_t)ms;
    pthread_t *t = calloc((size_t)n, sizeof(*t));
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, busy, NULL);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
    printf("busy done\n");
    return 0;
}

static int mode_sleep(int ms)
{
    int early = 0;
    spin_for(20000000); /* get sampled on the CPU first */
    uint64_t t0 = now_ns();
    struct timespec req = {ms / 1000, (long)(ms % 1000) * 1000000};
    if (nanosleep(&req, NULL) != 0)
        early = 1; /* EINTR would land here */
    if (now_ns() - t0 < (uint64_t)ms * 1000000u)
        early = 1;
    spin_for(5000000); /* running right up to each wait: the hardest case */
    t0 = now_ns();
    if (poll(NULL, 0, ms) != 0)
        early = 1;
    if (now_ns() - t0 < (uint64_t)ms * 1000000u)
        early = 1;
    spin_for(5000000);
    t0 = now_ns();
    if (usleep((useconds_t)ms * 1000u) != 0)
        early = 1;
    if (now_ns() - t0 < (uint64_t)ms * 1000000u)
        early = 1;
    printf(early ? "woke early\n" : "slept the whole time\n");
    return early;
}

static void *short_thread(void *arg)
{
    uintptr_t i = (uintptr_t)arg;
    spin_for(200000);
    if (i % 3 == 0)
        pthread_exit((void *)(i + 1));
    return (void *)(i + 1);
}

static int mode_churn(int n)
{
    uintptr_t total = 0;
    for (int i = 0; i < n; i += 4) {
        pthread_t t[4];
        int k = 0;
        for (; k < 4 && i + k < n; k++)
            pthread_create(&t[k], NULL, short_thread, (void *)(uintptr_t)(i + k));
        for (int j = 0; j < k; j++) {
            void *ret;
            pthread_join(t[j], &ret);
            total += (uintptr_t)ret;
        }
    }
    printf("churn total %lu\n", (unsigned long)total);
    return 0;
}

static volatile sig_atomic_t own_hits;

static void own_handler(int sig)
{
    (void)sig;
    own_hits++;
}

static int mode_sigprof(void)
{
    if (getenv("TARGET_SIGPROF_EARLY") == NULL)
        signal(SIGPROF, own_handler);
    spin_for(200000000); /* give a profiler every chance to interfere */
    struct sigaction cur;
    sigaction(SIGPROF, NULL, &cur);
    int kept = cur.sa_handler == own_handler;
    own_hits = 0;
    raise(SIGPROF);
    raise(SIGPROF);
    printf("handler kept %d, own signals seen %d\n", kept, (int)own_hits);
    return kept && own_hits == 2 ? 0 : 1;
}

static int mode_itimer(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = own_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval every_ms = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &every_ms, NULL);
    /* Until 20 have arrived, or 2 s of CPU time without them (the timer counts CPU time, so
     * a loaded machine only makes this take longer). */
    struct timespec cpu = {0, 0};
    while (own_hits <= 20 && cpu.tv_sec < 2) {
        spin_for(1000000);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    }
    setitimer(ITIMER_PROF, &off, NULL);
    printf("timer signals arrived: %s\n", own_hits > 20 ? "yes" : "no");
    return 0;
}

static int mode_killed(void)
{
    spin_for(50000000);
    printf("about to be killed\n");
    fflush(stdout);
    raise(SIGPROF);
    printf("still alive\n");
    return 0;
}

static int count_dir(const char *path, const char *prefix)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

/* Mappings of the profiler's ring (a memfd named "osprey-<pid>-<hex>") in our maps. */
static int count_ring_maps(const char *prefix)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return -1;
    char line[4096], name[64];
    snprintf(name, sizeof name, "/memfd:%s", prefix);
    int n = 0;
    while (fgets(line, sizeof line, f) != NULL)
        n += strstr(line, name) != NULL;
    fclose(f);
    return n;
}

static int mode_tasks(void)
{
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "osprey-%d-", (int)getpid());
    struct sigaction cur;
    sigaction(SIGPROF, NULL, &cur);
    printf("tasks %d shm %d ring %d sigprof-default %d\n", count_dir("/proc/self/task", ""),
           count_dir("/dev/shm", prefix), count_ring_maps(prefix), cur.sa_handler == SIG_DFL);
    return 0;
}

static void *named(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "cruncher");
    spin_for(100000000);
    return NULL;
}

static int mode_named(void)
{
    pthread_t t;
    pthread_create(&t, NULL, named, NULL);
    pthread_join(t, NULL);
    printf("named done\n");
    return 0;
}

extern char **environ;

static int mode_spawn(void)
{
    char *argv[] = {"test-shim-target", "print", "0", NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0)
        return 1;
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child %d status %d\n", (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

static void *masked(void *arg)
{
    sigset_t prof, pending;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &prof, NULL);
    spin_for(200000000);
    sigpending(&pending);
    *(int *)arg = sigismember(&pending, SIGPROF);
    return NULL;
}

static int mode_masked(void)
{
    int pending = -1;
    pthread_t t;
    pthread_create(&t, NULL, masked, &pending);
    pthread_join(t, NULL);
    printf("SIGPROF pending in a thread that blocks it: %s\n", pending ? "yes" : "no");
    return pending != 0;
}

static uint64_t now_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int shows_sigprof_blocked(void)
{
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    return sigismember(&cur, SIGPROF) == 1;
}

static void *all_blocked(void *arg)
{
    sigset_t all;
    sigfillset(&all);
    struct timespec zero = {0, 0};
    int taken = 0;
    uint64_t start = now_cpu_ns();
    while (now_cpu_ns() - start < 300000000u) {
        spin_for(1000000);
        siginfo_t info;
        if (sigtimedwait(&all, &info, &zero) > 0)
            taken++; /* a signal the program would have been handed */
    }
    printf("worker: SIGPROF blocked %s, signals taken %d\n", shows_sigprof_blocked() ? "yes" : "no",
           taken);
    (void)arg;
    return NULL;
}

static int mode_all_blocked(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_t t;
    pthread_create(&t, NULL, all_blocked, NULL);
    pthread_join(t, NULL);
    printf("main: SIGPROF blocked %s\n", shows_sigprof_blocked() ? "yes" : "no");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    printf("main restored: SIGPROF blocked %s\n", shows_sigprof_blocked() ? "yes" : "no");
    return 0;
}

static int mode_chdir(void)
{
    if (chdir("/") != 0)
        return 1;
    spin_for(50000000);
    printf("moved\n");
    return 0;
}

extern char __libc_single_threaded;

static int mode_single(void)
{
    int before = __libc_single_threaded;
    spin_for(50000000);
    char *p = malloc(1000);
    free(p);
    printf("single-threaded %d %d\n", before, __libc_single_threaded);
    return 0;
}

static int mode_unshare(void)
{
    spin_for(30000000);
    if (unshare(CLONE_NEWUSER) != 0)
        printf("unshare failed: %s\n", strerror(errno));
    else
        printf("unshare ok\n");
    return 0;
}

static void *late_worker(void *arg)
{
    (void)arg;
    spin_for(300000000);
    printf("worker done\n");
    fflush(stdout);
    return NULL;
}

static int mode_mainexit(void)
{
    pthread_t t;
    pthread_create(&t, NULL, late_worker, NULL);
    pthread_exit(NULL);
}

static int mode_rawexec(void)
{
    spin_for(50000000);
    char *argv[] = {"test-shim-target", "print", "0", NULL};
    extern char **environ;
    syscall(SYS_execve, "/proc/self/exe", argv, environ);
    return 1;
}

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static int idle_go;

static void *idle_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&idle_lock);
    while (!idle_go)
        pthread_cond_wait(&idle_cond, &idle_lock);
    pthread_mutex_unlock(&idle_lock);
    return NULL;
}

static int mode_idle(int n, int ms)
{
    pthread_t *t = calloc((size_t)n, sizeof *t);
    int started = 0;
    for (int i = 0; i < n; i++)
        started += pthread_create(&t[i], NULL, idle_waiter, NULL) == 0;
    struct timespec nap = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&nap, NULL);
    pthread_mutex_lock(&idle_lock);
    idle_go = 1;
    pthread_cond_broadcast(&idle_cond);
    pthread_mutex_unlock(&idle_lock);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    printf("idle %d\n", started);
    return 0;
}

static int mode_stderrfile(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 2) != 2)
        return 1;
    close(fd);
    if (write(2, "data\n", 5) != 5)
        return 1;
    spin_for(20000000);
    return 0;
}

static int mode_zero_timeouts(int ms)
{
    struct timespec zero = {0, 0};
    long eintr = 0;
    uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
    while (now_ns() < end) {
        for (int i = 0; i < 100; i++) {
            if (nanosleep(&zero, NULL) != 0 && errno == EINTR)
                eintr++;
            if (poll(NULL, 0, 0) < 0 && errno == EINTR)
                eintr++;
            struct timeval none = {0, 0};
            if (select(0, NULL, NULL, NULL, &none) < 0 && errno == EINTR)
                eintr++;
            if (ppoll(NULL, 0, &zero, NULL) < 0 && errno == EINTR)
                eintr++;
            if (pselect(0, NULL, NULL, NULL, &zero, NULL) < 0 && errno == EINTR)
                eintr++;
        }
    }
    printf("zero timeouts cut short: %ld\n", eintr);
    return 0;
}

static int mode_environment(void)
{
    int seen = 0;
    for (char **e = environ; *e != NULL; e++)
        seen += strncmp(*e, "OSPREY_PROFILE_", 15) == 0;
    printf("bookkeeping visible %d\n", seen);
    fflush(stdout);
    char cmd[4200];
    ssize_t n = readlink("/proc/self/exe", cmd, 4000);
    if (n <= 0)
        return 1;
    strcpy(cmd + n, " print 0 >/dev/null");
    return system(cmd) == 0 ? 0 : 1;
}

static int mode_exec(void)
{
    spin_for(100000000);
    char *argv[] = {"test-shim-target", "print", "0", NULL};
    execv("/proc/self/exe", argv);
    return 1;
}

static int mode_fork(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        spin_for(50000000);
        exit(7);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    spin_for(20000000);
    printf("forked child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

static int mode_dlopen(void)
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
    if (n <= 0)
        return 1;
    path[n] = '\0';
    strcpy(strrchr(path, '/') + 1, "test-shim-plugin.so");
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL)
        return 1;
    uint64_t (*spin)(uint64_t);
    void *sym = dlsym(handle, "plugin_spin");
    memcpy(&spin, &sym, sizeof(spin));
    sink = spin(200000000);
    dlclose(handle);
    spin_for(50000000);
    printf("plugin unloaded\n");
    return 0;
}

/* Spin on the stack left at `bytes` below here: a VLA that holds the rest. */
__attribute__((noinline)) static void spin_on_little_stack(size_t bytes)
{
    volatile char pad[bytes];
    memset((char *)pad, 1, bytes);
    uint64_t t0 = cpu_ns();
    while (cpu_ns() - t0 < 300000000u)
        for (int i = 0; i < 1000; i++)
            sink += (uint64_t)pad[(size_t)i % bytes];
}

/* All of a stack but `left` bytes, measured from the local's address down to its base. */
static size_t all_but(const void *base, size_t left)
{
    char here;
    size_t used_above = (size_t)(&here - (const char *)base);
    return used_above > left + 512 ? used_above - left - 512 : 16;
}

static void *small_thread(void *arg)
{
    (void)arg;
    pthread_attr_t attr;
    void *base = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &base, &size);
        pthread_attr_destroy(&attr);
    }
    spin_on_little_stack(all_but(base, 1536));
    return NULL;
}

static int mode_small_stack(void)
{
    /* Resolved here, on the main stack: the lazy binder needs more stack than is left. */
    spin_on_little_stack(64);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
    pthread_t t;
    if (pthread_create(&t, &attr, small_thread, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    printf("smallstack ok\n");
    return 0;
}

static ucontext_t main_context, coroutine_context;
static char coroutine_stack[16384] __attribute__((aligned(16)));

static void coroutine(void)
{
    spin_on_little_stack(all_but(coroutine_stack, 1536));
}

static int mode_coroutine(void)
{
    spin_on_little_stack(64);
    getcontext(&coroutine_context);
    coroutine_context.uc_stack.ss_sp = coroutine_stack;
    coroutine_context.uc_stack.ss_size = sizeof coroutine_stack;
    coroutine_context.uc_link = &main_context;
    makecontext(&coroutine_context, coroutine, 0);
    if (swapcontext(&main_context, &coroutine_context) != 0)
        return 1;
    printf("coroutine ok\n");
    return 0;
}

static uint64_t short_us;
static _Atomic uint64_t threads_cpu;
static void *cpu_burner(void *arg)
{
    (void)arg;
    uint64_t t0 = cpu_ns();
    while (cpu_ns() - t0 < short_us * 1000u)
        sink++;
    atomic_fetch_add(&threads_cpu, cpu_ns()); /* all of its CPU time, its start included */
    return NULL;
}

static int mode_short_threads(int n, int us)
{
    short_us = (uint64_t)us;
    uint64_t used = 0;
    for (int i = 0; i < n; i += 4) {
        pthread_t t[4];
        int started = 0;
        for (int j = 0; j < 4 && i + j < n; j++)
            started += pthread_create(&t[j], NULL, cpu_burner, NULL) == 0;
        for (int j = 0; j < started; j++)
            pthread_join(t[j], NULL);
    }
    used = atomic_load(&threads_cpu);
    fprintf(stderr, "threads_cpu_ns %llu\n", (unsigned long long)used);
    struct timespec ts; /* the ended threads' CPU time is the process's, less ours */
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    uint64_t all = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    fprintf(stderr, "exited_cpu_ns %llu\n", (unsigned long long)(all - cpu_ns()));
    printf("shortthreads %d\n", n);
    return 0;
}

/* Work without any system call (a sandboxed thread may make none). */
__attribute__((noinline)) static void compute(uint64_t rounds)
{
    uint64_t x = 1;
    for (uint64_t i = 0; i < rounds; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    sink = x;
}

static int mode_seccomp(const char *kind)
{
    compute(200000000);
    if (strcmp(kind, "strict") == 0) {
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0)
            return 3;
        compute(200000000);
        static const char line[] = "strict ok\n";
        if (write(1, line, sizeof line - 1) != (ssize_t)(sizeof line - 1))
            syscall(SYS_exit, 4);
        syscall(SYS_exit, 0); /* exit_group is not allowed in strict mode */
    }
    /* The calls this program makes from here on, and nothing else: the process is killed. */
    static const int allowed[] = {SYS_read,         SYS_write,      SYS_exit,  SYS_exit_group,
                                  SYS_rt_sigreturn, SYS_futex,      SYS_brk,   SYS_mmap,
                                  SYS_munmap,       SYS_newfstatat, SYS_fstat, SYS_lseek,
                                  SYS_getrandom};
    struct sock_filter code[64];
    unsigned n = 0;
    code[n++] =
        (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    unsigned count = sizeof allowed / sizeof allowed[0];
    for (unsigned i = 0; i < count; i++)
        code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i],
                                                 count - i, 0);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return 3;
    compute(200000000);
    printf("filter ok\n");
    return 0;
}

static void on_alarm_change_mask(int sig)
{
    (void)sig;
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static void print_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    fprintf(stderr, "cpu_ns %llu\n",
            (unsigned long long)ts.tv_sec * 1000000000u + (unsigned long long)ts.tv_nsec);
}

static int mode_alarm_poll(void)
{
    struct sigaction sa = {.sa_handler = on_alarm_change_mask};
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, 7000}, {0, 7000}};
    setitimer(ITIMER_REAL, &every, NULL);
    int fds[2];
    if (pipe(fds) != 0)
        return 1;
    int iterations = 0;
    for (; iterations < 20; iterations++) {
        uint64_t t0 = cpu_ns();
        while (cpu_ns() - t0 < 5000000u)
            sink++;
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        poll(&p, 1, 30);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    print_cpu();
    printf("alarmpoll %d\n", iterations);
    return 0;
}

static sigjmp_buf timeout_jump;
static void on_alarm_jump(int sig)
{
    (void)sig;
    longjmp(timeout_jump, 1); /* not siglongjmp: the handler's mask stays */
}

static int mode_longjmp(void)
{
    struct sigaction sa = {.sa_handler = on_alarm_jump};
    sigaction(SIGALRM, &sa, NULL);
    if (setjmp(timeout_jump) == 0) {
        alarm(1);
        pause();
    }
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    uint64_t t0 = cpu_ns();
    while (cpu_ns() - t0 < 300000000u)
        sink++;
    print_cpu();
    printf("longjmp sigprof-blocked %d sigalrm-blocked %d\n", sigismember(&now, SIGPROF),
           sigismember(&now, SIGALRM));
    return 0;
}

static sem_t callback_done;
static _Atomic uint64_t callback_cpu;
static void timer_callback(union sigval v)
{
    (void)v;
    uint64_t t0 = cpu_ns();
    while (cpu_ns() - t0 < 300000000u)
        sink++;
    atomic_store(&callback_cpu, cpu_ns());
    sem_post(&callback_done);
}

static int mode_sigev_thread(void)
{
    sem_init(&callback_done, 0, 0);
    struct sigevent sev = {.sigev_notify = SIGEV_THREAD, .sigev_notify_function = timer_callback};
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0)
        return 1;
    struct itimerspec once = {.it_value = {0, 10000000}};
    timer_settime(timer, 0, &once, NULL);
    while (sem_wait(&callback_done) != 0)
        ;
    timer_delete(timer);
    fprintf(stderr, "cpu_ns %llu\n", (unsigned long long)atomic_load(&callback_cpu));
    printf("sigevthread done\n");
    return 0;
}

/* The program's own timer ids: its first timer is id 0, as plain, and a sweep that deletes
 * ids 0..63 (a cleanup some programs do) deletes its own timer, not the profiler's: a worker
 * started before the sweep and burning 0.5 s of CPU after it is still sampled. */
static _Atomic uint64_t worker_cpu;
static void *timer_ids_worker(void *arg)
{
    (void)arg;
    usleep(100000); /* the sweep happens meanwhile */
    uint64_t t0 = cpu_ns();
    while (cpu_ns() - t0 < 500000000u)
        sink++;
    atomic_store(&worker_cpu, cpu_ns());
    return NULL;
}

static int mode_timer_ids(void)
{
    struct sigevent none = {.sigev_notify = SIGEV_NONE};
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &none, &timer) != 0)
        return 1;
    printf("first timer id %ld\n", (long)(intptr_t)timer);
    pthread_t worker;
    pthread_create(&worker, NULL, timer_ids_worker, NULL);
    usleep(20000);
    int deleted = 0;
    for (long id = 0; id < 64; id++)
        deleted += syscall(SYS_timer_delete, id) == 0;
    printf("sweep deleted %d\n", deleted);
    pthread_join(worker, NULL);
    fprintf(stderr, "cpu_ns %llu\n", (unsigned long long)atomic_load(&worker_cpu));
    return 0;
}

__attribute__((constructor(101))) static void early_sigprof(void)
{
    const char *early = getenv("TARGET_SIGPROF_EARLY");
    if (early && strcmp(early, "1") == 0)
        signal(SIGPROF, own_handler);
}

static int mode_no_tsc(void)
{
#if defined(__x86_64__) && defined(PR_SET_TSC)
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) {
        perror("prctl");
        return 1;
    }
#endif
    uint64_t x = 1;
    for (long i = 0; i < 300000000L; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    printf("notsc %llu\n", (unsigned long long)x);
    return 0;
}

/* MODE(name, call): in main, the mode named on the command line runs as `call` says. */
#define MODE(name, call)                                                                           \
    if (strcmp(mode, (name)) == 0)                                                                 \
    return (call)

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *mode = argv[1];
    int a = argc > 2 ? atoi(argv[2]) : 0;
    int b = argc > 3 ? atoi(argv[3]) : 0;
    MODE("print", mode_print(a));
    MODE("busy", mode_busy(a, b));
    MODE("sleep", mode_sleep(a));
    MODE("churn", mode_churn(a));
    MODE("sigprof", mode_sigprof());
    MODE("tasks", mode_tasks());
    MODE("named", mode_named());
    MODE("spawn", mode_spawn());
    MODE("fork", mode_fork());
    MODE("exec", mode_exec());
    MODE("chdir", mode_chdir());
    MODE("masked", mode_masked());
    MODE("allblocked", mode_all_blocked());
    MODE("itimer", mode_itimer());
    MODE("killed", mode_killed());
    MODE("dlopen", mode_dlopen());
    MODE("single", mode_single());
    MODE("unshare", mode_unshare());
    MODE("mainexit", mode_mainexit());
    MODE("rawexec", mode_rawexec());
    MODE("idle", mode_idle(a, b));
    MODE("smallstack", mode_small_stack());
    MODE("coroutine", mode_coroutine());
    MODE("shortthreads", mode_short_threads(a, b));
    MODE("seccomp", argc > 2 ? mode_seccomp(argv[2]) : 2);
    MODE("alarmpoll", mode_alarm_poll());
    MODE("longjmp", mode_longjmp());
    MODE("sigevthread", mode_sigev_thread());
    MODE("timerids", mode_timer_ids());
    MODE("environment", mode_environment());
    MODE("notsc", mode_no_tsc());
    MODE("zerotimeouts", argc > 2 ? mode_zero_timeouts(atoi(argv[2])) : 2);
    MODE("stderrfile", argc > 2 ? mode_stderrfile(argv[2]) : 2);
    return 2;
}
