/* test-attach.c — the pure parts of attaching to a running process (daemon/ospd_attach.h):
 * the kernel's perf records parsed from hand-built bytes, a synthetic stack copy walked by
 * rows and by the frame-pointer chain, and /proc/PID/maps lines and program headers turned
 * into the shim's image fields.
 */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ospd_attach.h"
#include "ospd_unwind.h"

/* A record being built: a perf_event_header, then words. */
struct rec {
    uint8_t bytes[512];
    size_t size;
};

static void begin(struct rec *r, uint32_t type, uint16_t misc)
{
    memset(r, 0, sizeof *r);
    struct perf_event_header h = {.type = type, .misc = misc, .size = 0};
    memcpy(r->bytes, &h, sizeof h);
    r->size = sizeof h;
}

static void put64(struct rec *r, uint64_t v)
{
    memcpy(r->bytes + r->size, &v, 8);
    r->size += 8;
}

static void end(struct rec *r)
{
    uint16_t size = (uint16_t)r->size;
    memcpy(r->bytes + 6, &size, 2);
}

START_TEST(a_sample_gives_its_registers_and_stack)
{
    struct rec r;
    begin(&r, PERF_RECORD_SAMPLE, 0);
    put64(&r, 77);                          /* identifier */
    put64(&r, 0xffffffff81000000u);         /* ip (the kernel's) */
    put64(&r, (uint64_t)4321 << 32 | 1234); /* pid 1234, tid 4321 */
    put64(&r, 5000);                        /* time */
    put64(&r, PERF_SAMPLE_REGS_ABI_64);     /* abi */
    put64(&r, 0x7ff0);                      /* fp */
    put64(&r, 0x7f00);                      /* sp */
    put64(&r, 0x401000);                    /* pc */
    put64(&r, 32);                          /* size of the copy */
    for (int i = 0; i < 4; i++)
        put64(&r, 0x1111u * (uint64_t)(i + 1));
    put64(&r, 24); /* dyn_size */
    end(&r);
    struct ospd_perf_record p;
    ck_assert_int_eq(ospd_perf_parse(r.bytes, r.size, &p), 0);
    ck_assert_int_eq(p.kind, OSPD_PERF_SAMPLE);
    ck_assert_uint_eq(p.id, 77);
    ck_assert_uint_eq(p.pid, 1234);
    ck_assert_uint_eq(p.tid, 4321);
    ck_assert_uint_eq(p.time_ns, 5000);
    ck_assert(p.has_regs);
    ck_assert_uint_eq(p.regs[OSPD_REG_FP], 0x7ff0);
    ck_assert_uint_eq(p.regs[OSPD_REG_SP], 0x7f00);
    ck_assert_uint_eq(p.regs[OSPD_REG_PC], 0x401000);
    ck_assert_uint_eq(p.stack_size, 24); /* dyn_size, not the size reserved */
    uint64_t word;
    memcpy(&word, p.stack + 8, 8);
    ck_assert_uint_eq(word, 0x2222);
    /* Cut anywhere, it is refused, never read past. */
    for (size_t cut = 8; cut < r.size; cut += 8) {
        uint16_t size = (uint16_t)cut;
        memcpy(r.bytes + 6, &size, 2);
        ck_assert_int_eq(ospd_perf_parse(r.bytes, cut, &p), -EPROTO);
    }
}
END_TEST

