/* handler.c — the SIGPROF handler: the only code of ours that runs on the program's threads
 * while they run.
 *
 * Owns what happens when a SIGPROF of ours lands on a registered thread: whether the thread
 * was running or blocked in the kernel at that instant, the CPU-time credit rule that turns
 * running instants into ON_CPU samples, the wait a blocked instant opens, and the thread's two
 * timers: the sampling timer and the CPU-time timer.
 *
 * DESIGN. No thread of ours lives in the program, and nobody else signals it: each thread
 * samples itself. Its sampling timer (timer_create(CLOCK_MONOTONIC), SIGEV_THREAD_ID, one
 * shot) is armed by the handler itself for when the next sample will be due, jittered, so the
 * kernel's timer sits on the CPU the thread runs on and interrupts it in place. (Signals sent
 * from another CPU arrive one interrupt between CPUs later: a thread that makes many short
 * system calls is then found at the return of one far more often than it is inside them —
 * SQLite's pwrite at 29% of its samples where perf says 10%.) The due time comes from the
 * thread's recent share of a CPU, so a thread sharing a core with 31 others is interrupted
 * about every 32 periods. Each thread also owns a timer on its own CPU clock
 * (CLOCK_THREAD_CPUTIME_ID), which the kernel fires only while the thread runs: it restarts
 * the sampling of a thread found blocked, once it has used the CPU time its next sample
 * needs. A thread that only sleeps costs nothing: no signal, no record, no wake-up.
 *
 * When a signal lands, the handler reads the thread's CPU clock and looks at the interrupted
 * context. A pc sitting at a `syscall` instruction the kernel rewound for a restart (or just
 * after one that returns EINTR) means the thread was blocked in the kernel: that instant is
 * not on-CPU time. Its stack is kept as the stack of a wait (once per wait), the slot says
 * BLOCKED, and the CPU timer is armed for when the thread has used the CPU time its next
 * sample needs. Any other instant is a running one: an open wait is written as one WAITING
 * sample whose weight is the wait's length in periods (wall time minus CPU time used), and the
 * credit rule pays whole periods of CPU time used since the last sample as one ON_CPU sample
 * of that weight; the sampling timer is armed for the next. A sample the thread's ring has no
 * room for (ospreyd late) is carried: its CPU time goes to the thread's next sample.
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

#include "osp_shim.h"

static uint64_t period_ns = 1000000000u / 997u;

void osp__handler_set_rate(uint32_t rate_hz)
{
    period_ns = 1000000000u / (rate_hz ? rate_hz : 997u);
}

/* The most periods one sample may stand for: 100 ms of CPU time (at least 16 periods). */
static uint64_t credit_cap(uint64_t period)
{
    uint64_t cap = OSP__MAX_WEIGHT_NS / period;
    return cap < OSP__MAX_WEIGHT ? OSP__MAX_WEIGHT : cap;
}

uint32_t osp__credit_take(struct osp__credit *c, uint64_t cpu_ns, uint64_t period,
                          uint64_t *needed_ns)
{
    uint32_t weight = 0;
    int64_t credit = (int64_t)(cpu_ns - c->paid_ns);
    if (credit >= (int64_t)(period / 2)) {
        uint64_t w = ((uint64_t)credit + period / 2) / period;
        uint64_t cap = credit_cap(period);
        if (w > cap) {
            /* Older CPU time than the cap: not this stack's. */
            c->paid_ns = cpu_ns - cap * period;
            w = cap;
        }
        weight = (uint32_t)w;
        c->paid_ns += w * period;
        credit = (int64_t)(cpu_ns - c->paid_ns);
    }
    /* The next sample is due when the credit reaches half a period again. */
    int64_t needed = (int64_t)(period / 2) - credit;
    *needed_ns = needed > 0 ? (uint64_t)needed : 0;
    return weight;
}

uint64_t osp__due_time(uint64_t now_ns, uint64_t needed_ns, uint32_t share_1024)
{
    if (share_1024 == 0)
        share_1024 = 1;
    if (share_1024 > 1024)
        share_1024 = 1024;
    return now_ns + needed_ns * 1024u / share_1024;
}

/* Are our signals paused (an exec under way, or the program took SIGPROF)? Then no timer of
 * ours is armed again. Async-signal-safe. */
static int signals_paused(void)
{
    struct osp_ring_header *h = osp__header;
    return h == NULL || atomic_load_explicit(&h->signals_paused, memory_order_relaxed) != 0;
}

