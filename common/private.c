/* private.c — a directory of this user's, and the files in it: where the caches live (the
 * build-id cache, ospreyd's unwind rows), under $XDG_CACHE_HOME or ~/.cache, which another
 * user may reach through a planted link, a directory made first, or an XDG_CACHE_HOME in /tmp.
 *
 * A private directory is opened without following a link in its last component and checked
 * on the descriptor: a directory the effective user owns, which no one else can write or read
 * (one of ours with group or other bits, as earlier versions made them, is narrowed to 0700).
 * Everything in it is then reached relative to that descriptor (openat, renameat, unlinkat),
 * never by a path a parent's owner could swap, and every file read from it is a regular file
 * of ours, opened without following a link or blocking. A file is written as a temporary file
 * beside its name (created exclusively, 0600) renamed over it: a reader sees the old file or
 * the whole new one. No fsync: a cache lost in a crash is built again. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"

int ospc_directory_check(int fd, int narrow)
{
    struct stat info;
    if (fstat(fd, &info) != 0)
        return -errno;
    if (!S_ISDIR(info.st_mode))
        return -ENOTDIR;
    if (info.st_uid != geteuid())
        return -EPERM;
    if ((info.st_mode & 077) == 0)
        return 0;
    if (!narrow)
        return (info.st_mode & (S_IWGRP | S_IWOTH)) != 0 ? -EACCES : 0;
    return fchmod(fd, 0700) == 0 ? 0 : -errno;
}

static int open_checked(int parent, const char *name)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP ? -ENOTDIR : -errno;
    int rc = ospc_directory_check(fd, 1);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int ospc_private_directory(const char *path, int create)
{
    if (create) {
        int rc = ospc_make_directories(path, 0700);
        if (rc != 0 && rc != -ENOTDIR)
            return rc;
    }
    return open_checked(AT_FDCWD, path);
}

int ospc_private_subdirectory(int parent, const char *name, int create)
{
    if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL)
        return -EINVAL;
    if (create && mkdirat(parent, name, 0700) != 0 && errno != EEXIST)
        return -errno;
    return open_checked(parent, name);
}

int ospc_private_open(int directory, const char *name, struct stat *info)
{
    int fd = ospc_open_regular(directory, name, O_RDONLY, 0, geteuid(), false, info);
    return fd == -OSPC_ENOTREG ? -EINVAL : fd; /* -OSPC_ENOTOWNER is -EPERM */
}

int ospc_private_temp(int directory, const char *name, char *temp, size_t temp_size)
{
    /* Unique within the process too: the unwind builds run on several threads at once. */
    static atomic_uint counter;
    unsigned n = atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed); /* a name only */
    if (snprintf(temp, temp_size, "%s.tmp-%ld-%u", name, (long)getpid(), n) >= (int)temp_size)
        return -ENAMETOOLONG;
    int fd = openat(directory, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    return fd >= 0 ? fd : -errno;
}

int ospc_private_commit(int directory, int fd, const char *temp, const char *name, int ok)
{
    int rc = ok ? 0 : -EIO;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(directory, temp, directory, name) != 0)
        rc = -errno;
    if (rc != 0)
        (void)unlinkat(directory, temp, 0);
    return rc;
}

int ospc_trusted_source(const struct stat *info)
{
    if (info->st_uid != geteuid() && info->st_uid != 0)
        return 0;
    if (info->st_mode & S_IWOTH)
        return 0;
    return !(info->st_mode & S_IWGRP) || info->st_gid == getegid();
}
