/* slot.c — what a registered thread writes about itself: its samples, its waits, the state
 * ospreyd reads to decide which rings to read, and its two timers.
 *
 * Owns the SAMPLE_WEIGHTED records written into a slot's ring, a thread's open wait (opened by
 * the handler at a blocked instant or by the guard around a blocking call; written as one
 * WAITING sample weighted by its length when the thread runs again, when it unregisters, or at
 * exit), the slot's published state and due time, the attention bit that makes ospreyd look
 * at a slot again, and the arming of the thread's sampling timer (CLOCK_MONOTONIC, jittered)
 * and CPU-time timer (shim/README.md, "The design").
 *
 * One producer per slot ring, the slot's own thread (its SIGPROF handler, or its own code with
 * SIGPROF blocked), so no lock is taken and every function here is async-signal-safe.
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>

#include "osp_base.h"
#include "osp_core.h"
#include "osp_policy.h"

void osp__sample_record(struct osp_rec_sample_weighted *rec, uint32_t type, uint32_t size,
                        const struct osp__slot *s, uint64_t t_ns, uint32_t state, uint32_t weight,
                        uint32_t depth, enum osp_unwind_stop stop)
{
    rec->h.type = type;
    rec->h.size = size;
    rec->t_ns = t_ns;
    rec->slot = s->index;
    rec->generation = s->generation;
    rec->state = state;
    rec->depth = depth;
    rec->weight = weight;
    rec->stop = (uint32_t)stop;
}

int osp__emit_sample(struct osp__event_ring *w, struct osp__slot *s, uint64_t t_ns, uint32_t state,
                     uint32_t weight, const uint64_t *pcs, uint32_t depth,
                     enum osp_unwind_stop stop)
{
    if (w->data == NULL || depth == 0 || weight == 0)
        return 0;
    if (osp__fiber_note(w, s) != 0)
        return -ENOSPC;
    if (depth > OSP_MAX_DEPTH)
        depth = OSP_MAX_DEPTH;
    uint32_t size = (uint32_t)sizeof(struct osp_rec_sample_weighted) + depth * 8u;
    uint64_t new_head;
    /* The event ring keeps room for control records; a slot ring holds samples alone. */
    struct osp_rec_sample_weighted *rec = w->header != NULL && w->head == &w->header->head
                                              ? osp__event_ring_reserve_sample(w, size, &new_head)
                                              : osp__event_ring_reserve(w, size, &new_head);
    if (rec == NULL)
        return -ENOSPC;
    osp__sample_record(rec, OSP_REC_SAMPLE_WEIGHTED, size, s, t_ns, state, weight, depth, stop);
    memcpy(rec + 1, pcs, depth * 8u);
    osp__event_ring_commit(w, new_head);
    return 0;
}

static void *switch_maps[OSP_MAX_SWITCH_FDS];
static size_t switch_map_size;
static _Atomic int switch_maps_held;
/* The run's waits are ospreyd's to time: the shim opened and mapped the switch events at boot,
 * and handed them on. Set once, before the first thread runs; cleared when no ospreyd came. */
_Atomic int osp__switches_on;

void osp__switch_maps_set(void *const *maps, int n, size_t size)
{
    for (int i = 0; i < n && i < (int)OSP_MAX_SWITCH_FDS; i++)
        switch_maps[i] = maps[i];
    switch_map_size = size;
    atomic_store_explicit(&switch_maps_held, n, memory_order_release);
    atomic_store_explicit(&osp__switches_on, n > 0, memory_order_release);
    osp__timed_gate_set(OSP__GATE_SWITCHES, n > 0);
}

_Atomic int osp__calls_timed_flag;

void osp__calls_timed_set(int on)
{
    atomic_store_explicit(&osp__calls_timed_flag, on, memory_order_relaxed);
    osp__timed_gate_set(OSP__GATE_UNTIMED, !on);
}

void osp__kernel_waits_off(void)
{
    osp__calls_timed_set(1);
    atomic_store_explicit(&osp__switches_on, 0, memory_order_release);
    osp__timed_gate_set(OSP__GATE_SWITCHES, 0);
    osp__switch_maps_release();
}

