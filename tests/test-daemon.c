/* test-daemon.c — ospreyd's code without its process: the event-ring parser over hand-built
 * rings (threads, samples, repeats, images, padding and wrap-around, interning), its rejection of
 * corrupt and hostile rings, and the raw-profile writer (valid JSON version 1, atomic, clear
 * errors). The ospreyd binary itself is test-ospreyd.c's (suite e2e). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-fixture.h"
#include "osp_unwind_step.h"
#include "ospd.h"
#include "ospx.h"
#include "scratch.h"
#include "suite.h"

extern char **environ;

/* ------------------------------------------------------------------------------------------ */
static void collector_new(struct ospd_collector *c)
{
    ospd_collector_init(c);
    c->pid = 4242;
    c->rate_hz = 997;
    c->start_unix_ns = UINT64_C(1700000000000000000);
    c->start_mono_ns = 1000000;
    strcpy(c->platform, "linux-x86_64");
}

/* Parse everything in the ring, expecting success; returns the new tail. */
static uint64_t parse_ok(struct ospd_collector *c, const struct osp_ring_cursor *r, uint64_t tail)
{
    uint64_t new_tail = 0;
    int rc = ospd_parse(c, r->data, r->size, tail, r->head, &new_tail);
    ck_assert_msg(rc == 0, "parse failed: %s", c->error);
    return new_tail;
}

static void expect_rejected(const struct osp_ring_cursor *r, uint64_t tail, const char *what);

/* A ring of 1024 bytes whose thread `main` (tid 1) registered at `slot`, `generation`. */
static struct osp_ring_cursor ring_of_main(uint32_t slot, uint32_t generation)
{
    struct osp_ring_cursor r = ring_new(1024, 0);
    put_thread_start(&r, slot, generation, 0, 1, "main");
    return r;
}

/* A new collector that parsed the whole ring, whose memory is freed. */
static void parse_ring(struct ospd_collector *c, struct osp_ring_cursor *r)
{
    collector_new(c);
    parse_ok(c, r, 0);
    free(r->data);
    r->data = NULL;
}

