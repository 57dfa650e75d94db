/* signals.c — the program's side of SIGPROF: its interposed sigaction, signal, bsd_signal and
 * sysv_signal, the ways it sends or arms SIGPROF (raise, kill, pthread_kill, sigqueue,
 * setitimer), the ways it blocks it (pthread_sigmask, sigprocmask) and waits for it (sigwait,
 * signalfd; sigtimedwait and sigwaitinfo are guard.c's). Called by nobody in the shim: the
 * program's calls land here.
 *
 * A SIGPROF handler the program installs is recorded in the shadow disposition
 * (disposition.c) instead of replacing ours, and queries are answered from it. Standard
 * signals do not queue: one of ours pending when the program's own SIGPROF arrives would
 * swallow it. So once the program sends or arms SIGPROF, or receives one, we send no more
 * (control.c). A thread that blocks every signal is
 * still sampled: the program's view of SIGPROF in its mask is kept apart from the kernel's
 * (mask.c). Once the program uses SIGPROF itself, a thread that then blocks SIGPROF gets none
 * of ours: one left pending would be visible to its sigwait, sigtimedwait or signalfd.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"

/* ---- the program's side --------------------------------------------------------------- */

__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction *act,
                                                     struct sigaction *old)
{
    osp__sigaction_fn real = osp__libc_sigaction();
    if (sig != SIGPROF || !osp__sigprof_installed()) {
        if (real == NULL) {
            errno = ENOSYS;
            return -1;
        }
        return real(sig, act, old);
    }
    struct sigaction previous;
    osp__sigprof_shadow_read(&previous);
    if (act != NULL)
        osp__sigprof_shadow_write(act);
    if (old != NULL)
        *old = previous;
    return 0;
}

static sighandler_t set_simple(int sig, sighandler_t handler, int flags)
{
    struct sigaction act, old;
    memset(&act, 0, sizeof(act));
    act.sa_handler = handler;
    act.sa_flags = flags;
    sigemptyset(&act.sa_mask);
    if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    if (old.sa_flags & SA_SIGINFO) {
        sighandler_t h;
        memcpy(&h, &old.sa_sigaction, sizeof(h));
        return h;
    }
    return old.sa_handler;
}

static sighandler_t (*real_simple(_Atomic(void *) *cache, const char *name))(int, sighandler_t)
{
    sighandler_t (*fn)(int, sighandler_t);
    void *sym = osp__next_symbol(cache, name);
    memcpy(&fn, &sym, sizeof(fn));
    return fn;
}

/* Signals other than SIGPROF, and SIGPROF before we own it, go to the C library untouched. */
static sighandler_t simple(_Atomic(void *) *cache, const char *name, int sig, sighandler_t handler,
                           int flags)
{
    if (sig != SIGPROF || !osp__sigprof_installed()) {
        sighandler_t (*real)(int, sighandler_t) = real_simple(cache, name);
        if (real == NULL) {
            errno = ENOSYS;
            return SIG_ERR;
        }
        return real(sig, handler);
    }
    return set_simple(sig, handler, flags);
}

/* The next definition of `name` into *fn (a function pointer), looked up once into *cache;
 * -1 with errno ENOSYS if there is none. */
static int load_next(_Atomic(void *) *cache, const char *name, void *fn, size_t size)
{
    void *sym = osp__next_symbol(cache, name);
    if (sym == NULL)
        return -1;
    memcpy(fn, &sym, size);
    return 0;
}

/* The ways a program sends or arms SIGPROF: ours stop first (program_will_signal). */
__attribute__((visibility("default"))) int raise(int sig)
{
    int (*real)(int);
    static _Atomic(void *) cache;
    if (load_next(&cache, "raise", &real, sizeof(real)) != 0)
        return -1;
    osp__program_will_signal(sig);
    return real(sig);
}

__attribute__((visibility("default"))) int kill(pid_t pid, int sig)
{
    int (*real)(pid_t, int);
    static _Atomic(void *) cache;
    if (load_next(&cache, "kill", &real, sizeof(real)) != 0)
        return -1;
    osp__program_will_signal(sig);
    return real(pid, sig);
}

