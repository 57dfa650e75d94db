/* fibers.c — whose samples a thread's are while a runtime runs one of its fibers on it.
 *
 * Owns osp__fiber_note: the fiber a runtime declared with osp_prof_fiber_switch (start.c keeps
 * its id and its label's address in the slot) reaches ospreyd as an OSP_REC_FIBER record in
 * the thread's own ring, written by the thread before a sample whenever the declared fiber is
 * not the one the ring last said. ospreyd gives the samples that follow to that fiber
 * (proto/osp_ring.h). A fiber switch itself writes nothing to the ring: only the thread's
 * handler (or its code with SIGPROF blocked) may produce into it, and a record per switch
 * would cost a runtime that switches a million times a second more than its samples. The label
 * likewise: the switch keeps its address (a copy there cost 8.3 ns a switch against 2.9-3.3
 * for the stores alone), and the record's writer reads it, without faulting, the first time
 * it meets the fiber, remembering the last OSP__FIBER_NAMES labels read.
 *
 * A reader that did not ask for the records (an older ospreyd, header.reader_features) gets
 * none, and the samples stay the thread's, as they always were.
 */
#include <sys/uio.h>

#include "osp_base.h"
#include "osp_core.h"

/* The label of fiber `id` at `label` (the runtime's string): remembered from an earlier
 * record, else read without faulting (a string gone, or never mapped, reads as far as it can:
 * nothing at worst) and remembered. Async-signal-safe (process_vm_readv). */
static const struct osp__fiber_name *fiber_name(struct osp__slot *s, int64_t id, const char *label)
{
    for (uint32_t i = 0; i < OSP__FIBER_NAMES; i++)
        if (s->fiber_names[i].id == id && s->fiber_names[i].label == label)
            return &s->fiber_names[i];
    struct osp__fiber_name *name = &s->fiber_names[s->fiber_names_next++ % OSP__FIBER_NAMES];
    name->id = id;
    name->label = label;
    name->len = 0;
    if (label == NULL)
        return name;
    /* One piece to the end of the label's page, one after it: the kernel stops at the first
     * it cannot read. */
    uint64_t at = (uint64_t)(uintptr_t)label, to_page_end = 4096u - (at & 4095u);
    size_t first = to_page_end < OSP_MAX_LABEL ? (size_t)to_page_end : OSP_MAX_LABEL;
    struct iovec local[2] = {{name->bytes, first}, {name->bytes + first, OSP_MAX_LABEL - first}};
    struct iovec remote[2] = {{(void *)(uintptr_t)at, first},
                              {(void *)(uintptr_t)(at + first), OSP_MAX_LABEL - first}};
    ssize_t got = osp__read_iov(local, remote, first < OSP_MAX_LABEL ? 2 : 1);
    while (got > 0 && name->len < (uint32_t)got && name->bytes[name->len] != '\0')
        name->len++;
    return name;
}

/* Async-signal-safe: loads and stores, the label's read once, the ring's reserve and commit. */
int osp__fiber_note(struct osp__event_ring *w, struct osp__slot *s)
{
    if (w != &s->ring || w->header == NULL ||
        !(atomic_load_explicit(&w->header->reader_features, memory_order_acquire) &
          OSP_READER_FIBERS))
        return 0;
    /* hi last (start.c): while it is 0 the thread is on its own stack or between the stores
     * of a switch, and the id and label are not read. */
    uint64_t hi = s->fiber_hi;
    atomic_signal_fence(memory_order_acquire);
    int64_t fiber = hi != 0 ? s->fiber_id : 0;
    if (fiber == s->fiber_written)
        return 0;
    const struct osp__fiber_name *name = fiber != 0 ? fiber_name(s, fiber, s->fiber_label) : NULL;
    struct osp_rec_fiber rec = {.slot = s->index,
                                .generation = s->generation,
                                .fiber = fiber,
                                .label_len = name != NULL ? name->len : 0};
    int rc = osp__event_ring_write(w, OSP_REC_FIBER, &rec, sizeof rec,
                                   name != NULL ? name->bytes : NULL, rec.label_len);
    if (rc != 0)
        return rc;
    s->fiber_written = fiber;
    return 0;
}
