/* guard.c — keeps a SIGPROF of ours from cutting a sleep short.
 *
 * Owns the interposed blocking calls that signal(7) says are never restarted after a signal
 * handler (nanosleep, clock_nanosleep, usleep, sleep, pause, poll, ppoll, select, pselect,
 * epoll_wait, epoll_pwait, and the others listed in shim/README.md). A thread's sampling
 * timer is armed while it runs and may fire after it entered such a sleep, which would then
 * return early. So while a registered thread is inside one of these calls, its slot says
 * GUARDED and SIGPROF is blocked on that thread: a signal of ours that fires meanwhile stays
 * pending and is handled when the call returns (not as a sample: the credit waits for the
 * thread's CPU-time timer).
 *
 * The guard stands aside when the program itself has a SIGPROF handler (its own signals must
 * interrupt as they always did), for unregistered threads (we never signal them), for calls
 * that cannot block (a zero timeout: made again instead if a signal of ours cut one short),
 * and when SIGPROF is already blocked. Its cost is two
 * sigprocmask calls around a call that blocks anyway. A call it stands aside from costs a few
 * instructions: not profiled, or a read or write while no descriptor has a socket timeout, a
 * wrapper is a test and a jump to the C library's function, looked up at its first call
 * (bench/guard/: 3 instructions more than a plain call, 4 preloaded). Where the shim times waits
 * itself, the futex-based waits of the pthread API and the reads and writes of a pipe the
 * program made are not guarded but timed by their clock reads (OSP__TIMED_PART, below).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"

/* A mask argument (ppoll, pselect, epoll_pwait) replaces the thread's mask for the call:
 * guard it too. Returns the mask to pass. */
static const sigset_t *guard_mask(int guarded, const sigset_t *mask, sigset_t *copy)
{
    if (!guarded || mask == NULL)
        return mask;
    *copy = *mask;
    sigaddset(copy, SIGPROF);
    return copy;
}

/* The C library's function behind wrapper `name`, in osp__real_<name>: at first the resolver,
 * which looks it up (libc.c: the constructor's table, else dlsym), keeps it there and calls
 * it, as a lazy PLT entry does; afterwards the function itself. So a call made while the
 * process is not profiled is one relaxed load of osp__active_flag and a jump through that
 * pointer: no lookup, no bookkeeping (bench/guard/). osp__real_lookup_<name> gives the
 * function itself (the guard names it as the wait's leaf), NULL (errno ENOSYS) when there is
 * none. The wrappers that always take the long way (a signal set to change, a variadic call)
 * start from NULL instead of a resolver. */
