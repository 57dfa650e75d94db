/* raw-samples.c — the raw file's stacks and samples read into struct ospx_raw: the stacks
 * (from the fast path's arrays, or jansson's), where each stack's own frames end, and the
 * sample rows [t_ns, thread, stack, state, weight], each index checked against its table
 * so that nothing downstream checks again. The document around them is raw.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "osp_unwind_step.h"
#include "ospc.h"
#include "ospx.h"
#include "ospx_internal.h"
#include "raw_reader.h"

/* Stack i of out, with room for `depth` pcs (freed with out); NULL when out of memory. */
static struct ospx_stack *raw_new_stack(struct raw_reader *reader, struct ospx_raw *out, size_t i,
                                        size_t depth)
{
    struct ospx_stack *stack = &out->stacks[i];
    out->stack_count = i + 1;
    stack->pcs = malloc(depth * sizeof *stack->pcs);
    if (stack->pcs == NULL) {
        raw_out_of_memory(reader);
        return NULL;
    }
    stack->depth = depth;
    return stack;
}

/* Element k of stack i, `pc` as the file has it: a negative one is a kernel frame (the same
 * 64 bits; proto/raw-format.md, "stacks[]"), which comes before every user frame. */
static int raw_stack_pc(struct raw_reader *reader, size_t i, size_t k, json_int_t pc,
                        bool *user_seen, uint64_t *out)
{
    if (pc < 0 && *user_seen) {
        char pc_path[96];
        snprintf(pc_path, sizeof pc_path, "stacks[%zu][%zu]", i, k);
        return raw_fail(reader, pc_path,
                        "negative value %" JSON_INTEGER_FORMAT
                        " after a user frame (kernel frames come first)",
                        pc);
    }
    *user_seen = *user_seen || pc >= 0;
    *out = (uint64_t)pc;
    return 0;
}

/* The stacks the fast path read (raw-scan.c's scan_stacks), with the checks raw_read_stacks makes.
 */
static int raw_store_fast_stacks(struct raw_reader *reader, struct ospx_raw *out)
{
    size_t count = reader->fast.stack_count;
    out->stacks = raw_table(reader, count, sizeof *out->stacks);
    if (out->stacks == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        const json_int_t *pcs = reader->fast.pcs + reader->fast.stack_start[i];
        size_t depth = reader->fast.stack_start[i + 1] - reader->fast.stack_start[i];
        struct ospx_stack *stack = raw_new_stack(reader, out, i, depth);
        if (stack == NULL)
            return -ENOMEM;
        bool user_seen = false;
        for (size_t k = 0; k < depth; k++) {
            int rc = raw_stack_pc(reader, i, k, pcs[k], &user_seen, &stack->pcs[k]);
            if (rc < 0)
                return rc;
        }
        stack->depth = depth;
    }
    return 0;
}

static int raw_read_stack(struct raw_reader *reader, const json_t *entry, const char *path,
                          size_t i, struct ospx_raw *out)
{
    size_t depth = json_array_size(entry);
    if (depth == 0)
        return raw_fail(reader, path, "empty stack (a stack holds at least its leaf pc)");
    struct ospx_stack *stack = raw_new_stack(reader, out, i, depth);
    if (stack == NULL)
        return -ENOMEM;
    bool user_seen = false;
    for (size_t k = 0; k < depth; k++) {
        char pc_path[96];
        snprintf(pc_path, sizeof pc_path, "%s[%zu]", path, k);
        json_int_t pc = 0;
        int rc =
            raw_integer_value(reader, json_array_get(entry, k), pc_path, INT64_MIN, INT64_MAX, &pc);
        if (rc == 0)
            rc = raw_stack_pc(reader, i, k, pc, &user_seen, &stack->pcs[k]);
        if (rc < 0)
            return rc;
    }
    stack->depth = depth;
    return 0;
}

int ospx__raw_read_stacks(struct raw_reader *reader, const json_t *stacks, struct ospx_raw *out)
{
    if (reader->fast.stack_start != NULL)
        return raw_store_fast_stacks(reader, out);
    return raw_read_rows(reader, stacks, "stacks", JSON_ARRAY, &out->stacks, sizeof *out->stacks,
                         &out->stack_count, raw_read_stack, out);
}

/* The optional "stack_ends": one integer per stack, why its walk ended (proto/raw-format.md). */
int ospx__raw_read_stack_ends(struct raw_reader *reader, const json_t *root, struct ospx_raw *out)
{
    json_t *ends;
    int rc = raw_member(reader, root, "", "stack_ends", JSON_ARRAY, 0, &ends);
    if (rc < 0 || ends == NULL)
        return rc;
    if (json_array_size(ends) != out->stack_count)
        return raw_fail(reader, "stack_ends", "%zu entries for %zu stacks", json_array_size(ends),
                        out->stack_count);
    for (size_t i = 0; i < out->stack_count; i++) {
        char path[64];
        snprintf(path, sizeof path, "stack_ends[%zu]", i);
        json_int_t end = 0;
        rc = raw_integer_value(reader, json_array_get(ends, i), path, 0, OSP_UNWIND_STOP_COUNT - 1,
                               &end);
        if (rc < 0)
            return rc;
        out->stacks[i].end = (unsigned)end;
    }
    return 0;
}

