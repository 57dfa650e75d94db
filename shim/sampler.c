/* sampler.c — the sampler thread and the SIGPROF handler.
 *
 * Owns the tick loop (jittered ticks to absolute deadlines), the per-thread decision "signal,
 * capture from outside, repeat, or leave alone", the SIGPROF handler that walks the
 * interrupted thread's stack into its per-thread ring, the heartbeat, and the periodic check
 * for newly loaded images.
 *
 * DESIGN. Each tick, under the registry lock, for every active slot: drain its per-thread
 * ring into SAMPLE records, then read the thread's CPU clock.
 *   - CPU time since the last tick: the thread ran. It gets an ON_CPU sample for each full
 *     sampling period of CPU time it has used (a per-thread credit; at most one sample per
 *     tick), the way perf's cpu-clock event fires per period of task CPU time — so a thread
 *     that shares a core, or wakes for a few microseconds per tick, is not counted as if it
 *     had run the whole tick. A tick whose CPU time does not complete a period gives a
 *     WAITING sample with a fresh stack instead (the thread was mostly not running).
 *   - No CPU time: it is waiting. The first tick of a wait captures its stack once (a
 *     WAITING sample); later ticks of the same wait write a REPEAT record (no signal).
 * The program must never see EINTR because of us. signal(7): nanosleep, clock_nanosleep,
 * poll, select, epoll_wait, pause, sigsuspend, sigtimedwait, semtimedop, futex waits with a
 * timeout, ... are never restarted after a handler runs, SA_RESTART or not, so a SIGPROF that
 * lands while a thread sits in one of them would make its sleep() return early. So a thread
 * is signalled directly only when it used at least 90% of the tick on the CPU (it is
 * running). Otherwise the sampler reads /proc/self/task/<tid>/syscall first and signals only
 * when that says `running` (in user space, no syscall to interrupt). A thread in the kernel
 * has its stack captured by the sampler itself, without a signal: the user pc and sp from
 * that file, then a scan upward from sp for plausible frame records and an ordinary
 * frame-pointer walk from the one that goes furthest (osp__unwind_scan). That is done even
 * for syscalls SA_RESTART would restart transparently (restartable() still tells them apart
 * in the verdict): the scan reads through the frameless libc code the thread is blocked in,
 * where a handler's walk from rbp stops, and nothing is interrupted at all. Reading the
 * blocked thread's stack is safe because the thread stays registered — so its stack stays
 * mapped — while the sampler holds the registry lock. The sampler cannot see the future (a
 * thread signalled while running may fall asleep before the signal lands): guard.c closes
 * that gap.
 *
 * No thread gets a second signal while one is in flight (sent, not yet handled), nor any
 * while it has SIGPROF blocked (signals.c tracks that), nor any once the program uses SIGPROF
 * itself or during an execve (see osp__exec_begin).
 *
 * The handler is async-signal-safe: signals that are not ours go to the program's disposition
 * (signals.c); for ours it reads its slot through an initial-exec TLS pointer, calls only
 * clock_gettime (async-signal-safe per POSIX) and the pure walk, writes a preallocated ring
 * entry, and saves and restores errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "osp_shim.h"

#define OSP__IMAGE_CHECK_NS 50000000u /* look for newly loaded objects every 50 ms */
#define OSP__SAMPLER_STACK  (256u << 10)
/* CPU time in a tick below which a thread counts as waiting: the kernel's signal delivery
 * and return around our handler, which the handler's stamp cannot cover. */
#define OSP__MIN_RUN_NS 5000u
/* CPU time a thread may run ahead of its ON_CPU samples, in sampling periods: enough that
 * the ±30% tick jitter does not cost a busy thread samples (it keeps > 99% of them), small
 * enough that a sampler delayed for long does not pay old CPU time at a later stack. The
 * credit is paid from half a period on (rounding, not truncation), so a thread that lives
 * for two periods gets two samples on average, not one and a half rounded down. */
