/* collect.c — the collector and the event-ring parser: checks a ring header, walks the
 * records between tail and head, and turns them into threads, images, interned stacks and
 * compact samples. A pure function over (header, data): no system calls, so the tests drive
 * it with hand-built and deliberately corrupted rings. (The one exception: a collector told to
 * spill its samples writes each full batch to its spill file, spill.c.)
 *
 * The ring lives in memory the target can write at any time, so nothing read from it is
 * trusted: each record header is copied out and checked (size >= 8, a multiple of 8, inside
 * the data area, not past head) before the record body is copied into a local buffer and
 * checked field by field (exact size for its type, depth, lengths, slot numbers, state).
 * The framing is checked by ospd_ring_walk, the ring's one reader, which hands each record's
 * copy to a visitor: ospd_parse's is the collector (the shim tests' stand-in consumer has
 * another). A structural violation rejects the ring (ospd_parse returns -EPROTO with one line in
 * c->error); a record the daemon merely cannot keep (memory, limits, a sample naming no live
 * registration) is counted as lost and parsing goes on.
 *
 * The rooms: this file reads the records into the collector; ring-walk.c checks the header and
 * frames the records, collector.c sets up, names and frees the collector; ospd_collect.h holds
 * what they share.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osp_unwind_step.h"
#include "ospd.h"
#include "ospd_collect.h"

/* A user-space code address is below 2^63 on every 64-bit Linux target. */
#define ADDRESS_LIMIT (UINT64_C(1) << 63)

/* The registration a sample names, or NULL (counted as lost) when none is live. */
static struct ospd_slot *sample_slot(struct ospd_collector *c, uint32_t slot, uint32_t generation)
{
    if (slot < c->slots_cap && c->slots[slot].used && c->slots[slot].generation == generation)
        return &c->slots[slot];
    if (c->slot_mode) {
        /* A newer registration than the one known: its THREAD_START comes later. */
        bool known = slot < c->slots_cap && c->slots[slot].used;
        if (!known || (int32_t)(generation - c->slots[slot].generation) > 0) {
            c->deferred = true;
            return NULL;
        }
    }
    c->unknown_thread++;
    c->lost++;
    return NULL;
}

static void add_sample(struct ospd_collector *c, uint64_t t_ns, uint32_t thread, uint32_t stack,
                       uint32_t state, uint32_t weight);
void ospd_collect_add(struct ospd_collector *c, uint64_t t_ns, uint32_t thread, uint32_t stack,
                      uint32_t state, uint32_t weight)
{
    add_sample(c, t_ns, thread, stack, state, weight);
}

static void add_sample(struct ospd_collector *c, uint64_t t_ns, uint32_t thread, uint32_t stack,
                       uint32_t state, uint32_t weight)
{
    /* A full batch goes to the spill file (when there is one) before the table grows. */
    if (c->spill_batch > 0 && c->sample_count >= c->spill_batch)
        ospd_spill_flush(c);
    bool must_grow = c->sample_count == c->samples_cap;
    if (c->sample_count >= OSPD_MAX_SAMPLES ||
        (must_grow && ospd_collector_table_bytes(c) >= c->memory_limit) ||
        ospd_grow((void **)&c->samples, &c->samples_cap, c->sample_count + 1, sizeof *c->samples) !=
            0) {
        c->lost += weight;
        c->memory_lost += weight;
        return;
    }
    uint64_t t_rel = t_ns > c->start_mono_ns ? t_ns - c->start_mono_ns : 0;
    if (t_rel >= ADDRESS_LIMIT)
        t_rel = ADDRESS_LIMIT - 1; /* keep it a JSON integer any reader takes */
    c->samples[c->sample_count++] = (struct ospd_sample){
        .t_rel_ns = t_rel, .thread = thread, .stack_state = stack << 1 | state, .weight = weight};
}

/* A record of `fixed` bytes then a label (its length at `len_at`, its slot at `slot_at`)
 * copied into `r` and checked: its size, the label's length, the slot number. */
