/* seccomp.c — a seccomp filter the process already runs under at boot, and the calls it kills.
 *
 * Owns osp__seccomp_check, run once by boot before any call a filter is likely to forbid. A
 * filter's kill or trap action on a call the shim makes would kill the program (SIGSYS, status
 * 159): a launcher that installs a strict allow-list and execs the program (systemd's
 * SystemCallFilter=, a container's profile, firejail, `deny` of bench/field/) hands it to every
 * image it starts. The shim cannot read the filter (PTRACE_SECCOMP_GET_FILTER needs
 * CAP_SYS_ADMIN), so where /proc/self/status says `Seccomp: 2` it tries every call it makes, in
 * the shapes it makes them, in a throwaway child first: a child killed by a signal names the
 * call it was making, and profiling is off, or only the feature that needs the call is
 * (osp__forbidden). A call the filter fails with an errno is not this file's: the code that
 * makes it already copes.
 *
 * DESIGN. The child is a copy (clone without CLONE_VM: a SIGSYS core dump of a child that
 * shared the program's memory took every process sharing it down with it before Linux 5.16),
 * with no exit signal (the program's SIGCHLD handler, its wait() and an ignored SIGCHLD never
 * see it: only a wait with __WALL does), every signal blocked, SIGSYS at its default (a trap
 * action kills it rather than running a handler of the program's), and not dumpable (a killed
 * child leaves no core file). It writes the index of the call it is about to make into a shared
 * page; killed, the next child starts after that call. One child when nothing is forbidden, one
 * more per call that is. Cost only where a filter is: the unfiltered boot reads
 * /proc/self/status once (shim/README.md, "A filter at boot").
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"

/* Not one of the shim's calls: set up in the child before the others (probe_setup). */
#define OSP__PROBE_SETUP 0x80000000u

/* What a child's calls share: descriptors and buffers of its own (its memory is a copy). */
static struct {
    volatile uint32_t *at; /* the shared page: the index of the call being made */
    long memfd, dir, listener, client, pidfd;
    void *map;
    int handler_set; /* SIGPROF's action ours: a SIGPROF sent is handled */
    char buf[4096] __attribute__((aligned(16)));
} probe;

static volatile sig_atomic_t handled;

static void probe_handler(int sig, siginfo_t *info, void *context)
{
    (void)sig, (void)info, (void)context;
    handled = 1;
}

static void p_sigprocmask(void)
{
    uint64_t all = ~(uint64_t)0;
    osp__sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, 8, 0);
}

static void p_sigsys_default(void)
{
    osp__signal_default_raw(SIGSYS);
}

static void p_get_name(void)
{
    osp__sys(SYS_prctl, PR_GET_NAME, (long)probe.buf, 0, 0, 0);
}

/* spawn.c's question before it starts the collector (program_reaps_orphans): is the program a
 * child subreaper? A filter may allow prctl for some options only. */
static void p_get_subreaper(void)
{
    osp__sys(SYS_prctl, PR_GET_CHILD_SUBREAPER, (long)probe.buf, 0, 0, 0);
}

