/* registry.c — the thread registry: which threads are sampled, under which fiber id and label.
 *
 * Owns the slots (one per registered thread, reused), their generation counters, the
 * THREAD_START / THREAD_END records, each thread's CPU-time timer (created at registration,
 * deleted at its end, disarmed all at once before exec and at exit), the open waits
 * written at exit, and the CPU time a thread's timers missed, paid as it ends, exits or returns
 * from fork. What a thread writes into its own slot is slot.c's.
 *
 * DESIGN. Slot i of the registry is slot i of the shared table (proto/osp_ring.h, "Slots"):
 * a private part here (identity, stack bounds, the handler's credit and wait) and a shared
 * control block and sample ring ospreyd reads. The SIGPROF handler finds its slot through one
 * initial-exec TLS pointer, without allocating. A registration is (slot, generation):
 * unregistering ends the generation; the slot is handed out again, with generation + 1, only
 * once ospreyd has drained its ring past the end (drained_generation), so samples of two
 * threads never share a ring.
 *
 * One mutex, the registry lock, guards the slot table and serialises every writer of the
 * event ring (so that ring has one producer at a time). A slot's own ring has one producer,
 * its thread. Lock order: registry, then allocator — no code allocates while it holds the
 * registry lock (new slots are allocated before it is taken).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_core.h"

__thread struct osp__slot *osp__tls_slot __attribute__((tls_model("initial-exec")));

static void after_fork_parent(void);

int osp__registry_init(struct osp__registry *reg, struct osp__event_ring *ring, uint32_t capacity)
{
    /* Once a process, and not again in a forked child that boots (the handlers and the flag
     * are its parent's, inherited). */
    static _Atomic int fork_handler;
    if (atomic_exchange_explicit(&fork_handler, 1, memory_order_relaxed) == 0)
        pthread_atfork(NULL, after_fork_parent, NULL);
    memset(reg, 0, sizeof(*reg));
    reg->slots = calloc(capacity, sizeof(*reg->slots));
    if (reg->slots == NULL)
        return -ENOMEM;
    int err = pthread_mutex_init(&reg->lock, NULL);
    if (err) {
        free(reg->slots);
        reg->slots = NULL;
        return -err;
    }
    reg->ring = ring;
    reg->capacity = capacity;
    return 0;
}

void osp__registry_set_table(struct osp__registry *reg, struct osp_ring_header *header)
{
    reg->header = header;
    if (header != NULL && header->slot_count < reg->capacity)
        reg->capacity = header->slot_count;
    reg->rate_hz = header != NULL ? header->rate_hz : 0;
}

/* The shared control block of slot `index`. */
static struct osp_slot *shared_slot(struct osp__registry *reg, uint32_t index)
{
    return osp_slot_at((uint8_t *)reg->header + reg->header->slots_offset,
                       reg->header->slot_ring_size, index);
}

static void slot_drop(struct osp__slot *s);

void osp__registry_destroy(struct osp__registry *reg)
{
    for (uint32_t i = 0; i < reg->count; i++)
        slot_drop(reg->slots[i]);
    free(reg->slots);
    pthread_mutex_destroy(&reg->lock);
    memset(reg, 0, sizeof(*reg));
}

/* Stack bounds of the calling thread; [0, 0) when unknown (every walk then stops at the pc). */
static void stack_bounds(uint64_t *lo, uint64_t *hi)
{
    pthread_attr_t attr;
    *lo = *hi = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        *lo = (uint64_t)(uintptr_t)addr;
        *hi = *lo + size;
    }
    pthread_attr_destroy(&attr);
}

/* Our timers' ids are the program's business too: a program's first timer_create gets id 0
 * plain, and a sweep deleting ids 0..63 must not delete ours. Where the kernel lets a process
 * choose a timer's id (PR_TIMER_CREATE_RESTORE_IDS, Linux 6.16), ours are taken from the top
 * of the range down, and the kernel's cursor is put back at 0 by a timer made and deleted at
 * INT_MAX: the program's ids are then as without us. The window is closed to the program's
 * own timer_create (the interposer takes the same lock). */
