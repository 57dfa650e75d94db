/* unwind-table.c — an image's call-frame information evaluated into flat unwind rows.
 *
 * Owns turning one ELF object's `.eh_frame` (or `.debug_frame`) into the sorted
 * struct osp_unwind_row[] the shim's handler reads (proto/osp_unwind.h). The CFI itself is
 * decoded and run by elfutils' libdw (dwarf_getcfi_elf, dwarf_cfi_addrframe): this file
 * only enumerates the pc ranges and translates each row's rules into the few forms the
 * handler knows; anything else becomes OSP_CFA_UNKNOWN, where the handler falls back to the
 * frame-pointer walk.
 * cfi-rows.c builds the same rows from the `.eh_frame` bytes in one pass, and is asked first;
 * the libdw builder here takes what it leaves (and everything on OSPREYD_UNWIND_BUILDER=libdw).
 * Both fill the UNKNOWN ranges of `.eh_frame`'s rows from `.debug_frame` where there is one
 * (ospd_unwind_rows_fill, here; libdw's FDE starts from dwarf_next_cfi): a cgo Go program's
 * Go functions have only `.debug_frame`. An object without `.eh_frame` is all filled.
 *
 * DESIGN. The FDEs' start addresses come from `.eh_frame_hdr`'s sorted search table (every
 * object GNU ld or lld links with --eh-frame-hdr, the default), else from a walk of the
 * section's entries. For each FDE, dwarf_cfi_addrframe at its start gives the first row and
 * its [start, end); the next row is asked for at `end`, until the FDE's rows run out (libdw
 * fails at a pc no FDE covers: a gap, written as an UNKNOWN row). Consecutive equal rows are
 * merged. libdw runs an FDE's program from its start for each row, so the work is quadratic
 * in the rows of one FDE, which are few; a 33 MB cc1 takes about a second, done off the
 * daemon's loop thread (ospreyd.c).
 *
 * The rows kept between runs, by build id, are unwind-cache.c's (ospd_unwind_cache.h).
 */
#include <dirent.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ospc.h"
#include "ospd.h"
#include "ospd_cfi.h"
#include "ospd_unwind.h"
#include "ospd_unwind_cache.h"

/* The DWARF register numbers of the registers the rows speak of. */
static const struct ospd_unwind_arch arch_table[] = {
    {EM_X86_64, 7, 6, 16, -1},
    {EM_AARCH64, 31, 29, 30, 30},
};

