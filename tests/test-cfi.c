/* test-cfi.c — unit tests of the CFI-to-rows translator (daemon/cfi-rows.c): a hand-built
 * `.eh_frame` gives the rows its programs say (remember/restore state, the frame pointer
 * taking over, an outermost frame, a gap); its bytes damaged and cut short give an error or
 * sorted rows, never a read outside them; and on every object of this system's library and
 * binary directories, and of the other machine's library directory when a cross toolchain
 * installed one, the translator's rows are libdw's (cfi-compare.c: libdw's row at sampled
 * addresses of each object, and every row of the C library); a hand-built `.debug_frame`
 * (Go's form) gives its rows, and they fill `.eh_frame`'s gaps and nothing else; an object with a
 * function in `.debug_frame` alone gets its rows from both builders, the same. */
#include <check.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfi-compare.h"
#include "ospd_cfi.h"
#include "ospd_unwind_source.h"
#include "suite.h"
#include "unwind-rows.h"

/* ---- hand-built sections ------------------------------------------------------------- */

#define HDR_VADDR   0x3000u
#define FRAME_VADDR 0x4000u
#define LO          0x1000u
#define HI          0x1100u

struct bytes {
    uint8_t b[512];
    size_t n;
};

static void put(struct bytes *s, const void *p, size_t n)
{
    memcpy(s->b + s->n, p, n);
    s->n += n;
}
static void put8(struct bytes *s, uint8_t v)
{
    put(s, &v, 1);
}
static void put32(struct bytes *s, uint32_t v)
{
    put(s, &v, 4);
}

/* An x86_64 .eh_frame as GCC writes it: one CIE (zR, pcrel sdata4; CFA rsp+8, return address
 * at CFA-8), an FDE for [0x1000, 0x1020) with a frame-pointer prologue and a
 * remember/restore pair, and one for [0x1040, 0x1050) whose return address is undefined. */
static void build(struct bytes *frame, struct bytes *hdr)
{
    memset(frame, 0, sizeof *frame);
    memset(hdr, 0, sizeof *hdr);
    static const uint8_t cie[] = {
        0x14, 0,    0,    0, 0, 0, 0, 0, /* length 20, CIE id 0 */
        1,    'z',  'R',  0,             /* version, augmentation */
        0x01, 0x78, 0x10,                /* code align 1, data align -8, return address r16 */
        0x01, 0x1b,                      /* augmentation data: FDE pointers pcrel sdata4 */
        0x0c, 0x07, 0x08,                /* def_cfa rsp, 8 */
        0x90, 0x01,                      /* offset r16 at cfa-8 */
        0x00, 0x00,                      /* padding */
    };
    put(frame, cie, sizeof cie);
    uint32_t fde1 = (uint32_t)frame->n;
    static const uint8_t program1[] = {
        0x41,             /* advance 1 */
        0x0e, 0x10,       /* def_cfa_offset 16 */
        0x86, 0x02,       /* offset rbp at cfa-16 */
        0x43,             /* advance 3 */
        0x0d, 0x06,       /* def_cfa_register rbp */
        0x4a,             /* advance 10 */
        0x0a,             /* remember_state */
        0x0c, 0x07, 0x08, /* def_cfa rsp, 8 */
        0x41,             /* advance 1 */
        0x0b,             /* restore_state */
        0x00,
    };
    put32(frame, (uint32_t)(4 + 4 + 4 + 1 + sizeof program1));
    put32(frame, fde1 + 4); /* back to the CIE */
    put32(frame, (uint32_t)(0x1000 - (FRAME_VADDR + frame->n)));
    put32(frame, 0x20);
    put8(frame, 0); /* augmentation data: none */
    put(frame, program1, sizeof program1);
    uint32_t fde2 = (uint32_t)frame->n;
    static const uint8_t program2[] = {0x07, 0x10, 0x00}; /* undefined r16 */
    put32(frame, (uint32_t)(4 + 4 + 4 + 1 + sizeof program2));
    put32(frame, fde2 + 4);
    put32(frame, (uint32_t)(0x1040 - (FRAME_VADDR + frame->n)));
    put32(frame, 0x10);
    put8(frame, 0);
    put(frame, program2, sizeof program2);
    put32(frame, 0); /* terminator */

    put8(hdr, 1);
    put8(hdr, 0x1b); /* eh_frame_ptr: pcrel sdata4 */
    put8(hdr, 0x03); /* count: udata4 */
    put8(hdr, 0x3b); /* table: datarel sdata4 */
    put32(hdr, (uint32_t)(FRAME_VADDR - (HDR_VADDR + hdr->n)));
    put32(hdr, 2);
    put32(hdr, 0x1000 - HDR_VADDR);
    put32(hdr, FRAME_VADDR + fde1 - HDR_VADDR);
    put32(hdr, 0x1040 - HDR_VADDR);
    put32(hdr, FRAME_VADDR + fde2 - HDR_VADDR);
}

