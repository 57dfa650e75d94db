/* handler.c — the SIGPROF handler: the only code of ours that runs on the program's threads
 * while they run, and the whole of the shim's signal-safety audit surface.
 *
 * Owns what happens when a SIGPROF of ours lands on a registered thread: whether the thread
 * was running or blocked in the kernel at that instant (osp__context_instant), the stack it
 * captures, applying the credit rule (policy.c) that turns running instants into ON_CPU
 * samples, the wait a blocked instant opens, and arming the thread's two timers (the
 * sampling timer for its next sample, the CPU-time timer after a wait). Everything it calls is in
 * the layers below (osp_base.h, osp_policy.h, osp_core.h) and says "Async-signal-safe."; nothing in
 * the shim calls into this file but boot, which installs the handler.
 *
 * DESIGN. No thread of ours lives in the program, and nobody else signals it: each thread
 * samples itself. Its sampling timer (timer_create(CLOCK_MONOTONIC), SIGEV_THREAD_ID) is
 * armed by the handler itself for when the next sample will be due, jittered, so the kernel's
 * timer sits on the CPU the thread runs on and interrupts it in place; for a thread that had
 * its CPU to itself it then fires every period by itself for the next OSP__PERIODIC_RUN - 1
 * samples, which arm nothing. (Signals sent
 * from another CPU arrive one interrupt between CPUs later: a thread that makes many short
 * system calls is then found at the return of one far more often than it is inside them —
 * SQLite's pwrite at 29% of its samples where perf says 10%.) The due time comes from the
 * thread's recent share of a CPU, so a thread sharing a core with 31 others is interrupted
 * about every 32 periods. Each thread also owns a timer on its own CPU clock
 * (CLOCK_THREAD_CPUTIME_ID), which the kernel fires only while the thread runs: it restarts
 * the sampling of a thread found blocked, once it has used the CPU time its next sample
 * needs. A thread that only sleeps costs nothing: no signal, no record, no wake-up.
 *
 * When a signal lands, the handler reads the thread's CPU clock (or, for the periodic timer's
 * on-time landings, reckons it from the wall clock: shim/README.md, "The handler's own system
 * calls") and looks at the interrupted context. A pc sitting at a `syscall` instruction the kernel
 * rewound for a restart (or just after one that returns EINTR) means the thread was blocked in the
 * kernel: that instant is not on-CPU time. Its stack is kept as the stack of a wait (once per
 * wait), the slot says BLOCKED, and the CPU timer is armed for when the thread has used the CPU
 * time its next sample needs. Any other instant is a running one: an open wait is written as one
 * WAITING sample whose weight is the wait's length in periods (wall time minus CPU time used), and
 * the credit rule pays whole periods of CPU time used since the last sample as one ON_CPU sample of
 * that weight; the sampling timer is armed for the next. A sample the thread's ring has no room for
 * (ospreyd late) is carried: its CPU time goes to the thread's next sample.
 *
 * Async-signal-safe throughout: clock_gettime, timer_settime and process_vm_readv are plain
 * system calls (clock_gettime and timer_settime are on POSIX's list, XSH 2.4.3); the walk is a
 * pure function; records go to the thread's own slot ring; errno is saved and restored.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_core.h"
#include "osp_handler.h"
#include "osp_policy.h"

/* The instruction bytes around pc: [pc - W, pc + W) where readable, W the size of the
 * system-call instruction. Each half is read on its own when pc starts a page, so an unmapped
 * neighbouring page costs only that half. Async-signal-safe. */
#define CODE_HALF OSP__CPU_SYSCALL_INSN_SIZE
static void read_around(uint64_t pc, unsigned char *before, int *have_before, unsigned char *at,
                        int *have_at)
{
    uint64_t page = pc & ~(uint64_t)4095;
    if (pc - page >= CODE_HALF) { /* both halves on pc's page: one read */
        unsigned char both[2 * CODE_HALF];
        if (osp__read_pc_code(pc, pc - CODE_HALF, both, sizeof both) == 0) {
            memcpy(before, both, CODE_HALF);
            memcpy(at, both + CODE_HALF, CODE_HALF);
            *have_before = *have_at = 1;
            return;
        }
    }
    *have_before = pc >= CODE_HALF && osp__read_code(pc - CODE_HALF, before, CODE_HALF) == 0;
    *have_at = osp__read_pc_code(pc, pc, at, CODE_HALF) == 0;
}

