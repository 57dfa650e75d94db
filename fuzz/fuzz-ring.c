/* fuzz-ring.c — fuzz target for ospreyd's event-ring parser (daemon/collect.c, ospd_parse),
 * followed through the raw writer and back through the exporters' reader.
 *
 * The input describes a ring the target wrote, hostile or broken, little-endian:
 *
 *   offset  size
 *   0       1     data area size: 64 << (byte % 9), 64 bytes..16 KiB (always a valid size;
 *                 16 KiB holds the longest image record)
 *   1       1     flags: bit 0 head steps are raw bytes (else multiples of 8, always aligned);
 *                 bit 1 a small memory limit for the collector's tables, 1 KiB << bits 2..5
 *                 (the "over budget" paths)
 *   2       8     start_mono_ns of the header (sample times are relative to it)
 *   10      8     the tail where draining starts (any value: free-running counters wrap)
 *   18      32    platform, NUL-padded (copied as it stands, not necessarily ASCII)
 *   50      N     the data area (N = its size; zero-filled when the input ends early)
 *   50+N    2*k   k drains: each an int16 step of head (times 8 unless flags bit 0); without
 *                 any, one drain with head at tail + all the data bytes the input supplied
 *
 * The header around the data area is otherwise valid, as ospd_ring_validate demands before
 * ospreyd reads anything. Each drain calls ospd_parse as ospreyd's timer does, with the tail it
 * returned last time. The parser must reject (-EPROTO with a reason) or accept (every byte up to
 * head consumed unless an exit record ended the stream), never crash or read outside the data
 * area, and what it keeps must be consistent: every sample names a kept thread and an interned
 * stack, every stack has depth 1..OSP_MAX_DEPTH (a sample with a copy of its stack walked again
 * from the copy's hostile bytes included). Then the collector is written as a raw profile
 * (ospd_raw_write) and read back with ospx_raw_read: whatever the daemon writes, the exporters
 * must accept, with the same counts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "osp_ring_write.h"
#include "ospd.h"
#include "ospx.h"

#define PREFIX_SIZE 50u

/* A little-endian integer of `bytes` bytes at p. */
static uint64_t load_le(const uint8_t *p, size_t bytes)
{
    uint64_t value = 0;
    for (size_t i = 0; i < bytes; i++)
        value |= (uint64_t)p[i] << (8 * i);
    return value;
}

/* A directory of its own for the round-trip files, made once per process and removed at exit
 * (each round trip unlinks its file). */
static char scratch[64];

static void remove_scratch_directory(void)
{
    rmdir(scratch);
}

static const char *scratch_directory(void)
{
    if (scratch[0] == '\0') {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(scratch, sizeof scratch, "%s/osprey-fuzz-XXXXXX", base);
        FUZZ_CHECK(mkdtemp(scratch) != NULL, "cannot create a scratch directory in %s", base);
        atexit(remove_scratch_directory);
    }
    return scratch;
}

/* 1 when s is valid UTF-8 (what the raw writer hands to jansson). */
static int valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p != 0) {
        size_t n = *p < 0x80             ? 1
                   : (*p & 0xe0) == 0xc0 ? 2
                   : (*p & 0xf0) == 0xe0 ? 3
                   : (*p & 0xf8) == 0xf0 ? 4
                                         : 0;
        if (n == 0)
            return 0;
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return 0;
        p += n;
    }
    return 1;
}

/* What the collector must hold after any sequence of drains, accepted or not. */
static void check_collector(const struct ospd_collector *c)
{
    const struct ospd_interner *in = &c->stacks;
    for (uint32_t i = 0; i < in->count; i++) {
        uint32_t depth;
        const uint64_t *pcs = ospd_stack_pcs(in, i, &depth);
        FUZZ_CHECK(depth >= 1 && depth <= OSP_MAX_DEPTH, "stack %u has depth %u", i, depth);
        FUZZ_CHECK(in->stacks[i].first + depth <= in->pool_len, "stack %u past the pool", i);
        for (uint32_t k = 0; k < depth; k++)
            FUZZ_CHECK(pcs[k] < (UINT64_C(1) << 63), "stack %u keeps pc 0x%llx", i,
                       (unsigned long long)pcs[k]);
    }
    for (uint64_t i = 0; i < c->sample_count; i++) {
        const struct ospd_sample *s = &c->samples[i];
        FUZZ_CHECK(s->thread < c->thread_count, "sample %llu: thread %u of %u",
                   (unsigned long long)i, s->thread, c->thread_count);
        FUZZ_CHECK((s->stack_state >> 1) < in->count, "sample %llu: stack %u of %u",
                   (unsigned long long)i, s->stack_state >> 1, in->count);
    }
    for (uint32_t i = 0; i < c->slots_cap; i++)
        FUZZ_CHECK(!c->slots[i].used || c->slots[i].thread < c->thread_count,
                   "slot %u names thread %u of %u", i, c->slots[i].thread, c->thread_count);
    for (uint32_t i = 0; i < c->thread_count; i++)
        FUZZ_CHECK(valid_utf8(c->threads[i].label), "thread %u label is not UTF-8", i);
    for (uint32_t i = 0; i < c->image_count; i++)
        FUZZ_CHECK(valid_utf8(c->images[i].path), "image %u path is not UTF-8", i);
    FUZZ_CHECK(memchr(c->error, '\0', sizeof c->error) != NULL, "error is not terminated");
}

