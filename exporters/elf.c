/* elf.c — what the exporters read from object files themselves, before any tool sees them:
 * whether a path from a profile names a regular ELF file (ospx__elf_check). An object's build
 * id and code offset are common/'s (ospc_elf_identity). Paths come from the profile, so every
 * open is non-blocking and checked on the descriptor. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