/* A failed check of element k of sample row i: "samples[i][k]: text". Returns -EINVAL. */
__attribute__((format(printf, 4, 5))) static int
raw_sample_fail(struct raw_reader *reader, size_t i, int k, const char *fmt, ...)
{
    char path[96], text[300];
    snprintf(path, sizeof path, "samples[%zu][%d]", i, k);
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    return raw_fail(reader, path, "%s", text);
}

/* Check one sample row (its `elements` values, the 5th defaulting to 1) and store it as
 * out->samples[i]. The paths of a message are made only when a check fails: this runs once
 * per row, millions of times. */
static int raw_store_sample(struct raw_reader *reader, struct ospx_raw *out, size_t i,
                            const json_int_t values[5])
{
    if (values[0] < 0)
        return raw_sample_fail(reader, i, 0, "negative time %" JSON_INTEGER_FORMAT, values[0]);
    if (values[1] < 0 || (uint64_t)values[1] >= out->thread_count)
        return raw_sample_fail(reader, i, 1,
                               "thread index %" JSON_INTEGER_FORMAT " out of range (%zu threads)",
                               values[1], out->thread_count);
    if (values[2] < 0 || (uint64_t)values[2] >= out->stack_count)
        return raw_sample_fail(reader, i, 2,
                               "stack index %" JSON_INTEGER_FORMAT " out of range (%zu stacks)",
                               values[2], out->stack_count);
    if (values[3] != 0 && values[3] != 1)
        return raw_sample_fail(
            reader, i, 3, "state %" JSON_INTEGER_FORMAT " is neither 0 (on-CPU) nor 1 (waiting)",
            values[3]);
    if (values[4] < 1)
        return raw_sample_fail(reader, i, 4,
                               "weight %" JSON_INTEGER_FORMAT
                               " below 1 (a row stands for at least one period)",
                               values[4]);
    if (values[4] > OSPX_RAW_MAX_WEIGHT)
        return raw_sample_fail(
            reader, i, 4, "weight %" JSON_INTEGER_FORMAT " above 2^40 sampling periods", values[4]);
    out->samples[i] = (struct ospx_sample){.t_rel_ns = (uint64_t)values[0],
                                           .thread = (uint32_t)values[1],
                                           .stack = (uint32_t)values[2],
                                           .state = (uint8_t)values[3],
                                           .weight = (uint64_t)values[4]};
    out->sample_count = i + 1;
    return 0;
}

static int raw_read_sample(struct raw_reader *reader, const json_t *row, const char *path, size_t i,
                           struct ospx_raw *out)
{
    size_t elements = json_array_size(row);
    if (elements != 4 && elements != 5)
        return raw_fail(reader, path,
                        "expected 4 or 5 elements [t_rel_ns, thread, stack, state, weight], "
                        "found %zu",
                        elements);
    json_int_t values[5] = {0, 0, 0, 0, 1};
    for (size_t k = 0; k < elements; k++) {
        char element_path[96];
        snprintf(element_path, sizeof element_path, "%s[%zu]", path, k);
        json_t *element = json_array_get(row, k);
        if (!json_is_integer(element))
            return raw_fail(reader, element_path, "expected an integer, found %s",
                            json_type_name(element));
        values[k] = json_integer_value(element);
    }
    return raw_store_sample(reader, out, i, values);
}

int ospx__raw_read_samples(struct raw_reader *reader, const json_t *samples, struct ospx_raw *out)
{
    /* Read beforehand by the fast path (raw-scan.c)? */
    if (reader->fast.rows != NULL) {
        /* Times, states and weights were checked while scanning; the indexes need the tables. */
        out->samples = reader->fast.rows;
        reader->fast.rows = NULL;
        for (size_t i = 0; i < reader->fast.count; i++) {
            const struct ospx_sample *sample = &out->samples[i];
            if (sample->thread >= out->thread_count || sample->stack >= out->stack_count) {
                json_int_t values[5] = {(json_int_t)sample->t_rel_ns, sample->thread, sample->stack,
                                        sample->state, (json_int_t)sample->weight};
                return raw_store_sample(reader, out, i, values);
            }
        }
        out->sample_count = reader->fast.count;
        return 0;
    }
    return raw_read_rows(reader, samples, "samples", JSON_ARRAY, &out->samples,
                         sizeof *out->samples, &out->sample_count, raw_read_sample, out);
}