enum osp__instant osp__context_instant(const void *context)
{
    uint64_t pc, result;
    int restarted_number;
    osp__cpu_syscall_state(context, &pc, &result, &restarted_number);
    const unsigned char *insn = osp__cpu_syscall_insn;
    unsigned char before[CODE_HALF], at[CODE_HALF];
    int have_before, have_at;
    read_around(pc, before, &have_before, at, &have_at);
    /* Blocked, and the kernel rewound pc onto the instruction to restart the call. */
    if (restarted_number && have_at && memcmp(at, insn, CODE_HALF) == 0)
        return OSP__INSTANT_BLOCKED;
    if (have_before && memcmp(before, insn, CODE_HALF) == 0)
        /* Blocked and interrupted for good (EINTR), or on the way out of a call. */
        return result == (uint64_t)-EINTR ? OSP__INSTANT_BLOCKED : OSP__INSTANT_SYSCALL_RETURN;
    return OSP__INSTANT_RUNNING;
}

/* The interrupted thread's stack, leaf first, on whichever stack it was running (stacks.c),
 * why its walk ended, and (resume not NULL) the frame a copy of the stack would let ospreyd
 * walk on from once its rows are published (none when Python frames were put among the
 * native ones: ospreyd's walk would not have them). Async-signal-safe. */
static uint32_t capture_resume(struct osp__slot *s, const void *context, uint64_t *pcs,
                               enum osp_unwind_stop *stop, struct osp_unwind_resume *resume)
{
    struct osp__regs regs;
    osp__cpu_regs(context, &regs);
    struct osp__stack_span spans[4];
    uint32_t n = osp__stack_spans(s, regs.sp, spans);
    if (resume != NULL)
        resume->depth = 0;
    if (n == 0) {
        pcs[0] = regs.pc; /* on a stack that cannot be read: the pc alone */
        *stop = OSP_UNWIND_FAILED;
        return 1;
    }
    uint32_t depth = osp__unwind_spans_resume(&regs, 1, spans, n, pcs, OSP_MAX_DEPTH, stop, resume);
    uint64_t outermost = pcs[depth - 1];
    uint32_t with_python = osp__python_frames(pcs, depth, OSP_MAX_DEPTH); /* CPython 3.11's */
    if (resume != NULL && with_python != depth)
        resume->depth = 0;
    /* Python frames put into a full record push its outermost native frames out: the stack no
     * longer reaches the root it reached. */
    if (pcs[with_python - 1] != outermost && *stop == OSP_UNWIND_OUTERMOST)
        *stop = OSP_UNWIND_DEPTH;
    return with_python;
}

/* The same, without the resume frame. Async-signal-safe. */
static uint32_t capture_why(struct osp__slot *s, const void *context, uint64_t *pcs,
                            enum osp_unwind_stop *stop)
{
    return capture_resume(s, context, pcs, stop, NULL);
}

/* ospreyd's last question as the profile stops at its duration, to a thread inside a wait a
 * call of the program's times (OSP_SLOT_TIMED): the wait so far, at the stack it waits at,
 * written now (the call may outlast the profile, and its end would write it into a ring nobody
 * reads any more). The thread is inside the call (OSP__TIMING_IN_CALL): its own code is not
 * writing the ring or the wait's fields, the handler, on the same thread, may. Once a call.
 * Async-signal-safe. */
static void flush_timed_call(struct osp__slot *s, const void *context)
{
    if (s->timing != OSP__TIMING_IN_CALL || s->timed_t0_ns == 0 || s->wait_open)
        return;
    uint64_t now = osp__clock_ns(CLOCK_MONOTONIC);
    s->wait_depth = capture_why(s, context, s->wait_pcs, &s->wait_stop);
    s->wait_generation = osp__unwind_generation();
    uint64_t stamp = osp__stamp_ns(); /* the call's start is a stamp: its length before now */
    uint64_t length = stamp > s->timed_t0_ns ? stamp - s->timed_t0_ns : 0;
    s->wait_t_ns = now > length ? now - length : 0;
    s->wait_cpu_ns = 0;
    s->wait_flags = 0;
    s->wait_open = s->wait_depth > 0;
    s->timed_t0_ns = 0;
    osp__close_wait(&s->ring, s, now, 0);
}

