/* raw_reader.h — the raw reader's checked access to the document, shared by raw.c (the
 * document, the process, its images and threads) and raw-samples.c (the stacks and the
 * samples): each member read with its type checked and its JSON path named in the error
 * ("FILE: PATH: text"), each table of rows read by one loop. Internal to the raw reader,
 * as raw_internal.h; small functions, inline here so that each file calls them by the
 * same names.
 */
#ifndef OSPX_RAW_READER_H
#define OSPX_RAW_READER_H

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "ospx.h"
#include "ospx_internal.h"
#include "raw_internal.h"

/* What the reader is working on, so that each check can name the file. */
struct raw_reader {
    const char *path;
    struct ospx_error *err;
    /* what the fast path (raw-scan.c) read */
    struct ospx__raw_fast fast;
};

/* Record a semantic error at a JSON path: "FILE: PATH: text". Returns -EINVAL. */
__attribute__((format(printf, 3, 4))) static inline int
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

static inline int raw_out_of_memory(struct raw_reader *reader)
{
    return ospx_error_set(reader->err, ENOMEM, reader->path, 0, 0, "out of memory");
}

static inline const char *json_type_name(const json_t *value)
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
static inline int raw_member(struct raw_reader *reader, const json_t *object,
                             const char *object_path, const char *key, json_type type, int required,
                             json_t **value)
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
static inline int raw_integer_value(struct raw_reader *reader, const json_t *value,
                                    const char *path, json_int_t min, json_int_t max,
                                    json_int_t *out)
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

static inline int raw_integer(struct raw_reader *reader, const json_t *object,
                              const char *object_path, const char *key, json_int_t min,
                              json_int_t max, json_int_t *out)
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
static inline int raw_optional_integer(struct raw_reader *reader, const json_t *object,
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
static inline int raw_string(struct raw_reader *reader, const json_t *object,
                             const char *object_path, const char *key, int required, char **out)
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
static inline int raw_entry(struct raw_reader *reader, const json_t *array, const char *array_name,
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
static inline void *raw_table(struct raw_reader *reader, size_t count, size_t element_size)
{
    void *table = calloc(count > 0 ? count : 1, element_size);
    if (table == NULL)
        raw_out_of_memory(reader);
    return table;
}

/* Reads entry i of a table (raw_read_rows), at `path`, into its zeroed row of out. */
typedef int (*raw_row_reader)(struct raw_reader *reader, const json_t *entry, const char *path,
                              size_t i, struct ospx_raw *out);

/* The array `name` (`array`), each entry of the JSON type `type`, read by `read_row` into row i
 * of a new table at *(void **)table of `size`-byte rows; *count is i + 1 once row i is begun, so
 * that ospx_raw_free releases what a row read halfway holds. */
static inline int raw_read_rows(struct raw_reader *reader, const json_t *array, const char *name,
                                json_type type, void *table, size_t size, size_t *count,
                                raw_row_reader read_row, struct ospx_raw *out)
{
    size_t n = json_array_size(array);
    void **rows = table;
    *rows = raw_table(reader, n, size);
    if (*rows == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        char path[64];
        json_t *entry;
        int rc = raw_entry(reader, array, name, i, type, path, sizeof path, &entry);
        if (rc < 0)
            return rc;
        *count = i + 1;
        rc = read_row(reader, entry, path, i, out);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* raw-samples.c: the "stacks" array, the optional "stack_ends" and the "samples" rows,
 * checked against the tables already read. 0, or a negative errno with the error set. */
int ospx__raw_read_stacks(struct raw_reader *reader, const json_t *stacks, struct ospx_raw *out);
int ospx__raw_read_stack_ends(struct raw_reader *reader, const json_t *root, struct ospx_raw *out);
int ospx__raw_read_samples(struct raw_reader *reader, const json_t *samples, struct ospx_raw *out);

#endif
