/* make-ring-seeds.c — writes the seed inputs of fuzz-ring (the input layout is described at the
 * top of fuzz-ring.c): well-formed event rings laid out by the shim's own record writer
 * (proto/osp_ring_write.h), so the fuzzer starts from records the parser accepts and mutates
 * from there, and a change of a record's layout reaches the seeds with the shim.
 *
 * Usage: make-ring-seeds OUTPUT_DIR (made if missing). Exit 0, or 1 with one line saying which
 * file could not be written.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "osp_ring_write.h"
#include "osp_unwind_step.h"

#define MAX_SHIFT 8u /* 64 << 8: 16 KiB, fuzz-ring's largest data area */

static uint8_t area[64u << MAX_SHIFT];

/* One seed being laid out: the prefix's fields and the data area written from `tail`. */
struct seed {
    struct osp_ring_cursor c;
    uint8_t shift, flags;
    uint64_t start_mono, tail;
};

static struct osp_ring_cursor *begin(struct seed *s, unsigned shift, unsigned flags,
                                     uint64_t start_mono, uint64_t tail)
{
    memset(area, 0, sizeof area);
    *s = (struct seed){.c = {.data = area, .size = 64u << shift, .head = tail},
                       .shift = (uint8_t)shift,
                       .flags = (uint8_t)flags,
                       .start_mono = start_mono,
                       .tail = tail};
    return &s->c;
}

static void put_le(FILE *f, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        fputc((int)(v >> (8 * i)) & 0xff, f);
}

/* Write dir/name: the prefix, then the data area. Without steps, the bytes the input supplies
 * are exactly [tail, head) when that needs no rotation, else the whole area and one drain of
 * them all; with steps, the whole area and those drains (int16, in 8-byte units). */