static struct ospd_cfi_input input(const struct bytes *frame, const struct bytes *hdr)
{
    struct ospd_cfi_input in = {.hdr_searched = true, .machine = EM_X86_64, .lo = LO, .hi = HI};
    in.eh_frame = frame->b;
    in.eh_frame_size = frame->n;
    in.eh_frame_vaddr = FRAME_VADDR;
    in.hdr = hdr->b;
    in.hdr_size = hdr->n;
    in.hdr_vaddr = HDR_VADDR;
    return in;
}

START_TEST(hand_built_rows)
{
    struct bytes frame, hdr;
    build(&frame, &hdr);
    struct ospd_cfi_input in = input(&frame, &hdr);
    struct ospd_unwind_rows rows = {0};
    ck_assert_int_eq(ospd_cfi_rows(&in, &rows), 0);
    const struct osp_unwind_row want[] = {
        {.pc_offset = 0x00, .cfa_rule = OSP_CFA_SP, .cfa_offset = 8, .ra_offset = -8},
        ROW_FP_SAVED(0x01, OSP_CFA_SP, 16),
        ROW_FP_SAVED(0x04, OSP_CFA_FP, 16),
        ROW_FP_SAVED(0x0e, OSP_CFA_SP, 8),
        ROW_FP_SAVED(0x0f, OSP_CFA_FP, 16),
        {.pc_offset = 0x20, .cfa_rule = OSP_CFA_UNKNOWN}, /* the gap after the first FDE */
        {.pc_offset = 0x40, .cfa_rule = OSP_CFA_END},
        {.pc_offset = 0x50, .cfa_rule = OSP_CFA_UNKNOWN},
    };
    ck_assert_uint_eq(rows.count, sizeof want / sizeof want[0]);
    for (uint32_t i = 0; i < rows.count; i++)
        ck_assert_msg(memcmp(&rows.rows[i], &want[i], sizeof want[i]) == 0,
                      "row %u at %#x: cfa %u%+d fp %u%+d", i, rows.rows[i].pc_offset,
                      rows.rows[i].cfa_rule, rows.rows[i].cfa_offset, rows.rows[i].fp_rule,
                      rows.rows[i].fp_offset);
    ck_assert_uint_eq(rows.start_vaddr, LO);
    ck_assert_uint_eq(rows.end_vaddr, HI);
    ospd_unwind_rows_free(&rows);

    /* Without a search table libdw would use, the object is left to libdw. */
    in.hdr_size = 3;
    ck_assert_int_eq(ospd_cfi_rows(&in, &rows), -ENOENT);
}
END_TEST

/* A copy of n bytes ending at a page that cannot be read: a read past it faults. */
static uint8_t *fenced(const uint8_t *bytes, size_t n, uint8_t **map, size_t *map_size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), data = (n + page - 1) / page * page;
    *map_size = data + page;
    *map = mmap(NULL, *map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(*map, MAP_FAILED);
    ck_assert_int_eq(mprotect(*map + data, page, PROT_NONE), 0);
    uint8_t *at = *map + data - n;
    memcpy(at, bytes, n);
    return at;
}

