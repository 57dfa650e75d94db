/* cfi-rows.c — an object's `.eh_frame` translated into unwind rows in one pass, and its
 * `.debug_frame` where `.eh_frame` leaves gaps.
 *
 * Owns decoding `.eh_frame` (CIEs, FDEs, their pointer encodings and augmentations) and running
 * each FDE's CFA program once, from its first instruction to its last, into the rows of
 * proto/osp_unwind.h. The rows are the ones unwind-table.c's libdw builder gives: the same FDE
 * is chosen for each pc (the `.eh_frame_hdr` search table, as libdw searches it; where libdw
 * does not search it, as in lld's output with `.eh_frame` first, the FDEs in section order),
 * the same program semantics (libdw's, bugs of hostile input aside), and the same translation
 * (ospd_unwind_row_of, which reads a row's rules as the DWARF operations libdw would hand
 * over: this file builds those operations).
 *
 * DESIGN. libdw's builder asks dwarf_cfi_addrframe for each row, and each call runs the FDE's
 * program from its start: quadratic in the rows of an FDE, plus a search, a tree lookup and
 * allocations per row (libLLVM-14: 169 ms of CPU, now 70). Here each FDE's program runs once
 * into a list of its advances (where the location moves, and the row in force until then);
 * the rows loop of unwind-table.c (one row per range, from each FDE start to the next) is then
 * replayed over that list with a cursor, since its pcs only grow. Anything the rows cannot express
 * becomes UNKNOWN exactly where libdw's would. Left to libdw (-ENOENT): objects without an
 * `.eh_frame_hdr` table in the form linkers write (datarel sdata4 pairs), without section
 * headers, big-endian or 32-bit. `.debug_frame` (CIE id all ones, an FDE's CIE pointer a
 * section offset, absolute 8-byte addresses, no augmentation) is read by the same code with
 * the entries in section order (libdw has no search table for it either), into rows over the
 * same span that fill the UNKNOWN ranges of `.eh_frame`'s (ospd_unwind_rows_fill): a cgo Go
 * program's `.eh_frame` covers its C parts only, its Go functions are in `.debug_frame`. Where
 * libdw keeps several FDEs covering one pc (overlapping
 * FDEs), its choice depends on the shape of its search tree; here the last one read that still
 * covers the pc stands for them (no row of Debian's /usr/lib and /usr/bin differs for it).
 *
 * Hostile files: every length, offset and pointer is checked against the section it points
 * into; a LEB128 stops at the end of its bytes; remember_state nests at most
 * MAX_REMEMBERED deep (deeper is an error: no row); the rows are at most
 * OSPD_UNWIND_MAX_ROWS. fuzz/fuzz-cfi.c feeds it arbitrary sections.
 */
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "ospd.h"
#include "ospd_cfi.h"

#define MAX_REMEMBERED 64
#define MAX_EXPR_OPS   12 /* the longest form the rows know is 9 operations, 10 with the CFA */

/* ---- bytes --------------------------------------------------------------------------- */

/* A LEB128 at *p, never past end (libdw's: at most 10 bytes, UINT64_MAX when it runs out). */
static uint64_t read_uleb(const uint8_t **p, const uint8_t *end)
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

static int64_t read_sleb(const uint8_t **p, const uint8_t *end)
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

static uint64_t load(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    memcpy(&v, p, n); /* little-endian objects only (ospd_cfi_rows checks) */
    return v;
}

/* The size of an encoded value of `enc`, 0 when unknown (libdw's encoded_value_size). */
static size_t encoded_size(uint8_t enc, const uint8_t *p, const uint8_t *end)
{
    if (enc == DW_EH_PE_omit)
        return 0;
    switch (enc & 0x07) {
    case DW_EH_PE_udata2:
        return 2;
    case DW_EH_PE_udata4:
        return 4;
    case DW_EH_PE_udata8:
    case DW_EH_PE_absptr:
        return 8;
    case DW_EH_PE_uleb128:
        for (const uint8_t *q = p; q != NULL && q < end;)
            if (*q++ & 0x80u)
                return (size_t)(q - p);
        return 0;
    default:
        return 0;
    }
}

/* A section's bytes at its link-time address. */
struct section {
    const uint8_t *bytes;
    size_t size;
    uint64_t vaddr;
    bool debug; /* .debug_frame: CIE id all ones, an FDE's CIE pointer a section offset */
};

/* An encoded pointer at *p inside s (libdw's read_encoded_value with .eh_frame's bases:
 * pcrel from the value's own address, textrel and datarel 0). 0, or -1. */
static int read_encoded(const struct section *s, uint8_t enc, const uint8_t **p, uint64_t *out)
{
    const uint8_t *end = s->bytes + s->size;
    uint64_t base = 0;
    switch (enc & 0x70) {
    case DW_EH_PE_absptr:
    case DW_EH_PE_textrel:
    case DW_EH_PE_datarel:
    case DW_EH_PE_funcrel:
        break;
    case DW_EH_PE_pcrel:
        base = s->vaddr + (uint64_t)(*p - s->bytes);
        break;
    case DW_EH_PE_aligned: {
        size_t size = encoded_size(enc, *p, end);
        if (size == 0)
            return -1;
        size_t misalign = (size_t)((s->vaddr + (uint64_t)(*p - s->bytes)) & (size - 1));
        if (misalign != 0) {
            if ((size_t)(end - *p) < size - misalign)
                return -1;
            *p += size - misalign;
        }
        break;
    }
    default:
        return -1;
    }
    uint64_t value = 0;
    size_t left = (size_t)(end - *p);
    switch (enc & 0x0f) {
    case DW_EH_PE_udata2:
    case DW_EH_PE_sdata2:
        if (left < 2)
            return -1;
        value = load(*p, 2);
        if ((enc & 0x0f) == DW_EH_PE_sdata2)
            value = (uint64_t)(int64_t)(int16_t)value;
        *p += 2;
        break;
    case DW_EH_PE_udata4:
    case DW_EH_PE_sdata4:
        if (left < 4)
            return -1;
        value = load(*p, 4);
        if ((enc & 0x0f) == DW_EH_PE_sdata4)
            value = (uint64_t)(int64_t)(int32_t)value;
        *p += 4;
        break;
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8:
    case DW_EH_PE_absptr:
        if (left < 8)
            return -1;
        value = load(*p, 8);
        *p += 8;
        break;
    case DW_EH_PE_uleb128:
        value = read_uleb(p, end);
        break;
    case DW_EH_PE_sleb128:
        value = (uint64_t)read_sleb(p, end);
        break;
    default:
        return -1;
    }
    value += base;
    if (enc & DW_EH_PE_indirect) {
        if (value < s->vaddr || s->size < 8 || value - s->vaddr > s->size - 8)
            return -1;
        value = load(s->bytes + (value - s->vaddr), 8);
    }
    *out = value;
    return 0;
}

