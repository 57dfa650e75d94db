/* proc-maps.c — a running process's images, read from /proc/PID/maps and each object's
 * program headers, described as the shim describes them (proto/osp_ring.h's IMAGE record:
 * the load base, the load bias, the span of the executable segments, the path, the main
 * flag). The line parser and the arithmetic are pure, for the tests; ospd_maps_images reads
 * the files.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"
#include "ospd_attach.h"

int ospd_maps_line(const char *line, struct ospd_mapping *out)
{
    memset(out, 0, sizeof *out);
    unsigned dev_major, dev_minor;
    int path_at = -1;
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &out->start,
               &out->end, out->perms, &out->offset, &dev_major, &dev_minor, &out->inode,
               &path_at) != 7 ||
        out->end <= out->start || strlen(out->perms) != 4)
        return -EINVAL;
    if (path_at < 0) /* the line ended right after the inode: an anonymous mapping */
        path_at = (int)strlen(line);
    out->path = line + path_at;
    out->path_len = strcspn(out->path, "\n");
    return 0;
}

int ospd_image_from_phdrs(const struct ospd_phdr *ph, uint32_t count, uint64_t lowest_start,
                          uint64_t lowest_offset, uint64_t *base, uint64_t *slide, uint64_t *text,
                          uint64_t *text_size)
{
    const struct ospd_phdr *holder = NULL, *first = NULL;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (ph[i].type != PT_LOAD)
            continue;
        if (first == NULL)
            first = &ph[i];
        if (holder == NULL && lowest_offset >= (ph[i].offset & ~UINT64_C(0xfff)) &&
            lowest_offset < ph[i].offset + ph[i].memsz)
            holder = &ph[i];
        if (ph[i].flags & PF_X) {
            if (ph[i].vaddr < lo)
                lo = ph[i].vaddr;
            if (ph[i].vaddr + ph[i].memsz > hi)
                hi = ph[i].vaddr + ph[i].memsz;
        }
    }
    if (first == NULL)
        return -ENOENT;
    if (holder == NULL)
        holder = first;
    /* The mapping at lowest_start holds file offset lowest_offset, link-time address
     * holder->vaddr + (lowest_offset - holder->offset). */
    uint64_t bias = lowest_start - (holder->vaddr + lowest_offset - holder->offset);
    *slide = bias;
    *base = bias + first->vaddr - first->offset;
    *text = lo == UINT64_MAX ? 0 : bias + lo;
    *text_size = lo == UINT64_MAX ? 0 : hi - lo;
    return 0;
}

/* The program headers of an ELF64 object, read from fd or from memory (common/'s walk: `size`
 * bounds every read); -1 when not one. */
static int read_phdrs(int fd, const uint8_t *memory, uint64_t size, struct ospd_phdr *out,
                      uint32_t cap, uint32_t *count)
{
    Elf64_Ehdr eh;
    Elf64_Phdr *ph;
    size_t n;
    if (ospc_elf_program_headers(fd, memory, size, &eh, &ph, &n) != 0)
        return -1;
    *count = 0;
    for (size_t i = 0; i < n && *count < cap; i++)
        out[(*count)++] = (struct ospd_phdr){ph[i].p_type, ph[i].p_flags, ph[i].p_offset,
                                             ph[i].p_vaddr, ph[i].p_memsz};
    free(ph);
    return 0;
}

#if defined(__x86_64__)
#define OWN_ARCH "x86_64"
#elif defined(__aarch64__)
#define OWN_ARCH "aarch64"
#else
#define OWN_ARCH ""
#endif

/* One object's mappings seen so far (the maps list an object's segments in a row). */
struct pending {
    char path[OSP_MAX_PATH + 1];
    uint64_t lowest_start, lowest_offset;
    uint64_t exec_lo, exec_hi; /* the span of its executable mappings */
    bool exec, used;
};

/* The program headers of the object at `path` as process proc_pid (the number /proc gives
 * it) sees it (the vDSO: ours, the kernel's one). 0, or -1 when it cannot be read or is not
 * an ELF64 object. */
