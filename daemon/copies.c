/* copies.c — samples held with a copy of their stack until the rows to walk it are published.
 *
 * Owns the collector's held copies (struct ospd_copies): a STACK_COPY record (proto/osp_ring.h,
 * "Stack copies") is kept at once as the handler walked it (collect.c), and its copy is held
 * here; after each drain that finds new rows published, each is walked by ospreyd's walker
 * of stack copies (stack-walk.c: the shim's step, proto/osp_unwind_step.h) from the resume
 * frame, and kept when that walk met no code whose rows are still being built (or no build is
 * pending any more, or the profile ends): the sample's stack becomes the handler's frames
 * below that frame followed by the copy's walk, with that walk's stop reason. Pure: the tables and
 * the collector are memory, so the tests drive it with synthetic rows and stacks.
 *
 * DESIGN (daemon/README.md, "Stack copies"). The sample is added when its record is read and
 * changed in place when its copy is walked, so the samples keep the order they were taken in
 * (the raw format's rule); one already written to the spill file keeps the handler's stack.
 * The held bytes are bounded (OSPD_COPIES_MAX_BYTES): past it the oldest are let go, their
 * samples keeping the handler's stack and its stop reason (a guess, said so). The
 * held ones are looked at again only when the table's generation moved or no build is left.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "osp_unwind.h"
#include "osp_unwind_step.h"
#include "ospd.h"
#include "ospd_attach.h"

int ospd_copies_hold(struct ospd_collector *c, uint64_t sample, const struct osp_rec_stack_copy *r,
                     const uint64_t *pcs, const uint8_t *bytes, uint32_t len)
{
    struct ospd_copies *h = &c->copies;
    if (len < 8 || r->sample.depth > OSP_MAX_DEPTH || r->resume >= r->sample.depth)
        return -EINVAL;
    if (h->count > 0 && h->bytes + len > OSPD_COPIES_MAX_BYTES) {
        /* The oldest let go: their samples keep the handler's stack (a guess, and said so). */
        uint32_t drop = 0;
        while (drop < h->count && h->bytes + len > OSPD_COPIES_MAX_BYTES) {
            h->bytes -= h->held[drop].len;
            free(h->held[drop].bytes);
            drop++;
        }
        memmove(h->held, h->held + drop, (size_t)(h->count - drop) * sizeof *h->held);
        h->count -= drop;
        h->kept += drop;
    }
    if (h->count == h->cap) {
        uint32_t cap = h->cap ? 2 * h->cap : 16;
        struct ospd_held_copy *held = realloc(h->held, (size_t)cap * sizeof *held);
        if (held == NULL)
            return -ENOMEM;
        h->held = held;
        h->cap = cap;
    }
    uint8_t *copy = malloc(len);
    if (copy == NULL)
        return -ENOMEM;
    memcpy(copy, bytes, len);
    struct ospd_held_copy *k = &h->held[h->count++];
    *k = (struct ospd_held_copy){.sample = sample,
                                 .resume = r->resume,
                                 .depth = r->sample.depth,
                                 .stop = r->sample.stop,
                                 .first = (r->flags & OSP_COPY_FIRST) != 0,
                                 .pc = r->pc,
                                 .sp = r->sp,
                                 .fp = r->fp,
                                 .lr = r->lr,
                                 .bytes = copy,
                                 .len = len};
    memcpy(k->pcs, pcs, (size_t)r->sample.depth * sizeof *pcs);
    h->bytes += len;
    return 0;
}

/* Walk held copy k: the sample's stack becomes its pcs below the resume frame, then the walk.
 * Unless `wait` and the walk met code whose rows are still being built: false, still held. */
static bool walk_one(struct ospd_collector *c, struct ospd_held_copy *k, const void *tables,
                     uint64_t tables_size, bool wait)
{
    uint64_t out[OSP_MAX_DEPTH];
    memcpy(out, k->pcs, (size_t)k->resume * sizeof *out);
    const struct ospd_stack_copy copy = {k->sp, k->bytes, k->len};
    const struct osp_unwind_regs regs = {k->pc, k->sp, k->fp, k->lr};
    enum osp_unwind_stop stop;
    struct osp_unwind_resume again;
    uint32_t n = ospd_walk_copy_regs(tables, tables_size, &regs, k->first, &copy, out + k->resume,
                                     OSP_MAX_DEPTH - k->resume, &stop, &again);
    if (wait && again.depth > 0)
        return false;
    if (ospd_collector_restack(c, k->sample, out, k->resume + n, stop) == 0)
        c->copies.walked++;
    else
        c->copies.kept++;
    return true;
}

uint32_t ospd_copies_walk(struct ospd_collector *c, const void *tables, uint64_t tables_size,
                          bool all)
{
    struct ospd_copies *h = &c->copies;
    if (h->count == 0)
        return 0;
    const struct osp_unwind_index *ix =
        tables != NULL ? osp_unwind_snapshot(tables, tables_size) : NULL;
    bool building = tables != NULL && osp_unwind_building(tables, tables_size);
    uint64_t generation = ix != NULL ? ix->generation : 0;
    if (!all && building && generation == h->tables_seen)
        return 0; /* nothing published since the last look */
    h->tables_seen = generation;
    uint32_t walked = 0, kept = 0;
    for (uint32_t i = 0; i < h->count; i++) {
        struct ospd_held_copy *k = &h->held[i];
        if (walk_one(c, k, tables, tables_size, building && !all)) {
            h->bytes -= k->len;
            free(k->bytes);
            walked++;
            continue;
        }
        h->held[kept++] = *k;
    }
    h->count = kept;
    return walked;
}

void ospd_copies_free(struct ospd_copies *h)
{
    for (uint32_t i = 0; i < h->count; i++)
        free(h->held[i].bytes);
    free(h->held);
    *h = (struct ospd_copies){0};
}