/* ---- CIEs and FDEs -------------------------------------------------------------------- */

/* One entry's framing (libdw's dwarf_next_cfi): its body [*body, *limit) after the length,
 * the CIE id or pointer read, and whether it is a CIE; for an FDE, its CIE's offset. */
struct entry {
    const uint8_t *body, *limit; /* after the CIE id / pointer */
    bool is_cie;
    uint64_t cie_offset;
};

static int read_entry(const struct section *s, uint64_t off, struct entry *e)
{
    if (off >= s->size || s->size - off <= 4)
        return -1;
    const uint8_t *bytes = s->bytes + off, *limit = s->bytes + s->size;
    uint64_t length = load(bytes, 4);
    bytes += 4;
    size_t offset_size = 4;
    if (length == 0xffffffffu) {
        offset_size = 8;
        if (limit - bytes < 8)
            return -1;
        length = load(bytes, 8);
        bytes += 8;
    }
    if (length == 0 || (uint64_t)(limit - bytes) < length || length < offset_size + 1)
        return -1;
    limit = bytes + length;
    const uint8_t *pointer_at = bytes;
    uint64_t id = load(bytes, offset_size);
    bytes += offset_size;
    e->is_cie = s->debug ? id == (offset_size == 4 ? UINT32_MAX : UINT64_MAX) : id == 0;
    if (!e->is_cie && s->debug) {
        if (id >= s->size)
            return -1;
        e->cie_offset = id;
    } else if (!e->is_cie) {
        uint64_t pos = (uint64_t)(pointer_at - s->bytes);
        if (id > pos || pos <= offset_size)
            return -1;
        e->cie_offset = pos - id;
    }
    e->body = bytes;
    e->limit = limit;
    return 0;
}

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

static int64_t rule_value(int64_t v)
{
    return (int64_t)((uint64_t)v << 3) >> 3; /* kept in 61 bits, as libdw keeps it */
}

/* ---- running a CFA program ------------------------------------------------------------ */

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

static void set_reg(struct rules *r, const struct ospd_unwind_arch *arch, uint64_t regno,
                    uint8_t rule, int64_t value)
{
    struct reg_rule v = {rule, rule_value(value)};
    if (regno == (uint64_t)arch->ra)
        r->ra = v;
    if (regno == (uint64_t)arch->fp)
        r->fp = v;
}

/* libdw refuses register numbers this large (enough_registers). */
static bool register_ok(uint64_t regno)
{
    return regno < INT32_MAX / 8;
}

/* Decode up to MAX_EXPR_OPS operations of a DWARF expression into ops (after `first`, an
 * operation put in front, or 0); the count, MAX_EXPR_OPS + 1 for an expression no row form
 * can match (longer, or an operation the forms do not use). */
static size_t decode_ops(const uint8_t *p, const uint8_t *end, uint8_t first, uint8_t last,
                         Dwarf_Op *ops)
{
    size_t n = 0;
    if (first)
        ops[n++] = (Dwarf_Op){.atom = first};
    while (p < end) {
        if (n >= MAX_EXPR_OPS - 1)
            return MAX_EXPR_OPS + 1;
        uint8_t atom = *p++;
        Dwarf_Op op = {.atom = atom};
        if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
            op.number = (uint64_t)read_sleb(&p, end);
        } else if (atom == DW_OP_bregx) {
            op.number = read_uleb(&p, end);
            op.number2 = (uint64_t)read_sleb(&p, end);
        } else if (atom == DW_OP_plus_uconst || atom == DW_OP_constu) {
            op.number = read_uleb(&p, end);
        } else if (atom == DW_OP_consts) {
            op.number = (uint64_t)read_sleb(&p, end);
        } else if (!((atom >= DW_OP_lit0 && atom <= DW_OP_lit31) || atom == DW_OP_and ||
                     atom == DW_OP_ge || atom == DW_OP_shl || atom == DW_OP_plus)) {
            return MAX_EXPR_OPS + 1;
        }
        ops[n++] = op;
    }
    if (last && n > 0)
        ops[n++] = (Dwarf_Op){.atom = last};
    return n;
}