static int object_phdrs(int32_t proc_pid, const char *path, struct ospd_phdr *ph, uint32_t cap,
                        uint32_t *count)
{
    int rc = -1;
    if (strcmp(path, "[vdso]") == 0) {
        const uint8_t *vdso =
            (const uint8_t *)getauxval(AT_SYSINFO_EHDR); /* one kernel, one vDSO */
        if (vdso != NULL)
            rc = read_phdrs(-1, vdso, 4096, ph, cap, count); /* its headers: in its first page */
        return rc;
    }
    /* Through the process's own root, so a target in another mount namespace reads its
     * objects. The path may be in /tmp and replaced since it was mapped: a FIFO there
     * would hold the collector in its open, so only a regular file, never blocking. */
    char root_path[OSP_MAX_PATH + 64];
    snprintf(root_path, sizeof root_path, "/proc/%d/root%s", (int)proc_pid, path);
    int fd = ospc_open_shared(root_path, O_RDONLY, 0, OSPC_ANY_OWNER);
    if (fd == -ENOENT || fd == -EACCES)
        fd = ospc_open_shared(path, O_RDONLY, 0, OSPC_ANY_OWNER);
    if (fd >= 0) {
        rc = read_phdrs(fd, NULL, UINT64_MAX, ph, cap, count); /* a short read refuses */
        close(fd);
    }
    return rc;
}

static void give(struct ospd_collector *c, int32_t proc_pid, struct pending *p, const char *exe)
{
    if (!p->used || !p->exec)
        return;
    p->used = false;
    struct ospd_phdr ph[64];
    uint32_t count = 0;
    uint64_t base, slide, text, text_size;
    if (object_phdrs(proc_pid, p->path, ph, 64, &count) != 0 ||
        ospd_image_from_phdrs(ph, count, p->lowest_start, p->lowest_offset, &base, &slide, &text,
                              &text_size) != 0)
        return;
    /* The code is where it is mapped executable: an object's code mapped alone elsewhere (V8's
     * second copy of node's builtins) is that mapping, not its whole PF_X span. */
    uint64_t lo = text > p->exec_lo ? text : p->exec_lo;
    uint64_t hi = text + text_size < p->exec_hi ? text + text_size : p->exec_hi;
    if (text_size > 0 && lo < hi) {
        text = lo;
        text_size = hi - lo;
    }
    char *path = ospd_utf8_sanitize(p->path, strlen(p->path));
    if (path != NULL)
        ospd_collector_image(c, base, slide, text, text_size, path, OWN_ARCH,
                             strcmp(p->path, exe) == 0);
}