static int copy_labelled(struct ospd_collector *c, const char *what, const uint8_t *rec,
                         uint32_t size, void *r, uint32_t fixed, size_t len_at, size_t slot_at)
{
    if (size < fixed)
        return reject(c, "%s record of %" PRIu32 " bytes, shorter than its header", what, size);
    memcpy(r, rec, fixed);
    uint32_t label_len, slot;
    memcpy(&label_len, rec + len_at, sizeof label_len);
    memcpy(&slot, rec + slot_at, sizeof slot);
    if (label_len > OSP_MAX_LABEL)
        return reject(c, "%s label_len %" PRIu32 " exceeds %u", what, label_len, OSP_MAX_LABEL);
    if (size != osp_rec_align(fixed + label_len))
        return reject(c, "%s record of %" PRIu32 " bytes for a %" PRIu32 "-byte label", what, size,
                      label_len);
    if (slot >= OSPD_MAX_SLOTS)
        return reject(c, "%s slot %" PRIu32 " exceeds %u", what, slot, OSPD_MAX_SLOTS);
    return 0;
}

#define COPY_LABELLED(c, what, rec, size, r)                                                       \
    copy_labelled(c, what, rec, size, &(r), sizeof(r), offsetof(__typeof__(r), label_len),         \
                  offsetof(__typeof__(r), slot))

static int on_thread_start(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_thread_start r;
    int rc = COPY_LABELLED(c, "thread-start", rec, size, r);
    if (rc != 0)
        return rc;
    /* The shim writes gettid(); a negative one is a corrupt record, and the raw format (and
     * so the exporters' reader) has no room for it. */
    if (r.tid < 0)
        return reject(c, "thread-start tid %" PRId32 " is not a thread id", r.tid);

    char *label = ospd_utf8_sanitize((const char *)rec + sizeof r, r.label_len);
    if (label == NULL)
        return 0;
    ospd_collector_thread(c, r.slot, r.generation, r.fiber, r.tid, label);
    return 0;
}

int64_t ospd_collector_thread(struct ospd_collector *c, uint32_t slot_number, uint32_t generation,
                              int64_t fiber, int32_t tid, char *label)
{
    if (slot_number >= OSPD_MAX_SLOTS || tid < 0) {
        free(label);
        return -EINVAL;
    }
    if (slot_number >= c->slots_cap) {
        uint64_t cap = c->slots_cap;
        if (ospd_grow((void **)&c->slots, &cap, (uint64_t)slot_number + 1, sizeof *c->slots) != 0) {
            free(label);
            return -ENOMEM; /* its samples will name no registration and count as lost */
        }
        memset(c->slots + c->slots_cap, 0, (size_t)(cap - c->slots_cap) * sizeof *c->slots);
        c->slots_cap = (uint32_t)cap;
    }
    struct ospd_slot *slot = &c->slots[slot_number];
    slot->used = false; /* a new registration replaces the slot's previous one */

    uint64_t threads_cap = c->threads_cap;
    if (c->thread_count >= OSPD_MAX_THREADS ||
        ospd_grow((void **)&c->threads, &threads_cap, (uint64_t)c->thread_count + 1,
                  sizeof *c->threads) != 0) {
        free(label);
        return -ENOMEM;
    }
    c->threads_cap = (uint32_t)threads_cap;
    c->threads[c->thread_count] = (struct ospd_thread){
        .fiber = fiber, .tid = tid, .slot = slot_number, .generation = generation, .label = label};
    *slot = (struct ospd_slot){.generation = generation,
                               .thread = c->thread_count,
                               .on_thread = c->thread_count,
                               .last_stack = -1,
                               .used = true};
    c->thread_count++;
    ospd_waits_thread_started(c, c->thread_count - 1);
    return c->thread_count - 1;
}

/* The entry of fiber `fiber` declared on the registration of `slot` (made the first time),
 * which takes `label`; the registration's own when none can be made. */