/* One drain from *tail to head; returns 1 when draining should go on. */
static int drain(struct ospd_collector *c, const uint8_t *data, uint64_t data_size, uint64_t *tail,
                 uint64_t head)
{
    uint64_t new_tail = UINT64_C(0xdeadbeefdeadbeef);
    int rc = ospd_parse(c, data, data_size, *tail, head, &new_tail);
    FUZZ_CHECK(rc == 0 || rc == -EPROTO, "ospd_parse returned %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(c->error[0] == '\0', "accepted with an error: %s", c->error);
        FUZZ_CHECK(new_tail >= *tail && new_tail <= head && new_tail % 8 == 0,
                   "new tail %llu outside [%llu, %llu] or unaligned", (unsigned long long)new_tail,
                   (unsigned long long)*tail, (unsigned long long)head);
        FUZZ_CHECK(new_tail == head || c->exit_seen, "stopped at %llu before head %llu",
                   (unsigned long long)new_tail, (unsigned long long)head);
    } else {
        FUZZ_CHECK(c->error[0] != '\0', "rejected without a reason");
        FUZZ_CHECK(strchr(c->error, '\n') == NULL, "reason spans lines: %s", c->error);
        /* A rejected ring stays rejected: the next timer tick consumes nothing. */
        uint64_t again = new_tail;
        FUZZ_CHECK(ospd_parse(c, data, data_size, new_tail, head, &again) == -EPROTO &&
                       again == new_tail,
                   "a rejected ring was parsed again");
    }
    ospd_copies_walk(c, NULL, 0, false); /* no tables: each held copy walked at once */
    check_collector(c);
    *tail = new_tail;
    return rc == 0 && !c->exit_seen;
}

/* Write the collector as ospreyd would at the end, read it back with the exporters' reader. */
static void round_trip(struct ospd_collector *c)
{
    if (c->exit_seen)
        c->exit_status = OSPD_EXIT_EXITED;
    else if (c->error[0] != '\0')
        c->exit_status = OSPD_EXIT_RING_REJECTED;
    else
        c->exit_status = OSPD_EXIT_VANISHED;

    char path[128], message[512];
    snprintf(path, sizeof path, "%s/raw.json", scratch_directory());
    int rc = ospd_raw_write(c, path, message, sizeof message);
    FUZZ_CHECK(rc == 0, "ospd_raw_write failed: %s", message);

    struct ospx_raw raw;
    struct ospx_error err;
    memset(&err, 0, sizeof err);
    rc = ospx_raw_read(path, &raw, &err);
    fuzz_check_raw_result(rc, &raw, &err, path);
    FUZZ_CHECK(rc == 0, "the reader refuses what the daemon wrote: %s: %s", err.file, err.text);
    FUZZ_CHECK(raw.thread_count == c->thread_count && raw.image_count == c->image_count &&
                   raw.stack_count == c->stacks.count && raw.sample_count == c->sample_count,
               "counts changed on the way through the raw file");
    FUZZ_CHECK(raw.exit.known, "the exit object was lost");
    ospx_raw_free(&raw);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size)
{
    if (size < PREFIX_SIZE)
        return 0;
    uint64_t data_size = UINT64_C(64) << (input[0] % 9);
    uint8_t flags = input[1];

    /* The whole shared object: header page, then the data area, as ospreyd maps it. The data
     * area is its own allocation so that the sanitizers catch a read one byte past it. */
    struct osp_ring_header *header = calloc(1, OSP_RING_HEADER_SIZE);
    uint8_t *data = calloc(1, data_size);
    FUZZ_CHECK(header != NULL && data != NULL, "out of memory");
    osp_ring_header_init(header, data_size, 4242, 997, UINT64_C(1764410000000000000),
                         load_le(input + 2, 8), "");
    uint64_t tail = load_le(input + 10, 8);
    memcpy(header->platform, input + 18, sizeof header->platform);

    size_t supplied = size - PREFIX_SIZE < data_size ? size - PREFIX_SIZE : (size_t)data_size;
    memcpy(data, input + PREFIX_SIZE, supplied);
    const uint8_t *steps = input + PREFIX_SIZE + supplied;
    size_t step_count = (size - PREFIX_SIZE - supplied) / 2;

    char message[256];
    int rc = ospd_ring_validate(header, OSP_RING_HEADER_SIZE + data_size, message, sizeof message);
    FUZZ_CHECK(rc == 0, "a valid header was refused: %s", message);

    struct ospd_collector c;
    ospd_collector_init(&c);
    ospd_collector_set_identity(&c, header);
    if (flags & 2)
        c.memory_limit = UINT64_C(1024) << ((flags >> 2) & 15);
    /* A pool of two stack copies holding the data area's bytes again (proto/osp_ring.h, "Stack
     * copies"): the copies' walks over hostile stacks, and the samples they change. */
    static uint8_t pool[2 * 4096];
    static _Atomic uint64_t busy;
    for (size_t i = 0; i < sizeof pool; i++)
        pool[i] = data[i % data_size];
    c.copy_pool = pool;
    c.copy_count = 2;
    c.copy_size = 4096;
    c.copies_busy = &busy;

    if (step_count == 0) {
        drain(&c, data, data_size, &tail, tail + (supplied & ~(size_t)7));
    } else {
        uint64_t head = tail;
        for (size_t i = 0; i < step_count; i++) {
            int16_t step = (int16_t)load_le(steps + 2 * i, 2);
            head += (flags & 1) ? (uint64_t)(int64_t)step : (uint64_t)(int64_t)step * 8;
            if (!drain(&c, data, data_size, &tail, head))
                break;
        }
    }
    round_trip(&c);
    ospd_collector_free(&c);
    free(data);
    free(header);
    return 0;
}
