/* disposition.c — SIGPROF: ours to send, the program's to keep (the state; the program's
 * side, its interposed sigaction, signal, raise, ... is signals.c).
 *
 * Owns installing our handler, telling our own signals apart from everybody else's (the
 * cookie), the program's SIGPROF disposition kept in a shadow while ours is installed, handing
 * a delivery that is not ours to it (or, where the program's view of the thread's mask blocks
 * SIGPROF, putting it back as pending), and the one-way flag that the program uses SIGPROF
 * itself. The program's view of the mask is kept by mask.c; its per-thread state lives here,
 * where the handler reads it.
 *
 * DESIGN. Our signals are sent with rt_tgsigqueueinfo carrying si_code SI_QUEUE, our pid, and
 * the address of a private cookie in si_value (the CPU-time timers carry it too, with
 * SI_TIMER), so the handler can tell them from the program's own (setitimer(ITIMER_PROF),
 * raise, kill from outside). Without this, a program that installs a SIGPROF handler after we
 * started — GNU sort installs one to clean up its temporary files, then dies — could be handed
 * one of our signals. The shadow disposition is read by the handler, so it is published under
 * a sequence counter (a seqlock): a writer blocks SIGPROF on its own thread (a handler cannot
 * interrupt it there) and makes the count odd while it copies, readers retry until they see the
 * same even count before and after. A program that bypasses libc (a raw rt_sigaction syscall,
 * as Go's runtime does where cgo gives it no sigaction) replaces our handler for real: each
 * thread's registration looks (osp__sigprof_reclaim), and puts the program's action into the
 * shadow and ours back in front of it.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_core.h"

typedef void (*handler_fn)(int, siginfo_t *, void *);

/* Our handler, once installed (then the wrappers keep the program's SIGPROF in the shadow for
 * the rest of the process's life, forked children included). Written once at boot before any
 * other thread can care; relaxed. */
static _Atomic(handler_fn) installed;
static const char cookie = 'o';
/* Set once the program sends, arms (ITIMER_PROF) or receives a SIGPROF of its own; from then
 * on the sampler sends none (they could merge with the program's: standard signals do not
 * queue). Relaxed: a one-way flag. */
static _Atomic int program_signals;
/* Whether the one warning line about it has been written (whoever exchanges it first). */
static _Atomic int program_signals_warned;
/* Set once the program arms a CPU-time timer of its own that sends SIGPROF (setitimer
 * ITIMER_PROF, a POSIX timer on a CPU-time clock), and once it may expect a SIGPROF to end a
 * wait (it sends one, waits for one, or arms a timer on another clock). Relaxed: one-way
 * flags, read by the guard. */
static _Atomic int program_cpu_timer;
static _Atomic int program_wakes;

__thread int osp__view_active __attribute__((tls_model("initial-exec")));
__thread int osp__view_blocked __attribute__((tls_model("initial-exec")));
__thread uint64_t osp__view_real __attribute__((tls_model("initial-exec")));
__thread unsigned osp__sigprof_ours_seen __attribute__((tls_model("initial-exec")));

static struct sigaction shadow;
/* Even: shadow is stable; odd: a writer is copying. Release after writing, acquire before
 * reading, so a reader that sees the same even count twice read a complete copy. */
static _Atomic uint32_t shadow_seq;
static pthread_mutex_t shadow_writers = PTHREAD_MUTEX_INITIALIZER;

/* Async-signal-safe. */
void osp__sigprof_shadow_read(struct sigaction *out)
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

/* Whether the shadow holds a handler of the program's (osp__sigprof_program_handles): kept with
 * it, so that the wrappers that ask at every call (guard.c) load one word, not the sequence
 * lock's copy of a whole sigaction (about 50 instructions a call). The shadow is written first
 * as ours is installed, so it says nothing of the program's before. */
_Atomic int osp__sigprof_handles_flag;