static uint32_t declared_fiber(struct ospd_collector *c, const struct ospd_slot *slot,
                               int64_t fiber, char *label)
{
    const struct ospd_thread *own = &c->threads[slot->thread];
    for (uint32_t i = slot->thread + 1; i < c->thread_count; i++) {
        struct ospd_thread *t = &c->threads[i];
        if (t->declared && t->fiber == fiber && t->slot == own->slot &&
            t->generation == own->generation) {
            free(t->label); /* an id names one fiber: the last label given is its */
            t->label = label;
            return i;
        }
    }
    uint64_t threads_cap = c->threads_cap;
    if (c->thread_count >= OSPD_MAX_THREADS ||
        ospd_grow((void **)&c->threads, &threads_cap, (uint64_t)c->thread_count + 1,
                  sizeof *c->threads) != 0) {
        free(label);
        return slot->thread;
    }
    c->threads_cap = (uint32_t)threads_cap;
    own = &c->threads[slot->thread];
    c->threads[c->thread_count] = (struct ospd_thread){.fiber = fiber,
                                                       .tid = own->tid,
                                                       .slot = own->slot,
                                                       .generation = own->generation,
                                                       .label = label,
                                                       .declared = true};
    return c->thread_count++;
}

static int on_fiber(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_fiber r;
    int rc = COPY_LABELLED(c, "fiber", rec, size, r);
    if (rc != 0)
        return rc;
    if (r.slot >= c->slots_cap || !c->slots[r.slot].used ||
        c->slots[r.slot].generation != r.generation) {
        /* A newer registration than the one known: its THREAD_START comes later. Else the
         * samples that follow name no live registration and are counted there. */
        if (c->slot_mode && (r.slot >= c->slots_cap || !c->slots[r.slot].used ||
                             (int32_t)(r.generation - c->slots[r.slot].generation) > 0))
            c->deferred = true;
        return 0;
    }
    struct ospd_slot *slot = &c->slots[r.slot];
    if (r.fiber == 0) {
        slot->on_thread = slot->thread;
        return 0;
    }
    char *label = ospd_utf8_sanitize((const char *)rec + sizeof r, r.label_len);
    if (label == NULL) {
        slot->on_thread = slot->thread;
        return 0;
    }
    slot->on_thread = declared_fiber(c, slot, r.fiber, label);
    return 0;
}

static int on_thread_end(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_thread_end r;
    if (size != sizeof r)
        return reject(c, "thread-end record of %" PRIu32 " bytes, expected %zu", size, sizeof r);
    memcpy(&r, rec, sizeof r);
    if (r.slot >= OSPD_MAX_SLOTS)
        return reject(c, "thread-end slot %" PRIu32 " exceeds %u", r.slot, OSPD_MAX_SLOTS);
    /* The registration stays known: samples the thread wrote before it left may still be in
     * its slot ring, and they belong to it. The next thread-start of the slot replaces it. */
    if (r.slot < c->slots_cap && c->slots[r.slot].used &&
        c->slots[r.slot].generation == r.generation)
        ospd_waits_thread_ended(c, c->slots[r.slot].thread);
    if (c->on_thread_end != NULL && !c->slot_mode)
        c->on_thread_end(c->ctx, r.slot, r.generation);
    return 0;
}

/* The stack pcs[0..count) (count <= OSP_MAX_DEPTH) as an interned index, cut at the first
 * frame no user-space code can live at; -EINVAL when no frame is left, else -ENOMEM or, over
 * budget, -ENOENT (only stacks already known can be used then). */
static int64_t intern_pcs(struct ospd_collector *c, const uint64_t *pcs, uint32_t count,
                          bool kernel_first)
{
    uint32_t depth = 0;
    while (kernel_first && depth < count && pcs[depth] >= OSPD_KERNEL_PC)
        depth++; /* an attach's kernel frames, below the user ones */
    while (depth < count && pcs[depth] < ADDRESS_LIMIT)
        depth++;
    if (depth == 0)
        return -EINVAL;
    return ospd_collector_table_bytes(c) >= c->memory_limit
               ? ospd_intern_lookup(&c->stacks, pcs, depth)
               : ospd_intern(&c->stacks, pcs, depth);
}

/* The same for a record's `count` pcs (count checked by the caller). */
static int64_t intern_record_pcs(struct ospd_collector *c, const uint8_t *at, uint32_t count)
{
    uint64_t pcs[OSP_MAX_DEPTH];
    memcpy(pcs, at, (size_t)count * sizeof *pcs);
    return intern_pcs(c, pcs, count, false);
}

static int64_t sample_pcs(struct ospd_collector *c, uint64_t t_ns, uint32_t thread,
                          const uint64_t *pcs, uint32_t depth, uint32_t state, uint32_t weight,
                          bool kernel_first);

