/* raw.c — the raw profile reader: one JSON file written by ospreyd (version 1, see
 * proto/raw-format.md) into a struct ospx_raw that the later stages trust.
 *
 * It owns every check on the file: a syntax error is reported with jansson's line and column,
 * a semantic error (a missing field, a wrong type, an index out of range, a negative time)
 * with the JSON path of the offending value, e.g. "samples[12][1]: thread index 7 out of
 * range (3 threads)". After ospx_raw_read() returns 0, every sample's thread and stack index
 * is in range, every stack has at least one pc and end_unix_ns >= start_unix_ns, so nothing
 * downstream checks again. Unknown fields are ignored, so writers may add fields.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"
#include "ospx.h"
#include "ospx_internal.h"

/* The largest raw file the reader loads. A document whose rows are not in the plain form goes
 * to jansson whole, several times the file's size in memory, so a bigger file is refused
 * before it is read. */
#define OSPX_RAW_MAX_BYTES (2ULL << 30)

/* The most sampling periods one row may stand for: more than three years at 10 kHz, and small
 * enough that no sum of weights a file can hold overflows 64 bits. */
#define OSPX_RAW_MAX_WEIGHT (INT64_C(1) << 40)

/* What the reader is working on, so that each check can name the file. */
struct raw_reader {
    const char *path;
    struct ospx_error *err;
    /* the sample rows the fast path read (raw_scan_samples), NULL when it did not */
    struct ospx_sample *fast_rows;
    size_t fast_count;
    /* the stacks it read (scan_stacks): stack i's pcs are fast_pcs[fast_stack_start[i]]
     * .. fast_pcs[fast_stack_start[i + 1] - 1]; fast_stack_start NULL when it did not */
    json_int_t *fast_pcs;
    size_t *fast_stack_start;
    size_t fast_stack_count;
};

