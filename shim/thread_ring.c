/* thread_ring.c — the per-thread ring: one thread's SIGPROF handler hands finished samples to
 * the sampler thread through it.
 *
 * DESIGN. A fixed array of OSP__THREAD_RING_ENTRIES sample entries in private memory,
 * allocated with the thread's registry slot, so the handler never allocates. head and tail
 * are free-running 32-bit entry counters (lock-free on every target, hence usable from a
 * signal handler).
 *
 *   producer (SIGPROF handler)                  consumer (registry-lock holder)
 *   t = load(tail, acquire)         (A) <----   store(tail, release)        (D)
 *   fill entries[head % N]
 *   store(head, head + 1, release)  (B) ---->   h = load(head, acquire)     (C)
 *                                               read entries[tail % N]
 *
 * (A) pairs with (D): the handler never refills an entry the sampler is still reading.
 * (B) pairs with (C): the sampler never reads an entry before the handler has filled it.
 * When the ring is full the handler counts a drop (relaxed: a count, no data hangs off it)
 * and the sampler moves it into the shared header's `dropped`. The sampler drains every tick,
 * so the ring only has to absorb the few samples a late tick can leave behind.
 */
#include "osp_shim.h"

void osp__thread_ring_reset(struct osp__thread_ring *r)
{
    atomic_store_explicit(&r->head, 0, memory_order_relaxed);
    atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
    atomic_store_explicit(&r->drops, 0, memory_order_relaxed);
}

/* Async-signal-safe. */
struct osp__sample_entry *osp__thread_ring_reserve(struct osp__thread_ring *r)
{
    /* Only the producer stores head: relaxed. */
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire); /* (A) */
    if (head - tail >= OSP__THREAD_RING_ENTRIES) {
        atomic_fetch_add_explicit(&r->drops, 1, memory_order_relaxed);
        return NULL;
    }
    return &r->entries[head % OSP__THREAD_RING_ENTRIES];
}

/* Async-signal-safe. */
void osp__thread_ring_publish(struct osp__thread_ring *r)
{
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    atomic_store_explicit(&r->head, head + 1, memory_order_release); /* (B) */
}

const struct osp__sample_entry *osp__thread_ring_peek(struct osp__thread_ring *r)
{
    /* Only the consumer (serialised by the registry lock) stores tail: relaxed. */
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire); /* (C) */
    if (head == tail)
        return NULL;
    return &r->entries[tail % OSP__THREAD_RING_ENTRIES];
}

void osp__thread_ring_consume(struct osp__thread_ring *r)
{
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    atomic_store_explicit(&r->tail, tail + 1, memory_order_release); /* (D) */
}

uint32_t osp__thread_ring_take_drops(struct osp__thread_ring *r)
{
    /* A count moved from one counter to another: relaxed. */
    return atomic_exchange_explicit(&r->drops, 0, memory_order_relaxed);
}