static pthread_mutex_t timer_ids_lock = PTHREAD_MUTEX_INITIALIZER;
/* Our timers that exist: each holds one of the user's queued signals (RLIMIT_SIGPENDING,
 * `ulimit -i`) for as long as it lives. */
static _Atomic int live_timers;
static _Atomic int timer_ids_choosable = 1; /* until the kernel says otherwise */
static int next_timer_id = INT32_MAX - 1;   /* under timer_ids_lock */

void osp__timer_ids_lock(void)
{
    osp__mutex_lock(&timer_ids_lock);
}

void osp__timer_ids_unlock(void)
{
    pthread_mutex_unlock(&timer_ids_lock);
}

void osp__timer_ids_after_fork(void)
{
    /* A thread of the parent's may have held it; a new process's ids start afresh. */
    pthread_mutex_init(&timer_ids_lock, NULL);
    next_timer_id = INT32_MAX - 1;
    atomic_store_explicit(&live_timers, 0, memory_order_relaxed); /* the parent's */
}

/* Create a timer of the calling thread on `clock`: SIGPROF to itself, tagged as ours. Returns
 * its kernel id, or -1. */
static int thread_timer_create(clockid_t clock)
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
    if (atomic_load_explicit(&timer_ids_choosable, memory_order_relaxed) &&
        !(osp__forbidden & OSP__FORBIDS_TIMER_IDS)) {
        osp__mutex_lock(&timer_ids_lock);
        int chose = osp__sys(SYS_prctl, OSP__PR_TIMER_CREATE_RESTORE_IDS, 1, 0, 0, 0) == 0;
        int made = -1;
        for (int attempt = 0; chose && made != 0 && attempt < 8 && next_timer_id > 1 << 30;
             attempt++) {
            timer = next_timer_id--;
            made = (int)osp__sys(SYS_timer_create, clock, (long)&sev, (long)&timer, 0, 0);
        }
        if (chose) {
            /* The cursor back at 0: the next id the kernel picks for the program is the lowest
             * free one, as if ours did not exist. */
            int top = INT32_MAX;
            struct sigevent none = {.sigev_notify = SIGEV_NONE};
            if (osp__sys(SYS_timer_create, CLOCK_MONOTONIC, (long)&none, (long)&top, 0, 0) == 0)
                osp__sys(SYS_timer_delete, top, 0, 0, 0, 0);
            osp__sys(SYS_prctl, OSP__PR_TIMER_CREATE_RESTORE_IDS, 0, 0, 0, 0);
        } else {
            atomic_store_explicit(&timer_ids_choosable, 0, memory_order_relaxed);
        }
        pthread_mutex_unlock(&timer_ids_lock);
        if (made == 0)
            return timer;
        timer = -1;
    }
    if (osp__sys(SYS_timer_create, clock, (long)&sev, (long)&timer, 0, 0) != 0)
        return -1;
    return timer;
}

/* Once ours hold half the user's queued signals or more, one line says so: the program's own
 * timers and sigqueue()s draw on what is left. */
