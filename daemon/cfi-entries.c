/* cfi-entries.c — the entries of `.eh_frame` and `.debug_frame` read for the translator
 * (cfi-rows.c): the framing of a CIE or an FDE, their pointer encodings and augmentations,
 * each CIE parsed once with its initial rules (its instructions run by cfi-program.c), and
 * an FDE's range and program. Every length, offset and pointer is checked against the
 * section it points into (see cfi-rows.c for the hostile-file rules).
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

/* An encoded pointer at *p inside s (libdw's read_encoded_value with .eh_frame's bases:
 * pcrel from the value's own address, textrel and datarel 0). 0, or -1. */
int ospd_cfi_read_encoded(const struct section *s, uint8_t enc, const uint8_t **p, uint64_t *out)
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

int ospd_cfi_read_entry(const struct section *s, uint64_t off, struct entry *e)
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
    if (ospd_cfi_read_entry(t->frame, offset, &e) != 0 || !e.is_cie)
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
    int ran = ospd_cfi_run_program(t, c, NULL, c->initial, c->initial_end, 0, initial, NULL);
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

int ospd_cfi_fde_at(struct translator *t, uint64_t offset, struct fde *f, int *rc)
{
    struct entry e;
    if (ospd_cfi_read_entry(t->frame, offset, &e) != 0 || e.is_cie)
        return -1;
    struct cie *c = cie_at(t, e.cie_offset, rc);
    if (c == NULL)
        return -1;
    /* The encoded values are read within the whole section, as libdw does. */
    const uint8_t *p = e.body;
    uint64_t range = 0;
    if (ospd_cfi_read_encoded(t->frame, c->fde_encoding, &p, &f->start) != 0 ||
        ospd_cfi_read_encoded(t->frame, c->fde_encoding & 0x0f, &p, &range) != 0 || p > e.limit)
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
