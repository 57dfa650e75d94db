/* spans.c — where an object's functions begin and end, read from its unwind tables: the
 * binary search table of .eh_frame_hdr (PT_GNU_EH_FRAME, read by common/eh-frame.c) gives
 * each FDE's start, the FDE its length. A stripped object's local functions have no symbol, but
 * every function the compiler emitted has an FDE (Debian builds with unwind tables on): their code
 * is named by the function's start (object+0xSTART) rather than by each pc, so a function's samples
 * add up to one row, as they do for named code. An executable's entry point is its C runtime's
 * `_start`, the outermost frame of every main thread's stack: the symbolizer names it so when
 * no symbol does (a stripped program's stacks would end at `program+0xENTRY`). 64-bit little-endian
 * objects (x86_64, arm64); anything else, or a table this does not read, gives no spans. The file
 * comes from a profile: every offset is checked against its size.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"
#include "ospx_internal.h"

/* DWARF pointer encodings (LSB, "Exception Frames"): the ones this file names itself. */
#define PE_OMIT   0xff
#define PE_ABSPTR 0x00

/* The file, mapped, and the loadable segments that say where an address lies in it. */
struct object {
    const unsigned char *data;
    size_t size;
    const Elf64_Phdr *loads[16];
    size_t load_count;
};

/* The file offset of `length` bytes at address `address`, or SIZE_MAX. */
static size_t offset_of(const struct object *o, uint64_t address, uint64_t length)
{
    for (size_t i = 0; i < o->load_count; i++) {
        const Elf64_Phdr *p = o->loads[i];
        if (address >= p->p_vaddr && address - p->p_vaddr <= p->p_filesz &&
            length <= p->p_filesz - (address - p->p_vaddr) &&
            p->p_offset + (address - p->p_vaddr) + length <= o->size)
            return (size_t)(p->p_offset + (address - p->p_vaddr));
    }
    return SIZE_MAX;
}

/* A value of encoding `format` (the low four bits), unrelocated (common/'s reader). */
static int read_value(const unsigned char **p, const unsigned char *end, unsigned format,
                      uint64_t *out)
{
    return ospc_dwarf_read_encoded(p, end, format & 0x0fu, 0, 0, out);
}

/* The FDE pointer encoding of the CIE at file offset `at` (its 'R' augmentation; absptr
 * without one), or -1. */
static int cie_encoding(const struct object *o, size_t at)
{
    if (at > o->size || o->size - at < 8)
        return -1;
    const unsigned char *p = o->data + at, *end;
    uint32_t length;
    memcpy(&length, p, 4);
    p += 4;
    if (length == 0xffffffffu || length > o->size - at - 4)
        return -1; /* 64-bit DWARF: not in .eh_frame as GNU tools write it */
    end = p + length;
    uint32_t id;
    memcpy(&id, p, 4);
    p += 4;
    if (id != 0 || p >= end)
        return -1;
    unsigned version = *p++;
    const unsigned char *augmentation = p;
    while (p < end && *p != '\0')
        p++;
    if (p >= end)
        return -1;
    p++;
    if (version >= 4)
        p += 2; /* address size, segment selector size */
    uint64_t code_align, return_register;
    int64_t data_align;
    if (p > end || ospc_dwarf_uleb(&p, end, &code_align) != 0 ||
        ospc_dwarf_sleb(&p, end, &data_align) != 0)
        return -1;
    if (version == 1) {
        if (p >= end)
            return -1;
        p++;
    } else if (ospc_dwarf_uleb(&p, end, &return_register) != 0) {
        return -1;
    }
    if (augmentation[0] != 'z')
        return PE_ABSPTR;
    uint64_t augmentation_length;
    if (ospc_dwarf_uleb(&p, end, &augmentation_length) != 0)
        return -1;
    for (const unsigned char *a = augmentation + 1; *a != '\0'; a++) {
        if (p >= end)
            return -1;
        if (*a == 'R')
            return *p;
        if (*a == 'L') {
            p++;
        } else if (*a == 'P') {
            unsigned encoding = *p++;
            uint64_t ignored;
            if (read_value(&p, end, encoding & 0x0f, &ignored) != 0)
                return -1;
        } else if (*a != 'S' && *a != 'B') {
            return -1;
        }
    }
    return PE_ABSPTR;
}

