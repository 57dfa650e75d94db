/* fuzz-cfi.c — fuzz target for the CFI-to-rows translator (daemon/cfi-rows.c, ospd_cfi_rows)
 * over hostile `.eh_frame` and `.eh_frame_hdr` bytes: the promise that every offset, length
 * and pointer read from them is checked (each section sits in its own mapping, a guard page
 * right after its last byte), and that the answer is an error or rows the handler can use.
 *
 * The input:
 *
 *   offset  size
 *   0       1     flags: bit 0 rows for aarch64 (else x86_64), bit 1 libdw would search the
 *                 header's table (it comes before .eh_frame)
 *   1       2     H, the header's size (little-endian, at most what follows)
 *   3       H     .eh_frame_hdr, at 0x3000
 *   3+H     rest  .eh_frame, at 0x4000
 *
 * Rows are asked for the code at [0x1000, 0x11000). An answer of 0 must hold at least one row,
 * pc offsets strictly increasing and inside the code, every rule one the handler knows.
 */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "ospd_cfi.h"

#define LO 0x1000u
#define HI 0x11000u

/* The bytes copied to end right before a page that cannot be read. */
static uint8_t *fenced(const uint8_t *bytes, size_t n, uint8_t **map, size_t *map_size)
{
    size_t page = 4096, data = (n + page - 1) / page * page;
    *map_size = data + page;
    *map = mmap(NULL, *map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FUZZ_CHECK(*map != MAP_FAILED, "mmap");
    FUZZ_CHECK(mprotect(*map + data, page, PROT_NONE) == 0, "mprotect");
    uint8_t *at = *map + data - n;
    if (n > 0)
        memcpy(at, bytes, n);
    return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint8_t flags = data[0];
    size_t hdr_size = (size_t)data[1] | (size_t)data[2] << 8;
    if (hdr_size > size - 3)
        hdr_size = size - 3;
    const uint8_t *hdr = data + 3, *frame = hdr + hdr_size;
    size_t frame_size = size - 3 - hdr_size;
    uint8_t *hmap, *fmap;
    size_t hmap_size, fmap_size;
    struct ospd_cfi_input in = {
        .hdr = fenced(hdr, hdr_size, &hmap, &hmap_size),
        .hdr_size = hdr_size,
        .hdr_vaddr = 0x3000,
        .hdr_searched = (flags & 2) != 0,
        .eh_frame = fenced(frame, frame_size, &fmap, &fmap_size),
        .eh_frame_size = frame_size,
        .eh_frame_vaddr = 0x4000,
        .machine = (flags & 1) ? EM_AARCH64 : EM_X86_64,
        .lo = LO,
        .hi = HI,
    };
    struct ospd_unwind_rows rows = {0};
    int rc = ospd_cfi_rows(&in, &rows);
    FUZZ_CHECK(rc == 0 || rc == -ENOENT || rc == -E2BIG || rc == -ENOMEM, "rc %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(rows.count >= 1 && rows.rows != NULL, "no rows");
        for (uint32_t i = 0; i < rows.count; i++) {
            FUZZ_CHECK(i == 0 || rows.rows[i].pc_offset > rows.rows[i - 1].pc_offset,
                       "row %u not after the one before", i);
            FUZZ_CHECK(rows.rows[i].pc_offset < HI - LO, "row %u outside the code", i);
            FUZZ_CHECK(rows.rows[i].cfa_rule <= OSP_CFA_DEREF, "row %u: rule %u", i,
                       rows.rows[i].cfa_rule);
        }
        FUZZ_CHECK(rows.start_vaddr == LO && rows.end_vaddr == HI, "span");
    } else {
        FUZZ_CHECK(rows.rows == NULL && rows.count == 0, "rows left after an error");
    }
    ospd_unwind_rows_free(&rows);
    munmap(hmap, hmap_size);
    munmap(fmap, fmap_size);
    return 0;
}
