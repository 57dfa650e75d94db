/* preload.c — the interposers that make the shim work without the program's help: every new
 * thread registered, every new image given the bookkeeping it needs, every object recorded
 * before it is unloaded. Called by nobody in the shim: the program's calls land here.
 *
 * Owns the pthread_create and pthread_setname_np wrappers (the real ones come from libc.c),
 * the thread trampoline that registers a new thread under its name (or "thread") and kernel
 * tid (boot's pthread key unregisters it when it ends — by returning, by pthread_exit or by
 * cancellation alike), the exec and spawn family, system and popen, dlclose, and prctl
 * (PR_SET_SECCOMP: profiling stops before a sandbox takes effect), timer_create
 * (a SIGEV_THREAD callback's thread registers), and _exit and _Exit (no exit handler runs:
 * the calling thread's last period is paid first, as exit's handler pays it).
 *
 * Built into both the shared library (LD_PRELOAD) and the static archive (linked with
 * --whole-archive, so the executable's own pthread_create is this one). When the profiler is
 * inactive the wrapper calls straight through.
 *
 * The exec family is wrapped: a SIGPROF of ours still pending on a thread that calls execve
 * would outlive it and kill the new program, whose SIGPROF is back to SIG_DFL (control.c).
 *
 * dlopen is deliberately not interposed: glibc resolves a dlopen'd name against the RUNPATH
 * of the *calling* object, so a wrapper would change which library a program loads. New
 * objects are recorded instead when a thread registers, before any dlclose (interposed: it
 * resolves nothing), and by the exit handler's final scan; the scan after a dlclose records
 * which objects it unloaded, and when (images.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"
#include "osprey_prof.h"

extern char **environ;

/* The real pthread_create (the next definition after ours). */
typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static pthread_create_fn real_pthread_create(void)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "pthread_create");
    pthread_create_fn fn;
    memcpy(&fn, &sym, sizeof(fn));
    return fn;
}

/* Register the calling thread under its name (or "thread") and its kernel tid; boot arranges
 * for it to be unregistered when it ends. */
static void auto_register(const char *creator_name, void *(*fn)(void *))
{
    char name[16] = "";
    const char *label = "thread";
    /* A new thread inherits its creator's name; only a name of its own is a label. */
    if (pthread_getname_np(pthread_self(), name, sizeof(name)) == 0 && name[0] != '\0' &&
        strcmp(name, creator_name) != 0)
        label = name;
    osp_prof_thread_register((int64_t)gettid(), label);
    osp__registry_mark_automatic(&osp__the_registry, (uint64_t)(uintptr_t)fn);
}

struct start {
    void *(*fn)(void *);
    void *arg;
    char creator_name[16];
    int creator_blocked; /* the creator's mask, as the program sees it, blocks SIGPROF */
};

static void *thread_trampoline(void *p)
{
    struct start st = *(struct start *)p;
    free(p);
    /* Relaxed: a one-way flag; after a sandbox began, nothing of ours (control.c). */
    if (osp__is_active() && !atomic_load_explicit(&osp__sandboxed, memory_order_relaxed)) {
        auto_register(st.creator_name, st.fn);
        osp__sigmask_adopt(st.creator_blocked); /* the mask a new thread inherits */
    }
    return st.fn(st.arg);
}

__attribute__((visibility("default"))) int
pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    pthread_create_fn real = real_pthread_create();
    if (real == NULL)
        return EAGAIN;
    if (!osp__is_active() || atomic_load_explicit(&osp__sandboxed, memory_order_relaxed))
        return real(thread, attr, fn, arg);
    struct start *st = malloc(sizeof(*st));
    if (st == NULL)
        return real(thread, attr, fn, arg); /* runs unprofiled rather than not at all */
    st->fn = fn;
    st->arg = arg;
    if (pthread_getname_np(pthread_self(), st->creator_name, sizeof(st->creator_name)) != 0)
        st->creator_name[0] = '\0';
    st->creator_blocked = osp__sigmask_shows_blocked();
    int err = real(thread, attr, thread_trampoline, st);
    if (err)
        free(st);
    return err;
}

/* A thread named after it started (by itself or by its creator) is relabelled, unless a
 * runtime labelled it explicitly. */
__attribute__((visibility("default"))) int pthread_setname_np(pthread_t thread, const char *name)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "pthread_setname_np");
    if (sym == NULL)
        return ENOSYS;
    int (*real)(pthread_t, const char *);
    memcpy(&real, &sym, sizeof(real));
    int err = real(thread, name);
    if (err == 0 && osp__is_active())
        osp__registry_rename(&osp__the_registry, thread, name);
    return err;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvp_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