/* Async-signal-safe: raw munmap, once. */
void osp__switch_maps_release(void)
{
    int n = atomic_exchange_explicit(&switch_maps_held, 0, memory_order_acq_rel);
    for (int i = 0; i < n; i++)
        osp__sys(SYS_munmap, (long)switch_maps[i], (long)switch_map_size, 0, 0, 0);
}

/* Async-signal-safe. */
int osp__kernel_waits(void)
{
    /* Relaxed: set before any thread of the program ran (boot), cleared only at boot too. */
    if (!atomic_load_explicit(&osp__switches_on, memory_order_relaxed))
        return 0;
    struct osp_ring_header *h = osp__header;
    if (h == NULL)
        return 0;
    /* Acquire: pairs with ospreyd's release once it has mapped the rings too (before it says
     * ATTACHED). Until ospreyd attaches, its records are awaited: the waits are its. */
    if (atomic_load_explicit(&h->kernel_waits_ns, memory_order_acquire) != 0) {
        if (atomic_load_explicit(&switch_maps_held, memory_order_relaxed) != 0)
            osp__switch_maps_release(); /* ospreyd holds the rings now */
        return 1;
    }
    /* Attached without them (a collector that did not take them): the shim's own again. */
    return atomic_load_explicit(&h->daemon_state, memory_order_acquire) == OSP_DAEMON_NONE;
}

/* A site's spans stand for a period of its waits, and never for less than a millisecond:
 * the kernel times the waits, a span only names their site, and at 10 kHz a client waiting
 * 60 us per request would otherwise write one per call (under load its ring overflowed). */
static uint64_t span_unit_ns(void)
{
    return osp__period_ns > 1000000u ? osp__period_ns : 1000000u;
}

static int collector_attached(void)
{
    struct osp_ring_header *h = osp__header;
    return h != NULL &&
           atomic_load_explicit(&h->daemon_state, memory_order_relaxed) != OSP_DAEMON_NONE;
}

/* Has the thread given up its CPU (a voluntary switch: it blocked) since the last short wait
 * it wrote or weighed? One system call per short wait. A short call that did not block (a send
 * with room, a recv with data waiting) weighs nothing: its wall time is the kernel's work, not a
 * wait, and weighed by it a client's sends took a fifth of its recv waits under load. */
static int blocked_since_last(struct osp__slot *s)
{
    struct rusage ru;
    if (osp__sys(SYS_getrusage, RUSAGE_THREAD, (long)&ru, 0, 0, 0) != 0)
        return 1;
    uint64_t switches = (uint64_t)ru.ru_nvcsw;
    int blocked = switches != s->voluntary_switches;
    s->voluntary_switches = switches;
    return blocked;
}

/* Should a short wait at this site (hash) be written? Once when the site is new among the
 * last few; then once its short waits since add up to a span's unit, so a site's spans stand
 * for its share of the time. A loop that blocks briefly at one site 100,000 times a second,
 * or alternates a send and a recv on a socket with timeouts, writes about one span per unit
 * and site, not one per call (that filled the slot's ring, and its samples were lost);
 * ospreyd gives each short block no span covers the site of the span before it. */
static int short_span_due(struct osp__slot *s, uint32_t hash, uint64_t length_ns)
{
    for (uint32_t i = 0; i < OSP__SPAN_SITES; i++) {
        if (s->span_sites[i].hash != hash)
            continue;
        s->span_sites[i].unwritten_ns += length_ns;
        if (s->span_sites[i].unwritten_ns < span_unit_ns() || !collector_attached())
            return 0; /* nobody reads the ring before ospreyd attaches: new sites only */
        s->span_sites[i].unwritten_ns = 0;
        return 1;
    }
    uint32_t i = s->span_next++ % OSP__SPAN_SITES;
    s->span_sites[i].hash = hash;
    s->span_sites[i].unwritten_ns = 0;
    return 1;
}

/* A wait's site for ospreyd: written when it was long (half a unit or more), when it is a
 * capture, or when a short one is due (short_span_due). Async-signal-safe. */
