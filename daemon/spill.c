/* spill.c — the samples of a long run, kept on disk as they come instead of in memory.
 *
 * Owns the collector's spill file: once `spill_batch` samples are in memory they are written,
 * as the raw file's rows of text (ospd_sample_row, in the order they came), to a file with no
 * name in the output's directory (O_TMPFILE; where the file system has none, a fresh name
 * made with O_EXCL and unlinked at once), and the in-memory table starts over. The raw writer
 * copies the file in (copy_file_range: the kernel moves the bytes, no formatting at the end)
 * before the rows still in memory, so the raw file is byte for byte the one an unspilled
 * collector writes. ospreyd's memory stays that of its stacks, threads and images plus one
 * batch, however long the run; the disk holds the rows twice for the time the raw file is
 * written beside it.
 *
 * The file is opened at the first full batch, so a short run (most process images of a
 * build) never makes one. Nobody else can reach it: it has no name (or had one for the time
 * between O_EXCL and unlink, mode 0600), and it is closed on exec. A write that fails (a
 * full disk) stops the spilling with one line on stderr: what is on disk stays there and is
 * copied in, later samples stay in memory under the collector's budget.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ospc.h"
#include "ospd.h"

/* The output's directory ("." for a bare name) into dir[size]. */
static void directory_of(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, size, ".");
    else if (slash == path)
        snprintf(dir, size, "/");
    else
        snprintf(dir, size, "%.*s", (int)(slash - path), path);
}

/* A file with no name in dir, read-write, closed on exec: fd or a negative errno. */
static int open_unnamed(const char *dir)
{
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT)
        return -errno;
    /* No O_TMPFILE here: O_EXCL makes a new file (never a link another user planted). */
    char name[OSP_MAX_PATH + 32];
    if (snprintf(name, sizeof name, "%s/.osprey-spill-XXXXXX", dir) >= (int)sizeof name)
        return -ENAMETOOLONG;
    fd = mkostemp(name, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    unlink(name);
    return fd;
}

uint32_t ospd_spill_batch(void)
{
    const char *text = getenv("OSPREYD_SPILL_SAMPLES");
    char *end;
    unsigned long n = text != NULL ? strtoul(text, &end, 10) : 0;
    if (text == NULL || end == text || *end != '\0' || n == 0 || n > OSPD_SPILL_BATCH)
        return OSPD_SPILL_BATCH;
    return (uint32_t)n;
}

int ospd_spill_enable(struct ospd_collector *c, const char *out_path, uint32_t batch)
{
    char *copy = strdup(out_path);
    if (copy == NULL)
        return -ENOMEM;
    free(c->spill_path);
    c->spill_path = copy;
    c->spill_batch = batch > 0 ? batch : 1;
    return 0;
}

/* Stop spilling: later samples stay in memory. */
static int spill_failed(struct ospd_collector *c, int rc, const char *what)
{
    char dir[OSP_MAX_PATH + 1];
    directory_of(c->spill_path, dir, sizeof dir);
    fprintf(stderr, "osprey: ospreyd: cannot %s in %s: %s; later samples stay in memory\n", what,
            dir, strerror(-rc));
    c->spill_batch = 0;
    return rc;
}

/* Write bytes[0, size) at the end of the spill file. 0 or a negative errno. */
static int append(struct ospd_collector *c, const char *bytes, size_t size)
{
    for (size_t done = 0; done < size;) {
        ssize_t n =
            pwrite(c->spill_fd - 1, bytes + done, size - done, (off_t)(c->spill_bytes + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -ENOSPC;
        done += (size_t)n;
    }
    return 0;
}

int ospd_spill_flush(struct ospd_collector *c)
{
    if (c->spill_batch == 0 || c->sample_count == 0)
        return 0;
    if (c->spill_fd <= 0) {
        char dir[OSP_MAX_PATH + 1];
        directory_of(c->spill_path, dir, sizeof dir);
        int fd = open_unnamed(dir);
        if (fd < 0)
            return spill_failed(c, fd, "make a spill file");
        c->spill_fd = fd + 1;
    }
    /* Every row after a comma: the raw writer leaves out the file's first byte. */
    char text[64 * 1024];
    size_t used = 0;
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < c->sample_count; i++) {
        used += ospd_sample_row(text + used, &c->samples[i], false);
        if (used > sizeof text - OSPD_SAMPLE_ROW_MAX || i + 1 == c->sample_count) {
            int rc = append(c, text, used);
            if (rc != 0) { /* this batch's rows are past spill_bytes: never read */
                c->spill_bytes -= bytes;
                return spill_failed(c, rc, "write the spill file");
            }
            c->spill_bytes += used;
            bytes += used;
            used = 0;
        }
    }
    c->spilled += c->sample_count;
    c->sample_count = 0;
    return 0;
}

int ospd_spill_copy(const struct ospd_collector *c, FILE *f)
{
    if (c->spill_bytes < 1)
        return 0;
    if (fflush(f) != 0)
        return -errno;
    /* From the second byte: the first row has no comma before it. */
    loff_t from = 1;
    int out = fileno(f);
    while ((uint64_t)from < c->spill_bytes) {
        ssize_t n = copy_file_range(c->spill_fd - 1, &from, out, NULL,
                                    (size_t)(c->spill_bytes - (uint64_t)from), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0)
            continue;
        if (n == 0)
            return -EIO; /* the file is shorter than what was written to it */
        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
            return -errno;
        /* No copy in the kernel here: through a buffer. */
        char buffer[64 * 1024];
        while ((uint64_t)from < c->spill_bytes) {
            size_t want = c->spill_bytes - (uint64_t)from < sizeof buffer
                              ? (size_t)(c->spill_bytes - (uint64_t)from)
                              : sizeof buffer;
            ssize_t got = pread(c->spill_fd - 1, buffer, want, from);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                return got < 0 ? -errno : -EIO;
            int rc = ospc_write_all(out, buffer, (size_t)got);
            if (rc != 0)
                return rc;
            from += got;
        }
    }
    /* The stream goes on where the copy ended. */
    return fseeko(f, 0, SEEK_END) == 0 ? 0 : -errno;
}

void ospd_spill_free(struct ospd_collector *c)
{
    if (c->spill_fd > 0)
        close(c->spill_fd - 1);
    c->spill_fd = 0;
    free(c->spill_path);
    c->spill_path = NULL;
}

uint64_t ospd_sample_total(const struct ospd_collector *c)
{
    return c->spilled + c->sample_count;
}