/* A register's rule as dwarf_frame_register says it: ops in mem. */
static void register_ops(const struct translator *t, const struct reg_rule *r, Dwarf_Op *mem,
                         struct ospd_frame_register *out)
{
    out->rc = 0;
    out->ops = mem;
    out->nops = 0;
    switch (r->rule) {
    case RULE_SAME:
        out->ops = NULL;
        break;
    case RULE_OFFSET:
    case RULE_VAL_OFFSET:
        mem[out->nops++] = (Dwarf_Op){.atom = DW_OP_call_frame_cfa};
        if (r->value != 0)
            mem[out->nops++] = (Dwarf_Op){.atom = DW_OP_plus_uconst, .number = (uint64_t)r->value};
        if (r->rule == RULE_VAL_OFFSET)
            mem[out->nops++] = (Dwarf_Op){.atom = DW_OP_stack_value};
        break;
    case RULE_REGISTER:
        mem[out->nops++] = (Dwarf_Op){.atom = DW_OP_regx, .number = (uint64_t)r->value};
        break;
    case RULE_EXPRESSION:
    case RULE_VAL_EXPRESSION: {
        /* value: the offset of the expression's length in .eh_frame (checked when set) */
        const uint8_t *p = t->frame->bytes + r->value, *end = t->frame->bytes + t->frame->size;
        uint64_t size = read_uleb(&p, end);
        if (size > (uint64_t)(end - p))
            size = (uint64_t)(end - p);
        if (size == 0)
            break; /* an empty expression: libdw says "undefined" */
        out->nops = decode_ops(p, p + size, DW_OP_call_frame_cfa,
                               r->rule == RULE_VAL_EXPRESSION ? DW_OP_stack_value : 0, mem);
        break;
    }
    default: /* unspecified: libdw's default rule here is "undefined" (x86_64, aarch64) */
        break;
    }
}

static struct osp_unwind_row row_of(const struct translator *t, const struct rules *r,
                                    bool signal_frame)
{
    Dwarf_Op cfa_mem[MAX_EXPR_OPS + 2], ra_mem[MAX_EXPR_OPS + 2], fp_mem[MAX_EXPR_OPS + 2];
    struct ospd_frame_rules f = {.signal_frame = signal_frame};
    switch (r->cfa) {
    case CFA_OFFSET:
        cfa_mem[0] =
            (Dwarf_Op){.atom = DW_OP_bregx, .number = r->cfa_reg, .number2 = r->cfa_offset};
        f.cfa = cfa_mem;
        f.ncfa = 1;
        break;
    case CFA_EXPR:
        f.cfa = cfa_mem;
        f.ncfa = decode_ops(r->cfa_expr, r->cfa_expr + r->cfa_expr_size, 0, 0, cfa_mem);
        break;
    case CFA_INVALID:
        f.cfa_rc = -1;
        break;
    default:
        break;
    }
    register_ops(t, &r->ra, ra_mem, &f.ra);
    register_ops(t, &r->fp, fp_mem, &f.fp);
    return ospd_unwind_row_of(t->arch, 0, &f);
}

static int record_advance(struct program_rows *run, uint64_t loc, struct osp_unwind_row row)
{
    if (run->count == run->cap) {
        size_t cap = run->cap ? run->cap * 2 : 64;
        uint64_t *locs = realloc(run->locs, cap * sizeof *locs);
        if (locs == NULL)
            return -ENOMEM;
        run->locs = locs;
        struct osp_unwind_row *rows = realloc(run->rows, cap * sizeof *rows);
        if (rows == NULL)
            return -ENOMEM;
        run->rows = rows;
        run->cap = cap;
    }
    run->locs[run->count] = loc;
    run->rows[run->count++] = row;
    return 0;
}

/* Run a CFA program (libdw's execute_cfi) from *r at location loc. For an FDE (cie_rules set:
 * its CIE's initial rules, for DW_CFA_restore), each advance is recorded in run with the row in
 * force; for a CIE's initial instructions (run NULL) an advance is an error. 0, -EINVAL for an
 * error in the program (the rows stop there), -ENOMEM. */
