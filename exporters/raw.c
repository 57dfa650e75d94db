/* raw.c — the raw profile reader: one JSON file written by ospreyd (version 1, see
 * FORMATS.md and proto/raw-format.md) into a struct ospx_raw that the later stages trust.
 *
 * It owns every check on the file: a syntax error is reported with jansson's line and column,
 * a semantic error (a missing field, a wrong type, an index out of range, a negative time)
 * with the JSON path of the offending value, e.g. "samples[12][1]: thread index 7 out of
 * range (3 threads)". After ospx_raw_read() returns 0, every sample's thread and stack index
 * is in range, every stack has at least one pc and end_unix_ns >= start_unix_ns, so nothing
 * downstream checks again. Unknown fields are ignored, so writers may add fields.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ospx.h"

/* The largest raw file the reader loads. jansson holds the whole document in memory, several
 * times the file's size, so a bigger file is refused before it is read. */
#define OSPX_RAW_MAX_BYTES (2ULL << 30)

/* The most sampling periods one row may stand for: more than three years at 10 kHz, and small
 * enough that no sum of weights a file can hold overflows 64 bits. */
#define OSPX_RAW_MAX_WEIGHT (INT64_C(1) << 40)

/* What the reader is working on, so that each check can name the file. */
struct raw_reader {
    const char *path;
    struct ospx_error *err;
    /* the sample rows the fast path read (raw_scan_samples), NULL when it did not */
    json_int_t (*fast_rows)[5];
    size_t fast_count;
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
        if (rc < 0)
            return rc;
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
        json_int_t fiber = 0, tid = 0, cpu_ns = -1;
        int rc = raw_integer(reader, entry, path, "fiber", INT64_MIN, INT64_MAX, &fiber);
        if (rc == 0)
            rc = raw_string(reader, entry, path, "label", 1, &thread->label);
        /* tid is optional and not kept, but a present one must still be a thread id. */
        if (rc == 0)
            rc = raw_optional_integer(reader, entry, path, "tid", &tid);
        if (rc == 0)
            rc = raw_optional_integer(reader, entry, path, "cpu_ns", &cpu_ns);
        if (rc < 0)
            return rc;
        thread->fiber = fiber;
        thread->cpu_ns = cpu_ns;
    }
    return 0;
}

