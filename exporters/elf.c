/* elf.c — the ELF work of the exporters themselves, before any tool sees an object: whether a
 * path from a profile names a regular ELF file (ospx__elf_check), and a copy of the running
 * kernel's vDSO to describe a profile's [vdso] image (ospx__vdso_copy). An object's build id
 * and code offset are common/'s (ospc_elf_identity). Paths come from the profile, so every open
 * is non-blocking and checked on the descriptor. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospx_internal.h"

/* Open `path` for reading if it is a regular file starting with an ELF identification.
 * Returns the descriptor, or -1 with `why` filled. */
static int elf_open(const char *path, struct stat *info, char *why, size_t why_size)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_size, "cannot open: %s", strerror(errno));
        return -1;
    }
    unsigned char ident[EI_NIDENT];
    if (fstat(fd, info) != 0) {
        snprintf(why, why_size, "cannot stat: %s", strerror(errno));
    } else if (!S_ISREG(info->st_mode)) {
        snprintf(why, why_size, "not a regular file");
    } else if (pread(fd, ident, sizeof ident, 0) != (ssize_t)sizeof ident ||
               memcmp(ident, ELFMAG, SELFMAG) != 0) {
        snprintf(why, why_size, "not an ELF file");
    } else {
        return fd;
    }
    close(fd);
    return -1;
}

int ospx__elf_check(const char *path, off_t *size, char *why, size_t why_size)
{
    struct stat info;
    int fd = elf_open(path, &info, why, why_size);
    *size = fd >= 0 ? info.st_size : 0;
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

void *ospx__map_file(const char *path, size_t *size)
{
    *size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat info;
    void *data = MAP_FAILED;
    if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0)
        data = mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED)
        return NULL;
    *size = (size_t)info.st_size;
    return data;
}

/* When this machine booted, in ns since the epoch (/proc/stat btime); 0 when unknown. */
static uint64_t boot_time_ns(void)
{
    FILE *stat_file = fopen("/proc/stat", "r");
    if (stat_file == NULL)
        return 0;
    char line[256];
    unsigned long long seconds = 0;
    while (fgets(line, sizeof line, stat_file) != NULL)
        if (sscanf(line, "btime %llu", &seconds) == 1)
            break;
    fclose(stat_file);
    return (uint64_t)seconds * 1000000000u;
}

/* The vDSO has no file on disk, but every process of one running kernel maps the same one.
 * When the profile was recorded since this machine booted (so by this kernel) and the
 * executable span of our own vDSO has the recorded size, copy our vDSO into a temporary file
 * at path (created with mkstemp; the caller unlinks it) so that llvm-symbolizer can name its
 * functions (__vdso_clock_gettime, ...), as perf does from its own copy. File addresses are
 * vDSO offsets on both sides (the recorded slide is its load address). Returns 0, or
 * -ENOENT when our vDSO cannot describe the image, or a negative errno. */
int ospx__vdso_copy(const struct ospx_raw *raw, const struct ospx_image *image, char *path,
                    size_t size)
{
    uint64_t booted = boot_time_ns();
    const unsigned char *start = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (booted == 0 || raw->start_unix_ns < booted || start == NULL || image->text_size == 0)
        return -ENOENT;
    Elf64_Ehdr eh;
    Elf64_Phdr *segments;
    size_t count;
    /* common/'s walk of the program headers, which sit in the vDSO's first page */
    if (ospc_elf_program_headers(-1, start, 4096, &eh, &segments, &count) != 0)
        return -ENOENT;
    const Elf64_Ehdr *header = &eh;
    uint64_t text_lo = UINT64_MAX, text_hi = 0, length = 0;
    for (size_t i = 0; i < count; i++) {
        if (segments[i].p_type != PT_LOAD)
            continue;
        if (segments[i].p_offset + segments[i].p_filesz > length)
            length = segments[i].p_offset + segments[i].p_filesz;
        if ((segments[i].p_flags & PF_X) == 0)
            continue;
        if (segments[i].p_vaddr < text_lo)
            text_lo = segments[i].p_vaddr;
        if (segments[i].p_vaddr + segments[i].p_memsz > text_hi)
            text_hi = segments[i].p_vaddr + segments[i].p_memsz;
    }
    free(segments);
    if (text_lo == UINT64_MAX || text_hi - text_lo != image->text_size)
        return -ENOENT; /* another kernel's vDSO, or a producer that measured differently */
    /* The section headers (the symbol table's way in) sit inside the mapped image too. */
    uint64_t sections_end = header->e_shoff + (uint64_t)header->e_shnum * header->e_shentsize;
    if (sections_end > length)
        length = sections_end;
    const char *tmp = getenv("TMPDIR");
    snprintf(path, size, "%s/osprey-vdso-XXXXXX", tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        path[0] = '\0';
        return -errno;
    }
    size_t written = 0;
    while (written < length) {
        ssize_t n = write(fd, start + written, length - written);
        if (n <= 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        written += (size_t)n;
    }
    int rc = written == length ? 0 : -EIO;
    if (close(fd) != 0 && rc == 0)
        rc = -EIO;
    if (rc != 0) {
        unlink(path);
        path[0] = '\0';
    }
    return rc;
}