/* Record a semantic error at a JSON path: "FILE: PATH: text". Returns -EINVAL. */
__attribute__((format(printf, 3, 4))) static int
raw_fail(struct raw_reader *reader, const char *json_path, const char *fmt, ...)
{
    char text[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    if (json_path[0] == '\0')
        return ospx_error_set(reader->err, EINVAL, reader->path, 0, 0, "%s", text);
    return ospx_error_set(reader->err, EINVAL, reader->path, 0, 0, "%s: %s", json_path, text);
}

static int raw_out_of_memory(struct raw_reader *reader)
{
    return ospx_error_set(reader->err, ENOMEM, reader->path, 0, 0, "out of memory");
}

static const char *json_type_name(const json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "something else";
}

/* Look up `key` in `object` (at `object_path`) and check its JSON type. Sets *value to NULL
 * without an error when the member is absent and not required. */
static int raw_member(struct raw_reader *reader, const json_t *object, const char *object_path,
                      const char *key, json_type type, int required, json_t **value)
{
    char path[256];
    if (object_path[0] == '\0')
        snprintf(path, sizeof path, "%s", key);
    else
        snprintf(path, sizeof path, "%s.%s", object_path, key);
    json_t *member = json_object_get(object, key);
    *value = member;
    if (member == NULL) {
        if (!required)
            return 0;
        if (object_path[0] == '\0')
            return raw_fail(reader, "", "missing required field \"%s\"", key);
        return raw_fail(reader, object_path, "missing required field \"%s\"", key);
    }
    if (json_typeof(member) != type) {
        static const char *const expected[] = {
            [JSON_OBJECT] = "an object",   [JSON_ARRAY] = "an array",
            [JSON_STRING] = "a string",    [JSON_INTEGER] = "an integer",
            [JSON_REAL] = "a real number", [JSON_TRUE] = "a boolean",
            [JSON_FALSE] = "a boolean",    [JSON_NULL] = "null",
        };
        return raw_fail(reader, path, "expected %s, found %s", expected[type],
                        json_type_name(member));
    }
    return 0;
}

/* An integer value at `path` that must lie in [min, max]; `what` names it in the message. */
static int raw_integer_value(struct raw_reader *reader, const json_t *value, const char *path,
                             json_int_t min, json_int_t max, json_int_t *out)
{
    if (!json_is_integer(value))
        return raw_fail(reader, path, "expected an integer, found %s", json_type_name(value));
    json_int_t number = json_integer_value(value);
    if (number < min) {
        if (min == 0)
            return raw_fail(reader, path, "negative value %" JSON_INTEGER_FORMAT, number);
        return raw_fail(reader, path, "value %" JSON_INTEGER_FORMAT " below %" JSON_INTEGER_FORMAT,
                        number, min);
    }
    if (number > max)
        return raw_fail(reader, path, "value %" JSON_INTEGER_FORMAT " above %" JSON_INTEGER_FORMAT,
                        number, max);
    *out = number;
    return 0;
}

static int raw_integer(struct raw_reader *reader, const json_t *object, const char *object_path,
                       const char *key, json_int_t min, json_int_t max, json_int_t *out)
{
    json_t *member;
    int rc = raw_member(reader, object, object_path, key, JSON_INTEGER, 1, &member);
    if (rc < 0)
        return rc;
    char path[256];
    snprintf(path, sizeof path, "%s%s%s", object_path, object_path[0] ? "." : "", key);
    return raw_integer_value(reader, member, path, min, max, out);
}

/* An optional non-negative integer member; *out keeps its value when the member is absent. */
static int raw_optional_integer(struct raw_reader *reader, const json_t *object,
                                const char *object_path, const char *key, json_int_t *out)
{
    json_t *member;
    int rc = raw_member(reader, object, object_path, key, JSON_INTEGER, 0, &member);
    if (rc < 0 || member == NULL)
        return rc;
    char path[256];
    snprintf(path, sizeof path, "%s%s%s", object_path, object_path[0] ? "." : "", key);
    return raw_integer_value(reader, member, path, 0, INT64_MAX, out);
}

/* A string member, duplicated into *out (owned by the caller). Absent and optional: "". */
static int raw_string(struct raw_reader *reader, const json_t *object, const char *object_path,
                      const char *key, int required, char **out)
{
    json_t *member;
    int rc = raw_member(reader, object, object_path, key, JSON_STRING, required, &member);
    if (rc < 0)
        return rc;
    *out = strdup(member != NULL ? json_string_value(member) : "");
    return *out == NULL ? raw_out_of_memory(reader) : 0;
}

/* Entry i of the array `array_name`: writes its JSON path ("stacks[3]") into path and checks
 * that it has the JSON type `type`. */
static int raw_entry(struct raw_reader *reader, const json_t *array, const char *array_name,
                     size_t i, json_type type, char *path, size_t path_size, json_t **entry)
{
    snprintf(path, path_size, "%s[%zu]", array_name, i);
    *entry = json_array_get(array, i);
    if (json_typeof(*entry) != type)
        return raw_fail(reader, path, "expected %s, found %s",
                        type == JSON_OBJECT ? "an object" : "an array", json_type_name(*entry));
    return 0;
}

/* A zeroed table for the `count` entries of a JSON array (one element when it is empty, so
 * that a NULL pointer always means "not read"). */
static void *raw_table(struct raw_reader *reader, size_t count, size_t element_size)
{
    void *table = calloc(count > 0 ? count : 1, element_size);
    if (table == NULL)
        raw_out_of_memory(reader);
    return table;
}

static int raw_read_images(struct raw_reader *reader, const json_t *images, struct ospx_raw *out)
{
    size_t count = json_array_size(images);
    out->images = raw_table(reader, count, sizeof *out->images);
    if (out->images == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        char path[64];
        json_t *entry;
        int entry_rc =
            raw_entry(reader, images, "images", i, JSON_OBJECT, path, sizeof path, &entry);
        if (entry_rc < 0)
            return entry_rc;
        struct ospx_image *image = &out->images[i];
        out->image_count = i + 1; /* so ospx_raw_free releases what this entry holds */
        json_int_t base = 0, slide = 0, text = 0, text_size = 0;
        int rc = raw_string(reader, entry, path, "path", 1, &image->path);
        if (rc == 0)
            rc = raw_integer(reader, entry, path, "base", 0, INT64_MAX, &base);
        /* The slide is an offset, not an address: a negative one is legal, and unsigned
         * arithmetic (pc - slide) gives the right file address either way. */
        if (rc == 0)
            rc = raw_integer(reader, entry, path, "slide", INT64_MIN, INT64_MAX, &slide);
        if (rc == 0)
            rc = raw_integer(reader, entry, path, "text", 0, INT64_MAX, &text);
        if (rc == 0)
            rc = raw_integer(reader, entry, path, "text_size", 0, INT64_MAX, &text_size);
        if (rc == 0)
            rc = raw_string(reader, entry, path, "arch", 0, &image->arch);
        if (rc == 0)
            rc = raw_string(reader, entry, path, "build_id", 0, &image->build_id);
        json_int_t text_offset = -1;
        if (rc == 0)
            rc = raw_optional_integer(reader, entry, path, "text_offset", &text_offset);
        if (rc < 0)
            return rc;
        image->has_text_offset = text_offset >= 0;
        image->text_offset = text_offset >= 0 ? (uint64_t)text_offset : 0;
        /* A build id is hex digits: anything else (a hand-edited file) is no build id. */
        for (char *c = image->build_id; *c != '\0'; c++) {
            if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))) {
                image->build_id[0] = '\0';
                break;
            }
        }
        if ((uint64_t)text + (uint64_t)text_size > (uint64_t)INT64_MAX)
            return raw_fail(reader, path, "text range 0x%" PRIx64 " + %" PRIu64 " overflows",
                            (uint64_t)text, (uint64_t)text_size);
        image->base = (uint64_t)base;
        image->slide = (uint64_t)slide;
        image->text = (uint64_t)text;
        image->text_size = (uint64_t)text_size;
    }
    return 0;
}

static int raw_read_threads(struct raw_reader *reader, const json_t *threads, struct ospx_raw *out)
{
    size_t count = json_array_size(threads);
    out->threads = raw_table(reader, count, sizeof *out->threads);
    if (out->threads == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        char path[64];
        json_t *entry;
        int entry_rc =
            raw_entry(reader, threads, "threads", i, JSON_OBJECT, path, sizeof path, &entry);
        if (entry_rc < 0)
            return entry_rc;
        struct ospx_thread *thread = &out->threads[i];
        out->thread_count = i + 1;
        json_int_t fiber = 0, tid = 0, cpu_ns = -1, preempted_ns = -1;
        int rc = raw_integer(reader, entry, path, "fiber", INT64_MIN, INT64_MAX, &fiber);
        if (rc == 0)
            rc = raw_string(reader, entry, path, "label", 1, &thread->label);
        /* tid is optional and not kept, but a present one must still be a thread id. */
        if (rc == 0)
            rc = raw_optional_integer(reader, entry, path, "tid", &tid);
        if (rc == 0)
            rc = raw_optional_integer(reader, entry, path, "cpu_ns", &cpu_ns);
        if (rc == 0)
            rc = raw_optional_integer(reader, entry, path, "preempted_ns", &preempted_ns);
        if (rc < 0)
            return rc;
        thread->fiber = fiber;
        thread->cpu_ns = cpu_ns;
        thread->preempted_ns = preempted_ns;
        thread->tid = tid;
    }
    return 0;
}

