/* signals.c — SIGPROF: ours to send, the program's to keep.
 *
 * Owns the SIGPROF disposition while the profiler runs: installing our handler, telling our
 * own signals apart from everybody else's, and keeping the program's view of SIGPROF intact —
 * the interposed sigaction, signal, bsd_signal and sysv_signal record a handler the program
 * installs for SIGPROF (its "shadow" disposition) instead of replacing ours, answer queries
 * with it, and signals that are not ours are forwarded to it (or get its default action).
 *
 * DESIGN. Our signals are sent with rt_tgsigqueueinfo carrying si_code SI_QUEUE, our pid, and
 * the address of a private cookie in si_value, so the handler can tell them from the
 * program's own (setitimer(ITIMER_PROF), raise, kill from outside). Without this, a program
 * that installs a SIGPROF handler after we started — GNU sort installs one to clean up its
 * temporary files, then dies — could be handed one of our signals. The shadow disposition is
 * read by the handler, so it is published under a sequence counter (a seqlock): a writer
 * blocks SIGPROF on its own thread (a handler cannot interrupt it there) and makes the count
 * odd while it copies, readers retry until they see the same even count before and after.
 * A program that bypasses libc (a raw rt_sigaction syscall) replaces our handler for real;
 * the sampler notices (osp__sigprof_foreign) and stops signalling.
 *
 * Standard signals do not queue: one of ours pending when the program's own SIGPROF arrives
 * would swallow it. So once the program sends or arms SIGPROF (interposed raise, kill,
 * pthread_kill, sigqueue, setitimer(ITIMER_PROF)) or receives one, we send no more, after
 * waiting (bounded) for ours in flight.
 *
 * A thread that blocks every signal is still sampled. Worker threads commonly start with all
 * signals blocked (xz's and liblzma's, many thread pools), and perf samples them: so while we
 * sample and the program has not taken SIGPROF for itself, SIGPROF stays unblocked in the
 * kernel's mask of every registered thread, and the program sees the mask it asked for. The
 * interposed pthread_sigmask and sigprocmask keep the program's view of SIGPROF per thread and
 * report it back in the old mask; a thread that inherits a blocked SIGPROF is given the same
 * treatment when it registers. A SIGPROF that is not ours and lands on a thread whose program
 * blocked it is put back as pending on that thread, blocked for real from then on, as it would
 * have been. The sigwait family and signalfd lose SIGPROF from a larger set (they would take
 * our signals for the program's); a set of SIGPROF alone means the program uses it, and we
 * stop. An exec or a spawned child inherits the mask the program asked for. Once the program
 * uses SIGPROF itself, each thread's next mask call makes its real mask the program's again,
 * and a thread that then blocks SIGPROF gets none of ours (a pending one would be visible to
 * its sigwait, sigtimedwait or signalfd).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "osp_shim.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*handler_fn)(int, siginfo_t *, void *);

/* Our handler, once installed (then the wrappers keep the program's SIGPROF in the shadow for
 * the rest of the process's life, forked children included). Written once at boot before any
 * other thread can care; relaxed. */
static _Atomic(handler_fn) installed;
static const char cookie = 'o';
/* Set once the program sends, arms (ITIMER_PROF) or receives a SIGPROF of its own; from then
 * on the sampler sends none (they could merge with the program's: standard signals do not
 * queue). Relaxed: a one-way flag, checked every tick. */
static _Atomic int program_signals;
/* Whether the one warning line about it has been written (whoever exchanges it first). */
static _Atomic int program_signals_warned;

static struct sigaction shadow;
/* Even: shadow is stable; odd: a writer is copying. Release after writing, acquire before
 * reading, so a reader that sees the same even count twice read a complete copy. */
static _Atomic uint32_t shadow_seq;
static pthread_mutex_t shadow_writers = PTHREAD_MUTEX_INITIALIZER;

int osp__sigmask_raw(int how, const sigset_t *set, sigset_t *old)
{
    /* The kernel's mask is the first _NSIG bits of sigset_t. */
    if (osp__sys(SYS_rt_sigprocmask, how, (long)set, (long)old, _NSIG / 8, 0) != 0)
        return -errno;
    return 0;
}

int osp__sigmask_libc(int how, const sigset_t *set, sigset_t *old)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "pthread_sigmask");
    if (sym == NULL)
        return -ENOSYS;
    int (*real)(int, const sigset_t *, sigset_t *);
    memcpy(&real, &sym, sizeof(real));
    return -real(how, set, old);
}