static int run_program(struct translator *t, const struct cie *cie, const struct rules *cie_rules,
                       const uint8_t *p, const uint8_t *end, uint64_t loc, struct rules *r,
                       struct program_rows *run)
{
    const struct ospd_unwind_arch *arch = t->arch;
    const struct section *s = t->frame;
    size_t depth = 0;
    while (p < end) {
        uint8_t opcode = *p++;
        uint64_t operand = opcode & 0x3f, regno, offset;
        int64_t sf;
        bool advance = false;
        switch (opcode >> 6) {
        case 1: /* DW_CFA_advance_loc */
            loc += operand * cie->code_align;
            advance = true;
            break;
        case 2: /* DW_CFA_offset */
            offset = read_uleb(&p, end) * (uint64_t)cie->data_align;
            if (!register_ok(operand))
                return -EINVAL;
            set_reg(r, arch, operand, RULE_OFFSET, (int64_t)offset);
            continue;
        case 3: /* DW_CFA_restore */
            if (cie_rules == NULL)
                return -EINVAL; /* not in a CIE's own instructions */
            if (operand == (uint64_t)arch->ra)
                r->ra = cie_rules->ra;
            if (operand == (uint64_t)arch->fp)
                r->fp = cie_rules->fp;
            continue;
        default:
            break;
        }
        if (!advance) {
            switch (opcode) {
            case DW_CFA_advance_loc1:
                if (p >= end)
                    return -EINVAL;
                loc += (uint64_t)*p++ * cie->code_align;
                advance = true;
                break;
            case DW_CFA_advance_loc2:
            case DW_CFA_advance_loc4:
            case DW_CFA_MIPS_advance_loc8: {
                size_t n = opcode == DW_CFA_advance_loc2   ? 2
                           : opcode == DW_CFA_advance_loc4 ? 4
                                                           : 8;
                if ((size_t)(end - p) < n)
                    return -EINVAL;
                loc += load(p, n) * cie->code_align;
                p += n;
                advance = true;
                break;
            }
            case DW_CFA_set_loc: {
                if (read_encoded(s, cie->fde_encoding, &p, &loc) != 0)
                    return -EINVAL;
                advance = true;
                break;
            }
            case DW_CFA_def_cfa:
            case DW_CFA_def_cfa_sf:
                operand = read_uleb(&p, end);
                if (p >= end)
                    return -EINVAL;
                if (opcode == DW_CFA_def_cfa)
                    offset = read_uleb(&p, end);
                else
                    offset = (uint64_t)read_sleb(&p, end) * (uint64_t)cie->data_align;
                r->cfa = CFA_OFFSET;
                r->cfa_reg = operand;
                r->cfa_offset = offset;
                break;
            case DW_CFA_def_cfa_register:
                regno = read_uleb(&p, end);
                if (r->cfa != CFA_OFFSET)
                    r->cfa = CFA_INVALID;
                r->cfa_reg = regno;
                break;
            case DW_CFA_def_cfa_offset:
            case DW_CFA_def_cfa_offset_sf:
                if (opcode == DW_CFA_def_cfa_offset)
                    offset = read_uleb(&p, end);
                else
                    offset = (uint64_t)read_sleb(&p, end) * (uint64_t)cie->data_align;
                if (r->cfa != CFA_OFFSET)
                    r->cfa = CFA_INVALID;
                r->cfa_offset = offset;
                break;
            case DW_CFA_def_cfa_expression:
                operand = read_uleb(&p, end);
                if (operand > (uint64_t)(end - p))
                    return -EINVAL;
                r->cfa = CFA_EXPR;
                r->cfa_expr = p;
                r->cfa_expr_size = operand;
                p += operand;
                break;
            case DW_CFA_undefined:
            case DW_CFA_same_value:
                regno = read_uleb(&p, end);
                if (!register_ok(regno))
                    return -EINVAL;
                set_reg(r, arch, regno, opcode == DW_CFA_undefined ? RULE_UNDEFINED : RULE_SAME, 0);
                break;
            case DW_CFA_offset_extended:
            case DW_CFA_val_offset:
                regno = read_uleb(&p, end);
                if (p >= end)
                    return -EINVAL;
                offset = read_uleb(&p, end) * (uint64_t)cie->data_align;
                if (!register_ok(regno))
                    return -EINVAL;
                set_reg(r, arch, regno, opcode == DW_CFA_val_offset ? RULE_VAL_OFFSET : RULE_OFFSET,
                        (int64_t)offset);
                break;
            case DW_CFA_offset_extended_sf:
            case DW_CFA_val_offset_sf:
            case DW_CFA_GNU_negative_offset_extended:
                regno = read_uleb(&p, end);
                if (opcode != DW_CFA_offset_extended_sf && p >= end)
                    return -EINVAL;
                if (opcode == DW_CFA_GNU_negative_offset_extended)
                    sf = -(int64_t)read_uleb(&p, end);
                else
                    sf = read_sleb(&p, end);
                if (!register_ok(regno))
                    return -EINVAL;
                set_reg(r, arch, regno,
                        opcode == DW_CFA_val_offset_sf ? RULE_VAL_OFFSET : RULE_OFFSET,
                        (int64_t)((uint64_t)sf * (uint64_t)cie->data_align));
                break;
            case DW_CFA_register:
                regno = read_uleb(&p, end);
                if (p >= end)
                    return -EINVAL;
                operand = read_uleb(&p, end);
                if (!register_ok(regno))
                    return -EINVAL;
                set_reg(r, arch, regno, RULE_REGISTER, (int64_t)operand);
                break;
            case DW_CFA_expression:
            case DW_CFA_val_expression: {
                regno = read_uleb(&p, end);
                if (opcode == DW_CFA_expression && p >= end)
                    return -EINVAL;
                int64_t at = (int64_t)(p - s->bytes);
                operand = read_uleb(&p, end);
                if (operand > (uint64_t)(end - p))
                    return -EINVAL;
                p += operand;
                if (!register_ok(regno))
                    return -EINVAL;
                set_reg(r, arch, regno,
                        opcode == DW_CFA_expression ? RULE_EXPRESSION : RULE_VAL_EXPRESSION, at);
                break;
            }
            case DW_CFA_restore_extended:
                operand = read_uleb(&p, end);
                if (cie_rules == NULL || !register_ok(operand))
                    return -EINVAL;
                if (operand == (uint64_t)arch->ra)
                    r->ra = cie_rules->ra;
                if (operand == (uint64_t)arch->fp)
                    r->fp = cie_rules->fp;
                break;
            case DW_CFA_remember_state:
                if (depth >= MAX_REMEMBERED)
                    return -EINVAL;
                t->stack[depth++] = *r;
                break;
            case DW_CFA_restore_state:
                if (depth == 0)
                    return -EINVAL;
                *r = t->stack[--depth];
                break;
            case DW_CFA_nop:
                break;
            case DW_CFA_GNU_window_save:
                if (arch->machine != EM_AARCH64) /* SPARC's shorthand, as libdw reads it */
                    for (uint64_t reg = 8; reg < 32; reg++)
                        set_reg(r, arch, reg, reg < 16 ? RULE_REGISTER : RULE_OFFSET,
                                reg < 16 ? (int64_t)reg + 16 : (int64_t)(reg - 16) * 8);
                break; /* aarch64: negate_ra_state, not followed (nor by libdw) */
            case DW_CFA_GNU_args_size:
                read_uleb(&p, end);
                break;
            default:
                return -EINVAL;
            }
        }
        if (!advance)
            continue;
        if (run == NULL)
            return -EINVAL; /* an advance in a CIE's initial instructions */
        int rc = record_advance(run, loc, row_of(t, r, cie->signal_frame));
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The rules before any CIE: libdw's ABI defaults (its backends' abi_cfi) for the registers
 * the rows read. */
static void abi_rules(const struct ospd_unwind_arch *arch, struct rules *r)
{
    memset(r, 0, sizeof *r);
    r->ra.rule = RULE_SAME;
    r->fp.rule = RULE_SAME;
    if (arch->machine == EM_AARCH64) { /* DW_CFA_def_cfa x30, 0 */
        r->cfa = CFA_OFFSET;
        r->cfa_reg = 30;
    }
}

/* The CIE at offset, parsed and its initial rules computed once: NULL when it is not a
 * usable CIE (libdw fails every FDE that names it), or on ENOMEM (*rc). */
static struct cie *cie_at(struct translator *t, uint64_t offset, int *rc)
{
    size_t h = (size_t)((offset * UINT64_C(0x9e3779b97f4a7c15)) >> 20);
    for (size_t i = 0; t->slots > 0 && i < t->slots; i++) {
        size_t slot = (h + i) & (t->slots - 1);
        if (t->cie_slots[slot] == 0)
            break;
        struct cie *c = &t->cies[t->cie_slots[slot] - 1];
        if (c->offset == offset)
            return c->ok ? c : NULL;
    }
    /* Not seen: parse it (libdw's dwarf_next_cfi and intern_new_cie). */
    if (t->ncies + 1 > t->slots / 2) {
        size_t slots = t->slots ? t->slots * 2 : 64;
        size_t *table = calloc(slots, sizeof *table);
        if (table == NULL) {
            *rc = -ENOMEM;
            return NULL;
        }
        for (size_t i = 0; i < t->ncies; i++) {
            size_t g = (size_t)((t->cies[i].offset * UINT64_C(0x9e3779b97f4a7c15)) >> 20);
            for (size_t j = 0;; j++)
                if (table[(g + j) & (slots - 1)] == 0) {
                    table[(g + j) & (slots - 1)] = i + 1;
                    break;
                }
        }
        free(t->cie_slots);
        t->cie_slots = table;
        t->slots = slots;
    }
    if (t->ncies == t->cies_cap) {
        size_t cap = t->cies_cap ? t->cies_cap * 2 : 16;
        struct cie *grown = realloc(t->cies, cap * sizeof *grown);
        if (grown == NULL) {
            *rc = -ENOMEM;
            return NULL;
        }
        t->cies = grown;
        t->cies_cap = cap;
    }
    struct cie *c = &t->cies[t->ncies];
    memset(c, 0, sizeof *c);
    c->offset = offset;
    for (size_t j = 0;; j++)
        if (t->cie_slots[(h + j) & (t->slots - 1)] == 0) {
            t->cie_slots[(h + j) & (t->slots - 1)] = ++t->ncies;
            break;
        }