static void emit_span(struct osp__event_ring *w, struct osp__slot *s, uint64_t end_ns)
{
    uint32_t hash = 2166136261u;
    for (uint32_t i = 0; i < s->wait_depth; i++)
        hash = (hash ^ (uint32_t)(s->wait_pcs[i] ^ s->wait_pcs[i] >> 32)) * 16777619u;
    uint64_t length = end_ns - s->wait_t_ns;
    int captured = (s->wait_flags & OSP_SPAN_CAPTURED_START) != 0;
    /* A call that never blocked is no wait however long it took: under load a send preempted
     * in the middle lasted milliseconds, and as a long span it named the recv waits after it
     * (a pingpong client beside two CPU hogs: 2-11% of its recv waits given to send). The
     * switches are read for a captured wait too (it blocked the thread as well): skipped
     * there, the next guarded call took that wait's block for its own. */
    int switched = blocked_since_last(s);
    int blocked = captured || switched;
    int is_short = !captured && (length < span_unit_ns() / 2 || !blocked);
    if (is_short && !short_span_due(s, hash, blocked ? length : 0))
        return;
    uint32_t depth = s->wait_depth > OSP_MAX_DEPTH ? OSP_MAX_DEPTH : s->wait_depth;
    if (w->data == NULL || depth == 0)
        return;
    uint32_t size = (uint32_t)sizeof(struct osp_rec_wait_span) + depth * 8u;
    uint64_t new_head;
    /* A span is a hint (its time is the kernel's, and ospreyd gives a block no span covers
     * the site of the span before): a short one leaves the samples' headroom free. */
    struct osp_rec_wait_span *rec = is_short ? osp__event_ring_reserve_sample(w, size, &new_head)
                                             : osp__event_ring_reserve(w, size, &new_head);
    if (rec == NULL)
        return; /* a hint lost, not a period: the kernel times the wait (its site is the last
                 * span's), and the exit line counts periods */
    rec->h.type = OSP_REC_WAIT_SPAN;
    rec->h.size = size;
    rec->t_ns = s->wait_t_ns;
    rec->end_ns = end_ns;
    rec->slot = s->index;
    rec->generation = s->generation;
    rec->flags = s->wait_flags;
    rec->depth = depth;
    memcpy(rec + 1, s->wait_pcs, depth * 8u);
    osp__event_ring_commit(w, new_head);
    /* A blocked thread's slot is off ospreyd's watch list: the span brings it back. */
    if (w == &s->ring)
        osp__slot_wants_attention(s);
}

/* Async-signal-safe. */
void osp__wait_captured(struct osp__slot *s, uint64_t now_ns, const uint64_t *pcs, uint32_t depth)
{
    if (s->wait_open) {
        s->wait_flags |= OSP_SPAN_CAPTURED_END;
        emit_span(&s->ring, s, now_ns);
    }
    if (depth > OSP_MAX_DEPTH)
        depth = OSP_MAX_DEPTH;
    if (pcs != s->wait_pcs)
        memcpy(s->wait_pcs, pcs, depth * sizeof(uint64_t));
    s->wait_depth = depth;
    s->wait_t_ns = now_ns;
    s->wait_cpu_ns = 0;
    s->wait_flags = OSP_SPAN_CAPTURED_START;
    s->wait_open = depth > 0;
    /* Written at once as the instant [now, now) too: the wait may last long before the span
     * closes, and ospreyd gives it this site meanwhile. */
    if (s->wait_open)
        emit_span(&s->ring, s, now_ns);
}

/* Async-signal-safe. */
void osp__close_wait(struct osp__event_ring *w, struct osp__slot *s, uint64_t now_ns,
                     uint64_t cpu_ns)
{
    if (!s->wait_open)
        return;
    s->wait_open = 0;
    if (osp__kernel_waits()) {
        emit_span(w, s, now_ns);
        return;
    }
    uint32_t weight = osp__wait_weight_carry(s->wait_t_ns, now_ns, s->wait_cpu_ns, cpu_ns,
                                             osp__period_ns, &s->wait_carry_ns);
    if (weight == 0)
        return;
    if (osp__emit_sample(w, s, s->wait_t_ns, OSP_STATE_WAITING, weight, s->wait_pcs, s->wait_depth,
                         OSP_UNWIND_GO_ON) != 0)
        osp__event_ring_count_drops(w, weight);
}

