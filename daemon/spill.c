/* spill.c — the samples of a long run, kept on disk as they come instead of in memory.
 *
 * Owns the collector's spill file: once `spill_batch` samples are in memory they are written,
 * as they are (struct ospd_sample, in the order they came), to a file with no name in the
 * output's directory (O_TMPFILE; where the file system has none, a fresh name made with
 * O_EXCL and unlinked at once), and the in-memory table starts over. The raw writer reads
 * them back in order before the ones still in memory, so the raw file is byte for byte the
 * one an unspilled collector writes. ospreyd's memory stays that of its stacks, threads and
 * images plus one batch, however long the run; the disk holds 24 bytes a sample until the
 * raw file (about 22 bytes a sample as text) is written beside it.
 *
 * The file is opened at the first full batch, so a short run (most process images of a
 * build) never makes one. Nobody else can reach it: it has no name (or had one for the time
 * between O_EXCL and unlink, mode 0600), and it is closed on exec. A write that fails (a
 * full disk) stops the spilling with one line on stderr: what is on disk stays there and is
 * read back, later samples stay in memory under the collector's budget.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    fprintf(stderr,
            "osprey: ospreyd: cannot %s samples in %s: %s; from now on they are kept in memory\n",
            what, dir, strerror(-rc));
    c->spill_batch = 0;
    return rc;
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
            return spill_failed(c, fd, "keep");
        c->spill_fd = fd + 1;
    }
    const char *bytes = (const char *)c->samples;
    size_t size = (size_t)c->sample_count * sizeof *c->samples, done = 0;
    off_t at = (off_t)(c->spilled * sizeof *c->samples);
    while (done < size) {
        ssize_t n = pwrite(c->spill_fd - 1, bytes + done, size - done, at + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) /* what was written of this batch is past c->spilled: never read */
            return spill_failed(c, n < 0 ? -errno : -ENOSPC, "write");
        done += (size_t)n;
    }
    c->spilled += c->sample_count;
    c->sample_count = 0;
    return 0;
}

int ospd_spill_read(const struct ospd_collector *c, uint64_t first, struct ospd_sample *out,
                    uint32_t count)
{
    char *bytes = (char *)out;
    size_t size = (size_t)count * sizeof *out, done = 0;
    off_t at = (off_t)(first * sizeof *out);
    while (done < size) {
        ssize_t n = pread(c->spill_fd - 1, bytes + done, size - done, at + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        done += (size_t)n;
    }
    return 0;
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