static uint32_t sample_stack(const struct ospd_collector *c, uint64_t i)
{
    return c->samples[i].stack_state >> 1;
}
static uint32_t sample_state(const struct ospd_collector *c, uint64_t i)
{
    return c->samples[i].stack_state & 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing. */

START_TEST(threads_samples_and_repeats)
{
    struct osp_ring_cursor r = ring_new(4096, 0);
    uint64_t busy[] = {0x401010, 0x401200, 0x401300};
    uint64_t idle[] = {0x7f0000001000, 0x401400};
    put_thread_start(&r, 0, 1, 0, 100, "main");
    put_thread_start(&r, 1, 1, 101, 101, "worker");
    osp_put_sample(&r, 2000000, 1, 1, OSP_STATE_ON_CPU, 3, busy);
    osp_put_sample(&r, 2000000, 0, 1, OSP_STATE_WAITING, 2, idle);
    osp_put_repeat(&r, 3000000, 0, 1);
    osp_put_sample(&r, 3000000, 1, 1, OSP_STATE_ON_CPU, 3, busy);
    osp_put_thread_end(&r, 1, 1);

    struct ospd_collector c;
    collector_new(&c);
    ck_assert_uint_eq(parse_ok(&c, &r, 0), r.head);
    ck_assert_uint_eq(c.thread_count, 2);
    ck_assert_str_eq(c.threads[0].label, "main");
    ck_assert_int_eq(c.threads[0].fiber, 0);
    ck_assert_str_eq(c.threads[1].label, "worker");
    ck_assert_int_eq(c.threads[1].tid, 101);
    ck_assert_uint_eq(c.sample_count, 4);
    ck_assert_uint_eq(c.stacks.count, 2);
    /* sample 0: worker, busy stack, on-CPU, 1 ms after start */
    ck_assert_uint_eq(c.samples[0].t_rel_ns, 1000000);
    ck_assert_uint_eq(c.samples[0].thread, 1);
    ck_assert_uint_eq(sample_state(&c, 0), 0);
    /* the repeat reuses main's waiting stack */
    ck_assert_uint_eq(c.samples[2].thread, 0);
    ck_assert_uint_eq(sample_stack(&c, 2), sample_stack(&c, 1));
    ck_assert_uint_eq(sample_state(&c, 2), 1);
    ck_assert_uint_eq(c.samples[2].t_rel_ns, 2000000);
    /* the same pc sequence is the same stack */
    ck_assert_uint_eq(sample_stack(&c, 3), sample_stack(&c, 0));
    uint32_t depth;
    const uint64_t *pcs = ospd_stack_pcs(&c.stacks, sample_stack(&c, 0), &depth);
    ck_assert_uint_eq(depth, 3);
    ck_assert_mem_eq(pcs, busy, sizeof busy);
    ck_assert_uint_eq(c.lost, 0);
    ck_assert(!c.exit_seen);
    ospd_collector_free(&c);
    free(r.data);
}
END_TEST

/* Why each stack's walk ended (the weighted sample's stop): kept per stack, a guess giving way
 * to the same frames found again by rows, "not said" changing nothing, a reason past the last
 * refused; written as the raw file's stack_ends, and left out when no walk said. */
START_TEST(stacks_keep_why_their_walks_ended)
{
    struct osp_ring_cursor r = ring_new(4096, 0);
    uint64_t busy[] = {0x401010, 0x401200, 0x401300};
    uint64_t idle[] = {0x7f0000001000, 0x401400};
    uint64_t deep[] = {0x401010, 0x401500};
    put_thread_start(&r, 0, 1, 0, 100, "main");
    osp_put_sample_weighted(&r, 2000000, 0, 1, 0, 1, OSP_UNWIND_GUESSED, 3, busy);
    osp_put_sample_weighted(&r, 2000000, 0, 1, 1, 4, OSP_UNWIND_GO_ON, 2, idle);
    osp_put_sample_weighted(&r, 3000000, 0, 1, 0, 1, OSP_UNWIND_OUTERMOST, 3, busy);
    osp_put_sample_weighted(&r, 4000000, 0, 1, 0, 1, OSP_UNWIND_DEPTH, 2, deep);
    osp_put_sample_weighted(&r, 5000000, 0, 1, 0, 1, OSP_UNWIND_GUESSED, 2, deep);
    struct ospd_collector c;
    collector_new(&c);
    ck_assert_uint_eq(parse_ok(&c, &r, 0), r.head);
    ck_assert_uint_eq(c.stacks.count, 3);
    ck_assert_uint_eq(ospd_stack_end(&c.stacks, sample_stack(&c, 0)), OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(ospd_stack_end(&c.stacks, sample_stack(&c, 1)), 0);
    ck_assert_uint_eq(ospd_stack_end(&c.stacks, sample_stack(&c, 3)), OSP_UNWIND_DEPTH);

    char *dir = temp_dir();
    char *path = join(dir, "raw.json");
    char err[512];
    ck_assert_int_eq(ospd_raw_write(&c, path, err, sizeof err), 0);
    json_t *root = load_json(path);
    json_t *ends = json_object_get(root, "stack_ends");
    ck_assert_uint_eq(json_array_size(ends), 3);
    ck_assert_int_eq(json_integer_value(json_array_get(ends, sample_stack(&c, 0))),
                     OSP_UNWIND_OUTERMOST);
    ck_assert_int_eq(json_integer_value(json_array_get(ends, sample_stack(&c, 1))), 0);
    json_decref(root);
    ospd_collector_free(&c);

    /* No walk said: no stack_ends (an older shim's samples). */
    collector_new(&c);
    ck_assert_int_eq(ospd_intern(&c.stacks, busy, 3), 0);
    ck_assert_int_eq(ospd_raw_write(&c, path, err, sizeof err), 0);
    root = load_json(path);
    ck_assert_ptr_null(json_object_get(root, "stack_ends"));
    json_decref(root);
    ospd_collector_free(&c);
    free(path);
    remove_dir(dir);
    free(r.data);

    /* A reason past the last is refused, as any bad field. */
    r = ring_new(4096, 0);
    put_thread_start(&r, 0, 1, 0, 100, "main");
    osp_put_sample_weighted(&r, 2000000, 0, 1, 0, 1, OSP_UNWIND_STOP_COUNT, 3, busy);
    expect_rejected(&r, 0, "stop reason 6");
    free(r.data);
}
END_TEST

START_TEST(repeat_without_sample_is_dropped)
{
    struct osp_ring_cursor r = ring_of_main(3, 7);
    uint64_t pcs[] = {0x401000};
    osp_put_repeat(&r, 5, 3, 7);
    osp_put_sample(&r, 6, 9, 1, 0, 1, pcs); /* slot 9 never registered */
    osp_put_sample(&r, 7, 3, 6, 0, 1, pcs); /* stale generation */
    osp_put_sample(&r, 8, 3, 7, 0, 1, pcs);
    osp_put_repeat(&r, 9, 3, 7);

    struct ospd_collector c;
    parse_ring(&c, &r);
    ck_assert_uint_eq(c.orphan_repeats, 1);
    ck_assert_uint_eq(c.unknown_thread, 2);
    ck_assert_uint_eq(c.lost, 3);
    ck_assert_uint_eq(c.sample_count, 2);
    c.shim_dropped = 5;
    ck_assert_uint_eq(ospd_dropped_total(&c), 8);
    ospd_collector_free(&c);
}
END_TEST

START_TEST(slot_reuse_makes_a_new_thread)
{
    struct osp_ring_cursor r = ring_new(1024, 0);
    uint64_t pcs[] = {0x401000};
    put_thread_start(&r, 0, 1, 5, 50, "fiber");
    osp_put_sample(&r, 10, 0, 1, 0, 1, pcs);
    osp_put_thread_end(&r, 0, 1);
    osp_put_sample(&r, 11, 0, 1, 0, 1, pcs); /* captured before the thread left: still its own */
    put_thread_start(&r, 0, 2, 6, 60, "fiber");
    osp_put_repeat(&r, 12, 0, 2); /* the new registration has no stack yet */
    osp_put_sample(&r, 13, 0, 2, 0, 1, pcs);
    osp_put_sample(&r, 14, 0, 1, 0, 1, pcs); /* the old generation is gone now */

    struct ospd_collector c;
    parse_ring(&c, &r);
    ck_assert_uint_eq(c.thread_count, 2);
    ck_assert_int_eq(c.threads[1].fiber, 6);
    ck_assert_uint_eq(c.sample_count, 3);
    ck_assert_uint_eq(c.samples[1].thread, 0);
    ck_assert_uint_eq(c.samples[2].thread, 1);
    ck_assert_uint_eq(c.lost, 2);
    ospd_collector_free(&c);
}
END_TEST

/* A fiber its runtime declared takes the samples after its FIBER record: an entry per declared
 * id on the registration (its label, the thread's tid), met again when the runtime switches
 * back to it; fiber 0 gives the samples back to the thread; a record naming no live
 * registration changes nothing; a bad label length rejects the ring. */
START_TEST(declared_fibers_take_their_samples)
{
    struct osp_ring_cursor r = ring_new(4096, 0);
    uint64_t pcs[] = {0x401000};
    put_thread_start(&r, 0, 1, 0, 100, "main");
    osp_put_sample(&r, 10, 0, 1, 0, 1, pcs);
    osp_put_fiber(&r, 0, 1, 1, "heavy", 5);
    osp_put_sample(&r, 11, 0, 1, 0, 1, pcs);
    osp_put_sample(&r, 12, 0, 1, 0, 1, pcs);
    osp_put_fiber(&r, 0, 1, 2, "light", 5);
    osp_put_sample(&r, 13, 0, 1, 0, 1, pcs);
    osp_put_fiber(&r, 0, 1, 1, "heavy", 5);
    osp_put_repeat(&r, 14, 0, 1);
    osp_put_fiber(&r, 0, 1, 0, NULL, 0);
    osp_put_sample(&r, 15, 0, 1, 0, 1, pcs);
    osp_put_fiber(&r, 3, 1, 9, "nobody", 6); /* no such registration */
    osp_put_sample(&r, 16, 0, 1, 0, 1, pcs);

    struct ospd_collector c;
    collector_new(&c);
    parse_ok(&c, &r, 0);
    ck_assert_uint_eq(c.thread_count, 3);
    ck_assert_int_eq(c.threads[1].fiber, 1);
    ck_assert_str_eq(c.threads[1].label, "heavy");
    ck_assert_int_eq(c.threads[1].tid, 100);
    ck_assert(c.threads[1].declared && !c.threads[0].declared);
    ck_assert_int_eq(c.threads[2].fiber, 2);
    ck_assert_str_eq(c.threads[2].label, "light");
    uint32_t expect[] = {0, 1, 1, 2, 1, 0, 0};
    ck_assert_uint_eq(c.sample_count, 7);
    for (uint32_t i = 0; i < 7; i++)
        ck_assert_uint_eq(c.samples[i].thread, expect[i]);
    ck_assert_uint_eq(c.lost, 0);
    ospd_collector_free(&c);
    free(r.data);

    r = ring_new(1024, 0);
    put_thread_start(&r, 0, 1, 0, 100, "main");
    struct osp_rec_fiber bad = {.slot = 0, .generation = 1, .fiber = 1, .label_len = 65};
    char label[72] = {0};
    osp_ring_put(&r, OSP_REC_FIBER, &bad, sizeof bad, label, 65);
    collector_new(&c);
    uint64_t tail;
    ck_assert_int_eq(ospd_parse(&c, r.data, r.size, 0, r.head, &tail), -EPROTO);
    ck_assert_ptr_nonnull(strstr(c.error, "fiber label_len 65"));
    ospd_collector_free(&c);
    free(r.data);
}
END_TEST

START_TEST(images_dedupe_and_main_names_exe)
{
    struct osp_ring_cursor r = ring_new(8192, 0);
    put_image(&r, 0x7f0000000000, 0x7f0000001000, 0x1000, 0, "/lib/libc.so.6");
    put_image(&r, 0x555555554000, 0x555555555000, 0x2000, OSP_IMAGE_MAIN, "/usr/bin/prog");
    put_image(&r, 0x7f0000000000, 0x7f0000001000, 0x1000, 0, "/lib/libc.so.6"); /* again */
    put_image(&r, 0x7e0000000000, 0x7e0000001000, 0x1000, 0, "/lib/libc.so.6"); /* reloaded */

    struct ospd_collector c;
    parse_ring(&c, &r);
    ck_assert_uint_eq(c.image_count, 3);
    ck_assert(c.images[1].main);
    ck_assert_str_eq(c.images[1].path, "/usr/bin/prog");
    ck_assert_str_eq(c.images[1].arch, "x86_64");
    ck_assert_uint_eq(c.images[1].text_size, 0x2000);
    ospd_collector_free(&c);
}
END_TEST

/* An image record with a time: seen at `at_mono_ns`, or seen gone with OSP_IMAGE_UNLOADED. */
static void put_timed_image(struct osp_ring_cursor *r, uint64_t base, uint32_t flags,
                            uint64_t at_mono_ns, const char *path)
{
    struct osp_rec_image rec = {.base = base,
                                .slide = base,
                                .text = base + 0x1000,
                                .text_size = 0x1000,
                                .arch = "x86_64",
                                .flags = flags,
                                .path_len = (uint32_t)strlen(path),
                                .at_mono_ns = at_mono_ns};
    osp_ring_put(r, OSP_REC_IMAGE, &rec, sizeof rec, path, rec.path_len);
}

/* liba.so unloaded, libb.so at its address, then liba.so again: three images, with the times
 * on the samples' axis; the unload names the image still mapped. */
START_TEST(images_unloaded_and_replaced_carry_times)
{
    struct osp_ring_cursor r = ring_new(8192, 0);
    const uint64_t base = 0x7f0000000000, start = 1000000; /* collector_new's start_mono_ns */
    put_timed_image(&r, base, 0, 0, "/lib/liba.so");
    put_timed_image(&r, base, OSP_IMAGE_UNLOADED, start + 5000, "/lib/liba.so");
    put_timed_image(&r, base, 0, start + 6000, "/lib/libb.so");
    put_timed_image(&r, base, 0, start + 9000, "/lib/liba.so");
    put_timed_image(&r, base, 0, start + 9500, "/lib/liba.so"); /* again: the same one */
    /* Closed and opened again with nothing between: the same image, mapped to the end. */
    put_timed_image(&r, base, OSP_IMAGE_UNLOADED, start + 9600, "/lib/liba.so");
    put_timed_image(&r, base, 0, start + 9700, "/lib/liba.so");

    struct ospd_collector c;
    parse_ring(&c, &r);
    ck_assert_uint_eq(c.image_count, 3);
    ck_assert_str_eq(c.images[0].path, "/lib/liba.so");
    ck_assert_uint_eq(c.images[0].loaded_ns, 0);
    ck_assert_uint_eq(c.images[0].unloaded_ns, 5000);
    ck_assert_str_eq(c.images[1].path, "/lib/libb.so");
    ck_assert_uint_eq(c.images[1].loaded_ns, 6000);
    ck_assert_uint_eq(c.images[1].unloaded_ns, 0);
    ck_assert_str_eq(c.images[2].path, "/lib/liba.so");
    ck_assert_uint_eq(c.images[2].loaded_ns, 9000);
    ck_assert_uint_eq(c.images[2].unloaded_ns, 0);
    ospd_collector_free(&c);
}
END_TEST

/* Records that wrap around the end of a small ring, parsed in several drains with the
 * counters far beyond 2^32, come out exactly as written. */
START_TEST(pad_and_wrap_across_the_end)
{
    uint64_t start = (UINT64_C(5) << 32) + 256 - 40; /* 40 bytes before the end of the area */
    struct osp_ring_cursor r = ring_new(256, start);
    struct ospd_collector c;
    collector_new(&c);
    uint64_t tail = start;
    put_thread_start(&r, 0, 1, 0, 1, "main"); /* 40 bytes: exactly up to the end */
    tail = parse_ok(&c, &r, tail);
    uint64_t expected_samples = 0;
    for (uint64_t round = 0; round < 50; round++) {
        uint64_t pcs[5] = {0x401000 + round % 7, 0x402000, 0x403000, 0x404000, 0x405000};
        uint32_t depth = 1 + (uint32_t)(round % 5);
        osp_put_sample(&r, 1000000 + round, 0, 1, (uint32_t)(round & 1), depth, pcs);
        osp_put_repeat(&r, 1000000 + round, 0, 1);
        expected_samples += 2;
        tail = parse_ok(&c, &r, tail);
        ck_assert_uint_eq(tail, r.head);
        ck_assert_uint_eq(c.sample_count, expected_samples);
        uint32_t got_depth;
        const uint64_t *got =
            ospd_stack_pcs(&c.stacks, sample_stack(&c, c.sample_count - 2), &got_depth);
        ck_assert_uint_eq(got_depth, depth);
        ck_assert_mem_eq(got, pcs, depth * 8u);
        ck_assert_uint_eq(sample_stack(&c, c.sample_count - 1),
                          sample_stack(&c, c.sample_count - 2));
    }
    ck_assert_uint_gt(r.head - start, 4 * 256); /* it really wrapped several times */
    ck_assert_uint_eq(c.lost, 0);
    ospd_collector_free(&c);
    free(r.data);
}
END_TEST

START_TEST(exit_record_ends_the_stream)
{
    struct osp_ring_cursor r = ring_of_main(0, 1);
    uint64_t pcs[] = {0x401000};
    osp_put_exit(&r, 1700000001000000000, 17);
    uint64_t after_exit = r.head;
    osp_put_sample(&r, 10, 0, 1, 0, 1, pcs); /* nothing follows an exit record */

    struct ospd_collector c;
    collector_new(&c);
    ck_assert_uint_eq(parse_ok(&c, &r, 0), after_exit);
    ck_assert(c.exit_seen);
    ck_assert_uint_eq(c.end_unix_ns, 1700000001000000000);
    ck_assert_uint_eq(c.shim_dropped, 17);
    ck_assert_uint_eq(c.sample_count, 0);
    ospd_collector_free(&c);
    free(r.data);
}
END_TEST

START_TEST(interning_is_stable_across_growth)
{
    struct ospd_interner in;
    ospd_interner_init(&in);
    enum { N = 20000 };
    for (uint32_t i = 0; i < N; i++) {
        uint64_t pcs[3] = {0x400000 + i, 0x500000 + i % 13, 0x600000};
        ck_assert_int_eq(ospd_intern(&in, pcs, 1 + i % 3), (int64_t)i);
    }
    ck_assert_uint_eq(in.count, N);
    for (uint32_t i = 0; i < N; i += 7) {
        uint64_t pcs[3] = {0x400000 + i, 0x500000 + i % 13, 0x600000};
        ck_assert_int_eq(ospd_intern(&in, pcs, 1 + i % 3), (int64_t)i);
        uint64_t other[3] = {0x400000 + i, 0x500000 + i % 13, 0x600001};
        if (i % 3 == 2) /* same prefix, different last frame: a different stack */
            ck_assert_int_eq(ospd_intern(&in, other, 3), (int64_t)in.count - 1);
    }
    /* a prefix is not the same stack as the whole */
    uint64_t pcs[3] = {0x400002, 0x500002, 0x600000};
    ck_assert_int_ne(ospd_intern(&in, pcs, 2), 2);
    ospd_interner_free(&in);
}
END_TEST

/* Past the memory budget, known stacks still count, new ones and growth are dropped. */
START_TEST(memory_budget_drops_and_counts)
{
    struct osp_ring_cursor r = ring_new(65536, 0);
    uint64_t known[] = {0x401000, 0x402000};
    uint64_t novel[] = {0x403000};
    put_thread_start(&r, 0, 1, 0, 1, "main");
    for (int i = 0; i < 300; i++)
        osp_put_sample(&r, 10, 0, 1, 0, 2, known);
    osp_put_sample(&r, 11, 0, 1, 0, 1, novel);
    struct ospd_collector c;
    collector_new(&c);
    c.memory_limit = 1; /* only the first allocation of each table is allowed */
    parse_ok(&c, &r, 0);
    ck_assert_uint_eq(c.sample_count, c.samples_cap);
    ck_assert_uint_eq(c.stacks.count, 1);
    ck_assert_uint_eq(c.lost, 301 - c.sample_count);
    ck_assert_uint_gt(c.lost, 1);
    ospd_collector_free(&c);
    free(r.data);
}
END_TEST

START_TEST(addresses_beyond_user_space_end_the_stack)
{
    struct osp_ring_cursor r = ring_new(1024, 0);
    uint64_t pcs[] = {0x401000, 0x402000, UINT64_C(0xffffffffff600000), 0x403000};
    uint64_t kernel[] = {UINT64_C(0xffffffff81000000)};
    put_thread_start(&r, 0, 1, 0, 1, "main");
    osp_put_sample(&r, 10, 0, 1, 0, 4, pcs);
    osp_put_sample(&r, 11, 0, 1, 0, 1, kernel);
    struct ospd_collector c;
    parse_ring(&c, &r);
    ck_assert_uint_eq(c.sample_count, 1);
    uint32_t depth;
    ospd_stack_pcs(&c.stacks, 0, &depth);
    ck_assert_uint_eq(depth, 2);
    ck_assert_uint_eq(c.lost, 1);
    ospd_collector_free(&c);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Corrupt and hostile rings. */

/* Parse a ring expected to be rejected with a message containing `what`. */
static void expect_rejected(const struct osp_ring_cursor *r, uint64_t tail, const char *what)
{
    struct ospd_collector c;
    collector_new(&c);
    uint64_t new_tail = UINT64_MAX;
    int rc = ospd_parse(&c, r->data, r->size, tail, r->head, &new_tail);
    ck_assert_int_eq(rc, -EPROTO);
    ck_assert_msg(strstr(c.error, what) != NULL, "error \"%s\" does not mention \"%s\"", c.error,
                  what);
    ck_assert_ptr_null(strchr(c.error, '\n'));
    /* the tail stays put, or moves past whole records only */
    ck_assert(new_tail == tail || (new_tail > tail && new_tail <= r->head));
    /* rejected stays rejected */
    ck_assert_int_eq(ospd_parse(&c, r->data, r->size, new_tail, r->head, &new_tail), -EPROTO);
    ospd_collector_free(&c);
}

/* A ring with a thread registered, then the raw bytes of one record. */
static struct osp_ring_cursor ring_with_raw(const void *rec, uint32_t size, uint32_t claimed_size)
{
    struct osp_ring_cursor r = ring_new(4096, 0);
    put_thread_start(&r, 0, 1, 0, 1, "main");
    uint64_t at = r.head;
    ring_put(&r, rec, size);
    struct osp_rec_header h;
    memcpy(&h, r.data + at, sizeof h);
    h.size = claimed_size;
    memcpy(r.data + at, &h, sizeof h);
    return r;
}

/* A ring holding one record, `record` (its first `size` bytes) at the start of buf[buf_size]
 * and `used` bytes written: rejected as expect_rejected says, naming `what`. */
static void record_rejected(uint8_t *buf, size_t buf_size, const void *record, size_t size,
                            uint64_t used, const char *what)
{
    ck_assert_uint_le(size, buf_size);
    memcpy(buf, record, size);
    struct osp_ring_cursor r = ring_with_raw(buf, used, used);
    expect_rejected(&r, 0, what);
    free(r.data);
}

START_TEST(corrupt_record_sizes_are_rejected)
{
    struct osp_rec_sample s = {.h = {OSP_REC_SAMPLE, 40}, .slot = 0, .generation = 1, .depth = 1};
    uint8_t buf[64] = {0};
    memcpy(buf, &s, sizeof s);
    struct {
        uint32_t claimed;
        const char *what;
    } cases[] = {
        {0, "size 0"},
        {4, "size 4"},
        {12, "size 12"},
        {48, "runs past head"},
        {1u << 20, "crosses the end"},
        {3968, "runs past head"},
        {UINT32_MAX - 7, "crosses the end"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct osp_ring_cursor r = ring_with_raw(buf, 40, cases[i].claimed);
        expect_rejected(&r, 0, cases[i].what);
        free(r.data);
    }
    /* a well-formed 48-byte record whose depth says it should be 40 */
    struct osp_ring_cursor r = ring_with_raw(buf, 48, 48);
    expect_rejected(&r, 0, "48 bytes for depth 1");
    free(r.data);
}
END_TEST

START_TEST(corrupt_depths_lengths_and_fields_are_rejected)
{
    uint8_t buf[sizeof(struct osp_rec_image) + 64] = {0};
    struct osp_rec_sample s = {.h = {OSP_REC_SAMPLE, 40}, .generation = 1, .depth = 0};
    record_rejected(buf, sizeof buf, &s, sizeof s, 40, "depth 0");

    s.depth = 1000;
    record_rejected(buf, sizeof buf, &s, sizeof s, 40, "depth 1000");

    s.depth = 1;
    s.state = 7;
    record_rejected(buf, sizeof buf, &s, sizeof s, 40, "state 7");

    s.state = 0;
    s.slot = OSPD_MAX_SLOTS + 5;
    record_rejected(buf, sizeof buf, &s, sizeof s, 40, "slot");

    struct osp_rec_thread_start t = {.h = {OSP_REC_THREAD_START, 32}, .label_len = 65};
    memset(buf, 0, sizeof buf);
    record_rejected(buf, sizeof buf, &t, sizeof t, 32, "label_len 65");

    t.label_len = 9; /* needs 40 bytes, claims 32 */
    record_rejected(buf, sizeof buf, &t, sizeof t, 32, "9-byte label");

    struct osp_rec_image im = {.h = {OSP_REC_IMAGE, sizeof im}, .path_len = 5000};
    memset(buf, 0, sizeof buf);
    record_rejected(buf, sizeof buf, &im, sizeof im, sizeof im, "path_len 5000");

    struct osp_rec_header unknown = {.type = 99, .size = 8};
    record_rejected(buf, sizeof buf, &unknown, sizeof unknown, 8, "unknown type 99");

    struct osp_rec_exit e = {.h = {OSP_REC_EXIT, 16}}; /* neither 24 nor 32 */
    record_rejected(buf, sizeof buf, &e, sizeof e, 16, "exit record of 16 bytes");
}
END_TEST

START_TEST(corrupt_head_and_tail_are_rejected)
{
    struct osp_ring_cursor r = ring_new(1024, 4096);
    put_thread_start(&r, 0, 1, 0, 1, "main");
    uint64_t head = r.head;

    r.head = 4096 - 8; /* head behind tail */
    expect_rejected(&r, 4096, "behind tail");
    r.head = 4096 + 1024 + 8; /* more than the data area ahead */
    expect_rejected(&r, 4096, "more than the 1024-byte data area");
    r.head = UINT64_MAX - 7;
    expect_rejected(&r, 4096, "ahead of tail");
    r.head = head + 4; /* misaligned */
    expect_rejected(&r, 4096, "not 8-byte aligned");

    /* head moving backwards between drains */
    r.head = head;
    struct ospd_collector c;
    collector_new(&c);
    uint64_t tail = parse_ok(&c, &r, 4096);
    ck_assert_int_eq(ospd_parse(&c, r.data, r.size, tail, head - 8, &tail), -EPROTO);
    ck_assert_ptr_nonnull(strstr(c.error, "backwards"));
    ospd_collector_free(&c);
    free(r.data);
}
END_TEST

/* Small deterministic generator for the fuzz cases. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = (*state += UINT64_C(0x9e3779b97f4a7c15));
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* Random bytes, and valid rings with random bytes flipped, with random counters: the parser
 * either accepts or rejects with a message; it never reads outside the data area (valgrind
 * and the sanitizers watch the heap block) and never loops forever. */
START_TEST(fuzzed_rings_never_crash)
{
    uint64_t seed = 12345;
    unsigned accepted = 0, rejected = 0;
    for (int iteration = 0; iteration < 3000; iteration++) {
        uint64_t size = UINT64_C(64) << (next_random(&seed) % 6);
        struct osp_ring_cursor r = ring_new(size, (next_random(&seed) % 4096) * 8);
        uint64_t tail = r.head;
        if (iteration % 2 == 0) {
            for (uint64_t i = 0; i < size; i++)
                r.data[i] = (uint8_t)next_random(&seed);
            r.head += (next_random(&seed) % (size / 8 + 2)) * 8;
        } else {
            uint64_t pcs[8] = {0x401000, 0x402000, 0x403000, 0x404000, 5, 6, 7, 8};
            put_thread_start(&r, 0, 1, 0, 1, "main");
            while (r.head - tail + 96 <= size) {
                if (next_random(&seed) % 3 == 0)
                    osp_put_repeat(&r, 9, 0, 1);
                else
                    osp_put_sample(&r, 9, 0, 1, 0, 1 + (uint32_t)(next_random(&seed) % 8), pcs);
            }
            for (int flips = 0; flips < 4; flips++)
                r.data[next_random(&seed) % size] ^= (uint8_t)(1u << (next_random(&seed) % 8));
        }
        if (iteration % 7 == 0)
            r.head = tail + next_random(&seed); /* counters that make no sense */
        struct ospd_collector c;
        collector_new(&c);
        uint64_t new_tail;
        int rc = ospd_parse(&c, r.data, r.size, tail, r.head, &new_tail);
        if (rc == 0) {
            accepted++;
            ck_assert_uint_eq(new_tail, c.exit_seen ? new_tail : r.head);
        } else {
            rejected++;
            ck_assert_int_eq(rc, -EPROTO);
            ck_assert_uint_gt(strlen(c.error), 0);
        }
        ospd_collector_free(&c);
        free(r.data);
    }
    ck_assert_uint_gt(accepted, 0);
    ck_assert_uint_gt(rejected, 0);
}
END_TEST

/* The header h is refused (-EPROTO) in an object of `object` bytes, with an error naming
 * `needle` (NULL: any). */
static void header_refused(const struct osp_ring_header *h, uint64_t object, const char *needle)
{
    char err[OSPD_ERROR_SIZE];
    ck_assert_int_eq(ospd_ring_validate(h, object, err, sizeof err), -EPROTO);
    ck_assert_msg(needle == NULL || strstr(err, needle) != NULL, "no \"%s\" in: %s", needle, err);
}
/* REFUSED_HEADER(field, value, needle): in header_validation, the good header with `field` set
 * to value is refused, naming `needle`. */
#define REFUSED_HEADER(field, value, needle)                                                       \
    do {                                                                                           \
        memcpy(&h, &good, sizeof h);                                                               \
        h.field = (value);                                                                         \
        header_refused(&h, object, (needle));                                                      \
    } while (0)

START_TEST(header_validation)
{
    static struct osp_ring_header h;
    char err[OSPD_ERROR_SIZE];
    uint64_t object = OSP_RING_HEADER_SIZE + 65536;
    struct osp_ring_header good = {.magic = OSP_RING_MAGIC,
                                   .abi_version = OSP_RING_ABI_VERSION,
                                   .header_size = OSP_RING_HEADER_SIZE,
                                   .data_offset = OSP_RING_HEADER_SIZE,
                                   .data_size = 65536,
                                   .pid = 1,
                                   .rate_hz = 997};
    memcpy(&h, &good, sizeof h);
    ck_assert_int_eq(ospd_ring_validate(&h, object, err, sizeof err), 0);

    REFUSED_HEADER(magic, 0x1234, "magic");
    REFUSED_HEADER(abi_version, 2, "ABI version 2");
    REFUSED_HEADER(data_size, 65536 + 8, "power of two");
    REFUSED_HEADER(data_size, UINT64_C(1) << 40, NULL);
    REFUSED_HEADER(data_size, 131072, "exceeds"); /* does not fit the object */
    REFUSED_HEADER(data_offset, 8, "data_offset");
    REFUSED_HEADER(header_size, 64, NULL);
    REFUSED_HEADER(rate_hz, 0, "rate_hz");
    memcpy(&h, &good, sizeof h);
    ck_assert_int_eq(ospd_ring_validate(&h, 100, err, sizeof err), -EPROTO);
}
END_TEST

START_TEST(labels_become_valid_utf8)
{
    char *s = ospd_utf8_sanitize("ok\xff\xc3\xa9\xed\xa0\x80\0z", 10);
    ck_assert_str_eq(s, "ok\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz");
    free(s);
    s = ospd_utf8_sanitize("\xf0\x9f\x98\x80\xe2\x82", 6); /* emoji, then a truncated sequence */
    ck_assert_str_eq(s, "\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbd");
    free(s);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Raw profile. */

/* The exporters' reader accepts the file; returns what it read (free with ospx_raw_free). */
static struct ospx_raw read_with_exporters(const char *path)
{
    struct ospx_raw raw;
    struct ospx_error err = {0};
    int rc = ospx_raw_read(path, &raw, &err);
    ck_assert_msg(rc == 0, "%s:%d:%d: %s", err.file, err.line, err.column, err.text);
    return raw;
}

/* The whole content of a file, NUL-terminated (free it). */
static char *slurp(const char *path, size_t *len)
{
    char *text = scratch_read(path, len);
    ck_assert_msg(text != NULL, "%s: %s", path, strerror(errno));
    return text;
}

/* The raw file matches tests/data/daemon/<name>/expected byte for byte (the format is a
 * contract; a change to it must show up as a change to the golden file).
 * OSP_UPDATE_GOLDEN=1 rewrites the golden file instead. */
static void expect_golden(const char *path, const char *name)
{
    char golden[1024];
    snprintf(golden, sizeof golden, "%s/data/daemon/%s/expected", OSP_TEST_SOURCE_DIR, name);
    size_t got_len, want_len;
    char *got = slurp(path, &got_len);
    if (getenv("OSP_UPDATE_GOLDEN") != NULL) {
        FILE *f = fopen(golden, "wb");
        ck_assert_ptr_nonnull(f);
        fwrite(got, 1, got_len, f);
        fclose(f);
    }
    char *want = slurp(golden, &want_len);
    ck_assert_msg(got_len == want_len && memcmp(got, want, got_len) == 0, "%s differs from %s:\n%s",
                  path, golden, got);
    free(got);
    free(want);
}

START_TEST(raw_profile_is_valid_json_version_1)
{
    struct osp_ring_cursor r = ring_new(8192, 0);
    uint64_t busy[] = {0x555555555123, 0x555555555456};
    uint64_t wait[] = {0x7f0000001100, 0x555555555789};
    put_image(&r, 0x555555554000, 0x555555555000, 0x1000, OSP_IMAGE_MAIN, "/usr/bin/prog");
    put_image(&r, 0x7f0000000000, 0x7f0000001000, 0x2000, 0, "/lib/x86_64-linux-gnu/libc.so.6");
    put_thread_start(&r, 0, 1, 0, 10, "main");
    put_thread_start(&r, 1, 1, 11, 11, "work\"er\xff");
    osp_put_sample(&r, 1500000, 1, 1, 0, 2, busy);
    osp_put_sample(&r, 1600000, 0, 1, 1, 2, wait);
    osp_put_repeat(&r, 2600000, 0, 1);
    osp_put_exit(&r, UINT64_C(1700000002000000000), 3);

    struct ospd_collector c;
    collector_new(&c);
    parse_ok(&c, &r, 0);
    c.exit_status = OSPD_EXIT_EXITED;
    c.lost = 2;
    char *dir = temp_dir();
    char *path = join(dir, "raw.json");
    char err[512];
    ck_assert_int_eq(ospd_raw_write(&c, path, err, sizeof err), 0);
    ck_assert_int_eq(count_entries(dir), 1); /* no temp file left */
    expect_golden(path, "two-threads");

    json_t *root = load_json(path);
    ck_assert_int_eq(int_at(root, "version"), 1);
    ck_assert_int_eq(int_at(root, "pid"), 4242);
    ck_assert_str_eq(json_string_value(json_object_get(root, "exe")), "/usr/bin/prog");
    ck_assert_int_eq(int_at(root, "rate_hz"), 997);
    ck_assert_str_eq(json_string_value(json_object_get(root, "platform")), "linux-x86_64");
    ck_assert_int_eq(int_at(root, "start_unix_ns"), 1700000000000000000);
    ck_assert_int_eq(int_at(root, "end_unix_ns"), 1700000002000000000);
    ck_assert_int_eq(int_at(root, "dropped"), 5);

    json_t *images = json_object_get(root, "images");
    ck_assert_uint_eq(json_array_size(images), 2);
    json_t *im = json_array_get(images, 0);
    ck_assert_int_eq(int_at(im, "base"), 0x555555554000);
    ck_assert_int_eq(int_at(im, "slide"), 0x555555554000);
    ck_assert_int_eq(int_at(im, "text"), 0x555555555000);
    ck_assert_int_eq(int_at(im, "text_size"), 0x1000);
    ck_assert_str_eq(json_string_value(json_object_get(im, "arch")), "x86_64");
    ck_assert_str_eq(json_string_value(json_object_get(im, "path")), "/usr/bin/prog");

    json_t *threads = json_object_get(root, "threads");
    ck_assert_uint_eq(json_array_size(threads), 2);
    ck_assert_int_eq(int_at(json_array_get(threads, 1), "fiber"), 11);
    ck_assert_int_eq(int_at(json_array_get(threads, 1), "tid"), 11);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(threads, 1), "label")),
                     "work\"er\xef\xbf\xbd");

    json_t *stacks = json_object_get(root, "stacks");
    ck_assert_uint_eq(json_array_size(stacks), 2);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(stacks, 0), 0)),
                     0x555555555123);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(stacks, 1), 1)),
                     0x555555555789);

    json_t *samples = json_object_get(root, "samples");
    ck_assert_uint_eq(json_array_size(samples), 3);
    json_int_t expected[3][4] = {{500000, 1, 0, 0}, {600000, 0, 1, 1}, {1600000, 0, 1, 1}};
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 4; k++)
            ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(samples, i), k)),
                             expected[i][k]);
    json_t *exit_obj = json_object_get(root, "exit");
    ck_assert_str_eq(json_string_value(json_object_get(exit_obj, "status")), "exited");
    json_decref(root);

    /* and the exporters read it the same way */
    struct ospx_raw raw = read_with_exporters(path);
    ck_assert_uint_eq(raw.sample_count, 3);
    ck_assert_uint_eq(raw.stack_count, 2);
    ck_assert_uint_eq(raw.thread_count, 2);
    ck_assert_uint_eq(raw.image_count, 2);
    ck_assert_uint_eq(raw.dropped, 5);
    ck_assert_int_eq(raw.exit.normal, 1);
    ck_assert_uint_eq(raw.samples[2].t_rel_ns, 1600000);
    ck_assert_uint_eq(raw.stacks[1].pcs[1], 0x555555555789);
    ospx_raw_free(&raw);
    ospd_collector_free(&c);
    free(r.data);
    free(path);
    remove_dir(dir);
}
END_TEST