static void timers_counted(int made)
{
    int live = atomic_fetch_add_explicit(&live_timers, made, memory_order_relaxed) + made;
    static _Atomic int warned;
    struct rlimit limit;
    if (made <= 0 || atomic_load_explicit(&warned, memory_order_relaxed) ||
        getrlimit(RLIMIT_SIGPENDING, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
        (rlim_t)live * 2 < limit.rlim_cur)
        return;
    if (!atomic_exchange_explicit(&warned, 1, memory_order_relaxed))
        osp__warn("the profiler's sampling timers hold %d of the %llu queued signals this user "
                  "may have (ulimit -i); the program's own timers and queued signals share the "
                  "other %llu",
                  live, (unsigned long long)limit.rlim_cur,
                  (unsigned long long)(limit.rlim_cur - (rlim_t)live));
}

static void thread_timer_delete(int timer)
{
    if (timer >= 0) {
        osp__sys(SYS_timer_delete, timer, 0, 0, 0, 0);
        timers_counted(-1);
    }
}

/* Called with the registry lock held: may slot s be handed out again? Not while ospreyd may
 * still read samples of its last generation from its ring. */
static int reusable(const struct osp__slot *s)
{
    if (s->active)
        return 0;
    if (s->shared == NULL)
        return 1;
    /* Acquire: pairs with ospreyd's release store after it drained the slot. */
    return atomic_load_explicit(&s->shared->drained_generation, memory_order_acquire) ==
           s->generation;
}

static struct osp__slot *slot_new(void)
{
    size_t size = (sizeof(struct osp__slot) + OSP_RING_CACHE_LINE - 1) & ~(OSP_RING_CACHE_LINE - 1);
    struct osp__slot *s = aligned_alloc(OSP_RING_CACHE_LINE, size);
    if (s == NULL)
        return NULL;
    memset(s, 0, size);
    /* The handler's copy of a stack that is not the thread's (stacks.c): address space only
     * until a sample is taken on one. Without it such samples keep their pc alone. */
    void *copy = mmap(NULL, OSP__STACK_COPY_MAX, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    s->stack_copy = copy != MAP_FAILED ? copy : NULL;
    return s;
}

/* A slot made and not used. */
static void slot_drop(struct osp__slot *s)
{
    if (s != NULL && s->stack_copy != NULL)
        munmap(s->stack_copy, OSP__STACK_COPY_MAX);
    free(s);
}

/* Called with the registry lock held. A free slot, or NULL. */
static struct osp__slot *slot_free(struct osp__registry *reg)
{
    for (uint32_t i = 0; i < reg->count; i++)
        if (reusable(reg->slots[i]))
            return reg->slots[i];
    return NULL;
}

static void set_label(struct osp__slot *s, const char *label)
{
    if (label == NULL)
        label = "";
    size_t len = strnlen(label, OSP_MAX_LABEL);
    memcpy(s->label, label, len);
    s->label[len] = '\0';
    s->label_len = (uint32_t)len;
}

/* Called with the registry lock held. */
static void emit_thread_start(struct osp__registry *reg, struct osp__slot *s)
{
    if (reg->ring == NULL || reg->stopped)
        return;
    struct osp_rec_thread_start rec = {
        .slot = s->index,
        .generation = s->generation,
        .fiber = s->fiber,
        .tid = s->tid,
        .label_len = s->label_len,
    };
    osp__event_ring_write(reg->ring, OSP_REC_THREAD_START, &rec, sizeof(rec), s->label,
                          s->label_len);
}

/* Called with the registry lock held. */
static void emit_thread_end(struct osp__registry *reg, struct osp__slot *s)
{
    if (reg->ring == NULL || reg->stopped)
        return;
    struct osp_rec_thread_end rec = {.slot = s->index, .generation = s->generation};
    osp__event_ring_write(reg->ring, OSP_REC_THREAD_END, &rec, sizeof(rec), NULL, 0);
}

/* The signal stack this thread got from us, if any: our handler runs there (SA_ONSTACK), so
 * the kernel's signal frame (3.4 KB with AVX-512 state) and the handler never land on a small
 * thread stack or a coroutine's. Only a thread without a signal stack of its own gets one; the
 * program's sigaltstack calls never see it (signals.c) and replace it as they would nothing. */
static __thread struct {
    void *base; /* the mapping, guard page first */
    size_t size;
} altstack __attribute__((tls_model("initial-exec")));

#define ALTSTACK_SIZE  (64u << 10)
#define ALTSTACK_GUARD 4096u

static void altstack_take(void)
{
    stack_t current;
    if (altstack.base != NULL || osp__sys(SYS_sigaltstack, 0, (long)&current, 0, 0, 0) != 0 ||
        !(current.ss_flags & SS_DISABLE))
        return; /* ours already, or the program's own */
    void *map = mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (map == MAP_FAILED)
        return; /* the handler runs on the thread's stack, as before */
    mprotect(map, ALTSTACK_GUARD, PROT_NONE);
    stack_t ss = {.ss_sp = (char *)map + ALTSTACK_GUARD,
                  .ss_size = ALTSTACK_SIZE - ALTSTACK_GUARD,
                  .ss_flags = 0};
    if (osp__sys(SYS_sigaltstack, (long)&ss, 0, 0, 0, 0) != 0) {
        munmap(map, ALTSTACK_SIZE);
        return;
    }
    altstack.base = map;
    altstack.size = ALTSTACK_SIZE;
}

/* Called on the thread when it leaves the registry: SIGPROF of ours no longer comes. */
static void altstack_give_back(void)
{
    if (altstack.base == NULL)
        return;
    stack_t current, off = {.ss_flags = SS_DISABLE};
    if (osp__sys(SYS_sigaltstack, 0, (long)&current, 0, 0, 0) == 0 &&
        current.ss_sp == (char *)altstack.base + ALTSTACK_GUARD && !(current.ss_flags & SS_ONSTACK))
        osp__sys(SYS_sigaltstack, (long)&off, 0, 0, 0, 0);
    else if (current.ss_flags & SS_ONSTACK)
        return; /* running on it (a handler unregistering): leave it installed */
    munmap(altstack.base, altstack.size);
    altstack.base = NULL;
}

int osp__altstack_is_ours(const void *ss_sp)
{
    return altstack.base != NULL && ss_sp == (char *)altstack.base + ALTSTACK_GUARD;
}

void osp__altstack_replaced(void)
{
    if (altstack.base != NULL)
        munmap(altstack.base, altstack.size);
    altstack.base = NULL;
}

int osp__registry_register(struct osp__registry *reg, int64_t fiber, const char *label)
{
    if (osp__tls_slot != NULL)
        osp__registry_unregister(reg); /* a re-registration ends the old generation */

    /* Everything that may allocate or take other locks happens before the registry lock. */
    uint64_t lo, hi;
    stack_bounds(&lo, &hi);
    int timer = reg->header != NULL ? thread_timer_create(CLOCK_THREAD_CPUTIME_ID) : -1;
    int wall_timer = reg->header != NULL ? thread_timer_create(CLOCK_MONOTONIC) : -1;
    timers_counted((timer >= 0) + (wall_timer >= 0));
    if (reg->header != NULL && (timer < 0 || wall_timer < 0)) {
        /* Each timer holds a queued-signal slot of the user's RLIMIT_SIGPENDING: a user with
         * very many timers or pending signals can run out. Said once; the thread runs on. */
        int err = errno;
        static _Atomic int warned;
        if (!atomic_exchange_explicit(&warned, 1, memory_order_relaxed))
            osp__warn("cannot create a thread's sampling timers (%s); such threads are %s",
                      strerror(err),
                      wall_timer < 0 ? "not sampled" : "not sampled after their first wait");
    }
    struct osp__slot *spare = NULL;

    osp__mutex_lock(&reg->lock);
    struct osp__slot *s = slot_free(reg);
    if (s == NULL && reg->count < reg->capacity) {
        pthread_mutex_unlock(&reg->lock);
        spare = slot_new();
        osp__mutex_lock(&reg->lock);
        s = slot_free(reg); /* another thread may have freed one meanwhile */
        if (s == NULL && spare != NULL && reg->count < reg->capacity) {
            s = spare;
            spare = NULL;
            s->index = reg->count;
            s->timer = -1;
            s->wall_timer = -1;
            if (reg->header != NULL) {
                s->shared = shared_slot(reg, s->index);
                osp__slot_ring_attach(&s->ring, reg->header, s->shared);
            }
            reg->slots[reg->count++] = s;
            if (reg->header != NULL) {
                /* Release: ospreyd that sees the mark sees the slot's pointers set. */
                atomic_store_explicit(&reg->header->slot_high_water, reg->count,
                                      memory_order_release);
                /* Half the table made: an ended thread's slot is handed out again only once
                 * ospreyd has read its ring, which a napping one does up to 250 ms late. */
                if (reg->count >= reg->capacity / 2)
                    osp__ring_wake_collector(reg->header);
            }
        }
    }
    if (s == NULL) {
        int warn = !reg->full_warned;
        reg->full_warned = 1;
        uint32_t cap = reg->capacity;
        pthread_mutex_unlock(&reg->lock);
        slot_drop(spare);
        thread_timer_delete(timer);
        thread_timer_delete(wall_timer);
        if (warn)
            osp__warn("more than %u threads at once: threads started beyond that are not profiled",
                      cap);
        return -ENOSPC;
    }
    s->generation++;
    s->fiber = fiber;
    s->tid = (int32_t)gettid();
    set_label(s, label);
    s->thread = pthread_self();
    s->stack_lo = lo;
    s->stack_hi = hi;
    s->timer = timer;
    s->timer_expiry_cpu_ns = 0;
    s->wall_timer = wall_timer;
    s->wall_due_ns = 0;
    s->last_run_ns = osp__clock_ns(CLOCK_MONOTONIC);
    s->last_cpu_ns = osp__clock_ns(CLOCK_THREAD_CPUTIME_ID);
    s->read_run_ns = s->last_run_ns;
    s->read_cpu_ns = s->last_cpu_ns;
    s->wall_periodic = 0;
    s->credit.paid_ns = s->last_cpu_ns; /* CPU time before registration is not ours to count */
    s->registered_cpu_ns = s->last_cpu_ns;
    s->wait_open = 0;
    s->wait_carry_ns = 0;
    s->in_guard = 0;
    s->timing = OSP__TIMING_NONE;
    s->timing_deferred = 0;
    s->timed_end_ns = 0;
    s->sampling_held = 0;
    s->guard_leaving = 0;
    s->automatic = 0;
    s->start_pc = 0;
    s->fiber_written = 0; /* a registration starts on the thread's own stack (fibers.c) */
    memset(s->fiber_names, 0, sizeof s->fiber_names);
    /* Relaxed: the THREAD_START record's commit (release) publishes it to ospreyd, which
     * counts the thread's waits from here. */
    if (s->shared != NULL)
        atomic_store_explicit(&s->shared->registered_ns, s->last_run_ns, memory_order_relaxed);
    emit_thread_start(reg, s);
    if (s->shared != NULL) {
        struct osp_slot *c = s->shared;
        sigset_t mask;
        int blocked =
            osp__sigmask_raw(SIG_BLOCK, NULL, &mask) == 0 && sigismember(&mask, SIGPROF) == 1;
        atomic_store_explicit(&c->flags, blocked ? OSP_SLOT_PROF_BLOCKED : 0u,
                              memory_order_relaxed);
        atomic_store_explicit(&c->tid, s->tid, memory_order_relaxed);
        atomic_store_explicit(&c->generation, s->generation, memory_order_relaxed);
        /* Relaxed: advisory for ospreyd, which reads a RUNNING slot's ring (the attention bit
         * below orders it). The thread's sampling timer, armed below, sets the pace. */
        atomic_store_explicit(&c->next_due_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&c->state, OSP_SLOT_RUNNING, memory_order_relaxed);
    }
    s->active = 1;
    osp__slot_wants_attention(s);
    pthread_mutex_unlock(&reg->lock);
    slot_drop(spare);

    if (reg->header != NULL)
        altstack_take();
    /* The credit starts at a random phase of a period, uniform in [-period/2, period/2): the
     * credit rule pays periods rounded to the nearest, so a thread is paid its CPU time in
     * expectation however short it is (a thread that ends with credit no longer always loses
     * it: 2000 threads of 300 us each were once recorded as nothing). */
    s->jitter_state = (s->last_run_ns ^ ((uint64_t)(uint32_t)s->tid << 32)) | 1u;
    s->jitter_state ^= s->jitter_state << 13;
    s->jitter_state ^= s->jitter_state >> 7;
    s->jitter_state ^= s->jitter_state << 17;
    uint64_t phase = osp__period_ns ? s->jitter_state % osp__period_ns : 0;
    s->credit.paid_ns = s->last_cpu_ns + osp__period_ns / 2 - phase;
    uint64_t needed = osp__credit_needed(&s->credit, s->last_cpu_ns, osp__period_ns);

    osp__tls_slot = s;
    /* The handler on this thread reads the pointer; a compiler fence is all it needs. */
    atomic_signal_fence(memory_order_seq_cst);
    /* The first sample: when that credit reaches half a period (the credit rule's due time). */
    osp__slot_arm_sampling(s, s->last_run_ns + needed);
    return 0;
}

/* The CPU time the timers of slot `s` (the calling thread's, its handler out of the way)
 * had no chance to sample (a thread shorter than a period, or one that ended before its next
 * sample), paid now, rounded by the credit rule: with the random phase it started at, a thread
 * is paid its CPU time in expectation. The stack is `depth` pcs of `pcs`, whose walk ended for
 * `stop`; with none (NULL), the thread's start routine (ours is no place for it; its walk not
 * said), or ours when it has none (the exporters leave the profiler's frames out). */
/* The calling thread's stack here, ours first (the exporters leave the profiler's frames out),
 * into pcs (OSP_MAX_DEPTH of them); its depth, and why its walk ended in *stop. */
static __attribute__((noinline)) uint32_t stack_here(struct osp__slot *s, uint64_t *pcs,
                                                     enum osp_unwind_stop *stop)
{
    uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0), lo;
    uint64_t hi = osp__stack_in_place(s, fp, &lo);
    uint32_t depth = osp__unwind_caller_why(fp, 0, fp < lo ? lo : fp, hi, pcs, OSP_MAX_DEPTH, stop);
    /* A frame whose return address could not be read (an exit handler called by the loader
     * through a pointer) is left out, not named 0. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < depth; i++)
        if (pcs[i] != 0)
            pcs[kept++] = pcs[i];
    return kept;
}

static void pay_rest(struct osp__slot *s, uint64_t now, uint64_t cpu, const uint64_t *pcs,
                     uint32_t depth, enum osp_unwind_stop stop)
{
    uint64_t needed;
    uint32_t weight = osp__credit_take(&s->credit, cpu, osp__period_ns, &needed);
    if (weight == 0)
        return;
    if (pcs == NULL) {
        depth = 1;
        s->sample_pcs[0] = s->start_pc;
        stop = OSP_UNWIND_GO_ON;
        if (s->start_pc == 0)
            depth = stack_here(s, s->sample_pcs, &stop);
        pcs = s->sample_pcs;
    }
    if (depth > 0 &&
        osp__emit_sample(&s->ring, s, now, OSP_STATE_ON_CPU, weight, pcs, depth, stop) != 0)
        osp__event_ring_count_drops(&s->ring, weight);
}

void osp__registry_pay_at_exit(struct osp__registry *reg)
{
    struct osp__slot *s = osp__tls_slot;
    /* Where the thread was last seen running: its latest on-CPU sample's stack; else the one
     * that called exit (ours first, which the exporters leave out). */
    if (s != NULL && s->active && !reg->stopped && s->shared != NULL)
        pay_rest(s, osp__clock_ns(CLOCK_MONOTONIC), osp__clock_ns(CLOCK_THREAD_CPUTIME_ID),
                 s->sample_depth > 0 ? s->sample_pcs : NULL, s->sample_depth, s->sample_stop);
}

/* pthread_atfork's parent handler: the CPU time the thread that forked has used since its last
 * sample, paid now at fork's stack (as a call's end pays with the credit rule, rounded to whole
 * periods), and that stack kept as where it was last seen running. fork's work is mostly the
 * kernel's (the copy of the address space) and a thread that forks and waits runs in bursts its
 * timers seldom see (the CPU-time timer fires at a tick that finds it running): a parent of 200
 * short children had 12-15 of its ~20 periods paid at its exit, at exit's stack, where perf puts
 * them in fork. Not while the thread is inside our own code, nor once the profile has stopped
 * or the program entered a sandbox. */
static void after_fork_parent(void)
{
    struct osp__slot *s = osp__tls_slot;
    struct osp__registry *reg = &osp__the_registry;
    /* Relaxed: one-way flags (handler.c reads them so too). */
    if (s == NULL || !s->active || s->shared == NULL || reg->stopped || !osp__is_active() ||
        atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) ||
        (osp__header != NULL && atomic_load_explicit(&osp__header->stopped, memory_order_relaxed)))
        return;
    sigset_t old;
    if (osp__sigprof_mask_raw(SIG_BLOCK, &old) != 0)
        return;
    /* The handler, blocked now, is the only other writer of the thread's ring: not when SIGPROF
     * was blocked already (a fork from a signal handler that interrupted ours, or inside a
     * guarded call) or the thread is writing a timed call's wait. */
    if (!sigismember(&old, SIGPROF) && s->timing == OSP__TIMING_NONE) {
        enum osp_unwind_stop stop = OSP_UNWIND_GO_ON;
        uint32_t depth = stack_here(s, s->capture_pcs, &stop);
        uint64_t paid = s->credit.paid_ns;
        pay_rest(s, osp__clock_ns(CLOCK_MONOTONIC), osp__clock_ns(CLOCK_THREAD_CPUTIME_ID),
                 s->capture_pcs, depth, stop);
        if (s->credit.paid_ns != paid) { /* a sample written: fork's stack is the latest */
            memcpy(s->sample_pcs, s->capture_pcs, depth * sizeof(uint64_t));
            s->sample_depth = depth;
            s->sample_stop = stop;
        }
    }
    osp__sigmask_raw(SIG_SETMASK, &old, NULL);
}

