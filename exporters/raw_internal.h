/* raw_internal.h — what the raw reader's files share: raw.c (the document, checked
 * member by member through jansson, with raw-samples.c and raw_reader.h), raw-scan.c (the file's
 * text: loaded, its plain sample rows and stacks read by the fast path, the rest parsed by jansson)
 * and raw-threads.c (one thread per kernel thread). Nothing outside these files includes it. */
#ifndef OSPX_RAW_INTERNAL_H
#define OSPX_RAW_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "ospx.h"

/* The largest raw file the reader loads. A document whose rows are not in the plain form goes
 * to jansson whole, several times the file's size in memory, so a bigger file is refused
 * before it is read. */
#define OSPX_RAW_MAX_BYTES (2ULL << 30)

/* The most sampling periods one row may stand for: more than three years at 10 kHz, and small
 * enough that no sum of weights a file can hold overflows 64 bits. */
#define OSPX_RAW_MAX_WEIGHT (INT64_C(1) << 40)

/* What the fast path read before jansson saw the text. */
struct ospx__raw_fast {
    /* the sample rows (scan_rows), NULL when it did not read them */
    struct ospx_sample *rows;
    size_t count;
    /* the stacks (scan_stacks): stack i's pcs are pcs[stack_start[i]] ..
     * pcs[stack_start[i + 1] - 1]; stack_start NULL when it did not read them */
    json_int_t *pcs;
    size_t *stack_start;
    size_t stack_count;
};

void ospx__raw_fast_free(struct ospx__raw_fast *fast);

/* Load the raw file open on fd (closed here) and parse it: the plain "samples" and "stacks"
 * arrays into *fast, the rest by jansson into *root. Errors name `path` (a syntax error with
 * the file's line and column). 0, or a negative errno with err set and nothing kept. */
int ospx__raw_parse(int fd, const char *path, struct ospx__raw_fast *fast, json_t **root,
                    struct ospx_error *err);

/* One thread per (fiber, tid): see raw-threads.c. 0 or -ENOMEM. */
int ospx__raw_merge_renamed_threads(struct ospx_raw *out);
/* One stack per generation of objects: see raw-generations.c. 0 or -ENOMEM. */
int ospx__raw_split_generations(struct ospx_raw *out);

#endif