START_TEST(exit_objects_say_how_it_ended)
{
    char *dir = temp_dir();
    char *path = join(dir, "raw.json");
    char err[512];
    struct ospd_collector c;
    collector_new(&c);

    c.exit_status = OSPD_EXIT_KILLED;
    c.exit_signal = 9;
    c.end_unix_ns = c.start_unix_ns - 5; /* the wall clock stepped back */
    ck_assert_int_eq(ospd_raw_write(&c, path, err, sizeof err), 0);
    json_t *root = load_json(path);
    ck_assert_int_eq(int_at(root, "end_unix_ns"), int_at(root, "start_unix_ns"));
    json_t *e = json_object_get(root, "exit");
    ck_assert_str_eq(json_string_value(json_object_get(e, "status")), "killed");
    ck_assert_int_eq(int_at(e, "signal"), 9);
    /* an empty profile is still a complete one */
    ck_assert_uint_eq(json_array_size(json_object_get(root, "samples")), 0);
    ck_assert_uint_eq(json_array_size(json_object_get(root, "stacks")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(root, "exe")), "");
    json_decref(root);
    struct ospx_raw raw = read_with_exporters(path);
    ck_assert_int_eq(raw.exit.signal, 9);
    ospx_raw_free(&raw);

    c.exit_status = OSPD_EXIT_VANISHED;
    ck_assert_int_eq(ospd_raw_write(&c, path, err, sizeof err), 0); /* replaces the old file */
    root = load_json(path);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "exit"), "status")),
                     "vanished");
    json_decref(root);

    c.exit_status = OSPD_EXIT_RING_REJECTED;
    strcpy(c.error, "sample depth 0 outside 1..128");
    ck_assert_int_eq(ospd_raw_write(&c, path, err, sizeof err), 0);
    root = load_json(path);
    e = json_object_get(root, "exit");
    ck_assert_str_eq(json_string_value(json_object_get(e, "status")), "ring-rejected");
    ck_assert_str_eq(json_string_value(json_object_get(e, "error")), c.error);
    json_decref(root);
    raw = read_with_exporters(path);
    ck_assert_int_eq(raw.exit.normal, 0);
    ospx_raw_free(&raw);
    ck_assert_int_eq(count_entries(dir), 1);

    ospd_collector_free(&c);
    free(path);
    remove_dir(dir);
}
END_TEST