__attribute__((visibility("default"))) int pthread_kill(pthread_t thread, int sig)
{
    int (*real)(pthread_t, int);
    static _Atomic(void *) cache;
    if (load_next(&cache, "pthread_kill", &real, sizeof(real)) != 0)
        return ENOSYS;
    osp__program_will_signal(sig);
    return real(thread, sig);
}

__attribute__((visibility("default"))) int sigqueue(pid_t pid, int sig, const union sigval value)
{
    int (*real)(pid_t, int, const union sigval);
    static _Atomic(void *) cache;
    if (load_next(&cache, "sigqueue", &real, sizeof(real)) != 0)
        return -1;
    osp__program_will_signal(sig);
    return real(pid, sig, value);
}

__attribute__((visibility("default"))) int
setitimer(__itimer_which_t which, const struct itimerval *value, struct itimerval *old)
{
    int (*real)(__itimer_which_t, const struct itimerval *, struct itimerval *);
    static _Atomic(void *) cache;
    if (load_next(&cache, "setitimer", &real, sizeof(real)) != 0)
        return -1;
    if (which == ITIMER_PROF && value != NULL &&
        (value->it_value.tv_sec != 0 || value->it_value.tv_usec != 0))
        osp__program_arms_sigprof();
    return real(which, value, old);
}

/* A thread that blocks SIGPROF gets no signal of ours from then on: one left pending would
 * be visible to its sigwait, sigtimedwait or signalfd. The sampler reads the flag under the
 * registry lock; after setting it, wait out a tick in progress and take any of ours that
 * arrived before. */
static void track_sigprof_mask(void)
{
    struct osp__slot *slot = osp__tls_slot;
    /* Inside a guarded call (a signal handler of the program's that runs during it): SIGPROF
     * is blocked by the guard, not by the program, and the handler's mask ends with it. */
    if (slot == NULL || slot->in_guard)
        return;
    /* The pid check: a vfork child shares our memory and our thread's TLS, not its mask. */
    if (!osp__is_active() || getpid() != osp__boot_pid())
        return;
    sigset_t cur;
    if (osp__sigmask_raw(SIG_BLOCK, NULL, &cur) != 0)
        return;
    int blocked = sigismember(&cur, SIGPROF) == 1;
    if (slot->shared == NULL)
        return;
    /* Relaxed: ospreyd reads it each tick; one signal sent before it saw the flag is taken
     * back below. */
    uint32_t was = atomic_fetch_or_explicit(&slot->shared->flags, 0, memory_order_relaxed) &
                   OSP_SLOT_PROF_BLOCKED;
    if (blocked)
        atomic_fetch_or_explicit(&slot->shared->flags, OSP_SLOT_PROF_BLOCKED, memory_order_relaxed);
    else
        atomic_fetch_and_explicit(&slot->shared->flags, ~OSP_SLOT_PROF_BLOCKED,
                                  memory_order_relaxed);
    if (!blocked && was) {
        /* Unblocked again: sampling goes on (the timers were disarmed when it was blocked). */
        uint64_t now = osp__mono_ns();
        osp__slot_arm_sampling(slot, now + osp__period_ns / 2);
    }
    if (blocked && !was) {
        struct itimerspec off = {{0, 0}, {0, 0}};
        if (slot->timer >= 0)
            osp__sys(SYS_timer_settime, slot->timer, 0, (long)&off, 0, 0);
        if (slot->wall_timer >= 0)
            osp__sys(SYS_timer_settime, slot->wall_timer, 0, (long)&off, 0, 0);
        slot->wall_periodic = 0;
        /* Wait out a round of signals that may not have seen the flag, then take ours. */
        osp__wait_for_round(0);
        osp__take_pending_sigprof();
    }
}