static int on_sample(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_sample r;
    uint32_t weight = 1, stop = 0;
    size_t header = sizeof r;
    if (((const struct osp_rec_header *)rec)->type == OSP_REC_SAMPLE_WEIGHTED) {
        struct osp_rec_sample_weighted w;
        if (size < sizeof w)
            return reject(c, "sample record of %" PRIu32 " bytes, shorter than its header", size);
        memcpy(&w, rec, sizeof w);
        r = (struct osp_rec_sample){.h = w.h,
                                    .t_ns = w.t_ns,
                                    .slot = w.slot,
                                    .generation = w.generation,
                                    .state = w.state,
                                    .depth = w.depth};
        weight = w.weight;
        stop = w.stop;
        header = sizeof w;
        if (weight == 0)
            return reject(c, "sample weight 0");
        if (stop >= OSP_UNWIND_STOP_COUNT)
            return reject(c, "sample stop reason %" PRIu32 " outside 0..%u", stop,
                          OSP_UNWIND_STOP_COUNT - 1);
    } else {
        if (size < sizeof r)
            return reject(c, "sample record of %" PRIu32 " bytes, shorter than its header", size);
        memcpy(&r, rec, sizeof r);
    }
    if (r.depth < 1 || r.depth > OSP_MAX_DEPTH)
        return reject(c, "sample depth %" PRIu32 " outside 1..%u", r.depth, OSP_MAX_DEPTH);
    if (size != header + (size_t)r.depth * sizeof(uint64_t))
        return reject(c, "sample record of %" PRIu32 " bytes for depth %" PRIu32, size, r.depth);
    if (r.state > OSP_STATE_WAITING)
        return reject(c, "sample state %" PRIu32 " is neither on-CPU nor waiting", r.state);
    if (r.slot >= OSPD_MAX_SLOTS)
        return reject(c, "sample slot %" PRIu32 " exceeds %u", r.slot, OSPD_MAX_SLOTS);
    struct ospd_slot *slot = sample_slot(c, r.slot, r.generation);
    if (slot == NULL)
        return 0;

    uint64_t pcs[OSP_MAX_DEPTH];
    memcpy(pcs, rec + header, (size_t)r.depth * sizeof *pcs);
    int64_t stack = sample_pcs(c, r.t_ns, slot->on_thread, pcs, r.depth, r.state, weight, false);
    if (stack >= 0)
        ospd_stack_set_end(&c->stacks, (uint32_t)stack, stop);
    return 0;
}

/* A record of `what` whose fixed part of `fixed` bytes is followed by `depth` pcs: 0, or the
 * ring rejected when the depth or the size does not hold. */
static int check_pcs(struct ospd_collector *c, const char *what, uint32_t size, size_t fixed,
                     uint32_t depth)
{
    if (depth < 1 || depth > OSP_MAX_DEPTH)
        return reject(c, "%s depth %" PRIu32 " outside 1..%u", what, depth, OSP_MAX_DEPTH);
    if (size != fixed + (size_t)depth * sizeof(uint64_t))
        return reject(c, "%s record of %" PRIu32 " bytes for depth %" PRIu32, what, size, depth);
    return 0;
}

/* A buffer of the pool read: the shim may take it again. Release: the bytes were read before. */
static void free_copy(struct ospd_collector *c, uint32_t index)
{
    if (c->copies_busy != NULL && index < 64u)
        atomic_fetch_and_explicit(c->copies_busy, ~(UINT64_C(1) << index), memory_order_release);
}

/* A sample with a copy of its stack (proto/osp_ring.h, "Stack copies"): kept as the handler
 * walked it, and held with the copy's bytes (copies.c) until its rows are published. */