/* Are our signals paused (an exec under way, or the program took SIGPROF)? Then no timer of
 * ours is armed again. Async-signal-safe. */
static int signals_paused(void)
{
    struct osp_ring_header *h = osp__header;
    return h == NULL || atomic_load_explicit(&h->signals_paused, memory_order_relaxed) != 0;
}

uint64_t osp__slot_random(struct osp__slot *s)
{
    uint64_t x = s->jitter_state; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    s->jitter_state = x;
    return x * UINT64_C(2685821657736338717);
}

/* Inside a sandbox no timer of ours is set again (control.c): a timed call that was under way
 * as it began ends without one. Relaxed: a one-way flag. */
static int sandboxed(void)
{
    return atomic_load_explicit(&osp__sandboxed, memory_order_relaxed);
}

/* Arm the sampling timer for `at`, and every `every_ns` after it (0: once). Async-signal-safe. */
static void sampling_at(struct osp__slot *s, uint64_t at, uint64_t every_ns)
{
    s->wall_due_ns = at;
    s->wall_periodic = every_ns != 0;
    s->periodic_left = every_ns != 0 ? OSP__PERIODIC_RUN - 1 : 0;
    struct itimerspec its = {
        .it_interval = {(time_t)(every_ns / 1000000000u), (long)(every_ns % 1000000000u)},
        .it_value = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)}};
    if (!sandboxed())
        osp__sys(SYS_timer_settime, s->wall_timer, TIMER_ABSTIME, (long)&its, 0, 0);
}

/* Disarm a periodic sampling timer (a one-shot one stops by itself). Async-signal-safe. */
static void stop_periodic(struct osp__slot *s)
{
    if (!s->wall_periodic || s->wall_timer < 0)
        return;
    struct itimerspec off = {{0, 0}, {0, 0}};
    if (!sandboxed())
        osp__sys(SYS_timer_settime, s->wall_timer, 0, (long)&off, 0, 0);
    s->wall_due_ns = 0;
    s->wall_periodic = 0;
}

static void arm_sampling(struct osp__slot *s, uint64_t due_ns, uint64_t every_ns)
{
    if (signals_paused())
        stop_periodic(s); /* no timer of ours fires again */
    if (s->wall_timer < 0 || signals_paused())
        return;
    sampling_at(s, due_ns + (osp__slot_random(s) >> 11) % (osp__period_ns * 6 / 10 + 1), every_ns);
}

void osp__slot_arm_sampling(struct osp__slot *s, uint64_t due_ns)
{
    arm_sampling(s, due_ns, 0);
}

void osp__slot_arm_sampling_periodic(struct osp__slot *s, uint64_t due_ns)
{
    arm_sampling(s, due_ns, osp__period_ns);
}

void osp__slot_sampling_once(struct osp__slot *s, int it_fired)
{
    if (!s->wall_periodic || s->wall_timer < 0)
        return;
    if (it_fired || s->wall_due_ns == 0 || signals_paused())
        stop_periodic(s);
    else
        sampling_at(s, s->wall_due_ns, 0);
}

void osp__slot_sampling_goes_on(struct osp__slot *s, uint64_t next_ns)
{
    if (signals_paused()) {
        stop_periodic(s);
        return;
    }
    s->wall_due_ns = next_ns;
    s->periodic_left--;
}

void osp__slot_sampling_stopped(struct osp__slot *s)
{
    stop_periodic(s);
}