#define OSP__CPU_CREDIT_PERIODS 4u
/* A signal of ours not handled within this long is taken as lost (blocked, or taken by the
 * exec guard) and the thread may be signalled again. */
#define OSP__SIGNAL_STALE_NS 100000000u
/* How much the sampler raises its own priority when it may (nice steps). */
#define OSP__SAMPLER_NICE_BOOST 10

static struct osp__sampler_config sampler_cfg;
static pthread_t sampler_thread;
/* The sampler's tid, for the wake-up signal at stop: set by the sampler before its first
 * sleep, read by the stopping thread (release/acquire). */
static _Atomic pid_t sampler_tid;
static int sampler_started;
/* Set by osp__sampler_stop, read by the sampler each tick: release/acquire so the sampler
 * that sees it also sees everything the exit path wrote before. */
static _Atomic int sampler_stop_flag;
/* Threads of this process inside execve (see osp__exec_begin). Sequentially consistent with
 * the registry lock hand-off: a tick that starts after the increment sends nothing. */
static _Atomic int execs_in_flight;

/* Async-signal-safe. */
static uint64_t mono_ns_signal_safe(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe: POSIX.1-2008 XSH 2.4.3 */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
    if (s != NULL && context != NULL) {
        struct osp__sample_entry *e = osp__thread_ring_reserve(&s->ring);
        if (e != NULL) {
            const ucontext_t *uc = context;
            uint64_t pc = 0, fp = 0, sp = 0, lr = 0, caller = 0;
#if defined(__x86_64__)
            pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
            fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
            sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
            /* In a prologue or at a ret, the caller is found on the stack, not through rbp
             * (whose record is the caller's own: no duplicate to drop, unlike aarch64's lr,
             * and a recursive call from the same site is a real second frame). */
            if (sp >= s->stack_lo && sp < s->stack_hi)
                caller = osp__unwind_x86_frameless_return(pc, sp, s->stack_hi);
#elif defined(__aarch64__)
            pc = uc->uc_mcontext.pc;
            fp = uc->uc_mcontext.regs[29];
            lr = osp__strip_pac(uc->uc_mcontext.regs[30]);
            sp = uc->uc_mcontext.sp;
#endif
            e->t_ns = mono_ns_signal_safe();
            /* Relaxed: see struct osp__slot. */
            e->state = atomic_load_explicit(&s->signal_state, memory_order_relaxed);
            if (sp >= s->stack_lo && sp < s->stack_hi) {
                /* [sp, hi) is mapped; the walk reads nothing below sp. */
                if (caller != 0) {
                    e->pcs[0] = pc; /* then the caller, then the chain from rbp */
                    e->depth = 1 + osp__unwind_walk(caller, fp, sp, s->stack_hi, e->pcs + 1,
                                                    OSP_MAX_DEPTH - 1);
                } else {
                    e->depth =
                        lr ? osp__unwind_walk_lr(pc, lr, fp, sp, s->stack_hi, e->pcs, OSP_MAX_DEPTH)
                           : osp__unwind_walk(pc, fp, sp, s->stack_hi, e->pcs, OSP_MAX_DEPTH);
                }
            } else {
                e->pcs[0] = pc; /* on another stack (sigaltstack): the pc alone */
                e->depth = 1;
            }
            osp__thread_ring_publish(&s->ring);
        }
        /* Relaxed: a count (see struct osp__slot). */
        atomic_fetch_add_explicit(&s->signals_handled, 1, memory_order_relaxed);
        /* Handling our signal costs the thread CPU time; without this stamp a thread
         * waiting in a restartable syscall would look on-CPU after every signal. */
        struct timespec cpu;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) /* async-signal-safe */
            atomic_store_explicit(&s->handler_cpu_ns,
                                  (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec,
                                  memory_order_relaxed);
    }
    errno = saved_errno;
}

/* Is a signal delivered during syscall `nr` (with these arguments) invisible to the
 * program — restarted transparently under SA_RESTART? */