const struct ospd_unwind_arch *ospd_unwind_arch_of(uint32_t machine)
{
    for (size_t i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
        if (arch_table[i].machine == machine)
            return &arch_table[i];
    return NULL;
}

bool ospd_unwind_knows_machine(uint32_t machine)
{
    return ospd_unwind_arch_of(machine) != NULL;
}

static void set_error(char *err, size_t errsz, const char *fmt, ...)
{
    if (err == NULL || errsz == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
}

/* Append a row, merged with the last when the rule continues (a canonical table: two
 * builders of the same rules give the same rows). */
int ospd_unwind_push_row(struct ospd_unwind_rows *out, uint64_t *cap,
                         const struct osp_unwind_row *row)
{
    if (out->count > 0) {
        const struct osp_unwind_row *last = &out->rows[out->count - 1];
        if (memcmp((const char *)last + 4, (const char *)row + 4, sizeof *row - 4) == 0)
            return 0; /* the same rule continues */
        if (last->pc_offset == row->pc_offset) {
            out->rows[out->count - 1] = *row; /* an empty range: the later rule wins */
            return 0;
        }
    }
    if (out->count >= OSPD_UNWIND_MAX_ROWS)
        return -E2BIG;
    if (ospd_grow((void **)&out->rows, cap, (uint64_t)out->count + 1, sizeof *out->rows) != 0)
        return -ENOMEM;
    out->rows[out->count++] = *row;
    return 0;
}

int ospd_unwind_rows_fill(struct ospd_unwind_rows *base, const struct ospd_unwind_rows *fill)
{
    struct ospd_unwind_rows merged = *base;
    merged.rows = NULL;
    merged.count = 0;
    uint64_t cap = 0;
    int rc = 0;
    size_t i = 0, j = 0;
    /* Both are step functions of the pc: at each step of either, base's row unless UNKNOWN. */
    while (rc == 0 && (i < base->count || j < fill->count)) {
        uint32_t pc;
        if (j >= fill->count ||
            (i < base->count && base->rows[i].pc_offset <= fill->rows[j].pc_offset))
            pc = base->rows[i].pc_offset;
        else
            pc = fill->rows[j].pc_offset;
        while (i < base->count && base->rows[i].pc_offset <= pc)
            i++;
        while (j < fill->count && fill->rows[j].pc_offset <= pc)
            j++;
        struct osp_unwind_row row = {.cfa_rule = OSP_CFA_UNKNOWN};
        if (i > 0 && base->rows[i - 1].cfa_rule != OSP_CFA_UNKNOWN)
            row = base->rows[i - 1];
        else if (j > 0)
            row = fill->rows[j - 1];
        row.pc_offset = pc;
        rc = ospd_unwind_push_row(&merged, &cap, &row);
    }
    if (rc != 0) {
        free(merged.rows);
        return rc;
    }
    free(base->rows);
    *base = merged;
    return 0;
}

/* A DWARF register number from a single-register op, or -1. */
static int op_register(const Dwarf_Op *op, int64_t *offset)
{
    if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
        *offset = (int64_t)op->number;
        return op->atom - DW_OP_breg0;
    }
    if (op->atom == DW_OP_bregx) {
        *offset = (int64_t)op->number2;
        return (int)op->number;
    }
    return -1;
}

/* The x86_64 lazy-binding PLT's CFA: rsp + 8, and 8 more once (rip & 15) >= N, N in 10..11:
 * breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl; plus. */
static int match_plt(const Dwarf_Op *ops, size_t nops, int32_t *offset, uint8_t *threshold)
{
    if (nops != 9 || ops[0].atom != DW_OP_breg7 || ops[1].atom != DW_OP_breg16 ||
        ops[1].number != 0 || ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and ||
        ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 || ops[5].atom != DW_OP_ge ||
        ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
        return 0;
    *offset = (int32_t)(int64_t)ops[0].number;
    *threshold = (uint8_t)(ops[4].atom - DW_OP_lit0);
    return 1;
}

/* The caller's sp saved in the frame (OpenSSL's SHA/AES/bignum assembly that aligns rsp, GCC's
 * realignment through a DRAP register): breg(sp or fp) N; deref; and plus_uconst M (M a
 * multiple of 8, at most 8 * OSP_CFA_DEREF_WORDS) or nothing. 1 with the row's offset and
 * cfa_deref byte, else 0. */
static int match_deref(const struct ospd_unwind_arch *arch, const Dwarf_Op *ops, size_t nops,
                       int32_t *offset, uint8_t *deref)
{
    int64_t base_offset = 0;
    int reg = nops >= 2 ? op_register(&ops[0], &base_offset) : -1;
    if ((reg != arch->sp && reg != arch->fp) || ops[1].atom != DW_OP_deref ||
        base_offset < INT32_MIN || base_offset > INT32_MAX)
        return 0;
    uint64_t addend = 0;
    if (nops == 3 && ops[2].atom == DW_OP_plus_uconst)
        addend = ops[2].number;
    else if (nops != 2)
        return 0;
    if (addend % 8u || addend / 8u > OSP_CFA_DEREF_WORDS)
        return 0;
    *offset = (int32_t)base_offset;
    *deref = (uint8_t)((reg == arch->fp ? OSP_CFA_DEREF_FP : 0u) | addend / 8u);
    return 1;
}

/* DWARF register regno's slot among the registers the kernel's signal frame saves (the
 * numbers of OSP_CFA_REG, proto/osp_unwind.h), or -1: x86_64's mcontext gregs[] (the order
 * shim/arch/x86_64/cpu.c checks against <ucontext.h>), aarch64's regs[] (x0..x30). */
static int signal_register(const struct ospd_unwind_arch *arch, int regno)
{
    /* DWARF rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8..r15 */
    static const int8_t x86_64_gregs[16] = {13, 12, 14, 11, 9, 8, 10, 15, 0, 1, 2, 3, 4, 5, 6, 7};
    if (regno < 0 || regno == arch->sp || regno == arch->fp)
        return -1;
    if (arch->machine == EM_X86_64 && regno < 16)
        return x86_64_gregs[regno];
    if (arch->machine == EM_AARCH64 && regno <= 30)
        return regno;
    return -1;
}

/* Where a register is saved, as CFA + offset: 1 and *offset; 0 when it is unchanged ("same
 * value"); -1 when it is undefined; -2 for any other rule. From dwarf_frame_register's
 * answer: its return value, ops and nops. */
static int register_rule(const struct ospd_frame_register *r, int64_t *offset)
{
    const Dwarf_Op *ops = r->ops;
    size_t nops = r->nops;
    if (r->rc != 0)
        return -2;
    if (nops == 0)
        return ops == NULL ? 0 : -1;
    /* offset(N): call_frame_cfa, then plus_uconst N (or nothing for N = 0). */
    if (ops[0].atom != DW_OP_call_frame_cfa)
        return -2;
    if (nops == 1) {
        *offset = 0;
        return 1;
    }
    if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
        *offset = (int64_t)ops[1].number;
        return 1;
    }
    if (nops == 3 && ops[1].atom == DW_OP_constu) { /* libdw: constu N; plus */
        *offset = (int64_t)ops[1].number;
        return ops[2].atom == DW_OP_plus ? 1 : -2;
    }
    if (nops == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus) {
        *offset = ops[1].number;
        return 1;
    }
    return -2;
}

struct osp_unwind_row ospd_unwind_row_of(const struct ospd_unwind_arch *arch, uint32_t pc_offset,
                                         const struct ospd_frame_rules *f)
{
    struct osp_unwind_row row = {.pc_offset = pc_offset, .cfa_rule = OSP_CFA_UNKNOWN};
    if (f->signal_frame) {
        row.cfa_rule = OSP_CFA_SIGNAL;
        return row;
    }
    int64_t ra_offset = 0, fp_offset = 0;
    int ra = register_rule(&f->ra, &ra_offset);
    if (ra == -1) {
        row.cfa_rule = OSP_CFA_END;
        return row;
    }
    const Dwarf_Op *ops = f->cfa;
    size_t nops = f->ncfa;
    if (f->cfa_rc != 0 || nops == 0)
        return row;
    int64_t cfa_offset = 0;
    int reg = nops == 1 ? op_register(&ops[0], &cfa_offset) : -1;
    int32_t plt_offset = 0, deref_offset = 0;
    uint8_t threshold = 0, deref = 0;
    if (reg == arch->sp || reg == arch->fp) {
        if (cfa_offset < INT32_MIN || cfa_offset > INT32_MAX)
            return row;
        row.cfa_rule = reg == arch->sp ? OSP_CFA_SP : OSP_CFA_FP;
        row.cfa_offset = (int32_t)cfa_offset;
    } else if (arch->machine == EM_X86_64 && match_plt(ops, nops, &plt_offset, &threshold)) {
        row.cfa_rule = OSP_CFA_PLT;
        row.cfa_offset = plt_offset;
        row.plt_threshold = threshold;
    } else if (signal_register(arch, reg) >= 0 && cfa_offset >= INT32_MIN &&
               cfa_offset <= INT32_MAX) {
        row.cfa_rule = OSP_CFA_REG; /* OpenSSL's: the caller's sp kept in rax while rsp aligns */
        row.cfa_offset = (int32_t)cfa_offset;
        row.cfa_reg = (uint8_t)signal_register(arch, reg);
    } else if (match_deref(arch, ops, nops, &deref_offset, &deref)) {
        row.cfa_rule = OSP_CFA_DEREF; /* the caller's sp saved in the frame while rsp aligns */
        row.cfa_offset = deref_offset;
        row.cfa_deref = deref;
    } else {
        return row; /* an expression */
    }
    if (ra == 1 && ra_offset >= INT16_MIN && ra_offset <= INT16_MAX) {
        row.ra_rule = OSP_RA_AT_CFA;
        row.ra_offset = (int16_t)ra_offset;
    } else if (ra == 0 && arch->lr >= 0) {
        row.ra_rule = OSP_RA_IN_LR; /* x30 not saved yet: the caller's address is in it */
    } else {
        row.cfa_rule = OSP_CFA_UNKNOWN;
        return row;
    }
    int fp = register_rule(&f->fp, &fp_offset);
    if (fp == 1 && fp_offset >= INT16_MIN && fp_offset <= INT16_MAX) {
        row.fp_rule = OSP_FP_AT_CFA;
        row.fp_offset = (int16_t)fp_offset;
    } else {
        row.fp_rule = OSP_FP_SAME; /* unchanged, or not recoverable: the walk keeps its value */
    }
    return row;
}

struct osp_unwind_row ospd_unwind_libdw_row(Dwarf_Frame *frame, const struct ospd_unwind_arch *arch,
                                            uint32_t pc_offset, bool signal_frame)
{
    struct ospd_frame_rules f = {.signal_frame = signal_frame};
    Dwarf_Op ra_mem[3], fp_mem[3], *ops = NULL;
    f.ra.rc = dwarf_frame_register(frame, arch->ra, ra_mem, &ops, &f.ra.nops);
    f.ra.ops = ops;
    f.fp.rc = dwarf_frame_register(frame, arch->fp, fp_mem, &ops, &f.fp.nops);
    f.fp.ops = ops;
    f.cfa_rc = dwarf_frame_cfa(frame, &ops, &f.ncfa);
    f.cfa = ops;
    return ospd_unwind_row_of(arch, pc_offset, &f);
}

/* The FDEs' initial locations from .eh_frame_hdr (common/'s reader), sorted. 0, or -ENOENT
 * without a usable search table. */
static int fde_starts_from_header(Elf *elf, uint64_t **starts, size_t *count)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return -ENOENT;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == NULL)
            continue;
        const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (name == NULL || strcmp(name, ".eh_frame_hdr") != 0 || sh.sh_type == SHT_NOBITS)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (data == NULL)
            return -ENOENT;
        struct ospc_eh_frame_entry *entries;
        size_t n;
        int rc = ospc_eh_frame_hdr_table(data->d_buf, data->d_size, sh.sh_addr, &entries, &n);
        if (rc != 0)
            return rc;
        uint64_t *out = malloc((n ? n : 1) * sizeof *out);
        if (out == NULL) {
            free(entries);
            return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
            out[i] = entries[i].start;
        free(entries);
        *starts = out;
        *count = n;
        return 0;
    }
    return -ENOENT;
}