void osp__slot_arm_cpu_timer(struct osp__slot *s, uint64_t cpu_ns)
{
    if (s->timer < 0 || signals_paused())
        return;
    if (cpu_ns < 1000)
        cpu_ns = 1000;
    s->timer_expiry_cpu_ns = s->last_cpu_ns + cpu_ns;
    struct itimerspec its = {
        .it_value = {(time_t)(cpu_ns / 1000000000u), (long)(cpu_ns % 1000000000u)}};
    osp__sys(SYS_timer_settime, s->timer, 0, (long)&its, 0, 0); /* async-signal-safe: XSH 2.4.3 */
}

/* Async-signal-safe. */
void osp__slot_publish(struct osp__slot *s, uint32_t state, uint64_t due_ns)
{
    if (s->shared == NULL)
        return;
    atomic_store_explicit(&s->shared->next_due_ns, due_ns, memory_order_relaxed);
    atomic_store_explicit(&s->shared->state, state, memory_order_relaxed);
    if (state == OSP_SLOT_RUNNING)
        osp__slot_wants_attention(s);
}

void osp__slot_wants_attention(const struct osp__slot *s)
{
    struct osp_ring_header *h = osp__header;
    if (h == NULL || s->index >= OSP_ATTENTION_WORDS * 64)
        return;
    /* Release: ospreyd, whose exchange of the word is acquire, sees the state stored above.
     * Always the read-modify-write, even when the bit looks up: skipping it could let ospreyd
     * take the word, read the old state and drop the slot from its watch list. */
    atomic_fetch_or_explicit(&h->attention[s->index / 64], UINT64_C(1) << (s->index % 64),
                             memory_order_release);
}

void osp__guard_wait_begin(struct osp__slot *s, const void *fn, uint64_t called_ns)
{
    if (s->shared == NULL)
        return;
    /* SIGPROF is blocked: the handler cannot run on this thread until guard_wait_end. */
    uint64_t now = osp__clock_ns(CLOCK_MONOTONIC);
    /* The call began earlier where the guard waited first (a forked child's greeting): that
     * wait is the call's too, at its site (the caller's last CPU stack, without the call, had
     * 13-52 ms of a forked sleeper's 0.3 s beside two CPU hogs). */
    uint64_t began = called_ns != 0 && called_ns < now ? called_ns : now;
    if (s->wait_open && osp__kernel_waits())
        osp__close_wait(&s->ring, s, now, 0); /* a wait captured earlier is over */
    if (!s->wait_open) {
        /* Our own frames (this function and the interposer) are left out: the wait belongs
         * to whoever called the blocking function, and its leaf is the function called (the
         * C library's, at its entry), as a sample taken inside it would show. The stack goes
         * straight into the slot: a blocking call on a small thread stack needs no more of it
         * than plain. */
        uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0), lo;
        uint64_t hi = osp__stack_in_place(s, fp, &lo); /* a fiber's stack, or the thread's */
        s->wait_pcs[0] = (uint64_t)(uintptr_t)fn;
        s->wait_depth = osp__unwind_caller_why(fp, 2, fp < lo ? lo : fp, hi, s->wait_pcs + 1,
                                               OSP_MAX_DEPTH - 1, &s->wait_stop);
        s->wait_depth = s->wait_depth > 0 ? s->wait_depth + 1 : 0;
        s->wait_depth = osp__python_frames(s->wait_pcs, s->wait_depth, OSP_MAX_DEPTH);
        s->wait_generation = osp__unwind_generation();
        s->wait_t_ns = began;
        s->wait_flags = OSP_SPAN_GUARDED;
        /* The CPU a blocking call uses is next to nothing: its wait is its wall time (and the
         * thread's CPU clock, a system call, is not read on every blocking call). */
        s->wait_cpu_ns = 0;
        s->wait_open = s->wait_depth > 0;
        /* The kernel's records time the wait before (the greeting's answer): its span is
         * written now, not at the call's return, as ospreyd gives a block its site within
         * 250 ms (STALE_NS in daemon/waits.c); a sleep of 0.3 s returns later. */
        if (s->wait_open && began < now && osp__kernel_waits()) {
            emit_span(&s->ring, s, now);
            s->wait_t_ns = now;
        }
    }
    /* A sample due during the call will be held back until it returns: the CPU clock now
     * tells then how much of the call the thread spent running (handler.c). Read only then:
     * it is a system call. */
    s->guard_cpu_ns = s->wall_due_ns != 0 && s->wall_due_ns < now + 2 * osp__period_ns
                          ? osp__clock_ns(CLOCK_THREAD_CPUTIME_ID)
                          : 0;
    s->guard_sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    s->in_guard = 1;
    /* The thread may sleep here: its next landing reads the CPU clock, not reckons it. */
    s->periodic_left = 0;
    osp__slot_publish(s, OSP_SLOT_GUARDED, UINT64_MAX);
}