/* The sampling timer, one-shot, at due_ns plus a jitter of up to 60% of a period (the program's
 * own periodicity never lines up with it). Armed by the thread itself, so the kernel's timer
 * sits on the CPU the thread runs on and interrupts it in place: a signal sent from another
 * CPU waits for an interrupt between CPUs, long enough for a thread that makes many short
 * system calls to be found at the return of the next one far more often than it is in them.
 * Async-signal-safe. */
static void arm_wall(struct osp__slot *s, uint64_t due_ns)
{
    if (s->wall_timer < 0 || signals_paused())
        return;
    uint64_t x = s->jitter_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    s->jitter_state = x;
    uint64_t at = due_ns + ((x * UINT64_C(2685821657736338717)) >> 11) % (period_ns * 6 / 10 + 1);
    s->wall_due_ns = at;
    struct itimerspec its = {.it_value = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)}};
    osp__sys(SYS_timer_settime, s->wall_timer, TIMER_ABSTIME, (long)&its, 0, 0);
}

void osp__sampling_start(struct osp__slot *s)
{
    s->jitter_state = (s->last_run_ns ^ ((uint64_t)(uint32_t)s->tid << 32)) | 1u;
    arm_wall(s, s->last_run_ns + period_ns / 2);
}

/* The instruction bytes around pc: [pc - W, pc + W) where readable. Each half is read on its
 * own when pc starts a page, so an unmapped neighbouring page costs only that half.
 * Async-signal-safe. */
#if defined(__aarch64__)
#define CODE_HALF 4
#else
#define CODE_HALF 2
#endif
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
    const ucontext_t *uc = context;
#if defined(__x86_64__)
    static const unsigned char insn[2] = {0x0f, 0x05}; /* syscall */
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    uint64_t result = (uint64_t)uc->uc_mcontext.gregs[REG_RAX];
    /* A restart puts the system call's number back in rax (a small number); else rax holds
     * what the call returned, or whatever the code put there. */
    int restarted_number = result < 4096;
#elif defined(__aarch64__)
    static const unsigned char insn[4] = {0x01, 0x00, 0x00, 0xd4}; /* svc #0 */
    uint64_t pc = uc->uc_mcontext.pc;
    uint64_t result = uc->uc_mcontext.regs[0];
    int restarted_number = 1; /* x0 is the first argument again: nothing to tell by */
#else
    (void)uc;
    return OSP__INSTANT_RUNNING;
#endif
#if defined(__x86_64__) || defined(__aarch64__)
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
#endif
}

/* The interrupted thread's stack, leaf first. Async-signal-safe. */
static uint32_t capture(const struct osp__slot *s, const void *context, uint64_t *pcs)
{
    const ucontext_t *uc = context;
    uint64_t pc = 0, fp = 0, sp = 0, lr = 0, caller = 0;
#if defined(__x86_64__)
    pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
    sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
    /* In a prologue or at a ret, the caller is found on the stack, not through rbp. */
    if (sp >= s->stack_lo && sp < s->stack_hi)
        caller = osp__unwind_x86_frameless_return(pc, sp, s->stack_hi);
#elif defined(__aarch64__)
    pc = uc->uc_mcontext.pc;
    fp = uc->uc_mcontext.regs[29];
    lr = osp__strip_pac(uc->uc_mcontext.regs[30]);
    sp = uc->uc_mcontext.sp;
#endif
    if (sp < s->stack_lo || sp >= s->stack_hi) {
        pcs[0] = pc; /* on another stack (sigaltstack): the pc alone */
        return 1;
    }
    if (caller != 0) {
        pcs[0] = pc;
        return 1 + osp__unwind_walk(caller, fp, sp, s->stack_hi, pcs + 1, OSP_MAX_DEPTH - 1);
    }
    return lr ? osp__unwind_walk_lr(pc, lr, fp, sp, s->stack_hi, pcs, OSP_MAX_DEPTH)
              : osp__unwind_walk(pc, fp, sp, s->stack_hi, pcs, OSP_MAX_DEPTH);
}

/* Arm the thread's CPU-time timer to fire after `cpu_ns` more of its CPU time.
 * Async-signal-safe. */
static int signals_paused(void);

static void arm_timer(struct osp__slot *s, uint64_t cpu_ns)
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