/* The length of the function the FDE at address `fde` covers, or 0. */
static uint64_t fde_length(const struct object *o, uint64_t fde)
{
    size_t at = offset_of(o, fde, 8);
    if (at == SIZE_MAX)
        return 0;
    const unsigned char *p = o->data + at;
    uint32_t length, cie_pointer;
    memcpy(&length, p, 4);
    memcpy(&cie_pointer, p + 4, 4);
    if (length == 0xffffffffu || length < 8 || length > o->size - at - 4 || cie_pointer == 0 ||
        cie_pointer > at + 4)
        return 0;
    int encoding = cie_encoding(o, at + 4 - cie_pointer);
    if (encoding < 0 || encoding == PE_OMIT)
        return 0;
    const unsigned char *end = p + 4 + length;
    p += 8;
    uint64_t begin, range;
    if (read_value(&p, end, (unsigned)encoding & 0x0f, &begin) != 0 ||
        read_value(&p, end, (unsigned)encoding & 0x0f, &range) != 0)
        return 0;
    return range;
}

static int compare_starts(const void *a, const void *b)
{
    const struct ospx__span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The spans of the mapped object `o`, whose program headers are ph[0..phnum). */
static int spans_by_headers(const struct object *o, const Elf64_Phdr *ph, size_t phnum,
                            struct ospx__spans *out)
{
    struct object with_loads = *o;
    const Elf64_Phdr *hdr = NULL;
    for (size_t i = 0; i < phnum; i++) {
        if (ph[i].p_type == PT_LOAD && with_loads.load_count < 16)
            with_loads.loads[with_loads.load_count++] = &ph[i];
        else if (ph[i].p_type == PT_GNU_EH_FRAME)
            hdr = &ph[i];
    }
    if (hdr == NULL || hdr->p_filesz < 4 || hdr->p_offset > o->size ||
        hdr->p_filesz > o->size - hdr->p_offset)
        return 0;
    struct ospc_eh_frame_entry *entries;
    size_t count;
    int rc = ospc_eh_frame_hdr_table(o->data + hdr->p_offset, hdr->p_filesz, hdr->p_vaddr, &entries,
                                     &count);
    if (rc != 0 || count == 0) {
        free(entries); /* NULL when refused */
        return rc == -ENOMEM ? rc : 0;
    }
    out->spans = malloc(count * sizeof *out->spans);
    if (out->spans == NULL) {
        free(entries);
        return -ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        uint64_t length = fde_length(&with_loads, entries[i].fde);
        if (length > 0)
            out->spans[out->count++] =
                (struct ospx__span){entries[i].start, entries[i].start + length};
    }
    free(entries);
    qsort(out->spans, out->count, sizeof *out->spans, compare_starts);
    return 0;
}

/* The spans of the mapped object `o` into *out. */
static int spans_of(const struct object *o, struct ospx__spans *out)
{
    Elf64_Ehdr eh;
    Elf64_Phdr *ph;
    size_t phnum;
    int rc = ospc_elf_program_headers(-1, o->data, o->size, &eh, &ph, &phnum);
    if (rc != 0)
        return rc == -ENOMEM ? rc : 0;
    rc = spans_by_headers(o, ph, phnum, out);
    /* A program's entry: an ET_EXEC object, or a PIE (ET_DYN asking for an interpreter); a
     * library's e_entry is 0 or a function its symbols name. */
    bool program = eh.e_type == ET_EXEC;
    for (size_t i = 0; i < phnum && !program; i++)
        program = ph[i].p_type == PT_INTERP;
    if (rc == 0 && program)
        out->entry = eh.e_entry;
    free(ph);
    return rc;
}

int ospx__spans_read(const char *path, struct ospx__spans *out)
{
    memset(out, 0, sizeof *out);
    off_t size;
    char why[128];
    if (path == NULL || ospx__elf_check(path, &size, why, sizeof why) != 0 || size <= 0)
        return 0;
    size_t mapped_size;
    void *data = ospx__map_file(path, &mapped_size);
    if (data == NULL)
        return 0;
    struct object o = {.data = data, .size = mapped_size};
    int rc = spans_of(&o, out);
    munmap(data, mapped_size);
    if (rc < 0)
        ospx__spans_free(out);
    return rc;
}

const struct ospx__span *ospx__spans_find(const struct ospx__spans *spans, uint64_t address)
{
    size_t after = ospc_rows_before(spans->spans, spans->count, sizeof *spans->spans,
                                    offsetof(struct ospx__span, start), address, true);
    if (after == 0)
        return NULL;
    const struct ospx__span *span = &spans->spans[after - 1];
    return address < span->end ? span : NULL;
}

void ospx__spans_free(struct ospx__spans *spans)
{
    free(spans->spans);
    memset(spans, 0, sizeof *spans);
}