/* A collector of `n` samples over 3 threads and 5 stacks, some weighted, as ospd_collect_add
 * receives them. */
static void fill_samples(struct ospd_collector *c, uint32_t n)
{
    uint64_t pcs[5][2] = {{0x401000, 0x402000},
                          {0x401010, 0x402000},
                          {0x401020, 0x402000},
                          {0x401030, 0x402010},
                          {0x401040, 0x402020}};
    for (uint32_t i = 0; i < 3; i++)
        ck_assert_int_ge(ospd_collector_thread(c, i, 1, i, 100 + (int32_t)i, strdup("t")), 0);
    for (uint32_t i = 0; i < n; i++)
        ck_assert_int_ge(ospd_collector_sample(c, c->start_mono_ns + 1003u * i, i % 3,
                                               pcs[(i * 7) % 5], 2, i % 11 == 0,
                                               i % 13 == 0 ? 1 + i % 5 : 1),
                         0);
}

/* Samples spilled to disk, a batch at a time, give the raw file an unspilled collector gives,
 * byte for byte; the spill file has no name in the output's directory. */
START_TEST(spilled_samples_write_the_same_raw_file)
{
    char *dir = temp_dir();
    char *kept = join(dir, "kept.json"), *spilled = join(dir, "spilled.json");
    char err[512];
    struct ospd_collector a, b;
    collector_new(&a);
    fill_samples(&a, 1000);
    ck_assert_int_eq(ospd_raw_write(&a, kept, err, sizeof err), 0);
    ck_assert_uint_eq(a.spilled, 0);

    collector_new(&b);
    ck_assert_int_eq(ospd_spill_enable(&b, spilled, 7), 0);
    fill_samples(&b, 1000);
    ck_assert_uint_eq(b.spilled, 994); /* 142 batches on disk, 6 in memory */
    ck_assert_uint_le(b.samples_cap, 256);
    ck_assert_uint_eq(ospd_sample_total(&b), 1000);
    ck_assert_int_eq(count_entries(dir), 1); /* no name for the spill file */
    ck_assert_int_eq(ospd_raw_write(&b, spilled, err, sizeof err), 0);

    size_t kept_len, spilled_len;
    char *want = slurp(kept, &kept_len), *got = slurp(spilled, &spilled_len);
    ck_assert_uint_gt(kept_len, 1000 * 10);
    ck_assert_msg(kept_len == spilled_len && memcmp(want, got, kept_len) == 0, "%s and %s differ",
                  kept, spilled);
    struct ospx_raw raw = read_with_exporters(spilled);
    ck_assert_uint_eq(raw.sample_count, 1000);
    ospx_raw_free(&raw);
    free(want);
    free(got);
    ospd_collector_free(&a);
    ospd_collector_free(&b);
    ck_assert_int_eq(count_entries(dir), 2);
    free(kept);
    free(spilled);
    remove_dir(dir);
}
END_TEST