/* A signal of ours held back by the guarded call just left: was the thread running inside the
 * call when it fired (the kernel working on its behalf, as in a busy epoll_wait), or asleep in
 * it? The CPU-time timer fires only while the thread runs. The sampling timer may have fired
 * either way: the answer is drawn with the odds of the thread's share of a CPU during the call
 * (its CPU clock at the call's start, read when the timer was due within two periods of it;
 * otherwise the call is taken for a sleep), so that in expectation each period of CPU time is
 * charged where it was spent. Async-signal-safe. */
static int guarded_call_ran(struct osp__slot *s, const siginfo_t *info, int from_wall, uint64_t now,
                            uint64_t cpu)
{
    if (info->si_code == SI_TIMER && !from_wall)
        return 1;
    if (!from_wall || s->guard_cpu_ns == 0 || cpu <= s->guard_cpu_ns || now <= s->wait_t_ns)
        return 0;
    uint64_t used = cpu - s->guard_cpu_ns, wall = now - s->wait_t_ns;
    return osp__slot_random(s) % wall < used;
}

/* Async-signal-safe. */
/* Async-signal-safe. A SIGPROF whose siginfo the kernel could not queue: the user's queued
 * signals (RLIMIT_SIGPENDING, counted over all of the user's processes) were used up when it
 * was sent, so it comes as SI_USER from pid 0 and without our cookie. ospreyd's ask
 * (rt_tgsigqueueinfo) is what arrives so in a profiled run; a process's own kill() names its
 * pid even then. */
static int lost_its_info(const siginfo_t *info)
{
    return info != NULL && info->si_code == SI_USER && info->si_pid == 0;
}

