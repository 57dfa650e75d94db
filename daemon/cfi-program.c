/* cfi-program.c — an FDE's CFA program run once, from its first instruction to its last
 * (libdw's execute_cfi), into the list of its advances and the row in force at each, for
 * the translator (cfi-rows.c); and the rules of a row said as the DWARF operations libdw
 * would hand over, translated into a row by ospd_unwind_row_of. remember_state nests at
 * most MAX_REMEMBERED deep; an expression no row form knows is an UNKNOWN row.
 */
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "ospd.h"
#include "ospd_cfi.h"
#include "ospd_cfi_translator.h"

static int64_t rule_value(int64_t v)
{
    return (int64_t)((uint64_t)v << 3) >> 3; /* kept in 61 bits, as libdw keeps it */
}

/* ---- running a CFA program ------------------------------------------------------------ */

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
                     atom == DW_OP_ge || atom == DW_OP_shl || atom == DW_OP_plus ||
                     atom == DW_OP_deref)) {
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
int ospd_cfi_run_program(struct translator *t, const struct cie *cie, const struct rules *cie_rules,
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
                if (ospd_cfi_read_encoded(s, cie->fde_encoding, &p, &loc) != 0)
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

/* Run an FDE's program into t->run (once per FDE in a row of queries). */
int ospd_cfi_run_fde(struct translator *t, const struct fde *f)
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
    int rc = ospd_cfi_run_program(t, cie, cie->initial_rules, f->program, f->program_end, f->start,
                                  &r, run);
    if (rc == -ENOMEM) {
        t->run_fde = UINT64_MAX;
        return rc;
    }
    run->failed = rc != 0;
    if (!run->failed)
        run->final = row_of(t, &r, cie->signal_frame);
    return 0;
}
