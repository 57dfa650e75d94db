/* elf.c — what the exporters read from object files themselves, before any tool sees them:
 * whether a path from a profile names a regular ELF file (ospx__elf_check), and its GNU build
 * id (ospx__elf_build_id) for the pprof mapping table. Paths come from the profile, so every
 * open is non-blocking and checked on the descriptor, and every offset and size read from the
 * file is bounds-checked against the file before it is used. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospx_internal.h"

/* Program headers and notes read at most: a real object's are far smaller. */
#define ELF_MAX_HEADERS_BYTES (1 << 20)

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

/* The NT_GNU_BUILD_ID descriptor in the notes at [data, data + size), as hex into out. */
static int build_id_in_notes(const unsigned char *data, size_t size, char *out, size_t out_size)
{
    size_t at = 0;
    while (at + 12 <= size) {
        uint32_t name_size, desc_size, type;
        memcpy(&name_size, data + at, 4);
        memcpy(&desc_size, data + at + 4, 4);
        memcpy(&type, data + at + 8, 4);
        size_t name_at = at + 12, desc_at = name_at + ((name_size + 3u) & ~3u);
        if (name_size > size || desc_size > size || desc_at > size || desc_at + desc_size > size)
            return -1;
        if (type == NT_GNU_BUILD_ID && name_size == 4 && memcmp(data + name_at, "GNU", 4) == 0 &&
            desc_size > 0 && desc_size * 2 < out_size) {
            for (size_t i = 0; i < desc_size; i++)
                snprintf(out + 2 * i, 3, "%02x", data[desc_at + i]);
            return 0;
        }
        at = desc_at + ((desc_size + 3u) & ~3u);
    }
    return -1;
}

int ospx__elf_build_id(const char *path, char *out, size_t out_size)
{
    char why[128];
    struct stat info;
    out[0] = '\0';
    int fd = elf_open(path, &info, why, sizeof why);
    if (fd < 0)
        return -1;
    /* 64-bit little-endian objects only (x86_64, aarch64): others have no build id here. */
    Elf64_Ehdr header;
    int rc = -1;
    if (pread(fd, &header, sizeof header, 0) != (ssize_t)sizeof header ||
        header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
        header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 ||
        (uint64_t)header.e_phnum * sizeof(Elf64_Phdr) > ELF_MAX_HEADERS_BYTES ||
        header.e_phoff > (uint64_t)info.st_size) {
        close(fd);
        return -1;
    }
    size_t table_size = (size_t)header.e_phnum * sizeof(Elf64_Phdr);
    Elf64_Phdr *segments = malloc(table_size);
    if (segments != NULL &&
        pread(fd, segments, table_size, (off_t)header.e_phoff) == (ssize_t)table_size) {
        for (int i = 0; i < header.e_phnum && rc != 0; i++) {
            const Elf64_Phdr *note = &segments[i];
            if (note->p_type != PT_NOTE || note->p_filesz == 0 ||
                note->p_filesz > ELF_MAX_HEADERS_BYTES || note->p_offset > (uint64_t)info.st_size ||
                note->p_filesz > (uint64_t)info.st_size - note->p_offset)
                continue;
            unsigned char *data = malloc(note->p_filesz);
            if (data != NULL &&
                pread(fd, data, note->p_filesz, (off_t)note->p_offset) == (ssize_t)note->p_filesz)
                rc = build_id_in_notes(data, note->p_filesz, out, out_size);
            free(data);
        }
    }
    free(segments);
    close(fd);
    if (rc != 0)
        out[0] = '\0';
    return rc;
}
