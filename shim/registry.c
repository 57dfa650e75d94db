/* registry.c — the thread registry: which threads are sampled, under which fiber id and label.
 *
 * Owns the slots (one per registered thread, reused), their generation counters, the
 * THREAD_START / THREAD_END records, and the hand-over of a slot's per-thread ring into
 * SAMPLE records.
 *
 * DESIGN. A slot is allocated once and never freed while the profiler runs; it holds the
 * thread's identity, stack bounds, CPU clock and its per-thread ring, so the SIGPROF handler
 * finds everything through one initial-exec TLS pointer without allocating. A registration is
 * (slot, generation): unregistering ends the generation and frees the slot for the next
 * thread, which gets generation + 1, so ospreyd can tell the two apart.
 *
 * One mutex, the registry lock, guards the slot table and every slot's bookkeeping, and
 * serialises every writer of the event ring (so the ring has one producer at a time). The
 * sampler takes it for a whole tick: it revalidates `active` and the generation, drains, and
 * signals under it; unregister takes it before returning, so once unregister returns the
 * sampler can no longer signal the thread or read its stack. Lock order: registry, then
 * allocator — and no code allocates while it holds the registry lock (new slots are allocated
 * before it is taken), so a thread stopped inside malloc can never block the sampler.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osp_shim.h"

__thread struct osp__slot *osp__tls_slot __attribute__((tls_model("initial-exec")));

int osp__registry_init(struct osp__registry *reg, struct osp__event_ring *ring, uint32_t capacity)
{
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

void osp__registry_destroy(struct osp__registry *reg)
{
    for (uint32_t i = 0; i < reg->count; i++)
        free(reg->slots[i]);
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

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct osp__slot *slot_new(void)
{
    size_t size = (sizeof(struct osp__slot) + OSP_RING_CACHE_LINE - 1) & ~(OSP_RING_CACHE_LINE - 1);
    struct osp__slot *s = aligned_alloc(OSP_RING_CACHE_LINE, size);
    if (s)
        memset(s, 0, size);
    return s;
}

/* Called with the registry lock held. A free slot, or NULL. */
static struct osp__slot *slot_free(struct osp__registry *reg)
{
    for (uint32_t i = 0; i < reg->count; i++)
        if (!reg->slots[i]->active)
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

int osp__registry_register(struct osp__registry *reg, int64_t fiber, const char *label)
{
    if (osp__tls_slot != NULL)
        osp__registry_unregister(reg); /* a re-registration ends the old generation */

    /* Everything that may allocate or take other locks happens before the registry lock. */
    uint64_t lo, hi;
    stack_bounds(&lo, &hi);
    clockid_t cpu_clock;
    if (pthread_getcpuclockid(pthread_self(), &cpu_clock) != 0)
        cpu_clock = CLOCK_THREAD_CPUTIME_ID;
    struct osp__slot *spare = NULL;

    pthread_mutex_lock(&reg->lock);
    struct osp__slot *s = slot_free(reg);
    if (s == NULL && reg->count < reg->capacity) {
        pthread_mutex_unlock(&reg->lock);
        spare = slot_new();
        pthread_mutex_lock(&reg->lock);
        s = slot_free(reg); /* another thread may have freed one meanwhile */
        if (s == NULL && spare != NULL && reg->count < reg->capacity) {
            s = spare;
            spare = NULL;
            s->index = reg->count;
            reg->slots[reg->count++] = s;
        }
    }
    if (s == NULL) {
        pthread_mutex_unlock(&reg->lock);
        free(spare);
        return -ENOSPC;
    }
    s->generation++;
    s->fiber = fiber;
    s->tid = (int32_t)gettid();
    set_label(s, label);
    s->thread = pthread_self();
    s->cpu_clock = cpu_clock;
    s->stack_lo = lo;
    s->stack_hi = hi;
    s->last_cpu_ns = clock_ns(cpu_clock);
    s->cpu_valid = 1;
    atomic_store_explicit(&s->handler_cpu_ns, 0, memory_order_relaxed);
    s->wait_captured = 0;
    s->cpu_credit_ns = 0;
    s->signals_sent = atomic_load_explicit(&s->signals_handled, memory_order_relaxed);
    sigset_t mask;
    int blocked = osp__sigmask_raw(SIG_BLOCK, NULL, &mask) == 0 && sigismember(&mask, SIGPROF) == 1;
    atomic_store_explicit(&s->prof_blocked, blocked, memory_order_relaxed);
    atomic_store_explicit(&s->signal_state, OSP_STATE_ON_CPU, memory_order_relaxed);
    osp__thread_ring_reset(&s->ring);
    s->automatic = 0;
    emit_thread_start(reg, s);
    s->active = 1;
    pthread_mutex_unlock(&reg->lock);
    free(spare);

    osp__tls_slot = s;
    /* The handler on this thread reads the pointer; a compiler fence is all it needs. */
    atomic_signal_fence(memory_order_seq_cst);
    return 0;
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

    pthread_mutex_lock(&reg->lock);
    if (s->active) {
        osp__registry_drain_slot(reg, s);
        emit_thread_end(reg, s);
        s->active = 0;
    }
    pthread_mutex_unlock(&reg->lock);
}

void osp__registry_mark_automatic(struct osp__registry *reg)
{
    struct osp__slot *s = osp__tls_slot;
    if (s == NULL)
        return;
    pthread_mutex_lock(&reg->lock);
    s->automatic = 1;
    pthread_mutex_unlock(&reg->lock);
}

int osp__registry_rename(struct osp__registry *reg, pthread_t thread, const char *label)
{
    int renamed = 0;
    pthread_mutex_lock(&reg->lock);
    for (uint32_t i = 0; i < reg->count && !renamed; i++) {
        struct osp__slot *s = reg->slots[i];
        if (!s->active || !s->automatic || !pthread_equal(s->thread, thread))
            continue;
        /* Samples taken so far belong to the old name's generation. */
        osp__registry_drain_slot(reg, s);
        emit_thread_end(reg, s);
        s->generation++;
        set_label(s, label);
        s->wait_captured = 0; /* a REPEAT needs a stack of its own generation */
        emit_thread_start(reg, s);
        renamed = 1;
    }
    pthread_mutex_unlock(&reg->lock);
    return renamed;
}

/* Called with the registry lock held. */
void osp__registry_emit_sample(struct osp__registry *reg, struct osp__slot *s, uint64_t t_ns,
                               uint32_t state, const uint64_t *pcs, uint32_t depth)
{
    if (reg->ring == NULL || reg->stopped || depth == 0)
        return;
    if (depth > OSP_MAX_DEPTH)
        depth = OSP_MAX_DEPTH;
    uint32_t size = (uint32_t)sizeof(struct osp_rec_sample) + depth * 8u;
    uint64_t new_head;
    struct osp_rec_sample *rec = osp__event_ring_reserve_sample(reg->ring, size, &new_head);
    if (rec == NULL) {
        osp__event_ring_count_drops(reg->ring, 1);
        return;
    }
    rec->h.type = OSP_REC_SAMPLE;
    rec->h.size = size;
    rec->t_ns = t_ns;
    rec->slot = s->index;
    rec->generation = s->generation;
    rec->state = state;
    rec->depth = depth;
    memcpy(rec + 1, pcs, depth * 8u);
    osp__event_ring_commit(reg->ring, new_head);
    if (state == OSP_STATE_WAITING)
        s->wait_captured = 1; /* later samples of this wait may be REPEAT records */
}

/* Called with the registry lock held. */
void osp__registry_drain_slot(struct osp__registry *reg, struct osp__slot *s)
{
    const struct osp__sample_entry *e;
    while ((e = osp__thread_ring_peek(&s->ring)) != NULL) {
        osp__registry_emit_sample(reg, s, e->t_ns, e->state, e->pcs, e->depth);
        osp__thread_ring_consume(&s->ring);
    }
    uint32_t drops = osp__thread_ring_take_drops(&s->ring);
    if (drops && reg->ring)
        osp__event_ring_count_drops(reg->ring, drops);
}