/* The next executable PT_LOAD at or after program header *i (which it advances): 1, or 0
 * when there is none. */
static int next_code_segment(Elf *elf, size_t *i, GElf_Phdr *ph)
{
    size_t phnum;
    if (elf_getphdrnum(elf, &phnum) != 0)
        return 0;
    for (; *i < phnum; (*i)++)
        if (gelf_getphdr(elf, (int)*i, ph) != NULL && ph->p_type == PT_LOAD &&
            (ph->p_flags & PF_X)) {
            (*i)++;
            return 1;
        }
    return 0;
}

/* The span of the PF_X PT_LOAD segments, in link-time addresses. */
static int text_span(Elf *elf, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    GElf_Phdr ph;
    for (size_t i = 0; next_code_segment(elf, &i, &ph);) {
        if (ph.p_vaddr < *lo)
            *lo = ph.p_vaddr;
        if (ph.p_vaddr + ph.p_memsz > *hi)
            *hi = ph.p_vaddr + ph.p_memsz;
    }
    return *lo < *hi ? 0 : -ENOEXEC;
}

/* The rows of the FDEs starting at starts[0..n) inside [lo, hi). */
static int rows_from_fdes(Dwarf_CFI *cfi, const struct ospd_unwind_arch *arch,
                          const uint64_t *starts, size_t n, uint64_t lo, uint64_t hi,
                          struct ospd_unwind_rows *out)
{
    uint64_t cap = 0;
    struct osp_unwind_row unknown = {.cfa_rule = OSP_CFA_UNKNOWN};
    int rc = ospd_unwind_push_row(out, &cap, &unknown); /* below the first FDE */
    for (size_t i = 0; i < n && rc == 0; i++) {
        uint64_t pc = starts[i];
        uint64_t limit = i + 1 < n ? starts[i + 1] : hi;
        if (pc < lo || pc >= hi || (i > 0 && pc == starts[i - 1]))
            continue;
        while (pc < limit && rc == 0) {
            Dwarf_Frame *frame = NULL;
            if (dwarf_cfi_addrframe(cfi, pc, &frame) != 0) {
                unknown.pc_offset = (uint32_t)(pc - lo);
                rc = ospd_unwind_push_row(out, &cap, &unknown); /* a gap until the next FDE */
                break;
            }
            Dwarf_Addr start = 0, end = 0;
            bool signal_frame = false;
            dwarf_frame_info(frame, &start, &end, &signal_frame);
            struct osp_unwind_row row =
                ospd_unwind_libdw_row(frame, arch, (uint32_t)(pc - lo), signal_frame);
            free(frame);
            rc = ospd_unwind_push_row(out, &cap, &row);
            if (end <= pc)
                break; /* an empty or backward range: nothing more to learn here */
            pc = end;
        }
    }
    return rc;
}