START_TEST(damaged_bytes_stay_inside)
{
    struct bytes frame, hdr;
    build(&frame, &hdr);
    uint64_t seed = 42;
    int rounds = getenv("OSPREY_UNDER_VALGRIND") ? 500 : 20000;
    for (int round = 0; round < rounds; round++) {
        struct bytes f = frame, h = hdr;
        int flips = 1 + round % 4;
        for (int i = 0; i < flips; i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            uint64_t r = seed >> 16;
            struct bytes *which = (r & 1) && i > 0 ? &h : &f;
            which->b[(r >> 1) % which->n] ^= (uint8_t)(1u << ((r >> 20) % 8));
            if (((r >> 24) & 7) == 0)
                which->n -= (r >> 28) % which->n; /* cut short */
        }
        uint8_t *fmap, *hmap;
        size_t fsize, hsize;
        struct ospd_cfi_input in = input(&f, &h);
        in.eh_frame = fenced(f.b, f.n, &fmap, &fsize);
        in.hdr = fenced(h.b, h.n, &hmap, &hsize);
        struct ospd_unwind_rows rows = {0};
        int rc = ospd_cfi_rows(&in, &rows);
        ck_assert_msg(rc == 0 || rc == -ENOENT, "round %d: %d", round, rc);
        if (rc == 0) {
            ck_assert_uint_ge(rows.count, 1);
            for (uint32_t i = 1; i < rows.count; i++)
                ck_assert_uint_gt(rows.rows[i].pc_offset, rows.rows[i - 1].pc_offset);
            ck_assert_uint_lt(rows.rows[rows.count - 1].pc_offset, HI - LO);
            for (uint32_t i = 0; i < rows.count; i++)
                ck_assert_uint_le(rows.rows[i].cfa_rule, OSP_CFA_DEREF);
        }
        ospd_unwind_rows_free(&rows);
        munmap(fmap, fsize);
        munmap(hmap, hsize);
    }
}
END_TEST

