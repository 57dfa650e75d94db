/* unwind-publish.c — ospreyd's writer of the shared unwind tables (proto/osp_unwind.h).
 *
 * Owns the object's allocation and its index snapshots. DESIGN: everything is written once,
 * appended, and never changed: a new image's rows, then a whole new sorted snapshot of the
 * ready images, then one release store of the snapshot's offset (U1). A handler that loaded an
 * older offset keeps reading an older, consistent snapshot, so the reader needs no lock, no
 * sequence count and no retry. Snapshots are rewritten only when an image is added (a boot
 * and each dlopen), so the space they take stays small; rows of an unloaded image stay
 * behind, unused, until the program exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ospd.h"
#include "ospd_unwind.h"

int ospd_unwind_region_init(struct ospd_unwind_region *r, void *map, uint64_t size, int fd,
                            char *err, size_t errsz)
{
    memset(r, 0, sizeof *r);
    const struct osp_unwind_header *h = map;
    const char *why = NULL;
    if (size < OSP_UNWIND_HEADER_SIZE)
        why = "smaller than its header";
    else if (h->magic != OSP_UNWIND_MAGIC)
        why = "bad magic";
    else if (h->abi_version != OSP_UNWIND_ABI_VERSION)
        why = "unknown ABI version";
    else if (h->header_size != OSP_UNWIND_HEADER_SIZE || h->size != size)
        why = "sizes disagree with the object";
    else if (h->row_size != sizeof(struct osp_unwind_row))
        why = "row size differs";
    else if (!ospd_unwind_knows_machine(h->arch))
        why = "rows for another architecture"; /* ours, or an emulated target's */
    if (why) {
        snprintf(err, errsz, "unwind tables rejected: %s", why);
        return -EPROTO;
    }
    r->map = map;
    r->size = size;
    r->fd = fd;
    r->used = OSP_UNWIND_HEADER_SIZE;
    return 0;
}

void ospd_unwind_region_free(struct ospd_unwind_region *r)
{
    free(r->entries);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

/* n bytes of the object, not yet reserved in /dev/shm (fill does). NULL when they do not fit. */
static uint8_t *bump(struct ospd_unwind_region *r, uint64_t n)
{
    uint64_t at = (r->used + OSP_UNWIND_ALIGN - 1) & ~(uint64_t)(OSP_UNWIND_ALIGN - 1);
    if (at > r->size || r->size - at < n)
        return NULL;
    r->used = at + n;
    struct osp_unwind_header *h = (struct osp_unwind_header *)r->map;
    atomic_store_explicit(&h->used, r->used, memory_order_relaxed); /* informational */
    return r->map + at;
}

/* n bytes at `at` reserved in /dev/shm: 0, or -ENOSPC (a full /dev/shm: writing would raise
 * SIGBUS). */
static int reserve_pages(const struct ospd_unwind_region *r, const uint8_t *at, uint64_t n)
{
    if (r->fd >= 0 && posix_fallocate(r->fd, (off_t)(at - r->map), (off_t)n) != 0)
        return -ENOSPC;
    return 0;
}

/* n bytes of the object, reserved in /dev/shm first. NULL when it does not fit. */
static uint8_t *allocate(struct ospd_unwind_region *r, uint64_t n)
{
    uint8_t *at = bump(r, n);
    return at != NULL && reserve_pages(r, at, n) == 0 ? at : NULL;
}

uint8_t *ospd_unwind_region_reserve(struct ospd_unwind_region *r,
                                    const struct ospd_unwind_rows *rows)
{
    if (rows->count == 0)
        return NULL;
    return bump(r, (uint64_t)rows->count * sizeof *rows->rows);
}

int ospd_unwind_region_fill(const struct ospd_unwind_region *r, uint8_t *at,
                            const struct ospd_unwind_rows *rows)
{
    uint64_t row_bytes = (uint64_t)rows->count * sizeof *rows->rows;
    int rc = reserve_pages(r, at, row_bytes);
    if (rc == 0)
        memcpy(at, rows->rows, row_bytes);
    return rc;
}

int ospd_unwind_region_publish(struct ospd_unwind_region *r, uint64_t start,
                               const struct ospd_unwind_rows *rows)
{
    uint64_t length = rows->end_vaddr - rows->start_vaddr;
    if (rows->count == 0 || start + length < start)
        return -EINVAL;
    uint8_t *row_mem = ospd_unwind_region_reserve(r, rows);
    if (row_mem == NULL)
        return -ENOSPC;
    int rc = ospd_unwind_region_fill(r, row_mem, rows);
    return rc != 0 ? rc : ospd_unwind_region_add(r, start, rows, row_mem);
}

int ospd_unwind_region_add(struct ospd_unwind_region *r, uint64_t start,
                           const struct ospd_unwind_rows *rows, const uint8_t *row_mem)
{
    struct osp_unwind_header *h = (struct osp_unwind_header *)r->map;
    uint64_t length = rows->end_vaddr - rows->start_vaddr;
    if (rows->count == 0 || start + length < start)
        return -EINVAL;
    uint64_t end = start + length;
    /* The new set: the old entries that do not overlap [start, end), and the new one. */
    uint32_t keep = 0;
    for (uint32_t i = 0; i < r->count; i++)
        if (r->entries[i].end <= start || r->entries[i].start >= end)
            keep++;
    if (keep + 1 > OSP_UNWIND_MAX_ENTRIES)
        return -E2BIG;
    struct osp_unwind_entry added = {.start = start,
                                     .end = end,
                                     .rows_offset = (uint64_t)(row_mem - r->map),
                                     .row_count = rows->count};
    struct osp_unwind_entry *next = malloc(((size_t)keep + 1) * sizeof *next);
    if (next == NULL)
        return -ENOMEM;
    uint32_t n = 0;
    bool placed = false;
    for (uint32_t i = 0; i < r->count; i++) {
        struct osp_unwind_entry e = r->entries[i];
        if (!(e.end <= start || e.start >= end))
            continue; /* unloaded: the new image took its place */
        if (!placed && e.start > start) {
            next[n++] = added;
            placed = true;
        }
        next[n++] = e;
    }
    if (!placed)
        next[n++] = added;
    free(r->entries);
    r->entries = next;
    r->count = n;
    uint64_t snapshot_bytes = sizeof(struct osp_unwind_index) + (uint64_t)n * sizeof *r->entries;
    uint8_t *snap = allocate(r, snapshot_bytes);
    if (snap == NULL)
        return -ENOSPC;
    struct osp_unwind_index ix = {.count = n, .generation = ++r->generation};
    memcpy(snap, &ix, sizeof ix);
    memcpy(snap + sizeof ix, r->entries, (size_t)n * sizeof *r->entries);
    /* (U1) release: pairs with the handler's acquire (U2); the rows and the snapshot above
     * are seen by any handler that sees this offset. */
    atomic_store_explicit(&h->index_offset, (uint64_t)(snap - r->map), memory_order_release);
    atomic_store_explicit(&h->images_ready, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->rows_published, rows->count, memory_order_relaxed);
    return 0;
}