#define OSP__REAL_LOOKUP(name, first)                                                              \
    static _Atomic(osp__fn_##name) osp__real_##name = first;                                       \
    OSP__REAL_LOOKUP_FN(name, first)
/* Starting from NULL (zero: an atomic function pointer takes no (void *)0 as a constant). */
#define OSP__REAL_LOOKUP_NULL(name)                                                                \
    static _Atomic(osp__fn_##name) osp__real_##name;                                               \
    OSP__REAL_LOOKUP_FN(name, NULL)
#define OSP__REAL_LOOKUP_FN(name, first)                                                           \
    static osp__fn_##name osp__real_lookup_##name(void)                                            \
    {                                                                                              \
        osp__fn_##name fn = atomic_load_explicit(&osp__real_##name, memory_order_relaxed);         \
        if (fn != first)                                                                           \
            return fn;                                                                             \
        static _Atomic(void *) cache;                                                              \
        void *sym = osp__next_symbol(&cache, #name);                                               \
        if (sym == NULL)                                                                           \
            return NULL;                                                                           \
        memcpy(&fn, &sym, sizeof(fn));                                                             \
        /* Relaxed: every thread that resolves it stores the same value. */                        \
        atomic_store_explicit(&osp__real_##name, fn, memory_order_relaxed);                        \
        return fn;                                                                                 \
    }
#define OSP__REAL(ret, name, params, args, fail)                                                   \
    typedef ret(*osp__fn_##name) params;                                                           \
    static ret osp__resolve_##name params;                                                         \
    OSP__REAL_LOOKUP(name, osp__resolve_##name)                                                    \
    static ret osp__resolve_##name params                                                          \
    {                                                                                              \
        osp__fn_##name fn = osp__real_lookup_##name();                                             \
        if (fn == NULL)                                                                            \
            return fail;                                                                           \
        return fn args;                                                                            \
    }

/* Call the C library's function (resolving it at the first call). */
#define OSP__CALL_REAL(name, args)                                                                 \
    atomic_load_explicit(&osp__real_##name, memory_order_relaxed) args

/* Not profiled (never started, or stopped for good): the wrapper only passes the call on. The
 * set of descriptors with a timeout is not kept then either: a start asks of every
 * descriptor (timeouts.c, osp__fds_timed_scan), and nothing reads the set before. */
#define OSP__OFF() (!atomic_load_explicit(&osp__active_flag, memory_order_relaxed))

/* osp__result = `call`; one that could not block (`can_block` 0: not guarded) and that a
 * signal of ours cut short (EINTR, which no plain run sees; the handler counts ours in
 * osp__sigprof_ours_seen) is made again. errno is the program's again when the call left it. */
#define OSP__CALL_UNCUT(can_block, call)                                                           \
    do {                                                                                           \
        unsigned osp__seen = osp__sigprof_ours_seen;                                               \
        int osp__saved = errno;                                                                    \
        if (!(can_block))                                                                          \
            errno = 0;                                                                             \
        osp__result = call;                                                                        \
        while (!(can_block) && errno == EINTR && osp__sigprof_ours_seen != osp__seen) {            \
            osp__seen = osp__sigprof_ours_seen;                                                    \
            errno = 0;                                                                             \
            osp__result = call;                                                                    \
        }                                                                                          \
        if (!(can_block) && errno == 0)                                                            \
            errno = osp__saved;                                                                    \
    } while (0)

/* Define a wrapper: passed on when `pass` holds; else guarded when `blocks` holds, then `after`
 * run (osp__result in scope; errno is the call's again afterwards). The guarded part is a
 * function of its own, which the wrapper jumps to (a tail call): the wrapper's own code stays a
 * few instructions with no frame to set up, and the guarded part is still the only frame of
 * ours between the wait and its caller (what slot.c leaves out of a guarded wait's stack). */
#define OSP__WRAPPER(ret, name, params, args, pass, blocks, fail, after)                           \
    OSP__WRAPPER_BEGIN(osp__guard_begin, ret, name, params, args, pass, blocks, fail, after)
#define OSP__WRAPPER_BEGIN(begin, ret, name, params, args, pass, blocks, fail, after)              \
    OSP__GUARDED_PART_BEGIN(begin, ret, name, params, args, blocks, fail, after)                   \
    __attribute__((visibility("default"))) ret name params                                         \
    {                                                                                              \
        if (pass)                                                                                  \
            return OSP__CALL_REAL(name, args);                                                     \
        return osp__guarded_##name args;                                                           \
    }
/* The C library's function and the guarded part alone: a wrapper written out by hand jumps to
 * osp__guarded_<name> (the futex-based waits below). */
#define OSP__GUARDED_PART(ret, name, params, args, blocks, fail, after)                            \
    OSP__GUARDED_PART_BEGIN(osp__guard_begin, ret, name, params, args, blocks, fail, after)
#define OSP__GUARDED_PART_BEGIN(begin, ret, name, params, args, blocks, fail, after)               \
    OSP__REAL(ret, name, params, args, fail)                                                       \
    static __attribute__((noinline)) ret osp__guarded_##name params                                \
    {                                                                                              \
        osp__fn_##name real = osp__real_lookup_##name();                                           \
        if (real == NULL)                                                                          \
            return fail;                                                                           \
        sigset_t old;                                                                              \
        int can_block = (blocks);                                                                  \
        int guarded = can_block ? begin(&old, (const void *)real) : 0;                             \
        ret osp__result;                                                                           \
        OSP__CALL_UNCUT(can_block, real args);                                                     \
        osp__guard_end(guarded, &old);                                                             \
        int osp__errno = errno;                                                                    \
        after;                                                                                     \
        errno = osp__errno;                                                                        \
        return osp__result;                                                                        \
    }
/* Off, passed on (`after` too: it keeps the set of timeouts, kept only while profiled). */
#define OSP__GUARDED_THEN(ret, name, params, args, blocks, fail, after)                            \
    OSP__WRAPPER(ret, name, params, args, OSP__OFF(), blocks, fail, after)
/* A call that cannot block (a zero timeout) is not guarded, but made again when a signal of
 * ours cut it short (osp__sigprof_ours_seen moved): a poll or nanosleep with a zero timeout
 * returned EINTR about 100 times a second at 10 kHz, where a plain run never does. */
#define OSP__GUARDED(ret, name, params, args, blocks, fail)                                        \
    OSP__WRAPPER(ret, name, params, args, OSP__OFF(), blocks, fail, (void)0)
/* Guarded on a descriptor known to have a timeout; timed by its clock reads on a pipe of ours
 * (osp__fd_piped: no mask, a pipe's call resumes after our handler). The bound is tested first,
 * before whether the process is profiled: while no descriptor has a timeout (and always when
 * off: the set is kept only while profiled) the wrapper is a compare and the jump. */
#define OSP__GUARDED_FD(ret, name, params, args, fd, fail)                                         \
    OSP__GUARDED_PART(ret, name, params, args, 1, fail, (void)0)                                   \
    OSP__TIMED_PART(ret, name, params, args, 0, 1, fail)                                           \
    __attribute__((visibility("default"))) ret name params                                         \
    {                                                                                              \
        if (osp__fd_surely_untimed(fd) || OSP__OFF())                                              \
            return OSP__CALL_REAL(name, args);                                                     \
        if (osp__fd_piped(fd)) /* in the set of timeouts too: osp__fd_piped_set */                 \
            return osp__timed_##name args;                                                         \
        if (!osp__fd_timed(fd))                                                                    \
            return OSP__CALL_REAL(name, args);                                                     \
        return osp__guarded_##name args;                                                           \
    }

/* A call timed by its clock reads alone (slot.c, "A call timed by its clock"), SIGPROF left
 * deliverable: where the shim times waits, a pipe's read or write (fd_call: written only if the
 * thread gave up its CPU) and the futex-based waits below (hold: the sampling timer held while
 * it blocks). The part of its own the wrapper jumps to, as a guarded part: the only frame of
 * ours between the wait and its caller. */
#define OSP__TIMED_PART(ret, name, params, args, hold, fd_call, fail)                              \
    static __attribute__((noinline)) ret osp__timed_slow_##name params                             \
    {                                                                                              \
        osp__fn_##name real = osp__real_lookup_##name();                                           \
        if (real == NULL)                                                                          \
            return fail;                                                                           \
        struct osp__slot *s = osp__tls_slot;                                                       \
        uint64_t t0 =                                                                              \
            osp__timed_call_applies(s)                                                             \
                ? osp__timed_call_begin(s, hold, (uint64_t)(uintptr_t)__builtin_frame_address(0))  \
                : 0;                                                                               \
        ret osp__result = real args;                                                               \
        if (t0 != 0)                                                                               \
            osp__timed_call_end(s, t0, (const void *)real, osp__call_site(), fd_call);             \
        return osp__result;                                                                        \
    }                                                                                              \
    static __attribute__((noinline)) ret osp__timed_##name params                                  \
    {                                                                                              \
        struct osp__slot *s = osp__tls_slot;                                                       \
        if ((hold) || s == NULL || !osp__timed_call_quick(s))                                      \
            return osp__timed_slow_##name args;                                                    \
        uint64_t t0 = osp__timed_call_enter(s, (uint64_t)(uintptr_t)__builtin_frame_address(0),    \
                                            osp__stamp_scaled());                                  \
        ret osp__result = OSP__CALL_REAL(name, args);                                              \
        /* Resolved by now (the resolver's first call): the leaf is the C library's. */            \
        osp__timed_call_end(                                                                       \
            s, t0, (const void *)atomic_load_explicit(&osp__real_##name, memory_order_relaxed),    \
            osp__call_site(), fd_call);                                                            \
        return osp__result;                                                                        \
    }

/* The site of the call a timed part serves: its return address (into the program: the wrapper
 * jumped there) and its frame (the caller's depth), hashed; its top bits pick its set of the
 * thread's table (osp__call_site_set). A macro: the timed part's own. */
#define osp__call_site()                                                                           \
    (((uint64_t)(uintptr_t)__builtin_return_address(0) ^                                           \
      (uint64_t)(uintptr_t)__builtin_frame_address(0)) *                                           \
     UINT64_C(0x9e3779b97f4a7c15))

/* Does a call of this thread's get timed by its clock reads (OSP__TIMED_PART)? As the guard
 * applies (osp__guard_begin), less its mask: and only while the shim times waits. Every wrapper
 * that jumps here has just seen the process profiled (OSP__OFF); the program's SIGPROF and the
 * kernel's records are one load each while it has no handler and there are none. */
static inline int osp__timed_call_applies(const struct osp__slot *s)
{
    return s != NULL && atomic_load_explicit(&osp__calls_timed_flag, memory_order_relaxed) &&
           !(atomic_load_explicit(&osp__sigprof_handles_flag, memory_order_relaxed) &&
             osp__sigprof_guard_stands_aside()) &&
           !(atomic_load_explicit(&osp__switches_on, memory_order_relaxed) && osp__kernel_waits());
}

static int is_timeout_option(int name)
{
    return name == SO_RCVTIMEO || name == SO_SNDTIMEO
#ifdef SO_RCVTIMEO_NEW
           || name == SO_RCVTIMEO_NEW || name == SO_SNDTIMEO_NEW
#endif
#ifdef SO_RCVTIMEO_OLD
           || name == SO_RCVTIMEO_OLD || name == SO_SNDTIMEO_OLD
#endif
        ;
}

static int timeval_blocks(const struct timeval *t)
{
    return t == NULL || t->tv_sec != 0 || t->tv_usec != 0;
}

OSP__GUARDED(int, nanosleep, (const struct timespec *req, struct timespec *rem), (req, rem),
             osp__timespec_blocks(req), -1)
OSP__GUARDED(int, clock_nanosleep,
             (clockid_t clock, int flags, const struct timespec *req, struct timespec *rem),
             (clock, flags, req, rem), 1, ENOSYS)
OSP__GUARDED(int, usleep, (useconds_t usec), (usec), usec != 0, -1)
OSP__GUARDED(unsigned int, sleep, (unsigned int seconds), (seconds), seconds != 0, seconds)
OSP__GUARDED(int, pause, (void), (), 1, -1)
OSP__GUARDED(int, poll, (struct pollfd * fds, nfds_t n, int timeout), (fds, n, timeout),
             timeout != 0, -1)
OSP__GUARDED(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout),
             (n, r, w, e, timeout), timeval_blocks(timeout), -1)
OSP__GUARDED(int, epoll_wait, (int fd, struct epoll_event *events, int max, int timeout),
             (fd, events, max, timeout), timeout != 0, -1)

/* The forms with a signal set argument: `use` is the set the C library gets, computed once the
 * guard is up (copy is room for a changed one). */
#define OSP__GUARDED_SET(name, params, call_args, blocks, use_set)                                 \
    typedef int(*osp__fn_##name) params;                                                           \
    OSP__REAL_LOOKUP_NULL(name)                                                                    \
    __attribute__((visibility("default"))) int name params                                         \
    {                                                                                              \
        osp__fn_##name real = osp__real_lookup_##name();                                           \
        if (real == NULL)                                                                          \
            return -1;                                                                             \
        sigset_t old, copy;                                                                        \
        int can_block = (blocks);                                                                  \
        int guarded = can_block ? osp__guard_begin(&old, (const void *)real) : 0;                  \
        const sigset_t *use = (use_set);                                                           \
        (void)use;                                                                                 \
        int osp__result;                                                                           \
        OSP__CALL_UNCUT(can_block, real call_args);                                                \
        osp__guard_end(guarded, &old);                                                             \
        return osp__result;                                                                        \
    }

/* A mask that replaces the thread's for the call: SIGPROF stays blocked in it. */
#define OSP__GUARDED_MASK(name, params, call_args, blocks, mask_arg)                               \
    OSP__GUARDED_SET(name, params, call_args, blocks, guard_mask(guarded, mask_arg, &copy))

OSP__GUARDED_MASK(ppoll,
                  (struct pollfd * fds, nfds_t n, const struct timespec *timeout,
                   const sigset_t *mask),
                  (fds, n, timeout, use), osp__timespec_blocks(timeout), mask)
OSP__GUARDED_MASK(pselect,
                  (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                   const sigset_t *mask),
                  (n, r, w, e, timeout, use), osp__timespec_blocks(timeout), mask)
OSP__GUARDED_MASK(epoll_pwait,
                  (int fd, struct epoll_event *events, int max, int timeout, const sigset_t *mask),
                  (fd, events, max, timeout, use), timeout != 0, mask)

/* Fortified builds (-D_FORTIFY_SOURCE, Debian's default) call these instead. */
OSP__GUARDED(int, __poll_chk, (struct pollfd * fds, nfds_t n, int timeout, size_t fdslen),
             (fds, n, timeout, fdslen), timeout != 0, -1)
OSP__GUARDED_MASK(__ppoll_chk,
                  (struct pollfd * fds, nfds_t n, const struct timespec *timeout,
                   const sigset_t *mask, size_t fdslen),
                  (fds, n, timeout, use, fdslen), osp__timespec_blocks(timeout), mask)
OSP__GUARDED_MASK(epoll_pwait2,
                  (int fd, struct epoll_event *events, int max, const struct timespec *timeout,
                   const sigset_t *mask),
                  (fd, events, max, timeout, use), osp__timespec_blocks(timeout), mask)

/* Waiting for signals: the mask given replaces the thread's, so SIGPROF goes into it. */
OSP__GUARDED_MASK(sigsuspend, (const sigset_t *mask), (use), 1, mask)
/* Waiting for a set of signals: SIGPROF, blocked by the guard, also leaves the set (ours would
 * otherwise be taken for the program's; osp__sigwait_set). sigwait restarts on EINTR itself
 * (signals.c). */
#define OSP__GUARDED_WAIT(name, params, call_args, blocks, set_arg)                                \
    OSP__GUARDED_SET(name, params, call_args, blocks, osp__sigwait_set(set_arg, &copy))

OSP__GUARDED_WAIT(sigtimedwait, (const sigset_t *set, siginfo_t *info, const struct timespec *t),
                  (use, info, t), osp__timespec_blocks(t), set)
OSP__GUARDED_WAIT(sigwaitinfo, (const sigset_t *set, siginfo_t *info), (use, info), 1, set)

/* C11 and POSIX sleeps and semaphores built on calls the kernel never restarts. */
OSP__GUARDED(int, thrd_sleep, (const struct timespec *req, struct timespec *rem), (req, rem),
             osp__timespec_blocks(req), -2)
OSP__GUARDED(int, sem_wait, (sem_t * sem), (sem), 1, -1)
OSP__GUARDED(int, sem_timedwait, (sem_t * sem, const struct timespec *t), (sem, t), 1, -1)
OSP__GUARDED(int, sem_clockwait, (sem_t * sem, clockid_t clock, const struct timespec *t),
             (sem, clock, t), 1, -1)

/* System V IPC. */
OSP__GUARDED(int, semop, (int id, struct sembuf *ops, size_t n), (id, ops, n), 1, -1)
OSP__GUARDED(int, semtimedop, (int id, struct sembuf *ops, size_t n, const struct timespec *t),
             (id, ops, n, t), 1, -1)
OSP__GUARDED(ssize_t, msgrcv, (int id, void *msg, size_t size, long type, int flags),
             (id, msg, size, type, flags), !(flags & IPC_NOWAIT), -1)
OSP__GUARDED(int, msgsnd, (int id, const void *msg, size_t size, int flags), (id, msg, size, flags),
             !(flags & IPC_NOWAIT), -1)

/* Sockets (timeouts.c): a blocking call on one is restarted after a handler unless the socket
 * has a timeout (SO_RCVTIMEO, SO_SNDTIMEO), whatever the call, read and write included; those
 * are guarded on a descriptor known to have one. accept and connect, rare and long, always. */
static int sock_blocks(int fd, int flags)
{
    return !(flags & MSG_DONTWAIT) && osp__fd_timed(fd);
}

/* A connection accepted from a listener with a timeout may have inherited it (TCP does). */
static void accepted(int listener, int fd)
{
    if (fd < 0)
        return;
    if (osp__fd_timed(listener))
        osp__fd_timed_ask(fd);
    else
        osp__fd_timed_set(fd, 0);
}

/* Descriptors received (SCM_RIGHTS) may be sockets with a timeout. */
static void received(const struct msghdr *msg)
{
    if (msg == NULL || msg->msg_control == NULL || msg->msg_controllen < sizeof(struct cmsghdr))
        return;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL;
         c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t k = 0; k < n; k++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + k * sizeof fd, sizeof fd);
            osp__fd_timed_ask(fd);
        }
    }
}

static void received_many(const struct mmsghdr *msgs, int n)
{
    for (int k = 0; k < n; k++)
        received(&msgs[k].msg_hdr);
}

OSP__GUARDED_THEN(int, accept, (int fd, struct sockaddr *addr, socklen_t *len), (fd, addr, len), 1,
                  -1, accepted(fd, osp__result))
OSP__GUARDED_THEN(int, accept4, (int fd, struct sockaddr *addr, socklen_t *len, int flags),
                  (fd, addr, len, flags), 1, -1, accepted(fd, osp__result))
OSP__GUARDED(int, connect, (int fd, const struct sockaddr *addr, socklen_t len), (fd, addr, len), 1,
             -1)
OSP__GUARDED(ssize_t, recv, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags),
             sock_blocks(fd, flags), -1)
OSP__GUARDED(ssize_t, __recv_chk, (int fd, void *buf, size_t n, size_t buflen, int flags),
             (fd, buf, n, buflen, flags), sock_blocks(fd, flags), -1)
OSP__GUARDED(ssize_t, recvfrom,
             (int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *len),
             (fd, buf, n, flags, addr, len), sock_blocks(fd, flags), -1)
OSP__GUARDED(ssize_t, __recvfrom_chk,
             (int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
              socklen_t *len),
             (fd, buf, n, buflen, flags, addr, len), sock_blocks(fd, flags), -1)
OSP__GUARDED_THEN(ssize_t, recvmsg, (int fd, struct msghdr *msg, int flags), (fd, msg, flags),
                  sock_blocks(fd, flags), -1, if (osp__result >= 0) received(msg))
OSP__GUARDED_THEN(int, recvmmsg,
                  (int fd, struct mmsghdr *msgs, unsigned int n, int flags, struct timespec *t),
                  (fd, msgs, n, flags, t),
                  !(flags & MSG_DONTWAIT) && (t != NULL || osp__fd_timed(fd)), -1,
                  received_many(msgs, osp__result))
OSP__GUARDED(ssize_t, send, (int fd, const void *buf, size_t n, int flags), (fd, buf, n, flags),
             sock_blocks(fd, flags), -1)
OSP__GUARDED(ssize_t, sendto,
             (int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr,
              socklen_t len),
             (fd, buf, n, flags, addr, len), sock_blocks(fd, flags), -1)
OSP__GUARDED(ssize_t, sendmsg, (int fd, const struct msghdr *msg, int flags), (fd, msg, flags),
             sock_blocks(fd, flags), -1)
OSP__GUARDED_FD(ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n), fd, -1)
OSP__GUARDED_FD(ssize_t, __read_chk, (int fd, void *buf, size_t n, size_t buflen),
                (fd, buf, n, buflen), fd, -1)
OSP__GUARDED_FD(ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n), fd, -1)
OSP__GUARDED_FD(ssize_t, readv, (int fd, const struct iovec *v, int n), (fd, v, n), fd, -1)
OSP__GUARDED_FD(ssize_t, writev, (int fd, const struct iovec *v, int n), (fd, v, n), fd, -1)

/* Where timeouts come from and go: the wrappers below only keep timeouts.c's set. */
OSP__GUARDED_THEN(int, setsockopt, (int fd, int level, int name, const void *value, socklen_t len),
                  (fd, level, name, value, len), 0, -1,
                  if (osp__result == 0 && level == SOL_SOCKET && is_timeout_option(name))
                      osp__fd_timed_ask(fd))
OSP__GUARDED_THEN(int, socket, (int domain, int type, int protocol), (domain, type, protocol), 0,
                  -1, osp__fd_timed_set(osp__result, 0))
OSP__GUARDED_THEN(
    int, socketpair, (int domain, int type, int protocol, int sv[2]), (domain, type, protocol, sv),
    0, -1, if (osp__result == 0) {
        osp__fd_timed_set(sv[0], 0);
        osp__fd_timed_set(sv[1], 0);
    })
OSP__GUARDED_THEN(int, dup, (int fd), (fd), 0, -1, osp__fd_timed_copy(fd, osp__result))
OSP__GUARDED_THEN(int, dup2, (int fd, int to), (fd, to), 0, -1,
                  if (osp__result >= 0 && fd != to) osp__fd_timed_copy(fd, to))
OSP__GUARDED_THEN(int, dup3, (int fd, int to, int flags), (fd, to, flags), 0, -1,
                  if (osp__result >= 0) osp__fd_timed_copy(fd, to))

/* Where the shim times waits itself (the kernel's records refused), a pipe made by pipe or
 * pipe2 (blocking) joins the set of timeouts.c as a pipe of ours: a read or write on it is timed
 * by its clock reads (OSP__TIMED_PART), at its caller's stack, one wait each (a reader woken every
 * 10 ms lost 1-6% of its waits under load when only the handler's captures timed them: a wait
 * begins at the first signal that lands in it, and one after a running sample often gets none). */
static void piped(const int fds[2], int flags)
{
    if ((flags & O_NONBLOCK) || !atomic_load_explicit(&osp__calls_timed_flag, memory_order_relaxed))
        return;
    osp__fd_piped_set(fds[0]);
    osp__fd_piped_set(fds[1]);
}
OSP__GUARDED_THEN(int, pipe, (int fds[2]), (fds), 0, -1, if (osp__result == 0) piped(fds, 0))
OSP__GUARDED_THEN(int, pipe2, (int fds[2], int flags), (fds, flags), 0, -1,
                  if (osp__result == 0) piped(fds, flags))

/* close forgets the descriptor before it is free to be handed out again. */
OSP__REAL(int, close, (int fd), (fd), -1)
__attribute__((visibility("default"))) int close(int fd)
{
    if (!OSP__OFF())
        osp__fd_timed_set(fd, 0);
    return OSP__CALL_REAL(close, (fd));
}

OSP__REAL(int, close_range, (unsigned int first, unsigned int last, int flags),
          (first, last, flags), -1)
__attribute__((visibility("default"))) int close_range(unsigned int first, unsigned int last,
                                                       int flags)
{
    int r = OSP__CALL_REAL(close_range, (first, last, flags));
    if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC) && !OSP__OFF()) {
        int saved = errno;
        osp__fds_timed_forget(first, last);
        errno = saved;
    }
    return r;
}