/* ---- against libdw, on this system's objects ------------------------------------------- */

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libc.so")) {
        snprintf(data, 4096, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* A .debug_frame as Go's linker writes it: a CIE (id all ones, version 3, no augmentation;
 * CFA rsp+8, return address at CFA-8), an FDE for a frameless leaf [0x1060, 0x1070) and one
 * for [0x1080, 0x10a0) whose frame grows by 24 at 0x1084; and one for [0x1000, 0x1010), which
 * .eh_frame covers too (with other rules: .eh_frame's stay). Absolute 8-byte addresses. */
static void build_debug(struct bytes *frame)
{
    memset(frame, 0, sizeof *frame);
    static const uint8_t cie[] = {
        0x10, 0,    0,    0, 0xff, 0xff, 0xff, 0xff, /* length 16, CIE id all ones */
        3,    0,                                     /* version 3, augmentation "" */
        0x01, 0x78, 0x10,                            /* code align 1, data align -8, r16 */
        0x0c, 0x07, 0x08,                            /* def_cfa rsp, 8 */
        0x90, 0x01,                                  /* offset r16 at cfa-8 */
        0x00, 0x00,                                  /* padding */
    };
    put(frame, cie, sizeof cie);
    static const uint8_t leaf[] = {0x00, 0x00, 0x00, 0x00};
    static const uint8_t grows[] = {0x44, 0x0e, 0x20, 0x00}; /* advance 4, def_cfa_offset 32 */
    static const uint8_t other[] = {0x0e, 0x30, 0x00, 0x00}; /* def_cfa_offset 48 */
    const struct {
        uint64_t start, size;
        const uint8_t *program;
    } fdes[] = {{0x1060, 0x10, leaf}, {0x1080, 0x20, grows}, {0x1000, 0x10, other}};
    for (size_t i = 0; i < 3; i++) {
        put32(frame, 4 + 8 + 8 + 4);
        put32(frame, 0); /* the CIE's offset in the section */
        put(frame, &fdes[i].start, 8);
        put(frame, &fdes[i].size, 8);
        put(frame, fdes[i].program, 4);
    }
}

START_TEST(debug_frame_fills_gaps)
{
    struct bytes debug, frame, hdr;
    build_debug(&debug);
    struct ospd_unwind_rows fill = {0};
    ck_assert_int_eq(ospd_cfi_debug_rows(debug.b, debug.n, EM_X86_64, LO, HI, &fill), 0);
    const struct osp_unwind_row want_debug[] = {
        {.pc_offset = 0x00, .cfa_rule = OSP_CFA_SP, .cfa_offset = 48, .ra_offset = -8},
        {.pc_offset = 0x10, .cfa_rule = OSP_CFA_UNKNOWN},
        {.pc_offset = 0x60, .cfa_rule = OSP_CFA_SP, .cfa_offset = 8, .ra_offset = -8},
        {.pc_offset = 0x70, .cfa_rule = OSP_CFA_UNKNOWN},
        {.pc_offset = 0x80, .cfa_rule = OSP_CFA_SP, .cfa_offset = 8, .ra_offset = -8},
        {.pc_offset = 0x84, .cfa_rule = OSP_CFA_SP, .cfa_offset = 32, .ra_offset = -8},
        {.pc_offset = 0xa0, .cfa_rule = OSP_CFA_UNKNOWN},
    };
    ck_assert_uint_eq(fill.count, sizeof want_debug / sizeof want_debug[0]);
    for (uint32_t i = 0; i < fill.count; i++)
        ck_assert_msg(memcmp(&fill.rows[i], &want_debug[i], sizeof want_debug[i]) == 0,
                      "row %u at %#x: cfa %u%+d", i, fill.rows[i].pc_offset, fill.rows[i].cfa_rule,
                      fill.rows[i].cfa_offset);

    /* .eh_frame's rows, their gaps given .debug_frame's. */
    build(&frame, &hdr);
    struct ospd_cfi_input in = input(&frame, &hdr);
    struct ospd_unwind_rows rows = {0};
    ck_assert_int_eq(ospd_cfi_rows(&in, &rows), 0);
    uint32_t eh_count = rows.count;
    struct osp_unwind_row eh_first = rows.rows[0];
    ck_assert_int_eq(ospd_unwind_rows_fill(&rows, &fill), 0);
    ck_assert_uint_eq(rows.count, eh_count + 5); /* 0x60, 0x70 (a gap), 0x80, 0x84, 0xa0 */
    ck_assert_mem_eq(&rows.rows[0], &eh_first, sizeof eh_first); /* .eh_frame's, not 48 */
    const struct osp_unwind_row *leaf = NULL, *grown = NULL;
    for (uint32_t i = 0; i < rows.count; i++) {
        ck_assert(i == 0 || rows.rows[i].pc_offset > rows.rows[i - 1].pc_offset);
        if (rows.rows[i].pc_offset == 0x60)
            leaf = &rows.rows[i];
        if (rows.rows[i].pc_offset == 0x84)
            grown = &rows.rows[i];
    }
    ck_assert(leaf != NULL && leaf->cfa_rule == OSP_CFA_SP && leaf->cfa_offset == 8);
    ck_assert(grown != NULL && grown->cfa_rule == OSP_CFA_SP && grown->cfa_offset == 32);
    ospd_unwind_rows_free(&rows);
    ospd_unwind_rows_free(&fill);

    /* Cut short anywhere, or an FDE pointing at no CIE: an error or sorted rows, never a read
     * past the bytes. */
    for (size_t n = 0; n <= debug.n; n++) {
        uint8_t *map;
        size_t map_size;
        uint8_t *at = fenced(debug.b, n, &map, &map_size);
        if (n > 24)
            at[24] ^= 0x40; /* the first FDE's CIE pointer */
        int rc = ospd_cfi_debug_rows(at, n, EM_X86_64, LO, HI, &fill);
        if (rc == 0)
            for (uint32_t i = 1; i < fill.count; i++)
                ck_assert_uint_gt(fill.rows[i].pc_offset, fill.rows[i - 1].pc_offset);
        ospd_unwind_rows_free(&fill);
        munmap(map, map_size);
    }
}
END_TEST

/* test-cfi-mixed.so (built beside this test): osp_cfi_with_eh in .eh_frame, osp_cfi_debug_only
 * built without unwind tables, in .debug_frame alone. Both builders give the second a row
 * from .debug_frame (it was UNKNOWN), and every row the same. */
START_TEST(eh_frame_and_debug_frame_object)
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64);
    ck_assert_int_gt(n, 0);
    path[n] = '\0';
    strcpy(strrchr(path, '/'), "/test-cfi-mixed.so");
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(handle != NULL, "%s", dlerror());
    Dl_info info;
    void *fn = dlsym(handle, "osp_cfi_debug_only");
    ck_assert(fn != NULL && dladdr(fn, &info) != 0);
    uint64_t vaddr = (uint64_t)((uintptr_t)fn - (uintptr_t)info.dli_fbase); /* first load at 0 */
    dlclose(handle);
    for (int libdw = 0; libdw < 2; libdw++) {
        struct ospd_unwind_source src = {.path = path, .machine = OSPD_OWN_MACHINE, .libdw = libdw};
        struct ospd_unwind_rows rows;
        char err[256];
        ck_assert_msg(ospd_unwind_build(&src, &rows, err, sizeof err) == 0, "%s", err);
        ck_assert(vaddr >= rows.start_vaddr && vaddr < rows.end_vaddr);
        const struct osp_unwind_row *at = NULL;
        for (uint32_t i = 0; i < rows.count && rows.rows[i].pc_offset <= vaddr - rows.start_vaddr;
             i++)
            at = &rows.rows[i];
        ck_assert_msg(at != NULL && at->cfa_rule == OSP_CFA_SP,
                      "%s builder: osp_cfi_debug_only at %#lx has rule %u%+d",
                      libdw ? "libdw's" : "the translator's", (unsigned long)vaddr,
                      at ? at->cfa_rule : 99, at ? at->cfa_offset : 0);
        ospd_unwind_rows_free(&rows);
    }
    struct cfi_compare_options options = {.full = true};
    struct cfi_compare_totals t = {0};
    cfi_compare_object(path, &options, &t, stderr);
    ck_assert_uint_eq(t.translated, 1);
    ck_assert_msg(t.differing == 0, "%lu rows differ: %s", (unsigned long)t.differing,
                  t.first_difference);
}
END_TEST

