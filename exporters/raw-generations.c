/* raw-generations.c — one stack per generation of objects in a raw profile just read.
 *
 * A program that unloads an object and loads another at the same address (dlclose, then
 * dlopen) has two images whose text ranges overlap; the collector records when each was seen
 * loaded and gone (`loaded_ns`, `unloaded_ns`, proto/raw-format.md). The same pcs then mean
 * different functions at different times, so a stack is only names once its time is known:
 * each stack with a pc in such an overlap is bound to the time of its first sample (the
 * symbolizer resolves it among the images mapped then, ospx__image_at), and a later sample
 * whose pcs resolve to other images is moved to a copy of the stack bound to its own time.
 * Every output (report, folded, pprof, speedscope…) then names each generation's functions
 * for its own samples. A profile without unload times, or without overlapping images, is left
 * as it was read.
 *
 * Owns the choice of the image a pc belongs to (ospx__image_of, and at a time ospx__image_at),
 * which the symbolizer and pprof use too: here so the reader needs nothing of the symbolizer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "osp_unwind_step.h"
#include "ospx_internal.h"
#include "raw_internal.h"

#define NONE UINT32_MAX

/* The images of `process`: [*first, *end) in raw->images (all of them in a profile without
 * processes). */
static void process_images(const struct ospx_raw *raw, uint32_t process, size_t *first, size_t *end)
{
    *first = 0;
    *end = raw->image_count;
    if (process < raw->process_count) {
        *first = raw->processes[process].first_image;
        *end = *first + raw->processes[process].image_count;
        *end = *end < raw->image_count ? *end : raw->image_count;
    }
}

/* The image a pc belongs to: the one whose text range holds it, else, among images with no
 * range, the one with the greatest base at or below it. NONE when none, and for the marker
 * of frames left out (proto/osp_unwind_step.h), which no image holds. */
uint32_t ospx__image_of(const struct ospx_raw *raw, uint32_t process, uint64_t pc)
{
    uint32_t fallback = NONE;
    if (osp_unwind_left_out_is(pc))
        return NONE;
    size_t first, end;
    process_images(raw, process, &first, &end);
    for (size_t i = first; i < end; i++) {
        const struct ospx_image *image = &raw->images[i];
        if (image->text_size > 0) {
            if (pc >= image->text && pc - image->text < image->text_size)
                return (uint32_t)i;
        } else if (image->base <= pc &&
                   (fallback == NONE || image->base > raw->images[fallback].base)) {
            fallback = (uint32_t)i;
        }
    }
    return fallback;
}

uint32_t ospx__image_at(const struct ospx_raw *raw, uint32_t process, uint64_t pc, uint64_t t)
{
    uint32_t before = NONE, after = NONE;
    size_t first, end;
    process_images(raw, process, &first, &end);
    for (size_t i = first; i < end; i++) {
        const struct ospx_image *image = &raw->images[i];
        if (image->text_size == 0 || pc < image->text || pc - image->text >= image->text_size)
            continue;
        if (image->unloaded_ns != 0 && t >= image->unloaded_ns)
            continue; /* gone by t */
        if (image->loaded_ns <= t) {
            if (before == NONE || image->loaded_ns > raw->images[before].loaded_ns)
                before = (uint32_t)i;
        } else if (after == NONE || image->loaded_ns < raw->images[after].loaded_ns) {
            after = (uint32_t)i;
        }
    }
    if (before != NONE)
        return before;
    return after != NONE ? after : ospx__image_of(raw, process, pc);
}

uint32_t ospx__stack_image(const struct ospx_raw *raw, const struct ospx_stack *stack, size_t k)
{
    uint64_t pc = ospx__lookup_pc(stack, k);
    return stack->timed ? ospx__image_at(raw, stack->process, pc, stack->at_ns)
                        : ospx__image_of(raw, stack->process, pc);
}

/* The address looked up for stack position k: return addresses (k >= 1) point after their
 * call instruction, so one byte back lands in the call and attributes to the call's line. */
uint64_t ospx__lookup_pc(const struct ospx_stack *stack, size_t k)
{
    return k > 0 && stack->pcs[k] > 0 ? stack->pcs[k] - 1 : stack->pcs[k];
}

/* Where two images' text ranges overlap: [lo, hi) spans, few (a program that replaced
 * objects at one address), found once so that a stack is checked against them only. */
struct overlaps {
    uint64_t (*spans)[2];
    size_t count, capacity;
};