/* fcntl's third argument is an int or a pointer: passed on as a word, as the C library reads
 * it. F_DUPFD copies the descriptor, its timeouts with it. */
typedef int (*osp__fn_fcntl)(int, int, ...);
typedef int (*osp__fn_fcntl64)(int, int, ...);
OSP__REAL_LOOKUP_NULL(fcntl)
OSP__REAL_LOOKUP_NULL(fcntl64)

static int fcntl_as(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
    if (real == NULL)
        return -1;
    int r = real(fd, cmd, arg);
    if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && !OSP__OFF()) {
        int saved = errno;
        osp__fd_timed_copy(fd, r);
        errno = saved;
    }
    return r;
}

/* By their symbols: with _FILE_OFFSET_BITS=64 the header's fcntl is fcntl64. */
int osp__fcntl(int fd, int cmd, ...) __asm__("fcntl");
int osp__fcntl64(int fd, int cmd, ...) __asm__("fcntl64");

__attribute__((visibility("default"))) int osp__fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_as(osp__real_lookup_fcntl(), fd, cmd, arg);
}

__attribute__((visibility("default"))) int osp__fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_as(osp__real_lookup_fcntl64(), fd, cmd, arg);
}

/* A system call the kernel never restarts after a handler, made through syscall(2). The older
 * calls (poll, select, epoll_wait, pause) exist on x86_64 only; aarch64 has just their
 * successors (ppoll, pselect6, epoll_pwait, rt_sigsuspend). */