static int restartable(long nr, const uint64_t *args)
{
    switch (nr) {
    case SYS_read:
    case SYS_readv:
    case SYS_pread64:
    case SYS_write:
    case SYS_writev:
    case SYS_pwrite64:
    case SYS_wait4:
    case SYS_waitid:
    case SYS_accept:
    case SYS_accept4:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_sendto:
    case SYS_sendmsg:
    case SYS_flock:
    case SYS_fcntl:
    case SYS_openat:
#ifdef SYS_open
    case SYS_open:
#endif
        return 1;
    case SYS_futex: {
        /* A futex wait without a timeout is restarted; with one it returns EINTR. */
        uint64_t cmd = args[1] & ~(uint64_t)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
        return (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET || cmd == FUTEX_LOCK_PI) &&
               args[3] == 0;
    }
    default:
        return 0;
    }
}

/* Parse n numbers (0x-prefixed or decimal) from text. Returns 0 when all n were there. */
static int parse_numbers(const char *text, uint64_t *out, int n)
{
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        out[i] = strtoull(text, &end, 0);
        if (end == text || errno != 0)
            return -1;
        text = end;
    }
    return 0;
}

enum osp__signal_verdict osp__syscall_verdict(const char *text, uint64_t *sp, uint64_t *pc)
{
    if (strncmp(text, "running", 7) == 0)
        return OSP__SIGNAL_OK;
    char *end;
    errno = 0;
    long nr = strtol(text, &end, 10);
    if (end == text || errno != 0)
        return OSP__SIGNAL_UNKNOWN;
    if (nr < 0) {
        /* Blocked, but not in a syscall (a page fault, preemption): "-1 sp pc". */
        uint64_t regs[2];
        if (parse_numbers(end, regs, 2) == 0) {
            *sp = regs[0];
            *pc = regs[1];
        }
        return OSP__SIGNAL_OK;
    }
    uint64_t fields[8]; /* six arguments, sp, pc */
    if (parse_numbers(end, fields, 8) != 0)
        return OSP__SIGNAL_UNKNOWN;
    *sp = fields[6];
    *pc = fields[7];
    return restartable(nr, fields) ? OSP__SIGNAL_OK : OSP__SIGNAL_UNSAFE;
}

/* Read /proc/self/task/<tid>/syscall without allocating (the registry lock is held). */
static enum osp__signal_verdict thread_verdict(int32_t tid, uint64_t *sp, uint64_t *pc)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return OSP__SIGNAL_UNKNOWN;
    ssize_t n;
    do
        n = read(fd, buf, sizeof(buf) - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return OSP__SIGNAL_UNKNOWN;
    buf[n] = '\0';
    return osp__syscall_verdict(buf, sp, pc);
}

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Called with the registry lock held: is a signal of ours on its way to the thread (sent,
 * not yet handled)? One that has not arrived within OSP__SIGNAL_STALE_NS counts as lost. */
static int signal_in_flight(const struct osp__slot *s, uint64_t now)
{
    uint32_t handled = atomic_load_explicit(&s->signals_handled, memory_order_relaxed);
    return handled != s->signals_sent && now - s->last_signal_ns < OSP__SIGNAL_STALE_NS;
}

/* Called with the registry lock held. */
static int sigprof_blocked(const struct osp__slot *s)
{
    /* Relaxed: the thread's wrapper waits for the lock we hold after setting it. */
    return atomic_load_explicit(&s->prof_blocked, memory_order_relaxed);
}

/* Called with the registry lock held. */
static void signal_slot(struct osp__slot *s, uint32_t state, uint64_t now)
{
    s->signals_sent++;
    s->last_signal_ns = now;
    /* Relaxed: see struct osp__slot. */
    atomic_store_explicit(&s->signal_state, state, memory_order_relaxed);
    /* By tid rather than pthread_kill: the tid cannot be stale, the thread is registered and
     * unregistering needs the lock we hold. Tagged as ours (signals.c). */
    osp__sigprof_send(s->tid);
}

