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

static bool in_image(const struct ospd_collector *c, uint64_t pc)
{
    for (uint32_t i = 0; i < c->image_count; i++) {
        const struct ospd_image *im = &c->images[i];
        if (im->text_size > 0 ? pc - im->text < im->text_size : pc == im->base)
            return true;
    }
    return false;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int wanted_collect(const struct ospd_collector *c, struct ospd_jit_wanted *w)
{
    size_t cap = 0;
    for (uint32_t i = 0; i < c->stacks.count; i++) {
        uint32_t depth;
        const uint64_t *pcs = ospd_stack_pcs(&c->stacks, i, &depth);
        for (uint32_t k = 0; k < depth; k++) {
            uint64_t lookup = k == 0 || pcs[k] == 0 ? pcs[k] : pcs[k] - 1;
            if (lookup == 0 || in_image(c, lookup))
                continue;
            if (w->count == cap) {
                cap = cap ? cap * 2 : 256;
                uint64_t *grown = realloc(w->pcs, cap * sizeof *grown);
                if (grown == NULL)
                    return -ENOMEM;
                w->pcs = grown;
            }
            w->pcs[w->count++] = lookup;
        }
    }
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

int ospd_jit_perf_map(struct ospd_jit_reader *r, const char *text, size_t size)
{
    struct ospd_jit_wanted *w = r->wanted;
    const char *p = text, *end = text + size;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol != NULL ? eol : end;
        uint64_t start, length;
        const char *q = p;
        if (eol != NULL && hex_field(&q, line_end, &start) && hex_field(&q, line_end, &length)) {
            size_t name_len = (size_t)(line_end - q);
            if (name_len > 0 && q[name_len - 1] == '\r')
                name_len--;
            if (offer(w, start, length, q, name_len) != 0)
                return -ENOMEM;
        } else {
            r->skipped++; /* a line cut at the end of a map being written is skipped too */
        }
        p = line_end + (eol != NULL);
    }
    return 0;
}

/* perf's jitdump (tools/perf/util/jitdump.h): a header, then records of an id, a total
 * size and a time; JIT_CODE_LOAD holds pid, tid, vma, code_addr, code_size, code_index, the
 * name (NUL-terminated), then the code. Only the loads are read (a move names no new code). */
#define JITDUMP_MAGIC     0x4A695444u
#define JITDUMP_CODE_LOAD 0u

int ospd_jit_dump(struct ospd_jit_reader *r, const uint8_t *data, size_t size)
{
    struct ospd_jit_wanted *w = r->wanted;
    uint32_t magic, header_size;
    if (size < 40)
        return -EINVAL;
    memcpy(&magic, data, 4);
    memcpy(&header_size, data + 8, 4);
    if (magic != JITDUMP_MAGIC || header_size < 40 || header_size > size)
        return -EINVAL; /* another machine's byte order, or no jitdump */
    size_t at = header_size;
    while (size - at >= 16) {
        uint32_t id, total;
        memcpy(&id, data + at, 4);
        memcpy(&total, data + at + 4, 4);
        if (total < 16 || total > size - at)
            break; /* cut short: the runtime is writing it */
        if (id == JITDUMP_CODE_LOAD && total > 16 + 40) {
            const uint8_t *record = data + at + 16;
            uint64_t code_addr, code_size;
            memcpy(&code_addr, record + 16, 8);
            memcpy(&code_size, record + 24, 8);
            const char *name = (const char *)record + 40;
            size_t room = total - 16 - 40;
            const char *nul = memchr(name, '\0', room);
            if (nul != NULL && offer(w, code_addr, code_size, name, (size_t)(nul - name)) != 0)
                return -ENOMEM;
            if (nul == NULL)
                r->skipped++;
        }
        at += total;
    }
    return 0;
}

/* The whole of a map file, at most OSPD_JIT_MAP_MAX bytes, in a malloc'd buffer. */
static int read_map(const char *path, uid_t owner, char **text, size_t *size, bool *cut)
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
    size_t want = (uint64_t)st.st_size > OSPD_JIT_MAP_MAX ? OSPD_JIT_MAP_MAX : (size_t)st.st_size;
    *cut = (uint64_t)st.st_size > OSPD_JIT_MAP_MAX;
    char *buffer = malloc(want + 1);
    if (buffer == NULL) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < want) {
        ssize_t n = pread(fd, buffer + got, want - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buffer[got] = '\0';
    *text = buffer;
    *size = got;
    return 0;
}

/* The process's pid in its own namespace (the last NSpid), which names its perf map. */
static int32_t own_pid(int32_t pid)
{
    char name[64], line[256];
    snprintf(name, sizeof name, "/proc/%d/status", (int)pid);
    FILE *f = fopen(name, "re");
    int32_t inner = pid;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        char *last = strrchr(line, '\t');
        long v = last != NULL ? strtol(last + 1, NULL, 10) : 0;
        if (v > 0 && v <= INT32_MAX)
            inner = (int32_t)v;
        break;
    }
    if (f != NULL)
        fclose(f);
    return inner;
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
    char *text = NULL;
    size_t size = 0;
    bool cut = false;
    int rc = read_map(path, owner, &text, &size, &cut);
    if (rc == -EACCES && strncmp(path, "/proc/", 6) == 0) /* its root is not ours to open */
        rc = read_map(shown, owner, &text, &size, &cut);
    if (rc == -ENOENT)
        return;
    if (rc != 0) {
        note(c, "%s %s: not read", shown, ospc_shared_strerror(rc));
        return;
    }
    if (cut)
        note(c, "%s is larger than %u MiB: only its first %u MiB were read", shown,
             (unsigned)(OSPD_JIT_MAP_MAX >> 20), (unsigned)(OSPD_JIT_MAP_MAX >> 20));
    rc = dump ? ospd_jit_dump(r, (const uint8_t *)text, size) : ospd_jit_perf_map(r, text, size);
    free(text);
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
    snprintf(name, sizeof name, "/proc/%d/maps", (int)c->pid);
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
        snprintf(path, sizeof path, "/proc/%d/root%s", (int)c->pid, seen);
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
    ospd_maps_code(c, c->pid, NULL);
    struct ospd_jit_reader r;
    if (ospd_jit_begin(c, &r) != 0 || r.wanted->count == 0) {
        ospd_jit_end(&r);
        return;
    }
    /* The maps are the process's user's (or root's): its /proc directory is owned by it. */
    char name[64];
    struct stat st;
    snprintf(name, sizeof name, "/proc/%d", (int)c->pid);
    if (stat(name, &st) != 0) {
        ospd_jit_end(&r);
        return;
    }
    int32_t inner = own_pid(c->pid);
    char path[128], shown[64];
    snprintf(shown, sizeof shown, "/tmp/perf-%d.map", (int)inner);
    snprintf(path, sizeof path, "/proc/%d/root%s", (int)c->pid, shown);
    read_one(c, &r, path, shown, st.st_uid, false);
    read_dumps(c, &r, st.st_uid, inner);
    ospd_jit_keep(c, &r);
    ospd_jit_end(&r);
}