START_TEST(libc_every_row_as_libdw)
{
    char libc[4096] = "";
    dl_iterate_phdr(find_libc, libc);
    ck_assert_msg(libc[0] != '\0', "no C library mapped");
    struct cfi_compare_options options = {.full = true};
    struct cfi_compare_totals t = {0};
    cfi_compare_object(libc, &options, &t, stderr);
    ck_assert_uint_eq(t.translated, 1);
    ck_assert_uint_gt(t.addresses, 1000);
    ck_assert_msg(t.differing == 0, "%lu rows differ: %s", (unsigned long)t.differing,
                  t.first_difference);
}
END_TEST

START_TEST(system_objects_as_libdw)
{
#if defined(__x86_64__)
    const char *dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/bin"};
#else
    const char *dirs[] = {"/usr/lib/aarch64-linux-gnu", "/usr/bin"};
#endif
    /* Under valgrind, the first 40 objects of the walk: all of them take minutes there. */
    struct cfi_compare_options options = {.samples = 24,
                                          .max_objects = getenv("OSPREY_UNDER_VALGRIND") ? 40 : 0};
    struct cfi_compare_totals t = {0};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        struct stat st;
        if (stat(dirs[i], &st) == 0)
            cfi_compare_tree(dirs[i], &options, &t, NULL);
    }
    /* The other machine's libraries, where a cross toolchain put them (x86_64 and arm64 rows
     * are built on either host: qemu-user targets). */
#if defined(__x86_64__)
    struct cfi_compare_options other = {.samples = 24, .machine = EM_AARCH64};
    const char *other_dir = "/usr/lib/aarch64-linux-gnu";
#else
    struct cfi_compare_options other = {.samples = 24, .machine = EM_X86_64};
    const char *other_dir = "/usr/lib/x86_64-linux-gnu";