/* The C library's sigaction (ours interposes it). NULL only if the loader cannot find it. */
static sigaction_fn real_sigaction(void)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "sigaction");
    sigaction_fn fn;
    memcpy(&fn, &sym, sizeof(fn));
    return fn;
}

/* Async-signal-safe. */
static void shadow_read(struct sigaction *out)
{
    for (;;) {
        uint32_t before = atomic_load_explicit(&shadow_seq, memory_order_acquire);
        if (before & 1u)
            continue; /* a writer on another thread is mid-copy */
        memcpy(out, &shadow, sizeof(*out));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&shadow_seq, memory_order_relaxed) == before)
            return;
    }
}

/* Async-signal-safe when called from the SIGPROF handler (SIGPROF is blocked there). */
static void shadow_write_blocked(const struct sigaction *in)
{
    uint32_t seq = atomic_load_explicit(&shadow_seq, memory_order_relaxed);
    atomic_store_explicit(&shadow_seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    memcpy(&shadow, in, sizeof(shadow));
    atomic_store_explicit(&shadow_seq, seq + 2, memory_order_release);
}

static void shadow_write(const struct sigaction *in)
{
    sigset_t prof, old;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    pthread_mutex_lock(&shadow_writers);
    osp__sigmask_raw(SIG_BLOCK, &prof, &old);
    shadow_write_blocked(in);
    osp__sigmask_raw(SIG_SETMASK, &old, NULL);
    pthread_mutex_unlock(&shadow_writers);
}

int osp__sigprof_foreign(void)
{
    sigaction_fn real = real_sigaction();
    struct sigaction cur;
    if (real == NULL || real(SIGPROF, NULL, &cur) != 0)
        return 0;
    handler_fn ours = atomic_load_explicit(&installed, memory_order_relaxed);
    if (cur.sa_flags & SA_SIGINFO)
        return cur.sa_sigaction != ours;
    return cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN;
}

int osp__sigprof_install(handler_fn handler)
{
    sigaction_fn real = real_sigaction();
    if (real == NULL)
        return -ENOSYS;
    struct sigaction sa, before;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (real(SIGPROF, &sa, &before) != 0)
        return -errno;
    shadow_write(&before); /* SIG_DFL or SIG_IGN: boot refuses to run over a handler */
    atomic_store_explicit(&installed, handler, memory_order_relaxed);
    return 0;
}

void *osp__sigprof_cookie(void)
{
    return (void *)&cookie;
}

/* Async-signal-safe. Ours: ospreyd's (rt_tgsigqueueinfo, SI_QUEUE) and the threads' CPU-time
 * timers' (SI_TIMER), both carrying the cookie's address, which nobody else knows. */
int osp__sigprof_is_ours(const siginfo_t *info)
{
    return info != NULL && (info->si_code == SI_QUEUE || info->si_code == SI_TIMER) &&
           info->si_value.sival_ptr == (void *)&cookie;
}

int osp__sigprof_program_signals(void)
{
    /* Relaxed: read under the registry lock, which the setter takes after setting it. */
    return atomic_load_explicit(&program_signals, memory_order_relaxed);
}

/* ---- the program's view of SIGPROF in its signal mask (see DESIGN) ---------------------- */

/* The thread's kernel mask differs from the program's view of it (SIGPROF unblocked where the
 * program blocked it): view_active, and view_blocked is the program's view. Initial-exec: the
 * handler reads them. A vfork child shares them with its parent's thread: it only reads. */
static __thread int view_active __attribute__((tls_model("initial-exec")));
static __thread int view_blocked __attribute__((tls_model("initial-exec")));

static void prof_only(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGPROF);
}

/* Do we keep SIGPROF unblocked under the program's mask on this thread? */
static int virtualizing(void)
{
    return osp__tls_slot != NULL && osp__is_active() &&
           atomic_load_explicit(&installed, memory_order_relaxed) != NULL &&
           !atomic_load_explicit(&program_signals, memory_order_relaxed) &&
           getpid() == osp__boot_pid();
}

int osp__sigmask_shows_blocked(void)
{
    sigset_t cur;
    if (view_active)
        return view_blocked;
    return osp__sigmask_raw(SIG_BLOCK, NULL, &cur) == 0 && sigismember(&cur, SIGPROF) == 1;
}

void osp__sigmask_adopt(int inherited_blocked)
{
    sigset_t cur, prof;
    if (!virtualizing() || view_active || osp__sigmask_raw(SIG_BLOCK, NULL, &cur) != 0 ||
        (!inherited_blocked && sigismember(&cur, SIGPROF) != 1))
        return;
    view_blocked = 1;
    view_active = 1;
    prof_only(&prof);
    osp__sigmask_raw(SIG_UNBLOCK, &prof, NULL);
}