static void p_not_dumpable(void)
{
    osp__sys(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static void p_getrandom(void)
{
    osp__sys(SYS_getrandom, (long)probe.buf, 8, 1 /* GRND_NONBLOCK */, 0, 0);
}

static void p_memfd_create(void)
{
    probe.memfd = osp__sys(SYS_memfd_create, (long)"osprey-probe", MFD_CLOEXEC, 0, 0, 0);
}

static void p_ftruncate(void)
{
    osp__sys(SYS_ftruncate, probe.memfd, 4096, 0, 0, 0);
}

static void p_fallocate(void)
{
    osp__sys(SYS_fallocate, probe.memfd, 0, 0, 4096, 0);
}

static void p_pwrite64(void)
{
    osp__sys(SYS_pwrite64, probe.memfd, (long)probe.buf, 8, 0, 0);
}

static void p_mmap_shared(void)
{
    probe.map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, (int)probe.memfd, 0);
}

static void p_munmap(void)
{
    if (probe.map != MAP_FAILED && probe.map != NULL)
        osp__sys(SYS_munmap, (long)probe.map, 4096, 0, 0, 0);
}

/* A signal stack's shape: private, anonymous, its lowest page a guard. */
static void p_mmap_private(void)
{
    probe.map = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
}

static void p_mprotect(void)
{
    if (probe.map != MAP_FAILED && probe.map != NULL)
        osp__sys(SYS_mprotect, (long)probe.map, 4096, PROT_NONE, 0, 0);
}

static void p_sigaltstack(void)
{
    stack_t old, ss = {.ss_sp = probe.buf, .ss_size = sizeof probe.buf};
    osp__sys(SYS_sigaltstack, 0, (long)&old, 0, 0, 0);
    osp__sys(SYS_sigaltstack, (long)&ss, 0, 0, 0, 0);
}

static void p_close(void)
{
    osp__sys(SYS_close, probe.memfd, 0, 0, 0, 0);
}

static void p_openat(void)
{
    probe.dir = osp__sys(SYS_openat, AT_FDCWD, (long)"/proc/self/fd",
                         O_RDONLY | O_CLOEXEC | O_DIRECTORY, 0, 0);
}

static void p_getdents64(void)
{
    osp__sys(SYS_getdents64, probe.dir, (long)probe.buf, sizeof probe.buf, 0, 0);
}

static void p_readlink(void)
{
#ifdef SYS_readlink
    osp__sys(SYS_readlink, (long)"/proc/self/exe", (long)probe.buf, sizeof probe.buf, 0, 0);
#else
    osp__sys(SYS_readlinkat, AT_FDCWD, (long)"/proc/self/exe", (long)probe.buf, sizeof probe.buf,
             0);
#endif
}

static void p_access(void)
{
#ifdef SYS_access
    osp__sys(SYS_access, (long)"/proc/self/exe", X_OK, 0, 0, 0);
#else
    osp__sys(SYS_faccessat, AT_FDCWD, (long)"/proc/self/exe", X_OK, 0, 0);
#endif
}

static void p_getsockopt_timeout(void)
{
    socklen_t len = sizeof(struct timeval);
    osp__sys(SYS_getsockopt, 0, SOL_SOCKET, SO_RCVTIMEO, (long)probe.buf, (long)&len);
}

static void p_prlimit64(void)
{
    osp__sys(SYS_prlimit64, 0, RLIMIT_SIGPENDING, 0, (long)probe.buf, 0);
}

static void p_sched_getaffinity(void)
{
    osp__sys(SYS_sched_getaffinity, 0, 128, (long)probe.buf, 0, 0);
}

static void p_sigprof_action(void)
{
    osp__sigaction_fn real = osp__libc_sigaction();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = probe_handler;
    sa.sa_flags = SA_RESTART | SA_SIGINFO | SA_ONSTACK;
    sigfillset(&sa.sa_mask);
    probe.handler_set = real != NULL && real(SIGPROF, &sa, NULL) == 0;
}

static int probe_timer = -1;

static void timer_make(clockid_t clock)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = (int)osp__sys(SYS_gettid, 0, 0, 0, 0, 0);
    int timer = -1;
    if (osp__sys(SYS_timer_create, clock, (long)&sev, (long)&timer, 0, 0) == 0)
        probe_timer = timer;
}

static void p_timer_create_cpu(void)
{
    timer_make(CLOCK_THREAD_CPUTIME_ID);
}

static void p_timer_create_mono(void)
{
    timer_make(CLOCK_MONOTONIC);
}

/* Disarmed (a zero value), relative and absolute: the shapes of the two timers. */
static void p_timer_settime(void)
{
    struct itimerspec zero;
    memset(&zero, 0, sizeof zero);
    osp__sys(SYS_timer_settime, probe_timer, 0, (long)&zero, 0, 0);
    osp__sys(SYS_timer_settime, probe_timer, TIMER_ABSTIME, (long)&zero, 0, 0);
}

