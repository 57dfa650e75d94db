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
 *
 * The rooms: this file finds the FDE of each pc (the search table, or the FDEs in section
 * order) and emits the rows; cfi-entries.c reads the CIEs and FDEs, cfi-program.c runs their
 * CFA programs; ospd_cfi_translator.h holds what they share.
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
    for (uint64_t off = 0; rc == 0 && ospd_cfi_read_entry(t->frame, off, &e) == 0;
         off = (uint64_t)(e.limit - t->frame->bytes)) {
        struct fde f;
        if (e.is_cie || ospd_cfi_fde_at(t, off, &f, &rc) != 0)
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
                if (offset != UINT64_MAX && ospd_cfi_fde_at(t, offset, &f, &rc) == 0) {
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
            if (found && (rc = ospd_cfi_run_fde(t, &f)) == 0) {
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
        ospd_cfi_read_encoded(&hdr, ptr_enc, &p, &frame_ptr) != 0 ||
        ospd_cfi_read_encoded(&hdr, count_enc, &p, &count) != 0 || count == 0 ||
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