#define OSP__CALL_REAL(type, name, ...)                                                            \
    do {                                                                                           \
        type real;                                                                                 \
        static _Atomic(void *) cache;                                                              \
        void *sym = osp__next_symbol(&cache, name);                                                \
        if (sym == NULL) {                                                                         \
            errno = ENOSYS;                                                                        \
            return -1;                                                                             \
        }                                                                                          \
        memcpy(&real, &sym, sizeof(real));                                                         \
        osp__ring_unlink(); /* OSPREY_RING: no collector attaches to an image exec'd away */       \
        osp__exec_begin();                                                                         \
        osp__forked_exec();                                                                        \
        int masked = osp__sigmask_child_begin();                                                   \
        int ret = real(__VA_ARGS__);                                                               \
        int saved = errno;                                                                         \
        osp__sigmask_child_end(masked);                                                            \
        osp__exec_failed();                                                                        \
        errno = saved;                                                                             \
        return ret;                                                                                \
    } while (0)

__attribute__((visibility("default"))) int execve(const char *path, char *const argv[],
                                                  char *const envp[])
{
    OSP__ENV(env, envp);
    osp__note_escape(0, path, env);
    OSP__CALL_REAL(execve_fn, "execve", path, argv, env);
}

__attribute__((visibility("default"))) int execv(const char *path, char *const argv[])
{
    OSP__ENV(env, environ);
    osp__note_escape(0, path, env);
    OSP__CALL_REAL(execve_fn, "execve", path, argv, env);
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[])
{
    OSP__ENV(env, environ);
    osp__note_escape(0, file, env);
    OSP__CALL_REAL(execve_fn, "execvpe", file, argv, env);
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[],
                                                   char *const envp[])
{
    OSP__ENV(env, envp);
    osp__note_escape(0, file, env);
    OSP__CALL_REAL(execve_fn, "execvpe", file, argv, env);
}

__attribute__((visibility("default"))) int fexecve(int fd, char *const argv[], char *const envp[])
{
    OSP__ENV(env, envp);
    osp__note_escape(0, NULL, env); /* a descriptor: no path */
    OSP__CALL_REAL(fexecve_fn, "fexecve", fd, argv, env);
}

__attribute__((visibility("default"))) int execveat(int dirfd, const char *path, char *const argv[],
                                                    char *const envp[], int flags)
{
    OSP__ENV(env, envp);
    osp__note_escape(0, path, env);
    OSP__CALL_REAL(execveat_fn, "execveat", dirfd, path, argv, env, flags);
}

typedef int (*posix_spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                              const posix_spawnattr_t *, char *const[], char *const[]);

/* Not exec in this process: no pause of our signals, only the bookkeeping for the child and
 * the mask it inherits. */
#define OSP__SPAWN(name, pid, path, actions, attr, argv, envp)                                     \
    do {                                                                                           \
        static _Atomic(void *) cache;                                                              \
        void *sym = osp__next_symbol(&cache, name);                                                \
        if (sym == NULL)                                                                           \
            return ENOSYS;                                                                         \
        posix_spawn_fn real;                                                                       \
        memcpy(&real, &sym, sizeof(real));                                                         \
        OSP__ENV(env, envp);                                                                       \
        int masked = osp__sigmask_child_begin();                                                   \
        pid_t spawned = 0;                                                                         \
        int err = real(&spawned, path, actions, attr, argv, env);                                  \
        osp__sigmask_child_end(masked);                                                            \
        if (err == 0)                                                                              \
            osp__note_escape(spawned, path, env);                                                  \
        if (err == 0 && (pid) != NULL)                                                             \
            *(pid) = spawned;                                                                      \
        return err;                                                                                \
    } while (0)

__attribute__((visibility("default"))) int posix_spawn(pid_t *pid, const char *path,
                                                       const posix_spawn_file_actions_t *actions,
                                                       const posix_spawnattr_t *attr,
                                                       char *const argv[], char *const envp[])
{
    OSP__SPAWN("posix_spawn", pid, path, actions, attr, argv, envp);
}

__attribute__((visibility("default"))) int posix_spawnp(pid_t *pid, const char *file,
                                                        const posix_spawn_file_actions_t *actions,
                                                        const posix_spawnattr_t *attr,
                                                        char *const argv[], char *const envp[])
{
    OSP__SPAWN("posix_spawnp", pid, file, actions, attr, argv, envp);
}