__attribute__((visibility("default"))) int pthread_sigmask(int how, const sigset_t *set,
                                                           sigset_t *old)
{
    int (*real)(int, const sigset_t *, sigset_t *);
    static _Atomic(void *) cache;
    if (load_next(&cache, "pthread_sigmask", &real, sizeof(real)) != 0)
        return ENOSYS;
    /* A guarded call this thread left by longjmp: the mask it sees is without the guard's
     * block of SIGPROF. */
    osp__guard_repair_if_left(osp__tls_slot, (uint64_t)(uintptr_t)__builtin_frame_address(0));
    sigset_t copy, was;
    int shown;
    const sigset_t *passed = osp__sigmask_view_before(how, set, &copy, &shown);
    int err = real(how, passed, &was);
    if (err == 0)
        osp__sigmask_view_after(how, passed, &was, shown);
    if (err == 0 && old != NULL)
        *old = was;
    if (err == 0 && set != NULL && !osp__sigmask_virtualizing())
        track_sigprof_mask();
    return err;
}

__attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    int (*real)(int, const sigset_t *, sigset_t *);
    static _Atomic(void *) cache;
    if (load_next(&cache, "sigprocmask", &real, sizeof(real)) != 0)
        return -1;
    /* A guarded call this thread left by longjmp: the mask it sees is without the guard's
     * block of SIGPROF. */
    osp__guard_repair_if_left(osp__tls_slot, (uint64_t)(uintptr_t)__builtin_frame_address(0));
    sigset_t copy, was;
    int shown;
    const sigset_t *passed = osp__sigmask_view_before(how, set, &copy, &shown);
    int r = real(how, passed, &was);
    if (r == 0)
        osp__sigmask_view_after(how, passed, &was, shown);
    if (r == 0 && old != NULL)
        *old = was;
    if (r == 0 && set != NULL && !osp__sigmask_virtualizing()) {
        int saved = errno;
        track_sigprof_mask();
        errno = saved;
    }
    return r;
}

__attribute__((visibility("default"))) int sigwait(const sigset_t *set, int *sig)
{
    int (*real)(const sigset_t *, int *);
    static _Atomic(void *) cache;
    if (load_next(&cache, "sigwait", &real, sizeof(real)) != 0)
        return ENOSYS;
    sigset_t copy;
    return real(osp__sigwait_set(set, &copy), sig);
}

__attribute__((visibility("default"))) int signalfd(int fd, const sigset_t *mask, int flags)
{
    int (*real)(int, const sigset_t *, int);
    static _Atomic(void *) cache;
    if (load_next(&cache, "signalfd", &real, sizeof(real)) != 0) {
        errno = ENOSYS;
        return -1;
    }
    sigset_t copy;
    return real(fd, osp__sigwait_set(mask, &copy), flags);
}

/* glibc's signal() has BSD semantics: the handler stays, interrupted calls restart. */
__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler)
{
    static _Atomic(void *) cache;
    return simple(&cache, "signal", sig, handler, SA_RESTART);
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig, sighandler_t handler)
{
    static _Atomic(void *) cache;
    return simple(&cache, "bsd_signal", sig, handler, SA_RESTART);
}

/* System V semantics: one-shot, not blocked while it runs, no restart. */
__attribute__((visibility("default"))) sighandler_t sysv_signal(int sig, sighandler_t handler)
{
    static _Atomic(void *) cache;
    return simple(&cache, "sysv_signal", sig, handler, SA_RESETHAND | SA_NODEFER);
}

/* The signal stack the registry gave this thread for our handler is not the program's: its
 * queries see none, and a stack it sets replaces ours as it would replace nothing. */
__attribute__((visibility("default"))) int sigaltstack(const stack_t *ss, stack_t *old)
{
    int (*real)(const stack_t *, stack_t *);
    static _Atomic(void *) cache;
    if (load_next(&cache, "sigaltstack", &real, sizeof(real)) != 0)
        return -1;
    stack_t before;
    int rc = real(ss, &before);
    if (rc != 0)
        return rc;
    int ours = osp__altstack_is_ours(before.ss_sp) && !(before.ss_flags & SS_ONSTACK);
    if (ours && ss != NULL)
        osp__altstack_replaced();
    if (ours)
        before = (stack_t){.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
    if (old != NULL)
        *old = before;
    return 0;
}