    struct entry e;
    if (read_entry(t->frame, offset, &e) != 0 || !e.is_cie)
        return NULL;
    const uint8_t *p = e.body, *limit = e.limit;
    uint8_t version = *p++;
    if (version != 1 && (version < 3 || version > 4))
        return NULL;
    const char *augmentation = (const char *)p;
    const uint8_t *nul = memchr(p, '\0', (size_t)(limit - p));
    if (nul == NULL)
        return NULL;
    p = nul + 1;
    if (version >= 4) {
        if (limit - p < 5 || p[0] != 8 || p[1] != 0)
            return NULL;
        p += 2;
    }
    const char *ap = augmentation;
    if (ap[0] == 'e' && ap[1] == 'h') { /* g++ v2: a pointer after the string */
        ap += 2;
        if (limit - p < 8)
            return NULL;
        p += 8;
    }
    if (p >= limit)
        return NULL;
    c->code_align = read_uleb(&p, limit);
    if (p >= limit)
        return NULL;
    c->data_align = read_sleb(&p, limit);
    if (p >= limit)
        return NULL;
    if (version >= 3)
        read_uleb(&p, limit);
    else
        p++;
    /* The augmentation data: dwarf_next_cfi finds where the instructions start, then
     * intern_new_cie reads the encodings from the data's start. */
    const uint8_t *data = p;
    uint64_t data_size = 0;
    bool sized = *ap == 'z';
    if (sized) {
        ap++;
        if (p >= limit)
            return NULL;
        data_size = read_uleb(&p, limit);
        if ((uint64_t)(limit - p) < data_size)
            return NULL;
        data = p;
    }
    for (; *ap != '\0'; ap++) {
        if (!sized)
            break;
        if (*ap == 'L' || *ap == 'R') {
            p++;
        } else if (*ap == 'P') {
            if (p >= limit)
                return NULL;
            uint8_t enc = *p++;
            size_t skip = encoded_size(enc, p, limit);
            if (skip > (size_t)(limit - p))
                return NULL;
            p += skip;
        } else if (*ap != 'S') {
            break;
        }
        if (p > limit)
            return NULL;
    }
    if (sized) {
        if (p > data + data_size)
            return NULL;
        p = data + data_size;
    }
    const uint8_t *instructions = p;
    c->fde_encoding = DW_EH_PE_absptr;
    const uint8_t *d = data, *d_end = sized ? data + data_size : instructions;
    for (const char *a = augmentation; *a != '\0' && a < (const char *)nul; a++) {
        if (*a == 'z') {
            c->sized = true;
        } else if (*a == 'S') {
            c->signal_frame = true;
        } else if (*a == 'L' || *a == 'R' || *a == 'P') {
            if (d >= d_end)
                return NULL; /* libdw would read past the data: not ours to follow */
            uint8_t enc = *d++;
            if (*a == 'L' && !c->sized) {
                c->fde_augmentation_size += encoded_size(enc, NULL, NULL);
            } else if (*a == 'R') {
                c->fde_encoding = enc;
            } else if (*a == 'P') {
                size_t skip = encoded_size(enc, d, d_end);
                if (skip > (size_t)(d_end - d))
                    return NULL;
                d += skip;
            }
        } else if (!c->sized) {
            break;
        }
    }
    if ((c->fde_encoding & 0x0f) == DW_EH_PE_absptr)
        c->fde_encoding |= DW_EH_PE_udata8;
    c->initial = instructions;
    c->initial_end = limit;