/* A spill file that cannot be made (its directory is gone) leaves the samples in memory:
 * none is lost. */
START_TEST(samples_stay_in_memory_when_they_cannot_be_spilled)
{
    char *dir = temp_dir();
    char *missing = join(dir, "gone/raw.json"), *out = join(dir, "raw.json");
    char err[512];
    struct ospd_collector c;
    collector_new(&c);
    ck_assert_int_eq(ospd_spill_enable(&c, missing, 7), 0);
    fill_samples(&c, 100);
    ck_assert_uint_eq(c.spilled, 0);
    ck_assert_uint_eq(c.spill_batch, 0); /* given up after one line */
    ck_assert_uint_eq(c.sample_count, 100);
    ck_assert_uint_eq(c.lost, 0);
    ck_assert_int_eq(ospd_raw_write(&c, out, err, sizeof err), 0);
    struct ospx_raw raw = read_with_exporters(out);
    ck_assert_uint_eq(raw.sample_count, 100);
    ospx_raw_free(&raw);
    ospd_collector_free(&c);
    free(missing);
    free(out);
    remove_dir(dir);
}
END_TEST

START_TEST(unwritable_path_is_a_clear_error)
{
    struct ospd_collector c;
    collector_new(&c);
    char err[512];
    char *dir = temp_dir();
    char *missing = join(dir, "no/such/dir/raw.json");
    ck_assert_int_eq(ospd_raw_write(&c, missing, err, sizeof err), -ENOENT);
    ck_assert_ptr_nonnull(strstr(err, missing));
    ck_assert_ptr_nonnull(strstr(err, strerror(ENOENT)));
    ck_assert_ptr_null(strchr(err, '\n'));

    /* a directory in the way of the rename: the temp file is removed */
    char *blocked = join(dir, "blocked");
    ck_assert_int_eq(mkdir(blocked, 0700), 0);
    char *inside = join(blocked, "x");
    ck_assert_int_eq(mkdir(inside, 0700), 0);
    ck_assert_int_lt(ospd_raw_write(&c, blocked, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, blocked));
    ck_assert_int_eq(count_entries(dir), 1);
    rmdir(inside);
    rmdir(blocked);

    free(inside);
    free(blocked);
    free(missing);
    ospd_collector_free(&c);
    remove_dir(dir);
}
END_TEST