void osp__registry_unregister(struct osp__registry *reg)
{
    struct osp__slot *s = osp__tls_slot;
    if (s == NULL)
        return;
    /* From here on a SIGPROF on this thread records nothing. A handler cannot be running on
     * this thread right now (it would have to finish before this code continues). */
    osp__tls_slot = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    thread_timer_delete(s->timer);
    s->timer = -1;
    thread_timer_delete(s->wall_timer);
    s->wall_timer = -1;
    altstack_give_back();
    /* The handler no longer runs for this slot: its ring and wait are ours to finish, and the
     * CPU time its timers had no chance to sample is paid (pay_rest) where the thread was last
     * seen running, its latest on-CPU sample's stack, as at the program's exit; its start
     * routine only when it has none. A worker that runs in bursts its timers seldom see
     * (ffmpeg's slice threads under load) had it as the start routine's own time, a frame
     * that runs nothing itself; one its timers never saw at all still has it there. */
    if (!reg->stopped && s->shared != NULL) {
        uint64_t now = osp__clock_ns(CLOCK_MONOTONIC), cpu = osp__clock_ns(CLOCK_THREAD_CPUTIME_ID);
        osp__close_wait(&s->ring, s, now, cpu);
        pay_rest(s, now, cpu, s->sample_depth > 0 ? s->sample_pcs : NULL, s->sample_depth,
                 s->sample_stop);
    }

    osp__mutex_lock(&reg->lock);
    if (s->active) {
        if (s->shared != NULL)
            atomic_store_explicit(&s->shared->state, OSP_SLOT_FREE, memory_order_relaxed);
        emit_thread_end(reg, s);
        s->active = 0;
    }
    pthread_mutex_unlock(&reg->lock);
}

