/* base.c — the bottom of the shim: small utilities every other file may use, and which use
 * nothing of the shim's.
 *
 * Owns reading code bytes without faulting (osp__read_code, and osp__read_pc_code for the
 * page of an interrupted pc), the shim's own short naps and
 * signal-mask changes (raw system calls, never the C library functions the shim interposes),
 * the warning line on stderr — written only while fd 2 is still the stderr the program
 * started with — and opening a file in a directory other users may write (osp__open_shared). The
 * raw system call itself and the clock readings are inline in osp_base.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "osp_base.h"

/* The process's own id for process_vm_readv, set at boot and in a forked child (0: ask). */
static _Atomic pid_t self_pid;
/* 1 where code the CPU is running can be read directly: x86_64 without protection keys in
 * use, where executable means readable. */
static _Atomic int code_readable;

unsigned osp__forbidden;

void osp__read_code_init(void)
{
    /* -1: a filter kills process_vm_readv; every read fails as where it fails with EPERM. */
    atomic_store_explicit(&self_pid, osp__forbidden & OSP__FORBIDS_VM_READ ? -1 : getpid(),
                          memory_order_relaxed);
    atomic_store_explicit(&code_readable, osp__cpu_code_readable(), memory_order_relaxed);
}

/* Async-signal-safe: process_vm_readv (and getpid, before osp__read_code_init) are plain
 * system calls (the caller saves errno). process_vm_readv fails instead of faulting: a page
 * may be execute-only (x86 protection keys make PROT_EXEC alone unreadable), or gone. */
int osp__read_code(uint64_t addr, void *out, size_t n)
{
    struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
    pid_t pid = atomic_load_explicit(&self_pid, memory_order_relaxed);
    if (pid < 0)
        return -1;
    return process_vm_readv(pid ? pid : getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* Async-signal-safe, as osp__read_code. One remote piece per page: the kernel copies the
 * pieces in order and stops at the first it cannot read. */
size_t osp__read_pages(uint64_t addr, void *out, size_t n)
{
    struct iovec local = {out, n}, remote[16];
    size_t pages = n / 4096u < 16u ? n / 4096u : 16u;
    for (size_t i = 0; i < pages; i++)
        remote[i] = (struct iovec){(void *)(uintptr_t)(addr + 4096u * i), 4096u};
    pid_t pid = atomic_load_explicit(&self_pid, memory_order_relaxed);
    if (pid < 0)
        return 0;
    ssize_t got = process_vm_readv(pid ? pid : getpid(), &local, 1, remote, pages, 0);
    return got > 0 ? (size_t)got : 0;
}

/* Async-signal-safe. */
ssize_t osp__read_iov(const struct iovec *local, const struct iovec *remote, unsigned long n)
{
    pid_t pid = atomic_load_explicit(&self_pid, memory_order_relaxed);
    if (pid < 0) {
        errno = EPERM;
        return -1;
    }
    return process_vm_readv(pid ? pid : getpid(), local, n, remote, n, 0);
}

/* Reads code the thread was running: not the program's memory to instrument. */
__attribute__((no_sanitize("address", "hwaddress"))) int
osp__read_pc_code(uint64_t pc, uint64_t addr, void *out, size_t n)
{
    uint64_t page = pc & ~(uint64_t)4095;
    if (atomic_load_explicit(&code_readable, memory_order_relaxed) && addr >= page &&
        addr + n <= page + 4096) {
        /* pc's page is mapped and executable (the thread was running there): readable. */
        const volatile unsigned char *from = (const volatile unsigned char *)(uintptr_t)addr;
        unsigned char *to = out;
        for (size_t i = 0; i < n; i++)
            to[i] = from[i];
        return 0;
    }
    return osp__read_code(addr, out, n);
}

void osp__nap_us(long us)
{
    struct timespec t = {0, us * 1000};
    osp__sys(SYS_nanosleep, (long)&t, 0, 0, 0, 0);
}

void osp__signal_default_raw(int sig)
{
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } dfl = {SIG_DFL, 0, NULL, 0};
    osp__sys(SYS_rt_sigaction, sig, (long)&dfl, 0, 8, 0);
}

int osp__sigmask_raw(int how, const sigset_t *set, sigset_t *old)
{
    /* The kernel's mask is the first _NSIG bits of sigset_t. */
    if (osp__sys(SYS_rt_sigprocmask, how, (long)set, (long)old, _NSIG / 8, 0) != 0)
        return -errno;
    return 0;
}

int osp__sigprof_mask_raw(int how, sigset_t *old)
{
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    return osp__sigmask_raw(how, &prof, old);
}

/* The stderr the program started with (device and inode), or st_ino 0 when unknown. */
static struct stat warn_stream;

void osp__warn_remember_stderr(void)
{
    if (fstat(STDERR_FILENO, &warn_stream) != 0)
        warn_stream.st_ino = 0;
}

/* May a warning go to fd 2? Not when the program has put something else there (a data file
 * it writes): our line would corrupt it. */
static int stderr_is_ours(void)
{
    struct stat now;
    if (fstat(STDERR_FILENO, &now) != 0)
        return 0;
    if (warn_stream.st_ino == 0) /* before boot looked: only a terminal, pipe or socket */
        return S_ISCHR(now.st_mode) || S_ISFIFO(now.st_mode) || S_ISSOCK(now.st_mode);
    return now.st_dev == warn_stream.st_dev && now.st_ino == warn_stream.st_ino;
}

void osp__warn(const char *fmt, ...)
{
    if (!stderr_is_ours())
        return;
    char line[512];
    int n = snprintf(line, sizeof(line), "osprey: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    int saved = errno;
    for (size_t off = 0; off < len;) {
        ssize_t w = osp__sys(SYS_write, STDERR_FILENO, (long)(line + off), (long)(len - off), 0, 0);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    errno = saved;
}

long osp__read_text(const char *path, char *text, size_t size)
{
    long fd = osp__sys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (;;) {
        long n = osp__sys(SYS_read, fd, (long)(text + len), (long)(size - 1 - len), 0, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == size - 1)
            break;
    }
    osp__sys(SYS_close, fd, 0, 0, 0, 0);
    text[len] = '\0';
    return (long)len;
}

int osp__open_shared(const char *path)
{
    long fd = osp__sys(SYS_openat, AT_FDCWD, (long)path,
                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0, 0);
    if (fd < 0)
        return -errno;
    struct stat info;
    int rc = fstat((int)fd, &info) != 0                     ? -errno
             : !S_ISREG(info.st_mode)                       ? -EMEDIUMTYPE
             : info.st_uid != geteuid() && info.st_uid != 0 ? -EPERM
                                                            : 0;
    if (rc != 0) {
        osp__sys(SYS_close, fd, 0, 0, 0, 0);
        return rc;
    }
    return (int)fd;
}

const char *osp__shared_strerror(int rc)
{
    return rc == -ELOOP         ? "is a symbolic link"
           : rc == -EMEDIUMTYPE ? "is not a regular file"
           : rc == -EPERM       ? "belongs to another user"
                                : "cannot be opened";
}