/* The FDEs' starts without a search table (.debug_frame, or an .eh_frame without its header):
 * each FDE is found by asking for the frame at the end of the previous one, and a gap is
 * crossed by probing forward in 16-byte steps (functions are aligned), at most
 * OSPD_UNWIND_MAX_PROBES lookups in all. */
static int fde_starts_from_probes(Dwarf_CFI *cfi, uint64_t lo, uint64_t hi, uint64_t **starts,
                                  size_t *count)
{
    uint64_t cap = 0, probes = 0;
    size_t n = 0;
    uint64_t *out = NULL;
    uint64_t pc = lo;
    while (pc < hi && probes < OSPD_UNWIND_MAX_PROBES) {
        Dwarf_Frame *frame = NULL;
        if (dwarf_cfi_addrframe(cfi, pc, &frame) != 0) {
            pc = (pc + 16) & ~(uint64_t)15;
            probes++;
            continue;
        }
        Dwarf_Addr start = 0, end = 0;
        dwarf_frame_info(frame, &start, &end, NULL);
        free(frame);
        if (ospd_grow((void **)&out, &cap, n + 1, sizeof *out) != 0) {
            free(out);
            return -ENOMEM;
        }
        out[n++] = pc;
        pc = end > pc ? end : pc + 1;
    }
    *starts = out;
    *count = n;
    return 0;
}