void osp__close_wait(struct osp__event_ring *w, struct osp__slot *s, uint64_t now_ns,
                     uint64_t cpu_ns)
{
    if (!s->wait_open)
        return;
    s->wait_open = 0;
    uint64_t wall = now_ns > s->wait_t_ns ? now_ns - s->wait_t_ns : 0;
    uint64_t used = cpu_ns > s->wait_cpu_ns ? cpu_ns - s->wait_cpu_ns : 0;
    uint64_t waited = wall > used ? wall - used : 0;
    uint64_t weight = (waited + period_ns / 2) / period_ns;
    if (weight == 0)
        return;
    if (weight > UINT32_MAX)
        weight = UINT32_MAX;
    if (osp__emit_sample(w, s, s->wait_t_ns, OSP_STATE_WAITING, (uint32_t)weight, s->wait_pcs,
                         s->wait_depth) != 0)
        osp__event_ring_count_drops(w, weight);
}

/* Async-signal-safe. */
static void publish(struct osp__slot *s, uint32_t state, uint64_t due_ns)
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

/* Async-signal-safe. */
void osp__sigprof_handler(int sig, siginfo_t *info, void *context)
{
    if (!osp__sigprof_is_ours(info)) {
        osp__sigprof_forward(sig, info, context); /* the program's, not ours (signals.c) */
        return;
    }
    int saved_errno = errno;
    struct osp__slot *s = osp__tls_slot;
    if (s != NULL && s->shared != NULL && context != NULL) {
        uint64_t now = osp__clock_ns(CLOCK_MONOTONIC);
        uint64_t cpu = osp__clock_ns(CLOCK_THREAD_CPUTIME_ID);
        uint64_t needed = 0;
        uint64_t prev_run_ns = s->last_run_ns, prev_cpu_ns = s->last_cpu_ns;
        s->last_run_ns = now;
        s->last_cpu_ns = cpu;
        /* Which of the thread's timers: the sampling timer (wall), or the CPU-time one. */
        int from_wall =
            info->si_code == SI_TIMER && s->wall_timer >= 0 && info->si_timerid == s->wall_timer;
        uint64_t wall_due = s->wall_due_ns;
        if (from_wall)
            s->wall_due_ns = 0;
        else if (info->si_code == SI_TIMER)
            s->timer_expiry_cpu_ns = 0; /* it fired: no longer armed */
        enum osp__instant instant = osp__context_instant(context);
        if (instant == OSP__INSTANT_BLOCKED) {
            /* Blocked in the kernel: no on-CPU time here. The wait's stack, once. */
            if (!s->wait_open) {
                s->wait_depth = capture(s, context, s->wait_pcs);
                s->wait_t_ns = now;
                s->wait_cpu_ns = cpu;
                s->wait_open = 1;
            }
            int64_t credit = (int64_t)(cpu - s->credit.paid_ns);
            needed = credit < (int64_t)(period_ns / 2) ? period_ns / 2 - (uint64_t)credit : 0;
            arm_timer(s, needed);
            publish(s, OSP_SLOT_BLOCKED, UINT64_MAX);
        } else {
            osp__close_wait(&s->ring, s, now, cpu);
            /* Not every delivery is a running instant of the program's own:
             * - a signal held back during a guarded call lands as SIGPROF is unblocked, in our
             *   own code;
             * - one of the sampling timer's that lands on the way out of a system call long
             *   after it fired waited there while the thread slept (or, woken, waited for a
             *   CPU): that is where the thread resumed, not where the CPU time it is owed was
             *   spent. One that lands there at once found the thread working in the kernel on
             *   the program's behalf, and that time is the call's (as perf counts it).
             * Then the credit waits for the CPU-time timer, which the kernel fires at a tick
             * that finds the thread running. */
            uint64_t late = period_ns / 2 > 50000 ? period_ns / 2 : 50000;
            uint64_t sent =
                from_wall ? wall_due
                          : atomic_load_explicit(&s->shared->last_signal_ns, memory_order_relaxed);
            int resumed = (from_wall || info->si_code == SI_QUEUE) &&
                          instant == OSP__INSTANT_SYSCALL_RETURN && now - sent > late;
            int defer = s->guard_leaving || resumed;
            uint32_t weight = defer ? 0 : osp__credit_take(&s->credit, cpu, period_ns, &needed);
            if (weight > 0) {
                uint64_t pcs[OSP_MAX_DEPTH];
                uint32_t depth = capture(s, context, pcs);
                if (osp__emit_sample(&s->ring, s, now, OSP_STATE_ON_CPU, weight, pcs, depth) != 0) {
                    /* The ring is full (ospreyd is late): the CPU time is carried to the next
                     * sample, unless it has been waiting as long as one sample may stand for. */
                    if (weight < credit_cap(period_ns))
                        s->credit.paid_ns -= (uint64_t)weight * period_ns;
                    else
                        osp__event_ring_count_drops(&s->ring, weight);
                }
            }
            if (defer) {
                int64_t credit = (int64_t)(cpu - s->credit.paid_ns);
                needed = credit < (int64_t)(period_ns / 2) ? period_ns / 2 - (uint64_t)credit : 0;
                publish(s, OSP_SLOT_RUNNING, UINT64_MAX); /* the timer takes it from here */
                arm_timer(s, needed);
            } else {
                /* Its recent share of a CPU says when the next sample will be due. */
                uint64_t wall = now - prev_run_ns, used = cpu - prev_cpu_ns;
                uint32_t share = wall > 0 && used < wall ? (uint32_t)(used * 1024u / wall) : 1024u;
                uint64_t due = osp__due_time(now, needed, share);
                publish(s, OSP_SLOT_RUNNING, due);
                arm_wall(s, due);
                /* A net under ospreyd: the timer fires if several periods pass unsampled.
                 * Moved forward only now and then: a system call saved on most samples. */
                if (s->timer_expiry_cpu_ns < cpu + needed + 2 * period_ns)
                    arm_timer(s, needed + 6 * period_ns);
            }
        }
        if (info->si_code == SI_QUEUE) /* ospreyd's, not the timer's */
            /* Release (E): pairs with ospreyd's acquire (F); next_due_ns is seen with it. */
            atomic_fetch_add_explicit(&s->shared->signals_handled, 1, memory_order_release);
    }
    errno = saved_errno;
}