/* Called with the registry lock held: capture a thread blocked in a syscall that a signal
 * would cut short, from the sampler thread (see DESIGN). */
static void capture_blocked(struct osp__registry *reg, struct osp__slot *s, uint64_t now,
                            uint32_t state, uint64_t sp, uint64_t pc)
{
    uint64_t pcs[OSP_MAX_DEPTH];
    uint32_t depth =
        osp__unwind_scan(pc, sp, s->stack_lo, s->stack_hi, osp__images_is_return_address,
                         sampler_cfg.images, pcs, OSP_MAX_DEPTH);
    osp__registry_emit_sample(reg, s, now, state, pcs, depth);
}

/* Called with the registry lock held. */
static void emit_repeat(struct osp__registry *reg, struct osp__slot *s, uint64_t now)
{
    if (reg->ring == NULL || reg->stopped)
        return;
    uint64_t new_head;
    struct osp_rec_repeat *rec = osp__event_ring_reserve_sample(reg->ring, sizeof(*rec), &new_head);
    if (rec == NULL) {
        osp__event_ring_count_drops(reg->ring, 1);
        return;
    }
    *rec = (struct osp_rec_repeat){
        .h = {.type = OSP_REC_REPEAT, .size = sizeof(*rec)},
        .t_ns = now,
        .slot = s->index,
        .generation = s->generation,
        .state = OSP_STATE_WAITING,
    };
    osp__event_ring_commit(reg->ring, new_head);
}

/* Called with the registry lock held: a thread that is not plainly running gets a signal
 * only when /proc says one cannot cut a syscall short; otherwise its stack is captured from
 * here. Returns 1 when a signal was sent. */
static int sample_unless_unsafe(struct osp__registry *reg, struct osp__slot *s, uint64_t now,
                                uint32_t state)
{
    uint64_t sp = 0, pc = 0;
    switch (thread_verdict(s->tid, &sp, &pc)) {
    case OSP__SIGNAL_OK:
        if (sp != 0) {
            /* In the kernel with a known user sp and pc: captured from here even where a
             * signal would be harmless. The scan reads through the frameless libc code the
             * thread is blocked in (a handler's walk from rbp stops there), no syscall is
             * interrupted, and a thread that blocks SIGPROF is never left a pending signal. */
            capture_blocked(reg, s, now, state, sp, pc);
            return 0;
        }
        if (sigprof_blocked(s))
            return 0; /* our signal would stay pending where sigwait or signalfd could see it */
        signal_slot(s, state, now);
        return 1;
    case OSP__SIGNAL_UNSAFE:
        capture_blocked(reg, s, now, state, sp, pc);
        return 0;
    case OSP__SIGNAL_UNKNOWN:
        return 0; /* cannot tell: leave the thread alone */
    }
    return 0;
}

