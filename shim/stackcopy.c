/* stackcopy.c — a sample whose stack cannot be walked yet, written with a copy of its stack.
 *
 * Owns the STACK_COPY record (proto/osp_ring.h, "Stack copies") and the handler's side of the
 * ring's pool of copy buffers: while ospreyd is still building rows, a walk that reaches code
 * no published row covers follows frame pointers through it (a guess: frameless code skips
 * its callers); the handler then copies the stack from that frame up, at most a buffer's
 * bytes, into a free buffer and writes the sample with the copy's place, so that ospreyd walks
 * it again by the same step once the rows exist. Once every row is published the walk meets
 * no such frame and nothing here runs.
 *
 * DESIGN (figures in shim/README.md, "Stack copies while rows are built"). The copy is not in
 * the slot ring: a slot's ring is 4 KiB, a useful copy 32 KiB. The pool is OSP_COPY_MAX_COUNT
 * buffers at most, shared by the process's threads, claimed with one compare-exchange on
 * copies_busy and freed by ospreyd as it reads each record (or here, when the record found
 * no room): a thread cannot fill the ring with copies, and no buffer is ever overwritten
 * before ospreyd copied it out. Every buffer busy (ospreyd late): the sample goes as the
 * handler walked it, counted in copies_refused. Nor is a copy's record (56 bytes more than the
 * sample's) written into a ring more than half full (a quarter before the collector attached):
 * copies never make a ring drop samples. The bytes are read with process_vm_readv
 * (osp__read_iov), page by page, 32 KiB a call, no further than the thread's stack goes: a
 * stack page that cannot be read ends the copy, never faults. A copy that fills its buffer is
 * read on by ospreyd from the live stack (daemon/copies.c), not made larger here: the program
 * pays for no more memory and no longer reads.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "osp_base.h"
#include "osp_core.h"

/* Bytes one system call of osp__stack_copy_read reads at most: its vectors are on the handler's
 * stack (a program's signal stack may be small), a page each. */
#define OSP__COPY_PIECE (32u << 10)

/* Pieces of OSP__COPY_PIECE, each one piece to a page end then whole pages, so that an
 * unreadable page ends the copy there. Async-signal-safe. */
size_t osp__stack_copy_read(uint64_t sp, uint8_t *buf, uint32_t size)
{
    struct iovec local[OSP__COPY_PIECE / 4096u + 1], remote[OSP__COPY_PIECE / 4096u + 1];
    uint64_t done = 0;
    while (done < size) {
        unsigned long n = 0;
        uint64_t at = sp + done, asked = 0;
        while (done + asked < size && asked < OSP__COPY_PIECE && n < sizeof local / sizeof *local) {
            uint64_t piece = 4096u - (at & 4095u);
            if (piece > size - done - asked)
                piece = size - done - asked;
            local[n] = (struct iovec){buf + done + asked, piece};
            remote[n] = (struct iovec){(void *)(uintptr_t)at, piece};
            n++;
            at += piece;
            asked += piece;
        }
        ssize_t got = osp__read_iov(local, remote, n);
        if (got > 0)
            done += (uint64_t)got;
        if (got < 0 || (uint64_t)got < asked)
            break; /* an unreadable page: the copy ends there */
    }
    return (size_t)done;
}

/* How much of the thread's ring a copy's record may find used: half while the collector reads
 * copies (it said so at its attach); a quarter before any collector attached (the ospreyd the
 * shim started, on a loaded machine 100 ms and more after the first samples, whose ring fills
 * meanwhile: records of copies, 56 bytes longer, must not make it drop samples); 0 (no copy)
 * once a collector that does not read them attached. Async-signal-safe. */
static uint64_t room_for_copies(struct osp_ring_header *h, const struct osp__event_ring *w)
{
    /* Acquire: pairs with ospreyd's release after it read the pool's fields. */
    if (atomic_load_explicit(&h->copies_read, memory_order_acquire))
        return w->size / 2;
    if (atomic_load_explicit(&h->daemon_state, memory_order_acquire) == OSP_DAEMON_NONE)
        return w->size / 4;
    return 0;
}

