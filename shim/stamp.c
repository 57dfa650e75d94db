/* stamp.c — the clock that times a call by its clock reads (slot.c, "A call timed by its
 * clock"): the CPU's counter (x86_64's time-stamp counter, arm64's generic timer), scaled to
 * nanoseconds at CLOCK_MONOTONIC's rate, where the counter runs at one rate; CLOCK_MONOTONIC
 * itself until the scale is known, and for good where the counter is not constant or the
 * process may not read it (prctl PR_SET_TSC).
 *
 * Owns the scale: measured once per image, lazily, by the stamps asked for while it is
 * unknown (so a program that times no call measures nothing): a first pair of readings
 * (CLOCK_MONOTONIC on both sides of the counter's, kept when they are at most 10 us apart),
 * a second pair 20 ms or more later, their ratio in 32.32 fixed point (at most 10 us of
 * uncertainty over 20 ms: 0.05%). arm64 states its counter's rate (CNTFRQ_EL0): one pair is
 * enough there. A stamp is CLOCK_MONOTONIC's reading at the pair, on at the counter's rate: only
 * differences between stamps are used (a wait's length, the time between two timed calls),
 * never a stamp as a time of CLOCK_MONOTONIC's.
 *
 * Async-signal-safe throughout: the measuring thread holds it with one atomic exchange, and a
 * stamp asked for meanwhile (another thread, or a handler on this one) reads CLOCK_MONOTONIC.
 * Its one system call (PR_GET_TSC) is made by the first step, which a sandbox's start takes
 * (control.c) while every call is still allowed; a thread that makes its counter fault
 * (prctl PR_SET_TSC, interposed) turns the stamps back to CLOCK_MONOTONIC first. (Where the
 * kernel's clocksource is the TSC, the vDSO's clock_gettime reads it too and faults then as
 * well, in the program's own clock reads and the handler's: profiled or not, such a thread
 * cannot read CLOCK_MONOTONIC without a signal.)
 */
#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "osp_base.h"

struct osp__stamp_scale osp__stamp_scale;
_Atomic uint32_t osp__timed_gate = OSP__GATE_UNTIMED | OSP__GATE_UNSCALED;

enum { STAMP_NONE, STAMP_BUSY, STAMP_FIRST, STAMP_DONE, STAMP_OFF };
static _Atomic int stamp_state;
static uint64_t first_ns, first_ticks;

#define STAMP_SPAN_NS  20000000u /* between the two pairs */
#define STAMP_WIDTH_NS 10000u    /* a pair's two clock reads at most this far apart */

/* CLOCK_MONOTONIC and the counter read together: the clock's midpoint around the counter's
 * reading. Three tries at most; -1 when each was cut by a preemption. */
static int stamp_pair(uint64_t *ns, uint64_t *ticks)
{
    for (int i = 0; i < 3; i++) {
        uint64_t a = osp__clock_ns(CLOCK_MONOTONIC);
        uint64_t t = osp__cpu_ticks();
        uint64_t b = osp__clock_ns(CLOCK_MONOTONIC);
        if (a != 0 && b >= a && b - a <= STAMP_WIDTH_NS) {
            *ns = a + (b - a) / 2;
            *ticks = t;
            return 0;
        }
    }
    return -1;
}

uint64_t osp__stamp_mult_of(uint64_t ns, uint64_t ticks)
{
    if (ticks == 0)
        return 0;
    unsigned __int128 m = ((unsigned __int128)ns << 32) / ticks;
    /* A counter between 1 MHz and 100 GHz, or none. */
    if (m < ((unsigned __int128)1 << 32) / 100 || m > ((unsigned __int128)1000 << 32))
        return 0;
    return (uint64_t)m;
}

/* May this process read the counter? (A process can make rdtsc fault: PR_SET_TSC.) */
static int stamp_counter_readable(void)
{
#if defined(__x86_64__) && defined(PR_GET_TSC)
    int mode = 0;
    if (osp__sys(SYS_prctl, PR_GET_TSC, (long)&mode, 0, 0, 0) != 0)
        return 0;
    return mode == PR_TSC_ENABLE;
#else
    return 1;
#endif
}

/* The pair's clock reading is the stamp of its counter reading: the offset, modulo 2^64. */
static void stamp_publish(uint64_t ns, uint64_t ticks, uint64_t mult)
{
    osp__stamp_scale.mult = mult;
    osp__stamp_scale.offset = ns - (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
    /* Release: the two words above are seen with the flag. */
    atomic_store_explicit(&osp__stamp_scale.ready, 1, memory_order_release);
    osp__timed_gate_set(OSP__GATE_UNSCALED, 0);
    atomic_store_explicit(&stamp_state, STAMP_DONE, memory_order_relaxed);
}

void osp__stamp_calibrate(void)
{
    int state = atomic_load_explicit(&stamp_state, memory_order_relaxed);
    if (state != STAMP_NONE && state != STAMP_FIRST)
        return;
    if (!atomic_compare_exchange_strong_explicit(&stamp_state, &state, STAMP_BUSY,
                                                 memory_order_acquire, memory_order_relaxed))
        return;
    int next = state;
    uint64_t ns, ticks;
    if (state == STAMP_NONE && (!osp__cpu_ticks_constant() || !stamp_counter_readable())) {
        next = STAMP_OFF;
    } else if (stamp_pair(&ns, &ticks) != 0) {
        /* Preempted three times over: asked again at the next stamp. */
    } else if (osp__cpu_ticks_hz() != 0) {
        uint64_t mult = osp__stamp_mult_of(1000000000u, osp__cpu_ticks_hz());
        if (mult == 0)
            next = STAMP_OFF;
        else {
            stamp_publish(ns, ticks, mult);
            return;
        }
    } else if (state == STAMP_NONE) {
        first_ns = ns;
        first_ticks = ticks;
        next = STAMP_FIRST;
    } else if (ns >= first_ns + STAMP_SPAN_NS) {
        uint64_t mult =
            ticks > first_ticks ? osp__stamp_mult_of(ns - first_ns, ticks - first_ticks) : 0;
        if (mult == 0)
            next = STAMP_OFF; /* a counter that went back, or stood still */
        else {
            stamp_publish(ns, ticks, mult);
            return;
        }
    }
    atomic_store_explicit(&stamp_state, next, memory_order_release);
}

_Atomic int osp__clock_by_call;

void osp__stamp_no_counter(void)
{
    atomic_store_explicit(&osp__clock_by_call, 1, memory_order_relaxed);
    osp__stamp_off();
}

void osp__stamp_off(void)
{
    atomic_store_explicit(&stamp_state, STAMP_OFF, memory_order_relaxed);
    osp__timed_gate_set(OSP__GATE_UNSCALED, 1);
    atomic_store_explicit(&osp__stamp_scale.ready, 0, memory_order_relaxed);
}

uint64_t osp__stamp_unscaled(void)
{
    int saved = errno;
    osp__stamp_calibrate();
    errno = saved;
    return osp__clock_ns(CLOCK_MONOTONIC);
}
