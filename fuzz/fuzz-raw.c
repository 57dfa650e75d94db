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

/* The reader reads plain sample rows on a fast path of its own and everything else through
 * jansson. The key spelled "sampl\u0065s" is the same key to JSON but only jansson sees it: the
 * input with its "samples" key so spelled must read the same, row for row, or fail the same
 * way (the same text; positions may move by the five bytes). */
static void check_both_paths_agree(const uint8_t *data, size_t size, int rc,
                                   const struct ospx_raw *raw, const struct ospx_error *err)
{
    const char key[] = "\"samples\"", escaped[] = "\"sampl\\u0065s\"";
    const uint8_t *at = memmem(data, size, key, sizeof key - 1);
    if (at == NULL || memmem(at + 1, size - (size_t)(at + 1 - data), key, sizeof key - 1) != NULL)
        return;
    size_t before = (size_t)(at - data), after = size - before - (sizeof key - 1);
    uint8_t *other = malloc(size + sizeof escaped);
    if (other == NULL)
        return;
    memcpy(other, data, before);
    memcpy(other + before, escaped, sizeof escaped - 1);
    memcpy(other + before + sizeof escaped - 1, at + sizeof key - 1, after);
    size_t other_size = before + sizeof escaped - 1 + after;
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