void osp__registry_mark_automatic(struct osp__registry *reg, uint64_t start_pc)
{
    struct osp__slot *s = osp__tls_slot;
    if (s == NULL)
        return;
    s->start_pc = start_pc; /* the thread's own: read by itself only */
    osp__mutex_lock(&reg->lock);
    s->automatic = 1;
    pthread_mutex_unlock(&reg->lock);
    /* Born under our pthread_create: all of its CPU time is its own, the start and the
     * registration included (tens of microseconds, a tenth of a 300 us thread's under load).
     * The credit counts from its birth; SIGPROF is held off while it changes. */
    sigset_t old;
    if (osp__sigprof_mask_raw(SIG_BLOCK, &old) != 0)
        return;
    s->credit.paid_ns -= s->registered_cpu_ns;
    s->registered_cpu_ns = 0;
    uint64_t cpu = osp__clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t needed = osp__credit_needed(&s->credit, cpu, osp__period_ns);
    osp__slot_arm_sampling(s, osp__clock_ns(CLOCK_MONOTONIC) + needed);
    osp__sigmask_raw(SIG_SETMASK, &old, NULL);
}

int osp__registry_rename(struct osp__registry *reg, pthread_t thread, const char *label)
{
    int renamed = 0;
    osp__mutex_lock(&reg->lock);
    for (uint32_t i = 0; i < reg->count && !renamed; i++) {
        struct osp__slot *s = reg->slots[i];
        if (!s->active || !s->automatic || !pthread_equal(s->thread, thread))
            continue;
        /* Samples taken so far belong to the old name's generation (ospreyd reads the slot
         * ring up to the THREAD_END record; later samples name the new generation). */
        emit_thread_end(reg, s);
        s->generation++;
        set_label(s, label);
        emit_thread_start(reg, s);
        if (s->shared != NULL)
            atomic_store_explicit(&s->shared->generation, s->generation, memory_order_relaxed);
        renamed = 1;
    }
    pthread_mutex_unlock(&reg->lock);
    return renamed;
}