static int finish(struct seed *s, const char *dir, const char *name, const int16_t *steps,
                  size_t nsteps)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "make-ring-seeds: %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint64_t used = s->c.head - s->tail;
    put_le(f, s->shift, 1);
    put_le(f, s->flags, 1);
    put_le(f, s->start_mono, 8);
    put_le(f, s->tail, 8);
    char platform[OSP_PLATFORM_SIZE] = "linux-x86_64";
    fwrite(platform, 1, sizeof platform, f);
    if (nsteps == 0 && s->tail % s->c.size == 0 && used <= s->c.size) {
        fwrite(area, 1, used, f);
    } else {
        fwrite(area, 1, s->c.size, f);
        int16_t all = (int16_t)(used / 8);
        for (size_t i = 0; i < (nsteps ? nsteps : 1); i++)
            put_le(f, (uint16_t)(nsteps ? steps[i] : all), 2);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "make-ring-seeds: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

#define MONO  UINT64_C(1000000000)
#define END   UINT64_C(1764410001830000000)
#define MAIN  0x555555554000u
#define LIBC  0x7f0000000000u
#define MAINP "/home/u/hotspot"
#define LIBCP "/lib/x86_64-linux-gnu/libc.so.6"

static void put_main(struct osp_ring_cursor *c)
{
    osp_put_image(c, MAIN, MAIN, MAIN + 0x1000, 0x951, "x86_64", OSP_IMAGE_MAIN, MAINP);
}

static void put_libc(struct osp_ring_cursor *c)
{
    osp_put_image(c, LIBC, LIBC, LIBC + 0x28000, 0x178000, "x86_64", 0, LIBCP);
}

static void put_thread(struct osp_ring_cursor *c, uint32_t slot, uint32_t generation, int64_t fiber,
                       int32_t tid, const char *label)
{
    osp_put_thread_start(c, slot, generation, fiber, tid, label, (uint32_t)strlen(label));
}

static const uint64_t stack_a[] = {0x555555555123, 0x555555555456, 0x7f0000029d90};
static const uint64_t stack_b[] = {0x555555555200, 0x555555555456, 0x7f0000029d90};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make-ring-seeds OUTPUT_DIR\n");
        return 2;
    }
    const char *out = argv[1];
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "make-ring-seeds: %s: %s\n", out, strerror(errno));
        return 1;
    }
    struct seed s;
    struct osp_ring_cursor *c;
    int err = 0;

    /* One thread, two samples, an exit: the whole life of a short program. */
    c = begin(&s, 4, 0, MONO, 0);
    put_main(c);
    put_libc(c);
    put_thread(c, 0, 1, 0, 4242, "main");
    osp_put_sample(c, MONO + 1000, 0, 1, 0, 3, stack_a);
    osp_put_sample(c, MONO + 2000, 0, 1, 0, 3, stack_a);
    osp_put_exit(c, END, 0);
    err |= finish(&s, out, "seed-basic", NULL, 0);

    /* Two threads, a waiting one repeated, a thread that ends and whose slot is reused. */
    c = begin(&s, 5, 0, MONO, 0);
    put_main(c);
    put_thread(c, 0, 1, 0, 4242, "main");
    put_thread(c, 1, 1, 4243, 4243, "thread");
    osp_put_sample(c, MONO + 1000, 1, 1, 0, 3, stack_b);
    osp_put_sample(c, MONO + 1000, 0, 1, 1, 3, stack_a);
    osp_put_repeat(c, MONO + 2000, 0, 1);
    osp_put_repeat(c, MONO + 3000, 0, 1);
    osp_put_thread_end(c, 1, 1);
    put_thread(c, 1, 2, -1, 4250, "effect");
    osp_put_sample(c, MONO + 4000, 1, 2, 0, 3, stack_a);
    osp_put_exit(c, END, 3);
    err |= finish(&s, out, "seed-threads", NULL, 0);

    /* Records wrap around the end of a small data area (a pad record), drained in three steps
     * that each publish whole records: 40, then 24 + 40 (pad, sample), then 56 bytes. */
    c = begin(&s, 2, 0, MONO, 192);
    put_thread(c, 0, 1, 0, 4242, "main");
    osp_put_sample(c, MONO + 10, 0, 1, 0, 1, stack_a);
    osp_put_sample(c, MONO + 20, 0, 1, 0, 3, stack_b);
    err |= finish(&s, out, "seed-wrap", (const int16_t[]){5, 8, 7}, 3);

    /* Free-running counters far from 0, the tail in the middle of the data area. */
    c = begin(&s, 3, 0, MONO, (UINT64_C(1) << 40) + 448);
    put_thread(c, 3, 7, 0, 4242, "main");
    osp_put_sample(c, MONO + 10, 3, 7, 0, 3, stack_a);
    err |= finish(&s, out, "seed-counter-high", NULL, 0);

    /* A sample for a slot nobody registered, an orphan repeat, a label with invalid UTF-8. */
    c = begin(&s, 4, 0, MONO, 0);
    osp_put_sample(c, MONO, 9, 1, 0, 3, stack_a);
    osp_put_repeat(c, MONO, 9, 1);
    osp_put_thread_start(c, 0, 1, 0, 1,
                         "m\xff"
                         "a\xc3\0n",
                         6);
    osp_put_repeat(c, MONO, 0, 1);
    osp_put_sample(c, MONO - 5, 0, 1, 0, 2, (const uint64_t[]){(UINT64_C(1) << 63) + 1, 0x1234});
    err |= finish(&s, out, "seed-lost", NULL, 0);

    /* The longest image path the ABI allows, in a 16 KiB data area. */
    static char long_path[OSP_MAX_PATH + 1];
    memset(long_path, 'p', OSP_MAX_PATH);
    long_path[0] = '/';
    c = begin(&s, 8, 0, MONO, 0);
    osp_put_image(c, 0x400000, 0, 0x401000, 0x1000, "aarch64", OSP_IMAGE_MAIN, long_path);
    put_thread(c, 0, 1, 0, 4242, "main");
    osp_put_sample(c, MONO + 10, 0, 1, 0, 1, (const uint64_t[]){0x401010});
    err |= finish(&s, out, "seed-long-path", NULL, 0);

    /* The image list posted again at exit, as the shim does: the daemon keeps each once. */
    c = begin(&s, 5, 0, MONO, 0);
    put_main(c);
    put_libc(c);
    put_thread(c, 0, 1, 0, 4242, "main");
    osp_put_sample(c, MONO + 1000, 0, 1, 0, 3, stack_a);
    put_main(c);
    put_libc(c);
    osp_put_exit(c, END, 0);
    err |= finish(&s, out, "seed-images-again", NULL, 0);

    /* Weighted samples that say why their walks ended (proto/osp_unwind_step.h): the root, a
     * guess, not said, and a reason past the last (refused). */
    c = begin(&s, 5, 0, MONO, 0);
    put_main(c);
    put_thread(c, 0, 1, 0, 4242, "main");
    osp_put_sample_weighted(c, MONO + 1000, 0, 1, 0, 2, OSP_UNWIND_OUTERMOST, 3, stack_a);
    osp_put_sample_weighted(c, MONO + 2000, 0, 1, 0, 1, OSP_UNWIND_GUESSED, 3, stack_b);
    osp_put_sample_weighted(c, MONO + 3000, 0, 1, 1, 7, OSP_UNWIND_GO_ON, 3, stack_a);
    osp_put_sample_weighted(c, MONO + 4000, 0, 1, 0, 1, OSP_UNWIND_STOP_COUNT, 3, stack_b);
    osp_put_exit(c, END, 0);
    err |= finish(&s, out, "seed-stop", NULL, 0);

    /* Fibers a runtime declared (OSP_REC_FIBER): two, one met again, back to the thread. */
    c = begin(&s, 5, 0, MONO, 0);
    put_main(c);
    put_thread(c, 0, 1, 0, 4242, "main");
    osp_put_fiber(c, 0, 1, 1, "heavy", 5);
    osp_put_sample_weighted(c, MONO + 1000, 0, 1, 0, 3, OSP_UNWIND_OUTERMOST, 3, stack_a);
    osp_put_fiber(c, 0, 1, 2, "light", 5);
    osp_put_sample_weighted(c, MONO + 2000, 0, 1, 0, 1, OSP_UNWIND_OUTERMOST, 3, stack_b);
    osp_put_fiber(c, 0, 1, 1, "heavy", 5);
    osp_put_repeat(c, MONO + 3000, 0, 1);
    osp_put_fiber(c, 0, 1, 0, NULL, 0);
    osp_put_sample(c, MONO + 4000, 0, 1, 0, 3, stack_a);
    osp_put_exit(c, END, 0);
    err |= finish(&s, out, "seed-fibers", NULL, 0);

    /* Samples with a copy of their stack (proto/osp_ring.h, "Stack copies"): one kept as the
     * handler walked it (the fuzzer's collector has no pool), then one whose resume frame is
     * past its depth (refused). */
    c = begin(&s, 6, 0, MONO, 0);
    put_main(c);
    put_thread(c, 0, 1, 0, 4242, "main");
    struct osp_rec_stack_copy copy = {.sample.t_ns = MONO + 1000,
                                      .sample.slot = 0,
                                      .sample.generation = 1,
                                      .sample.state = OSP_STATE_ON_CPU,
                                      .sample.depth = 3,
                                      .sample.weight = 1,
                                      .sample.stop = OSP_UNWIND_GUESSED,
                                      .resume = 1,
                                      .pc = stack_b[1],
                                      .sp = 0x7ffd0000,
                                      .fp = 0x7ffd0040,
                                      .copy_len = 4096,
                                      .copy_base = 0x7ffd0000};
    osp_put_stack_copy(c, &copy, stack_b);
    copy.sample.t_ns = MONO + 2000;
    copy.resume = 3;
    osp_put_stack_copy(c, &copy, stack_b);
    osp_put_exit(c, END, 0);
    err |= finish(&s, out, "seed-stack-copy", NULL, 0);

    /* A sample record of 4400 bytes, longer than any valid record, in an 8 KiB data area. */
    static const uint8_t zeros[4392];
    struct osp_rec_header bare = {0};
    c = begin(&s, 7, 0, MONO, 0);
    osp_ring_put(c, OSP_REC_SAMPLE, &bare, sizeof bare, zeros, sizeof zeros);
    err |= finish(&s, out, "seed-oversized-record", NULL, 0);

    /* Many distinct stacks under an 8 KiB memory limit (flags: 2 | 3 << 2). */
    c = begin(&s, 6, 2 | 3 << 2, MONO, 0);
    put_thread(c, 0, 1, 0, 1, "main");
    for (uint32_t i = 0; i < 60; i++)
        osp_put_sample(c, MONO + i, 0, 1, i % 2, 2, (const uint64_t[]){0x1000 + i, 0x2000});
    err |= finish(&s, out, "seed-memory-limit", NULL, 0);

    return err ? 1 : 0;
}