static int syscall_never_restarted(long nr, const long *a)
{
    switch (nr) {
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
#ifdef SYS_poll
    case SYS_poll:
#endif
    case SYS_ppoll:
#ifdef SYS_select
    case SYS_select:
#endif
    case SYS_pselect6:
#ifdef SYS_epoll_wait
    case SYS_epoll_wait:
#endif
    case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
#ifdef SYS_pause
    case SYS_pause:
#endif
    case SYS_rt_sigsuspend:
    case SYS_rt_sigtimedwait:
    case SYS_semop:
    case SYS_semtimedop:
    case SYS_msgrcv:
    case SYS_msgsnd:
    case SYS_accept:
    case SYS_accept4:
    case SYS_connect:
    case SYS_io_getevents:
        return 1;
    case SYS_recvmmsg:
        return a[4] != 0 || osp__fd_timed((int)a[0]);
    case SYS_read:
    case SYS_write:
    case SYS_readv:
    case SYS_writev:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_sendto:
    case SYS_sendmsg:
        return osp__fd_timed((int)a[0]);
    case SYS_futex:
        return a[3] != 0; /* a wait with a timeout */
    default:
        return 0;
    }
}

typedef long (*osp__fn_syscall)(long, ...);
OSP__REAL_LOOKUP_NULL(syscall)