/* Processes that escaped the profile: kept with their reasons, written as "escaped" with the
 * forked child's identity; a bad reason or path length rejects the ring. */
START_TEST(escapes_are_kept_and_written)
{
    struct osp_ring_cursor r = ring_new(8192, 0);
    struct osp_rec_escaped e1 = {.pid = 77, .reason = OSP_ESCAPE_ENVIRONMENT, .path_len = 9};
    osp_ring_put(&r, OSP_REC_ESCAPED, &e1, sizeof e1, "/bin/true", e1.path_len);
    struct osp_rec_escaped e2 = {.pid = 78, .reason = OSP_ESCAPE_PRELOAD, .path_len = 0};
    osp_ring_put(&r, OSP_REC_ESCAPED, &e2, sizeof e2, "", 0);
    osp_put_exit(&r, UINT64_C(1700000002000000000), 0);
    struct ospd_collector c;
    collector_new(&c);
    c.parent_pid = 4000;
    c.forked = true;
    parse_ok(&c, &r, 0);
    ck_assert_uint_eq(c.escaped_count, 2);
    ck_assert_int_eq(c.escaped[0].pid, 77);
    ck_assert_str_eq(c.escaped[0].path, "/bin/true");
    c.exit_status = OSPD_EXIT_EXITED;
    char *dir = temp_dir();
    char *path = join(dir, "raw.json");
    char err[512];
    ck_assert_int_eq(ospd_raw_write(&c, path, err, sizeof err), 0);
    json_t *root = load_json(path);
    ck_assert_int_eq(int_at(root, "parent_pid"), 4000);
    ck_assert(json_is_true(json_object_get(root, "forked")));
    json_t *escaped = json_object_get(root, "escaped");
    ck_assert_uint_eq(json_array_size(escaped), 2);
    ck_assert_int_eq(int_at(json_array_get(escaped, 0), "pid"), 77);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(escaped, 0), "reason")),
                     "environment cleared");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(escaped, 1), "reason")),
                     "LD_PRELOAD dropped");
    json_decref(root);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
    ospd_collector_free(&c);
    free(r.data);

    uint8_t buf[64] = {0};
    struct osp_rec_escaped bad = {.h = {OSP_REC_ESCAPED, sizeof bad}, .reason = 9};
    memcpy(buf, &bad, sizeof bad);
    r = ring_with_raw(buf, sizeof bad, sizeof bad);
    expect_rejected(&r, 0, "unknown reason 9");
    free(r.data);
    bad.reason = OSP_ESCAPE_ENVIRONMENT;
    bad.path_len = 5000;
    memcpy(buf, &bad, sizeof bad);
    r = ring_with_raw(buf, sizeof bad, sizeof bad);
    expect_rejected(&r, 0, "path_len 5000");
    free(r.data);
}
END_TEST

