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
    uint64_t lowest_start, lowest_offset, exec_start;
    bool exec, used;
};

static void give(struct ospd_collector *c, int32_t pid, struct pending *p, const char *exe)
{
    if (!p->used || !p->exec)
        return;
    p->used = false;
    struct ospd_phdr ph[64];
    uint32_t count = 0;
    int rc = -1;
    if (strcmp(p->path, "[vdso]") == 0) {
        const uint8_t *vdso =
            (const uint8_t *)getauxval(AT_SYSINFO_EHDR); /* one kernel, one vDSO */
        if (vdso != NULL)
            rc = read_phdrs(-1, vdso, 4096, ph, 64, &count); /* its headers: in its first page */
    } else {
        /* Through the process's own root, so a target in another mount namespace reads its
         * objects. The path may be in /tmp and replaced since it was mapped: a FIFO there
         * would hold the collector in its open, so only a regular file, never blocking. */
        char root_path[OSP_MAX_PATH + 64];
        snprintf(root_path, sizeof root_path, "/proc/%d/root%s", (int)pid, p->path);
        int fd = ospc_open_shared(root_path, O_RDONLY, 0, OSPC_ANY_OWNER);
        if (fd == -ENOENT || fd == -EACCES)
            fd = ospc_open_shared(p->path, O_RDONLY, 0, OSPC_ANY_OWNER);
        if (fd >= 0) {
            rc = read_phdrs(fd, NULL, UINT64_MAX, ph, 64, &count); /* a short read refuses */
            close(fd);
        }
    }
    uint64_t base, slide, text, text_size;
    if (rc != 0 || ospd_image_from_phdrs(ph, count, p->lowest_start, p->lowest_offset, &base,
                                         &slide, &text, &text_size) != 0)
        return;
    char *path = ospd_utf8_sanitize(p->path, strlen(p->path));
    if (path != NULL)
        ospd_collector_image(c, base, slide, text, text_size, path, OWN_ARCH,
                             strcmp(p->path, exe) == 0);
}

int ospd_maps_images(struct ospd_collector *c, int32_t pid)
{
    char name[64], exe[OSP_MAX_PATH + 1];
    snprintf(name, sizeof name, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(name, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
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
            give(c, pid, &p, exe);
            memcpy(p.path, m.path, m.path_len);
            p.path[m.path_len] = '\0';
            p.used = true;
            p.exec = false;
            p.lowest_start = m.start;
            p.lowest_offset = m.offset;
        }
        if (m.perms[2] == 'x')
            p.exec = true;
    }
    give(c, pid, &p, exe);
    fclose(f);
    return (int)c->image_count;
}
