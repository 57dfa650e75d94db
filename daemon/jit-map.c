/* jit-map.c — names for code that no object file holds, from the maps a JIT writes for perf:
 * `/tmp/perf-PID.map` (a line "START SIZE name" per function, START and SIZE in hex: Node's
 * --perf-basic-prof, LuaJIT, the JVM's agents, .NET, Python's -X perf) and the jitdump
 * (`jit-PID.dump`, perf's binary format: the runtime maps it for perf to see, so it is found
 * among the process's mappings). Read when the profile is written, while the process and its
 * maps are there; only the symbols a sampled pc falls in are kept, in the collector and the raw
 * file's "jit" (proto/raw-format.md), so a report made later names the same frames after the
 * map was rewritten or deleted. First, the executable mappings of files no image covers (V8's
 * second mapping of node's builtins) become images (proc-maps.c): only the pcs still in no
 * image are looked for in the maps.
 *
 * The maps are the program's words in a directory anyone can write: each is opened without
 * following a link or blocking (common/'s ospc_open_shared), kept only when a regular file
 * owned by the process's user (or root), read up to OSPD_JIT_MAP_MAX bytes; a line or record
 * that does not parse is skipped. A symbol that covers a pc later in the file replaces an
 * earlier one (the runtime reused the address).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "osp_python.h"
#include "osp_unwind_step.h"
#include "ospc.h"
#include "ospd.h"
#include "ospd_attach.h"

#define JIT_NAME_MAX 1024 /* bytes of a symbol's name kept */

/* The addresses looked for: each stack position in no image (a return address one byte back,
 * as the exporters look it up), sorted and unique, and which kept symbol holds each. */
struct ospd_jit_wanted {
    uint64_t *pcs;
    uint32_t *owner; /* index into kept, UINT32_MAX: none yet */
    size_t count;
    struct ospd_jit_symbol *kept;
    uint32_t kept_count, kept_cap;
};

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The images' code spans merged into disjoint intervals, by start: pairs (start, end). */
struct spans {
    uint64_t *pairs;
    size_t count;
};

static int compare_pairs(const void *a, const void *b)
{
    return compare_u64(a, b);
}

static int spans_of(const struct ospd_collector *c, struct spans *out)
{
    out->count = 0;
    out->pairs = malloc((c->image_count ? c->image_count : 1) * 2 * sizeof *out->pairs);
    if (out->pairs == NULL)
        return -ENOMEM;
    size_t n = 0;
    for (uint32_t i = 0; i < c->image_count; i++) {
        if (c->images[i].text_size == 0)
            continue;
        out->pairs[2 * n] = c->images[i].text;
        out->pairs[2 * n + 1] = c->images[i].text + c->images[i].text_size;
        n++;
    }
    qsort(out->pairs, n, 2 * sizeof *out->pairs, compare_pairs);
    for (size_t i = 0; i < n; i++) {
        uint64_t start = out->pairs[2 * i], end = out->pairs[2 * i + 1];
        if (out->count > 0 && start <= out->pairs[2 * out->count - 1]) {
            if (end > out->pairs[2 * out->count - 1])
                out->pairs[2 * out->count - 1] = end;
            continue;
        }
        out->pairs[2 * out->count] = start;
        out->pairs[2 * out->count + 1] = end;
        out->count++;
    }
    return 0;
}

static bool in_spans(const struct spans *s, uint64_t pc)
{
    size_t low = 0, high = s->count;
    while (low < high) { /* the first span starting after pc */
        size_t middle = low + (high - low) / 2;
        if (s->pairs[2 * middle] <= pc)
            low = middle + 1;
        else
            high = middle;
    }
    return low > 0 && pc < s->pairs[2 * (low - 1) + 1];
}