#endif
    other.max_objects = options.max_objects;
    struct stat other_st;
    if (stat(other_dir, &other_st) == 0) {
        uint64_t before = t.objects;
        t.objects = 0; /* max_objects counts this walk's own */
        cfi_compare_tree(other_dir, &other, &t, NULL);
        t.objects += before;
    }
    fprintf(stderr,
            "cfi: %lu objects, %lu translated (%lu rows, %.0f ms), %lu left to libdw, "
            "%lu addresses compared, %lu differ\n",
            (unsigned long)t.objects, (unsigned long)t.translated, (unsigned long)t.rows,
            t.translator_ns / 1e6, (unsigned long)t.left_to_libdw, (unsigned long)t.addresses,
            (unsigned long)t.differing);
    ck_assert_uint_gt(t.translated, 10);
    ck_assert_uint_eq(t.failed, 0);
    ck_assert_msg(t.differing == 0, "%lu of %lu addresses differ; first: %s",
                  (unsigned long)t.differing, (unsigned long)t.addresses, t.first_difference);
}
END_TEST

/* A CFA in another register (OpenSSL's AES-GCM: `def_cfa_register rax`, then rax + 8): the
 * register's slot in the kernel's signal frame (OSP_CFA_REG), x86_64's gregs[] and aarch64's
 * regs[]; sp and the frame pointer keep their own rules, an expression stays UNKNOWN. */
