/* ospd_unwind.h — ospreyd's side of the unwind tables (proto/osp_unwind.h): building an
 * image's rows from its CFI (unwind-table.c, elfutils' libdw) and publishing them in the
 * shared object the shim's handler reads (unwind-publish.c). Both are pure in their inputs —
 * a path, a memory buffer — so the tests drive them on real objects and on corrupt ones.
 */
#ifndef OSPD_UNWIND_H
#define OSPD_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "osp_unwind.h"

#define OSPD_UNWIND_MAX_ROWS   (1u << 24) /* rows of one image's table */
#define OSPD_UNWIND_MAX_PROBES (1u << 22) /* lookups spent finding FDEs without a table */

/* One image's rows, pc_offset from start_vaddr (a link-time address: the lowest PF_X byte). */
struct ospd_unwind_rows {
    struct osp_unwind_row *rows;
    uint32_t count;
    uint64_t start_vaddr, end_vaddr; /* the PF_X span, link-time addresses */
    uint64_t bias;                   /* runtime minus link-time address (mapped sources) */
    bool from_cache;                 /* read back from the cache, not built */
};

/* Where an image's CFI comes from: a file, or a copy in memory (the vDSO). */
struct ospd_unwind_source {
    const char *path;      /* named in errors; opened unless open_path or memory is set */
    const char *open_path; /* opened instead (/proc/PID/map_files/...), or NULL */
    const void *memory;    /* the object's bytes, or NULL */
    size_t memory_size;
    uint16_t machine; /* ELF e_machine the rows are for */
    bool mapped;      /* map_start/map_offset describe the executable mapping: set bias */
    uint64_t map_start, map_offset;
    const char *cache_dir; /* rows kept between runs by build id here, or NULL */
    bool libdw;            /* rows from libdw's dwarf_cfi_addrframe, not cfi-rows.c */
};

/* Evaluate the CFI of an ELF object into *out (and its load bias, for a mapped source).
 * Returns 0, or a negative errno with one line in err (the path and what is wrong). Each call
 * has handles of its own: calls on two threads at once are safe. */
int ospd_unwind_build(const struct ospd_unwind_source *src, struct ospd_unwind_rows *out, char *err,
                      size_t errsz);
void ospd_unwind_rows_free(struct ospd_unwind_rows *rows);
/* Whether rows can be built for ELF machine `machine` (x86_64, aarch64), whatever ospreyd's
 * own: a target emulated by qemu-user (an arm64 program on an x86_64 host) shares the host's
 * kernel, /proc and shared memory, and its objects' CFI reads the same from here. */
bool ospd_unwind_knows_machine(uint32_t machine);

/* The writer of one shared table object. */
struct ospd_unwind_region {
    uint8_t *map;  /* the whole object, mapped read-write */
    uint64_t size; /* its size */
    int fd;        /* for posix_fallocate before each write; -1 for memory that needs none */
    uint64_t used; /* bump allocator, 16-byte aligned */
    uint64_t generation;
    struct osp_unwind_entry *entries; /* the ready images, sorted by start */
    uint32_t count;
};

/* Check the header the shim wrote (magic, version, sizes, the row size) and take the object
 * over. Returns 0 or -EPROTO with the reason in err. */
int ospd_unwind_region_init(struct ospd_unwind_region *r, void *map, uint64_t size, int fd,
                            char *err, size_t errsz);
void ospd_unwind_region_free(struct ospd_unwind_region *r);

/* Publish `rows` for the image whose PF_X span starts at runtime address `start`: the rows are
 * copied into the object, then a new snapshot of every ready image (an older image
 * overlapping the range is replaced: it was unloaded) is written and published (U1).
 * Returns 0, -ENOSPC when the object (or /dev/shm) is full, -E2BIG past
 * OSP_UNWIND_MAX_ENTRIES images. */
int ospd_unwind_region_publish(struct ospd_unwind_region *r, uint64_t start,
                               const struct ospd_unwind_rows *rows);
/* The same in three steps, so that the copy of a large image's rows need not hold the thread
 * that publishes (unwind-source.c): reserve their room (NULL when the object is full), fill it
 * (reserve the pages in /dev/shm, copy the rows: any thread, while the object stays mapped;
 * 0 or -ENOSPC), then add the image to a new snapshot and publish it (0, -E2BIG). Reserve and
 * add run on one thread, the one that publishes. */
uint8_t *ospd_unwind_region_reserve(struct ospd_unwind_region *r,
                                    const struct ospd_unwind_rows *rows);
int ospd_unwind_region_fill(const struct ospd_unwind_region *r, uint8_t *at,
                            const struct ospd_unwind_rows *rows);
int ospd_unwind_region_add(struct ospd_unwind_region *r, uint64_t start,
                           const struct ospd_unwind_rows *rows, const uint8_t *at);

#endif /* OSPD_UNWIND_H */