static int wanted_collect(const struct ospd_collector *c, struct ospd_jit_wanted *w)
{
    struct spans spans;
    if (spans_of(c, &spans) != 0)
        return -ENOMEM;
    size_t cap = 0;
    for (uint32_t i = 0; i < c->stacks.count; i++) {
        uint32_t depth;
        const uint64_t *pcs = ospd_stack_pcs(&c->stacks, i, &depth);
        for (uint32_t k = 0; k < depth; k++) {
            uint64_t lookup = k == 0 || pcs[k] == 0 ? pcs[k] : pcs[k] - 1;
            if (lookup == 0 || osp_py_pc_is(lookup) || osp_unwind_left_out_is(lookup) ||
                in_spans(&spans, lookup))
                continue;
            if (w->count == cap) {
                cap = cap ? cap * 2 : 256;
                uint64_t *grown = realloc(w->pcs, cap * sizeof *grown);
                if (grown == NULL) {
                    free(spans.pairs);
                    return -ENOMEM;
                }
                w->pcs = grown;
            }
            w->pcs[w->count++] = lookup;
        }
    }
    free(spans.pairs);
    if (w->count == 0)
        return 0;
    qsort(w->pcs, w->count, sizeof *w->pcs, compare_u64);
    size_t unique = 1;
    for (size_t i = 1; i < w->count; i++)
        if (w->pcs[i] != w->pcs[unique - 1])
            w->pcs[unique++] = w->pcs[i];
    w->count = unique;
    w->owner = malloc(unique * sizeof *w->owner);
    if (w->owner == NULL)
        return -ENOMEM;
    memset(w->owner, 0xff, unique * sizeof *w->owner);
    return 0;
}

/* A symbol of a map: kept when a wanted pc falls in [start, start + size). */
static int offer(struct ospd_jit_wanted *w, uint64_t start, uint64_t size, const char *name,
                 size_t name_len)
{
    if (size == 0 || start + size < start || name_len == 0)
        return 0;
    size_t low = 0, high = w->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (w->pcs[middle] < start)
            low = middle + 1;
        else
            high = middle;
    }
    if (low == w->count || w->pcs[low] - start >= size)
        return 0;
    if (w->kept_count == w->kept_cap) {
        uint32_t cap = w->kept_cap ? w->kept_cap * 2 : 64;
        struct ospd_jit_symbol *grown = realloc(w->kept, cap * sizeof *grown);
        if (grown == NULL)
            return -ENOMEM;
        w->kept = grown;
        w->kept_cap = cap;
    }
    char *copy = ospd_utf8_sanitize(name, name_len > JIT_NAME_MAX ? JIT_NAME_MAX : name_len);
    if (copy == NULL)
        return -ENOMEM;
    uint32_t index = w->kept_count++;
    w->kept[index] = (struct ospd_jit_symbol){.start = start, .size = size, .name = copy};
    for (size_t i = low; i < w->count && w->pcs[i] - start < size; i++)
        w->owner[i] = index;
    return 0;
}