/* Six arguments are read whatever the caller passed, as the C library's syscall() does: the
 * words beyond them are the caller's, hence no AddressSanitizer here. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
__attribute__((no_sanitize("address")))
#endif
#endif
__attribute__((visibility("default"))) long
syscall(long nr, ...)
{
    osp__fn_syscall real = osp__real_lookup_syscall();
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    if (nr == SYS_execve || nr == SYS_execveat) {
        int at = nr == SYS_execve ? 2 : 3; /* which argument is envp */
        OSP__ENV(env, (char *const *)a[at]);
        a[at] = (long)env;
        osp__ring_unlink(); /* OSPREY_RING: as preload.c's exec family */
        osp__exec_begin();
        osp__forked_exec();
        long r = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
        int saved = errno;
        osp__exec_failed();
        errno = saved;
        return r;
    }
#ifdef SYS_seccomp
    if (nr == SYS_seccomp && (a[0] == SECCOMP_SET_MODE_STRICT || a[0] == SECCOMP_SET_MODE_FILTER))
        osp__forked_exec(), osp__sandbox_begin(); /* before it takes effect: control.c */
#endif
    if (nr == SYS_prctl && a[0] == PR_SET_SECCOMP)
        osp__forked_exec(), osp__sandbox_begin();
    if (nr == SYS_prctl && a[0] == PR_SET_TSC)
        osp__stamp_off(); /* as preload.c's prctl */
    /* clone and clone3 called directly make a process no fork handler of ours sees. One that
     * copies the address space (neither CLONE_VM nor CLONE_THREAD nor CLONE_VFORK; clone3's
     * flags are the first field of its struct clone_args) boots in the child as a forked child
     * does (fork.c); a thread or a vfork is the caller's business. */
    uint64_t flags = 0;
    int cloning = nr == SYS_clone;
    if (cloning)
        flags = (uint64_t)a[0];