static int on_stack_copy(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_stack_copy r;
    if (size < sizeof r)
        return reject(c, "stack-copy record of %" PRIu32 " bytes, shorter than its header", size);
    memcpy(&r, rec, sizeof r);
    int rc = check_pcs(c, "stack-copy", size, sizeof r, r.sample.depth);
    if (rc != 0)
        return rc;
    if (r.sample.state != OSP_STATE_ON_CPU)
        return reject(c, "stack-copy state %" PRIu32 " is not on-CPU", r.sample.state);
    if (r.sample.weight == 0)
        return reject(c, "stack-copy weight 0");
    if (r.sample.stop >= OSP_UNWIND_STOP_COUNT)
        return reject(c, "stack-copy stop reason %" PRIu32 " outside 0..%u", r.sample.stop,
                      OSP_UNWIND_STOP_COUNT - 1);
    if (r.resume >= r.sample.depth)
        return reject(c, "stack-copy resume frame %" PRIu32 " past depth %" PRIu32, r.resume,
                      r.sample.depth);
    if (r.sample.slot >= OSPD_MAX_SLOTS)
        return reject(c, "stack-copy slot %" PRIu32 " exceeds %u", r.sample.slot, OSPD_MAX_SLOTS);
    if (c->copy_pool != NULL && (r.copy_index >= c->copy_count || r.copy_len > c->copy_size))
        return reject(c,
                      "stack copy %" PRIu32 " of %" PRIu32 " bytes outside the pool's %" PRIu32
                      " buffers of %" PRIu32,
                      r.copy_index, r.copy_len, c->copy_count, c->copy_size);
    struct ospd_slot *slot = sample_slot(c, r.sample.slot, r.sample.generation);
    if (slot == NULL) {
        if (!c->deferred) /* read again later, when its thread is known: the buffer too */
            free_copy(c, r.copy_index);
        return 0;
    }
    c->copies.taken++;
    uint64_t pcs[OSP_MAX_DEPTH];
    memcpy(pcs, rec + sizeof r, (size_t)r.sample.depth * sizeof *pcs);
    uint64_t before = c->spilled + c->sample_count;
    int64_t stack = sample_pcs(c, r.sample.t_ns, slot->on_thread, pcs, r.sample.depth,
                               OSP_STATE_ON_CPU, r.sample.weight, false);
    if (stack >= 0)
        ospd_stack_set_end(&c->stacks, (uint32_t)stack, r.sample.stop);
    if (stack >= 0 && c->spilled + c->sample_count == before + 1 && c->copy_pool != NULL &&
        r.copy_base == r.sp)
        ospd_copies_hold(c, before, &r, pcs, c->copy_pool + (uint64_t)r.copy_index * c->copy_size,
                         r.copy_len);
    free_copy(c, r.copy_index);
    return 0;
}

int ospd_collector_restack(struct ospd_collector *c, uint64_t sample, const uint64_t *pcs,
                           uint32_t depth, uint32_t stop)
{
    if (sample < c->spilled || sample - c->spilled >= c->sample_count)
        return -ENOENT;
    int64_t stack = intern_pcs(c, pcs, depth, false);
    if (stack < 0)
        return -ENOENT;
    ospd_stack_set_end(&c->stacks, (uint32_t)stack, stop);
    struct ospd_sample *s = &c->samples[sample - c->spilled];
    s->stack_state = (uint32_t)stack << 1 | (s->stack_state & 1u);
    return 0;
}

/* A sample of `thread` (ospd_collector_sample); kernel_first: pcs may begin with kernel frames
 * (an attach's), else the stack ends at the first address beyond user space (a ring's). */
static int64_t sample_pcs(struct ospd_collector *c, uint64_t t_ns, uint32_t thread,
                          const uint64_t *pcs, uint32_t depth, uint32_t state, uint32_t weight,
                          bool kernel_first)
{
    int64_t stack = intern_pcs(c, pcs, depth, kernel_first);
    if (stack < 0) {
        c->lost += weight;
        if (stack != -EINVAL)
            c->memory_lost += weight;
        return stack;
    }
    const struct ospd_thread *t = &c->threads[thread];
    if (t->slot < c->slots_cap && c->slots[t->slot].used &&
        c->slots[t->slot].generation == t->generation)
        c->slots[t->slot].last_stack = stack;
    add_sample(c, t_ns, thread, (uint32_t)stack, state, weight);
    return stack;
}

int64_t ospd_collector_sample(struct ospd_collector *c, uint64_t t_ns, uint32_t thread,
                              const uint64_t *pcs, uint32_t depth, uint32_t state, uint32_t weight)
{
    return sample_pcs(c, t_ns, thread, pcs, depth, state, weight, true);
}

