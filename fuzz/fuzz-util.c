/* fuzz-util.c — the helpers fuzz.h declares: failing loudly, in-memory input files, and the
 * checks on what the raw reader returns. Shared by the fuzz targets and their replay runners. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

void fuzz_fail(const char *file, int line, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "fuzz: check failed at %s:%d: ", file, line);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    va_end(args);
    abort();
}

int fuzz_memory_file(const uint8_t *data, size_t size, char *path, size_t path_size)
{
    int fd = memfd_create("osprey-fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    snprintf(path, path_size, "/proc/self/fd/%d", fd);
    return fd;
}

/* 1 when every byte of the object is zero. */
static int all_zero(const void *object, size_t size)
{
    const unsigned char *bytes = object;
    for (size_t i = 0; i < size; i++)
        if (bytes[i] != 0)
            return 0;
    return 1;
}

void fuzz_check_raw_result(int rc, const struct ospx_raw *raw, const struct ospx_error *err,
                           const char *path)
{
    FUZZ_CHECK(rc <= 0, "ospx_raw_read returned %d, neither 0 nor a negative errno", rc);
    if (rc < 0) {
        FUZZ_CHECK(err->text[0] != '\0', "failure %d without an error text", rc);
        FUZZ_CHECK(strchr(err->text, '\n') == NULL, "error text spans lines: %s", err->text);
        FUZZ_CHECK(strcmp(err->file, path) == 0, "error names \"%s\", not the file read (%s)",
                   err->file, path);
        FUZZ_CHECK(all_zero(raw, sizeof *raw), "a failed read left data behind in the result");
        return;
    }
    FUZZ_CHECK(err->text[0] == '\0', "success with an error text: %s", err->text);
    FUZZ_CHECK(raw->version == OSPX_RAW_VERSION, "accepted version %d", raw->version);
    FUZZ_CHECK(raw->source_path != NULL && strcmp(raw->source_path, path) == 0,
               "source_path is not the file read");
    FUZZ_CHECK(raw->exe != NULL && raw->platform != NULL, "exe or platform missing");
    FUZZ_CHECK(raw->rate_hz >= 1, "accepted rate_hz 0");
    FUZZ_CHECK(raw->pid >= 0, "accepted pid %lld", (long long)raw->pid);
    FUZZ_CHECK(raw->end_unix_ns >= raw->start_unix_ns, "end %llu before start %llu",
               (unsigned long long)raw->end_unix_ns, (unsigned long long)raw->start_unix_ns);
    FUZZ_CHECK(raw->images != NULL && raw->threads != NULL && raw->stacks != NULL &&
                   raw->samples != NULL,
               "a table is NULL after success");
    for (size_t i = 0; i < raw->image_count; i++) {
        const struct ospx_image *image = &raw->images[i];
        FUZZ_CHECK(image->path != NULL && image->arch != NULL, "images[%zu] lacks a string", i);
        FUZZ_CHECK(image->text + image->text_size >= image->text,
                   "images[%zu]: text range wraps around", i);
    }
    for (size_t i = 0; i < raw->thread_count; i++)
        FUZZ_CHECK(raw->threads[i].label != NULL, "threads[%zu] has no label", i);
    for (size_t i = 0; i < raw->stack_count; i++) {
        const struct ospx_stack *stack = &raw->stacks[i];
        FUZZ_CHECK(stack->depth >= 1 && stack->pcs != NULL, "stacks[%zu] has depth %zu", i,
                   stack->depth);
        /* Touch every pc, so that a short allocation shows up under the sanitizers. */
        uint64_t sum = 0;
        for (size_t k = 0; k < stack->depth; k++)
            sum += stack->pcs[k];
        (void)sum;
    }
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *sample = &raw->samples[i];
        FUZZ_CHECK(sample->thread < raw->thread_count, "samples[%zu]: thread %u of %zu", i,
                   sample->thread, raw->thread_count);
        FUZZ_CHECK(sample->stack < raw->stack_count, "samples[%zu]: stack %u of %zu", i,
                   sample->stack, raw->stack_count);
        FUZZ_CHECK(sample->state <= 1, "samples[%zu]: state %u", i, sample->state);
        FUZZ_CHECK(sample->weight >= 1 && sample->weight <= (UINT64_C(1) << 40),
                   "samples[%zu]: weight %llu", i, (unsigned long long)sample->weight);
    }
    uint64_t dropped = 0;
    for (size_t i = 0; i < raw->drop_count; i++) {
        FUZZ_CHECK(raw->drops[i].reason != NULL, "drops[%zu] has no reason", i);
        dropped += raw->drops[i].count;
    }
    (void)dropped;
    FUZZ_CHECK(!raw->exit.known || !raw->exit.normal || raw->exit.signal == 0,
               "a normal exit with signal %d", raw->exit.signal);
}