/* A JIT's maps (jit-map.c): only the symbols a pc in no image falls in are kept, a later line
 * for the same code replaces an earlier one, lines that do not parse are skipped; a jitdump's
 * code loads count the same; the raw file keeps them and the exporters name the frames
 * "NAME [jit]" in the image "[jit]", while a file without "jit" reads as before. */
static size_t jitdump_load(uint8_t *at, uint64_t addr, uint64_t size, const char *name)
{
    size_t name_len = strlen(name) + 1;
    uint32_t id = 0, total = (uint32_t)(16 + 40 + name_len + size);
    memset(at, 0, total);
    memcpy(at, &id, 4);
    memcpy(at + 4, &total, 4);
    memcpy(at + 16 + 16, &addr, 8);
    memcpy(at + 16 + 24, &size, 8);
    memcpy(at + 16 + 40, name, name_len);
    return total;
}

START_TEST(jit_maps_keep_the_symbols_sampled)
{
    struct ospd_collector c;
    collector_new(&c);
    c.pid = 4321;
    char *image_path = strdup("/nonexistent/libx.so");
    ck_assert_int_eq(ospd_collector_image(&c, 0x1000, 0x1000, 0x1000, 0x1000, image_path, "", 0),
                     0);
    const uint64_t one[] = {0x7000, 0x1500, 0x7105}, two[] = {0x9002}, three[] = {0xb000},
                   four[] = {0xd008};
    ck_assert_int_ge(ospd_intern(&c.stacks, one, 3), 0);
    ck_assert_int_ge(ospd_intern(&c.stacks, two, 1), 0);
    ck_assert_int_ge(ospd_intern(&c.stacks, three, 1), 0);
    ck_assert_int_ge(ospd_intern(&c.stacks, four, 1), 0);
    struct ospd_jit_reader r;
    ck_assert_int_eq(ospd_jit_begin(&c, &r), 0);
    const char map[] = "7000 10 first\n"
                       "6ff0 20 second\n"           /* the same code again: replaces first */
                       "7100 8 callee\n"            /* holds 0x7104, the return address - 1 */
                       "not a line of a perf map\n" /* skipped */
                       "1500 10 in_image\n"         /* a pc an image holds: not asked */
                       "8000 100 never_sampled\n"
                       "9000 0 empty\n"
                       "zz00 10 bad_hex\n"
                       "0x9000 4 with a prefix\n"
                       "b000 10 cut short"; /* no newline: a map being written */
    ck_assert_int_eq(ospd_jit_perf_map(&r, map, sizeof map - 1), 0);
    ck_assert_uint_ge(r.skipped, 3);
    /* A line longer than the reader's buffer (1 MiB) is skipped whole, the next one read. */
    size_t long_size = (3u << 19) + 64;
    char *long_map = malloc(long_size);
    ck_assert_ptr_nonnull(long_map);
    memset(long_map, 'x', long_size);
    memcpy(long_map, "9000 4 ", 7);
    const char next[] = "\nb000 20 after_a_long_line\n";
    memcpy(long_map + long_size - sizeof next + 1, next, sizeof next - 1);
    ck_assert_int_eq(ospd_jit_perf_map(&r, long_map, long_size), 0);
    free(long_map);
    uint8_t dump[512] = {0};
    uint32_t magic = 0x4A695444, header = 40;
    memcpy(dump, &magic, 4);
    memcpy(dump + 8, &header, 4);
    size_t at = 40;
    at += jitdump_load(dump + at, 0xd000, 0x20, "dumped");
    at += jitdump_load(dump + at, 0xc000, 0x20, "never");
    ck_assert_int_eq(ospd_jit_dump(&r, dump, at - 8), 0); /* the last record cut short */
    ck_assert_int_eq(ospd_jit_dump(&r, (const uint8_t *)"not a jitdump, not at all", 26), -EINVAL);
    ck_assert_int_eq(ospd_jit_keep(&c, &r), 0);
    ospd_jit_end(&r);
    ck_assert_uint_eq(c.jit_count, 5);
    ck_assert_str_eq(c.jit[0].name, "second");
    ck_assert_uint_eq(c.jit[0].start, 0x6ff0);
    ck_assert_str_eq(c.jit[1].name, "callee");
    ck_assert_str_eq(c.jit[2].name, "with a prefix");
    ck_assert_str_eq(c.jit[3].name, "after_a_long_line");
    ck_assert_str_eq(c.jit[4].name, "dumped");
    c.jit_maps[c.jit_map_count++] = strdup("/tmp/perf-4321.map");
    c.jit_notes[c.jit_note_count++] = strdup("/tmp/jit-4321.dump is a symbolic link: not read");

    char *dir = temp_dir();
    char *path = join(dir, "raw.json"), *old_path = join(dir, "old.json");
    char err[512];
    ck_assert_int_eq(ospd_raw_write(&c, path, err, sizeof err), 0);
    struct ospx_raw raw;
    struct ospx_error xerr = {0};
    ck_assert_int_eq(ospx_raw_read(path, &raw, &xerr), 0);
    ck_assert_uint_eq(raw.jit_count, 5);
    ck_assert_uint_eq(raw.jit_note_count, 1);
    FILE *warnings = tmpfile();
    struct ospx_symbolize_options options = {.warnings = warnings, .symbolizer = "/nonexistent"};
    struct ospx_symbols symbols;
    ck_assert_int_eq(ospx_symbolize(&raw, &options, &symbols, &xerr), 0);
    const struct ospx_frame *leaf = &symbols.frames[symbols.stack_slots[0][0].frame];
    ck_assert_str_eq(leaf->name, "second [jit]");
    ck_assert_str_eq(leaf->image, OSPX_JIT_IMAGE);
    ck_assert_str_eq(symbols.frames[symbols.stack_slots[0][2].frame].name, "callee [jit]");
    ck_assert_str_eq(symbols.frames[symbols.stack_slots[1][0].frame].name, "with a prefix [jit]");
    ck_assert_str_eq(symbols.frames[symbols.stack_slots[2][0].frame].name,
                     "after_a_long_line [jit]");
    ck_assert_str_eq(symbols.frames[symbols.stack_slots[3][0].frame].name, "dumped [jit]");
    char short_name[64];
    ospx_short_name(short_name, sizeof short_name, "JS:*sortArr /srv/app/hot.js:2:17 [jit]");
    ck_assert_str_eq(short_name, "JS:*sortArr hot.js:2:17 [jit]");
    ospx_symbols_free(&symbols);
    ospx_raw_free(&raw);

    /* A file written before "jit": the frame is its address, as before. */
    json_t *root = load_json(path);
    json_object_del(root, "jit");
    ck_assert_int_eq(json_dump_file(root, old_path, 0), 0);
    json_decref(root);
    ck_assert_int_eq(ospx_raw_read(old_path, &raw, &xerr), 0);
    ck_assert_uint_eq(raw.jit_count, 0);
    ck_assert_int_eq(ospx_symbolize(&raw, &options, &symbols, &xerr), 0);
    ck_assert_str_eq(symbols.frames[symbols.stack_slots[0][0].frame].name, "0x7000");
    ospx_symbols_free(&symbols);
    ospx_raw_free(&raw);
    fclose(warnings);
    unlink(path);
    unlink(old_path);
    rmdir(dir);
    free(path);
    free(old_path);
    free(dir);
    ospd_collector_free(&c);
}
END_TEST

