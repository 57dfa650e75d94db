/* osp_base.h — layer 1 of the shim, the bottom: raw system calls, clocks, code reads, naps,
 * signal-mask changes, warnings (base.c) and the real C library behind the interposers
 * (libc.c). Uses nothing of the shim's; every other file may use it. The layers, bottom to
 * top (each file includes only its own layer's header and those below; shim/README.md):
 *
 *   1 osp_base.h     base.c libc.c stamp.c
 *   2 osp_policy.h   policy.c
 *   3 osp_core.h     event_ring.c unwind.c disposition.c run.c slot.c registry.c images.c
 *   4 osp_handler.h  handler.c
 *   5 osp_boot.h     descendants.c control.c mask.c switches.c timeouts.c env.c shm.c
 *                    spawn.c exit.c start.c fork.c boot.c
 *   6 (no header)    preload.c guard.c signals.c — the interposers, called by nobody here
 *
 * Nothing here is exported from the shared library (it is built with hidden visibility).
 */
#ifndef OSP_BASE_H
#define OSP_BASE_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "osp_cpu.h"

/* ---- system calls and clocks (inline) ---------------------------------------------------- */

/* A system call made directly, never through the C library's syscall(), which the shim
 * interposes (guard.c): inside the handler that would be a symbol lookup in a signal handler,
 * and every call a detour. Returns the result, or -1 with errno set. Async-signal-safe. */
static inline long osp__sys(long nr, long a, long b, long c, long d, long e)
{
    long ret = osp__cpu_syscall(nr, a, b, c, d, e);
    if (ret < 0 && ret > -4096) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* What a seccomp filter the process booted under kills, each a feature that goes without it
 * (seccomp.c, osp__seccomp_check): set by boot before the handler is installed and before any
 * thread of ours reads it, never changed after; a forked child keeps its parent's (its filter
 * is the same). 0 without a filter. */
#define OSP__FORBIDS_VM_READ   1u  /* process_vm_readv: no stack copies, no code reads */
#define OSP__FORBIDS_KILL      2u  /* kill: the collector is not woken, nor checked at exit */
#define OSP__FORBIDS_PERF      4u  /* perf_event_open: waits timed by the program's calls */
#define OSP__FORBIDS_SOCKETS   8u  /* socket and its calls: no greeting of a collector */
#define OSP__FORBIDS_TIMER_IDS 16u /* prctl(PR_TIMER_CREATE_RESTORE_IDS): the kernel's ids */
#define OSP__FORBIDS_PIDFD     32u /* pidfd_open, pidfd_send_signal: the exit's collector by pid */
extern unsigned osp__forbidden __attribute__((visibility("hidden")));

/* The pidfd calls (Linux 5.1, 5.3): the same numbers on every architecture. */
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* The prctl that lets a process choose its next timer's id (Linux 6.16; registry.c). */
#define OSP__PR_TIMER_CREATE_RESTORE_IDS 77

/* Set once the process may no longer read the CPU's counter (prctl PR_SET_TSC, stamp.c): the
 * C library's clock_gettime reads it in the vDSO where the kernel's clocksource is the TSC, and
 * the read would fault, so ours are made as system calls from then on. */
extern _Atomic int osp__clock_by_call __attribute__((visibility("hidden")));

/* clock_gettime, by the system call once the counter may fault. Async-signal-safe:
 * clock_gettime is on POSIX's list (XSH 2.4.3). */
static inline int osp__clock_read(clockid_t clock, struct timespec *ts)
{
    if (__builtin_expect(atomic_load_explicit(&osp__clock_by_call, memory_order_relaxed), 0))
        return (int)osp__sys(SYS_clock_gettime, clock, (long)ts, 0, 0, 0);
    return clock_gettime(clock, ts);
}