static void p_timer_delete(void)
{
    osp__sys(SYS_timer_delete, probe_timer, 0, 0, 0, 0);
}

/* The kernel's reset of the cursor of timer ids (registry.c). */
static void p_timer_ids(void)
{
    osp__sys(SYS_prctl, OSP__PR_TIMER_CREATE_RESTORE_IDS, 0, 0, 0, 0);
}

static void p_clock_gettime(void)
{
    struct timespec t;
    osp__sys(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&t, 0, 0, 0);
}

static void p_getrusage(void)
{
    osp__sys(SYS_getrusage, 1 /* RUSAGE_THREAD */, (long)probe.buf, 0, 0, 0);
}

/* A SIGPROF sent to the thread (blocked: pending), then handled: delivered as it is unblocked,
 * the handler returns through rt_sigreturn. */
static void p_tgkill(void)
{
    if (probe.handler_set)
        osp__sys(SYS_tgkill, osp__sys(SYS_getpid, 0, 0, 0, 0, 0),
                 osp__sys(SYS_gettid, 0, 0, 0, 0, 0), SIGPROF, 0, 0);
}

static void p_sigreturn(void)
{
    uint64_t prof = (uint64_t)1 << (SIGPROF - 1);
    if (!probe.handler_set)
        return;
    osp__sys(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&prof, 0, 8, 0);
    osp__sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&prof, 0, 8, 0);
}

static void p_sigtimedwait(void)
{
    uint64_t prof = (uint64_t)1 << (SIGPROF - 1);
    struct timespec zero = {0, 0};
    siginfo_t info;
    osp__sys(SYS_rt_sigtimedwait, (long)&prof, (long)&info, (long)&zero, 8, 0);
}

static void p_futex(void)
{
    static uint32_t word = 1;
    struct timespec zero = {0, 0};
    osp__sys(SYS_futex, (long)&word, 0 /* FUTEX_WAIT */, 0, (long)&zero, 0);
}

static void p_nanosleep(void)
{
    struct timespec t = {0, 1};
    osp__sys(SYS_nanosleep, (long)&t, 0, 0, 0, 0);
}

static void p_process_vm_readv(void)
{
    struct iovec local = {probe.buf, 8}, remote = {probe.buf + 8, 8};
    process_vm_readv((pid_t)osp__sys(SYS_getpid, 0, 0, 0, 0, 0), &local, 1, &remote, 1, 0);
}

/* The collector's wake-up (SIGURG, blocked here) and its liveness check (signal 0). */
static void p_kill(void)
{
    long self = osp__sys(SYS_getpid, 0, 0, 0, 0, 0);
    osp__sys(SYS_kill, self, SIGURG, 0, 0, 0);
    osp__sys(SYS_kill, self, 0, 0, 0, 0);
}

/* The exit's look at its collector (exit.c): a pidfd of this child, a SIGURG through it. */
static void p_pidfd_open(void)
{
    probe.pidfd = osp__sys(SYS_pidfd_open, osp__sys(SYS_getpid, 0, 0, 0, 0, 0), 0, 0, 0, 0);
}

static void p_pidfd_send_signal(void)
{
    osp__sys(SYS_pidfd_send_signal, probe.pidfd, SIGURG, 0, 0, 0);
}

static void p_perf_event_open(void)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_SW_DUMMY;
    attr.context_switch = 1;
    attr.exclude_kernel = 1;
    long fd = osp__sys(SYS_perf_event_open, (long)&attr, 0, 0, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0)
        osp__sys(SYS_close, fd, 0, 0, 0, 0);
}