/* The sampling timer armed when a thread blocks fires into the wait: for a futex wait timed by
 * its call (no CPU time to charge to it) that was a delivery, two timer settings and a code
 * read for nothing, at every wait (1000 threads on 100 ms timed condvar waits, guarded: 1.00-1.09
 * s of CPU over 4 s, against 0.47-0.54 s when such waits were not timed). One timer setting
 * each way instead: osp__timed_call_end arms it again, half a period on, so that a wait the
 * thread makes next outside our calls is still seen. */
void osp__guard_hold_sampling(struct osp__slot *s)
{
    if (s->shared == NULL || s->wall_timer < 0 || s->wall_due_ns == 0)
        return;
    struct itimerspec off = {{0, 0}, {0, 0}};
    osp__sys(SYS_timer_settime, s->wall_timer, 0, (long)&off, 0, 0);
    s->wall_due_ns = 0;
    s->wall_periodic = 0;
    s->sampling_held = 1;
}

void osp__guard_wait_end(struct osp__slot *s)
{
    if (s->shared == NULL)
        return;
    uint64_t now = osp__clock_ns(CLOCK_MONOTONIC);
    s->in_guard = 0;
    if (s->wait_open && s->wait_generation != osp__unwind_generation()) {
        /* Rows were published during the call: its caller's stack taken again, whole. The
         * frames are the same as at its start (this function, then the interposer). */
        uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0), lo;
        uint64_t hi = osp__stack_in_place(s, fp, &lo);
        enum osp_unwind_stop stop;
        uint32_t depth = osp__unwind_caller_why(fp, 2, fp < lo ? lo : fp, hi, s->capture_pcs,
                                                OSP_MAX_DEPTH - 1, &stop);
        depth = osp__python_frames(s->capture_pcs, depth, OSP_MAX_DEPTH - 1);
        if (depth + 1 > s->wait_depth) { /* after its leaf, the function called */
            memcpy(s->wait_pcs + 1, s->capture_pcs, depth * sizeof(uint64_t));
            s->wait_depth = depth + 1;
            s->wait_stop = stop;
        }
    }
    osp__close_wait(&s->ring, s, now, 0);
    /* Running again. Its next sample is due once it has used the CPU time still owed, at the
     * earliest: a thread that wakes briefly and sleeps again is not signalled for nothing. */
    s->guard_leaving = 1; /* cleared by guard.c once SIGPROF is unblocked */
    osp__slot_publish(s, OSP_SLOT_RUNNING, now + osp__period_ns / 2);
}

int osp__guard_repair_if_left(struct osp__slot *s, uint64_t sp)
{
    if (s == NULL || !s->in_guard || sp < s->stack_lo || sp >= s->stack_hi || sp <= s->guard_sp)
        return 0;
    s->in_guard = 0;
    s->guard_leaving = 0;
    if (s->shared != NULL) {
        uint64_t now = osp__clock_ns(CLOCK_MONOTONIC);
        osp__close_wait(&s->ring, s, now, 0);
        osp__slot_publish(s, OSP_SLOT_RUNNING, now + osp__period_ns / 2);
        osp__slot_arm_sampling(s, now + osp__period_ns / 2);
    }
    osp__sigprof_mask_raw(SIG_UNBLOCK, NULL); /* the guard's block: never the program's */
    return 1;
}