void osp__guard_wait_begin(struct osp__slot *s)
{
    if (s->shared == NULL)
        return;
    /* SIGPROF is blocked: the handler cannot run on this thread until guard_wait_end. */
    if (!s->wait_open) {
        uint64_t pcs[OSP_MAX_DEPTH];
        uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
        uint64_t sp = (uint64_t)(uintptr_t)&pcs[0];
        /* Our own frames (this function and the interposer) are left out: the wait belongs
         * to whoever called the blocking function. */
        uint32_t depth = osp__unwind_walk(0, fp, sp < s->stack_lo ? s->stack_lo : sp, s->stack_hi,
                                          pcs, OSP_MAX_DEPTH);
        uint32_t skip = depth > 2 ? 2 : 0;
        memcpy(s->wait_pcs, pcs + skip, (depth - skip) * sizeof(uint64_t));
        s->wait_depth = depth - skip;
        s->wait_t_ns = osp__clock_ns(CLOCK_MONOTONIC);
        /* The CPU a blocking call uses is next to nothing: its wait is its wall time (and the
         * thread's CPU clock, a system call, is not read on every blocking call). */
        s->wait_cpu_ns = 0;
        s->wait_open = s->wait_depth > 0;
    }
    publish(s, OSP_SLOT_GUARDED, UINT64_MAX);
}

void osp__guard_wait_end(struct osp__slot *s)
{
    if (s->shared == NULL)
        return;
    uint64_t now = osp__clock_ns(CLOCK_MONOTONIC);
    osp__close_wait(&s->ring, s, now, 0);
    /* Running again. Its next sample is due once it has used the CPU time still owed, at the
     * earliest: a thread that wakes briefly and sleeps again is not signalled for nothing. */
    s->guard_leaving = 1; /* cleared by guard.c once SIGPROF is unblocked */
    publish(s, OSP_SLOT_RUNNING, now + period_ns / 2);
}

int osp__thread_timer_create(clockid_t clock)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev.sigev_value.sival_ptr = osp__sigprof_cookie();
    sev._sigev_un._tid = gettid();
    int timer = -1;
    /* The raw call: the C library's timer_create starts a helper thread for SIGEV_THREAD, and
     * we want nothing of it. */
    if (osp__sys(SYS_timer_create, clock, (long)&sev, (long)&timer, 0, 0) != 0)
        return -1;
    return timer;
}

void osp__thread_timer_delete(int timer)
{
    if (timer >= 0)
        osp__sys(SYS_timer_delete, timer, 0, 0, 0, 0);
}