Suite *daemon_suite(void)
{
    Suite *s = suite_create("daemon");
    SUITE_CASE(s, "parse", 0, threads_samples_and_repeats, stacks_keep_why_their_walks_ended,
               repeat_without_sample_is_dropped, slot_reuse_makes_a_new_thread,
               declared_fibers_take_their_samples, images_dedupe_and_main_names_exe,
               images_unloaded_and_replaced_carry_times, escapes_are_kept_and_written,
               pad_and_wrap_across_the_end, exit_record_ends_the_stream,
               interning_is_stable_across_growth, addresses_beyond_user_space_end_the_stack,
               memory_budget_drops_and_counts, labels_become_valid_utf8);
    SUITE_CASE(s, "hostile", 120, corrupt_record_sizes_are_rejected,
               corrupt_depths_lengths_and_fields_are_rejected, corrupt_head_and_tail_are_rejected,
               fuzzed_rings_never_crash, header_validation);
    SUITE_CASE(s, "raw", 0, raw_profile_is_valid_json_version_1, exit_objects_say_how_it_ended,
               unwritable_path_is_a_clear_error, spilled_samples_write_the_same_raw_file,
               samples_stay_in_memory_when_they_cannot_be_spilled,
               jit_maps_keep_the_symbols_sampled);
    return s;
}
