/* guard.c — keeps a SIGPROF of ours from cutting a sleep short.
 *
 * Owns the interposed blocking calls that signal(7) says are never restarted after a signal
 * handler (nanosleep, clock_nanosleep, usleep, sleep, pause, poll, ppoll, select, pselect,
 * epoll_wait, epoll_pwait). The sampler never signals a thread it sees sitting in one of
 * them (sampler.c), but it cannot see the future: a thread it signals because it was running
 * may enter a sleep before the signal lands, and the sleep would return early with EINTR.
 * So while a registered thread is inside one of these calls, SIGPROF is blocked on that
 * thread: a signal of ours sent just before stays pending and is handled when the call
 * returns, as a sample of the code after it.
 *
 * The guard stands aside when the program itself has a SIGPROF handler (its own signals must
 * interrupt as they always did), for unregistered threads (we never signal them), for calls
 * that cannot block (a zero timeout), and when SIGPROF is already blocked. Its cost is two
 * sigprocmask calls around a call that blocks anyway.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "osp_shim.h"

/* Block SIGPROF on this thread if the guard applies; *old receives the previous mask.
 * Returns 1 when the caller must restore it. */
static int guard_begin(sigset_t *old)
{
    if (osp__tls_slot == NULL || !osp__is_active() || osp__sigprof_program_handles())
        return 0;
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    if (osp__sigmask_raw(SIG_BLOCK, &prof, old) != 0) /* raw: not a mask the program set */
        return 0;
    if (sigismember(old, SIGPROF)) {
        osp__sigmask_raw(SIG_SETMASK, old, NULL);
        return 0;
    }
    return 1;
}

static void guard_end(int guarded, const sigset_t *old)
{
    if (!guarded)
        return;
    int saved = errno;
    osp__sigmask_raw(SIG_SETMASK, old, NULL);
    errno = saved;
}

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

/* Define a wrapper: resolve the real function once, guard the call when `blocks` holds. */
#define OSP__GUARDED(ret, name, params, args, blocks, fail)                                        \
    __attribute__((visibility("default"))) ret name params                                         \
    {                                                                                              \
        static _Atomic(void *) real_sym;                                                           \
        void *sym = osp__next_symbol(&real_sym, #name);                                            \
        if (sym == NULL)                                                                           \
            return fail;                                                                           \
        ret(*real) params;                                                                         \
        memcpy(&real, &sym, sizeof(real));                                                         \
        sigset_t old;                                                                              \
        int guarded = (blocks) ? guard_begin(&old) : 0;                                            \
        ret osp__result = real args;                                                               \
        guard_end(guarded, &old);                                                                  \
        return osp__result;                                                                        \
    }

static int timespec_blocks(const struct timespec *t)
{
    return t == NULL || t->tv_sec != 0 || t->tv_nsec != 0;
}

static int timeval_blocks(const struct timeval *t)
{
    return t == NULL || t->tv_sec != 0 || t->tv_usec != 0;
}

OSP__GUARDED(int, nanosleep, (const struct timespec *req, struct timespec *rem), (req, rem),
             timespec_blocks(req), -1)
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

/* The forms with a signal mask argument. */
#define OSP__GUARDED_MASK(name, params, call_args, blocks, mask_arg)                               \
    __attribute__((visibility("default"))) int name params                                         \
    {                                                                                              \
        static _Atomic(void *) real_sym;                                                           \
        void *sym = osp__next_symbol(&real_sym, #name);                                            \
        if (sym == NULL)                                                                           \
            return -1;                                                                             \
        int(*real) params;                                                                         \
        memcpy(&real, &sym, sizeof(real));                                                         \
        sigset_t old, copy;                                                                        \
        int guarded = (blocks) ? guard_begin(&old) : 0;                                            \
        const sigset_t *use = guard_mask(guarded, mask_arg, &copy);                                \
        (void)use;                                                                                 \
        int osp__result = real call_args;                                                          \
        guard_end(guarded, &old);                                                                  \
        return osp__result;                                                                        \
    }

OSP__GUARDED_MASK(ppoll,
                  (struct pollfd * fds, nfds_t n, const struct timespec *timeout,
                   const sigset_t *mask),
                  (fds, n, timeout, use), timespec_blocks(timeout), mask)
OSP__GUARDED_MASK(pselect,
                  (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                   const sigset_t *mask),
                  (n, r, w, e, timeout, use), timespec_blocks(timeout), mask)
OSP__GUARDED_MASK(epoll_pwait,
                  (int fd, struct epoll_event *events, int max, int timeout, const sigset_t *mask),
                  (fd, events, max, timeout, use), timeout != 0, mask)
