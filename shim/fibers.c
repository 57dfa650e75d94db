/* fibers.c — whose samples a thread's are while a runtime runs one of its fibers on it.
 *
 * Owns osp__fiber_note: the fiber a runtime declared with osp_prof_fiber_switch (start.c keeps
 * its id and a copy of its label in the slot) reaches ospreyd as an OSP_REC_FIBER record in
 * the thread's own ring, written by the thread before a sample whenever the declared fiber is
 * not the one the ring last said. ospreyd gives the samples that follow to that fiber
 * (proto/osp_ring.h). A fiber switch itself writes nothing to the ring: only the thread's
 * handler (or its code with SIGPROF blocked) may produce into it, and a record per switch
 * would cost a runtime that switches a million times a second more than its samples.
 *
 * A reader that did not ask for the records (an older ospreyd, header.reader_features) gets
 * none, and the samples stay the thread's, as they always were.
 */
#include "osp_base.h"
#include "osp_core.h"

/* Async-signal-safe: loads and stores, and the ring's reserve and commit. */
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
    struct osp_rec_fiber rec = {.slot = s->index,
                                .generation = s->generation,
                                .fiber = fiber,
                                .label_len = fiber != 0 ? s->fiber_label_len : 0};
    int rc =
        osp__event_ring_write(w, OSP_REC_FIBER, &rec, sizeof rec, s->fiber_label, rec.label_len);
    if (rc != 0)
        return rc;
    s->fiber_written = fiber;
    return 0;
}
