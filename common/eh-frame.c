/* eh-frame.c — the one reader of `.eh_frame_hdr` and of the DWARF pointer encodings `.eh_frame`
 * uses (LSB, "Exception Frames"): the header's binary search table turned into each FDE's
 * start and address. ospreyd's table builder (daemon/unwind-table.c) takes the starts; the
 * exporters' function spans (exporters/spans.c) take both. The bytes come from files named in
 * profiles: every read is checked against the end of the bytes, and a table this does not read
 * is refused, never guessed at.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospc.h"

#define PE_OMIT    0xffu
#define PE_ABSPTR  0x00u
#define PE_ULEB128 0x01u
#define PE_UDATA2  0x02u
#define PE_UDATA4  0x03u
#define PE_UDATA8  0x04u
#define PE_SLEB128 0x09u
#define PE_SDATA2  0x0au
#define PE_SDATA4  0x0bu
#define PE_SDATA8  0x0cu
#define PE_PCREL   0x10u
#define PE_DATAREL 0x30u

int ospc_dwarf_uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t value = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t byte = *(*p)++;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

int ospc_dwarf_sleb(const uint8_t **p, const uint8_t *end, int64_t *out)
{
    uint64_t value = 0;
    unsigned shift = 0;
    while (*p < end && shift < 64) {
        uint8_t byte = *(*p)++;
        value |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
        if ((byte & 0x80) == 0) {
            if (shift < 64 && (byte & 0x40))
                value |= ~(uint64_t)0 << shift;
            *out = (int64_t)value;
            return 0;
        }
    }
    return -1;
}

int ospc_dwarf_read_encoded(const uint8_t **p, const uint8_t *end, unsigned encoding,
                            uint64_t pc_base, uint64_t data_base, uint64_t *out)
{
    size_t width;
    uint64_t value = 0;
    int64_t signed_value;
    switch (encoding & 0x0fu) {
    case PE_ULEB128:
        if (ospc_dwarf_uleb(p, end, &value) != 0)
            return -1;
        width = 0;
        break;
    case PE_SLEB128:
        if (ospc_dwarf_sleb(p, end, &signed_value) != 0)
            return -1;
        value = (uint64_t)signed_value;
        width = 0;
        break;
    case PE_UDATA2:
    case PE_SDATA2:
        width = 2;
        break;
    case PE_UDATA4:
    case PE_SDATA4:
        width = 4;
        break;
    case PE_ABSPTR:
    case PE_UDATA8:
    case PE_SDATA8:
        width = 8;
        break;
    default:
        return -1;
    }
    if (width > 0) {
        if ((size_t)(end - *p) < width)
            return -1;
        memcpy(&value, *p, width); /* little-endian */
        if ((encoding & 0x0fu) == PE_SDATA2)
            value = (uint64_t)(int64_t)(int16_t)value;
        else if ((encoding & 0x0fu) == PE_SDATA4)
            value = (uint64_t)(int64_t)(int32_t)value;
        *p += width;
    }
    switch (encoding & 0x70u) {
    case 0:
        break;
    case PE_PCREL:
        value += pc_base;
        break;
    case PE_DATAREL:
        value += data_base;
        break;
    default:
        return -1;
    }
    *out = value;
    return 0;
}

static int compare_entries(const void *a, const void *b)
{
    const struct ospc_eh_frame_entry *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int ospc_eh_frame_hdr_table(const uint8_t *data, size_t size, uint64_t vaddr,
                            struct ospc_eh_frame_entry **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (size < 4)
        return -ENOENT;
    const uint8_t *end = data + size, *p = data + 4;
    unsigned version = data[0], frame_encoding = data[1], count_encoding = data[2],
             table_encoding = data[3];
    uint64_t eh_frame, n;
    if (version != 1 || frame_encoding == PE_OMIT || count_encoding == PE_OMIT ||
        table_encoding == PE_OMIT)
        return -ENOENT;
    /* pcrel: from the value's own address; datarel: from the header's. */
    if (ospc_dwarf_read_encoded(&p, end, frame_encoding, vaddr + (uint64_t)(p - data), vaddr,
                                &eh_frame) != 0 ||
        ospc_dwarf_read_encoded(&p, end, count_encoding, vaddr + (uint64_t)(p - data), vaddr, &n) !=
            0)
        return -ENOENT;
    if (n > (uint64_t)(end - p) / 2) /* each entry is two values of a byte at least */
        return -ENOENT;
    struct ospc_eh_frame_entry *entries = malloc((n ? n : 1) * sizeof *entries);
    if (entries == NULL)
        return -ENOMEM;
    for (uint64_t i = 0; i < n; i++) {
        if (ospc_dwarf_read_encoded(&p, end, table_encoding, vaddr + (uint64_t)(p - data), vaddr,
                                    &entries[i].start) != 0 ||
            ospc_dwarf_read_encoded(&p, end, table_encoding, vaddr + (uint64_t)(p - data), vaddr,
                                    &entries[i].fde) != 0) {
            free(entries);
            return -ENOENT;
        }
    }
    qsort(entries, n, sizeof *entries, compare_entries); /* sorted; a hostile one not */
    *out = entries;
    *count = n;
    return 0;
}