void osp__registry_flush_waits(struct osp__registry *reg, uint64_t now_ns)
{
    if (reg->ring == NULL || reg->stopped)
        return;
    for (uint32_t i = 0; i < reg->count; i++) {
        struct osp__slot *s = reg->slots[i];
        if (!s->active || !s->wait_open)
            continue;
        if (s == osp__tls_slot) {
            /* The exiting thread itself: it runs now, so its wait ended at its last CPU use. */
            osp__close_wait(reg->ring, s, now_ns, osp__clock_ns(CLOCK_THREAD_CPUTIME_ID));
            continue;
        }
        /* Another thread's wait, read while that thread is blocked (its handler does not run
         * on a blocked thread; a stale read costs one wait's record). */
        osp__close_wait(reg->ring, s, now_ns, s->wait_cpu_ns);
    }
}

int osp__registry_lock_briefly(struct osp__registry *reg)
{
    for (int tries = 0; tries < 500; tries++) {
        if (pthread_mutex_trylock(&reg->lock) == 0)
            return 0;
        osp__nap_us(100);
    }
    return -1;
}

int osp__registry_recorded(struct osp__registry *reg)
{
    for (uint32_t i = 0; i < reg->count; i++)
        /* Relaxed: the writers are this process's threads, stopped or ours to ignore now. */
        if (reg->slots[i]->shared != NULL &&
            atomic_load_explicit(&reg->slots[i]->shared->head, memory_order_relaxed) != 0)
            return 1;
    return 0;
}

