/* shared.c — files in directories other users can write: /tmp, the profile's directory,
 * /dev/shm. What sits at such a path may be another user's: a FIFO whose open never returns,
 * a symbolic link to a file of ours, a file full of someone else's data. This file owns the
 * one way the parts outside the shim open such a path (the shim has its own minimal copy,
 * osp__open_shared in shim/base.c, as it links nothing): never following a link, never
 * blocking, and only a regular file of the expected owner; and the per-user directory in
 * which a file that must be ours alone (attach's lock) is made (ospc_runtime_dir). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"

int ospc_open_regular(int directory, const char *name, int flags, mode_t mode, uid_t owner,
                      bool root_too, struct stat *info)
{
    int fd = openat(directory, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
    if (fd < 0)
        return errno == ENXIO ? -OSPC_ENOTREG : -errno; /* ENXIO: a FIFO with no reader */
    struct stat own;
    if (info == NULL)
        info = &own;
    int rc = fstat(fd, info) != 0 ? -errno : !S_ISREG(info->st_mode) ? -OSPC_ENOTREG : 0;
    if (rc == 0 && owner != OSPC_ANY_OWNER && info->st_uid != owner &&
        !(root_too && info->st_uid == 0))
        rc = -OSPC_ENOTOWNER;
    if (rc != 0) {
        close(fd);
        return rc;
    }
    /* Regular files ignore O_NONBLOCK, but whoever reads on should not inherit it. */
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int ospc_open_shared(const char *path, int flags, mode_t mode, uid_t owner)
{
    return ospc_open_regular(AT_FDCWD, path, flags, mode, owner, true, NULL);
}

const char *ospc_shared_strerror(int rc)
{
    switch (-rc) {
    case ELOOP:
        return "is a symbolic link";
    case OSPC_ENOTREG:
        return "is not a regular file";
    case OSPC_ENOTOWNER:
        return "belongs to another user";
    default:
        return strerror(-rc);
    }
}

/* The directory at `path` opened without following a link, and checked: ours, and no one
 * else may write in it (ospc_directory_check, not narrowed: one that was open to all may hold
 * what another user put there). */
static int private_directory_check(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = ospc_directory_check(fd, 0);
    close(fd);
    return rc;
}

int ospc_runtime_dir(char *out, size_t size)
{
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if (runtime != NULL && runtime[0] == '/' && private_directory_check(runtime) == 0) {
        if (snprintf(out, size, "%s", runtime) >= (int)size)
            return -ENAMETOOLONG;
        return 0;
    }
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] != '/')
        tmp = "/tmp";
    if (snprintf(out, size, "%s/osprey-%u", tmp, (unsigned)geteuid()) >= (int)size)
        return -ENAMETOOLONG;
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return -errno;
    return private_directory_check(out);
}