/* Before the C library's mask call: the set the kernel is to get (SIGPROF left out where the
 * program blocks it), and in *shown the program's view of SIGPROF before the call, for the old
 * mask it gets back (-1: the kernel's answer is already the program's view). */
static const sigset_t *view_before(int how, const sigset_t *set, sigset_t *copy, int *shown)
{
    *shown = view_active ? view_blocked : -1;
    if (!virtualizing()) {
        if (view_active && getpid() == osp__boot_pid()) {
            /* The program uses SIGPROF now: its mask becomes the real one again. */
            sigset_t prof;
            prof_only(&prof);
            if (view_blocked)
                osp__sigmask_raw(SIG_BLOCK, &prof, NULL);
            view_active = 0;
            *shown = -1;
        }
        return set;
    }
    if (set == NULL)
        return set;
    int listed = sigismember(set, SIGPROF) == 1;
    if (how == SIG_SETMASK ? !listed : how == SIG_UNBLOCK ? listed : 0) {
        view_blocked = 0;
        return set;
    }
    if (!listed || how == SIG_UNBLOCK)
        return set;
    view_blocked = 1;
    view_active = 1;
    *copy = *set;
    sigdelset(copy, SIGPROF);
    return copy;
}

static void view_after(sigset_t *old, int shown)
{
    if (old == NULL || shown < 0)
        return;
    if (shown)
        sigaddset(old, SIGPROF);
    else
        sigdelset(old, SIGPROF);
}

int osp__sigmask_child_begin(void)
{
    /* Reads only: a vfork child calls this too. */
    if (!view_active || !view_blocked)
        return 0;
    sigset_t prof;
    prof_only(&prof);
    osp__sigmask_raw(SIG_BLOCK, &prof, NULL);
    return 1;
}

void osp__sigmask_child_end(int blocked)
{
    if (!blocked || getpid() != osp__boot_pid())
        return;
    sigset_t prof;
    prof_only(&prof);
    osp__sigmask_raw(SIG_UNBLOCK, &prof, NULL);
}

/* The program is about to send or arm SIGPROF: stop ours first. */
static void program_will_signal(int sig)
{
    if (sig != SIGPROF || atomic_load_explicit(&installed, memory_order_relaxed) == NULL)
        return;
    if (atomic_exchange_explicit(&program_signals, 1, memory_order_relaxed) == 0)
        osp__sigprof_back_off();
    if (osp__is_active() && osp__sigprof_claim_warning())
        osp__warn("the program uses SIGPROF itself; sampling stopped");
}

int osp__sigprof_claim_warning(void)
{
    /* Relaxed: a one-way flag; only which caller writes the line depends on it. */
    return atomic_exchange_explicit(&program_signals_warned, 1, memory_order_relaxed) == 0;
}