/* Async-signal-safe: one compare-exchange, process_vm_readv, the slot ring. */
int osp__emit_stack_copy(struct osp__event_ring *w, struct osp__slot *s, uint64_t t_ns,
                         uint32_t weight, const uint64_t *pcs, uint32_t depth,
                         enum osp_unwind_stop stop, const struct osp_unwind_resume *resume)
{
    struct osp_ring_header *h = osp__header;
    if (h == NULL || w->data == NULL || h->copy_count == 0 || h->copy_size < 4096u ||
        resume->depth == 0 || resume->depth > depth || depth > OSP_MAX_DEPTH || weight == 0)
        return -EBUSY;
    uint32_t rec_size = (uint32_t)sizeof(struct osp_rec_stack_copy) + depth * 8u;
    /* Acquire: (A), the bytes ospreyd read are free. */
    uint64_t used = osp_index_load_own(w->head) - osp_index_load_acquire(w->tail);
    if (used + rec_size > room_for_copies(h, w))
        return -EBUSY; /* the sample as it is: the ring's room is for samples */
    uint32_t count = h->copy_count < OSP_COPY_MAX_COUNT ? h->copy_count : OSP_COPY_MAX_COUNT;
    uint32_t size = h->copy_size < OSP_COPY_MAX_SIZE ? h->copy_size : OSP_COPY_MAX_SIZE;
    uint64_t all = count == 64u ? ~UINT64_C(0) : (UINT64_C(1) << count) - 1u;
    /* Acquire: pairs with ospreyd's release as it frees a buffer, after reading it. */
    uint64_t busy = atomic_load_explicit(&h->copies_busy, memory_order_acquire);
    uint32_t k;
    for (;;) {
        uint64_t free = ~busy & all;
        if (free == 0) {
            atomic_fetch_add_explicit(&h->copies_refused, 1, memory_order_relaxed);
            return -EBUSY;
        }
        k = (uint32_t)__builtin_ctzll(free);
        if (atomic_compare_exchange_weak_explicit(&h->copies_busy, &busy, busy | UINT64_C(1) << k,
                                                  memory_order_acquire, memory_order_acquire))
            break;
    }
    if (osp__fiber_note(w, s) != 0) { /* the fiber's record first, as before a sample */
        atomic_fetch_and_explicit(&h->copies_busy, ~(UINT64_C(1) << k), memory_order_relaxed);
        return -ENOSPC;
    }
    uint8_t *buf = (uint8_t *)h + h->copies_offset + (uint64_t)k * size;
    /* No further than the thread's stack goes, when the frame is on it: what lies above is no
     * frame's (a pthread's stack is followed by other memory, readable). */
    uint64_t sp = resume->regs.sp;
    uint32_t want = size;
    if (sp >= s->stack_lo && sp < s->stack_hi && s->stack_hi - sp < want)
        want = (uint32_t)(s->stack_hi - sp);
    size_t got = osp__stack_copy_read(sp, buf, want);
    uint64_t new_head;
    struct osp_rec_stack_copy *rec =
        got >= 8 ? osp__event_ring_reserve(w, rec_size, &new_head) : NULL;
    if (rec == NULL) {
        atomic_fetch_and_explicit(&h->copies_busy, ~(UINT64_C(1) << k), memory_order_relaxed);
        atomic_fetch_add_explicit(&h->copies_refused, 1, memory_order_relaxed);
        return got >= 8 ? -ENOSPC : -EBUSY;
    }
    osp__sample_record(&rec->sample, OSP_REC_STACK_COPY, rec_size, s, t_ns, OSP_STATE_ON_CPU,
                       weight, depth, stop);
    rec->resume = resume->depth - 1;
    rec->flags = resume->first ? OSP_COPY_FIRST : 0;
    rec->pc = resume->regs.pc;
    rec->sp = resume->regs.sp;
    rec->fp = resume->regs.fp;
    rec->lr = resume->regs.lr;
    rec->copy_index = k;
    rec->copy_len = (uint32_t)got;
    rec->copy_base = resume->regs.sp;
    memcpy(rec + 1, pcs, depth * 8u);
    osp__event_ring_commit(w, new_head);
    return 0;
}