static socklen_t probe_address(struct sockaddr_un *addr)
{
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    int n = snprintf(addr->sun_path + 1, sizeof addr->sun_path - 1, "osprey-probe:%ld",
                     osp__sys(SYS_getpid, 0, 0, 0, 0, 0));
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void p_socket(void)
{
    probe.listener =
        osp__sys(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, 0, 0);
    probe.client =
        osp__sys(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, 0, 0);
}

static void p_bind(void)
{
    struct sockaddr_un addr;
    socklen_t length = probe_address(&addr);
    osp__sys(SYS_bind, probe.listener, (long)&addr, length, 0, 0);
}

static void p_listen(void)
{
    osp__sys(SYS_listen, probe.listener, 1, 0, 0, 0);
}

static void p_connect(void)
{
    struct sockaddr_un addr;
    socklen_t length = probe_address(&addr);
    osp__sys(SYS_connect, probe.client, (long)&addr, length, 0, 0);
}

static void p_getsockopt_peer(void)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    osp__sys(SYS_getsockopt, probe.client, SOL_SOCKET, SO_PEERCRED, (long)&cred, (long)&len);
}

/* A greeting's shape: bytes and a descriptor. */
static void p_sendmsg(void)
{
    char byte = 'P';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr align;
        char bytes[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.bytes,
                         .msg_controllen = sizeof control.bytes};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    int fd = 0;
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    osp__sys(SYS_sendmsg, probe.client, (long)&msg, MSG_DONTWAIT | MSG_NOSIGNAL, 0, 0);
}