/* ---- A call timed by its clock reads ------------------------------------------------------
 * Where the shim times waits, a futex-based wait of the pthread API and a read or write on a
 * pipe the program made are timed by two clock reads (stamps) around the call, with SIGPROF left
 * deliverable: a futex wait resumes after our handler, and so does a pipe's read or write
 * (SA_RESTART; a socket with a timeout would not, and stays guarded). The caller's stack is
 * the same after the call as before it, so it is walked after, and only for a wait that is
 * written (osp__call_wait_weight): a call that waited long, or a short one drawn with the
 * odds of its length. The guard's two mask changes, its stack walk at every call and the
 * signal it held back to land at the return were most of what such calls cost (shim/README.md,
 * "Without the kernel's records").
 *
 * The slot's ring has one producer, the thread: while the thread writes here (timing is
 * OSP__TIMING_WRITING) a signal of ours takes nothing (handler.c) and is taken up as this is
 * done, by arming the sampling timer again (timing_deferred); while it is inside the call
 * (OSP__TIMING_IN_CALL) a blocked instant opens no wait of the handler's (the call times it).
 * A signal fence orders the flag with the code around it: the handler runs on this thread
 * (osp__timing_set).
 *
 * Its clock is a stamp (stamp.c: the CPU's counter, scaled), and most calls go no further than
 * the inline halves in osp_core.h, in guard.c's quick timed part: a call that needs nothing
 * settled (osp__timed_call_quick: one word for the process, three fields of the thread's) takes
 * a stamp as it begins, and one that ends short of its site's next sampling point (every call
 * that did not block, but for the odds of its length) moves that point and is done.
 * CLOCK_MONOTONIC is read only on the slow ways here, for the times the ring and the slot are
 * told. Two clock_gettime calls, the applies' look at the program's SIGPROF disposition and
 * these functions' calls were +304-319 instructions a call of a pipe's, the inline halves +138,
 * the quick part about +100 (bench/guard/run.sh BUILD 200000 pipe BUILD/tests/refuse: a write
 * and a read a round; shim/README.md, "The quick way of a timed call"). */

/* Done writing: a signal of ours that came meanwhile took nothing; the sampling timer is armed
 * again in its place, half a period on (as a held-back delivery arms it). So is one a futex wait
 * held, when it is likely to fire before the thread blocks again: when the thread ran half a
 * period or more (wall time) between its last timed call and this one. A thread that wakes for
 * microseconds between waits (a pool's timed condvar waits) would have it disarmed again by its
 * next wait, two timer settings for nothing at every wait (1000 threads on 100 ms waits: 0.70-
 * 0.74 s of CPU over 4 s, against 0.51-0.63 s without, and 0.53-0.69 s before such waits were
 * timed); its CPU-time timer, armed meanwhile, samples it. (Time it spent in another wait, one
 * not timed so, counts as running here: such a wait still finds the timer armed.) */
static void timing_done(struct osp__slot *s, int state, uint64_t now, uint64_t ran_ns)
{
    osp__timing_set(s, state);
    int held = s->sampling_held;
    s->sampling_held = 0;
    if (s->timing_deferred || (held && ran_ns >= osp__period_ns / 2)) {
        s->timing_deferred = 0;
        osp__slot_arm_sampling(s, now + osp__period_ns / 2);
    }
}

uint64_t osp__timed_call_begin_slow(struct osp__slot *s, int hold, uint64_t sp)
{
    if (s->shared == NULL)
        return 0;
    /* Already in one: a handler of the program's (a self-pipe's write) runs on top of a timed
     * call, whose writing must not be interleaved with another's; that call is not timed.
     * Unless the one we are in was left by a longjmp out of such a handler (this frame is not
     * below its frame on the thread's stack, as a handler's on top of it would be): then it is
     * over. */
    if (s->timing != OSP__TIMING_NONE) {
        if (sp < s->stack_lo || sp >= s->stack_hi || sp < s->timing_sp)
            return 0;
    }
    s->timing_sp = sp;
    osp__timing_set(s, OSP__TIMING_WRITING);
    /* The thread may sleep in the call: its next landing reads the CPU clock, not reckons it. */
    s->periodic_left = 0;
    uint64_t now = osp__clock_ns(CLOCK_MONOTONIC);
    /* A wait the handler captured before this call (one of a call not timed so) ended as the
     * thread ran again: written now, less the CPU time since. A system call, but rare. */
    if (s->wait_open)
        osp__close_wait(&s->ring, s, now, osp__clock_ns(CLOCK_THREAD_CPUTIME_ID));
    if (hold) {
        osp__guard_hold_sampling(s);
        osp__slot_publish(s, OSP_SLOT_TIMED, UINT64_MAX);
    }
    if (s->timing_deferred && !s->sampling_held) {
        s->timing_deferred = 0;
        osp__slot_arm_sampling(s, now + osp__period_ns / 2);
    }
    uint64_t t0 = osp__stamp_ns();
    s->timed_t0_ns = t0;
    osp__timing_set(s, OSP__TIMING_IN_CALL);
    return t0;
}