int ospd_maps_images(struct ospd_collector *c, int32_t proc_pid)
{
    char name[64], exe[OSP_MAX_PATH + 1];
    snprintf(name, sizeof name, "/proc/%d/exe", (int)proc_pid);
    ssize_t n = readlink(name, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(name, sizeof name, "/proc/%d/maps", (int)proc_pid);
    FILE *f = fopen(name, "re");
    if (f == NULL)
        return -errno;
    static struct pending p;
    memset(&p, 0, sizeof p);
    char line[OSP_MAX_PATH + 256];
    while (fgets(line, sizeof line, f) != NULL) {
        struct ospd_mapping m;
        if (ospd_maps_line(line, &m) != 0 || m.path_len == 0 || m.path_len > OSP_MAX_PATH)
            continue;
        bool file = m.path[0] == '/';
        if (!file && strncmp(m.path, "[vdso]", m.path_len) != 0)
            continue;
        if (!p.used || strncmp(p.path, m.path, m.path_len) != 0 || p.path[m.path_len] != '\0') {
            give(c, proc_pid, &p, exe);
            memcpy(p.path, m.path, m.path_len);
            p.path[m.path_len] = '\0';
            p.used = true;
            p.exec = false;
            p.lowest_start = m.start;
            p.lowest_offset = m.offset;
        }
        if (m.perms[2] == 'x') {
            p.exec_lo = p.exec ? p.exec_lo : m.start;
            p.exec_hi = m.end;
            p.exec = true;
        }
    }
    give(c, proc_pid, &p, exe);
    fclose(f);
    return (int)c->image_count;
}

/* Whether [start, end) meets the code span of an image still mapped (a mapping ends on a page
 * boundary, the span where the code does). */
static bool code_known(const struct ospd_collector *c, uint64_t start, uint64_t end)
{
    for (uint32_t i = 0; i < c->image_count; i++) {
        const struct ospd_image *im = &c->images[i];
        if (im->unloaded_ns == 0 && im->text_size > 0 && start < im->text + im->text_size &&
            end > im->text)
            return true;
    }
    return false;
}

/* Whether an image still mapped is of the file with this inode at another load bias: then
 * a mapping of it at `slide` is a second one. Without such an image the mapping is an object
 * loaded (dlopen) whose image the shim has not sent yet, and the shim's is its image. */
static bool mapped_elsewhere(const struct ospd_collector *c, uint64_t inode, uint64_t slide)
{
    for (uint32_t i = 0; i < c->image_count; i++) {
        const struct ospd_image *im = &c->images[i];
        struct stat st;
        if (im->unloaded_ns == 0 && im->slide != slide && im->path[0] == '/' &&
            stat(im->path, &st) == 0 && (uint64_t)st.st_ino == inode)
            return true;
    }
    return false;
}

int ospd_maps_code(struct ospd_collector *c, int32_t proc_pid, const char *ring)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/maps", (int)proc_pid);
    FILE *f = fopen(name, "re");
    if (f == NULL)
        return -errno;
    if (ring != NULL && ring[0] == '/')
        ring++;
    bool ours = ring == NULL;
    struct ospd_mapping found[16];
    char paths[16][OSP_MAX_PATH + 1];
    uint32_t count = 0;
    char line[OSP_MAX_PATH + 256];
    while (fgets(line, sizeof line, f) != NULL) {
        if (!ours && strstr(line, ring) != NULL)
            ours = true;
        struct ospd_mapping m;
        if (count == 16 || ospd_maps_line(line, &m) != 0 || m.perms[2] != 'x' || m.path_len == 0 ||
            m.path_len > OSP_MAX_PATH || m.path[0] != '/' || code_known(c, m.start, m.end))
            continue;
        memcpy(paths[count], m.path, m.path_len);
        paths[count][m.path_len] = '\0';
        found[count++] = m;
    }
    fclose(f);
    int added = 0;
    for (uint32_t i = 0; ours && i < count; i++) {
        const struct ospd_mapping *m = &found[i];
        struct ospd_phdr ph[64];
        uint32_t phdrs = 0;
        uint64_t base, slide, text, text_size;
        /* The mapping holds file offset m->offset at m->start: the file's address of a pc in
         * it is the one that offset has in the file, as for the object's first mapping. */
        if (code_known(c, m->start, m->end) ||
            object_phdrs(proc_pid, paths[i], ph, 64, &phdrs) != 0 ||
            ospd_image_from_phdrs(ph, phdrs, m->start, m->offset, &base, &slide, &text,
                                  &text_size) != 0)
            continue;
        if (!mapped_elsewhere(c, m->inode, slide))
            continue;
        char *copy = ospd_utf8_sanitize(paths[i], m->path_len);
        uint32_t before = c->image_count;
        if (copy == NULL || ospd_collector_image(c, base, slide, m->start, m->end - m->start, copy,
                                                 OWN_ARCH, false) != 0)
            continue;
        added++;
        /* Seen now: an object loaded later where this was (once it is unmapped) is told
         * apart by its later time (proto/raw-format.md, "Objects replaced at one address"). */
        uint64_t now = ospc_clock_ns(CLOCK_MONOTONIC);
        if (c->image_count > before && c->start_mono_ns != 0 && now > c->start_mono_ns)
            c->images[c->image_count - 1].loaded_ns = now - c->start_mono_ns;
    }
    return added;
}