__attribute__((visibility("default"))) int system(const char *command)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "system");
    if (sym == NULL)
        return -1;
    int (*real)(const char *);
    memcpy(&real, &sym, sizeof(real));
    int exported = command != NULL && osp__bookkeeping_export();
    int masked = osp__sigmask_child_begin();
    int status = real(command);
    int saved = errno;
    osp__sigmask_child_end(masked);
    osp__bookkeeping_withdraw(exported);
    errno = saved;
    return status;
}

__attribute__((visibility("default"))) FILE *popen(const char *command, const char *mode)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "popen");
    if (sym == NULL)
        return NULL;
    FILE *(*real)(const char *, const char *);
    memcpy(&real, &sym, sizeof(real));
    int exported = osp__bookkeeping_export();
    int masked = osp__sigmask_child_begin();
    FILE *f = real(command, mode);
    int saved = errno;
    osp__sigmask_child_end(masked);
    osp__bookkeeping_withdraw(exported);
    errno = saved;
    return f;
}

/* The list forms gather their arguments on the stack, as glibc's own do, and take the
 * vector forms above. No malloc: they are called in the child of a fork of a threaded
 * program, where the allocator's lock may be held by a thread that no longer exists. */
static size_t count_arguments(va_list ap)
{
    va_list count;
    va_copy(count, ap);
    size_t n = 1;
    while (va_arg(count, const char *) != NULL)
        n++;
    va_end(count);
    return n;
}

#define OSP__LIST_EXEC(call, first, with_envp)                                                     \
    do {                                                                                           \
        va_list ap;                                                                                \
        va_start(ap, first);                                                                       \
        size_t n = count_arguments(ap);                                                            \
        char *argv[n + 1];                                                                         \
        argv[0] = (char *)(first);                                                                 \
        for (size_t i = 1; i <= n; i++) /* the last one read is the terminating NULL */            \
            argv[i] = va_arg(ap, char *);                                                          \
        char **envp = (with_envp) ? va_arg(ap, char **) : NULL;                                    \
        va_end(ap);                                                                                \
        (void)envp;                                                                                \
        return call;                                                                               \
    } while (0)

__attribute__((visibility("default"))) int execl(const char *path, const char *arg, ...)
{
    OSP__LIST_EXEC(execv(path, argv), arg, 0);
}

__attribute__((visibility("default"))) int execlp(const char *file, const char *arg, ...)
{
    OSP__LIST_EXEC(execvp(file, argv), arg, 0);
}

__attribute__((visibility("default"))) int execle(const char *path, const char *arg, ...)
{
    OSP__LIST_EXEC(execve(path, argv, envp), arg, 1);
}

/* Before an object is unloaded, record it if it is new: samples taken in it must still be
 * symbolizable. After, record that it is gone, with the time: another object may be loaded
 * at its address next, and its samples must not be named after this one's functions.
 * (dlopen itself is not interposed: see the file's comment.) */
__attribute__((visibility("default"))) int dlclose(void *handle)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "dlclose");
    if (sym == NULL)
        return -1;
    int (*real)(void *);
    memcpy(&real, &sym, sizeof(real));
    osp__images_refresh();
    int rc = real(handle);
    int saved = errno;
    osp__images_refresh();
    errno = saved;
    return rc;
}

/* A seccomp sandbox (strict mode or a filter) may forbid the system calls our handler makes:
 * profiling stops before it takes effect (control.c). A thread that makes the CPU's counter
 * fault (PR_SET_TSC) gets stamps from CLOCK_MONOTONIC first. */
__attribute__((visibility("default"))) int prctl(int option, ...)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "prctl");
    va_list ap;
    va_start(ap, option);
    unsigned long a[4];
    for (int i = 0; i < 4; i++)
        a[i] = va_arg(ap, unsigned long);
    va_end(ap);
    if (sym == NULL) {
        errno = ENOSYS;
        return -1;
    }
    if (option == PR_SET_SECCOMP)
        osp__forked_exec(), osp__sandbox_begin();
    if (option == PR_SET_TSC && a[0] == PR_TSC_SIGSEGV) /* the counter may fault: stamp.c */
        osp__stamp_no_counter();
    int (*real)(int, ...);
    memcpy(&real, &sym, sizeof(real));
    return real(option, a[0], a[1], a[2], a[3]);
}

/* A SIGEV_THREAD timer's callback runs on a thread the C library starts for it with its own
 * internal pthread_create, which no interposer sees: the callback is wrapped so that thread
 * registers (and, being automatic, leaves the registry when it ends). The wrapper's record
 * lives as long as the process: a timer's callback may run until the timer is deleted. */
struct timer_callback {
    void (*fn)(union sigval);
    union sigval value;
};

