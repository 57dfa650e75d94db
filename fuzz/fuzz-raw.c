/* fuzz-raw.c — fuzz target for the raw profile reader (exporters/raw.c, ospx_raw_read).
 *
 * The input is the whole raw file. The reader takes a path, so the bytes go into an anonymous
 * in-memory file opened through /proc/self/fd. Any crash, leak or undefined behaviour is a bug,
 * and so is a success that breaks the reader's promise to later stages (indices in range,
 * stacks non-empty: see fuzz_check_raw_result) or a failure without one clear error line.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "ospx.h"

/* `data` with `key` respelled as `escaped` when it occurs exactly once (malloc'd, its size in
 * *out_size); a copy of `data` when it does not. NULL when out of memory. */
static uint8_t *respell(const uint8_t *data, size_t size, const char *key, const char *escaped,
                        size_t *out_size)
{
    size_t key_size = strlen(key), escaped_size = strlen(escaped);
    uint8_t *other = malloc(size + escaped_size + 1);
    if (other == NULL)
        return NULL;
    const uint8_t *at = memmem(data, size, key, key_size);
    if (at == NULL || memmem(at + 1, size - (size_t)(at + 1 - data), key, key_size) != NULL) {
        memcpy(other, data, size);
        *out_size = size;
        return other;
    }
    size_t before = (size_t)(at - data), after = size - before - key_size;
    memcpy(other, data, before);
    memcpy(other + before, escaped, escaped_size);
    memcpy(other + before + escaped_size, at + key_size, after);
    *out_size = before + escaped_size + after;
    return other;
}

/* The reader reads plain sample rows and stacks on a fast path of its own and everything else
 * through jansson. The keys spelled "sampl\u0065s" and "stack\u0073" are the same keys to JSON
 * but only jansson sees them: the input with its "samples" and "stacks" keys so spelled must
 * read the same, row for row and pc for pc, or fail the same way (the same text; positions may
 * move by the bytes added). */
static void check_both_paths_agree(const uint8_t *data, size_t size, int rc,
                                   const struct ospx_raw *raw, const struct ospx_error *err)
{
    size_t once_size, other_size;
    uint8_t *once = respell(data, size, "\"samples\"", "\"sampl\\u0065s\"", &once_size);
    if (once == NULL)
        return;
    uint8_t *other = respell(once, once_size, "\"stacks\"", "\"stack\\u0073\"", &other_size);
    free(once);
    if (other == NULL)
        return;
    if (other_size == size) { /* neither key was respelled */
        free(other);
        return;
    }
    char path[64];
    int fd = fuzz_memory_file(other, other_size, path, sizeof path);
    free(other);
    if (fd < 0)
        return;
    struct ospx_raw slow;
    struct ospx_error slow_err;
    memset(&slow_err, 0, sizeof slow_err);
    int slow_rc = ospx_raw_read(path, &slow, &slow_err);
    FUZZ_CHECK(slow_rc == rc, "fast path %d, jansson path %d (%s / %s)", rc, slow_rc, err->text,
               slow_err.text);
    if (rc == 0) {
        FUZZ_CHECK(slow.sample_count == raw->sample_count, "%zu rows, jansson %zu",
                   raw->sample_count, slow.sample_count);
        for (size_t i = 0; i < raw->sample_count; i++) {
            const struct ospx_sample *x = &raw->samples[i], *y = &slow.samples[i];
            FUZZ_CHECK(x->t_rel_ns == y->t_rel_ns && x->thread == y->thread &&
                           x->stack == y->stack && x->state == y->state && x->weight == y->weight,
                       "row %zu: the fast path read other values than jansson", i);
        }
        FUZZ_CHECK(slow.stack_count == raw->stack_count, "%zu stacks, jansson %zu",
                   raw->stack_count, slow.stack_count);
        for (size_t i = 0; i < raw->stack_count; i++) {
            FUZZ_CHECK(slow.stacks[i].depth == raw->stacks[i].depth, "stack %zu: depth", i);
            for (size_t k = 0; k < raw->stacks[i].depth; k++)
                FUZZ_CHECK(slow.stacks[i].pcs[k] == raw->stacks[i].pcs[k],
                           "stack %zu: the fast path read another pc than jansson", i);
        }
    }
    ospx_raw_free(&slow);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memory_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0; /* out of descriptors or memory: nothing to learn from this input */
    struct ospx_raw raw;
    struct ospx_error err;
    memset(&err, 0, sizeof err);
    int rc = ospx_raw_read(path, &raw, &err);
    fuzz_check_raw_result(rc, &raw, &err, path);
    check_both_paths_agree(data, size, rc, &raw, &err);
    ospx_raw_free(&raw);
    close(fd);
    return 0;
}