/* The FDEs' starts in a .debug_frame, as libdw reads its entries (dwarf_next_cfi), sorted. */
static int fde_starts_from_debug_frame(Elf *elf, const uint8_t *bytes, size_t size,
                                       uint64_t **starts, size_t *count)
{
    const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
    Elf_Data data = {.d_buf = (void *)bytes, .d_size = size, .d_type = ELF_T_BYTE};
    uint64_t cap = 0, *out = NULL;
    size_t n = 0;
    Dwarf_Off offset = 0, next = 0;
    Dwarf_CFI_Entry entry;
    bool wide = ident != NULL && ident[EI_CLASS] == ELFCLASS64; /* 8-byte addresses */
    while (wide && dwarf_next_cfi(ident, &data, false, offset, &next, &entry) == 0) {
        if (!dwarf_cfi_cie_p(&entry) && entry.fde.start + 8 <= entry.fde.end) {
            uint64_t start;
            memcpy(&start, entry.fde.start, 8);
            if (ospd_grow((void **)&out, &cap, n + 1, sizeof *out) != 0) {
                free(out);
                return -ENOMEM;
            }
            out[n++] = start;
        }
        if (next <= offset)
            break;
        offset = next;
    }
    qsort(out, n, sizeof *out, ospd_compare_u64);
    *starts = out;
    *count = n;
    return 0;
}

/* out's UNKNOWN ranges given the rows of the .debug_frame `bytes` (libdw's `cfi`). */
static int fill_from_debug_frame(Elf *elf, Dwarf_CFI *cfi, const uint8_t *bytes, size_t size,
                                 const struct ospd_unwind_arch *arch, uint64_t lo, uint64_t hi,
                                 struct ospd_unwind_rows *out)
{
    uint64_t *starts = NULL;
    size_t n = 0;
    struct ospd_unwind_rows fill = {0};
    int rc = fde_starts_from_debug_frame(elf, bytes, size, &starts, &n);
    if (rc == 0)
        rc = rows_from_fdes(cfi, arch, starts, n, lo, hi, &fill);
    if (rc == 0)
        rc = ospd_unwind_rows_fill(out, &fill);
    free(starts);
    ospd_unwind_rows_free(&fill);
    return rc;
}