#ifdef SYS_clone3
    if (nr == SYS_clone3 && a[0] != 0 && (size_t)a[1] >= sizeof flags) {
        memcpy(&flags, (const void *)a[0], sizeof flags);
        cloning = 1;
    }
#endif
    if (cloning && osp__is_active() &&
        !atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) &&
        !(flags & (CLONE_VM | CLONE_THREAD | CLONE_VFORK))) {
        int single = osp__threads_in_process() == 1;
        long r = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
        if (r == 0)
            osp__cloned_child(single);
        return r;
    }
    sigset_t old;
    int guarded = syscall_never_restarted(nr, a) ? osp__guard_begin(&old, (const void *)real) : 0;
    long r = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    osp__guard_end(guarded, &old);
    return r;
}

/* The futex-based waits of the pthread API: where the kernel's context-switch records are
 * refused (perf_event_paranoid 3, a container's seccomp profile), a wait in one of them was
 * seen only when a signal of ours happened to land in it, and timed from there to the thread's
 * next sample: late by up to a period at its start, two waits with a short wake between them
 * one wait at the first site. So, only then, each call is timed by its clock reads
 * (OSP__TIMED_PART): its wait is the call, from entry to return, at its caller's stack, taken
 * after the call for a wait that is written; the sampling timer is held while it blocks. With
 * the kernel's records (they time every block), or off, each is passed on for the load of
 * one flag, with no frame of ours. A mutex whose lock word (glibc's pthread_mutex_t, public in
 * its headers) says it is free goes straight to the C library's lock, as plain; a held one is
 * tried, and only a lock that would block is timed (bench/waits/mutex.sh: +3 instructions a
 * lock and unlock where calls are timed, +4 preloaded, as off; +9/+10 when the flags were
 * tested before the lock word, +20 when every lock was tried first). A mutex taken by another
 * thread between the look and the lock blocks unguarded: the handler still finds that wait, as it
 * finds any. */