static uint64_t thread_key_hash(const struct ospx_thread *thread)
{
    int64_t key[2] = {thread->fiber, thread->tid};
    return ospc_hash_bytes(OSPC_HASH_SEED, key, sizeof key);
}

static uint64_t thread_hash_of(uint32_t entry, void *context)
{
    const struct ospx_raw *raw = context;
    return thread_key_hash(&raw->threads[entry]);
}

/* One thread per (fiber, tid): a later registration of the same kernel thread under the same
 * fiber id (it was renamed, and registered again under its new name) is folded into the first,
 * which takes its label; the samples follow. Entries without a tid stay as they are. 0 or
 * -ENOMEM. */
static int raw_merge_renamed_threads(struct raw_reader *reader, struct ospx_raw *out)
{
    if (out->thread_count < 2)
        return 0;
    uint32_t *merged_into = malloc(out->thread_count * sizeof *merged_into);
    struct ospc_index index;
    if (merged_into == NULL || ospc_index_init(&index, out->thread_count) != 0) {
        free(merged_into);
        return raw_out_of_memory(reader);
    }
    size_t kept = 0;
    int rc = 0;
    for (size_t i = 0; i < out->thread_count && rc == 0; i++) {
        struct ospx_thread *thread = &out->threads[i];
        uint32_t into = UINT32_MAX;
        size_t slot = ospc_index_start(&index, thread_key_hash(thread));
        for (uint32_t e; thread->tid > 0 && (e = ospc_index_entry(&index, slot)) != UINT32_MAX;
             slot = ospc_index_next(&index, slot)) {
            if (out->threads[e].fiber == thread->fiber && out->threads[e].tid == thread->tid) {
                into = e;
                break;
            }
        }
        if (into != UINT32_MAX) {
            struct ospx_thread *first = &out->threads[into];
            free(first->label);
            first->label = thread->label; /* its latest name */
            thread->label = NULL;
            if (thread->cpu_ns > first->cpu_ns)
                first->cpu_ns = thread->cpu_ns;
            if (thread->preempted_ns > 0)
                first->preempted_ns =
                    (first->preempted_ns > 0 ? first->preempted_ns : 0) + thread->preempted_ns;
            merged_into[i] = into;
            continue;
        }
        into = (uint32_t)kept++;
        if (into != i) {
            out->threads[into] = *thread;
            thread->label = NULL;
        }
        merged_into[i] = into;
        if (thread->tid > 0) /* thread now lives at `into`; hash it from there */
            rc = ospc_index_insert(&index, slot, into, thread_hash_of, out);
    }
    if (rc == 0 && kept < out->thread_count) {
        for (size_t i = kept; i < out->thread_count; i++)
            free(out->threads[i].label);
        out->thread_count = kept;
        for (size_t i = 0; i < out->sample_count; i++)
            out->samples[i].thread = merged_into[out->samples[i].thread];
    }
    ospc_index_free(&index);
    free(merged_into);
    return rc != 0 ? raw_out_of_memory(reader) : 0;
}

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

/* The stacks the fast path read (see scan_stacks), with the checks raw_read_stacks makes. */
static int raw_store_fast_stacks(struct raw_reader *reader, struct ospx_raw *out)
{
    size_t count = reader->fast_stack_count;
    out->stacks = raw_table(reader, count, sizeof *out->stacks);
    if (out->stacks == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        const json_int_t *pcs = reader->fast_pcs + reader->fast_stack_start[i];
        size_t depth = reader->fast_stack_start[i + 1] - reader->fast_stack_start[i];
        struct ospx_stack *stack = raw_new_stack(reader, out, i, depth);
        if (stack == NULL)
            return -ENOMEM;
        for (size_t k = 0; k < depth; k++) {
            if (pcs[k] < 0) {
                char pc_path[96];
                snprintf(pc_path, sizeof pc_path, "stacks[%zu][%zu]", i, k);
                return raw_fail(reader, pc_path, "negative value %" JSON_INTEGER_FORMAT, pcs[k]);
            }
            stack->pcs[k] = (uint64_t)pcs[k];
        }
        stack->depth = depth;
    }
    return 0;
}

