/* control.c — keeping the threads' timers (and their signals) away when they would do harm.
 *
 * Owns the pause of our SIGPROFs: around execve (a SIGPROF of ours still pending when the new
 * image starts would kill it, its SIGPROF being SIG_DFL again), and for good once the program
 * sends SIGPROF itself (standard signals do not queue: one of ours pending on a thread would
 * swallow one the program sends it; a timer of the program's does not stop ours), and for good
 * before a seccomp sandbox (strict mode, or a filter) takes effect: the handler's clock reads and
 * timer calls are system calls the sandbox may kill the program for. ospreyd checks
 * header.signals_paused before each round of signals, says in header.asking whether one is under
 * way (and counts rounds in header.tick_seq, what a shim waits for when its collector does not
 * say); the CPU-time timers are process-wide ids any thread may disarm.
 */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"

void osp__wait_for_round(int wake)
{
    struct osp_ring_header *h = osp__header;
    if (h == NULL ||
        atomic_load_explicit(&h->daemon_state, memory_order_acquire) != OSP_DAEMON_ATTACHED)
        return;
    /* Seq_cst: after the caller's seq_cst raise of signals_paused, against ospreyd's seq_cst
     * store of OSP_ASKING before its load of signals_paused (proto/osp_ring.h): IDLE here,
     * and no round of signals is under way or will miss the pause. Nothing to wait for. */
    uint32_t asking = atomic_load_explicit(&h->asking, memory_order_seq_cst);
    if (asking == OSP_ASKING_IDLE)
        return;
    if (asking == OSP_ASKING) {
        /* A round is sending: until it is over (acquire: pairs with ospreyd's release of
         * IDLE after its last signal), 50 ms at most, as below. */
        for (int waited = 0; waited < 250; waited++) {
            if (atomic_load_explicit(&h->asking, memory_order_acquire) != OSP_ASKING)
                return;
            osp__nap_us(200);
        }
        return;
    }
    /* A collector that does not say: two of its rounds. Acquire: pairs with ospreyd's
     * release store of tick_seq after a round. */
    uint64_t start = atomic_load_explicit(&h->tick_seq, memory_order_acquire);
    /* Wake it: between two of its callbacks no round is under way, and it counts two rounds
     * at once for a shim that paused our signals (rather than two ticks of up to 8 ms). */
    int32_t dpid = atomic_load_explicit(&h->daemon_pid, memory_order_relaxed);
    if (wake && dpid > 0 && !(osp__forbidden & OSP__FORBIDS_KILL))
        osp__sys(SYS_kill, dpid, SIGURG, 0, 0, 0);
    for (int waited = 0; waited < 250; waited++) {
        if (atomic_load_explicit(&h->tick_seq, memory_order_acquire) >= start + 2)
            return;
        osp__nap_us(200);
    }
}

void osp__take_pending_sigprof(void)
{
    sigset_t prof, old;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    osp__sigmask_raw(SIG_BLOCK, &prof, &old);
    struct timespec zero = {0, 0};
    siginfo_t info;
    int theirs = 0;
    /* The raw call, never the shim's own sigtimedwait (guard.c, above this layer), which would
     * take this for the program's. */
    while (osp__sys(SYS_rt_sigtimedwait, (long)&prof, (long)&info, (long)&zero, _NSIG / 8, 0) ==
           SIGPROF)
        theirs += !osp__sigprof_is_ours(&info);
    osp__sigmask_raw(SIG_SETMASK, &old, NULL);
    while (theirs-- > 0)
        osp__sys(SYS_tgkill, getpid(), gettid(), SIGPROF, 0, 0); /* the program's own, given back */
}

/* Pause our signals: no handler arms a timer again, every timer is disarmed; then wait for
 * two of ospreyd's rounds. */
static void pause_signals(void)
{
    /* Seq_cst: ordered before the wait below and ospreyd's acquire load of it. */
    atomic_fetch_add_explicit(&osp__header->signals_paused, 1, memory_order_seq_cst);
    osp__registry_disarm_timers(&osp__the_registry);
    osp__wait_for_round(1);
}

/* Inside a sandbox (whose filter may kill getpid) nothing of ours runs: its signals stopped. */
static int sandboxed(void)
{
    return atomic_load_explicit(&osp__sandboxed, memory_order_relaxed);
}