/* The time until the next sampling point of a site's waits: a new site (or one the table let go
 * of) starts at a point drawn uniformly in its first period, so each of its waits weighs its
 * length in expectation, and a site seen again goes on from where it was. A new site takes the
 * first entry of its set; the one there moves to the second, whose site the table lets go of. */
static uint64_t *call_site_until(struct osp__slot *s, uint64_t site)
{
    struct osp__call_site *set = osp__call_site_set(s, site);
    for (uint32_t i = 0; i < 2; i++)
        if (set[i].key == site)
            return &set[i].until_ns;
    set[1] = set[0];
    set[0].key = site;
    set[0].until_ns = 1 + osp__slot_random(s) % (osp__period_ns ? osp__period_ns : 1);
    return &set[0].until_ns;
}

void osp__timed_call_end_slow(struct osp__slot *s, uint64_t t0, uint64_t now, const void *fn,
                              uint64_t site, int fd_call)
{
    int saved = errno;
    osp__timing_set(s, OSP__TIMING_WRITING);
    uint64_t length = now > t0 ? now - t0 : 0;
    uint32_t weight = osp__call_wait_weight(length, osp__period_ns, call_site_until(s, site));
    /* A read or write that never gave up the CPU waited for nothing: its time was the
     * kernel's work (or a preemption), which the CPU samples count. One system call, for the
     * calls drawn only. */
    if (weight > 0 && fd_call && !blocked_since_last(s))
        weight = 0;
    /* The times the ring and the slot are told are CLOCK_MONOTONIC's: the wait began its
     * length (in stamps) before this reading. */
    uint64_t mono = osp__clock_ns(CLOCK_MONOTONIC);
    if (weight > 0 && !osp__kernel_waits()) {
        /* Our own frames (this function and the interposer's) are left out, as
         * osp__guard_wait_begin leaves them: the leaf is the function called. */
        uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0), lo;
        uint64_t hi = osp__stack_in_place(s, fp, &lo);
        s->wait_pcs[0] = (uint64_t)(uintptr_t)fn;
        uint32_t depth =
            osp__unwind_caller(fp, 2, fp < lo ? lo : fp, hi, s->wait_pcs + 1, OSP_MAX_DEPTH - 1);
        depth = depth > 0 ? osp__python_frames(s->wait_pcs, depth + 1, OSP_MAX_DEPTH) : 0;
        uint64_t began = mono > length ? mono - length : 0;
        if (depth > 0 && osp__emit_sample(&s->ring, s, began, OSP_STATE_WAITING, weight,
                                          s->wait_pcs, depth, OSP_UNWIND_GO_ON) != 0)
            osp__event_ring_count_drops(&s->ring, weight);
    }
    /* Running again: ospreyd looks at the ring (the sample) and the slot again. */
    if (weight > 0 || s->sampling_held)
        osp__slot_publish(s, OSP_SLOT_RUNNING, mono + osp__period_ns / 2);
    uint64_t ran = s->timed_end_ns != 0 && t0 > s->timed_end_ns ? t0 - s->timed_end_ns : UINT64_MAX;
    s->timed_end_ns = now;
    timing_done(s, OSP__TIMING_NONE, mono, ran);
    errno = saved;
}