static void timer_trampoline(union sigval v)
{
    const struct timer_callback *cb = v.sival_ptr;
    if (osp__is_active() && osp__tls_slot == NULL)
        auto_register("", (void *(*)(void *))(void (*)(void))cb->fn);
    cb->fn(cb->value);
}

__attribute__((visibility("default"))) int timer_create(clockid_t clock, struct sigevent *sevp,
                                                        timer_t *timer)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "timer_create");
    if (sym == NULL) {
        errno = ENOSYS;
        return -1;
    }
    int (*real)(clockid_t, struct sigevent *, timer_t *);
    memcpy(&real, &sym, sizeof(real));
    osp__program_arms_sigprof_timer(clock, sevp);
    if (sevp == NULL || sevp->sigev_notify != SIGEV_THREAD || sevp->sigev_notify_function == NULL ||
        !osp__is_active()) {
        /* Never while the kernel takes a timer's id from its caller (registry.c). */
        osp__timer_ids_lock();
        int rc = real(clock, sevp, timer);
        osp__timer_ids_unlock();
        return rc;
    }
    struct timer_callback *cb = malloc(sizeof *cb);
    if (cb == NULL)
        return real(clock, sevp, timer); /* unprofiled rather than not at all */
    cb->fn = sevp->sigev_notify_function;
    cb->value = sevp->sigev_value;
    struct sigevent wrapped = *sevp;
    wrapped.sigev_notify_function = timer_trampoline;
    wrapped.sigev_value.sival_ptr = cb;
    osp__timer_ids_lock();
    int rc = real(clock, &wrapped, timer);
    osp__timer_ids_unlock();
    if (rc != 0)
        free(cb);
    return rc;
}

/* _exit and _Exit: a process that ends so runs no exit handler, and the CPU time its thread
 * used since its last sample would be lost (half a period in expectation: a sixth of a short
 * forked child of 3 ms). Paid first (exit.c), then the real one. */
typedef void (*exit_fn)(int);

static _Noreturn void exit_through(_Atomic(void *) *cache, const char *name, int status)
{
    osp__pay_before_exit();
    void *sym = osp__next_symbol(cache, name);
    exit_fn real;
    memcpy(&real, &sym, sizeof real);
    if (real != NULL)
        real(status);
    for (;;)
        osp__sys(SYS_exit_group, status, 0, 0, 0, 0);
}

__attribute__((visibility("default"))) void _exit(int status)
{
    static _Atomic(void *) cache;
    exit_through(&cache, "_exit", status);
}

__attribute__((visibility("default"))) void _Exit(int status)
{
    static _Atomic(void *) cache;
    exit_through(&cache, "_Exit", status);
}

/* The wait family. A program that is its pid namespace's init or a child subreaper is the
 * parent of its collector, and of any collector a descendant started (spawn.c,
 * program_reaps_orphans): a wait for any child (-1, P_ALL) with no child left but collectors
 * answers ECHILD, as a plain run's would, instead of waiting for a collector that waits for the
 * program's end. Async-signal-safe (a SIGCHLD handler's waitpid loop): raw system calls into
 * buffers on the stack. Anything it cannot read leaves the call as it was. */
static size_t put_decimal(char *at, unsigned long v)
{
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        at[i] = digits[n - 1 - i];
    return n;
}

/* 1: a collector (ours, or a process named ospreyd: a descendant's, reparented here too). */
static int is_collector(unsigned long pid)
{
    if ((long)pid == osp__collector_child)
        return 1;
    char path[48] = "/proc/";
    size_t at = 6 + put_decimal(path + 6, pid);
    memcpy(path + at, "/comm", 6);
    char comm[32];
    return osp__read_text(path, comm, sizeof comm) > 0 && strcmp(comm, "ospreyd\n") == 0;
}

/* 1 when every child of every thread of the process is a collector, and there is one. */
static int only_collectors_left(void)
{
    if (osp__collector_child <= 0)
        return 0;
    long dir = osp__sys(SYS_openat, AT_FDCWD, (long)"/proc/self/task",
                        O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0);
    if (dir < 0)
        return 0;
    char entries[2048] __attribute__((aligned(8)));
    int collectors = 0, others = 0, unreadable = 0;
    long n;
    while ((n = osp__sys(SYS_getdents64, dir, (long)entries, sizeof entries, 0, 0)) > 0) {
        for (long off = 0; off < n;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(void *)(entries + off);
            off += d->d_reclen;
            if (d->d_name[0] < '0' || d->d_name[0] > '9')
                continue;
            char path[64] = "/proc/self/task/";
            size_t len = strnlen(d->d_name, 20);
            memcpy(path + 16, d->d_name, len);
            memcpy(path + 16 + len, "/children", 10);
            char list[512];
            if (osp__read_text(path, list, sizeof list) < 0) {
                unreadable = 1;
                continue;
            }
            for (char *c = list; *c != '\0';) {
                if (*c < '0' || *c > '9') {
                    c++;
                    continue;
                }
                unsigned long pid = 0;
                while (*c >= '0' && *c <= '9')
                    pid = pid * 10 + (unsigned long)(*c++ - '0');
                if (is_collector(pid))
                    collectors++;
                else
                    others++;
            }
        }
    }
    osp__sys(SYS_close, dir, 0, 0, 0, 0);
    return !unreadable && others == 0 && collectors > 0;
}