void osp__exec_begin(void)
{
    if (!osp__is_active() || sandboxed() || getpid() != osp__boot_pid() || osp__header == NULL)
        return; /* inactive, a forked child, or a vfork child sharing our memory */
    pause_signals();
    osp__take_pending_sigprof();
    osp__exec_naming(1);
}

void osp__exec_failed(void)
{
    if (!osp__is_active() || sandboxed() || getpid() != osp__boot_pid() || osp__header == NULL)
        return;
    osp__exec_naming(0);
    /* Seq_cst: the handlers that see the count at 0 arm their timers again. */
    if (atomic_fetch_sub_explicit(&osp__header->signals_paused, 1, memory_order_seq_cst) == 1)
        osp__registry_rearm_sampling(&osp__the_registry);
}

void osp__sigprof_back_off(void)
{
    if (!osp__is_active() || sandboxed() || getpid() != osp__boot_pid() || osp__header == NULL)
        return;
    /* Never resumed: the program's SIGPROFs are its own from now on. One of our timers' that
     * already fired is directed at its thread and cannot merge with the program's. */
    pause_signals();
}

void osp__program_will_signal(int sig)
{
    if (sig != SIGPROF || !osp__sigprof_installed())
        return;
    osp__sigprof_mark_wakes();
    if (osp__sigprof_mark_program_signals())
        osp__sigprof_back_off();
    if (osp__is_active() && osp__sigprof_claim_warning())
        osp__warn("the program uses SIGPROF itself; sampling stopped");
}

void osp__program_arms_sigprof(void)
{
    /* Its timer's signals are process-directed, ours thread-directed: each kind is pending
     * in a set of its own and neither swallows the other. Only the masks change: a thread
     * that blocks SIGPROF from now on blocks it in the kernel, so that the program's signal
     * goes to another thread as it would have (mask.c). */
    if (!osp__sigprof_installed())
        return;
    osp__sigprof_mark_program_signals();
    osp__sigprof_mark_cpu_timer(); /* the guard goes on (disposition.c) */
}

void osp__program_arms_sigprof_timer(clockid_t clock, const struct sigevent *sev)
{
    if (sev == NULL || sev->sigev_signo != SIGPROF ||
        (sev->sigev_notify != SIGEV_SIGNAL && sev->sigev_notify != SIGEV_THREAD_ID) ||
        !osp__sigprof_installed())
        return;
    osp__sigprof_mark_program_signals();
    /* A CPU-time clock: the two named ones, or one of clock_getcpuclockid's (negative). */
    if (clock == CLOCK_PROCESS_CPUTIME_ID || clock == CLOCK_THREAD_CPUTIME_ID || clock < 0)
        osp__sigprof_mark_cpu_timer();
    else
        osp__sigprof_mark_wakes(); /* it fires while the program sleeps: the guard stands aside */
}

void osp__sandbox_begin(void)
{
    if (!osp__is_active() || getpid() != osp__boot_pid() || osp__header == NULL ||
        atomic_load_explicit(&osp__sandboxed, memory_order_relaxed))
        return;
    /* Before the sandbox takes effect, with every system call still allowed: no timer of ours
     * fires again, and what was pending on this thread is taken back. A signal of ours that
     * already fired on another thread finds the handler returning at once. */
    pause_signals();
    osp__take_pending_sigprof();
    osp__stamp_calibrate(); /* its one system call, while allowed (stamp.c) */
    /* The program's blocking calls are no longer timed by us: a timed call holds and re-arms
     * the thread's sampling timer (slot.c), a system call the sandbox may forbid. */
    osp__calls_timed_set(0);
    /* Release: pairs with ospreyd's acquire load as it finishes (the raw file says when). */
    atomic_store_explicit(&osp__header->sandboxed_ns, osp__mono_ns(), memory_order_release);
    atomic_store_explicit(&osp__sandboxed, 1, memory_order_relaxed);
    /* This image's profile: a program it execs next (a sandbox's launcher's) boots anew, and
     * is profiled under the filter if the filter lets it. */
    osp__warn("the program entered a seccomp sandbox: profiling stopped there (the profile "
              "holds what ran before; a program it execs next is profiled anew)");
}
