/* event_ring.c — the producer side of the shared-memory event ring (proto/osp_ring.h).
 *
 * Owns the header's initial contents and every write to the data area: variable-length,
 * 8-byte-aligned records, a PAD record in front of any record that would cross the end of the
 * data area, and the head index.
 *
 * DESIGN. The orderings are the ones osp_ring.h draws:
 *   (A) the writer loads tail with acquire before deciding there is room, so it never
 *       overwrites bytes ospreyd has not finished reading (pairs with ospreyd's (D));
 *   (B) the writer stores head with release after writing the record bytes, so ospreyd never
 *       reads a record before it is complete (pairs with ospreyd's (C)).
 * A record that does not fit in the free space is not written at all; samples lost that way
 * are counted in header->dropped by the caller (osp__event_ring_count_drops). Samples stop
 * short of a full ring (OSP__CONTROL_HEADROOM stays free), so that when ospreyd falls behind
 * it loses samples, never the thread, image and exit records that give them meaning. The ring has
 * one producer at a time: every caller holds the registry lock, which also orders one producer's
 * head store before the next producer's relaxed load of it.
 *
 * The same writer serves each slot's sample ring (osp__slot_ring_attach): there the one
 * producer is the slot's own thread (its SIGPROF handler, or its own code with SIGPROF
 * blocked), so no lock is needed and every function here is async-signal-safe. How a record's
 * bytes and a PAD are laid out is proto/osp_ring_write.h's, shared with the tests and the fuzz
 * seeds.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "osp_core.h"
#include "osp_ring_write.h"

void osp__event_ring_init_header(struct osp_ring_header *h, uint64_t data_size, uint32_t rate_hz,
                                 uint64_t start_unix_ns, uint64_t start_mono_ns)
{
    osp_ring_header_init(h, data_size, (int32_t)getpid(), rate_hz, start_unix_ns, start_mono_ns,
                         OSP__CPU_PLATFORM);
    /* The header is complete before ospreyd is started (posix_spawn orders it); relaxed. */
    atomic_store_explicit(&h->shim_state, OSP_SHIM_RUNNING, memory_order_relaxed);
}

void osp__event_ring_attach(struct osp__event_ring *w, struct osp_ring_header *h)
{
    w->header = h;
    w->head = &h->head;
    w->tail = &h->tail;
    w->data = (uint8_t *)h + h->data_offset;
    w->size = h->data_size;
}

void osp__slot_ring_attach(struct osp__event_ring *w, struct osp_ring_header *h,
                           struct osp_slot *slot)
{
    w->header = h;
    w->head = &slot->head;
    w->tail = &slot->tail;
    w->data = (uint8_t *)(slot + 1);
    w->size = h->slot_ring_size;
}

static void *reserve(struct osp__event_ring *w, uint32_t size, uint64_t headroom,
                     uint64_t *new_head)
{
    if (size < sizeof(struct osp_rec_header) || (size & 7u) || size > w->size)
        return NULL;
    uint64_t head = osp_index_load_own(w->head);
    uint64_t tail = osp_index_load_acquire(w->tail); /* (A) */
    uint64_t offset = head & (w->size - 1);
    uint64_t to_end = w->size - offset;
    uint64_t pad = size > to_end ? to_end : 0;
    if (head - tail > w->size || w->size - (head - tail) < pad + size + headroom)
        return NULL; /* full (or a consumer that ran ahead: write nothing) */
    head += osp_ring_pad_before(w->data, w->size, head, size);
    *new_head = head + size;
    return w->data + (head & (w->size - 1));
}

void *osp__event_ring_reserve(struct osp__event_ring *w, uint32_t size, uint64_t *new_head)
{
    return reserve(w, size, 0, new_head);
}

void *osp__event_ring_reserve_sample(struct osp__event_ring *w, uint32_t size, uint64_t *new_head)
{
    uint64_t headroom = w->size / 4 < OSP__CONTROL_HEADROOM ? w->size / 4 : OSP__CONTROL_HEADROOM;
    return reserve(w, size, headroom, new_head);
}

void osp__ring_wake_collector(struct osp_ring_header *h)
{
    /* Seq_cst: the head store before the load of napping, against ospreyd's store of
     * OSP_NAPPING before it reads the fills again. Only past the mark: a ring under it costs
     * nothing more. */
    atomic_thread_fence(memory_order_seq_cst);
    uint32_t napping = OSP_NAPPING;
    if (atomic_load_explicit(&h->napping, memory_order_relaxed) != OSP_NAPPING ||
        !atomic_compare_exchange_strong_explicit(&h->napping, &napping, OSP_AWAKE,
                                                 memory_order_seq_cst, memory_order_relaxed))
        return;
    int32_t dpid = atomic_load_explicit(&h->daemon_pid, memory_order_relaxed);
    if (dpid <= 0 || (osp__forbidden & OSP__FORBIDS_KILL) ||
        osp__cpu_syscall(SYS_kill, dpid, SIGURG, 0, 0, 0) != 0)
        atomic_store_explicit(&h->napping, OSP_NAP_REFUSED, memory_order_relaxed);
}

/* Async-signal-safe (lock-free atomics, plain stores and the one wake above), as is reserve.
 * Below half full (the common case) it adds one relaxed load of the ring's tail, whose line
 * reserve has just read. */
void osp__event_ring_commit(struct osp__event_ring *w, uint64_t new_head)
{
    osp_index_store_release(w->head, new_head); /* (B) */
    if (w->header != NULL &&
        osp_ring_past_mark(new_head, atomic_load_explicit(w->tail, memory_order_relaxed), w->size))
        osp__ring_wake_collector(w->header);
}

int osp__event_ring_write(struct osp__event_ring *w, uint32_t type, const void *body,
                          uint32_t body_len, const void *tail, uint32_t tail_len)
{
    uint32_t size = osp_rec_align(body_len + tail_len);
    uint64_t new_head;
    uint8_t *rec = osp__event_ring_reserve(w, size, &new_head);
    if (rec == NULL)
        return -ENOSPC;
    osp_rec_encode(rec, type, body, body_len, tail, tail_len);
    osp__event_ring_commit(w, new_head);
    return 0;
}

void osp__event_ring_count_drops(struct osp__event_ring *w, uint64_t n)
{
    /* A count, not a synchronisation point (osp_ring.h): relaxed. */
    if (n) {
        atomic_fetch_add_explicit(&w->header->dropped, n, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->header->ring_full_drops, n, memory_order_relaxed);
    }
}