/* Async-signal-safe when called from the SIGPROF handler (SIGPROF is blocked there). */
static void shadow_write_blocked(const struct sigaction *in)
{
    uint32_t seq = atomic_load_explicit(&shadow_seq, memory_order_relaxed);
    atomic_store_explicit(&shadow_seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    memcpy(&shadow, in, sizeof(shadow));
    int handles = (in->sa_flags & SA_SIGINFO) != 0 ||
                  (in->sa_handler != SIG_DFL && in->sa_handler != SIG_IGN);
    atomic_store_explicit(&osp__sigprof_handles_flag, handles, memory_order_relaxed);
    osp__timed_gate_set(OSP__GATE_HANDLES, handles);
    atomic_store_explicit(&shadow_seq, seq + 2, memory_order_release);
}

void osp__sigprof_shadow_write(const struct sigaction *in)
{
    sigset_t old;
    osp__mutex_lock(&shadow_writers);
    osp__sigprof_mask_raw(SIG_BLOCK, &old);
    shadow_write_blocked(in);
    osp__sigmask_raw(SIG_SETMASK, &old, NULL);
    pthread_mutex_unlock(&shadow_writers);
}

int osp__sigprof_installed(void)
{
    return atomic_load_explicit(&installed, memory_order_relaxed) != NULL;
}

int osp__sigprof_foreign(void)
{
    osp__sigaction_fn real = osp__libc_sigaction();
    struct sigaction cur;
    if (real == NULL || real(SIGPROF, NULL, &cur) != 0)
        return 0;
    handler_fn ours = atomic_load_explicit(&installed, memory_order_relaxed);
    if (cur.sa_flags & SA_SIGINFO)
        return cur.sa_sigaction != ours;
    return cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN;
}

/* Our handler's action. */
static void our_action(struct sigaction *sa, handler_fn handler)
{
    memset(sa, 0, sizeof(*sa));
    sa->sa_sigaction = handler;
    /* SA_ONSTACK: on the signal stack the registry gives each thread without one (or the
     * program's own), never on a small thread stack. */
    sa->sa_flags = SA_RESTART | SA_SIGINFO | SA_ONSTACK;
    /* Every other signal waits the few microseconds the handler runs: a program's handler
     * that ran inside ours would find SIGPROF blocked and take it for the program's own block
     * (the mask tracker). The synchronous ones (a fault) cannot wait. */
    sigfillset(&sa->sa_mask);
    static const int synchronous[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof synchronous / sizeof synchronous[0]; i++)
        sigdelset(&sa->sa_mask, synchronous[i]);
}

int osp__sigprof_install(handler_fn handler)
{
    osp__sigaction_fn real = osp__libc_sigaction();
    if (real == NULL)
        return -ENOSYS;
    struct sigaction sa, before;
    our_action(&sa, handler);
    if (real(SIGPROF, &sa, &before) != 0)
        return -errno;
    osp__sigprof_shadow_write(&before); /* SIG_DFL or SIG_IGN: boot refuses to run over a handler */
    atomic_store_explicit(&installed, handler, memory_order_relaxed);
    return 0;
}

int osp__sigprof_reclaim(void)
{
    handler_fn ours = atomic_load_explicit(&installed, memory_order_relaxed);
    osp__sigaction_fn real = osp__libc_sigaction();
    struct sigaction cur, sa;
    if (ours == NULL || real == NULL || real(SIGPROF, NULL, &cur) != 0 ||
        ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == ours))
        return 0;
    /* The program set SIGPROF's action without the C library (a raw rt_sigaction): its action
     * goes into the shadow and ours back in front of it, as if it had called sigaction.
     * Writers of the shadow hold the lock, so the program's own sigaction cannot land
     * between. */
    our_action(&sa, ours);
    sigset_t old;
    osp__mutex_lock(&shadow_writers);
    osp__sigprof_mask_raw(SIG_BLOCK, &old);
    shadow_write_blocked(&cur);
    int err = real(SIGPROF, &sa, NULL);
    osp__sigmask_raw(SIG_SETMASK, &old, NULL);
    pthread_mutex_unlock(&shadow_writers);
    return err == 0 ? 1 : 0;
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
    /* Relaxed: a one-way flag. */
    return atomic_load_explicit(&program_signals, memory_order_relaxed);
}

int osp__sigprof_mark_program_signals(void)
{
    /* Relaxed: a one-way flag; only which caller stops ours depends on it. */
    return atomic_exchange_explicit(&program_signals, 1, memory_order_relaxed) == 0;
}

void osp__sigprof_mark_cpu_timer(void)
{
    atomic_store_explicit(&program_cpu_timer, 1, memory_order_relaxed);
}

void osp__sigprof_mark_wakes(void)
{
    atomic_store_explicit(&program_wakes, 1, memory_order_relaxed);
}

int osp__sigprof_guard_stands_aside(void)
{
    /* A CPU-time timer fires while the process runs, and the kernel gives its signal to a
     * thread that runs: never one asleep in a guarded call. So SIGPROF blocked there keeps
     * ours from cutting the sleep short and none of the program's from ending it. */
    if (!osp__sigprof_program_handles())
        return 0;
    return !atomic_load_explicit(&program_cpu_timer, memory_order_relaxed) ||
           atomic_load_explicit(&program_wakes, memory_order_relaxed);
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
    /* Where the interrupted mask unblocks a signal the view's does not, the program set it
     * behind the C library (Go's runtime unblocks SIGPROF on each thread it starts with a raw
     * rt_sigprocmask) or waits with a mask of its own: there SIGPROF is unblocked, as the
     * kernel's mask says. Held to the view, its own signal would stay pending, blocked for
     * good, and ours with it. A handler's mask only adds signals. */
    if (osp__view_active && osp__view_blocked && context != NULL && info != NULL &&
        (osp__view_real & ~osp__sigmask_word(&((ucontext_t *)context)->uc_sigmask)) == 0) {
        /* The program blocked SIGPROF here: it stays pending, as it would have, and blocked
         * for real once this handler returns. */
        sigaddset(&((ucontext_t *)context)->uc_sigmask, SIGPROF);
        osp__view_active = 0;
        siginfo_t again = *info;
        osp__sys(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, (long)&again, 0);
        return;
    }
    struct sigaction act;
    osp__sigprof_shadow_read(&act);
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
        osp__sigaction_fn real = osp__libc_sigaction();
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
    if (act.sa_flags & SA_NODEFER)
        osp__sigprof_mask_raw(SIG_UNBLOCK, NULL);
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
    return atomic_load_explicit(&osp__sigprof_handles_flag, memory_order_relaxed);
}