    struct rules *initial = malloc(sizeof *initial);
    if (initial == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    abi_rules(t->arch, initial);
    int ran = run_program(t, c, NULL, c->initial, c->initial_end, 0, initial, NULL);
    if (ran != 0) {
        free(initial);
        if (ran == -ENOMEM)
            *rc = ran;
        return NULL;
    }
    c->initial_rules = initial;
    c->ok = true;
    return c;
}

/* An FDE's range and program (libdw's intern_fde); -1 when there is none usable at offset. */
struct fde {
    uint64_t offset;
    uint64_t start, end;
    const uint8_t *program, *program_end;
    size_t cie; /* its index in the translator's CIEs (which may move as they grow) */
};

static int fde_at(struct translator *t, uint64_t offset, struct fde *f, int *rc)
{
    struct entry e;
    if (read_entry(t->frame, offset, &e) != 0 || e.is_cie)
        return -1;
    struct cie *c = cie_at(t, e.cie_offset, rc);
    if (c == NULL)
        return -1;
    /* The encoded values are read within the whole section, as libdw does. */
    const uint8_t *p = e.body;
    uint64_t range = 0;
    if (read_encoded(t->frame, c->fde_encoding, &p, &f->start) != 0 ||
        read_encoded(t->frame, c->fde_encoding & 0x0f, &p, &range) != 0 || p > e.limit)
        return -1;
    f->end = f->start + range;
    if (f->start >= f->end)
        return -1;
    if (c->sized) {
        uint64_t len = read_uleb(&p, e.limit);
        if ((uint64_t)(e.limit - p) < len)
            return -1;
        p += len;
    } else {
        if ((uint64_t)(e.limit - p) < c->fde_augmentation_size)
            return -1;
        p += c->fde_augmentation_size;
    }
    f->offset = offset;
    f->program = p;
    f->program_end = e.limit;
    f->cie = (size_t)(c - t->cies);
    return 0;
}

/* Run an FDE's program into t->run (once per FDE in a row of queries). */
static int run_fde(struct translator *t, const struct fde *f)
{
    if (t->run_fde == f->offset)
        return 0;
    struct program_rows *run = &t->run;
    run->count = 0;
    run->failed = false;
    t->cursor = 0;
    t->run_fde = f->offset;
    const struct cie *cie = &t->cies[f->cie];
    struct rules r = *cie->initial_rules;
    int rc = run_program(t, cie, cie->initial_rules, f->program, f->program_end, f->start, &r, run);
    if (rc == -ENOMEM) {
        t->run_fde = UINT64_MAX;
        return rc;
    }
    run->failed = rc != 0;
    if (!run->failed)
        run->final = row_of(t, &r, cie->signal_frame);
    return 0;
}

/* ---- finding an FDE -------------------------------------------------------------------- */

/* Every usable FDE of .eh_frame in section order, sorted by start: where libdw has no search
 * table it reads the entries in order until one covers the pc, and stops at the first entry
 * it cannot frame. */
struct fde_index {
    struct fde *fdes;
    size_t count;
};

static int compare_fde_start(const void *a, const void *b)
{
    const struct fde *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset; /* section order */
}

static int index_fdes(struct translator *t, struct fde_index *index)
{
    size_t cap = 0;
    int rc = 0;
    struct entry e;
    for (uint64_t off = 0; rc == 0 && read_entry(t->frame, off, &e) == 0;
         off = (uint64_t)(e.limit - t->frame->bytes)) {
        struct fde f;
        if (e.is_cie || fde_at(t, off, &f, &rc) != 0)
            continue;
        if (index->count == cap) {
            cap = cap ? cap * 2 : 1024;
            struct fde *grown = realloc(index->fdes, cap * sizeof *grown);
            if (grown == NULL)
                return -ENOMEM;
            index->fdes = grown;
        }
        index->fdes[index->count++] = f;
    }
    if (rc == 0 && index->count > 0)
        qsort(index->fdes, index->count, sizeof *index->fdes, compare_fde_start);
    return rc;
}

/* The FDE covering pc: the last starting at or below it (the first in section order of those
 * starting there), if it reaches pc. */
static bool index_find(const struct fde_index *index, uint64_t pc, struct fde *out)
{
    size_t l = 0, h = index->count;
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        if (index->fdes[mid].start <= pc)
            l = mid + 1;
        else
            h = mid;
    }
    if (l == 0)
        return false;
    size_t at = l - 1;
    while (at > 0 && index->fdes[at - 1].start == index->fdes[at].start)
        at--;
    if (pc >= index->fdes[at].end)
        return false;
    *out = index->fdes[at];
    return true;
}

/* ---- the header's search table and the rows loop -------------------------------------- */

struct search_table {
    const uint8_t *entries; /* pairs of datarel sdata4: initial location, FDE address */
    size_t count;
    uint64_t hdr_vaddr;
};

static uint64_t table_value(const struct search_table *st, size_t i, int which)
{
    return st->hdr_vaddr + (uint64_t)(int64_t)(int32_t)load(st->entries + 8 * i + 4 * which, 4);
}

/* The FDE's offset in .eh_frame for pc (libdw's binary_search_fde), or UINT64_MAX. */
static uint64_t search(const struct search_table *st, uint64_t frame_vaddr, uint64_t pc)
{
    size_t l = 0, u = st->count;
    while (l < u) {
        size_t idx = (l + u) / 2;
        if (pc < table_value(st, idx, 0)) {
            u = idx;
            continue;
        }
        l = idx + 1;
        if (l < st->count && pc >= table_value(st, l, 0))
            continue;
        return table_value(st, idx, 1) - frame_vaddr;
    }
    return UINT64_MAX;
}

int ospd_compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The rows over [lo, hi) from the FDEs starting at starts[0..count) (sorted), each FDE found
 * in st when there is one (libdw's search), else in index; one row per range, as
 * unwind-table.c's rows loop makes them. */
static int rows_over(struct translator *t, const uint64_t *starts, size_t count,
                     const struct search_table *st, const struct fde_index *index, uint64_t lo,
                     uint64_t hi, struct ospd_unwind_rows *out)
{
    uint64_t cap = 0;
    struct osp_unwind_row unknown = {.cfa_rule = OSP_CFA_UNKNOWN};
    int rc = ospd_unwind_push_row(out, &cap, &unknown); /* below the first FDE */
    /* libdw keeps the FDEs it has read and answers from them first: the one read last that
     * still covers pc stands for them (the pcs only grow). */
    struct fde interned = {.start = 1, .end = 0}, f;
    for (size_t i = 0; i < count && rc == 0; i++) {
        uint64_t pc = starts[i];
        uint64_t limit = i + 1 < count && starts[i + 1] < hi ? starts[i + 1] : hi;
        if (pc < lo || pc >= hi || (i > 0 && pc == starts[i - 1]))
            continue;
        while (pc < limit && rc == 0) {
            bool found = false;
            if (st == NULL) {
                found = index_find(index, pc, &f);
            } else if (interned.start <= pc && pc < interned.end) {
                f = interned;
                found = true;
            } else {
                uint64_t offset = search(st, t->frame->vaddr, pc);
                if (offset != UINT64_MAX && fde_at(t, offset, &f, &rc) == 0) {
                    if (interned.start >= f.start && interned.start < f.end)
                        f = interned; /* libdw keeps the one it had for this range */
                    else if (interned.end <= interned.start || f.end > interned.end)
                        interned = f;
                    found = pc >= f.start && pc < f.end;
                }
            }
            if (rc != 0)
                break;
            struct osp_unwind_row row = unknown;
            uint64_t end = pc;
            if (found && (rc = run_fde(t, &f)) == 0) {
                /* The row in force at pc: the one before the first advance past it. */
                struct program_rows *run = &t->run;
                while (t->cursor < run->count && run->locs[t->cursor] <= pc)
                    t->cursor++;
                if (t->cursor < run->count) {
                    row = run->rows[t->cursor];
                    end = run->locs[t->cursor];
                } else if (!run->failed) {
                    row = run->final;
                    end = f.end;
                } else {
                    found = false;
                }
            }
            if (rc != 0)
                break;
            row.pc_offset = (uint32_t)(pc - lo);
            if (!found) {
                unknown.pc_offset = row.pc_offset;
                rc = ospd_unwind_push_row(out, &cap, &unknown); /* a gap until the next FDE */
                break;
            }
            rc = ospd_unwind_push_row(out, &cap, &row);
            if (end <= pc)
                break;
            pc = end;
        }
    }
    return rc;
}

/* A builder's end: out's span set, or out freed on an error. rc. */
static int rows_done(struct ospd_unwind_rows *out, int rc, uint64_t lo, uint64_t hi)
{
    if (rc != 0) {
        ospd_unwind_rows_free(out);
        return rc;
    }
    out->start_vaddr = lo;
    out->end_vaddr = hi;
    return 0;
}

static void translator_free(struct translator *t)
{
    for (size_t i = 0; i < t->ncies; i++)
        free(t->cies[i].initial_rules);
    free(t->cies);
    free(t->cie_slots);
    free(t->run.locs);
    free(t->run.rows);
}

int ospd_cfi_rows(const struct ospd_cfi_input *in, struct ospd_unwind_rows *out)
{
    out->rows = NULL; /* the caller's other fields (the bias) stay */
    out->count = 0;
    const struct ospd_unwind_arch *arch = ospd_unwind_arch_of(in->machine);
    if (arch == NULL)
        return -ENOTSUP;
    /* The header as libdw's parse_eh_frame_hdr reads it, for the one table form linkers
     * write (datarel sdata4 pairs); anything else is left to libdw. */
    const uint8_t *h = in->hdr;
    if (h == NULL || in->hdr_size < 4 || h[0] != 1 || in->eh_frame == NULL || in->hi <= in->lo ||
        in->hi - in->lo > UINT32_MAX)
        return -ENOENT;
    uint8_t ptr_enc = h[1], count_enc = h[2], table_enc = h[3];
    struct section hdr = {.bytes = in->hdr, .size = in->hdr_size, .vaddr = in->hdr_vaddr};
    const uint8_t *p = h + 4;
    uint64_t frame_ptr = 0, count = 0;
    if (ptr_enc == DW_EH_PE_omit || count_enc == DW_EH_PE_omit ||
        table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || (ptr_enc & 0x70) == DW_EH_PE_datarel ||
        (count_enc & 0x70) == DW_EH_PE_datarel ||
        read_encoded(&hdr, ptr_enc, &p, &frame_ptr) != 0 ||
        read_encoded(&hdr, count_enc, &p, &count) != 0 || count == 0 ||
        count > (uint64_t)(in->hdr + in->hdr_size - p) / 8)
        return -ENOENT;
    /* libdw searches the table when the header comes before .eh_frame and points at it; else
     * it reads .eh_frame's entries in order until one covers the pc (an index of them here). */
    bool searched = in->hdr_searched && frame_ptr == in->eh_frame_vaddr;
    struct search_table st = {p, (size_t)count, in->hdr_vaddr};

    /* The FDE starts, as unwind-table.c reads them: sorted, each once. */
    uint64_t *starts = malloc((size_t)count * sizeof *starts);
    if (starts == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++)
        starts[i] = table_value(&st, i, 0);
    qsort(starts, (size_t)count, sizeof *starts, ospd_compare_u64);

    struct section frame = {
        .bytes = in->eh_frame, .size = in->eh_frame_size, .vaddr = in->eh_frame_vaddr};
    struct translator t = {.frame = &frame, .arch = arch, .run_fde = UINT64_MAX};
    struct fde_index index = {0};
    int rc = searched ? 0 : index_fdes(&t, &index);
    if (rc == 0)
        rc = rows_over(&t, starts, (size_t)count, searched ? &st : NULL, &index, in->lo, in->hi,
                       out);
    translator_free(&t);
    free(index.fdes);
    free(starts);
    return rows_done(out, rc, in->lo, in->hi);
}

int ospd_cfi_debug_rows(const uint8_t *bytes, size_t size, uint16_t machine, uint64_t lo,
                        uint64_t hi, struct ospd_unwind_rows *out)
{
    out->rows = NULL;
    out->count = 0;
    const struct ospd_unwind_arch *arch = ospd_unwind_arch_of(machine);
    if (arch == NULL)
        return -ENOTSUP;
    if (hi <= lo || hi - lo > UINT32_MAX)
        return -EINVAL;
    struct section frame = {.bytes = bytes, .size = size, .debug = true};
    struct translator t = {.frame = &frame, .arch = arch, .run_fde = UINT64_MAX};
    struct fde_index index = {0};
    uint64_t *starts = NULL;
    int rc = index_fdes(&t, &index);
    if (rc == 0 && index.count > 0 && (starts = malloc(index.count * sizeof *starts)) == NULL)
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < index.count; i++)
        starts[i] = index.fdes[i].start; /* sorted with the index */
    if (rc == 0)
        rc = rows_over(&t, starts, index.count, NULL, &index, lo, hi, out);
    translator_free(&t);
    free(index.fdes);
    free(starts);
    return rows_done(out, rc, lo, hi);
}

const uint8_t *ospd_debug_frame_of(Elf *elf, size_t *size)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        const char *name;
        if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type == SHT_NOBITS ||
            (name = elf_strptr(elf, shstrndx, sh.sh_name)) == NULL)
            continue;
        bool gnu = strcmp(name, ".zdebug_frame") == 0;
        if (!gnu && strcmp(name, ".debug_frame") != 0)
            continue;
        /* Compressed (Go's linker compresses its DWARF): inflated in place, as libdw does. */
        if ((gnu && elf_compress_gnu(scn, 0, 0) < 0) ||
            (!gnu && (sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0))
            return NULL;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (data == NULL || data->d_buf == NULL || data->d_size == 0)
            return NULL;
        *size = data->d_size;
        return data->d_buf;
    }
    return NULL;
}