void osp__sigprof_handler(int sig, siginfo_t *info, void *context)
{
    if (!osp__sigprof_is_ours(info)) {
        /* One that lost its info goes to a handler of the program's, as any other; where
         * the program has none, the default action would end it for a signal that was most
         * likely ours: it is dropped instead (ospreyd asks again). */
        if (lost_its_info(info) && !osp__sigprof_program_handles())
            return;
        osp__sigprof_forward(sig, info, context); /* the program's, not ours */
        return;
    }
    osp__sigprof_ours_seen++; /* the guard's sign that an EINTR was ours */
    /* Relaxed: a signal of ours already pending when the program entered its sandbox lands
     * here afterwards; it must make no system call (clock reads, timers). */
    if (atomic_load_explicit(&osp__sandboxed, memory_order_relaxed))
        return;
    int saved_errno = errno;
    osp__greeting_poll(); /* a forked child's greeting, answered since: confirmed */
    uint64_t period_ns = osp__period_ns;
    struct osp__slot *s = osp__tls_slot;
    /* The profile has ended (its duration); the program runs on, and a periodic sampling
     * timer is stopped. Relaxed: a one-way flag. */
    if (osp__header != NULL && atomic_load_explicit(&osp__header->stopped, memory_order_relaxed)) {
        if (s != NULL) {
            osp__slot_sampling_stopped(s);
            if (s->shared != NULL && context != NULL && info->si_code == SI_QUEUE) {
                flush_timed_call(s, context);
                /* Release (E): the wait written above is seen with the answer. */
                atomic_fetch_add_explicit(&s->shared->signals_handled, 1, memory_order_release);
            }
        }
        errno = saved_errno;
        return;
    }
    if (s != NULL && s->shared != NULL && context != NULL && s->timing == OSP__TIMING_WRITING) {
        /* The thread is writing the wait of a call it timed (slot.c): the ring is its own
         * code's for now. Taken up when it is done (the sampling timer armed again). */
        s->timing_deferred = 1;
        if (info->si_code == SI_QUEUE) /* ospreyd's: answered, as below */
            atomic_fetch_add_explicit(&s->shared->signals_handled, 1, memory_order_release);
    } else if (s != NULL && s->shared != NULL && context != NULL) {
        uint64_t now = osp__clock_ns(CLOCK_MONOTONIC);
        uint64_t needed = 0;
        /* Which of the thread's timers: the sampling timer (wall), or the CPU-time one. */
        int from_wall =
            info->si_code == SI_TIMER && s->wall_timer >= 0 && info->si_timerid == s->wall_timer;
        uint64_t wall_due = s->wall_due_ns;
        if (from_wall)
            s->wall_due_ns = 0;
        else if (info->si_code == SI_TIMER)
            s->timer_expiry_cpu_ns = 0; /* it fired: no longer armed */
        enum osp__instant instant = osp__context_instant(context);
        /* The periodic sampling timer landing on time in the program's own running, none
         * missed, nothing else to settle (no wait open, no guarded call just left): the thread
         * has run since the handler last did, so its CPU clock is reckoned from the wall
         * clock instead of read (a system call). The last of a run of OSP__PERIODIC_RUN reads
         * it, and pays what the reckoning got wrong (time the thread spent off its CPU
         * between two landings): the credit is the clock's, only later. */
        int reckoned = from_wall && s->wall_periodic && s->periodic_left > 0 &&
                       info->si_overrun == 0 && instant == OSP__INSTANT_RUNNING &&
                       !s->guard_leaving && !s->wait_open && now >= wall_due &&
                       now - wall_due < OSP__LANDED_LATE_NS && now >= s->last_run_ns;
        uint64_t cpu = reckoned ? s->last_cpu_ns + (now - s->last_run_ns)
                                : osp__clock_ns(CLOCK_THREAD_CPUTIME_ID);
        /* The last reading of the clock, not a reckoning: what the thread can have run since. */
        uint64_t prev_run_ns = s->read_run_ns, prev_cpu_ns = s->read_cpu_ns;
        s->last_run_ns = now;
        s->last_cpu_ns = cpu;
        if (!reckoned) {
            s->read_run_ns = now;
            s->read_cpu_ns = cpu;
        }
        if (instant == OSP__INSTANT_BLOCKED) {
            /* Blocked in the kernel: no on-CPU time here. The wait's stack, once. */
            uint64_t generation = osp__unwind_generation();
            /* For ospreyd, once it times waits: this wake-up of the thread is ours. */
            atomic_store_explicit(&s->shared->capture_ns, now, memory_order_relaxed);
            if (osp__kernel_waits()) {
                /* ospreyd times the waits from the kernel's records; each capture gives the
                 * site of the wait it falls in (a wait since the last one may be another). */
                enum osp_unwind_stop stop;
                uint32_t depth = capture_why(s, context, s->capture_pcs, &stop);
                osp__wait_captured(s, now, s->capture_pcs, depth);
                s->wait_stop = stop;
                s->wait_generation = generation;
            } else if (!s->wait_open && s->timing != OSP__TIMING_IN_CALL) {
                /* (Inside a call timed by its clock reads, the call times this wait.) */
                s->wait_depth = capture_why(s, context, s->wait_pcs, &s->wait_stop);
                s->wait_generation = generation;
                s->wait_t_ns = now;
                s->wait_cpu_ns = cpu;
                s->wait_flags = OSP_SPAN_CAPTURED_START;
                s->wait_open = 1;
            } else if (s->wait_generation != generation) {
                /* Rows were published since its stack was taken: the same wait, seen whole
                 * (a main thread that joins at once waits where libc has no frame pointers). */
                s->wait_depth = capture_why(s, context, s->wait_pcs, &s->wait_stop);
                s->wait_generation = generation;
            }
            needed = osp__credit_needed(&s->credit, cpu, period_ns);
            osp__slot_arm_cpu_timer(s, needed);
            /* While ospreyd is still building rows (or published some since this stack was
             * taken: it drops the count only after publishing), look at the wait again in
             * 10 ms — for the first 2 s of a wait at most, so that a daemon that died
             * mid-build cannot make waiting threads cost a signal every 10 ms. */
            if (now - s->wait_t_ns < 2000000000u &&
                (osp__unwind_settling() || osp__unwind_generation() != generation))
                osp__slot_arm_sampling(s, now + 10000000u);
            else /* a periodic sampling timer would fire into the wait every period */
                osp__slot_sampling_once(s, from_wall);
            osp__slot_publish(s, OSP_SLOT_BLOCKED, UINT64_MAX);
        } else {
            osp__close_wait(&s->ring, s, now, cpu);
            /* Not every delivery is a running instant of the program's own:
             * - a signal held back during a guarded call lands as SIGPROF is unblocked, in our
             *   own code;
             * - one of the sampling timer's that lands on the way out of a system call late
             *   waited there while the thread slept (or, woken, waited for a CPU): that is
             *   where the thread resumed, not where the CPU time it is owed was spent. One
             *   that found the thread working in the kernel on the program's behalf lands
             *   late too, by what was left of the call, and that time is the call's (as perf
             *   counts it). Told apart by the CPU clock: from the last reading (the previous
             *   sample's, or the registration's) the thread cannot have run longer before
             *   the signal was sent than the time between, so the rest of the CPU time it
             *   used since ran after: half the lateness at least, and it was in the call.
             *   (A reader woken by a pipe beside busy CPUs, which waited up to 500 us for one,
             *   had 11.9% of its samples in read, against 5.5% of system time.)
             * Then the credit waits for the CPU-time timer, which the kernel fires at a tick
             * that finds the thread running. */
            uint64_t sent =
                from_wall ? wall_due
                          : atomic_load_explicit(&s->shared->last_signal_ns, memory_order_relaxed);
            uint64_t late_by = now > sent ? now - sent : 0;
            uint64_t before = sent > prev_run_ns ? sent - prev_run_ns : 0;
            uint64_t ran = cpu > prev_cpu_ns ? cpu - prev_cpu_ns : 0;
            uint64_t ran_after = ran > before ? ran - before : 0;
            int resumed = (from_wall || info->si_code == SI_QUEUE) &&
                          instant == OSP__INSTANT_SYSCALL_RETURN && late_by > OSP__LANDED_LATE_NS &&
                          ran_after < late_by / 2;
            /* Except one held back by a guarded call: the CPU time it stands for was spent in
             * that call (the kernel's work in poll or epoll_wait, as perf counts it), and the
             * call's stack is at hand. */
            int in_call = s->guard_leaving && (s->wait_flags & OSP_SPAN_GUARDED) &&
                          s->wait_depth > 0 && guarded_call_ran(s, info, from_wall, now, cpu);
            s->guard_cpu_ns = 0;
            /* And one of the sampling timer's that fired while the thread waited for a CPU (a
             * loaded machine) lands as the thread is scheduled back in: where it was
             * preempted, at a scheduler tick. Ticks see a program's regular work at a few
             * phases only (a 3:1 loop of 0.8 ms beside two CPU hogs: 0.72-0.79 in eight runs,
             * perf 0.75-0.76): the sample is taken at a random instant of the thread's
             * running instead, the timer armed again within the next period (the third
             * such landing in a row is taken as it is). */
            int preempted = from_wall && instant == OSP__INSTANT_RUNNING && !s->guard_leaving &&
                            now - wall_due > OSP__PREEMPTED_NS && s->rephased < 2;
            s->rephased = preempted ? s->rephased + 1 : 0;
            /* And ospreyd's ask (SI_QUEUE) is for the stack of a wait: one that finds the
             * thread running (woken since ospreyd saw it block) takes no sample. Asks follow
             * blocks, so they land at wake-ups, and each one taken would pay CPU time where
             * the thread resumed: a reader woken 1,000 times a second had 7.6-11.9% of its
             * samples in read against 1.5-5.5% system time, once ospreyd's tick kept time on
             * a loaded machine. The thread's own timers sample its CPU time. */
            int asked = info->si_code == SI_QUEUE;
            int defer = !in_call && (s->guard_leaving || resumed || asked);
            /* And one that lands on the way out of a system call pays only for the CPU time
             * since the last reading: older credit was spent while the timers missed it, not in the
             * call, and stays due. */
            uint32_t weight = 0;
            if (!defer && !preempted)
                weight = instant == OSP__INSTANT_SYSCALL_RETURN && !in_call
                             ? osp__credit_take_recent(&s->credit, cpu, ran, period_ns, &needed)
                             : osp__credit_take(&s->credit, cpu, period_ns, &needed);
            if (weight > 0) {
                uint64_t *pcs = in_call ? s->wait_pcs : s->sample_pcs;
                enum osp_unwind_stop stop = s->wait_stop; /* the call's stack, as walked */
                struct osp_unwind_resume resume = {.depth = 0};
                uint32_t depth =
                    in_call ? s->wait_depth : capture_resume(s, context, pcs, &stop, &resume);
                s->sample_depth = in_call ? 0 : depth;
                s->sample_stop = stop;
                /* A walk that met code whose rows are not published yet: the stack copied
                 * for ospreyd to walk again once they are (stackcopy.c). */
                int rc = resume.depth == 0 ? -EBUSY
                                           : osp__emit_stack_copy(&s->ring, s, now, weight, pcs,
                                                                  depth, stop, &resume);
                if (rc == -EBUSY)
                    rc = osp__emit_sample(&s->ring, s, now, OSP_STATE_ON_CPU, weight, pcs, depth,
                                          stop);
                if (rc != 0) {
                    /* The ring is full (ospreyd is late): the CPU time is carried to the next
                     * sample, unless it has been waiting as long as one sample may stand for. */
                    if (weight < osp__credit_cap(period_ns))
                        s->credit.paid_ns -= (uint64_t)weight * period_ns;
                    else
                        osp__event_ring_count_drops(&s->ring, weight);
                }
            }
            if (preempted) {
                osp__slot_publish(s, OSP_SLOT_RUNNING, now + period_ns);
                osp__slot_arm_sampling(s, now);
            } else if (defer) {
                needed = osp__credit_needed(&s->credit, cpu, period_ns);
                osp__slot_publish(s, OSP_SLOT_RUNNING,
                                  UINT64_MAX); /* the timer takes it from here */
                osp__slot_arm_cpu_timer(s, needed);
                /* And the sampling timer a period on: a thread that blocks again before it has
                 * used that CPU time gets no CPU-time signal, and its wait would never be
                 * seen (a main thread that goes from a deferred delivery into pthread_join). */
                osp__slot_arm_sampling(s, now + (needed > period_ns ? needed : period_ns));
            } else if (reckoned) {
                /* The periodic timer goes on: its next landing is a period on. */
                osp__slot_sampling_goes_on(s, wall_due + period_ns);
                osp__slot_publish(s, OSP_SLOT_RUNNING, wall_due + period_ns);
            } else {
                /* Credit left due (a sample at a call's end, above) is paid at a random
                 * instant of the next period's running, not as this handler returns. */
                if (needed == 0)
                    needed = 1 + osp__slot_random(s) % period_ns;
                /* Its recent share of a CPU says when the next sample will be due. */
                uint32_t share =
                    osp__cpu_share(now - prev_run_ns, cpu > prev_cpu_ns ? cpu - prev_cpu_ns : 0);
                uint64_t due = osp__due_time(now, needed, share);
                osp__slot_publish(s, OSP_SLOT_RUNNING, due);
                /* A thread that had its CPU to itself: every period from then on, reckoned
                 * (above) until the run's last landing. Otherwise once, re-armed each sample
                 * for its share. */
                if (share >= OSP__PERIODIC_SHARE)
                    osp__slot_arm_sampling_periodic(s, due);
                else
                    osp__slot_arm_sampling(s, due);
            }
            if (!preempted && !defer) {
                /* A net under ospreyd: the timer fires if several periods pass unsampled.
                 * Moved forward only now and then: a system call saved on most samples. */
                if (s->timer_expiry_cpu_ns < cpu + needed + 2 * period_ns)
                    osp__slot_arm_cpu_timer(s, needed + (OSP__PERIODIC_RUN + 2) * period_ns);
            }
        }
        if (info->si_code == SI_QUEUE) /* ospreyd's, not the timer's */
            /* Release (E): pairs with ospreyd's acquire (F); next_due_ns is seen with it. */
            atomic_fetch_add_explicit(&s->shared->signals_handled, 1, memory_order_release);
    }
    errno = saved_errno;
}
