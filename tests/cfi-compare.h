/* cfi-compare.h — the CFI-to-rows translator against libdw's rows on real objects
 * (cfi-compare.c): used by test-cfi.c (sampled) and by bench/unwind's full run
 * (cfi-compare-main.c). */
#ifndef CFI_COMPARE_H
#define CFI_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct cfi_compare_options {
    bool full;            /* every row of both tables; else `samples` addresses an object */
    unsigned samples;     /* libdw's row at this many addresses of each object */
    bool verbose;         /* a line per object in the log */
    uint64_t max_objects; /* stop after this many objects of this machine (0: all) */
    uint16_t machine;     /* the objects' ELF machine (0: ospreyd's own) */
};

struct cfi_compare_totals {
    uint64_t objects;       /* ELF objects of this machine looked at */
    uint64_t translated;    /* their rows built by the translator */
    uint64_t left_to_libdw; /* left to libdw (no search table libdw would use) */
    uint64_t unbuilt;       /* neither builder has rows (no code, no CFI) */
    uint64_t failed;        /* libdw failed where the translator built rows */
    uint64_t rows;          /* the translator's rows */
    uint64_t addresses;     /* compared: sampled addresses, or the boundaries of both tables */
    uint64_t differing;     /* of which the rows differ */
    uint64_t translator_ns, libdw_ns; /* thread CPU time of each builder (libdw: full only) */
    char first_difference[512];
};

/* Compare one file (skipped unless an ELF executable or shared object of this machine), or
 * every file under dir (no link followed). Differences and notes go to log (may be NULL). */
int cfi_compare_object(const char *path, const struct cfi_compare_options *options,
                       struct cfi_compare_totals *totals, FILE *log);
int cfi_compare_tree(const char *dir, const struct cfi_compare_options *options,
                     struct cfi_compare_totals *totals, FILE *log);

#endif /* CFI_COMPARE_H */
