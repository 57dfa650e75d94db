/* test-attach.c — the pure parts of attaching to a running process (daemon/ospd_attach.h):
 * the kernel's perf records parsed from hand-built bytes, and /proc/PID/maps lines and program
 * headers turned into the shim's image fields. (The walk of a stack copy is tested beside the
 * shim's, with the same cases: tests/test-walks.c.)
 */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ospc.h"
#include "ospd_attach.h"
#include "suite.h"

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
    put64(&r, 3);                           /* the kernel's call chain: 3 entries */
    put64(&r, (uint64_t)PERF_CONTEXT_KERNEL);
    put64(&r, 0xffffffff81000010u);
    put64(&r, 0xffffffff81000020u);
    put64(&r, PERF_SAMPLE_REGS_ABI_64); /* abi */
    put64(&r, 0x7ff0);                  /* fp */
    put64(&r, 0x7f00);                  /* sp */
    put64(&r, 0x401000);                /* pc */
    put64(&r, 32);                      /* size of the copy */
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
    ck_assert_uint_eq(p.kernel_count, 3);
    uint64_t kernel_pc;
    memcpy(&kernel_pc, p.kernel + 16, 8);
    ck_assert_uint_eq(kernel_pc, 0xffffffff81000020u);
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

/* Kernel frames are named by the text symbol at or below them, in a kallsyms file whatever
 * its order; data symbols and hidden addresses (0: kptr_restrict) name nothing. */
START_TEST(kernel_pcs_are_named_from_kallsyms)
{
    char path[] = "/tmp/osprey-kallsyms-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("ffffffff81000200 T vfs_read\n"
          "ffffffff81000100 t read_zero\n"
          "ffffffff81000180 D some_data\n"
          "0000000000000000 T hidden\n"
          "ffffffffc0000000 t module_function\t[some_module]\n",
          f);
    fclose(f);
    uint64_t pcs[] = {UINT64_C(0xffffffff81000150), UINT64_C(0xffffffff81000200),
                      UINT64_C(0xffffffff81000050), UINT64_C(0xffffffffc0000010)};
    char *names[4];
    ck_assert_int_eq(ospc_kallsyms_name(path, pcs, 4, names), 0);
    ck_assert_str_eq(names[0], "read_zero"); /* not some_data, a data symbol */
    ck_assert_str_eq(names[1], "vfs_read");
    ck_assert_ptr_null(names[2]); /* below every symbol */
    ck_assert_str_eq(names[3], "module_function");
    for (int i = 0; i < 4; i++)
        free(names[i]);
    unlink(path);
    ck_assert_int_eq(ospc_kallsyms_name(path, pcs, 4, names), -ENOENT);
}
END_TEST

Suite *attach_suite(void)
{
    Suite *s = suite_create("attach");
    SUITE_CASE(s, "records", 0, a_sample_gives_its_registers_and_stack,
               switches_and_lost_records_carry_their_sample_id);
    SUITE_CASE(s, "maps", 0, maps_lines_are_parsed, images_are_described_as_the_shim_does);
    SUITE_CASE(s, "stream", 0, the_stream_sends_each_thing_once);
    SUITE_CASE(s, "kernel", 0, kernel_pcs_are_named_from_kallsyms);
    return s;
}