static void p_recvmsg(void)
{
    char byte;
    struct iovec iov = {&byte, 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    osp__sys(SYS_recvmsg, probe.client, (long)&msg, MSG_DONTWAIT, 0, 0);
}

static void p_ppoll(void)
{
    struct pollfd {
        int fd;
        short events, revents;
    } fd = {(int)probe.client, 1 /* POLLIN */, 0};
    struct timespec zero = {0, 0};
    osp__sys(SYS_ppoll, (long)&fd, 1, (long)&zero, 0, 8);
}

static void p_fstat(void)
{
#ifdef SYS_fstat
    osp__sys(SYS_fstat, probe.client, (long)probe.buf, 0, 0, 0);
#else
    osp__sys(SYS_newfstatat, probe.client, (long)"", (long)probe.buf, AT_EMPTY_PATH, 0);
#endif
}

/* The collector's start (spawn.c): a vfork child on a stack of its own, reaped with __WALL. */
static long spawned = -1;

static int spawned_child(void *arg)
{
    (void)arg;
    osp__sys(SYS_exit, 0, 0, 0, 0, 0);
    return 0;
}

static void p_clone(void)
{
    spawned =
        clone(spawned_child, probe.buf + sizeof probe.buf, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
}

static void p_wait4(void)
{
    int status;
    osp__sys(SYS_wait4, spawned, (long)&status, __WALL, 0, 0);
}

/* Its middle process's copy and its grandchild's descriptors, then the exec (a path that
 * cannot be read: EFAULT, nothing run). */
static void p_fork(void)
{
    long pid = osp__sys(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0)
        osp__sys(SYS_exit, 0, 0, 0, 0, 0);
    int status;
    if (pid > 0)
        osp__sys(SYS_wait4, pid, (long)&status, __WALL, 0, 0);
}

static void p_fcntl(void)
{
    long fd = osp__sys(SYS_fcntl, 0, F_DUPFD, 100, 0, 0);
    if (fd >= 0)
        osp__sys(SYS_close, fd, 0, 0, 0, 0);
}

static void p_dup3(void)
{
    osp__sys(SYS_dup3, 0, 100, 0, 0, 0);
}

static void p_close_range(void)
{
    osp__sys(SYS_close_range, 100, 100, 0, 0, 0);
}

static void p_execve(void)
{
    osp__sys(SYS_execve, 8 /* unreadable */, 0, 0, 0, 0);
}

/* The collector's threads: glibc's pthread_create makes clone3 (an invalid size here:
 * EINVAL, nothing made). */
static void p_clone3(void)
{
#ifdef SYS_clone3
    osp__sys(SYS_clone3, 0, 0, 0, 0, 0);
#endif
}

/* Each call the shim makes once a process is profiled, in the order its boot first makes them;
 * `forbids` the feature that goes without it, 0 when profiling cannot (README.md, "A filter at
 * boot"). */
static const struct {
    const char *call;
    unsigned forbids;
    void (*make)(void); /* NULL: the call `nr`, without arguments */
    long nr;
} probes[] = {
    {"rt_sigprocmask", 0, p_sigprocmask, 0},
    {"rt_sigaction", 0, p_sigsys_default, 0},
    {"prctl", 0, p_get_name, 0},
    {"prctl", OSP__PROBE_SETUP, p_not_dumpable, 0},
    {"getpid", 0, NULL, SYS_getpid},
    {"gettid", 0, NULL, SYS_gettid},
    {"getppid", 0, NULL, SYS_getppid},
    {"getsid", 0, NULL, SYS_getsid},
    {"getuid", 0, NULL, SYS_getuid},
    {"geteuid", 0, NULL, SYS_geteuid},
    {"getgid", 0, NULL, SYS_getgid},
    {"getegid", 0, NULL, SYS_getegid},
    {"getrandom", 0, p_getrandom, 0},
    {"memfd_create", 0, p_memfd_create, 0},
    {"ftruncate", 0, p_ftruncate, 0},
    {"fallocate", 0, p_fallocate, 0},
    {"pwrite64", 0, p_pwrite64, 0},
    {"mmap", 0, p_mmap_shared, 0},
    {"munmap", 0, p_munmap, 0},
    {"close", 0, p_close, 0},
    {"openat", 0, p_openat, 0},
    {"getdents64", 0, p_getdents64, 0},
    {"readlink", 0, p_readlink, 0},
    {"access", 0, p_access, 0},
    {"getsockopt", 0, p_getsockopt_timeout, 0},
    {"prlimit64", 0, p_prlimit64, 0},
    {"sched_getaffinity", 0, p_sched_getaffinity, 0},
    {"mmap", 0, p_mmap_private, 0},
    {"mprotect", 0, p_mprotect, 0},
    {"sigaltstack", 0, p_sigaltstack, 0},
    {"rt_sigaction", 0, p_sigprof_action, 0},
    {"timer_create", 0, p_timer_create_cpu, 0},
    {"timer_settime", 0, p_timer_settime, 0},
    {"timer_delete", 0, p_timer_delete, 0},
    {"timer_create", 0, p_timer_create_mono, 0},
    {"prctl", OSP__FORBIDS_TIMER_IDS, p_timer_ids, 0},
    {"clock_gettime", 0, p_clock_gettime, 0},
    {"getrusage", 0, p_getrusage, 0},
    {"tgkill", 0, p_tgkill, 0},
    {"rt_sigreturn", 0, p_sigreturn, 0},
    {"rt_sigtimedwait", 0, p_sigtimedwait, 0},
    {"futex", 0, p_futex, 0},
    {"nanosleep", 0, p_nanosleep, 0},
    {"process_vm_readv", OSP__FORBIDS_VM_READ, p_process_vm_readv, 0},
    {"kill", OSP__FORBIDS_KILL, p_kill, 0},
    {"pidfd_open", OSP__FORBIDS_PIDFD, p_pidfd_open, 0},
    {"pidfd_send_signal", OSP__FORBIDS_PIDFD, p_pidfd_send_signal, 0},
    {"perf_event_open", OSP__FORBIDS_PERF, p_perf_event_open, 0},
    {"socket", OSP__FORBIDS_SOCKETS, p_socket, 0},
    {"bind", OSP__FORBIDS_SOCKETS, p_bind, 0},
    {"listen", OSP__FORBIDS_SOCKETS, p_listen, 0},
    {"connect", OSP__FORBIDS_SOCKETS, p_connect, 0},
    {"getsockopt", OSP__FORBIDS_SOCKETS, p_getsockopt_peer, 0},
    {"sendmsg", OSP__FORBIDS_SOCKETS, p_sendmsg, 0},
    {"recvmsg", OSP__FORBIDS_SOCKETS, p_recvmsg, 0},
    {"ppoll", OSP__FORBIDS_SOCKETS, p_ppoll, 0},
    {"fstat", OSP__FORBIDS_SOCKETS, p_fstat, 0},
    {"prctl", 0, p_get_subreaper, 0},
    {"clone", 0, p_clone, 0},
    {"wait4", 0, p_wait4, 0},
    {"clone", 0, p_fork, 0},
    {"fcntl", 0, p_fcntl, 0},
    {"dup3", 0, p_dup3, 0},
    {"close_range", 0, p_close_range, 0},
    {"execve", 0, p_execve, 0},
    {"clone3", 0, p_clone3, 0},
};
#define PROBES (sizeof probes / sizeof probes[0])

/* The child: the setup calls, then every call from `first` on, each index written before. */
static _Noreturn void probe_child(uint32_t first, int dumpable)
{
    probe.memfd = probe.dir = probe.listener = probe.client = probe.pidfd = -1;
    probe.map = NULL;
    for (uint32_t i = 0; i < PROBES; i++) {
        int setup = i < 4; /* signals blocked, SIGSYS default, not dumpable: always made */
        if (i < first && !setup)
            continue;
        if (probes[i].forbids == OSP__PROBE_SETUP && !dumpable)
            continue;
        *probe.at = i;
        if (probes[i].make != NULL)
            probes[i].make();
        else
            osp__sys(probes[i].nr, 0, 0, 0, 0, 0);
    }
    *probe.at = (uint32_t)PROBES;
    for (;;)
        osp__sys(SYS_exit_group, 0, 0, 0, 0, 0);
}

/* One child from `first` on: the index of the call it was killed at, PROBES when it made them
 * all, or -1 when no child could be made or reaped (profiling off: a filter that holds a call
 * for a supervisor that does not answer in time, for one). */
static long probe_from(uint32_t first, int dumpable, volatile uint32_t *at)
{
    *at = (uint32_t)PROBES;
    probe.at = at;
    long pid = osp__sys(SYS_clone, 0 /* no exit signal */, 0, 0, 0, 0);
    if (pid == 0)
        probe_child(first, dumpable);
    if (pid < 0)
        return -1;
    int status = 0;
    /* 2 s at most: the calls take well under a millisecond, even on a loaded machine. */
    for (long waited_us = 0, step = 20;; waited_us += step, step = step < 1000 ? step * 2 : step) {
        long r = osp__sys(SYS_wait4, pid, (long)&status, __WALL | WNOHANG, 0, 0);
        if (r == pid)
            break;
        if ((r < 0 && errno != EINTR) || waited_us > 2000000) {
            osp__sys(SYS_kill, pid, SIGKILL, 0, 0, 0);
            while (osp__sys(SYS_wait4, pid, (long)&status, __WALL, 0, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        osp__nap_us(step);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return (long)PROBES;
    /* A kill action and a trap (SIGSYS at its default) both end the child with SIGSYS. */
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSYS || *at >= PROBES)
        return -1;
    return (long)*at;
}

/* The integer after `key` in `text`, or -1. */
static long status_field(const char *text, const char *key)
{
    const char *line = strstr(text, key);
    if (line == NULL)
        return -1;
    line += strlen(key);
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line < '0' || *line > '9')
        return -1;
    return strtol(line, NULL, 10);
}

/* The Seccomp: line of /proc/self/status (0 none, 1 strict, 2 filter) and Seccomp_filters:
 * (how many filters, -1 before Linux 5.9), read with the calls the loader itself made under
 * the filter (openat, read, close); 0 when it cannot be read. */
static int seccomp_mode(long *filters)
{
    char text[4096];
    if (osp__read_text("/proc/self/status", text, sizeof text) < 0)
        return 0;
    long mode = status_field(text, "\nSeccomp:");
    *filters = status_field(text, "\nSeccomp_filters:");
    return mode > 0 ? (int)mode : 0;
}

/* OSPREY_PROFILE_SECCOMP=<filters>:<forbidden>: the answer of the image that exec'd or spawned
 * this one, handed on (descendants.c) with the number of filters it was found under. Filters
 * are never taken off, and a new image inherits its parent's: under as many, the same ones. */
static char answer_entry[64];

const char *osp__seccomp_entry(void)
{
    return answer_entry[0] != '\0' ? answer_entry : NULL;
}

/* The handed-on answer for `filters` filters, or -1 when there is none for as many. */
static long handed_on(long filters)
{
    const char *entry = getenv("OSPREY_PROFILE_SECCOMP");
    long answer = -1;
    if (entry != NULL && filters >= 0) {
        char *end;
        long count = strtol(entry, &end, 10);
        if (end != entry && *end == ':' && count == filters) {
            char *last;
            unsigned long mask = strtoul(end + 1, &last, 10);
            if (last != end + 1 && *last == '\0' && mask < 256)
                answer = (long)mask;
        }
    }
    unsetenv("OSPREY_PROFILE_SECCOMP"); /* the program never sees it */
    return answer;
}

int osp__seccomp_check(void)
{
    long filters = -1;
    int mode = seccomp_mode(&filters);
    long known = handed_on(filters);
    if (mode == 0)
        return 0;
    if (mode == 1) { /* not at a boot (strict mode forbids execve), but for certain */
        osp__warn("the program runs in seccomp's strict mode; profiling is off");
        return -1;
    }
    if (known >= 0) { /* tried by the image before this one, under the same filters: said */
        osp__forbidden = (unsigned)known;
        snprintf(answer_entry, sizeof answer_entry, "OSPREY_PROFILE_SECCOMP=%ld:%ld", filters,
                 known);
        return 0;
    }
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    volatile uint32_t *at = page == MAP_FAILED ? NULL : page;
    unsigned forbidden = 0;
    int dumpable = 1, off = at == NULL;
    const char *refused = NULL; /* the call that turns profiling off, when one does */
    for (uint32_t first = 0; !off && first < PROBES;) {
        long killed = probe_from(first, dumpable, at);
        if (killed < 0 || (size_t)killed >= PROBES) {
            off = killed < 0;
            break;
        }
        unsigned forbids = probes[killed].forbids;
        if (forbids == OSP__PROBE_SETUP) {
            dumpable = 0; /* not ours: the next children go without it */
        } else if (forbids == 0) {
            off = 1;
            refused = probes[killed].call;
        } else if (!(forbidden & forbids)) {
            forbidden |= forbids;
            /* Said once per feature, naming the first call of it the filter kills. */
            if (forbids == OSP__FORBIDS_VM_READ)
                osp__warn("a seccomp filter forbids process_vm_readv; profiling goes on without "
                          "stack copies (a sample in code without unwind rows is cut short)");
            else if (forbids == OSP__FORBIDS_KILL)
                osp__warn("a seccomp filter forbids kill; profiling goes on without waking the "
                          "collector (it reads on its own pace)");
            else if (forbids == OSP__FORBIDS_PERF)
                osp__warn("a seccomp filter forbids perf_event_open; profiling goes on, waits "
                          "timed by the program's calls");
            else if (forbids == OSP__FORBIDS_PIDFD)
                osp__warn("a seccomp filter forbids %s; profiling goes on, the collector looked "
                          "at by its pid at the program's exit",
                          probes[killed].call);
            else if (forbids == OSP__FORBIDS_SOCKETS)
                osp__warn("a seccomp filter forbids %s; profiling goes on, forked children and "
                          "programs it execs start collectors of their own",
                          probes[killed].call);
        }
        first = (uint32_t)killed + 1;
    }
    if (at != NULL)
        munmap(page, 4096);
    if (off && refused != NULL)
        osp__warn("a seccomp filter forbids %s; profiling is off", refused);
    else if (off)
        osp__warn("the program runs under a seccomp filter and the calls profiling makes could "
                  "not be tried in a child first; profiling is off");
    if (off)
        return -1;
    osp__forbidden = forbidden;
    if (filters >= 0)
        snprintf(answer_entry, sizeof answer_entry, "OSPREY_PROFILE_SECCOMP=%ld:%u", filters,
                 forbidden);
    return 0;
}