int ospd_cfi_rows_elf(Elf *elf, uint16_t machine, uint64_t lo, uint64_t hi,
                      struct ospd_unwind_rows *out)
{
    const char *ident = elf_getident(elf, NULL);
    size_t shstrndx;
    if (ident == NULL || ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB ||
        elf_getshdrstrndx(elf, &shstrndx) != 0 || shstrndx == 0)
        return -ENOENT;
    /* As libdw's getcfi_shdr: the first .eh_frame, with the .eh_frame_hdr before it. */
    struct ospd_cfi_input in = {.machine = machine, .lo = lo, .hi = hi};
    const uint8_t *frame = NULL;
    size_t frame_size = 0;
    uint64_t frame_vaddr = 0;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        const char *name;
        if (gelf_getshdr(scn, &sh) == NULL ||
            (name = elf_strptr(elf, shstrndx, sh.sh_name)) == NULL)
            continue;
        bool is_hdr = strcmp(name, ".eh_frame_hdr") == 0;
        if (!is_hdr && strcmp(name, ".eh_frame") != 0)
            continue;
        if (sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED))
            return -ENOENT;
        Elf_Data *data = elf_rawdata(scn, NULL);
        if (data == NULL || data->d_buf == NULL)
            return -ENOENT;
        if (is_hdr && in.hdr == NULL) {
            in.hdr = data->d_buf;
            in.hdr_size = data->d_size;
            in.hdr_vaddr = sh.sh_addr;
            in.hdr_searched = frame == NULL;
        } else if (!is_hdr && frame == NULL) {
            frame = data->d_buf;
            frame_size = data->d_size;
            frame_vaddr = sh.sh_addr;
        }
    }
    /* .debug_frame's rows where .eh_frame's leave UNKNOWN (a cgo Go program's Go functions). */
    size_t debug_size = 0;
    const uint8_t *debug = ospd_debug_frame_of(elf, &debug_size);
    if (frame == NULL && debug == NULL)
        return -ENOENT;
    int rc;
    if (frame != NULL) {
        in.eh_frame = frame;
        in.eh_frame_size = frame_size;
        in.eh_frame_vaddr = frame_vaddr;
        rc = ospd_cfi_rows(&in, out);
    } else {
        uint64_t cap = 0;
        struct osp_unwind_row unknown = {.cfa_rule = OSP_CFA_UNKNOWN};
        out->rows = NULL;
        out->count = 0;
        rc = ospd_unwind_push_row(out, &cap, &unknown);
    }
    if (rc != 0 || debug == NULL)
        return rc;
    struct ospd_unwind_rows fill = {0};
    rc = ospd_cfi_debug_rows(debug, debug_size, machine, lo, hi, &fill);
    if (rc == 0)
        rc = ospd_unwind_rows_fill(out, &fill);
    ospd_unwind_rows_free(&fill);
    return rows_done(out, rc, lo, hi);
}