static int raw_read_stacks(struct raw_reader *reader, const json_t *stacks, struct ospx_raw *out)
{
    if (reader->fast_stack_start != NULL)
        return raw_store_fast_stacks(reader, out);
    size_t count = json_array_size(stacks);
    out->stacks = raw_table(reader, count, sizeof *out->stacks);
    if (out->stacks == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        char path[64];
        json_t *entry;
        int entry_rc =
            raw_entry(reader, stacks, "stacks", i, JSON_ARRAY, path, sizeof path, &entry);
        if (entry_rc < 0)
            return entry_rc;
        size_t depth = json_array_size(entry);
        if (depth == 0)
            return raw_fail(reader, path, "empty stack (a stack holds at least its leaf pc)");
        struct ospx_stack *stack = raw_new_stack(reader, out, i, depth);
        if (stack == NULL)
            return -ENOMEM;
        for (size_t k = 0; k < depth; k++) {
            char pc_path[96];
            snprintf(pc_path, sizeof pc_path, "%s[%zu]", path, k);
            json_int_t pc = 0;
            int rc =
                raw_integer_value(reader, json_array_get(entry, k), pc_path, 0, INT64_MAX, &pc);
            if (rc < 0)
                return rc;
            stack->pcs[k] = (uint64_t)pc;
        }
        stack->depth = depth;
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

static int raw_read_samples(struct raw_reader *reader, const json_t *samples, struct ospx_raw *out)
{
    /* Read beforehand by the fast path (see raw_scan_samples)? */
    if (reader->fast_rows != NULL) {
        /* Times, states and weights were checked while scanning; the indexes need the tables. */
        out->samples = reader->fast_rows;
        reader->fast_rows = NULL;
        for (size_t i = 0; i < reader->fast_count; i++) {
            const struct ospx_sample *sample = &out->samples[i];
            if (sample->thread >= out->thread_count || sample->stack >= out->stack_count) {
                json_int_t values[5] = {(json_int_t)sample->t_rel_ns, sample->thread, sample->stack,
                                        sample->state, (json_int_t)sample->weight};
                return raw_store_sample(reader, out, i, values);
            }
        }
        out->sample_count = reader->fast_count;
        return 0;
    }
    size_t count = json_array_size(samples);
    out->samples = raw_table(reader, count, sizeof *out->samples);
    if (out->samples == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        char path[64];
        json_t *row;
        int entry_rc =
            raw_entry(reader, samples, "samples", i, JSON_ARRAY, path, sizeof path, &row);
        if (entry_rc < 0)
            return entry_rc;
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
        int rc = raw_store_sample(reader, out, i, values);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- the fast path for "samples" and "stacks" ----
 *
 * A long profile is mostly its sample rows, millions of small arrays that jansson would hold
 * as millions of objects (about 250 bytes a row, and most of the reading time), and then its
 * stacks (hundreds of thousands of pcs). So before jansson sees the text, the top-level
 * "samples" and "stacks" arrays are read here directly, when they are in the plain form
 * writers produce: arrays of 4 or 5 JSON integers, non-empty arrays of JSON integers. Then
 * their text is blanked to `[]` (line breaks kept, so every position jansson reports stays the
 * same) and jansson reads the rest. Anything else in such an array (a real number, a string, a
 * nested value, a leading zero, a number too long for 64 bits, an empty stack, a syntax error)
 * leaves its text alone: jansson and the checks above then read it and report what is wrong
 * exactly as before. */

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* A JSON string starting at p ('"'): the position after it, NULL when unterminated. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* A JSON integer as jansson accepts it: -?(0|[1-9][0-9]*), at most 18 digits (so it fits), not
 * followed by a fraction or an exponent. Returns the position after it, NULL otherwise. */
static const char *scan_integer(const char *p, const char *end, json_int_t *value)
{
    int negative = p < end && *p == '-';
    p += negative;
    const char *digits = p;
    json_int_t number = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        if (p - digits == 18)
            return NULL; /* longer than any value this path takes: jansson decides */
        number = number * 10 + (*p++ - '0');
    }
    size_t length = (size_t)(p - digits);
    if (length == 0 || length > 18 || (length > 1 && *digits == '0'))
        return NULL;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E'))
        return NULL;
    *value = negative ? -number : number;
    return p;
}

/* Ask for transparent huge pages over the 2 MiB-aligned part of [memory, memory + size): the
 * sample table of a million rows is 32 MB, and a page fault per 4 KiB of it cost a quarter of
 * the scan. A hint only. */
static void huge_pages(void *memory, size_t size)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t start = ((uintptr_t)memory + huge - 1) & ~(huge - 1);
    uintptr_t end = ((uintptr_t)memory + size) & ~(huge - 1);
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
}

/* Read the array at p ('[') as sample rows into reader->fast_rows. Returns the position after
 * its ']', NULL (and no rows) when it is not in the plain form, or a row fails a check that
 * needs no other table (time, state, weight; an index above 32 bits): the slow path then says
 * which. */
static const char *scan_rows(struct raw_reader *reader, const char *p, const char *end)
{
    /* The shortest row, "[0,0,0,0]," is ten bytes: rarely more rows than that. Pages never
     * written are never touched. */
    size_t count = 0, capacity = (size_t)(end - p) / 10 + 1;
    struct ospx_sample *rows = malloc(capacity * sizeof *rows);
    if (rows == NULL)
        return NULL;
    huge_pages(rows, capacity * sizeof *rows);
    p = skip_space(p + 1, end);
    if (p < end && *p == ']') {
        reader->fast_rows = rows;
        reader->fast_count = 0;
        return p + 1;
    }
    while (p < end && *p == '[') {
        if (count == capacity) {
            capacity *= 2;
            void *grown = realloc(rows, capacity * sizeof *rows);
            if (grown == NULL)
                break;
            rows = grown;
        }
        json_int_t row[5] = {0, 0, 0, 0, 1};
        size_t elements = 0;
        p = skip_space(p + 1, end);
        while (p != NULL && elements < 5) {
            p = scan_integer(p, end, &row[elements++]);
            if (p == NULL)
                break;
            p = skip_space(p, end);
            if (p < end && *p == ',')
                p = skip_space(p + 1, end);
            else
                break;
        }
        if (p == NULL || p >= end || *p != ']' || elements < 4)
            break;
        if (row[0] < 0 || row[1] < 0 || row[1] > UINT32_MAX || row[2] < 0 || row[2] > UINT32_MAX ||
            (row[3] != 0 && row[3] != 1) || row[4] < 1 || row[4] > OSPX_RAW_MAX_WEIGHT)
            break;
        rows[count++] = (struct ospx_sample){.t_rel_ns = (uint64_t)row[0],
                                             .thread = (uint32_t)row[1],
                                             .stack = (uint32_t)row[2],
                                             .state = (uint8_t)row[3],
                                             .weight = (uint64_t)row[4]};
        p = skip_space(p + 1, end);
        if (p < end && *p == ',') {
            p = skip_space(p + 1, end);
            continue;
        }
        if (p < end && *p == ']') {
            struct ospx_sample *fitted = realloc(rows, (count + 1) * sizeof *rows);
            reader->fast_rows = fitted != NULL ? fitted : rows;
            reader->fast_count = count;
            return p + 1;
        }
        break;
    }
    free(rows);
    return NULL;
}

/* Read the array at p ('[') as stacks, non-empty arrays of integers, into reader->fast_pcs and
 * fast_stack_start. Returns the position after its ']', NULL (and nothing kept) when it is not
 * in that plain form (an empty stack included: jansson's path reports it). */
static const char *scan_stacks(struct raw_reader *reader, const char *p, const char *end)
{
    size_t count = 0, starts_capacity = 1024, pc_count = 0, pcs_capacity = 16384;
    size_t *starts = malloc(starts_capacity * sizeof *starts);
    json_int_t *pcs = malloc(pcs_capacity * sizeof *pcs);
    if (starts == NULL || pcs == NULL)
        goto fail;
    starts[0] = 0;
    p = skip_space(p + 1, end);
    if (p < end && *p == ']')
        goto done;
    while (p < end && *p == '[') {
        p = skip_space(p + 1, end);
        size_t depth = 0;
        for (;;) {
            if (pc_count == pcs_capacity) {
                json_int_t *grown = realloc(pcs, 2 * pcs_capacity * sizeof *pcs);
                if (grown == NULL)
                    goto fail;
                pcs = grown;
                pcs_capacity *= 2;
            }
            p = scan_integer(p, end, &pcs[pc_count]);
            if (p == NULL)
                goto fail;
            pc_count++;
            depth++;
            p = skip_space(p, end);
            if (p < end && *p == ',') {
                p = skip_space(p + 1, end);
                continue;
            }
            break;
        }
        if (p >= end || *p != ']' || depth == 0)
            goto fail;
        if (count + 2 > starts_capacity) {
            size_t *grown = realloc(starts, 2 * starts_capacity * sizeof *starts);
            if (grown == NULL)
                goto fail;
            starts = grown;
            starts_capacity *= 2;
        }
        starts[++count] = pc_count;
        p = skip_space(p + 1, end);
        if (p < end && *p == ',') {
            p = skip_space(p + 1, end);
            continue;
        }
        if (p < end && *p == ']')
            goto done;
        break;
    }
fail:
    free(starts);
    free(pcs);
    return NULL;
done:
    reader->fast_pcs = pcs;
    reader->fast_stack_start = starts;
    reader->fast_stack_count = count;
    return p + 1;
}

/* An array the fast path read: text[start, end) is its "[...]". */
struct raw_span {
    size_t start, end;
};

/* Find the top-level "samples" and "stacks" members of the document in text[0, size) and read
 * their rows; the arrays read go in spans (at most two, in text order). A member it cannot
 * read is left to jansson. Returns the number of spans. */
static size_t raw_scan_samples(struct raw_reader *reader, const char *text, size_t size,
                               struct raw_span spans[2])
{
    size_t span_count = 0;
    const char *end = text + size, *p = skip_space(text, end);
    if (p >= end || *p != '{')
        return 0;
    int depth = 0;
    /* per member: its array's '[', and how often its key was seen */
    const char *found[2] = {NULL, NULL};
    static const char *const keys[2] = {"\"samples\"", "\"stacks\""};
    int seen[2] = {0, 0};
    for (; p < end; p++) {
        char c = *p;
        if (c == '"') {
            const char *key_end = skip_string(p, end);
            if (key_end == NULL)
                return span_count;
            /* a key of the top object: the string is followed by ':' */
            const char *after = skip_space(key_end, end);
            for (int m = 0; m < 2 && depth == 1 && after < end && *after == ':'; m++) {
                size_t length = strlen(keys[m]);
                if ((size_t)(key_end - p) != length || memcmp(p, keys[m], length) != 0)
                    continue;
                if (seen[m]++ > 0)
                    return span_count; /* a duplicate: jansson says so */
                const char *value = skip_space(after + 1, end);
                if (value < end && *value == '[')
                    found[m] = value;
            }
            p = key_end - 1;
        } else if (c == '{' || c == '[') {
            depth++;
            if (depth != 2 || (p != found[0] && p != found[1]))
                continue;
            const char *close =
                p == found[0] ? scan_rows(reader, p, end) : scan_stacks(reader, p, end);
            if (close == NULL)
                continue; /* jansson reads it */
            spans[span_count++] = (struct raw_span){(size_t)(p - text), (size_t)(close - text)};
            p = close - 1;
            depth--;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return span_count;
}

/* Where jansson's positions move in the text it reads: on line `line`, columns after `column`
 * are `shift` columns further right in the file. */
struct raw_shift {
    int line, column, shift;
};

/* The text jansson reads: the document with each span's array replaced by "[]" and the span's
 * line breaks, so that lines stay the file's; the columns that move are recorded in shifts
 * (one per span). Returns its length (malloc'd into *out), or 0 when out of memory. */
static size_t raw_rest_text(const char *text, size_t size, const struct raw_span *spans,
                            size_t span_count, char **out, struct raw_shift *shifts)
{
    /* each span gives back at most its own length, so `size` bounds the text */
    char *rest = malloc(size + 1), *at = rest;
    if (rest == NULL)
        return 0;
    size_t from = 0;
    int line = 1;
    const char *line_start = rest; /* in rest */
    for (size_t i = 0; i < span_count; i++) {
        memcpy(at, text + from, spans[i].start - from);
        for (const char *nl = at;
             (nl = memchr(nl, '\n', (size_t)(at + spans[i].start - from - nl))); nl++) {
            line++;
            line_start = nl + 1;
        }
        at += spans[i].start - from;
        *at++ = '[';
        *at++ = ']';
        /* jansson counts columns in characters: the first bytes of UTF-8 sequences */
        int column = 0;
        for (const char *c = line_start; c < at; c++)
            column += ((unsigned char)*c & 0xC0) != 0x80;
        const char *last_line = text + spans[i].start; /* in text */
        for (const char *nl = last_line;
             (nl = memchr(nl, '\n', (size_t)(text + spans[i].end - nl))) != NULL; nl++) {
            *at++ = '\n';
            line++;
            line_start = at;
            last_line = nl + 1;
        }
        if (last_line == text + spans[i].start) /* on one line: "[…]" became "[]" */
            shifts[i] = (struct raw_shift){line, column, (int)(spans[i].end - spans[i].start - 2)};
        else /* the span's last line lost its start */
            shifts[i] = (struct raw_shift){line, 0, (int)(text + spans[i].end - last_line)};
        from = spans[i].end;
    }
    memcpy(at, text + from, size - from);
    at += size - from;
    *at = '\0';
    *out = rest;
    return (size_t)(at - rest);
}

/* The optional "exit" object: {"status":"exited"} | {"status":"killed","signal":N} |
 * {"status":"vanished"} | {"status":"ring-rejected"} | {"status":"stopped"} (the profile's
 * duration ended, complete for its window) | {"status":"left-session"} (a forked child became
 * a daemon: profiled until then); a bare {"signal":N} also means killed.
 * A status this reader does not know is kept as "known, not normal": writers may add some. */
static int raw_read_exit(struct raw_reader *reader, const json_t *exit_object, struct ospx_raw *out)
{
    json_t *status, *signal_value;
    int rc = raw_member(reader, exit_object, "exit", "status", JSON_STRING, 0, &status);
    if (rc == 0)
        rc = raw_member(reader, exit_object, "exit", "signal", JSON_INTEGER, 0, &signal_value);
    if (rc < 0)
        return rc;
    out->exit.known = 1;
    if (signal_value != NULL) {
        json_int_t signal_number = 0;
        rc = raw_integer_value(reader, signal_value, "exit.signal", 1, 1024, &signal_number);
        if (rc < 0)
            return rc;
        out->exit.signal = (int)signal_number;
    }
    out->exit.left_session =
        status != NULL && strcmp(json_string_value(status), "left-session") == 0;
    if (status != NULL && (strcmp(json_string_value(status), "exited") == 0 ||
                           strcmp(json_string_value(status), "stopped") == 0)) {
        out->exit.normal = 1;
        out->exit.signal = 0;
    } else if (status != NULL && strcmp(json_string_value(status), "killed") == 0 &&
               signal_value == NULL) {
        return raw_fail(reader, "exit", "status \"killed\" without a \"signal\"");
    }
    return 0;
}

/* The optional "drops" object: {"<reason>": count, ...}, why samples were lost. */
static int raw_read_drops(struct raw_reader *reader, const json_t *drops, struct ospx_raw *out)
{
    size_t count = json_object_size(drops);
    out->drops = raw_table(reader, count, sizeof *out->drops);
    if (out->drops == NULL)
        return -ENOMEM;
    const char *reason;
    json_t *value;
    json_object_foreach((json_t *)drops, reason, value)
    {
        char path[160];
        snprintf(path, sizeof path, "drops.%.100s", reason);
        json_int_t number = 0;
        int rc = raw_integer_value(reader, value, path, 0, INT64_MAX, &number);
        if (rc < 0)
            return rc;
        struct ospx_drop *drop = &out->drops[out->drop_count];
        drop->reason = strdup(reason);
        if (drop->reason == NULL)
            return raw_out_of_memory(reader);
        drop->count = (uint64_t)number;
        out->drop_count++;
    }
    return 0;
}

/* The optional "escaped" array: [{"pid": N, "exe": "...", "reason": "..."}], processes this
 * one started that ran unprofiled. */
static int raw_read_escaped(struct raw_reader *reader, const json_t *escaped, struct ospx_raw *out)
{
    size_t count = json_array_size(escaped);
    out->escaped = raw_table(reader, count, sizeof *out->escaped);
    if (out->escaped == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        char path[64];
        json_t *entry;
        int rc = raw_entry(reader, escaped, "escaped", i, JSON_OBJECT, path, sizeof path, &entry);
        if (rc < 0)
            return rc;
        struct ospx_escaped *process = &out->escaped[i];
        out->escaped_count = i + 1;
        json_int_t pid = 0;
        rc = raw_integer(reader, entry, path, "pid", 0, INT64_MAX, &pid);
        if (rc == 0)
            rc = raw_string(reader, entry, path, "exe", 0, &process->exe);
        if (rc == 0)
            rc = raw_string(reader, entry, path, "reason", 0, &process->reason);
        if (rc < 0)
            return rc;
        process->pid = pid;
    }
    return 0;
}

/* The file's one process (run.c appends the run's others). */
static int raw_read_process(struct raw_reader *reader, const json_t *root, struct ospx_raw *out)
{
    json_t *forked = json_object_get(root, "forked"), *escaped;
    if (forked != NULL && !json_is_boolean(forked))
        return raw_fail(reader, "forked", "expected a boolean, found %s", json_type_name(forked));
    json_t *collector = NULL, *unwind = NULL;
    json_int_t parent_pid = -1, ready_ns = -1;
    int rc = raw_optional_integer(reader, root, "", "parent_pid", &parent_pid);
    if (rc == 0)
        rc = raw_member(reader, root, "", "collector", JSON_OBJECT, 0, &collector);
    if (rc == 0 && collector != NULL)
        rc = raw_member(reader, collector, "collector", "unwind", JSON_OBJECT, 0, &unwind);
    if (rc == 0 && unwind != NULL)
        rc = raw_optional_integer(reader, unwind, "collector.unwind", "ready_ns", &ready_ns);
    if (rc == 0)
        rc = raw_member(reader, root, "", "escaped", JSON_ARRAY, 0, &escaped);
    if (rc == 0 && escaped != NULL)
        rc = raw_read_escaped(reader, escaped, out);
    if (rc < 0)
        return rc;
    out->processes = raw_table(reader, 1, sizeof *out->processes);
    if (out->processes == NULL)
        return -ENOMEM;
    out->process_count = 1;
    struct ospx_process *process = &out->processes[0];
    process->exe = strdup(out->exe);
    process->source_path = strdup(reader->path);
    if (process->exe == NULL || process->source_path == NULL)
        return raw_out_of_memory(reader);
    process->pid = out->pid;
    process->parent_pid = parent_pid;
    process->forked = forked != NULL && json_is_true(forked);
    process->start_unix_ns = out->start_unix_ns;
    process->end_unix_ns = out->end_unix_ns;
    process->rate_hz = out->rate_hz;
    process->process_cpu_ns = out->process_cpu_ns;
    process->unwind_ready_ns = ready_ns;
    process->dropped = out->dropped;
    process->exit = out->exit;
    process->image_count = out->image_count;
    return 0;
}

/* Everything after parsing: the document's fields into *out. */
static int raw_read_document(struct raw_reader *reader, const json_t *root, struct ospx_raw *out)
{
    if (!json_is_object(root))
        return raw_fail(reader, "", "expected a JSON object at the top, found %s",
                        json_type_name(root));
    json_int_t version = 0, pid = 0, rate_hz = 0, start_ns = 0, end_ns = 0, dropped = 0;
    int rc = raw_integer(reader, root, "", "version", INT64_MIN, INT64_MAX, &version);
    if (rc < 0)
        return rc;
    if (version != OSPX_RAW_VERSION)
        return ospx_error_set(reader->err, ENOTSUP, reader->path, 0, 0,
                              "unsupported raw version %" JSON_INTEGER_FORMAT
                              " (this reader knows %d)",
                              version, OSPX_RAW_VERSION);
    out->version = (int)version;

    json_t *images, *threads, *stacks, *samples, *exit_object, *drops;
    json_int_t process_cpu_ns = -1;
    rc = raw_integer(reader, root, "", "pid", 0, INT64_MAX, &pid);
    if (rc == 0)
        rc = raw_string(reader, root, "", "exe", 1, &out->exe);
    if (rc == 0)
        rc = raw_integer(reader, root, "", "rate_hz", 1, UINT32_MAX, &rate_hz);
    if (rc == 0)
        rc = raw_string(reader, root, "", "platform", 1, &out->platform);
    if (rc == 0)
        rc = raw_integer(reader, root, "", "start_unix_ns", 0, INT64_MAX, &start_ns);
    if (rc == 0)
        rc = raw_integer(reader, root, "", "end_unix_ns", 0, INT64_MAX, &end_ns);
    if (rc == 0)
        rc = raw_member(reader, root, "", "images", JSON_ARRAY, 1, &images);
    if (rc == 0)
        rc = raw_member(reader, root, "", "threads", JSON_ARRAY, 1, &threads);
    if (rc == 0)
        rc = raw_member(reader, root, "", "stacks", JSON_ARRAY, 1, &stacks);
    if (rc == 0)
        rc = raw_member(reader, root, "", "samples", JSON_ARRAY, 1, &samples);
    if (rc == 0)
        rc = raw_integer(reader, root, "", "dropped", 0, INT64_MAX, &dropped);
    if (rc == 0)
        rc = raw_member(reader, root, "", "exit", JSON_OBJECT, 0, &exit_object);
    if (rc == 0)
        rc = raw_member(reader, root, "", "drops", JSON_OBJECT, 0, &drops);
    if (rc == 0)
        rc = raw_optional_integer(reader, root, "", "process_cpu_ns", &process_cpu_ns);
    out->process_cpu_ns = process_cpu_ns;
    if (rc < 0)
        return rc;
    if (end_ns < start_ns)
        return raw_fail(reader, "end_unix_ns",
                        "%" JSON_INTEGER_FORMAT " is before start_unix_ns %" JSON_INTEGER_FORMAT,
                        end_ns, start_ns);
    out->pid = pid;
    out->rate_hz = (uint32_t)rate_hz;
    out->start_unix_ns = (uint64_t)start_ns;
    out->end_unix_ns = (uint64_t)end_ns;
    out->dropped = (uint64_t)dropped;

    rc = raw_read_images(reader, images, out);
    if (rc == 0)
        rc = raw_read_threads(reader, threads, out);
    if (rc == 0)
        rc = raw_read_stacks(reader, stacks, out);
    if (rc == 0)
        rc = raw_read_samples(reader, samples, out);
    if (rc == 0)
        rc = raw_merge_renamed_threads(reader, out);
    if (rc == 0 && exit_object != NULL)
        rc = raw_read_exit(reader, exit_object, out);
    if (rc == 0 && drops != NULL)
        rc = raw_read_drops(reader, drops, out);
    if (rc == 0)
        rc = raw_read_process(reader, root, out);
    return rc;
}

int ospx_raw_read(const char *path, struct ospx_raw *out, struct ospx_error *err)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int code = errno;
        return ospx_error_set(err, code, path, 0, 0, "%s", strerror(code));
    }
    return ospx__raw_read_fd(fd, path, out, err);
}

int ospx__raw_read_fd(int fd, const char *path, struct ospx_raw *out, struct ospx_error *err)
{
    memset(out, 0, sizeof *out);
    struct raw_reader reader = {.path = path, .err = err};
    FILE *file = fdopen(fd, "rb");
    if (file == NULL) {
        int code = errno;
        close(fd);
        return ospx_error_set(err, code, path, 0, 0, "%s", strerror(code));
    }
    struct stat info;
    if (fstat(fileno(file), &info) != 0) {
        int code = errno;
        fclose(file);
        return ospx_error_set(err, code, path, 0, 0, "%s", strerror(code));
    }
    if (S_ISDIR(info.st_mode)) {
        fclose(file);
        return ospx_error_set(err, EISDIR, path, 0, 0, "is a directory, not a raw profile");
    }
    if (S_ISREG(info.st_mode) && info.st_size == 0) {
        fclose(file);
        return ospx_error_set(err, EINVAL, path, 0, 0, "empty file (no raw profile in it)");
    }
    if (S_ISREG(info.st_mode) && (uint64_t)info.st_size > OSPX_RAW_MAX_BYTES) {
        fclose(file);
        return ospx_error_set(err, EFBIG, path, 0, 0,
                              "file is %.1f GiB (%lld bytes), above the reader's limit of "
                              "%llu GiB",
                              (double)info.st_size / (double)(1ULL << 30), (long long)info.st_size,
                              OSPX_RAW_MAX_BYTES >> 30);
    }

    /* The whole text, so that the sample rows can be read before jansson sees the rest: a
     * regular file mapped (no copy; the pages are the page cache's), else read. */
    size_t size = 0;
    char *text = NULL, *mapped = NULL;
    if (S_ISREG(info.st_mode)) {
        void *map = mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE,
                         fileno(file), 0);
        if (map != MAP_FAILED) {
            mapped = map;
            size = (size_t)info.st_size;
        }
    }
    size_t capacity = S_ISREG(info.st_mode) ? (size_t)info.st_size + 1 : 65536;
    if (mapped == NULL)
        text = malloc(capacity + 1);
    size_t got;
    while (mapped == NULL && text != NULL &&
           (got = fread(text + size, 1, capacity - size, file)) > 0) {
        size += got;
        if (size == capacity && size < OSPX_RAW_MAX_BYTES) {
            char *grown = realloc(text, capacity * 2 + 1);
            if (grown == NULL) {
                free(text);
                text = NULL;
                break;
            }
            text = grown;
            capacity *= 2;
        }
        if (size >= OSPX_RAW_MAX_BYTES)
            break;
    }
    int read_failed = ferror(file);
    fclose(file);
    if (text == NULL && mapped == NULL)
        return raw_out_of_memory(&reader);
    if (read_failed) {
        free(text);
        return ospx_error_set(err, EIO, path, 0, 0, "read error: %s", strerror(EIO));
    }
    if (size >= OSPX_RAW_MAX_BYTES) {
        free(text);
        return ospx_error_set(err, EFBIG, path, 0, 0, "more than the reader's limit of %llu GiB",
                              OSPX_RAW_MAX_BYTES >> 30);
    }
    const char *document = mapped != NULL ? mapped : text;
    struct raw_span spans[2];
    size_t span_count = raw_scan_samples(&reader, document, size, spans);
    char *rest = NULL;
    struct raw_shift shifts[2];
    size_t rest_size =
        span_count > 0 ? raw_rest_text(document, size, spans, span_count, &rest, shifts) : 0;

    if (span_count > 0 && rest == NULL) {
        free(text);
        if (mapped != NULL)
            munmap(mapped, size);
        free(reader.fast_rows);
        free(reader.fast_pcs);
        free(reader.fast_stack_start);
        return raw_out_of_memory(&reader);
    }
    json_error_t parse_error;
    json_t *root = json_loadb(rest != NULL ? rest : document, rest != NULL ? rest_size : size,
                              JSON_REJECT_DUPLICATES, &parse_error);
    free(rest);
    free(text);
    if (mapped != NULL)
        munmap(mapped, size);
    if (root == NULL) {
        free(reader.fast_rows);
        free(reader.fast_pcs);
        free(reader.fast_stack_start);
        /* jansson reports the column after the offending token; a message at column 0 (an
         * error at the very start of a line) keeps just the line. */
        int column = parse_error.column;
        for (size_t i = 0; i < span_count; i++)
            if (parse_error.line == shifts[i].line && parse_error.column > shifts[i].column)
                column += shifts[i].shift;
        return ospx_error_set(err, EINVAL, path, parse_error.line > 0 ? parse_error.line : 0,
                              parse_error.line > 0 ? column : 0, "%s", parse_error.text);
    }

    out->source_path = strdup(path);
    int rc = out->source_path != NULL ? raw_read_document(&reader, root, out)
                                      : raw_out_of_memory(&reader);
    json_decref(root);
    free(reader.fast_rows);
    free(reader.fast_pcs);
    free(reader.fast_stack_start);
    if (rc < 0)
        ospx_raw_free(out);
    return rc;
}

void ospx_raw_free(struct ospx_raw *raw)
{
    if (raw == NULL)
        return;
    for (size_t i = 0; i < raw->image_count; i++) {
        free(raw->images[i].path);
        free(raw->images[i].arch);
        free(raw->images[i].build_id);
    }
    for (size_t i = 0; i < raw->thread_count; i++)
        free(raw->threads[i].label);
    for (size_t i = 0; i < raw->stack_count; i++)
        free(raw->stacks[i].pcs);
    for (size_t i = 0; i < raw->drop_count; i++)
        free(raw->drops[i].reason);
    free(raw->drops);
    for (size_t i = 0; i < raw->process_count; i++) {
        free(raw->processes[i].exe);
        free(raw->processes[i].source_path);
    }
    free(raw->processes);
    for (size_t i = 0; i < raw->escaped_count; i++) {
        free(raw->escaped[i].exe);
        free(raw->escaped[i].reason);
    }
    free(raw->escaped);
    free(raw->images);
    free(raw->threads);
    free(raw->stacks);
    free(raw->samples);
    free(raw->source_path);
    free(raw->exe);
    free(raw->platform);
    memset(raw, 0, sizeof *raw);
}