/* Parse one hex field at *p (an optional 0x, at least one digit), then spaces. */
static bool hex_field(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    uint64_t v = 0;
    int digits = 0;
    for (; s < end; s++, digits++) {
        int d = *s >= '0' && *s <= '9'   ? *s - '0'
                : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
                : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
                                         : -1;
        if (d < 0)
            break;
        if (digits == 16)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    if (digits == 0 || s == end || *s != ' ')
        return false;
    while (s < end && *s == ' ')
        s++;
    *p = s;
    *out = v;
    return true;
}

/* A map's bytes: a file read as it goes (pread), or memory (the tests'); at most `size`. */
struct map_file {
    int fd;
    const uint8_t *data;
    uint64_t size;
};

static size_t map_read(const struct map_file *f, uint64_t at, void *buffer, size_t length)
{
    if (at >= f->size)
        return 0;
    if (length > f->size - at)
        length = (size_t)(f->size - at);
    if (f->data != NULL) {
        memcpy(buffer, f->data + at, length);
        return length;
    }
    size_t got = 0;
    while (got < length) {
        ssize_t n = pread(f->fd, (char *)buffer + got, length - got, (off_t)(at + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    return got;
}

/* Whole lines of a perf map: text[0..size), each ending in a newline. */
static int perf_map_lines(struct ospd_jit_reader *r, const char *text, size_t size)
{
    const char *p = text, *end = text + size;
    while (p < end) {
        const char *line_end = memchr(p, '\n', (size_t)(end - p));
        uint64_t start, length;
        const char *q = p;
        if (hex_field(&q, line_end, &start) && hex_field(&q, line_end, &length)) {
            size_t name_len = (size_t)(line_end - q);
            if (name_len > 0 && q[name_len - 1] == '\r')
                name_len--;
            if (offer(r->wanted, start, length, q, name_len) != 0)
                return -ENOMEM;
        } else {
            r->skipped++;
        }
        p = line_end + 1;
    }
    return 0;
}

#define MAP_CHUNK (1u << 20) /* bytes of a perf map read at a time; a longer line is skipped */

/* A perf map read a chunk at a time; a line cut at the end (a map being written) is skipped. */
static int perf_map_records(struct ospd_jit_reader *r, const struct map_file *f)
{
    char *buffer = malloc(MAP_CHUNK);
    if (buffer == NULL)
        return -ENOMEM;
    size_t held = 0;
    uint64_t at = 0;
    bool skipping = false; /* inside a line longer than the buffer */
    int rc = 0;
    for (;;) {
        size_t n = map_read(f, at, buffer + held, MAP_CHUNK - held);
        at += n;
        held += n;
        const char *last = held > 0 ? memrchr(buffer, '\n', held) : NULL;
        if (last == NULL) {
            if (n == 0 || held == MAP_CHUNK) { /* the end, or a line too long */
                r->skipped += held > 0 && !skipping;
                skipping = held == MAP_CHUNK;
                held = 0;
            }
            if (n == 0)
                break;
            continue;
        }
        size_t used = (size_t)(last + 1 - buffer);
        const char *from = buffer;
        if (skipping) { /* the rest of the long line */
            from = (const char *)memchr(buffer, '\n', used) + 1;
            skipping = false;
        }
        rc = perf_map_lines(r, from, (size_t)(buffer + used - from));
        if (rc != 0)
            break;
        memmove(buffer, buffer + used, held - used);
        held -= used;
    }
    free(buffer);
    return rc;
}

int ospd_jit_perf_map(struct ospd_jit_reader *r, const char *text, size_t size)
{
    struct map_file f = {.fd = -1, .data = (const uint8_t *)text, .size = size};
    return perf_map_records(r, &f);
}

/* perf's jitdump (the format Linux's perf defines for a JIT's dump): a header, then records of
 * an id, a total size and a time; JIT_CODE_LOAD holds pid, tid, vma, code_addr, code_size,
 * code_index, the name (NUL-terminated), then the code. Only the loads are read (a move names no
 * new code), each record's head and name alone (not its code). */
#define JITDUMP_MAGIC     0x4A695444u
#define JITDUMP_CODE_LOAD 0u
#define JITDUMP_HEADER    40u /* the header's fields; total_size says where records begin */
#define JITDUMP_RECORD    16u /* id, total_size, timestamp */
#define JITDUMP_LOAD      40u /* pid, tid, vma, code_addr, code_size, code_index */

static int dump_records(struct ospd_jit_reader *r, const struct map_file *f)
{
    uint8_t header[JITDUMP_HEADER];
    uint32_t magic, header_size;
    if (map_read(f, 0, header, sizeof header) != sizeof header)
        return -EINVAL;
    memcpy(&magic, header, 4);
    memcpy(&header_size, header + 8, 4);
    if (magic != JITDUMP_MAGIC || header_size < JITDUMP_HEADER)
        return -EINVAL; /* another machine's byte order, or no jitdump */
    uint8_t record[JITDUMP_RECORD + JITDUMP_LOAD + JIT_NAME_MAX + 1];
    for (uint64_t at = header_size;;) {
        if (map_read(f, at, record, JITDUMP_RECORD) != JITDUMP_RECORD)
            break;
        uint32_t id, total;
        memcpy(&id, record, 4);
        memcpy(&total, record + 4, 4);
        if (total < JITDUMP_RECORD || total > f->size - at)
            break; /* cut short: the runtime is writing it */
        if (id == JITDUMP_CODE_LOAD && total > JITDUMP_RECORD + JITDUMP_LOAD) {
            size_t want = total < sizeof record ? total : sizeof record;
            if (map_read(f, at, record, want) != want)
                break;
            uint64_t code_addr, code_size;
            memcpy(&code_addr, record + JITDUMP_RECORD + 16, 8);
            memcpy(&code_size, record + JITDUMP_RECORD + 24, 8);
            const char *name = (const char *)record + JITDUMP_RECORD + JITDUMP_LOAD;
            const char *nul = memchr(name, '\0', want - JITDUMP_RECORD - JITDUMP_LOAD);
            if (nul == NULL)
                r->skipped++; /* no name, or one longer than we keep */
            else if (offer(r->wanted, code_addr, code_size, name, (size_t)(nul - name)) != 0)
                return -ENOMEM;
        }
        at += total;
    }
    return 0;
}

int ospd_jit_dump(struct ospd_jit_reader *r, const uint8_t *data, size_t size)
{
    struct map_file f = {.fd = -1, .data = data, .size = size};
    return dump_records(r, &f);
}

/* Open a map as a file in a shared directory is opened; its size capped. */
static int open_map(const char *path, uid_t owner, struct map_file *f, bool *cut)
{
    int fd = ospc_open_shared(path, O_RDONLY, 0, owner);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    *cut = (uint64_t)st.st_size > OSPD_JIT_MAP_MAX;
    *f = (struct map_file){.fd = fd, .size = *cut ? OSPD_JIT_MAP_MAX : (uint64_t)st.st_size};
    return 0;
}

/* The process's pid in its own namespace (the last NSpid), which names its perf map. */
static int32_t own_pid(int32_t pid)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/status", (int)pid);
    int32_t inner = ospd_proc_innermost_id(name);
    return inner > 0 ? inner : pid;
}

/* A map refused or cut short, said in the raw file (the report prints it: ospreyd's own
 * output goes nowhere). */
__attribute__((format(printf, 2, 3))) static void note(struct ospd_collector *c, const char *fmt,
                                                       ...)
{
    if (c->jit_note_count == OSPD_JIT_MAPS)
        return;
    char text[OSP_MAX_PATH + 128];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    char *copy = ospd_utf8_sanitize(text, strlen(text));
    if (copy != NULL)
        c->jit_notes[c->jit_note_count++] = copy;
}

/* Read one map (perf map or jitdump) into w; a note when it is refused. */
static void read_one(struct ospd_collector *c, struct ospd_jit_reader *r, const char *path,
                     const char *shown, uid_t owner, bool dump)
{
    struct map_file f;
    bool cut = false;
    int rc = open_map(path, owner, &f, &cut);
    if (rc == -EACCES && strncmp(path, "/proc/", 6) == 0) /* its root is not ours to open */
        rc = open_map(shown, owner, &f, &cut);
    if (rc == -ENOENT)
        return;
    if (rc != 0) {
        note(c, "%s %s: not read", shown, ospc_shared_strerror(rc));
        return;
    }
    if (cut)
        note(c, "%s is larger than %u MiB: only its first %u MiB were read", shown,
             (unsigned)(OSPD_JIT_MAP_MAX >> 20), (unsigned)(OSPD_JIT_MAP_MAX >> 20));
    rc = dump ? dump_records(r, &f) : perf_map_records(r, &f);
    close(f.fd);
    if (rc == -EINVAL)
        note(c, "%s is not a jitdump: not read", shown);
    if (rc == 0 && c->jit_map_count < OSPD_JIT_MAPS) {
        char *copy = ospd_utf8_sanitize(shown, strlen(shown));
        if (copy != NULL)
            c->jit_maps[c->jit_map_count++] = copy;
    }
}

/* The jitdumps the process maps (jit-PID.dump, any directory), read through its root. */
static void read_dumps(struct ospd_collector *c, struct ospd_jit_reader *r, uid_t owner,
                       int32_t inner)
{
    char name[64], line[OSP_MAX_PATH + 256], suffix[64], path[OSP_MAX_PATH + 64];
    snprintf(name, sizeof name, "/proc/%d/maps", (int)c->proc_pid);
    snprintf(suffix, sizeof suffix, "/jit-%d.dump", (int)inner);
    FILE *f = fopen(name, "re");
    char seen[OSP_MAX_PATH + 1] = "";
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        struct ospd_mapping m;
        size_t suffix_len = strlen(suffix);
        if (ospd_maps_line(line, &m) != 0 || m.path_len <= suffix_len ||
            m.path_len > OSP_MAX_PATH || m.path[0] != '/' ||
            memcmp(m.path + m.path_len - suffix_len, suffix, suffix_len) != 0 ||
            (strlen(seen) == m.path_len && memcmp(seen, m.path, m.path_len) == 0))
            continue;
        memcpy(seen, m.path, m.path_len);
        seen[m.path_len] = '\0';
        snprintf(path, sizeof path, "/proc/%d/root%s", (int)c->proc_pid, seen);
        read_one(c, r, path, seen, owner, true);
    }
    if (f != NULL)
        fclose(f);
}

int ospd_jit_keep(struct ospd_collector *c, struct ospd_jit_reader *r)
{
    struct ospd_jit_wanted *w = r->wanted;
    /* Only the symbols that still hold a pc, in address order. */
    uint32_t *new_index = malloc((w->kept_count ? w->kept_count : 1) * sizeof *new_index);
    if (new_index == NULL)
        return -ENOMEM;
    memset(new_index, 0xff, (w->kept_count ? w->kept_count : 1) * sizeof *new_index);
    for (size_t i = 0; i < w->count; i++)
        if (w->owner[i] != UINT32_MAX)
            new_index[w->owner[i]] = 0;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < w->kept_count; i++) {
        if (new_index[i] == UINT32_MAX) {
            free(w->kept[i].name);
            continue;
        }
        w->kept[kept++] = w->kept[i];
    }
    free(new_index);
    w->kept_count = kept;
    /* Sorted by start (a pc's owner is the last symbol that held it, so equal starts keep
     * file order: the later one first is never asked, as the one asked owns the pc). */
    for (uint32_t i = 1; i < kept; i++) {
        struct ospd_jit_symbol s = w->kept[i];
        uint32_t k = i;
        for (; k > 0 && w->kept[k - 1].start > s.start; k--)
            w->kept[k] = w->kept[k - 1];
        w->kept[k] = s;
    }
    for (uint32_t i = 0; i < c->jit_count; i++)
        free(c->jit[i].name);
    free(c->jit);
    c->jit = w->kept;
    c->jit_count = kept;
    w->kept = NULL;
    w->kept_count = w->kept_cap = 0;
    return 0;
}

int ospd_jit_begin(const struct ospd_collector *c, struct ospd_jit_reader *r)
{
    memset(r, 0, sizeof *r);
    r->wanted = calloc(1, sizeof *r->wanted);
    if (r->wanted == NULL)
        return -ENOMEM;
    return wanted_collect(c, r->wanted);
}

void ospd_jit_end(struct ospd_jit_reader *r)
{
    if (r->wanted == NULL)
        return;
    for (uint32_t i = 0; i < r->wanted->kept_count; i++)
        free(r->wanted->kept[i].name);
    free(r->wanted->kept);
    free(r->wanted->pcs);
    free(r->wanted->owner);
    free(r->wanted);
    r->wanted = NULL;
}

void ospd_code_names(struct ospd_collector *c)
{
    if (c->pid <= 0 || c->stacks.count == 0)
        return;
    ospd_maps_code(c, c->proc_pid, NULL);
    ospd_python_names(c); /* python.c: the Python frames' names, while the process is there */
    struct ospd_jit_reader r;
    if (ospd_jit_begin(c, &r) != 0 || r.wanted->count == 0) {
        ospd_jit_end(&r);
        return;
    }
    /* The maps are the process's user's (or root's): its /proc directory is owned by it. */
    char name[64];
    struct stat st;
    snprintf(name, sizeof name, "/proc/%d", (int)c->proc_pid);
    if (stat(name, &st) != 0) {
        ospd_jit_end(&r);
        return;
    }
    int32_t inner = own_pid(c->proc_pid);
    char path[128], shown[64];
    snprintf(shown, sizeof shown, "/tmp/perf-%d.map", (int)inner);
    snprintf(path, sizeof path, "/proc/%d/root%s", (int)c->proc_pid, shown);
    read_one(c, &r, path, shown, st.st_uid, false);
    read_dumps(c, &r, st.st_uid, inner);
    ospd_jit_keep(c, &r);
    ospd_jit_end(&r);
}
