/* raw-scan.c — a raw profile's text, from the file to jansson's document: the file loaded
 * (mapped when regular, else read; refused above OSPX_RAW_MAX_BYTES), its top-level "samples"
 * and "stacks" arrays read by the fast path below when they are in the plain form ospreyd
 * writes, and the rest parsed by jansson with its error positions mapped back to the file's.
 * raw.c checks the document member by member. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospx.h"
#include "ospx_internal.h"
#include "raw_internal.h"

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
 * leaves its text alone: jansson and raw.c's checks then read it and report what is wrong
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
    /* At most 19 digits are read (one more than this path takes, so that a longer number is
     * seen as one): one bound checked a digit, not two. */
    const char *limit = end - p > 19 ? p + 19 : end;
    uint64_t number = 0;
    while (p < limit && (unsigned char)(*p - '0') <= 9)
        number = number * 10 + (uint64_t)(*p++ - '0');
    size_t length = (size_t)(p - digits);
    if (length == 0 || length > 18 || (length > 1 && *digits == '0'))
        return NULL; /* longer than any value this path takes: jansson decides */
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E'))
        return NULL;
    *value = negative ? -(json_int_t)number : (json_int_t)number;
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

/* Read the array at p ('[') as sample rows into fast->rows. Returns the position after
 * its ']', NULL (and no rows) when it is not in the plain form, or a row fails a check that
 * needs no other table (time, state, weight; an index above 32 bits): the slow path then says
 * which. */
static const char *scan_rows(struct ospx__raw_fast *fast, const char *p, const char *end)
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
        fast->rows = rows;
        fast->count = 0;
        return p + 1;
    }
    while (p < end && *p == '[') {
        if (ospx__grow(&rows, &capacity, count, sizeof *rows, 1) != 0)
            break;
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
            fast->rows = fitted != NULL ? fitted : rows;
            fast->count = count;
            return p + 1;
        }
        break;
    }
    free(rows);
    return NULL;
}

/* Read the array at p ('[') as stacks, non-empty arrays of integers, into fast->pcs and
 * fast->stack_start. Returns the position after its ']', NULL (and nothing kept) when it is not
 * in that plain form (an empty stack included: jansson's path reports it). */
static const char *scan_stacks(struct ospx__raw_fast *fast, const char *p, const char *end)
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
            if (ospx__grow(&pcs, &pcs_capacity, pc_count, sizeof *pcs, 1) != 0)
                goto fail;
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
        if (ospx__grow(&starts, &starts_capacity, count + 1, sizeof *starts, 1) != 0)
            goto fail;
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
    fast->pcs = pcs;
    fast->stack_start = starts;
    fast->stack_count = count;
    return p + 1;
}

/* An array the fast path read: text[start, end) is its "[...]". */
struct raw_span {
    size_t start, end;
};

/* Find the top-level "samples" and "stacks" members of the document in text[0, size) and read
 * their rows; the arrays read go in spans (at most two, in text order). A member it cannot
 * read is left to jansson. Returns the number of spans. */
static size_t raw_scan_samples(struct ospx__raw_fast *fast, const char *text, size_t size,
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
            const char *close = p == found[0] ? scan_rows(fast, p, end) : scan_stacks(fast, p, end);
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

void ospx__raw_fast_free(struct ospx__raw_fast *fast)
{
    free(fast->rows);
    free(fast->pcs);
    free(fast->stack_start);
    memset(fast, 0, sizeof *fast);
}

static int raw_out_of_memory(const char *path, struct ospx_error *err)
{
    return ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
}

int ospx__raw_parse(int fd, const char *path, struct ospx__raw_fast *fast, json_t **root_out,
                    struct ospx_error *err)
{
    memset(fast, 0, sizeof *fast);
    *root_out = NULL;
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
        return raw_out_of_memory(path, err);
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
    size_t span_count = raw_scan_samples(fast, document, size, spans);
    char *rest = NULL;
    struct raw_shift shifts[2];
    size_t rest_size =
        span_count > 0 ? raw_rest_text(document, size, spans, span_count, &rest, shifts) : 0;

    if (span_count > 0 && rest == NULL) {
        free(text);
        if (mapped != NULL)
            munmap(mapped, size);
        ospx__raw_fast_free(fast);
        return raw_out_of_memory(path, err);
    }
    json_error_t parse_error;
    json_t *root = json_loadb(rest != NULL ? rest : document, rest != NULL ? rest_size : size,
                              JSON_REJECT_DUPLICATES, &parse_error);
    size_t first = 0; /* the value's first byte: a file of blanks has none to cut short */
    while (root == NULL && first < size &&
           (document[first] == ' ' || document[first] == '\t' || document[first] == '\r' ||
            document[first] == '\n'))
        first++;
    free(rest);
    free(text);
    if (mapped != NULL)
        munmap(mapped, size);
    if (root == NULL) {
        ospx__raw_fast_free(fast);
        /* jansson reports the column after the offending token; a message at column 0 (an
         * error at the very start of a line) keeps just the line. */
        int column = parse_error.column;
        for (size_t i = 0; i < span_count; i++)
            if (parse_error.line == shifts[i].line && parse_error.column > shifts[i].column)
                column += shifts[i].shift;
        /* A file that stops inside its value was cut short (a run that did not finish, a copy
         * in part): said in words, beside jansson's text. */
        int cut_short =
            json_error_code(&parse_error) == json_error_premature_end_of_input && first < size;
        return ospx_error_set(err, EINVAL, path, parse_error.line > 0 ? parse_error.line : 0,
                              parse_error.line > 0 ? column : 0, "%s%s%s",
                              cut_short ? "the file ends early, cut short (" : "", parse_error.text,
                              cut_short ? ")" : "");
    }

    *root_out = root;
    return 0;
}