/* Called with the registry lock held: one tick for one active slot. */
static void tick_slot(struct osp__registry *reg, struct osp__slot *s, uint64_t now,
                      uint64_t elapsed)
{
    uint64_t cpu = clock_ns(s->cpu_clock);
    if (cpu == 0)
        return;
    uint64_t delta = cpu > s->last_cpu_ns ? cpu - s->last_cpu_ns : 0;
    /* CPU time of the program's own, after our handler last finished on the thread. */
    uint64_t since = s->last_cpu_ns;
    uint64_t stamp = atomic_load_explicit(&s->handler_cpu_ns, memory_order_relaxed);
    if (stamp > since)
        since = stamp;
    uint64_t own = cpu > since ? cpu - since : 0;
    s->last_cpu_ns = cpu;
    uint64_t period = 1000000000u / sampler_cfg.rate_hz;
    if (own > OSP__MIN_RUN_NS) {
        s->wait_captured = 0;
        /* Whether it ran is decided on its own CPU time (our handler's alone is not running);
         * how much it ran counts all of it, as the thread's CPU clock and perf's cpu-clock
         * do: at high rates the handler's share is real time the thread spent on the CPU,
         * and leaving it out would deliver fewer samples per second than asked for. */
        s->cpu_credit_ns += (int64_t)delta;
        if (signal_in_flight(s, now))
            return; /* a second signal would only merge with the pending one */
        uint32_t state = OSP_STATE_WAITING;
        if (s->cpu_credit_ns >= (int64_t)period / 2) {
            state = OSP_STATE_ON_CPU;
            s->cpu_credit_ns -= (int64_t)period;
            if (s->cpu_credit_ns > (int64_t)(OSP__CPU_CREDIT_PERIODS * period))
                s->cpu_credit_ns = (int64_t)(OSP__CPU_CREDIT_PERIODS * period);
        }
        if (state == OSP_STATE_ON_CPU && delta * 10 >= elapsed * 9 && !sigprof_blocked(s)) {
            signal_slot(s, OSP_STATE_ON_CPU, now); /* running: no syscall to interrupt */
            return;
        }
        sample_unless_unsafe(reg, s, now, state);
        return;
    }
    /* Not running: whole periods of credit belong to stacks of the past; the fraction stays,
     * as perf's period counter does across a sleep. */
    if (s->cpu_credit_ns >= (int64_t)period / 2)
        s->cpu_credit_ns = (int64_t)period / 2 - 1;
    if (s->wait_captured) {
        emit_repeat(reg, s, now);
        return;
    }
    /* Waiting, stack not yet captured: once, unless the capture signal is still on its way
     * (a thread that is runnable but not running handles it only when it next runs). */
    if (!signal_in_flight(s, now))
        sample_unless_unsafe(reg, s, now, OSP_STATE_WAITING);
}

/* Ask the scheduler for a short time slice (Linux >= 6.12, EEVDF: sched_attr.sched_runtime
 * of a SCHED_OTHER thread is its slice request). A woken sampler then gets an early virtual
 * deadline and runs promptly even among many CPU-bound threads, instead of waiting out their
 * slices; it never runs longer than a tick's work anyway. Needs no privilege; older kernels
 * ignore it. The thread's nice value is kept. */
static void request_short_slice(void)
{
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
    } attr = {.size = 48, .policy = 0 /* SCHED_OTHER */};
    if (sched_getscheduler(0) != SCHED_OTHER)
        return; /* keep a real-time or batch policy inherited from the program */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)gettid());
    if (errno != 0)
        return;
    attr.runtime = 100000; /* 100 us, the shortest slice the kernel accepts */
    /* Where allowed (CAP_SYS_NICE, or RLIMIT_NICE), also a higher weight: among many busy
     * threads a fair share is too little for a tick's work, and ticks would be skipped. */
    attr.nice = nice - OSP__SAMPLER_NICE_BOOST < -20 ? -20 : nice - OSP__SAMPLER_NICE_BOOST;
    if (syscall(SYS_sched_setattr, gettid(), &attr, 0u) != 0) {
        attr.nice = nice;
        syscall(SYS_sched_setattr, gettid(), &attr, 0u);
    }
}