START_TEST(a_cfa_in_another_register)
{
    /* The return address at CFA - 8, as libdw says it: call_frame_cfa; consts -8; plus. */
    const Dwarf_Op ra_minus8[3] = {{.atom = DW_OP_call_frame_cfa},
                                   {.atom = DW_OP_consts, .number = (Dwarf_Word)-8},
                                   {.atom = DW_OP_plus}};
    static const struct {
        uint32_t machine;
        int dwarf;
        int slot; /* -1: not OSP_CFA_REG */
    } cases[] = {
        {EM_X86_64, 0, 13},  /* rax: REG_RAX */
        {EM_X86_64, 1, 12},  /* rdx */
        {EM_X86_64, 2, 14},  /* rcx */
        {EM_X86_64, 3, 11},  /* rbx */
        {EM_X86_64, 4, 9},   /* rsi */
        {EM_X86_64, 5, 8},   /* rdi */
        {EM_X86_64, 8, 0},   /* r8 */
        {EM_X86_64, 10, 2},  /* r10: OpenSSL's other choice */
        {EM_X86_64, 15, 7},  /* r15 */
        {EM_X86_64, 16, -1}, /* the return-address column: no register */
        {EM_AARCH64, 0, 0},  {EM_AARCH64, 9, 9}, {EM_AARCH64, 28, 28}, {EM_AARCH64, 32, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct ospd_unwind_arch *arch = ospd_unwind_arch_of(cases[i].machine);
        ck_assert_ptr_nonnull(arch);
        Dwarf_Op cfa = {.atom = DW_OP_bregx, .number = (Dwarf_Word)cases[i].dwarf, .number2 = 8};
        struct ospd_frame_rules f = {.cfa = &cfa, .ncfa = 1};
        f.ra = (struct ospd_frame_register){0, ra_minus8, 3};
        f.fp = (struct ospd_frame_register){0, NULL, 0};
        if (cases[i].machine == EM_AARCH64)
            f.ra = (struct ospd_frame_register){0, NULL, 0}; /* x30 still in the register */
        struct osp_unwind_row row = ospd_unwind_row_of(arch, 0x40, &f);
        if (cases[i].slot < 0) {
            ck_assert_uint_eq(row.cfa_rule, OSP_CFA_UNKNOWN);
            continue;
        }
        ck_assert_msg(row.cfa_rule == OSP_CFA_REG, "case %zu: rule %u", i, row.cfa_rule);
        ck_assert_uint_eq(row.cfa_reg, (unsigned)cases[i].slot);
        ck_assert_uint_lt(row.cfa_reg, cases[i].machine == EM_X86_64 ? 16 : 31);
        ck_assert_int_eq(row.cfa_offset, 8);
        ck_assert_uint_eq(row.ra_rule,
                          cases[i].machine == EM_X86_64 ? OSP_RA_AT_CFA : OSP_RA_IN_LR);
        if (cases[i].machine == EM_X86_64)
            ck_assert_int_eq(row.ra_offset, -8);
    }
    /* sp and the frame pointer keep their rules. */
    const struct ospd_unwind_arch *x86 = ospd_unwind_arch_of(EM_X86_64);
    Dwarf_Op cfa = {.atom = DW_OP_breg6, .number = 16};
    struct ospd_frame_rules f = {.cfa = &cfa, .ncfa = 1};
    f.ra = (struct ospd_frame_register){0, ra_minus8, 3};
    ck_assert_uint_eq(ospd_unwind_row_of(x86, 0, &f).cfa_rule, OSP_CFA_FP);
    cfa = (Dwarf_Op){.atom = DW_OP_breg7, .number = 8};
    ck_assert_uint_eq(ospd_unwind_row_of(x86, 0, &f).cfa_rule, OSP_CFA_SP);
    /* A register's value read through memory (an expression): no row form. */
    const Dwarf_Op deref[2] = {{.atom = DW_OP_breg0, .number = 8}, {.atom = DW_OP_deref}};
    f.cfa = deref;
    f.ncfa = 2;
    ck_assert_uint_eq(ospd_unwind_row_of(x86, 0, &f).cfa_rule, OSP_CFA_UNKNOWN);
}
END_TEST

/* A CFA read from the frame (OpenSSL's SHA/AES/bignum assembly: breg7 N; deref; plus_uconst 8;
 * GCC's stack realignment through a DRAP register: breg6 -8; deref): OSP_CFA_DEREF, its base
 * (sp or fp) and addend (8-byte words) in cfa_deref; other shapes stay UNKNOWN. And from the
 * bytes: an FDE whose program says it (DW_CFA_def_cfa_expression), through the translator. */
START_TEST(a_cfa_read_from_the_frame)
{
    const Dwarf_Op ra_minus8[3] = {{.atom = DW_OP_call_frame_cfa},
                                   {.atom = DW_OP_consts, .number = (Dwarf_Word)-8},
                                   {.atom = DW_OP_plus}};
    const struct ospd_unwind_arch *x86 = ospd_unwind_arch_of(EM_X86_64);
    static const struct {
        Dwarf_Op ops[3];
        size_t nops;
        int32_t offset;
        int deref; /* -1: UNKNOWN */
    } cases[] = {
        {{{.atom = DW_OP_breg7, .number = 40},
          {.atom = DW_OP_deref},
          {.atom = DW_OP_plus_uconst, .number = 8}},
         3,
         40,
         1},
        {{{.atom = DW_OP_breg7, .number = (Dwarf_Word)-8},
          {.atom = DW_OP_deref},
          {.atom = DW_OP_plus_uconst, .number = 64}},
         3,
         -8,
         8},
        {{{.atom = DW_OP_breg6, .number = (Dwarf_Word)-8}, {.atom = DW_OP_deref}},
         2,
         -8,
         OSP_CFA_DEREF_FP},
        {{{.atom = DW_OP_bregx, .number = 6, .number2 = 16},
          {.atom = DW_OP_deref},
          {.atom = DW_OP_plus_uconst, .number = 8}},
         3,
         16,
         OSP_CFA_DEREF_FP | 1},
        {{{.atom = DW_OP_breg7, .number = 0},
          {.atom = DW_OP_deref},
          {.atom = DW_OP_plus_uconst, .number = 1016}},
         3,
         0,
         127},
        {{{.atom = DW_OP_breg7, .number = 0},
          {.atom = DW_OP_deref},
          {.atom = DW_OP_plus_uconst, .number = 1024}},
         3,
         0,
         -1},
        {{{.atom = DW_OP_breg7, .number = 0},
          {.atom = DW_OP_deref},
          {.atom = DW_OP_plus_uconst, .number = 4}},
         3,
         0,
         -1},
        {{{.atom = DW_OP_breg0, .number = 8}, {.atom = DW_OP_deref}}, 2, 0, -1}, /* rax: no base */
        {{{.atom = DW_OP_breg7, .number = 8}, {.atom = DW_OP_deref}, {.atom = DW_OP_lit8}},
         3,
         0,
         -1},
        {{{.atom = DW_OP_breg7, .number = 8}, {.atom = DW_OP_plus_uconst, .number = 8}}, 2, 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ospd_frame_rules f = {.cfa = cases[i].ops, .ncfa = cases[i].nops};
        f.ra = (struct ospd_frame_register){0, ra_minus8, 3};
        f.fp = (struct ospd_frame_register){0, NULL, 0};
        struct osp_unwind_row row = ospd_unwind_row_of(x86, 0x40, &f);
        if (cases[i].deref < 0) {
            ck_assert_msg(row.cfa_rule == OSP_CFA_UNKNOWN, "case %zu: rule %u", i, row.cfa_rule);
            continue;
        }
        ck_assert_msg(row.cfa_rule == OSP_CFA_DEREF, "case %zu: rule %u", i, row.cfa_rule);
        ck_assert_int_eq(row.cfa_offset, cases[i].offset);
        ck_assert_uint_eq(row.cfa_deref, (unsigned)cases[i].deref);
        ck_assert_uint_eq(row.ra_rule, OSP_RA_AT_CFA);
        ck_assert_int_eq(row.ra_offset, -8);
    }

    /* The bytes: build()'s CIE and FDEs, then one for [0x1060, 0x1080), the only one its
     * search table names: mov %rsp,%rax (CFA rax + 8) at 0x1063, the expression at 0x1070. */
    struct bytes frame, hdr;
    build(&frame, &hdr);
    frame.n -= 4; /* the terminator */
    uint32_t fde = (uint32_t)frame.n;
    static const uint8_t program[] = {
        0x43,       /* advance 3 */
        0x0d, 0x00, /* def_cfa_register rax */
        0x4d,       /* advance 13 */
        0x0f, 0x05, 0x77, 0x28,
        0x06, 0x23, 0x08, /* def_cfa_expression breg7 40; deref;
                           * plus_uconst 8 */
        0x00,
    };
    put32(&frame, (uint32_t)(4 + 4 + 4 + 1 + sizeof program));
    put32(&frame, fde + 4);
    put32(&frame, (uint32_t)(0x1060 - (FRAME_VADDR + frame.n)));
    put32(&frame, 0x20);
    put8(&frame, 0);
    put(&frame, program, sizeof program);
    put32(&frame, 0);
    memset(&hdr, 0, sizeof hdr);
    put8(&hdr, 1);
    put8(&hdr, 0x1b);
    put8(&hdr, 0x03);
    put8(&hdr, 0x3b);
    put32(&hdr, (uint32_t)(FRAME_VADDR - (HDR_VADDR + hdr.n)));
    put32(&hdr, 1);
    put32(&hdr, 0x1060 - HDR_VADDR);
    put32(&hdr, FRAME_VADDR + fde - HDR_VADDR);
    struct ospd_cfi_input in = input(&frame, &hdr);
    struct ospd_unwind_rows rows = {0};
    ck_assert_int_eq(ospd_cfi_rows(&in, &rows), 0);
    const struct osp_unwind_row *found = NULL;
    for (uint32_t i = 0; i < rows.count; i++)
        if (rows.rows[i].pc_offset == 0x1070 - LO)
            found = &rows.rows[i];
    ck_assert_ptr_nonnull(found);
    ck_assert_uint_eq(found->cfa_rule, OSP_CFA_DEREF);
    ck_assert_int_eq(found->cfa_offset, 40);
    ck_assert_uint_eq(found->cfa_deref, 1);
    ck_assert_int_eq(found->ra_offset, -8);
    ospd_unwind_rows_free(&rows);
}
END_TEST

Suite *cfi_suite(void)
{
    Suite *s = suite_create("cfi");
    SUITE_CASE(s, "translator", 280, hand_built_rows, damaged_bytes_stay_inside,
               libc_every_row_as_libdw, system_objects_as_libdw, debug_frame_fills_gaps,
               eh_frame_and_debug_frame_object, a_cfa_in_another_register,
               a_cfa_read_from_the_frame);
    return s;
}