static int find_overlaps(const struct ospx_raw *raw, struct overlaps *out)
{
    for (size_t i = 0; i < raw->image_count; i++) {
        const struct ospx_image *a = &raw->images[i];
        for (size_t j = i + 1; j < raw->image_count && a->text_size > 0; j++) {
            const struct ospx_image *b = &raw->images[j];
            uint64_t lo = a->text > b->text ? a->text : b->text;
            uint64_t a_end = a->text + a->text_size, b_end = b->text + b->text_size;
            uint64_t hi = a_end < b_end ? a_end : b_end;
            if (b->text_size == 0 || lo >= hi)
                continue;
            if (ospx__grow(&out->spans, &out->capacity, out->count, sizeof *out->spans, 4) != 0)
                return -ENOMEM;
            out->spans[out->count][0] = lo;
            out->spans[out->count++][1] = hi;
        }
    }
    return 0;
}

/* Whether some pc of the stack lies where two images' text ranges overlap. */
static int in_overlap(const struct overlaps *overlaps, const struct ospx_stack *stack)
{
    for (size_t k = 0; k < stack->depth; k++) {
        uint64_t pc = ospx__lookup_pc(stack, k);
        for (size_t i = 0; i < overlaps->count; i++)
            if (pc >= overlaps->spans[i][0] && pc < overlaps->spans[i][1])
                return 1;
    }
    return 0;
}

/* Whether every pc of the stack resolves at time t as at the stack's own time. */
static int same_images(const struct ospx_raw *raw, const struct ospx_stack *stack, uint64_t t)
{
    for (size_t k = 0; k < stack->depth; k++) {
        uint64_t pc = ospx__lookup_pc(stack, k);
        if (ospx__image_at(raw, stack->process, pc, t) != ospx__stack_image(raw, stack, k))
            return 0;
    }
    return 1;
}

/* A copy of stack s bound to time t, appended; its index, or NONE when out of memory. */
static uint32_t copy_stack(struct ospx_raw *raw, size_t *capacity, uint32_t s, uint64_t t)
{
    if (raw->stack_count >= NONE - 1 ||
        ospx__grow(&raw->stacks, capacity, raw->stack_count, sizeof *raw->stacks, 16) != 0)
        return NONE;
    const struct ospx_stack *from = &raw->stacks[s];
    uint64_t *pcs = malloc(from->depth * sizeof *pcs);
    if (pcs == NULL)
        return NONE;
    memcpy(pcs, from->pcs, from->depth * sizeof *pcs);
    raw->stacks[raw->stack_count] = (struct ospx_stack){.pcs = pcs,
                                                        .depth = from->depth,
                                                        .process = from->process,
                                                        .timed = 1,
                                                        .at_ns = t,
                                                        .end = from->end};
    return (uint32_t)raw->stack_count++;
}

int ospx__raw_split_generations(struct ospx_raw *out)
{
    int replaced = 0;
    for (size_t i = 0; i < out->image_count; i++)
        replaced |= out->images[i].unloaded_ns != 0;
    if (!replaced || out->stack_count == 0)
        return 0;
    struct overlaps overlaps = {0};
    int rc = find_overlaps(out, &overlaps);
    if (rc != 0 || overlaps.count == 0) {
        free(overlaps.spans);
        return rc;
    }
    size_t original = out->stack_count, capacity = out->stack_count, next_capacity = 0;
    /* per original stack: 0 not looked at, 1 outside every overlap, 2 in one */
    uint8_t *overlap = calloc(original, 1);
    /* per stack: its next copy (another generation), or NONE */
    uint32_t *next = NULL;
    rc = overlap != NULL ? 0 : -ENOMEM;
    for (size_t i = 0; i < out->sample_count && rc == 0; i++) {
        struct ospx_sample *sample = &out->samples[i];
        uint32_t s = sample->stack;
        if (overlap[s] == 0)
            overlap[s] = in_overlap(&overlaps, &out->stacks[s]) ? 2 : 1;
        if (overlap[s] == 1)
            continue;
        if (!out->stacks[s].timed) {
            out->stacks[s].timed = 1;
            out->stacks[s].at_ns = sample->t_rel_ns;
            continue;
        }
        for (;;) {
            if (same_images(out, &out->stacks[s], sample->t_rel_ns))
                break;
            if (next != NULL && s < next_capacity && next[s] != NONE) {
                s = next[s];
                continue;
            }
            uint32_t copy = copy_stack(out, &capacity, s, sample->t_rel_ns);
            size_t old = next_capacity;
            if (copy == NONE || ospx__grow(&next, &next_capacity, out->stack_count, sizeof *next,
                                           original + 16) != 0) {
                rc = -ENOMEM;
                break;
            }
            for (size_t j = old; j < next_capacity; j++)
                next[j] = NONE;
            next[s] = copy;
            s = copy;
            break;
        }
        sample->stack = s;
    }
    free(overlaps.spans);
    free(overlap);
    free(next);
    return rc;
}
