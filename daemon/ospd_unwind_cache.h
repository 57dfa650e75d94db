/* ospd_unwind_cache.h — the rows of an object kept between runs, by build id (unwind-cache.c),
 * as unwind-table.c's builder asks for them and stores them. Internal to daemon/.
 */
#ifndef OSPD_UNWIND_CACHE_H
#define OSPD_UNWIND_CACHE_H

#include <gelf.h>
#include <stdint.h>

#include "ospd_unwind.h"

/* A cache file: the header, then the rows. The header names what the rows were built from —
 * the build id, the object's PF_X span and the size and hash of its call-frame sections — and
 * ends with a checksum over itself and the rows, so a file cut short, rewritten rows, or rows
 * of another object of the same build id (an .eh_frame altered, the build id kept) are
 * refused and built again. */
struct cache_header {
    uint64_t magic;
    uint32_t version, row_size;
    uint64_t start_vaddr, end_vaddr;
    uint32_t count, machine;
    uint64_t frames_size, frames_hash; /* .eh_frame, .eh_frame_hdr and .debug_frame */
    char build_id[136];                /* OSPC_BUILD_ID_SIZE, NUL-padded */
    uint64_t checksum;                 /* over the header (this field 0) and the rows */
};

/* What the rows of an object depend on, beyond its build id: its call-frame sections. */
struct frames_identity {
    uint64_t size, hash;
};

/* The size and hash of an object's .eh_frame, .eh_frame_hdr and .debug_frame. */
void ospd_unwind_frames_identity(Elf *elf, struct frames_identity *out);
/* The header a cache file of these rows must carry (count and checksum left 0). */
void ospd_unwind_cache_header(struct cache_header *h, const char *build_id, uint16_t machine,
                              const struct frames_identity *frames, uint64_t lo, uint64_t hi);
/* The rows of cache file `name` in dir into out: 0, or a negative errno (see unwind-cache.c). */
int ospd_unwind_cache_load(int dir, const char *name, const struct cache_header *want,
                           struct ospd_unwind_rows *out);
/* Keep rows for the next run, and bound the directory's size. */
void ospd_unwind_cache_store(int dir, const char *name, struct cache_header *h,
                             const struct ospd_unwind_rows *rows);

#endif