static int on_wait_span(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_wait_span r;
    if (size < sizeof r)
        return reject(c, "wait-span record of %" PRIu32 " bytes, shorter than its header", size);
    memcpy(&r, rec, sizeof r);
    int rc = check_pcs(c, "wait-span", size, sizeof r, r.depth);
    if (rc != 0)
        return rc;
    if (r.slot >= OSPD_MAX_SLOTS)
        return reject(c, "wait-span slot %" PRIu32 " exceeds %u", r.slot, OSPD_MAX_SLOTS);
    struct ospd_slot *slot = sample_slot(c, r.slot, r.generation);
    if (slot == NULL)
        return 0;
    int64_t stack = intern_record_pcs(c, rec + sizeof r, r.depth);
    if (stack >= 0)
        ospd_waits_span(c, slot->thread, r.t_ns, r.end_ns, r.flags, (uint32_t)stack);
    return 0;
}

static int on_repeat(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_repeat r;
    if (size != sizeof r)
        return reject(c, "repeat record of %" PRIu32 " bytes, expected %zu", size, sizeof r);
    memcpy(&r, rec, sizeof r);
    if (r.state > OSP_STATE_WAITING)
        return reject(c, "repeat state %" PRIu32 " is neither on-CPU nor waiting", r.state);
    if (r.slot >= OSPD_MAX_SLOTS)
        return reject(c, "repeat slot %" PRIu32 " exceeds %u", r.slot, OSPD_MAX_SLOTS);
    struct ospd_slot *slot = sample_slot(c, r.slot, r.generation);
    if (slot == NULL)
        return 0;
    if (slot->last_stack < 0) {
        c->orphan_repeats++;
        c->lost++;
        return 0;
    }
    add_sample(c, r.t_ns, slot->on_thread, (uint32_t)slot->last_stack, r.state, 1);
    return 0;
}

/* A record of `header` bytes and a path of `path_len` after it: 0, or the ring rejected. */
static int check_path_record(struct ospd_collector *c, const char *what, uint32_t size,
                             size_t header, uint32_t path_len)
{
    if (path_len > OSP_MAX_PATH)
        return reject(c, "%s path_len %" PRIu32 " exceeds %u", what, path_len, OSP_MAX_PATH);
    if (size != osp_rec_align((uint32_t)header + path_len))
        return reject(c, "%s record of %" PRIu32 " bytes for a %" PRIu32 "-byte path", what, size,
                      path_len);
    return 0;
}

#define OSPD_MAX_ESCAPED 4096u /* processes named as unprofiled; later ones are left out */

static int on_escaped(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_escaped r;
    if (size < sizeof r)
        return reject(c, "escape record of %" PRIu32 " bytes, shorter than its header", size);
    memcpy(&r, rec, sizeof r);
    if (check_path_record(c, "escape", size, sizeof r, r.path_len) != 0)
        return -EPROTO;
    if (r.reason != OSP_ESCAPE_ENVIRONMENT && r.reason != OSP_ESCAPE_PRELOAD)
        return reject(c, "escape record with unknown reason %" PRIu32, r.reason);
    char *path = ospd_utf8_sanitize((const char *)rec + sizeof r, r.path_len);
    if (path != NULL)
        ospd_collector_escaped(c, r.pid > 0 ? r.pid : 0, r.reason, path);
    return 0;
}

void ospd_collector_escaped(struct ospd_collector *c, int32_t pid, uint32_t reason, char *path)
{
    uint64_t cap = c->escaped_cap;
    if (c->escaped_count >= OSPD_MAX_ESCAPED ||
        ospd_grow((void **)&c->escaped, &cap, (uint64_t)c->escaped_count + 1, sizeof *c->escaped) !=
            0) {
        free(path);
        return;
    }
    c->escaped_cap = (uint32_t)cap;
    c->escaped[c->escaped_count++] =
        (struct ospd_escaped){.pid = pid, .reason = reason, .path = path};
}

/* An object loaded again where it was unloaded, with nothing else mapped over its code in
 * between (a program that opens and closes one library in a loop): its image, which then
 * covers the gap too, rather than one image a load. NULL when another image overlapped it
 * since. */
