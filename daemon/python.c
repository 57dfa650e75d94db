/* python.c — names for the Python frames the shim put into the stacks (proto/osp_python.h):
 * `qualname (PATH:LINE)` for each pseudo-pc (a code object's address and an instruction
 * index), read from the process's memory (process_vm_readv: the same user) when a stack holding
 * it is first seen (at each drain of the rings: at exit the interpreter has freed a module's
 * functions already, so the profile's writing is too late), and kept in the collector's py symbols
 * and the raw file's "python" (proto/raw-format.md), so a report made later names the same frames.
 *
 * The line is CPython 3.11's location table (co_linetable, Objects/locations.md) walked to the
 * instruction index; the function's first line when the table cannot be read. A code object
 * that cannot be read (freed before the end, another layout) leaves its frames unnamed: the
 * readers show "[py] 0x…".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "osp_python.h"
#include "ospd.h"

#define PY_TEXT_MAX  512u   /* bytes of a name or file kept */
#define PY_TABLE_MAX 65536u /* bytes of a location table read */

static int read_at(int32_t pid, uint64_t addr, void *out, size_t n)
{
    struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

static int read_u64(int32_t pid, uint64_t addr, uint64_t *out)
{
    return read_at(pid, addr, out, sizeof *out);
}

/* A str object's text (compact ASCII, else its cached UTF-8) into out; 0 or -EFAULT. */
static int read_str(int32_t pid, uint64_t str, char *out, size_t cap)
{
    uint64_t length, state, data;
    if (str == 0 || read_u64(pid, str + OSP_PY_STR_LENGTH, &length) != 0 ||
        read_u64(pid, str + OSP_PY_STR_STATE, &state) != 0)
        return -EFAULT;
    /* state: interned:2, kind:3, compact:1, ascii:1, ready:1 */
    bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1; /* 3.11's PyASCIIObject.state */
    if (compact && ascii) {
        data = str + OSP_PY_STR_ASCII_DATA;
    } else if (read_u64(pid, str + OSP_PY_STR_UTF8_LENGTH, &length) != 0 ||
               read_u64(pid, str + OSP_PY_STR_UTF8, &data) != 0 || data == 0) {
        return -EFAULT;
    }
    if (length >= cap)
        length = cap - 1;
    if (read_at(pid, data, out, length) != 0)
        return -EFAULT;
    out[length] = '\0';
    for (size_t i = 0; i < length; i++)
        if (out[i] == '\0' || (unsigned char)out[i] >= 0x80)
            out[i] = '?'; /* kept valid UTF-8 however it was cut: non-ASCII shown as '?' */
    return 0;
}

/* 3.11's location table: the line of code unit `index`, or `line` (the first) if none says. */
static unsigned varint(const uint8_t *t, size_t n, size_t *at)
{
    unsigned v = 0, shift = 0;
    while (*at < n && shift < 30) {
        uint8_t b = t[(*at)++];
        v |= (unsigned)(b & 63) << shift;
        shift += 6;
        if (!(b & 64))
            break;
    }
    return v;
}
static int svarint(const uint8_t *t, size_t n, size_t *at)
{
    unsigned v = varint(t, n, at);
    return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}
int ospd_python_line(const uint8_t *t, size_t n, uint64_t index, int line)
{
    size_t at = 0;
    uint64_t unit = 0;
    while (at < n) {
        uint8_t first = t[at++];
        if (!(first & 128))
            return line; /* not an entry's first byte: a table we do not know */
        unsigned code = (first >> 3) & 15, length = (first & 7) + 1;
        int delta = 0;
        if (code == 15) {
            /* no location: the line stays */
        } else if (code == 14) {
            delta = svarint(t, n, &at);
            varint(t, n, &at), varint(t, n, &at), varint(t, n, &at);
        } else if (code == 13)
            delta = svarint(t, n, &at);
        else if (code >= 10) {
            delta = (int)code - 10;
            at += 2;
        } else
            at += 1;
        line += delta;
        if (index < unit + length)
            return line;
        unit += length;
    }
    return line;
}

/* The name of a pseudo-pc: "qualname (file:line)", malloc'd; NULL when unreadable. */
static char *name_of(int32_t pid, uint64_t pc)
{
    uint64_t code = osp_py_pc_code(pc), qualname, filename, table, first;
    char name[PY_TEXT_MAX], file[PY_TEXT_MAX];
    if (read_u64(pid, code + OSP_PY_CODE_QUALNAME, &qualname) != 0 ||
        read_u64(pid, code + OSP_PY_CODE_FILENAME, &filename) != 0 ||
        read_u64(pid, code + OSP_PY_CODE_LINETABLE, &table) != 0 ||
        read_u64(pid, code + OSP_PY_CODE_FIRSTLINENO, &first) != 0 ||
        read_str(pid, qualname, name, sizeof name) != 0)
        return NULL;
    if (read_str(pid, filename, file, sizeof file) != 0)
        snprintf(file, sizeof file, "?");
    int line = (int)(uint32_t)first;
    uint64_t size;
    if (table != 0 && read_u64(pid, table + OSP_PY_BYTES_SIZE, &size) == 0 && size > 0) {
        if (size > PY_TABLE_MAX)
            size = PY_TABLE_MAX;
        uint8_t *bytes = malloc(size);
        if (bytes != NULL && read_at(pid, table + OSP_PY_BYTES_DATA, bytes, size) == 0)
            line = ospd_python_line(bytes, size, osp_py_pc_index(pc), line);
        free(bytes);
    }
    char *out = NULL;
    if (asprintf(&out, "%s (%s:%d)", name, file, line) < 0)
        return NULL;
    return out;
}

static int compare_symbols(const void *a, const void *b)
{
    const struct ospd_jit_symbol *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Whether pc is among c->py: sorted up to `sorted`, in order of finding after. */
static bool ospd_python_known(const struct ospd_collector *c, uint64_t pc, uint32_t sorted)
{
    size_t low = 0, high = sorted;
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (c->py[middle].start < pc)
            low = middle + 1;
        else
            high = middle;
    }
    if (low < sorted && c->py[low].start == pc)
        return true;
    for (uint32_t j = sorted; j < c->py_count; j++)
        if (c->py[j].start == pc)
            return true;
    return false;
}

void ospd_python_names(struct ospd_collector *c)
{
    if (c->pid <= 0)
        return;
    uint32_t before = c->py_count;
    for (uint32_t i = c->py_stacks_checked; i < c->stacks.count; i++) {
        uint32_t depth;
        const uint64_t *pcs = ospd_stack_pcs(&c->stacks, i, &depth);
        for (uint32_t k = 0; k < depth; k++) {
            if (!osp_py_pc_is(pcs[k]))
                continue;
            uint64_t pc = osp_py_pc_norm(pcs[k]);
            if (ospd_python_known(c, pc, before))
                continue;
            if (c->py_count == c->py_cap) {
                uint32_t cap = c->py_cap ? c->py_cap * 2 : 64;
                struct ospd_jit_symbol *grown = realloc(c->py, cap * sizeof *grown);
                if (grown == NULL)
                    return;
                c->py = grown;
                c->py_cap = cap;
            }
            /* NULL: unreadable, not tried again */
            c->py[c->py_count++] = (struct ospd_jit_symbol){pc, 1, name_of(c->pid, pc)};
        }
    }
    c->py_stacks_checked = c->stacks.count;
    if (c->py_count != before)
        qsort(c->py, c->py_count, sizeof *c->py, compare_symbols);
}