START_TEST(switches_and_lost_records_carry_their_sample_id)
{
    struct rec r;
    begin(&r, PERF_RECORD_SWITCH,
          PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
    put64(&r, (uint64_t)99 << 32 | 98); /* pid 98, tid 99 */
    put64(&r, 123456);
    put64(&r, 5); /* identifier */
    end(&r);
    struct ospd_perf_record p;
    ck_assert_int_eq(ospd_perf_parse(r.bytes, r.size, &p), 0);
    ck_assert_int_eq(p.kind, OSPD_PERF_SWITCH);
    ck_assert(p.out && p.preempted);
    ck_assert_uint_eq(p.tid, 99);
    ck_assert_uint_eq(p.time_ns, 123456);

    begin(&r, PERF_RECORD_SWITCH, 0); /* a switch in */
    put64(&r, (uint64_t)99 << 32 | 98);
    put64(&r, 2);
    put64(&r, 5);
    end(&r);
    ck_assert_int_eq(ospd_perf_parse(r.bytes, r.size, &p), 0);
    ck_assert(!p.out && !p.preempted);

    begin(&r, PERF_RECORD_LOST, 0);
    put64(&r, 5);  /* id */
    put64(&r, 17); /* lost */
    put64(&r, (uint64_t)99 << 32 | 98);
    put64(&r, 3);
    put64(&r, 5);
    end(&r);
    ck_assert_int_eq(ospd_perf_parse(r.bytes, r.size, &p), 0);
    ck_assert_int_eq(p.kind, OSPD_PERF_LOST);
    ck_assert_uint_eq(p.lost, 17);

    begin(&r, PERF_RECORD_SWITCH, 0); /* no room for its sample id */
    put64(&r, 1);
    end(&r);
    ck_assert_int_eq(ospd_perf_parse(r.bytes, r.size, &p), -EPROTO);
    begin(&r, PERF_RECORD_THROTTLE, 0);
    put64(&r, 1);
    end(&r);
    ck_assert_int_eq(ospd_perf_parse(r.bytes, r.size, &p), 0);
    ck_assert_int_eq(p.kind, OSPD_PERF_OTHER);
}
END_TEST

/* A stack copy of 32 words at 0x7000. */
#define STACK_BASE 0x7000u
static uint64_t words[32];
static const struct ospd_stack_copy copy = {STACK_BASE, (const uint8_t *)words, sizeof words};
static void word_at(uint64_t addr, uint64_t v)
{
    words[(addr - STACK_BASE) / 8] = v;
}

START_TEST(the_frame_pointer_chain_is_followed_inside_the_copy)
{
    memset(words, 0, sizeof words);
    word_at(0x7010, 0x7040); /* frame record: caller's fp, return address */
    word_at(0x7018, 0x401234);
    word_at(0x7040, 0x70f0); /* the next record is outside the copy: the walk ends there */
    word_at(0x7048, 0x405678);
    uint64_t out[8];
    uint32_t n = ospd_walk_copy(NULL, 0, 0x400010, STACK_BASE, 0x7010, &copy, out, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(out[0], 0x400010);
    ck_assert_uint_eq(out[1], 0x401234);
    ck_assert_uint_eq(out[2], 0x405678);
    /* A frame pointer below sp is no frame: the pc alone. */
    ck_assert_uint_eq(ospd_walk_copy(NULL, 0, 0x400010, STACK_BASE, 0x6ff0, &copy, out, 8), 1);
    ck_assert_uint_eq(ospd_walk_copy(NULL, 0, 0x400010, STACK_BASE, 0x7010, &copy, out, 2), 2);
}
END_TEST

START_TEST(rows_unwind_frames_without_frame_pointers)
{
    /* A table object in memory with one image at 0x10000..0x20000: [0, 0x100) CFA = sp + 16,
     * ra at CFA - 8; [0x100, 0x200) CFA = sp + 32, ra at CFA - 8, caller's fp at CFA - 16;
     * [0x200, 0x300) the outermost frame; from 0x300 no CFI (the frame-pointer chain). */
    static uint8_t object[OSP_UNWIND_HEADER_SIZE + 4096] __attribute__((aligned(4096)));
    memset(object, 0, sizeof object);
    struct osp_unwind_header *h = (struct osp_unwind_header *)object;
    osp_unwind_header_init(h, sizeof object, 62);
    struct ospd_unwind_region region;
    char err[256];
    ck_assert_int_eq(ospd_unwind_region_init(&region, object, sizeof object, -1, err, sizeof err),
                     0);
    struct osp_unwind_row rows[] = {
        {.pc_offset = 0, .cfa_offset = 16, .cfa_rule = OSP_CFA_SP, .ra_offset = -8},
        {.pc_offset = 0x100,
         .cfa_offset = 32,
         .cfa_rule = OSP_CFA_SP,
         .ra_offset = -8,
         .fp_rule = OSP_FP_AT_CFA,
         .fp_offset = -16},
        {.pc_offset = 0x200, .cfa_rule = OSP_CFA_END},
        {.pc_offset = 0x300, .cfa_rule = OSP_CFA_UNKNOWN},
    };
    struct ospd_unwind_rows table = {rows, 4, 0x10000, 0x20000, 0, false};
    ck_assert_int_eq(ospd_unwind_region_publish(&region, 0x10000, &table), 0);

    memset(words, 0, sizeof words);
    word_at(0x7008, 0x10180); /* leaf at 0x10010, sp 0x7000: CFA 0x7010, ra at 0x7008 */
    word_at(0x7020, 0x7077);  /* its caller (CFA 0x7030): saved fp at 0x7020, ra at 0x7028 */
    word_at(0x7028, 0x10250); /* the outermost frame */
    uint64_t out[8];
    uint32_t n = ospd_walk_copy(object, sizeof object, 0x10010, STACK_BASE, 0, &copy, out, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(out[0], 0x10010);
    ck_assert_uint_eq(out[1], 0x10180);
    ck_assert_uint_eq(out[2], 0x10250);

    /* A return address at a row's first byte is looked up at pc - 1: the row before. */
    word_at(0x7008, 0x10100);
    word_at(0x7018, 0x10250); /* as the first row says: CFA 0x7020, ra at 0x7018 */
    n = ospd_walk_copy(object, sizeof object, 0x10010, STACK_BASE, 0, &copy, out, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(out[1], 0x10100);
    ck_assert_uint_eq(out[2], 0x10250);

    /* No CFI: the frame pointer, restored by the rows, takes over. */
    memset(words, 0, sizeof words);
    word_at(0x7008, 0x10180);
    word_at(0x7020, 0x7040); /* the caller's fp */
    word_at(0x7028, 0x10310);
    word_at(0x7040, 0);
    word_at(0x7048, 0x10250);
    n = ospd_walk_copy(object, sizeof object, 0x10010, STACK_BASE, 0, &copy, out, 8);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(out[2], 0x10310);
    ck_assert_uint_eq(out[3], 0x10250);

    /* A CFA past the copy ends the walk there, read nothing beyond it. */
    struct ospd_stack_copy short_copy = {STACK_BASE, (const uint8_t *)words, 16};
    n = ospd_walk_copy(object, sizeof object, 0x10110, STACK_BASE, 0, &short_copy, out, 8);
    ck_assert_uint_eq(n, 1);
    ospd_unwind_region_free(&region);
}
END_TEST

START_TEST(maps_lines_are_parsed)
{
    struct ospd_mapping m;
    ck_assert_int_eq(
        ospd_maps_line("55d0c8a00000-55d0c8a02000 r-xp 00002000 08:01 1234      /usr/bin/x y\n",
                       &m),
        0);
    ck_assert_uint_eq(m.start, 0x55d0c8a00000);
    ck_assert_uint_eq(m.end, 0x55d0c8a02000);
    ck_assert_uint_eq(m.offset, 0x2000);
    ck_assert_uint_eq(m.inode, 1234);
    ck_assert_str_eq(m.perms, "r-xp");
    ck_assert_uint_eq(m.path_len, strlen("/usr/bin/x y"));
    ck_assert(strncmp(m.path, "/usr/bin/x y", m.path_len) == 0);
    ck_assert_int_eq(ospd_maps_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0", &m), 0);
    ck_assert_uint_eq(m.path_len, 0);
    ck_assert_int_eq(ospd_maps_line("7ffd1000-7ffd2000 r-xp 00000000 00:00 0 [vdso]", &m), 0);
    ck_assert(strncmp(m.path, "[vdso]", m.path_len) == 0);
    ck_assert_int_eq(ospd_maps_line("not a mapping", &m), -EINVAL);
    ck_assert_int_eq(ospd_maps_line("2000-1000 r-xp 0 00:00 0 /x", &m), -EINVAL);
}
END_TEST

START_TEST(images_are_described_as_the_shim_does)
{
    /* A PIE: loaded at 0x555500000000. */
    struct ospd_phdr pie[] = {
        {PT_PHDR, PF_R, 0x40, 0x40, 0x2d8},
        {PT_LOAD, PF_R, 0, 0, 0x1000},
        {PT_LOAD, PF_R | PF_X, 0x1000, 0x1000, 0x2345},
        {PT_LOAD, PF_R | PF_W, 0x4000, 0x5000, 0x100},
    };
    uint64_t base, slide, text, size;
    ck_assert_int_eq(ospd_image_from_phdrs(pie, 4, 0x555500000000, 0, &base, &slide, &text, &size),
                     0);
    ck_assert_uint_eq(base, 0x555500000000);
    ck_assert_uint_eq(slide, 0x555500000000);
    ck_assert_uint_eq(text, 0x555500001000);
    ck_assert_uint_eq(size, 0x2345);
    /* A fixed-address executable: no bias. */
    struct ospd_phdr fixed[] = {
        {PT_LOAD, PF_R | PF_X, 0, 0x400000, 0x8000},
    };
    ck_assert_int_eq(ospd_image_from_phdrs(fixed, 1, 0x400000, 0, &base, &slide, &text, &size), 0);
    ck_assert_uint_eq(base, 0x400000);
    ck_assert_uint_eq(slide, 0);
    ck_assert_uint_eq(text, 0x400000);
    /* No PT_LOAD: not an image. */
    ck_assert_int_eq(ospd_image_from_phdrs(pie, 1, 0x1000, 0, &base, &slide, &text, &size),
                     -ENOENT);
}
END_TEST

/* --stream: each image, stack and thread once, every sample once, then the flush; samples emptied.
 */
START_TEST(the_stream_sends_each_thing_once)
{
    struct ospd_collector c;
    ospd_collector_init(&c);
    char platform[OSP_PLATFORM_SIZE] = "linux-x86_64";
    ospd_collector_identity(&c, 4242, 997, 0, 1000, platform);
    ck_assert_int_eq(
        ospd_collector_image(&c, 0x1000, 0x1000, 0x2000, 0x300, strdup("/bin/x"), "", true), 0);
    int64_t thread = ospd_collector_thread(&c, 0, 1, 0, 4242, strdup("main"));
    ck_assert_int_ge(thread, 0);
    uint64_t pcs[] = {0x2010, 0x2100};
    ck_assert_int_eq(ospd_collector_sample(&c, 1000 + 5, (uint32_t)thread, pcs, 2, 0, 1), 0);
    ck_assert_int_eq(ospd_collector_sample(&c, 1000 + 7, (uint32_t)thread, pcs, 2, 1, 3), 0);

    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    struct ospd_stream stream;
    ck_assert_int_eq(ospd_stream_begin(&stream, out, 4242, 997), 0);
    ck_assert_int_eq(ospd_stream_flush(&stream, &c, 10), 0);
    ck_assert_uint_eq(c.sample_count, 0);
    ck_assert_int_eq(ospd_collector_sample(&c, 1000 + 12, (uint32_t)thread, pcs, 2, 0, 1), 0);
    ck_assert_int_eq(ospd_stream_flush(&stream, &c, 20), 0);
    c.exit_status = OSPD_EXIT_KILLED;
    c.exit_signal = 9;
    ospd_stream_end(&stream, &c);
    fclose(out);
    ck_assert_str_eq(text, "osprey-stream 1 4242 997\n"
                           "image 1000 1000 2000 300 1 /bin/x\n"
                           "stack 0 2010 2100\n"
                           "thread 0 4242 main\n"
                           "sample 5 0 0 1 0\n"
                           "sample 7 0 1 3 0\n"
                           "flush 10\n"
                           "sample 12 0 0 1 0\n"
                           "flush 20\n"
                           "end killed 9\n");
    free(text);
    ospd_collector_free(&c);
}
END_TEST

Suite *attach_suite(void)
{
    Suite *s = suite_create("attach");
    TCase *records = tcase_create("records");
    tcase_add_test(records, a_sample_gives_its_registers_and_stack);
    tcase_add_test(records, switches_and_lost_records_carry_their_sample_id);
    suite_add_tcase(s, records);
    TCase *walk = tcase_create("walk");
    tcase_add_test(walk, the_frame_pointer_chain_is_followed_inside_the_copy);
    tcase_add_test(walk, rows_unwind_frames_without_frame_pointers);
    suite_add_tcase(s, walk);
    TCase *maps = tcase_create("maps");
    tcase_add_test(maps, maps_lines_are_parsed);
    tcase_add_test(maps, images_are_described_as_the_shim_does);
    suite_add_tcase(s, maps);
    TCase *stream = tcase_create("stream");
    tcase_add_test(stream, the_stream_sends_each_thing_once);
    suite_add_tcase(s, stream);
    return s;
}