static struct ospd_image *reloaded_in_place(struct ospd_collector *c, uint64_t base, uint64_t text,
                                            uint64_t text_size, const char *path)
{
    for (uint32_t i = c->image_count; text_size > 0 && i-- > 0;) {
        struct ospd_image *im = &c->images[i];
        if (im->unloaded_ns != 0 && im->base == base && im->text == text &&
            im->text_size == text_size && strcmp(im->path, path) == 0)
            return im;
        if (im->text < text + text_size && text < im->text + im->text_size)
            return NULL;
    }
    return NULL;
}

static int on_image(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_image r;
    if (size < sizeof r)
        return reject(c, "image record of %" PRIu32 " bytes, shorter than its header", size);
    memcpy(&r, rec, sizeof r);
    if (check_path_record(c, "image", size, sizeof r, r.path_len) != 0)
        return -EPROTO;
    /* The text range must end below ADDRESS_LIMIT as a whole, not just start there: the raw
     * format holds text + text_size as a JSON integer, and the exporters refuse a range that
     * overflows it. */
    if (r.base >= ADDRESS_LIMIT || r.text >= ADDRESS_LIMIT ||
        r.text_size > ADDRESS_LIMIT - 1 - r.text)
        return 0; /* not a user-space image; nothing can be attributed to it */

    char *path = ospd_utf8_sanitize((const char *)rec + sizeof r, r.path_len);
    if (path == NULL)
        return 0;
    char arch[OSP_ARCH_SIZE];
    ospd_copy_ascii_field(arch, r.arch, sizeof arch);
    /* On the samples' axis; a time at or before the start is 1, since 0 means "unknown". */
    uint64_t at = 0;
    if (r.at_mono_ns != 0)
        at = r.at_mono_ns > c->start_mono_ns ? r.at_mono_ns - c->start_mono_ns : 1;
    struct ospd_image *im = ospd_collector_mapped_image(c, r.base, path);
    if ((r.flags & OSP_IMAGE_UNLOADED) != 0 && im != NULL) {
        im->unloaded_ns = at != 0 ? at : 1;
        free(path);
        return 0;
    }
    if (im == NULL && (r.flags & OSP_IMAGE_UNLOADED) == 0) {
        im = reloaded_in_place(c, r.base, r.text, r.text_size, path);
        if (im != NULL) {
            im->unloaded_ns = 0;
            free(path);
            return 0;
        }
    }
    if (im == NULL) {
        char *copy = strdup(path);
        if (ospd_collector_image(c, r.base, r.slide, r.text, r.text_size, path, arch,
                                 (r.flags & OSP_IMAGE_MAIN) != 0) != 0 ||
            copy == NULL) {
            free(copy);
            return 0;
        }
        im = ospd_collector_mapped_image(c, r.base, copy);
        free(copy);
        if (im == NULL)
            return 0;
        im->loaded_ns = at;
        /* Unloaded before its load was sent: known only by its end. */
        if ((r.flags & OSP_IMAGE_UNLOADED) != 0)
            im->unloaded_ns = at != 0 ? at : 1;
        return 0;
    }
    im->main = im->main || (r.flags & OSP_IMAGE_MAIN) != 0;
    free(path);
    return 0;
}

struct ospd_image *ospd_collector_mapped_image(struct ospd_collector *c, uint64_t base,
                                               const char *path)
{
    for (uint32_t i = c->image_count; i-- > 0;) {
        struct ospd_image *im = &c->images[i];
        if (im->unloaded_ns == 0 && im->base == base && strcmp(im->path, path) == 0)
            return im;
    }
    return NULL;
}

int ospd_collector_image(struct ospd_collector *c, uint64_t base, uint64_t slide, uint64_t text,
                         uint64_t text_size, char *path, const char *arch, bool main)
{
    struct ospd_image *known = ospd_collector_mapped_image(c, base, path);
    if (known != NULL) {
        known->main = known->main || main;
        free(path);
        return 0;
    }
    uint64_t cap = c->images_cap;
    if (c->image_count >= OSPD_MAX_IMAGES ||
        ospd_grow((void **)&c->images, &cap, (uint64_t)c->image_count + 1, sizeof *c->images) !=
            0) {
        free(path);
        return -ENOMEM;
    }
    c->images_cap = (uint32_t)cap;
    struct ospd_image *im = &c->images[c->image_count++];
    *im = (struct ospd_image){.base = base,
                              .slide = slide,
                              .text = text,
                              .text_size = text_size,
                              .path = path,
                              .main = main};
    ospd_copy_ascii_field(im->arch, arch, sizeof im->arch);
    return 0;
}

