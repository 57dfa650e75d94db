/* ospd_cfi.h — the two builders of an object's unwind rows and what they share: the row
 * translation (unwind-table.c) from the rules of one CFI row, said as libdw says them (a
 * register's rule and the CFA as DWARF operations), and the CFI-to-rows translator over the
 * `.eh_frame` bytes (cfi-rows.c), which speaks the same words so the translation is one.
 */
#ifndef OSPD_CFI_H
#define OSPD_CFI_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ospd_unwind.h"

/* The DWARF register numbers of the registers the rows speak of. */
struct ospd_unwind_arch {
    uint16_t machine;
    int sp, fp, ra; /* ra: the return-address column */
    int lr;         /* the link register, -1 where there is none */
};
const struct ospd_unwind_arch *ospd_unwind_arch_of(uint32_t machine);

/* A register's rule as dwarf_frame_register gives it: its return value, and ops/nops (nops 0:
 * undefined when ops is not NULL, "same value" when it is). */
struct ospd_frame_register {
    int rc;
    const Dwarf_Op *ops;
    size_t nops;
};

/* One CFI row's rules: the CFA as dwarf_frame_cfa gives it, the return address and frame
 * pointer registers, and the CIE's signal-frame flag. */
struct ospd_frame_rules {
    bool signal_frame;
    int cfa_rc;
    const Dwarf_Op *cfa;
    size_t ncfa;
    struct ospd_frame_register ra, fp;
};

/* The row for pc_offset of these rules: the forms the shim's walk knows, else UNKNOWN. */
struct osp_unwind_row ospd_unwind_row_of(const struct ospd_unwind_arch *arch, uint32_t pc_offset,
                                         const struct ospd_frame_rules *f);

/* The row for pc_offset of libdw's `frame` (dwarf_cfi_addrframe's). */
struct osp_unwind_row ospd_unwind_libdw_row(Dwarf_Frame *frame, const struct ospd_unwind_arch *arch,
                                            uint32_t pc_offset, bool signal_frame);

/* Append a row to out (cap: its allocated rows), merged with the last when the rule continues.
 * 0, -E2BIG past OSPD_UNWIND_MAX_ROWS, -ENOMEM. */
int ospd_unwind_push_row(struct ospd_unwind_rows *out, uint64_t *cap,
                         const struct osp_unwind_row *row);

/* The bytes the translator reads: `.eh_frame` and `.eh_frame_hdr` at their link-time
 * addresses, for a little-endian 64-bit object of `machine`; rows for [lo, hi). */
struct ospd_cfi_input {
    const uint8_t *eh_frame;
    size_t eh_frame_size;
    uint64_t eh_frame_vaddr;
    const uint8_t *hdr;
    size_t hdr_size;
    uint64_t hdr_vaddr;
    bool hdr_searched; /* libdw searches its table (it comes before .eh_frame) */
    uint16_t machine;
    uint64_t lo, hi;
};

/* The rows of in's `.eh_frame`, the same as libdw's builder gives (unwind-table.c). 0;
 * -ENOENT without a header table of the linkers' form (the caller builds with libdw, which
 * reads the FDE starts from the same table); -E2BIG, -ENOMEM. Every offset and length read
 * from the bytes is checked. */
int ospd_cfi_rows(const struct ospd_cfi_input *in, struct ospd_unwind_rows *out);

/* The same from an ELF handle: the sections found as libdw finds them, and the UNKNOWN ranges
 * filled from `.debug_frame` where there is one (ospd_cfi_debug_rows, ospd_unwind_rows_fill);
 * without `.eh_frame`, all from `.debug_frame`. */
int ospd_cfi_rows_elf(Elf *elf, uint16_t machine, uint64_t lo, uint64_t hi,
                      struct ospd_unwind_rows *out);

/* The rows of a `.debug_frame` (its uncompressed bytes: CIE id all ones, absolute
 * addresses, no augmentation) over [lo, hi), UNKNOWN where no FDE covers a pc. 0, -EINVAL,
 * -E2BIG, -ENOMEM. */
int ospd_cfi_debug_rows(const uint8_t *bytes, size_t size, uint16_t machine, uint64_t lo,
                        uint64_t hi, struct ospd_unwind_rows *out);

/* elf's `.debug_frame` (or `.zdebug_frame`), inflated in place when compressed; NULL when
 * there is none or it cannot be read. */
const uint8_t *ospd_debug_frame_of(Elf *elf, size_t *size);

/* base's UNKNOWN ranges given fill's rows there (both over the same span, from pc_offset 0):
 * base replaced by the merged table. 0, -E2BIG, -ENOMEM (base unchanged). */
int ospd_unwind_rows_fill(struct ospd_unwind_rows *base, const struct ospd_unwind_rows *fill);

/* qsort's order of two uint64_t. */
int ospd_compare_u64(const void *a, const void *b);

#endif /* OSPD_CFI_H */