/* The load bias of a mapping of the object: the PF_X PT_LOAD whose page holds map_offset. */
static int mapping_bias(Elf *elf, uint64_t map_start, uint64_t map_offset, uint64_t *bias)
{
    GElf_Phdr ph;
    for (size_t i = 0; next_code_segment(elf, &i, &ph);) {
        uint64_t align = ph.p_align > 1 ? ph.p_align : 4096;
        uint64_t page_offset = ph.p_offset & ~(uint64_t)4095;
        if (page_offset != map_offset && (ph.p_offset & ~(align - 1)) != map_offset)
            continue;
        /* The mapping's first byte holds file offset map_offset, link-time address
         * p_vaddr - (p_offset - map_offset). */
        *bias = map_start - (ph.p_vaddr - (ph.p_offset - map_offset));
        return 0;
    }
    return -ENOENT;
}

/* OSPREYD_UNWIND_BUILDER=libdw: every object's rows from libdw (the comparison's reference).
 * Named for ospreyd: the shim passes no OSPREY_ variable on to the collector it starts. */
static bool libdw_asked(void)
{
    const char *builder = getenv("OSPREYD_UNWIND_BUILDER");
    return builder != NULL && strcmp(builder, "libdw") == 0;
}

int ospd_unwind_build(const struct ospd_unwind_source *src, struct ospd_unwind_rows *out, char *err,
                      size_t errsz)
{
    memset(out, 0, sizeof *out);
    const char *path = src->path;
    const struct ospd_unwind_arch *arch = ospd_unwind_arch_of(src->machine);
    if (arch == NULL) {
        set_error(err, errsz, "%s: no unwind rows for ELF machine %u", path, src->machine);
        return -ENOTSUP;
    }
    elf_version(EV_CURRENT);
    int fd = -1, cache_dir = -1;
    Elf *elf = NULL;
    if (src->memory != NULL) {
        elf = elf_memory((char *)src->memory, src->memory_size);
    } else {
        /* Never blocking: the path a mapping names may be anything by now (a FIFO). */
        fd = open(src->open_path ? src->open_path : path,
                  O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat file;
        if (fd >= 0 && (fstat(fd, &file) != 0 || !S_ISREG(file.st_mode))) {
            close(fd);
            set_error(err, errsz, "%s: not a regular file", path);
            return -EINVAL;
        }
        if (fd < 0) {
            int e = errno;
            set_error(err, errsz, "%s: %s", path, strerror(e));
            return -e;
        }
        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    }
    int rc = 0;
    Dwarf *dwarf = NULL;
    Dwarf_CFI *eh_cfi = NULL;
    uint64_t *starts = NULL;
    size_t nstarts = 0;
    GElf_Ehdr eh;
    uint64_t lo = 0, hi = 0;
    if (elf == NULL || elf_kind(elf) != ELF_K_ELF || gelf_getehdr(elf, &eh) == NULL) {
        set_error(err, errsz, "%s: not an ELF file", path);
        rc = -ENOEXEC;
        goto done;
    }
    if (eh.e_machine != src->machine) {
        set_error(err, errsz, "%s: ELF machine %u, not %u", path, eh.e_machine, src->machine);
        rc = -ENOEXEC;
        goto done;
    }
    if (text_span(elf, &lo, &hi) != 0 || hi - lo > UINT32_MAX) {
        set_error(err, errsz, "%s: no executable segment", path);
        rc = -ENOEXEC;
        goto done;
    }
    if (src->mapped && mapping_bias(elf, src->map_start, src->map_offset, &out->bias) != 0) {
        set_error(err, errsz, "%s: no executable segment at file offset %#" PRIx64, path,
                  src->map_offset);
        rc = -ENOEXEC;
        goto done;
    }
    /* The build id names the cache file (common/'s reader, on the descriptor already open);
     * the header must match the object's call-frame sections too. Rows are kept only from an
     * object of ours or root's: another user's is unwound for this run, never stored. */
    char cached[OSPC_BUILD_ID_SIZE + 8] = "";
    struct ospc_elf_identity identity;
    struct cache_header want;
    struct stat st;
    bool keep = false;
    if (src->cache_dir != NULL && fd >= 0 && fstat(fd, &st) == 0 &&
        ospc_elf_identity_fd(fd, st.st_size, &identity) == 0 && identity.build_id[0] != '\0' &&
        (cache_dir = ospc_private_directory(src->cache_dir, 1)) >= 0) {
        snprintf(cached, sizeof cached, "%s.rows", identity.build_id);
        struct frames_identity frames;
        ospd_unwind_frames_identity(elf, &frames);
        ospd_unwind_cache_header(&want, identity.build_id, src->machine, &frames, lo, hi);
        keep = ospc_trusted_source(&st);
        if (ospd_unwind_cache_load(cache_dir, cached, &want, out) == 0) {
            out->from_cache = true;
            goto done;
        }
        ospd_unwind_rows_free(out);
        if (src->mapped && mapping_bias(elf, src->map_start, src->map_offset, &out->bias) != 0)
            out->bias = 0; /* computed again below */
    }
    /* The rows from .eh_frame's bytes (cfi-rows.c); libdw's builder for what that leaves to
     * it, or when asked (src->libdw, OSPREYD_UNWIND_BUILDER=libdw). */
    if (!src->libdw && !libdw_asked()) {
        rc = ospd_cfi_rows_elf(elf, src->machine, lo, hi, out);
        if (rc == 0)
            goto built;
        if (rc != -ENOENT) {
            set_error(err, errsz, "%s: %s", path,
                      rc == -E2BIG ? "more unwind rows than a table holds" : strerror(-rc));
            goto done;
        }
        rc = 0;
    }
    Dwarf_CFI *cfi = dwarf_getcfi_elf(elf); /* .eh_frame: ours to end */
    eh_cfi = cfi;
    Dwarf_CFI *debug_cfi = NULL;
    size_t debug_size = 0;
    const uint8_t *debug = NULL;
    if ((dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL)) != NULL &&
        (debug_cfi = dwarf_getcfi(dwarf)) != NULL) /* .debug_frame, inflated by libdw */
        debug = ospd_debug_frame_of(elf, &debug_size);
    if (cfi == NULL && debug == NULL) {
        set_error(err, errsz, "%s: no .eh_frame or .debug_frame", path);
        rc = -ENODATA;
        goto done;
    }
    if (cfi != NULL) {
        rc = fde_starts_from_header(elf, &starts, &nstarts);
        if (rc == -ENOENT)
            rc = fde_starts_from_probes(cfi, lo, hi, &starts, &nstarts);
        if (rc != 0) {
            set_error(err, errsz, "%s: %s", path, strerror(-rc));
            goto done;
        }
        rc = rows_from_fdes(cfi, arch, starts, nstarts, lo, hi, out);
    } else {
        uint64_t cap = 0;
        struct osp_unwind_row unknown = {.cfa_rule = OSP_CFA_UNKNOWN};
        rc = ospd_unwind_push_row(out, &cap, &unknown);
    }
    if (rc == 0 && debug != NULL) /* .debug_frame's rows where .eh_frame's are UNKNOWN */
        rc = fill_from_debug_frame(elf, debug_cfi, debug, debug_size, arch, lo, hi, out);
    if (rc != 0) {
        set_error(err, errsz, "%s: %s", path,
                  rc == -E2BIG ? "more unwind rows than a table holds" : strerror(-rc));
        goto done;
    }
built:
    out->start_vaddr = lo;
    out->end_vaddr = hi;
    if (keep) /* a cached file that failed its checks is replaced here */
        ospd_unwind_cache_store(cache_dir, cached, &want, out);
done:
    if (cache_dir >= 0)
        close(cache_dir);
    free(starts);
    if (eh_cfi)
        dwarf_cfi_end(eh_cfi);
    if (dwarf)
        dwarf_end(dwarf);
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        ospd_unwind_rows_free(out);
    return rc;
}

void ospd_unwind_rows_free(struct ospd_unwind_rows *rows)
{
    free(rows->rows);
    memset(rows, 0, sizeof *rows);
}