/* A 2 ms nap between two looks at the children; 1 when a signal of the program's cut it short
 * (one of ours, osp__sigprof_ours_seen, does not count). */
static int nap_cut_by_the_program(void)
{
    struct timespec nap = {0, 2000000};
    unsigned ours = osp__sigprof_ours_seen;
    return osp__sys(SYS_nanosleep, (long)&nap, 0, 0, 0, 0) != 0 && errno == EINTR &&
           osp__sigprof_ours_seen == ours;
}

static pid_t real_wait4(pid_t pid, int *status, int options, struct rusage *usage)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "wait4");
    pid_t (*real)(pid_t, int *, int, struct rusage *);
    if (sym == NULL)
        return (pid_t)osp__sys(SYS_wait4, pid, (long)status, options, (long)usage, 0);
    memcpy(&real, &sym, sizeof(real));
    return real(pid, status, options, usage);
}

static int real_waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "waitid");
    int (*real)(idtype_t, id_t, siginfo_t *, int);
    if (sym == NULL)
        return (int)osp__sys(SYS_waitid, type, id, (long)info, options, 0);
    memcpy(&real, &sym, sizeof(real));
    return real(type, id, info, options);
}

/* A wait for any child where collectors may be among the children: ECHILD once only collectors
 * are left; else polled (WNOHANG every 2 ms), since a collector a descendant is starting is not
 * known as one until its exec, and a blocking wait would hang on it. A signal that cuts the nap
 * short ends the wait with EINTR unless a child is ready, as a handler without SA_RESTART would;
 * a signal of ours (osp__sigprof_ours_seen) does not. */
static pid_t wait_any(int *status, int options, struct rusage *usage)
{
    if (osp__collector_child <= 0)
        return real_wait4(-1, status, options, usage);
    for (;;) {
        if (only_collectors_left()) {
            errno = ECHILD;
            return -1;
        }
        pid_t got = real_wait4(-1, status, options | WNOHANG, usage);
        if (got != 0 || (options & WNOHANG))
            return got;
        if (nap_cut_by_the_program()) {
            got = real_wait4(-1, status, options | WNOHANG, usage);
            if (got == 0)
                errno = EINTR;
            return got != 0 ? got : -1;
        }
    }
}

__attribute__((visibility("default"))) pid_t wait(int *status)
{
    return wait_any(status, 0, NULL);
}

__attribute__((visibility("default"))) pid_t waitpid(pid_t pid, int *status, int options)
{
    return pid == -1 ? wait_any(status, options, NULL) : real_wait4(pid, status, options, NULL);
}

__attribute__((visibility("default"))) pid_t wait3(int *status, int options, struct rusage *usage)
{
    return wait_any(status, options, usage);
}

__attribute__((visibility("default"))) pid_t wait4(pid_t pid, int *status, int options,
                                                   struct rusage *usage)
{
    return pid == -1 ? wait_any(status, options, usage) : real_wait4(pid, status, options, usage);
}

__attribute__((visibility("default"))) int waitid(idtype_t type, id_t id, siginfo_t *info,
                                                  int options)
{
    if (type != P_ALL || osp__collector_child <= 0)
        return real_waitid(type, id, info, options);
    for (;;) {
        if (only_collectors_left()) {
            errno = ECHILD;
            return -1;
        }
        if (info != NULL)
            info->si_pid = 0;
        int rc = real_waitid(type, id, info, options | WNOHANG);
        if (rc != 0 || (options & WNOHANG) || (info != NULL && info->si_pid != 0))
            return rc;
        if (info == NULL) /* no way to tell "none ready" apart: as the program asked */
            return real_waitid(type, id, info, options);
        if (nap_cut_by_the_program()) {
            info->si_pid = 0;
            rc = real_waitid(type, id, info, options | WNOHANG);
            if (rc == 0 && info->si_pid == 0) {
                errno = EINTR;
                return -1;
            }
            return rc;
        }
    }
}