/* xorshift64*: the jitter only needs to be unpredictable to the program's own periodicity. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(2685821657736338717);
}

static void *sampler_main(void *arg)
{
    (void)arg;
    struct osp__registry *reg = sampler_cfg.registry;
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    osp__sigmask_libc(SIG_UNBLOCK, &prof, NULL); /* osp__sampler_stop wakes us with SIGPROF */
    atomic_store_explicit(&sampler_tid, gettid(), memory_order_release);
    pthread_setname_np(pthread_self(), "osprey-sampler");
    request_short_slice();

    uint64_t rng = 0;
    if (getrandom(&rng, sizeof(rng), GRND_NONBLOCK) != (ssize_t)sizeof(rng) || rng == 0)
        rng = osp__mono_ns() | 1;
    uint64_t period = 1000000000u / sampler_cfg.rate_hz;
    uint64_t deadline = osp__mono_ns();
    uint64_t last_tick = deadline;
    uint64_t last_image_check = deadline;
    int foreign_warned = 0;

    /* Acquire: pairs with the release store in osp__sampler_stop. */
    while (!atomic_load_explicit(&sampler_stop_flag, memory_order_acquire)) {
        /* Uniform in [0.7, 1.3) periods. */
        uint64_t jitter = (next_random(&rng) >> 11) % (period * 6 / 10 + 1);
        deadline += period * 7 / 10 + jitter;
        struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                              .tv_nsec = (long)(deadline % 1000000000u)};
        int err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (err == EINTR)
            continue; /* woken to stop (or a stray signal): recheck the flag */
        uint64_t now = osp__mono_ns();
        if (now > deadline + 10 * period)
            deadline = now; /* after a stall (SIGSTOP, suspend), do not burst to catch up */
        uint64_t elapsed = now - last_tick;
        last_tick = now;
        if (sampler_cfg.header)
            /* Relaxed: informational (osp_ring.h). */
            atomic_store_explicit(&sampler_cfg.header->heartbeat_ns, now, memory_order_relaxed);

        int images_pending = 0;
        if (sampler_cfg.images && now - last_image_check >= OSP__IMAGE_CHECK_NS) {
            last_image_check = now;
            if (osp__images_changed(sampler_cfg.images)) {
                osp__images_scan(sampler_cfg.images); /* not under the registry lock */
                images_pending = 1;
            }
        }
        /* A program that replaced our handler behind libc's back, or that sends or receives
         * SIGPROF itself (signals.c), must not get ours mixed with its own: stop signalling
         * (the check runs right before the signals of each tick). */
        int foreign = osp__sigprof_foreign();
        if (foreign && !foreign_warned) {
            foreign_warned = 1;
            osp__warn("the program installed its own SIGPROF handler; sampling stopped");
        }
        if (!foreign && osp__sigprof_program_signals()) {
            foreign = 1;
            if (osp__sigprof_claim_warning())
                osp__warn("the program uses SIGPROF itself; sampling stopped");
        }

        pthread_mutex_lock(&reg->lock);
        if (images_pending && reg->ring && !reg->stopped)
            osp__images_emit(sampler_cfg.images, reg->ring);
        for (uint32_t i = 0; i < reg->count; i++) {
            struct osp__slot *s = reg->slots[i];
            if (!s->active)
                continue;
            osp__registry_drain_slot(reg, s);
            /* Checked under the lock, slot by slot: a thread that sets either flag then takes
             * the lock (osp__exec_begin, osp__sigprof_back_off) gets no signal after it. */
            if (!foreign && atomic_load_explicit(&execs_in_flight, memory_order_seq_cst) == 0 &&
                !osp__sigprof_program_signals())
                tick_slot(reg, s, now, elapsed);
        }
        pthread_mutex_unlock(&reg->lock);
    }
    return NULL;
}

/* Nap without our own interposed sleep. Async-signal-safe. */
static void nap_us(long us)
{
    struct timespec t = {0, us * 1000};
    syscall(SYS_nanosleep, &t, NULL);
}

/* Take the registry lock, waiting at most ~50 ms. These paths can run inside the program's
 * signal handlers (sigprocmask, raise and kill are async-signal-safe), possibly on a thread
 * interrupted while it held the lock: they must give up rather than deadlock.
 * Returns 0 with the lock held. Async-signal-safe (trylock never blocks). */
static int lock_briefly(struct osp__registry *reg)
{
    for (int tries = 0; tries < 500; tries++) {
        if (pthread_mutex_trylock(&reg->lock) == 0)
            return 0;
        nap_us(100);
    }
    return -1;
}

