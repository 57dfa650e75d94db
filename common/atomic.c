/* atomic.c — the one way a file of Osprey's reaches the disk: written to a temporary file in
 * the destination's own directory, fsync'd, renamed over the destination, and the directory
 * fsync'd so the rename survives a crash too. A reader sees the previous file or the complete
 * new one. The file gets the mode a plain create would (0666 less the umask), not mkstemp's
 * 0600. The raw profile (daemon/raw-write.c), every output (exporters/atomic_file.c), the raw
 * file the CLI keeps and the build-id cache's copies are all written here. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"

static mode_t process_umask;

static void read_umask(void)
{
    FILE *status = fopen("/proc/self/status", "re");
    if (status != NULL) {
        char line[256];
        while (fgets(line, sizeof line, status) != NULL) {
            unsigned value;
            if (sscanf(line, "Umask: %o", &value) == 1) {
                process_umask = (mode_t)value;
                fclose(status);
                return;
            }
        }
        fclose(status);
    }
    /* No /proc: reading the umask means setting it; done once, before any file is written. */
    process_umask = umask(022);
    umask(process_umask);
}

mode_t ospc_umask(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_umask);
    return process_umask;
}

int ospc_write_all(int fd, const void *data, size_t size)
{
    const char *at = data;
    while (size > 0) {
        ssize_t wrote = write(fd, at, size);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote < 0)
            return -errno;
        if (wrote == 0)
            return -EIO;
        at += wrote;
        size -= (size_t)wrote;
    }
    return 0;
}

int ospc_atomic_open(struct ospc_atomic *file, const char *path)
{
    file->fd = -1;
    file->temp_path = NULL;
    file->path = NULL;
    if (path == NULL || path[0] == '\0')
        return -EINVAL;
    size_t length = strlen(path);
    file->path = strdup(path);
    file->temp_path = malloc(length + sizeof ".tmp-XXXXXX");
    if (file->path == NULL || file->temp_path == NULL) {
        ospc_atomic_abort(file);
        return -ENOMEM;
    }
    memcpy(file->temp_path, path, length);
    memcpy(file->temp_path + length, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
    int fd = mkostemp(file->temp_path, O_CLOEXEC);
    if (fd < 0) {
        int code = errno;
        free(file->temp_path);
        file->temp_path = NULL; /* nothing to remove */
        ospc_atomic_abort(file);
        return -code;
    }
    file->fd = fd;
    (void)fchmod(fd, 0666 & ~ospc_umask());
    return 0;
}

void ospc_atomic_abort(struct ospc_atomic *file)
{
    if (file->fd >= 0)
        close(file->fd);
    file->fd = -1;
    if (file->temp_path != NULL)
        unlink(file->temp_path);
    free(file->temp_path);
    free(file->path);
    file->temp_path = NULL;
    file->path = NULL;
}

/* fsync the directory holding `path`, so the rename itself is on disk. Best effort: some file
 * systems refuse to sync a directory. */
static void sync_directory(const char *path)
{
    const char *slash = strrchr(path, '/');
    char directory[4096];
    if (slash == NULL)
        snprintf(directory, sizeof directory, ".");
    else if (slash == path)
        snprintf(directory, sizeof directory, "/");
    else if ((size_t)(slash - path) < sizeof directory)
        snprintf(directory, sizeof directory, "%.*s", (int)(slash - path), path);
    else
        return;
    int fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* The start of a commit or publish: 0, or -EINVAL with "open" in *failed when the file is not
 * open. */
static int open_or_invalid(const struct ospc_atomic *file, const char **failed)
{
    if (file->fd >= 0 && file->temp_path != NULL)
        return 0;
    *failed = "open";
    return -EINVAL;
}

/* The end of a commit or publish: while `code` is 0 the temporary file renamed to its
 * destination; `failed` (the step, or NULL) to *step; on an error the file is abandoned, else
 * the temporary name is forgotten (it is the destination's now). */
static int renamed(struct ospc_atomic *file, int code, const char *failed, const char **step)
{
    if (code == 0 && rename(file->temp_path, file->path) != 0) {
        code = -errno;
        failed = "rename";
    }
    if (step != NULL)
        *step = failed;
    if (code != 0) {
        ospc_atomic_abort(file);
        return code;
    }
    free(file->temp_path);
    file->temp_path = NULL;
    return 0;
}

int ospc_atomic_commit(struct ospc_atomic *file, const char **step)
{
    const char *failed = NULL;
    int code = open_or_invalid(file, &failed);
    if (code == 0 && fsync(file->fd) != 0) {
        code = -errno;
        failed = "write";
    }
    if (file->fd >= 0 && close(file->fd) != 0 && code == 0) {
        code = -errno;
        failed = "write";
    }
    file->fd = -1;
    code = renamed(file, code, failed, step);
    if (code == 0)
        ospc_atomic_sync(file); /* the directory's fsync; the file's was before the rename */
    return code;
}

int ospc_atomic_publish(struct ospc_atomic *file, const char **step)
{
    const char *failed = NULL;
    int code = open_or_invalid(file, &failed);
    return renamed(file, code, failed, step); /* fd and path stay, for ospc_atomic_sync */
}

void ospc_atomic_sync(struct ospc_atomic *file)
{
    if (file->fd >= 0) {
        fsync(file->fd);
        close(file->fd);
        file->fd = -1;
    }
    if (file->path != NULL)
        sync_directory(file->path);
    free(file->path);
    file->path = NULL;
}

void ospc_atomic_release(struct ospc_atomic *file)
{
    if (file->fd >= 0)
        close(file->fd);
    file->fd = -1;
    free(file->path);
    file->path = NULL;
}

int ospc_copy_fd(int from, int to)
{
    char buffer[1 << 16];
    for (;;) {
        ssize_t got = read(from, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        if (got == 0)
            return 0;
        int rc = ospc_write_all(to, buffer, (size_t)got);
        if (rc != 0)
            return rc;
    }
}

int ospc_copy_file(const char *source, const char *destination)
{
    int from = open(source, O_RDONLY | O_CLOEXEC);
    if (from < 0)
        return -errno;
    struct stat info;
    int rc = fstat(from, &info) != 0 ? -errno : !S_ISREG(info.st_mode) ? -EINVAL : 0;
    if (rc != 0) {
        close(from);
        return rc;
    }
    struct ospc_atomic file;
    rc = ospc_atomic_open(&file, destination);
    if (rc != 0) {
        close(from);
        return rc;
    }
    rc = ospc_copy_fd(from, file.fd);
    close(from);
    if (rc == 0)
        (void)fchmod(file.fd, (info.st_mode & 0777) & ~ospc_umask());
    if (rc != 0) {
        ospc_atomic_abort(&file);
        return rc;
    }
    return ospc_atomic_commit(&file, NULL);
}
