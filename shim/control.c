/* control.c — keeping the threads' timers (and their signals) away when they would do harm.
 *
 * Owns the pause of our SIGPROFs: around execve (a SIGPROF of ours still pending when the new
 * image starts would kill it, its SIGPROF being SIG_DFL again), and for good once the program
 * uses SIGPROF itself (standard signals do not queue: one of ours pending would swallow the
 * program's). ospreyd checks header.signals_paused before each round of signals and counts
 * rounds in header.tick_seq; the CPU-time timers are process-wide ids any thread may disarm.
 */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "osp_shim.h"

struct osp_ring_header *osp__header;

/* Nap without our own interposed sleep. Async-signal-safe. */
static void nap_us(long us)
{
    struct timespec t = {0, us * 1000};
    osp__sys(SYS_nanosleep, (long)&t, 0, 0, 0, 0);
}

void osp__wait_for_round(void)
{
    struct osp_ring_header *h = osp__header;
    if (h == NULL ||
        atomic_load_explicit(&h->daemon_state, memory_order_acquire) != OSP_DAEMON_ATTACHED)
        return;
    /* Acquire: pairs with ospreyd's release store of tick_seq after a round. */
    uint64_t start = atomic_load_explicit(&h->tick_seq, memory_order_acquire);
    for (int waited = 0; waited < 250; waited++) {
        if (atomic_load_explicit(&h->tick_seq, memory_order_acquire) >= start + 2)
            return;
        nap_us(200);
    }
}

/* Take the registry lock, waiting at most ~50 ms: these paths can run inside the program's
 * signal handlers, possibly on a thread interrupted while it held the lock. Returns 0 with the
 * lock held. */
static int lock_briefly(struct osp__registry *reg)
{
    for (int tries = 0; tries < 500; tries++) {
        if (pthread_mutex_trylock(&reg->lock) == 0)
            return 0;
        nap_us(100);
    }
    return -1;
}

void osp__cpu_timers_disarm_all(void)
{
    struct osp__registry *reg = &osp__the_registry;
    if (reg->slots == NULL || lock_briefly(reg) != 0)
        return;
    struct itimerspec off = {{0, 0}, {0, 0}};
    for (uint32_t i = 0; i < reg->count; i++) {
        struct osp__slot *s = reg->slots[i];
        if (s->active && s->timer >= 0)
            osp__sys(SYS_timer_settime, s->timer, 0, (long)&off, 0, 0);
        if (s->active && s->wall_timer >= 0)
            osp__sys(SYS_timer_settime, s->wall_timer, 0, (long)&off, 0, 0);
    }
    pthread_mutex_unlock(&reg->lock);
}

/* After a pause that ends (an exec that failed): every thread's sampling timer again, one
 * period from now. Armed from here, they fire on this CPU once; each thread's handler then
 * arms its own on its own CPU. */
static void timers_rearm_all(void)
{
    struct osp__registry *reg = &osp__the_registry;
    if (reg->slots == NULL || lock_briefly(reg) != 0)
        return;
    uint64_t at =
        osp__clock_ns(CLOCK_MONOTONIC) + 1000000000u / (reg->rate_hz ? reg->rate_hz : 997u);
    struct itimerspec its = {{0, 0}, {(time_t)(at / 1000000000u), (long)(at % 1000000000u)}};
    for (uint32_t i = 0; i < reg->count; i++) {
        struct osp__slot *s = reg->slots[i];
        if (s->active && s->wall_timer >= 0)
            osp__sys(SYS_timer_settime, s->wall_timer, TIMER_ABSTIME, (long)&its, 0, 0);
    }
    pthread_mutex_unlock(&reg->lock);
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
    /* The raw call: the shim's own sigtimedwait would take this for the program's. */
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
    osp__cpu_timers_disarm_all();
    osp__wait_for_round();
}

void osp__exec_begin(void)
{
    if (!osp__is_active() || getpid() != osp__boot_pid() || osp__header == NULL)
        return; /* inactive, a forked child, or a vfork child sharing our memory */
    pause_signals();
    osp__take_pending_sigprof();
}

void osp__exec_failed(void)
{
    if (!osp__is_active() || getpid() != osp__boot_pid() || osp__header == NULL)
        return;
    /* Seq_cst: the handlers that see the count at 0 arm their timers again. */
    if (atomic_fetch_sub_explicit(&osp__header->signals_paused, 1, memory_order_seq_cst) == 1)
        timers_rearm_all();
}

void osp__sigprof_back_off(void)
{
    if (!osp__is_active() || getpid() != osp__boot_pid() || osp__header == NULL)
        return;
    pause_signals(); /* never resumed: the program's SIGPROFs are its own from now on */
    /* Signals of ours still on their way (sent, not yet handled) must land before the
     * program's own: wait for them, at most 100 ms. */
    struct osp__registry *reg = &osp__the_registry;
    for (int waited = 0; waited < 100; waited++) {
        int in_flight = 0;
        uint64_t now = osp__mono_ns();
        if (lock_briefly(reg) != 0)
            return;
        for (uint32_t i = 0; i < reg->count && !in_flight; i++) {
            struct osp_slot *c = reg->slots[i]->shared;
            if (!reg->slots[i]->active || c == NULL)
                continue;
            uint32_t handled = atomic_load_explicit(&c->signals_handled, memory_order_relaxed);
            uint32_t sent = atomic_load_explicit(&c->signals_sent, memory_order_relaxed);
            uint64_t last = atomic_load_explicit(&c->last_signal_ns, memory_order_relaxed);
            in_flight = handled != sent && now - last < OSP_SIGNAL_STALE_NS;
        }
        pthread_mutex_unlock(&reg->lock);
        if (!in_flight)
            return;
        nap_us(1000);
    }
}