void osp__take_pending_sigprof(void)
{
    /* Wait out a tick in progress: later ticks see the caller's flag and send nothing. */
    if (sampler_cfg.registry != NULL && lock_briefly(sampler_cfg.registry) == 0)
        pthread_mutex_unlock(&sampler_cfg.registry->lock);
    sigset_t prof, old;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    osp__sigmask_raw(SIG_BLOCK, &prof, &old);
    struct timespec zero = {0, 0};
    siginfo_t info;
    int theirs = 0;
    while (sigtimedwait(&prof, &info, &zero) == SIGPROF)
        theirs += !osp__sigprof_is_ours(&info);
    osp__sigmask_raw(SIG_SETMASK, &old, NULL);
    while (theirs-- > 0)
        syscall(SYS_tgkill, getpid(), gettid(), SIGPROF); /* the program's own, given back */
}

void osp__exec_begin(void)
{
    if (!osp__is_active() || getpid() != osp__boot_pid())
        return; /* inactive, a forked child, or a vfork child sharing our memory */
    atomic_fetch_add_explicit(&execs_in_flight, 1, memory_order_seq_cst);
    /* A signal of ours still pending on this thread would survive execve and kill the new
     * program (its SIGPROF is SIG_DFL again). */
    osp__take_pending_sigprof();
}

void osp__sigprof_back_off(void)
{
    if (!osp__is_active() || getpid() != osp__boot_pid())
        return;
    struct osp__registry *reg = sampler_cfg.registry;
    /* Wait out a tick in progress (later ticks see the flag signals.c has set), then, for at
     * most 100 ms, for signals of ours still on their way: none may merge with the
     * program's own SIGPROF (standard signals do not queue). */
    for (int waited = 0; waited < 100; waited++) {
        uint64_t now = osp__mono_ns();
        int in_flight = 0;
        if (lock_briefly(reg) != 0)
            return;
        for (uint32_t i = 0; i < reg->count && !in_flight; i++)
            in_flight = reg->slots[i]->active && signal_in_flight(reg->slots[i], now);
        pthread_mutex_unlock(&reg->lock);
        if (!in_flight)
            return;
        nap_us(1000);
    }
}

void osp__exec_failed(void)
{
    if (!osp__is_active() || getpid() != osp__boot_pid())
        return;
    atomic_fetch_sub_explicit(&execs_in_flight, 1, memory_order_seq_cst);
}

int osp__sampler_start(const struct osp__sampler_config *cfg)
{
    sampler_cfg = *cfg;
    atomic_store_explicit(&sampler_stop_flag, 0, memory_order_relaxed);
    atomic_store_explicit(&sampler_tid, 0, memory_order_relaxed);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, OSP__SAMPLER_STACK);
    /* The sampler must never take the program's signals: block them all while creating it
     * (it inherits the mask), then it unblocks SIGPROF alone. */
    sigset_t all, old;
    sigfillset(&all);
    osp__sigmask_libc(SIG_SETMASK, &all, &old); /* libc's: never blocks its own signals */
    int err = osp__real_pthread_create()(&sampler_thread, &attr, sampler_main, NULL);
    osp__sigmask_libc(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (err)
        return -err;
    sampler_started = 1;
    return 0;
}

int osp__sampler_stop(void)
{
    if (!sampler_started)
        return 0;
    sampler_started = 0;
    /* Release: pairs with the sampler's acquire load. */
    atomic_store_explicit(&sampler_stop_flag, 1, memory_order_release);
    /* Cut the sleep short (our handler ignores a thread without a slot) — unless the program
     * has its own SIGPROF handler by now, which must not see our signals. */
    pid_t tid = atomic_load_explicit(&sampler_tid, memory_order_acquire);
    if (tid > 0 && !osp__sigprof_foreign())
        osp__sigprof_send(tid);
    /* Bounded: exit() called from a signal handler that interrupted a registry-lock holder
     * would otherwise leave the sampler, and us, waiting for ever. */
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 1;
    return -pthread_timedjoin_np(sampler_thread, NULL, &limit);
}