static int on_exit_record(struct ospd_collector *c, const uint8_t *rec, uint32_t size)
{
    struct osp_rec_exit r = {0};
    if (size != sizeof r && size != OSP_REC_EXIT_SIZE_V1)
        return reject(c, "exit record of %" PRIu32 " bytes, expected %zu", size, sizeof r);
    memcpy(&r, rec, size);
    c->exit_seen = true;
    c->exit_cpu_ns = r.process_cpu_ns;
    c->end_unix_ns = r.end_unix_ns;
    if (r.dropped > c->shim_dropped)
        c->shim_dropped = r.dropped;
    return 0;
}

/* The collector's handler of each record type (PAD has none: it carries nothing). */
static int (*const record_handlers[])(struct ospd_collector *, const uint8_t *, uint32_t) = {
    [OSP_REC_THREAD_START] = on_thread_start,
    [OSP_REC_THREAD_END] = on_thread_end,
    [OSP_REC_SAMPLE] = on_sample,
    [OSP_REC_SAMPLE_WEIGHTED] = on_sample,
    [OSP_REC_REPEAT] = on_repeat,
    [OSP_REC_WAIT_SPAN] = on_wait_span,
    [OSP_REC_IMAGE] = on_image,
    [OSP_REC_ESCAPED] = on_escaped,
    [OSP_REC_EXIT] = on_exit_record,
    [OSP_REC_FIBER] = on_fiber,
    [OSP_REC_STACK_COPY] = on_stack_copy,
};

/* ospd_parse's visitor: one record into the collector. */
static int collect_record(void *ctx, uint64_t pos, const uint8_t *rec, uint32_t type, uint32_t size)
{
    struct ospd_collector *c = ctx;
    int rc = 0;
    if (type >= sizeof record_handlers / sizeof record_handlers[0] ||
        (type != OSP_REC_PAD && record_handlers[type] == NULL))
        rc = reject(c, "record at %" PRIu64 " has unknown type %" PRIu32, pos, type);
    else if (type != OSP_REC_PAD)
        rc = record_handlers[type](c, rec, size);
    if (rc != 0)
        return rc;
    if (c->deferred)
        return OSPD_VISIT_AGAIN;
    c->records++;
    return c->exit_seen ? OSPD_VISIT_STOP : 0;
}

int ospd_parse(struct ospd_collector *c, const uint8_t *data, uint64_t data_size, uint64_t tail,
               uint64_t head, uint64_t *new_tail)
{
    *new_tail = tail;
    if (c->error[0] != '\0')
        return -EPROTO; /* a rejected ring stays rejected */
    if (head < c->last_head)
        return reject(c, "head moved backwards from %" PRIu64 " to %" PRIu64, c->last_head, head);
    int rc = ospd_ring_check_span(data_size, tail, head, c->error, sizeof c->error);
    if (rc != 0)
        return rc;
    c->last_head = head;
    if (c->exit_seen)
        return 0; /* nothing follows the exit record */
    return ospd_ring_walk(data, data_size, tail, head, collect_record, c, c->error, sizeof c->error,
                          new_tail);
}

int ospd_parse_slot(struct ospd_collector *c, const uint8_t *data, uint64_t data_size,
                    uint64_t tail, uint64_t head, uint64_t *new_tail)
{
    /* The event ring's position checks use last_head; a slot ring has its own, so keep it. */
    uint64_t saved_head = c->last_head;
    bool saved_exit = c->exit_seen;
    c->last_head = 0;
    c->exit_seen = false;
    c->slot_mode = true;
    c->deferred = false;
    int rc = ospd_parse(c, data, data_size, tail, head, new_tail);
    if (rc == 0 && c->exit_seen)
        rc = reject(c, "an exit record in a slot's ring");
    c->slot_mode = false;
    c->deferred = false;
    c->last_head = saved_head;
    c->exit_seen = saved_exit;
    return rc;
}
