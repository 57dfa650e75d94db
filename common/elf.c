/* elf.c — an object file's identity, read from the file itself: its GNU build id (the
 * NT_GNU_BUILD_ID note) and where its code sits (the PF_X PT_LOAD's file offset and link-time
 * address); and the one walk of an object's program headers (ospc_elf_program_headers), which
 * the daemon's image records, the exporters' vDSO copy and function spans and the CLI's
 * static-binary check read too. ospreyd records both in the raw profile while the objects of the
 * run are still on disk; the exporters check an object against the profile's build id before
 * trusting it, and the build-id cache files objects under it. Paths come from profiles, so the open
 * never blocks, only regular files are read, and every offset and size read from the file is
 * bounds-checked against the file before it is used. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"

/* Program headers and notes read at most: a real object's are far smaller. */
#define ELF_MAX_HEADERS_BYTES (1 << 20)

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

/* n bytes at offset `at` of the object: from memory, or read from fd. 0 or -1. */
static int object_read(int fd, const void *memory, uint64_t size, uint64_t at, void *out, size_t n)
{
    if (at > size || n > size - at)
        return -1;
    if (memory != NULL) {
        memcpy(out, (const unsigned char *)memory + at, n);
        return 0;
    }
    return pread(fd, out, n, (off_t)at) == (ssize_t)n ? 0 : -1;
}

int ospc_elf_program_headers(int fd, const void *memory, uint64_t size, Elf64_Ehdr *header,
                             Elf64_Phdr **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (object_read(fd, memory, size, 0, header, sizeof *header) != 0 ||
        memcmp(header->e_ident, ELFMAG, SELFMAG) != 0)
        return -ENOEXEC;
    /* 64-bit little-endian objects only (x86_64, aarch64). */
    if (header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_ident[EI_DATA] != ELFDATA2LSB ||
        header->e_phentsize != sizeof(Elf64_Phdr) || header->e_phnum == 0 ||
        (uint64_t)header->e_phnum * sizeof(Elf64_Phdr) > ELF_MAX_HEADERS_BYTES ||
        header->e_phoff > size)
        return -ENOTSUP;
    size_t table_size = (size_t)header->e_phnum * sizeof(Elf64_Phdr);
    Elf64_Phdr *segments = malloc(table_size);
    if (segments == NULL)
        return -ENOMEM;
    if (object_read(fd, memory, size, header->e_phoff, segments, table_size) != 0) {
        free(segments);
        return -EIO;
    }
    *out = segments;
    *count = header->e_phnum;
    return 0;
}

int ospc_elf_identity_fd(int fd, off_t file_size, struct ospc_elf_identity *out)
{
    memset(out, 0, sizeof *out);
    Elf64_Ehdr header;
    Elf64_Phdr *segments;
    size_t count;
    int rc = ospc_elf_program_headers(fd, NULL, (uint64_t)file_size, &header, &segments, &count);
    if (rc != 0)
        return rc;
    out->type = header.e_type;
    int found = 0;
    for (size_t i = 0; i < count; i++) {
        const Elf64_Phdr *segment = &segments[i];
        if (segment->p_type == PT_LOAD && (segment->p_flags & PF_X) &&
            (!out->has_text || segment->p_vaddr < out->text_vaddr)) {
            out->has_text = 1;
            out->text_offset = segment->p_offset;
            out->text_vaddr = segment->p_vaddr;
        }
        if (found || segment->p_type != PT_NOTE || segment->p_filesz == 0 ||
            segment->p_filesz > ELF_MAX_HEADERS_BYTES || segment->p_offset > (uint64_t)file_size ||
            segment->p_filesz > (uint64_t)file_size - segment->p_offset)
            continue;
        unsigned char *data = malloc(segment->p_filesz);
        if (data != NULL && pread(fd, data, segment->p_filesz, (off_t)segment->p_offset) ==
                                (ssize_t)segment->p_filesz)
            found = build_id_in_notes(data, segment->p_filesz, out->build_id,
                                      sizeof out->build_id) == 0;
        free(data);
    }
    free(segments);
    if (!found)
        out->build_id[0] = '\0';
    return 0;
}

int ospc_elf_identity(const char *path, struct ospc_elf_identity *out, char *why, size_t why_size)
{
    char ignored[8];
    if (why == NULL) {
        why = ignored;
        why_size = sizeof ignored;
    }
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int code = errno;
        snprintf(why, why_size, "cannot open: %s", strerror(code));
        return -code;
    }
    struct stat info;
    int rc;
    if (fstat(fd, &info) != 0) {
        rc = -errno;
        snprintf(why, why_size, "cannot stat: %s", strerror(-rc));
    } else if (!S_ISREG(info.st_mode)) {
        rc = -EINVAL;
        snprintf(why, why_size, "not a regular file");
    } else {
        rc = ospc_elf_identity_fd(fd, info.st_size, out);
        if (rc == -ENOEXEC)
            snprintf(why, why_size, "not an ELF file");
        else if (rc == -ENOTSUP)
            snprintf(why, why_size, "not a 64-bit little-endian ELF object");
        else if (rc != 0)
            snprintf(why, why_size, "cannot read: %s", strerror(-rc));
    }
    close(fd);
    return rc;
}