#define OSP__CALLS_UNTIMED()                                                                       \
    (!atomic_load_explicit(&osp__calls_timed_flag, memory_order_relaxed) || OSP__OFF())
#define OSP__TIMED(ret, name, params, args, fail)                                                  \
    OSP__REAL(ret, name, params, args, fail)                                                       \
    OSP__TIMED_PART(ret, name, params, args, 1, 0, fail)                                           \
    __attribute__((visibility("default"))) ret name params                                         \
    {                                                                                              \
        if (OSP__CALLS_UNTIMED())                                                                  \
            return OSP__CALL_REAL(name, args);                                                     \
        return osp__timed_##name args;                                                             \
    }

OSP__REAL(int, pthread_mutex_lock, (pthread_mutex_t * m), (m), EINVAL)
OSP__TIMED_PART(int, pthread_mutex_lock, (pthread_mutex_t * m), (m), 1, 0, EINVAL)
OSP__REAL(int, pthread_mutex_trylock, (pthread_mutex_t * m), (m), EINVAL)
/* EBUSY only where lock would block (held by another thread; an error-checking mutex held by
 * this one gives EDEADLK from lock, after the guard); anything else is lock's answer: taken,
 * taken from a dead owner (EOWNERDEAD), or an error. */
static __attribute__((noinline)) int osp__tried_pthread_mutex_lock(pthread_mutex_t *m)
{
    int r = OSP__CALL_REAL(pthread_mutex_trylock, (m));
    if (r != EBUSY)
        return r;
    return osp__timed_pthread_mutex_lock(m);
}
/* The lock word first: a free mutex goes straight to the C library's lock whether calls are
 * timed or not, for the cost of any wrapper (one load and a test before the jump). */
__attribute__((visibility("default"))) int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (atomic_load_explicit((_Atomic int *)&m->__data.__lock, memory_order_relaxed) == 0 ||
        OSP__CALLS_UNTIMED())
        return OSP__CALL_REAL(pthread_mutex_lock, (m));
    return osp__tried_pthread_mutex_lock(m);
}
OSP__TIMED(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t *m), (c, m), EINVAL)
OSP__TIMED(int, pthread_cond_timedwait,
           (pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *t), (c, m, t), EINVAL)
OSP__TIMED(int, pthread_cond_clockwait,
           (pthread_cond_t * c, pthread_mutex_t *m, clockid_t clock, const struct timespec *t),
           (c, m, clock, t), EINVAL)
OSP__TIMED(int, pthread_join, (pthread_t t, void **ret), (t, ret), EINVAL)
OSP__TIMED(int, pthread_timedjoin_np, (pthread_t t, void **ret, const struct timespec *at),
           (t, ret, at), EINVAL)
OSP__TIMED(int, pthread_clockjoin_np,
           (pthread_t t, void **ret, clockid_t clock, const struct timespec *at),
           (t, ret, clock, at), EINVAL)