void osp__registry_disarm_timers(struct osp__registry *reg)
{
    if (reg->slots == NULL || osp__registry_lock_briefly(reg) != 0)
        return;
    struct itimerspec off = {{0, 0}, {0, 0}};
    for (uint32_t i = 0; i < reg->count; i++) {
        struct osp__slot *s = reg->slots[i];
        if (s->active && s->timer >= 0)
            osp__sys(SYS_timer_settime, s->timer, 0, (long)&off, 0, 0);
        if (s->active && s->wall_timer >= 0)
            osp__sys(SYS_timer_settime, s->wall_timer, 0, (long)&off, 0, 0);
        s->wall_periodic = 0; /* a handler that still sees 1 arms nothing: the net does */
    }
    pthread_mutex_unlock(&reg->lock);
}

void osp__registry_rearm_sampling(struct osp__registry *reg)
{
    if (reg->slots == NULL || osp__registry_lock_briefly(reg) != 0)
        return;
    uint64_t at = osp__clock_ns(CLOCK_MONOTONIC) + osp__period_ns;
    struct itimerspec its = {{0, 0}, {(time_t)(at / 1000000000u), (long)(at % 1000000000u)}};
    for (uint32_t i = 0; i < reg->count; i++) {
        struct osp__slot *s = reg->slots[i];
        if (s->active && s->wall_timer >= 0)
            osp__sys(SYS_timer_settime, s->wall_timer, TIMER_ABSTIME, (long)&its, 0, 0);
        s->wall_periodic = 0; /* once, as osp__slot_arm_sampling arms it */
    }
    pthread_mutex_unlock(&reg->lock);
}