/* A clock's reading in ns (0 when it cannot be read). Async-signal-safe. */
static inline uint64_t osp__clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (osp__clock_read(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in ns. Async-signal-safe. */
static inline uint64_t osp__mono_ns(void)
{
    return osp__clock_ns(CLOCK_MONOTONIC);
}

/* ---- stamp.c ----------------------------------------------------------------------------- */

/* The scale from the CPU's counter to nanoseconds (stamp.c): a stamp is (ticks * mult) >> 32,
 * plus offset (modulo 2^64: CLOCK_MONOTONIC's origin). Set once, then ready. Hidden in the
 * archive too: one load each, not its address first. */
struct osp__stamp_scale {
    _Atomic int ready;
    uint64_t mult, offset;
};
extern struct osp__stamp_scale osp__stamp_scale __attribute__((visibility("hidden")));
/* Why a call of the program's may not be timed the quick way (osp_core.h,
 * osp__timed_call_quick), a bit each, kept beside the flag each stands for by the code that
 * sets it: calls not timed by the shim (osp__calls_timed_flag clear), a handler of SIGPROF's in
 * the program (osp__sigprof_handles_flag), the kernel's records mapped (osp__switches_on), the
 * stamps' scale not known (osp__stamp_scale.ready clear). 0: the quick way, for one load. */
enum {
    OSP__GATE_UNTIMED = 1u,
    OSP__GATE_HANDLES = 2u,
    OSP__GATE_SWITCHES = 4u,
    OSP__GATE_UNSCALED = 8u,
};
extern _Atomic uint32_t osp__timed_gate __attribute__((visibility("hidden")));
/* Set (on) or clear one of those bits. Release: what the flag guards is seen with it.
 * Async-signal-safe. */
static inline void osp__timed_gate_set(uint32_t bit, int on)
{
    if (on)
        atomic_fetch_or_explicit(&osp__timed_gate, bit, memory_order_release);
    else
        atomic_fetch_and_explicit(&osp__timed_gate, ~bit, memory_order_release);
}
/* A step of measuring the scale (nothing once it is known, or known to be out of reach).
 * Async-signal-safe. */
void osp__stamp_calibrate(void);
/* Stamps are CLOCK_MONOTONIC from now on: a thread is about to make its counter fault
 * (prctl PR_SET_TSC, PR_TSC_SIGSEGV). Async-signal-safe. */
void osp__stamp_off(void);
/* The counter may fault from now on (prctl PR_SET_TSC, PR_TSC_SIGSEGV): stamps and every clock
 * read of ours without it. Async-signal-safe. */
void osp__stamp_no_counter(void);
/* CLOCK_MONOTONIC, after a step of measuring the scale: a stamp while the scale is unknown.
 * errno is kept. Async-signal-safe. */
uint64_t osp__stamp_unscaled(void);
/* ns * 2^32 / ticks, or 0 when that is no counter's rate (below 1 MHz or above 100 GHz). */
uint64_t osp__stamp_mult_of(uint64_t ns, uint64_t ticks);

/* A stamp from the counter, the scale known (osp__stamp_scale.ready seen). */
static inline uint64_t osp__stamp_scaled(void)
{
    unsigned __int128 ns = (unsigned __int128)osp__cpu_ticks() * osp__stamp_scale.mult;
    return (uint64_t)(ns >> 32) + osp__stamp_scale.offset;
}

/* A stamp: nanoseconds at CLOCK_MONOTONIC's rate from the CPU's counter (a handful of
 * instructions), CLOCK_MONOTONIC itself until the scale is known or where the counter cannot
 * be used. For lengths only: the difference of two stamps. Async-signal-safe. */
static inline uint64_t osp__stamp_ns(void)
{
    if (!atomic_load_explicit(&osp__stamp_scale.ready, memory_order_acquire))
        return osp__stamp_unscaled();
    return osp__stamp_scaled();
}

/* ---- base.c ------------------------------------------------------------------------------ */

/* Read n code bytes at addr without faulting (process_vm_readv). Returns 0 or -1.
 * Async-signal-safe. */
int osp__read_code(uint64_t addr, void *out, size_t n);
/* Copy the memory from addr on into out[0..n) without faulting, page by page (addr and n
 * multiples of 4096, n at most 64 KiB): the bytes copied, up to the first page that cannot be
 * read. One process_vm_readv. Async-signal-safe. */
size_t osp__read_pages(uint64_t addr, void *out, size_t n);
/* process_vm_readv of our own memory, n iovecs each side: the bytes read (they stop at the
 * first remote iovec that cannot be read), or -1. Async-signal-safe. */
ssize_t osp__read_iov(const struct iovec *local, const struct iovec *remote, unsigned long n);
/* Remember the process's id for osp__read_code (at boot, and in a forked child): one system
 * call less per sample; and whether code the CPU runs is readable as plain memory. */
void osp__read_code_init(void);
/* Read n code bytes at addr, for an interrupted pc: bytes on pc's own page are read directly
 * where executable means readable (x86_64 without protection keys in use): the thread was
 * running there, so the page is mapped. Anything else, or elsewhere: osp__read_code (a
 * process_vm_readv costs 3-25 us on a virtual machine; most samples need two).
 * Async-signal-safe. */
int osp__read_pc_code(uint64_t pc, uint64_t addr, void *out, size_t n);
/* Sleep `us` microseconds (< 1 s) with the raw system call: never the interposed nanosleep.
 * Async-signal-safe. */
void osp__nap_us(long us);
/* Signal `sig`'s action back to SIG_DFL with the raw call (no interposer, no restorer needed).
 * Async-signal-safe; safe in a vfork child. */
void osp__signal_default_raw(int sig);
/* Change the calling thread's signal mask with the raw syscall: for the shim's own, brief
 * mask changes, which the program's interposed pthread_sigmask must not see. Returns 0 or
 * -errno. Async-signal-safe. */
int osp__sigmask_raw(int how, const sigset_t *set, sigset_t *old);
/* The same for SIGPROF alone (SIG_BLOCK or SIG_UNBLOCK); old may be NULL. */
int osp__sigprof_mask_raw(int how, sigset_t *old);
/* Remember what fd 2 is now (at boot): warnings go there only while it stays the same. */
void osp__warn_remember_stderr(void);
/* One line on stderr, prefixed "osprey: " (write(2), no stdio buffering). */
void osp__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Open `path`, in a directory other users may write (the profile's), read-only without
 * following a link or blocking (O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC, raw system calls), and keep
 * it only when it is a regular file owned by us or by root: the shim's copy of common/'s
 * ospc_open_shared, which it may not link. Returns the descriptor, or -ELOOP (a symbolic link),
 * -EMEDIUMTYPE (not a regular file), -EPERM (another user's) or another negative errno. */
int osp__open_shared(const char *path);
/* A small text file (a /proc file) read whole into text (at most size - 1 bytes), NUL-ended,
 * with openat, read and close only; async-signal-safe. Returns its length, or -1. */
long osp__read_text(const char *path, char *text, size_t size);
/* The kernel's directory entry, as getdents64 returns it (no libc wrapper before glibc 2.30,
 * and opendir would allocate on the program's heap). */
struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};
/* The phrase for osp__open_shared's result, after the path ("is not a regular file"). */
const char *osp__shared_strerror(int rc);

/* ---- libc.c ------------------------------------------------------------------------------ */

/* Look up every interposed name once (the constructor, before main). */
void osp__libc_resolve_all(void);
/* The next definition of `name` after ours (the C library's), looked up once into *cache;
 * NULL with errno ENOSYS when there is none. Once found, a load: every interposer calls it. */
void *osp__next_symbol_lookup(_Atomic(void *) *cache, const char *name);
static inline void *osp__next_symbol(_Atomic(void *) *cache, const char *name)
{
    /* Relaxed: every thread that resolves it stores the same value. */
    void *sym = atomic_load_explicit(cache, memory_order_relaxed);
    return sym != NULL ? sym : osp__next_symbol_lookup(cache, name);
}
/* The C library's pthread_mutex_lock, for the shim's own locks: the shim interposes it (guard.c,
 * the waits it times where the kernel's records are refused). */
int osp__mutex_lock(pthread_mutex_t *m);
/* The C library's sigaction (the shim interposes it). NULL only if the loader cannot find it. */
typedef int (*osp__sigaction_fn)(int, const struct sigaction *, struct sigaction *);
osp__sigaction_fn osp__libc_sigaction(void);

#endif /* OSP_BASE_H */
