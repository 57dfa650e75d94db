/* atomic_file.c — how every output of the exporters reaches the disk: a stdio stream over
 * common/'s atomic file (a temporary file in the destination's own directory, fsync'd, renamed
 * over the destination, the directory fsync'd; the mode a plain create gives). A reader
 * therefore sees the old file or the complete new one, never half of it; on any failure the
 * temporary file is removed and the error names the destination. The disk's writeback is
 * started every few megabytes while the file is written, so the closing fsync does not wait
 * for a hundred megabytes at once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospx_internal.h"

/* How much written data the disk may be behind by: past this, its writeback is started, so
 * that the disk writes while the next bytes are made and the closing fsync has little left. */
#define WRITEBACK_STEP (8 << 20)
/* The stream's buffer: what one write(2) carries. */
#define ATOMIC_BUFFER (1 << 20)

/* The stream's writes: to the file descriptor, starting the writeback of each WRITEBACK_STEP
 * written (sync_file_range only starts it; fsync at commit still waits for all of it). */
static ssize_t write_through(void *cookie, const char *data, size_t size)
{
    struct ospx__atomic_file *file = cookie;
    if (ospc_write_all(file->file.fd, data, size) != 0)
        return -1;
    file->written += (off_t)size;
    if (file->written - file->flushed >= WRITEBACK_STEP) {
        (void)sync_file_range(file->file.fd, file->flushed, file->written - file->flushed,
                              SYNC_FILE_RANGE_WRITE);
        file->flushed = file->written;
    }
    return (ssize_t)size;
}

int ospx__atomic_open(struct ospx__atomic_file *file, const char *path, struct ospx_error *err)
{
    file->stream = NULL;
    file->path = path;
    file->written = file->flushed = 0;
    file->buffer = NULL;
    if (path == NULL || path[0] == '\0')
        return ospx_error_set(err, EINVAL, "", 0, 0, "no output path given");
    int rc = ospc_atomic_open(&file->file, path);
    if (rc != 0)
        return ospx_error_set(err, -rc, path, 0, 0, "cannot create a temporary file beside it: %s",
                              strerror(-rc));
    file->stream = fopencookie(file, "w", (cookie_io_functions_t){.write = write_through});
    if (file->stream == NULL) {
        int code = errno;
        ospc_atomic_abort(&file->file);
        return ospx_error_set(err, code, path, 0, 0, "cannot open for writing: %s", strerror(code));
    }
    /* The big outputs are hundreds of megabytes written a number at a time: 1 MiB writes, and
     * no lock taken per call (one thread writes each output). The buffer is ours: glibc's
     * setvbuf keeps its own size (BUFSIZ, 8 KiB, for a cookie stream) when handed none, which made
     * the benchmark's 111 MB of outputs 13,000 writes of 8 KiB. */
    file->buffer = malloc(ATOMIC_BUFFER);
    (void)setvbuf(file->stream, file->buffer, _IOFBF,
                  file->buffer != NULL ? ATOMIC_BUFFER : BUFSIZ);
    (void)__fsetlocking(file->stream, FSETLOCKING_BYCALLER);
    return 0;
}

void ospx__atomic_abort(struct ospx__atomic_file *file)
{
    if (file->stream != NULL)
        fclose(file->stream); /* its writes go nowhere once the file is removed */
    file->stream = NULL;
    free(file->buffer);
    file->buffer = NULL;
    ospc_atomic_abort(&file->file);
}

int ospx__atomic_commit(struct ospx__atomic_file *file, struct ospx_error *err)
{
    if (file->stream == NULL)
        return ospx_error_set(err, EINVAL, file->path, 0, 0, "output was not opened");
    int code = 0;
    if (fflush(file->stream) != 0 || ferror(file->stream))
        code = errno != 0 ? errno : EIO;
    fclose(file->stream);
    file->stream = NULL;
    free(file->buffer);
    file->buffer = NULL;
    if (code != 0) {
        ospc_atomic_abort(&file->file);
        return ospx_error_set(err, code, file->path, 0, 0, "cannot write: %s", strerror(code));
    }
    int rc = ospc_atomic_commit(&file->file, NULL);
    if (rc != 0)
        return ospx_error_set(err, -rc, file->path, 0, 0, "cannot write: %s", strerror(-rc));
    return 0;
}

json_t *ospx__json_string(const char *text)
{
    json_t *string = json_string(ospx__str(text));
    if (string != NULL)
        return string;
    char *copy = strdup(text);
    if (copy == NULL)
        return NULL;
    /* Keep ASCII, replace every other byte: good enough to show a path that is not UTF-8. */
    for (char *p = copy; *p != '\0'; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    string = json_string(copy);
    free(copy);
    return string;
}

char *ospx__json_quote(const char *text)
{
    json_t *string = ospx__json_string(text);
    char *quoted = string != NULL ? json_dumps(string, JSON_ENCODE_ANY) : NULL;
    json_decref(string);
    return quoted;
}

/* Millions of numbers (the trace's samples and time deltas, every node's id): two digits per
 * division, and the digits copied into the stream's buffer at once where it has room, as
 * putc_unlocked stores one (glibc's FILE; elsewhere, or at the buffer's end, fwrite_unlocked).
 * Per digit, a division and a putc_unlocked were 14% of `osprey report`'s instructions. */
void ospx__put_uint(FILE *stream, uint64_t value)
{
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";
    char digits[24];
    char *end = digits + sizeof digits, *at = end;
    while (value >= 100) {
        at -= 2;
        memcpy(at, &pairs[2 * (value % 100)], 2);
        value /= 100;
    }
    if (value >= 10) {
        at -= 2;
        memcpy(at, &pairs[2 * value], 2);
    } else {
        *--at = (char)('0' + value);
    }
    size_t length = (size_t)(end - at);
#ifdef __GLIBC__
    if ((size_t)(stream->_IO_write_end - stream->_IO_write_ptr) >= length) {
        memcpy(stream->_IO_write_ptr, at, length);
        stream->_IO_write_ptr += length;
        return;
    }
#endif
    fwrite_unlocked(at, 1, length, stream);
}

int ospx__write_json(json_t *root, const char *path, size_t flags, struct ospx_error *err)
{
    if (root == NULL)
        return ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory while building the output");
    struct ospx__atomic_file file;
    int rc = ospx__atomic_open(&file, path, err);
    if (rc == 0) {
        if (json_dumpf(root, file.stream, flags) != 0 || fputc('\n', file.stream) == EOF) {
            int code = errno != 0 ? errno : EIO;
            ospx__atomic_abort(&file);
            rc = ospx_error_set(err, code, path, 0, 0, "cannot write: %s", strerror(code));
        } else {
            rc = ospx__atomic_commit(&file, err);
        }
    }
    json_decref(root);
    return rc;
}