static int raw_read_stacks(struct raw_reader *reader, const json_t *stacks, struct ospx_raw *out)
{
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
        struct ospx_stack *stack = &out->stacks[i];
        out->stack_count = i + 1;
        stack->pcs = malloc(depth * sizeof *stack->pcs);
        if (stack->pcs == NULL)
            return raw_out_of_memory(reader);
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

/* Check one sample row (its `elements` values, the 5th defaulting to 1) and store it as
 * out->samples[i]. */
static int raw_store_sample(struct raw_reader *reader, struct ospx_raw *out, size_t i,
                            const json_int_t values[5])
{
    char path[64], element_path[96];
    snprintf(path, sizeof path, "samples[%zu]", i);
    if (values[0] < 0) {
        snprintf(element_path, sizeof element_path, "%s[0]", path);
        return raw_fail(reader, element_path, "negative time %" JSON_INTEGER_FORMAT, values[0]);
    }
    if (values[1] < 0 || (uint64_t)values[1] >= out->thread_count) {
        snprintf(element_path, sizeof element_path, "%s[1]", path);
        return raw_fail(reader, element_path,
                        "thread index %" JSON_INTEGER_FORMAT " out of range (%zu threads)",
                        values[1], out->thread_count);
    }
    if (values[2] < 0 || (uint64_t)values[2] >= out->stack_count) {
        snprintf(element_path, sizeof element_path, "%s[2]", path);
        return raw_fail(reader, element_path,
                        "stack index %" JSON_INTEGER_FORMAT " out of range (%zu stacks)", values[2],
                        out->stack_count);
    }
    if (values[3] != 0 && values[3] != 1) {
        snprintf(element_path, sizeof element_path, "%s[3]", path);
        return raw_fail(reader, element_path,
                        "state %" JSON_INTEGER_FORMAT " is neither 0 (on-CPU) nor 1 (waiting)",
                        values[3]);
    }
    if (values[4] < 1 || values[4] > OSPX_RAW_MAX_WEIGHT) {
        snprintf(element_path, sizeof element_path, "%s[4]", path);
        return raw_fail(reader, element_path,
                        values[4] < 1 ? "weight %" JSON_INTEGER_FORMAT
                                        " below 1 (a row stands for at least one period)"
                                      : "weight %" JSON_INTEGER_FORMAT
                                        " above 2^40 sampling periods",
                        values[4]);
    }
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
        out->samples = raw_table(reader, reader->fast_count, sizeof *out->samples);
        if (out->samples == NULL)
            return -ENOMEM;
        for (size_t i = 0; i < reader->fast_count; i++) {
            int rc = raw_store_sample(reader, out, i, reader->fast_rows[i]);
            if (rc < 0)
                return rc;
        }
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

/* ---- the fast path for "samples" ----
 *
 * A long profile is mostly its sample rows, millions of small arrays that jansson would hold
 * as millions of objects (about 250 bytes a row, and most of the reading time). So before
 * jansson sees the text, the top-level "samples" array is read here directly, when it is in the
 * plain form writers produce: arrays of 4 or 5 JSON integers. Then its text is blanked to
 * `[]` (line breaks kept, so every position jansson reports stays the same) and jansson reads
 * the rest. Anything else in that array (a real number, a string, a nested value, a leading
 * zero, a number too long for 64 bits, a syntax error) leaves the text alone: jansson and the
 * checks above then read it and report what is wrong exactly as before. */

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

/* Read the array at p ('[') as sample rows into reader->fast_rows. Returns the position after
 * its ']', NULL (and no rows) when it is not in the plain form. */
static const char *scan_rows(struct raw_reader *reader, const char *p, const char *end)
{
    size_t count = 0, capacity = 0;
    json_int_t(*rows)[5] = NULL;
    p = skip_space(p + 1, end);
    if (p < end && *p == ']') {
        reader->fast_rows = malloc(sizeof *rows);
        reader->fast_count = 0;
        return reader->fast_rows != NULL ? p + 1 : NULL;
    }
    while (p < end && *p == '[') {
        if (count == capacity) {
            capacity = capacity > 0 ? capacity * 2 : 4096;
            void *grown = realloc(rows, capacity * sizeof *rows);
            if (grown == NULL)
                break;
            rows = grown;
        }
        json_int_t *row = rows[count];
        row[4] = 1;
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
        count++;
        p = skip_space(p + 1, end);
        if (p < end && *p == ',') {
            p = skip_space(p + 1, end);
            continue;
        }
        if (p < end && *p == ']') {
            reader->fast_rows = rows;
            reader->fast_count = count;
            return p + 1;
        }
        break;
    }
    free(rows);
    return NULL;
}

/* Find the top-level "samples" member of the document in text[0, size), read its rows and
 * blank its array. Leaves everything as it was when it cannot. */
static void raw_scan_samples(struct raw_reader *reader, char *text, size_t size)
{
    const char *end = text + size, *p = skip_space(text, end);
    if (p >= end || *p != '{')
        return;
    int depth = 0;
    char *found = NULL;
    int seen = 0;
    for (; p < end; p++) {
        char c = *p;
        if (c == '"') {
            const char *key_end = skip_string(p, end);
            if (key_end == NULL)
                return;
            /* a key of the top object: the string is followed by ':' */
            const char *after = skip_space(key_end, end);
            if (depth == 1 && after < end && *after == ':' && key_end - p == 9 &&
                memcmp(p, "\"samples\"", 9) == 0) {
                if (seen++ > 0)
                    return; /* a duplicate: jansson says so */
                const char *value = skip_space(after + 1, end);
                if (value < end && *value == '[')
                    found = (char *)value;
            }
            p = key_end - 1;
        } else if (c == '{' || c == '[') {
            depth++;
            if (depth == 2 && found == p) {
                const char *close = scan_rows(reader, p, end);
                if (close == NULL)
                    return;
                /* blank "[...]" to "[]" and spaces, line breaks kept */
                for (char *q = (char *)p + 1; q < close - 1; q++)
                    if (*q != '\n')
                        *q = ' ';
                *((char *)close - 1) = ' ';
                ((char *)p)[1] = ']';
                p = close - 1;
                depth--;
            }
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
}

/* The optional "exit" object: {"status":"exited"} | {"status":"killed","signal":N} |
 * {"status":"vanished"} | {"status":"ring-rejected"}; a bare {"signal":N} also means killed.
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
    if (status != NULL && strcmp(json_string_value(status), "exited") == 0) {
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
    if (rc == 0 && exit_object != NULL)
        rc = raw_read_exit(reader, exit_object, out);
    if (rc == 0 && drops != NULL)
        rc = raw_read_drops(reader, drops, out);
    return rc;
}

int ospx_raw_read(const char *path, struct ospx_raw *out, struct ospx_error *err)
{
    memset(out, 0, sizeof *out);
    struct raw_reader reader = {.path = path, .err = err};
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        int code = errno;
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

    /* The whole text, so that the sample rows can be read before jansson sees the rest. */
    size_t size = 0, capacity = S_ISREG(info.st_mode) ? (size_t)info.st_size + 1 : 65536;
    char *text = malloc(capacity + 1);
    size_t got;
    while (text != NULL && (got = fread(text + size, 1, capacity - size, file)) > 0) {
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
    if (text == NULL)
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
    raw_scan_samples(&reader, text, size);

    json_error_t parse_error;
    json_t *root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &parse_error);
    free(text);
    if (root == NULL) {
        free(reader.fast_rows);
        /* jansson reports the column after the offending token; a message at column 0 (an
         * error at the very start of a line) keeps just the line. */
        return ospx_error_set(err, EINVAL, path, parse_error.line > 0 ? parse_error.line : 0,
                              parse_error.line > 0 ? parse_error.column : 0, "%s",
                              parse_error.text);
    }

    out->source_path = strdup(path);
    int rc = out->source_path != NULL ? raw_read_document(&reader, root, out)
                                      : raw_out_of_memory(&reader);
    json_decref(root);
    free(reader.fast_rows);
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
    }
    for (size_t i = 0; i < raw->thread_count; i++)
        free(raw->threads[i].label);
    for (size_t i = 0; i < raw->stack_count; i++)
        free(raw->stacks[i].pcs);
    for (size_t i = 0; i < raw->drop_count; i++)
        free(raw->drops[i].reason);
    free(raw->drops);
    free(raw->images);
    free(raw->threads);
    free(raw->stacks);
    free(raw->samples);
    free(raw->source_path);
    free(raw->exe);
    free(raw->platform);
    memset(raw, 0, sizeof *raw);
}
