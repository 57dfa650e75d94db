/* ospd_cfi_translator.h — the pieces of the CFI-to-rows translator (cfi-rows.c) shared by
 * its files: the byte readers, the sections, CIEs, FDEs and rules they are read into, and
 * the translator that holds them. cfi-entries.c reads the entries, cfi-program.c runs their
 * CFA programs, cfi-rows.c finds the FDE of each pc and emits the rows. Internal to daemon/.
 */
#ifndef OSPD_CFI_TRANSLATOR_H
#define OSPD_CFI_TRANSLATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ospd_cfi.h"

#define MAX_REMEMBERED 64
#define MAX_EXPR_OPS   12 /* the longest form the rows know is 9 operations, 10 with the CFA */

/* ---- bytes --------------------------------------------------------------------------- */

/* A LEB128 at *p, never past end (libdw's: at most 10 bytes, UINT64_MAX when it runs out). */
static inline uint64_t read_uleb(const uint8_t **p, const uint8_t *end)
{
    uint64_t value = 0;
    for (unsigned i = 0; i < 10 && *p < end; i++) {
        uint8_t b = *(*p)++;
        value |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80))
            return value;
    }
    return UINT64_MAX;
}

static inline int64_t read_sleb(const uint8_t **p, const uint8_t *end)
{
    uint64_t value = 0;
    for (unsigned i = 0; i < 10 && *p < end; i++) {
        uint8_t b = *(*p)++;
        value |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if ((b & 0x40) && 7 * (i + 1) < 64)
                value |= ~UINT64_C(0) << (7 * (i + 1));
            return (int64_t)value;
        }
    }
    return INT64_MAX;
}

static inline uint64_t load(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    memcpy(&v, p, n); /* little-endian objects only (ospd_cfi_rows checks) */
    return v;
}

/* A section's bytes at its link-time address. */
struct section {
    const uint8_t *bytes;
    size_t size;
    uint64_t vaddr;
    bool debug; /* .debug_frame: CIE id all ones, an FDE's CIE pointer a section offset */
};

/* ---- CIEs and FDEs -------------------------------------------------------------------- */

/* One entry's framing (libdw's dwarf_next_cfi): its body [*body, *limit) after the length,
 * the CIE id or pointer read, and whether it is a CIE; for an FDE, its CIE's offset. */
struct entry {
    const uint8_t *body, *limit; /* after the CIE id / pointer */
    bool is_cie;
    uint64_t cie_offset;
};

struct cie {
    uint64_t offset;
    bool ok;           /* parsed, and its initial instructions ran */
    bool signal_frame; /* 'S' */
    bool sized;        /* 'z' */
    uint8_t fde_encoding;
    uint64_t code_align;
    int64_t data_align;
    size_t fde_augmentation_size; /* without 'z' */
    const uint8_t *initial, *initial_end;
    struct rules *initial_rules; /* after the ABI's defaults and the CIE's instructions */
};

/* A register's rule (libdw's struct dwarf_frame_register: its value is 61 bits, signed). */
enum rule {
    RULE_UNSPECIFIED,
    RULE_UNDEFINED,
    RULE_SAME,
    RULE_OFFSET,
    RULE_VAL_OFFSET,
    RULE_REGISTER,
    RULE_EXPRESSION,
    RULE_VAL_EXPRESSION,
};
struct reg_rule {
    uint8_t rule;
    int64_t value; /* an offset, a register, or the expression's offset in .eh_frame */
};

enum cfa_kind { CFA_UNDEFINED, CFA_OFFSET, CFA_EXPR, CFA_INVALID };

/* The rules of one row: the CFA, and the two registers the rows read (the return address
 * column and the frame pointer; on aarch64 the link register is the return address column). */
struct rules {
    uint8_t cfa;
    uint64_t cfa_reg, cfa_offset;
    const uint8_t *cfa_expr;
    uint64_t cfa_expr_size;
    struct reg_rule ra, fp;
};

/* What one FDE's program says: for each advance of the location, where it moved and the row
 * in force until then; where an error stopped it; the row after its last instruction. */
struct program_rows {
    uint64_t *locs;
    struct osp_unwind_row *rows; /* pc_offset unset */
    size_t count, cap;
    bool failed; /* an error after the last advance recorded */
    struct osp_unwind_row final;
};

struct translator {
    const struct section *frame;
    const struct ospd_unwind_arch *arch;
    struct cie *cies;
    size_t ncies, cies_cap;
    size_t *cie_slots; /* open addressing: index + 1, 0 free */
    size_t slots;
    struct program_rows run;
    uint64_t run_fde; /* the FDE `run` holds, UINT64_MAX for none */
    size_t cursor;
    struct rules stack[MAX_REMEMBERED];
};

/* An FDE's range and program (libdw's intern_fde); -1 when there is none usable at offset. */
struct fde {
    uint64_t offset;
    uint64_t start, end;
    const uint8_t *program, *program_end;
    size_t cie; /* its index in the translator's CIEs (which may move as they grow) */
};

/* cfi-entries.c */
int ospd_cfi_read_encoded(const struct section *s, uint8_t enc, const uint8_t **p, uint64_t *out);
int ospd_cfi_read_entry(const struct section *s, uint64_t off, struct entry *e);
int ospd_cfi_fde_at(struct translator *t, uint64_t offset, struct fde *f, int *rc);

/* cfi-program.c */
int ospd_cfi_run_program(struct translator *t, const struct cie *cie, const struct rules *cie_rules,
                         const uint8_t *p, const uint8_t *end, uint64_t loc, struct rules *r,
                         struct program_rows *run);
int ospd_cfi_run_fde(struct translator *t, const struct fde *f);

#endif