/* Async-signal-safe: sigprocmask/pthread_sigmask, sigaction and the tgkill syscall are. */
void osp__sigprof_forward(int sig, siginfo_t *info, void *context)
{
    atomic_store_explicit(&program_signals, 1, memory_order_relaxed);
    if (view_active && view_blocked && context != NULL && info != NULL) {
        /* The program blocked SIGPROF here: it stays pending, as it would have, and blocked
         * for real once this handler returns. */
        sigaddset(&((ucontext_t *)context)->uc_sigmask, SIGPROF);
        view_active = 0;
        siginfo_t again = *info;
        osp__sys(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, (long)&again, 0);
        return;
    }
    struct sigaction act;
    shadow_read(&act);
    int siginfo = (act.sa_flags & SA_SIGINFO) != 0;
    if (!siginfo && act.sa_handler == SIG_IGN)
        return;
    if (!siginfo && act.sa_handler == SIG_DFL) {
        /* The default action (terminate), as if we had never been here: it happens when
         * this handler returns and SIGPROF is unblocked. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction_fn real = real_sigaction();
        if (real)
            real(SIGPROF, &dfl, NULL);
        osp__sys(SYS_tgkill, getpid(), gettid(), sig, 0, 0);
        return;
    }
    if (act.sa_flags & SA_RESETHAND) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        shadow_write_blocked(&dfl);
    }
    sigset_t mask = act.sa_mask, old;
    if (act.sa_flags & SA_NODEFER)
        sigdelset(&mask, SIGPROF);
    else
        sigaddset(&mask, SIGPROF);
    osp__sigmask_raw(SIG_BLOCK, &mask, &old);
    if (act.sa_flags & SA_NODEFER) {
        sigset_t prof;
        sigemptyset(&prof);
        sigaddset(&prof, SIGPROF);
        osp__sigmask_raw(SIG_UNBLOCK, &prof, NULL);
    }
    if (siginfo)
        act.sa_sigaction(sig, info, context);
    else
        act.sa_handler(sig);
    osp__sigmask_raw(SIG_SETMASK, &old, NULL);
}

int osp__sigprof_program_handles(void)
{
    if (atomic_load_explicit(&installed, memory_order_relaxed) == NULL)
        return 0;
    struct sigaction act;
    shadow_read(&act);
    if (act.sa_flags & SA_SIGINFO)
        return 1;
    return act.sa_handler != SIG_DFL && act.sa_handler != SIG_IGN;
}

/* ---- the program's side --------------------------------------------------------------- */

__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction *act,
                                                     struct sigaction *old)
{
    sigaction_fn real = real_sigaction();
    if (sig != SIGPROF || atomic_load_explicit(&installed, memory_order_relaxed) == NULL) {
        if (real == NULL) {
            errno = ENOSYS;
            return -1;
        }
        return real(sig, act, old);
    }
    struct sigaction previous;
    shadow_read(&previous);
    if (act != NULL)
        shadow_write(act);
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
    if (sig != SIGPROF || atomic_load_explicit(&installed, memory_order_relaxed) == NULL) {
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
    program_will_signal(sig);
    return real(sig);
}

__attribute__((visibility("default"))) int kill(pid_t pid, int sig)
{
    int (*real)(pid_t, int);
    static _Atomic(void *) cache;
    if (load_next(&cache, "kill", &real, sizeof(real)) != 0)
        return -1;
    program_will_signal(sig);
    return real(pid, sig);
}

__attribute__((visibility("default"))) int pthread_kill(pthread_t thread, int sig)
{
    int (*real)(pthread_t, int);
    static _Atomic(void *) cache;
    if (load_next(&cache, "pthread_kill", &real, sizeof(real)) != 0)
        return ENOSYS;
    program_will_signal(sig);
    return real(thread, sig);
}

__attribute__((visibility("default"))) int sigqueue(pid_t pid, int sig, const union sigval value)
{
    int (*real)(pid_t, int, const union sigval);
    static _Atomic(void *) cache;
    if (load_next(&cache, "sigqueue", &real, sizeof(real)) != 0)
        return -1;
    program_will_signal(sig);
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
        program_will_signal(SIGPROF);
    return real(which, value, old);
}

/* A thread that blocks SIGPROF gets no signal of ours from then on: one left pending would
 * be visible to its sigwait, sigtimedwait or signalfd. The sampler reads the flag under the
 * registry lock; after setting it, wait out a tick in progress and take any of ours that
 * arrived before. */
static void track_sigprof_mask(void)
{
    struct osp__slot *slot = osp__tls_slot;
    /* The pid check: a vfork child shares our memory and our thread's TLS, not its mask. */
    if (slot == NULL || !osp__is_active() || getpid() != osp__boot_pid())
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
    if (blocked && !was) {
        struct itimerspec off = {{0, 0}, {0, 0}};
        if (slot->timer >= 0)
            osp__sys(SYS_timer_settime, slot->timer, 0, (long)&off, 0, 0);
        if (slot->wall_timer >= 0)
            osp__sys(SYS_timer_settime, slot->wall_timer, 0, (long)&off, 0, 0);
        /* Wait out a round of signals that may not have seen the flag, then take ours. */
        osp__wait_for_round();
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
    sigset_t copy;
    int shown;
    int err = real(how, view_before(how, set, &copy, &shown), old);
    if (err == 0)
        view_after(old, shown);
    if (err == 0 && set != NULL)
        track_sigprof_mask();
    return err;
}

__attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    int (*real)(int, const sigset_t *, sigset_t *);
    static _Atomic(void *) cache;
    if (load_next(&cache, "sigprocmask", &real, sizeof(real)) != 0)
        return -1;
    sigset_t copy;
    int shown;
    int r = real(how, view_before(how, set, &copy, &shown), old);
    if (r == 0)
        view_after(old, shown);
    if (r == 0 && set != NULL) {
        int saved = errno;
        track_sigprof_mask();
        errno = saved;
    }
    return r;
}

const sigset_t *osp__sigwait_set(const sigset_t *set, sigset_t *copy)
{
    if (set == NULL || sigismember(set, SIGPROF) != 1 || !virtualizing())
        return set;
    *copy = *set;
    sigdelset(copy, SIGPROF);
    if (sigisemptyset(copy)) {
        program_will_signal(SIGPROF);
        return set;
    }
    return copy;
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
