/* test-shim.c — unit tests of the shim's layers 1-4 (shim/README.md, "Layers"), linked without
 * the boot layer and the interposers: the frame-pointer walk over planted frame chains and
 * every check that ends it, the per-thread ring and the event-ring writer (wrap, pad,
 * overflow), the registry's slots and generations, the sampling policy case by case (rate,
 * credit rule, wait weight, due time), the per-process path and the handler's reading of an
 * interrupted context. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "osp_core.h"
#include "osp_handler.h"
#include "osp_policy.h"
#include "osp_unwind.h"
#include "suite.h"

/* ---- frame-pointer walk --------------------------------------------------------------- */

/* A fake stack: 64-bit words; frame records are planted at word indices. */
#define STACK_WORDS 1024
static uint64_t fake[STACK_WORDS];

static uint64_t addr_of(size_t word)
{
    return (uint64_t)(uintptr_t)&fake[word];
}

/* Plant a record at word w: [w] = next frame pointer, [w+1] = return address. */
static void plant(size_t w, uint64_t next, uint64_t ret)
{
    fake[w] = next;
    fake[w + 1] = ret;
}

static uint64_t lo_of(void)
{
    return addr_of(0);
}
static uint64_t hi_of(void)
{
    return addr_of(STACK_WORDS);
}

/* The walk found `depth` frames, exactly the pcs given (NULL-free list of `count`). */
static void expect_pcs(const uint64_t *out, uint32_t depth, const uint64_t *want, uint32_t count)
{
    ck_assert_uint_eq(depth, count);
    for (uint32_t i = 0; i < count; i++)
        ck_assert_msg(out[i] == want[i], "frame %u: %#llx, not %#llx", i,
                      (unsigned long long)out[i], (unsigned long long)want[i]);
}
/* EXPECT_PCS(out, depth, pc...): expect_pcs of the pcs listed. */
#define EXPECT_PCS(out, depth, ...)                                                                \
    expect_pcs((out), (depth), (const uint64_t[]){__VA_ARGS__},                                    \
               sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

START_TEST(walk_follows_planted_chain)
{
    memset(fake, 0, sizeof(fake));
    plant(10, addr_of(20), 0x1111);
    plant(20, addr_of(40), 0x2222);
    plant(40, 0, 0x3333);
    uint64_t out[OSP_MAX_DEPTH];
    uint32_t depth = osp__unwind_walk(0xabc, addr_of(10), lo_of(), hi_of(), out, OSP_MAX_DEPTH);
    /* The last record's next pointer is 0: the walk stops when it checks it. */
    EXPECT_PCS(out, depth, 0xabc, 0x1111, 0x2222, 0x3333);
}
END_TEST

START_TEST(walk_stops_at_zero_return_address)
{
    memset(fake, 0, sizeof(fake));
    plant(10, addr_of(20), 0x1111);
    plant(20, addr_of(30), 0);
    plant(30, 0, 0x3333);
    uint64_t out[OSP_MAX_DEPTH];
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(10), lo_of(), hi_of(), out, OSP_MAX_DEPTH), 2);
}
END_TEST

START_TEST(walk_stops_at_misaligned_frame_pointer)
{
    memset(fake, 0, sizeof(fake));
    plant(10, addr_of(20) + 4, 0x1111);
    plant(20, 0, 0x2222);
    uint64_t out[OSP_MAX_DEPTH];
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(10), lo_of(), hi_of(), out, OSP_MAX_DEPTH), 2);
    /* A misaligned first frame pointer: the pc alone. */
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(10) + 1, lo_of(), hi_of(), out, OSP_MAX_DEPTH),
                      1);
}
END_TEST

START_TEST(walk_stops_when_not_increasing)
{
    memset(fake, 0, sizeof(fake));
    plant(10, addr_of(20), 0x1111);
    plant(20, addr_of(20), 0x2222); /* points at itself */
    uint64_t out[OSP_MAX_DEPTH];
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(10), lo_of(), hi_of(), out, OSP_MAX_DEPTH), 3);
    memset(fake, 0, sizeof(fake));
    plant(10, addr_of(20), 0x1111);
    plant(20, addr_of(14), 0x2222); /* points downward */
    plant(14, addr_of(30), 0x4444);
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(10), lo_of(), hi_of(), out, OSP_MAX_DEPTH), 3);
}
END_TEST

START_TEST(walk_stops_outside_stack_bounds)
{
    memset(fake, 0, sizeof(fake));
    plant(10, addr_of(20), 0x1111);
    plant(20, addr_of(STACK_WORDS - 1), 0x2222); /* its record would end past hi */
    fake[STACK_WORDS - 1] = 0x9999;
    uint64_t out[OSP_MAX_DEPTH];
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(10), lo_of(), hi_of(), out, OSP_MAX_DEPTH), 3);
    /* A first frame pointer below lo. */
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(10), addr_of(11), hi_of(), out, OSP_MAX_DEPTH),
                      1);
    /* A chain that leaves [lo, hi) upward: hi below the second record. */
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(10), lo_of(), addr_of(21), out, OSP_MAX_DEPTH),
                      2);
    /* A record that fits exactly below hi is still read. */
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(20), lo_of(), addr_of(22), out, 2), 2);
    /* Empty bounds: nothing but the pc. */
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(10), 0, 0, out, OSP_MAX_DEPTH), 1);
}
END_TEST

START_TEST(walk_stops_at_oversized_frame)
{
    size_t words = (OSP__MAX_FRAME_BYTES / 8) * 2 + 64;
    uint64_t *big = calloc(words, 8);
    ck_assert_ptr_nonnull(big);
    uint64_t lo = (uint64_t)(uintptr_t)big, hi = lo + words * 8;
    size_t far = 8 + OSP__MAX_FRAME_BYTES / 8 + 2; /* just over 1 MiB above word 8 */
    big[8] = lo + far * 8;
    big[9] = 0x1111;
    big[far] = 0;
    big[far + 1] = 0x2222;
    uint64_t out[OSP_MAX_DEPTH];
    ck_assert_uint_eq(osp__unwind_walk(1, lo + 64, lo, hi, out, OSP_MAX_DEPTH), 2);
    /* Exactly the limit is accepted. */
    size_t edge = 8 + OSP__MAX_FRAME_BYTES / 8;
    big[8] = lo + edge * 8;
    big[edge] = 0;
    big[edge + 1] = 0x3333;
    ck_assert_uint_eq(osp__unwind_walk(1, lo + 64, lo, hi, out, OSP_MAX_DEPTH), 3);
    ck_assert_uint_eq(out[2], 0x3333);
    free(big);
}
END_TEST

START_TEST(walk_stops_at_depth_cap)
{
    memset(fake, 0, sizeof(fake));
    for (size_t w = 2; w + 4 < STACK_WORDS; w += 4)
        plant(w, addr_of(w + 4), 0x1000 + w);
    uint64_t out[OSP_MAX_DEPTH + 8];
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(2), lo_of(), hi_of(), out, OSP_MAX_DEPTH),
                      OSP_MAX_DEPTH);
    ck_assert_uint_eq(out[OSP_MAX_DEPTH - 1], 0x1000 + 2 + 4 * (OSP_MAX_DEPTH - 2));
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(2), lo_of(), hi_of(), out, 5), 5);
    ck_assert_uint_eq(osp__unwind_walk(1, addr_of(2), lo_of(), hi_of(), out, 0), 0);
}
END_TEST

START_TEST(walk_with_link_register_drops_duplicate)
{
    memset(fake, 0, sizeof(fake));
    plant(10, addr_of(20), 0x1111);
    plant(20, 0, 0x2222);
    uint64_t out[OSP_MAX_DEPTH];
    /* lr equals the first chained return address: recorded once. */
    uint32_t d = osp__unwind_walk_lr(0xa, 0x1111, addr_of(10), lo_of(), hi_of(), out, 16);
    ck_assert_uint_eq(d, 3);
    ck_assert_uint_eq(out[0], 0xa);
    ck_assert_uint_eq(out[1], 0x1111);
    ck_assert_uint_eq(out[2], 0x2222);
    /* A leaf that has not saved lr yet: lr is the caller, then the chain. */
    d = osp__unwind_walk_lr(0xa, 0x5555, addr_of(10), lo_of(), hi_of(), out, 16);
    ck_assert_uint_eq(d, 4);
    ck_assert_uint_eq(out[1], 0x5555);
    ck_assert_uint_eq(out[2], 0x1111);
}
END_TEST

#if defined(__x86_64__)
/* A page of "code" to point pc at: the prologue and ret byte patterns are planted in it. */
static _Alignas(4096) unsigned char code_page[4096];

/* x86_64 prologue/epilogue: the return address comes from the stack ([sp] at the push, at a
 * ret, after endbr64; [sp + 8] at the mov), nowhere else; and no byte outside pc's page is
 * read (a prologue that would straddle the page is not recognised). */
START_TEST(frameless_return_in_prologue_and_at_ret)
{
    static const unsigned char function[] = {
        0xf3, 0x0f, 0x1e, 0xfa, /* 0: endbr64 */
        0x55,                   /* 4: push %rbp */
        0x48, 0x89, 0xe5,       /* 5: mov %rsp,%rbp */
        0x48, 0x31, 0xf7,       /* 8: xor %rsi,%rdi */
        0x5d,                   /* 11: pop %rbp */
        0xc3,                   /* 12: ret */
    };
    memset(code_page, 0x90, sizeof code_page);
    memcpy(code_page + 64, function, sizeof function);
    uint64_t code = (uint64_t)(uintptr_t)(code_page + 64);
    memset(fake, 0, sizeof(fake));
    fake[40] = 0x1234; /* [sp] */
    fake[41] = 0x5678; /* [sp + 8] */
    uint64_t sp = addr_of(40);
    ck_assert_uint_eq(osp__unwind_x86_frameless_return(code + 0, sp, hi_of()), 0x1234);
    ck_assert_uint_eq(osp__unwind_x86_frameless_return(code + 4, sp, hi_of()), 0x1234);
    ck_assert_uint_eq(osp__unwind_x86_frameless_return(code + 5, sp, hi_of()), 0x5678);
    ck_assert_uint_eq(osp__unwind_x86_frameless_return(code + 12, sp, hi_of()), 0x1234);
    /* In the body and at the pop the frame record is in rbp: nothing from the stack. */
    ck_assert_uint_eq(osp__unwind_x86_frameless_return(code + 8, sp, hi_of()), 0);
    ck_assert_uint_eq(osp__unwind_x86_frameless_return(code + 11, sp, hi_of()), 0);
    /* The slot must lie inside [sp, hi), and sp be aligned. */
    ck_assert_uint_eq(osp__unwind_x86_frameless_return(code + 5, sp, sp + 8), 0);
    ck_assert_uint_eq(osp__unwind_x86_frameless_return(code + 4, sp + 1, hi_of()), 0);
    /* A prologue cut by the end of pc's page is not read across it. */
    memcpy(code_page + sizeof code_page - 2, function + 4, 2); /* push, 0x48 | next page */
    uint64_t last = (uint64_t)(uintptr_t)(code_page + sizeof code_page - 2);
    ck_assert_uint_eq(osp__unwind_x86_frameless_return(last, sp, hi_of()), 0);
    /* A pc whose page is gone: nothing read, no fault. */
    void *gone = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(gone, MAP_FAILED);
    munmap(gone, 4096);
    ck_assert_uint_eq(osp__unwind_x86_frameless_return((uint64_t)(uintptr_t)gone + 16, sp, hi_of()),
                      0);
}
END_TEST
#endif

/* ---- the walk by unwind rows (proto/osp_unwind.h) ------------------------------------- */

/* A table object in memory, as ospreyd lays it out: header, one image's rows, one snapshot. */
#define TABLE_SIZE (64u << 10)
static _Alignas(4096) uint8_t table[TABLE_SIZE];
#define IMAGE_START 0x10000u
#define IMAGE_END   0x20000u

static struct osp_unwind_row row(uint32_t pc_offset, uint8_t cfa_rule, int32_t cfa_offset,
                                 uint8_t fp_rule, int16_t fp_offset)
{
    return (struct osp_unwind_row){.pc_offset = pc_offset,
                                   .cfa_offset = cfa_offset,
                                   .cfa_rule = cfa_rule,
                                   .ra_rule = OSP_RA_AT_CFA,
                                   .fp_rule = fp_rule,
                                   .ra_offset = -8,
                                   .fp_offset = fp_offset};
}

/* Publish rows[0..n) for [IMAGE_START, IMAGE_END) and hand the table to the unwinder. */
static void publish_rows(const struct osp_unwind_row *rows, uint32_t n)
{
    memset(table, 0, sizeof table);
    struct osp_unwind_header *h = (struct osp_unwind_header *)table;
    h->magic = OSP_UNWIND_MAGIC;
    h->size = TABLE_SIZE;
    uint64_t rows_at = OSP_UNWIND_HEADER_SIZE, index_at = rows_at + 16u * 256u;
    memcpy(table + rows_at, rows, n * sizeof *rows);
    struct osp_unwind_index ix = {.count = 1, .generation = 1};
    struct osp_unwind_entry e = {
        .start = IMAGE_START, .end = IMAGE_END, .rows_offset = rows_at, .row_count = n};
    memcpy(table + index_at, &ix, sizeof ix);
    memcpy(table + index_at + sizeof ix, &e, sizeof e);
    atomic_store_explicit(&h->index_offset, index_at, memory_order_release);
    osp__unwind_set_tables(table, TABLE_SIZE);
}

static struct osp_unwind_entry *published_entry(void)
{
    struct osp_unwind_header *h = (struct osp_unwind_header *)table;
    return (struct osp_unwind_entry *)(table + h->index_offset + sizeof(struct osp_unwind_index));
}

/* A frameless leaf (CFA = sp + 16), a caller with a frame pointer (CFA = fp + 16, its caller's
 * fp saved at CFA - 16), and an outermost frame: three frames, the right return addresses, and
 * the end where the CFI says the return address is undefined. */
START_TEST(rows_walk_frameless_then_frame_pointer_frames_to_the_outermost)
{
    const struct osp_unwind_row rows[] = {
        row(0x000, OSP_CFA_SP, 16, OSP_FP_SAME, 0),
        row(0x100, OSP_CFA_FP, 16, OSP_FP_AT_CFA, -16),
        row(0x200, OSP_CFA_END, 0, OSP_FP_SAME, 0),
    };
    publish_rows(rows, 3);
    memset(fake, 0, sizeof fake);
    fake[101] = IMAGE_START + 0x110;               /* the leaf's return address, at CFA - 8 */
    plant(110, addr_of(120), IMAGE_START + 0x201); /* the caller's frame record */
    struct osp__regs regs = {.pc = IMAGE_START + 0x10, .sp = addr_of(100), .fp = addr_of(110)};
    uint64_t out[OSP_MAX_DEPTH];
    uint32_t depth = osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH);
    EXPECT_PCS(out, depth, IMAGE_START + 0x10, IMAGE_START + 0x110, IMAGE_START + 0x201);
    /* A return address is looked up at address - 1: 0x200 ends the range of 0x100's row, so a
     * return to IMAGE_START + 0x200 still unwinds by the caller's row (a call that ends its
     * function, the next function's first byte after it). */
    fake[101] = IMAGE_START + 0x200;
    plant(110, addr_of(120), 0);
    depth = osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH);
    ck_assert_uint_eq(depth, 2);
    ck_assert_uint_eq(out[1], IMAGE_START + 0x200);
    osp__unwind_set_tables(NULL, 0);
}
END_TEST

/* A pc in no published image, or an UNKNOWN row: the frame-pointer chain takes over, with its
 * checks; past it, the rows again. */
START_TEST(rows_fall_back_to_frame_pointers_and_back)
{
    const struct osp_unwind_row rows[] = {
        row(0x000, OSP_CFA_SP, 16, OSP_FP_SAME, 0),
        row(0x100, OSP_CFA_UNKNOWN, 0, OSP_FP_SAME, 0),
        row(0x200, OSP_CFA_END, 0, OSP_FP_SAME, 0),
    };
    publish_rows(rows, 3);
    memset(fake, 0, sizeof fake);
    /* leaf outside the image, with a frame record: fp chain -> 0x10 (SP rule) -> END */
    plant(104, addr_of(200), IMAGE_START + 0x10);
    fake[107] = IMAGE_START + 0x150; /* CFA = (104 + 2) words + 16 bytes: [CFA - 8] */
    plant(200, addr_of(300), IMAGE_START + 0x250);
    struct osp__regs regs = {.pc = 0x999, .sp = addr_of(100), .fp = addr_of(104)};
    uint64_t out[OSP_MAX_DEPTH];
    uint32_t depth = osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH);
    /* 0x999 (fp) -> +0x10 (row: sp + 16) -> +0x150 (UNKNOWN: fp chain from rbp = [104]) ->
     * +0x250 (END) */
    EXPECT_PCS(out, depth, 0x999, IMAGE_START + 0x10, IMAGE_START + 0x150, IMAGE_START + 0x250);
    osp__unwind_set_tables(NULL, 0);
}
END_TEST

/* Hostile rows end the walk, never read outside [lo, hi): a CFA that does not move up, one past
 * the stack, a saved register outside it, a frame too large. */
START_TEST(rows_that_lead_off_the_stack_end_the_walk)
{
    uint64_t out[OSP_MAX_DEPTH];
    struct osp__regs regs = {.pc = IMAGE_START + 0x10, .sp = addr_of(100), .fp = addr_of(110)};
    memset(fake, 0, sizeof fake);
    fake[101] = IMAGE_START + 0x10; /* would loop forever if the CFA did not have to rise */
    const struct osp_unwind_row not_up[] = {row(0, OSP_CFA_SP, 0, OSP_FP_SAME, 0)};
    publish_rows(not_up, 1);
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 1);
    const struct osp_unwind_row down[] = {row(0, OSP_CFA_SP, -64, OSP_FP_SAME, 0)};
    publish_rows(down, 1);
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 1);
    const struct osp_unwind_row past[] = {row(0, OSP_CFA_SP, 8 * STACK_WORDS, OSP_FP_SAME, 0)};
    publish_rows(past, 1);
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 1);
    const struct osp_unwind_row huge[] = {row(0, OSP_CFA_SP, 1 << 24, OSP_FP_SAME, 0)};
    publish_rows(huge, 1);
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, UINT64_MAX - 8, out, OSP_MAX_DEPTH), 1);
    struct osp_unwind_row fp_above = row(0, OSP_CFA_SP, 16, OSP_FP_AT_CFA, 16000);
    publish_rows(&fp_above, 1); /* the saved frame pointer's slot is past the stack */
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 1);
    /* A slot below sp was popped already (an epilogue): the register itself is the value, and
     * nothing below sp is read. */
    struct osp_unwind_row fp_below[] = {row(0, OSP_CFA_SP, 16, OSP_FP_AT_CFA, -4096),
                                        row(0x20, OSP_CFA_FP, 16, OSP_FP_SAME, 0)};
    publish_rows(fp_below, 2);
    fake[101] = IMAGE_START + 0x30;
    plant(110, 0, IMAGE_START + 0x10040);
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 3);
    ck_assert_uint_eq(out[2], IMAGE_START + 0x10040);
    /* A chain of good rows still stops at the depth cap. */
    const struct osp_unwind_row good[] = {row(0, OSP_CFA_SP, 16, OSP_FP_SAME, 0)};
    publish_rows(good, 1);
    for (size_t w = 101; w < STACK_WORDS; w += 2)
        fake[w] = IMAGE_START + 0x20;
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, 5), 5);
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), OSP_MAX_DEPTH);
    osp__unwind_set_tables(NULL, 0);
}
END_TEST

/* A corrupt table (offsets and counts outside the object, a snapshot not aligned) is no table:
 * the frame-pointer walk alone, no read outside the mapping. */
START_TEST(corrupt_tables_are_no_tables)
{
    const struct osp_unwind_row rows[] = {row(0, OSP_CFA_END, 0, OSP_FP_SAME, 0)};
    uint64_t out[OSP_MAX_DEPTH];
    memset(fake, 0, sizeof fake);
    plant(110, 0, 0x4444);
    struct osp__regs regs = {.pc = IMAGE_START + 0x10, .sp = addr_of(100), .fp = addr_of(110)};
    publish_rows(rows, 1); /* sound: the END row stops the walk at the leaf */
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 1);
    published_entry()->rows_offset = TABLE_SIZE - 8; /* rows past the end */
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 2);
    publish_rows(rows, 1);
    published_entry()->row_count = TABLE_SIZE; /* more rows than the object holds */
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 2);
    publish_rows(rows, 1);
    struct osp_unwind_header *h = (struct osp_unwind_header *)table;
    h->index_offset += 4; /* misaligned snapshot */
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 2);
    h->index_offset = TABLE_SIZE - 8; /* snapshot past the end */
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH), 2);
    osp__unwind_set_tables(NULL, 0);
}
END_TEST

#if defined(__x86_64__)
/* The kernel's signal trampoline: the interrupted registers come from the ucontext_t at sp,
 * and the frame below it is unwound from its exact pc (not pc - 1). */
START_TEST(rows_walk_through_a_signal_frame)
{
    const struct osp_unwind_row rows[] = {
        row(0x000, OSP_CFA_SP, 16, OSP_FP_SAME, 0),
        row(0x100, OSP_CFA_SIGNAL, 0, OSP_FP_SAME, 0),
        row(0x101, OSP_CFA_SP, 16, OSP_FP_SAME, 0),
        row(0x300, OSP_CFA_END, 0, OSP_FP_SAME, 0),
    };
    publish_rows(rows, 4);
    memset(fake, 0, sizeof fake);
    fake[101] = IMAGE_START + 0x101; /* a handler's return: into the trampoline (at 0x100) */
    ucontext_t uc;
    memset(&uc, 0, sizeof uc);
    uc.uc_mcontext.gregs[REG_RIP] = IMAGE_START + 0x300; /* interrupted at 0x300 exactly */
    uc.uc_mcontext.gregs[REG_RSP] = (greg_t)addr_of(400);
    uc.uc_mcontext.gregs[REG_RBP] = 0;
    memcpy(&fake[102], &uc, sizeof uc);
    struct osp__regs regs = {.pc = IMAGE_START + 0x10, .sp = addr_of(100), .fp = 0};
    uint64_t out[OSP_MAX_DEPTH];
    uint32_t depth = osp__unwind(&regs, 1, regs.sp, hi_of(), out, OSP_MAX_DEPTH);
    ck_assert_uint_eq(depth, 3);
    ck_assert_uint_eq(out[1], IMAGE_START + 0x101);
    ck_assert_uint_eq(out[2], IMAGE_START + 0x300); /* exact: its row is END, not 0x101's */
    /* A signal frame that does not fit below hi ends the walk there. */
    ck_assert_uint_eq(osp__unwind(&regs, 1, regs.sp, addr_of(110), out, OSP_MAX_DEPTH), 2);
    osp__unwind_set_tables(NULL, 0);
}
END_TEST
#endif

/* ---- event ring -------------------------------------------------------------------------- */

struct test_ring {
    struct osp_ring_header *h;
    struct osp__event_ring w;
};

static void ring_open(struct test_ring *t, uint64_t data_size)
{
    t->h = aligned_alloc(64, OSP_RING_HEADER_SIZE + data_size);
    ck_assert_ptr_nonnull(t->h);
    osp__event_ring_init_header(t->h, data_size, 997, 1, 2);
    osp__event_ring_attach(&t->w, t->h);
}

static int pads_seen;

/* The consumer side, as ospreyd does it: next record at tail (PADs skipped), or NULL. */
static const struct osp_rec_header *ring_next(struct test_ring *t, uint64_t *tail)
{
    uint64_t head = osp_ring_load_head_acquire(t->h);
    while (*tail < head) {
        const struct osp_rec_header *r =
            (const void *)(t->w.data + (*tail & (t->h->data_size - 1)));
        ck_assert_uint_ge(r->size, 8);
        ck_assert_uint_eq(r->size % 8, 0);
        ck_assert_uint_le((*tail & (t->h->data_size - 1)) + r->size, t->h->data_size);
        *tail += r->size;
        if (r->type != OSP_REC_PAD)
            return r;
        pads_seen++;
    }
    return NULL;
}

static int write_repeat(struct test_ring *t, uint32_t slot)
{
    struct osp_rec_repeat rec = {.slot = slot};
    return osp__event_ring_write(&t->w, OSP_REC_REPEAT, &rec, sizeof(rec), NULL, 0);
}

START_TEST(event_ring_round_trips_records)
{
    struct test_ring t;
    ring_open(&t, 4096);
    ck_assert_uint_eq(t.h->magic, OSP_RING_MAGIC);
    ck_assert_uint_eq(t.h->data_offset, OSP_RING_HEADER_SIZE);
    ck_assert_uint_eq(atomic_load(&t.h->shim_state), OSP_SHIM_RUNNING);
#if defined(__x86_64__)
    ck_assert_str_eq(t.h->platform, "linux-x86_64");
#endif
    struct osp_rec_thread_start start = {.slot = 3, .generation = 7, .fiber = -1, .label_len = 6};
    ck_assert_int_eq(
        osp__event_ring_write(&t.w, OSP_REC_THREAD_START, &start, sizeof(start), "effect", 6), 0);
    uint64_t tail = 0;
    const struct osp_rec_header *r = ring_next(&t, &tail);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->type, OSP_REC_THREAD_START);
    ck_assert_uint_eq(r->size, osp_rec_align(sizeof(start) + 6));
    const struct osp_rec_thread_start *s = (const void *)r;
    ck_assert_uint_eq(s->slot, 3);
    ck_assert_uint_eq(s->generation, 7);
    ck_assert_int_eq(s->fiber, -1);
    ck_assert_mem_eq((const char *)(s + 1), "effect", 6);
    ck_assert_ptr_null(ring_next(&t, &tail));
    free(t.h);
}
END_TEST

START_TEST(event_ring_pads_at_the_end_and_wraps)
{
    struct test_ring t;
    ring_open(&t, 256);
    uint64_t tail = 0;
    uint32_t written = 0, read = 0;
    pads_seen = 0;
    /* 32-byte records into 256 bytes, with a 24-byte record now and then so records stop
     * lining up with the end: every wrap then needs a PAD. */
    for (int i = 0; i < 200; i++) {
        if (i % 3 == 0) {
            struct osp_rec_thread_end e = {.slot = 1000 + (uint32_t)i};
            ck_assert_int_eq(
                osp__event_ring_write(&t.w, OSP_REC_THREAD_END, &e, sizeof(e), "12345678", 8), 0);
        } else {
            ck_assert_int_eq(write_repeat(&t, (uint32_t)i), 0);
        }
        written++;
        const struct osp_rec_header *r = ring_next(&t, &tail);
        ck_assert_ptr_nonnull(r);
        read++;
        if (i % 3 == 0) {
            ck_assert_uint_eq(r->type, OSP_REC_THREAD_END);
            ck_assert_uint_eq(((const struct osp_rec_thread_end *)r)->slot, 1000 + (uint32_t)i);
        } else {
            ck_assert_uint_eq(r->type, OSP_REC_REPEAT);
            ck_assert_uint_eq(((const struct osp_rec_repeat *)r)->slot, (uint32_t)i);
        }
        osp_ring_store_tail_release(t.h, tail);
    }
    ck_assert_uint_eq(written, read);
    ck_assert_int_gt(pads_seen, 10);
    ck_assert_uint_gt(osp_ring_load_head_own(t.h), 256 * 10); /* it wrapped many times */
    free(t.h);
}
END_TEST

START_TEST(event_ring_full_drops_and_never_overwrites)
{
    struct test_ring t;
    ring_open(&t, 256);
    int ok = 0;
    while (write_repeat(&t, (uint32_t)ok) == 0)
        ok++;
    ck_assert_int_eq(ok, 256 / 32);
    ck_assert_int_eq(write_repeat(&t, 99), -ENOSPC);
    uint64_t new_head;
    ck_assert_ptr_null(osp__event_ring_reserve(&t.w, 8, &new_head));
    osp__event_ring_count_drops(&t.w, 2);
    ck_assert_uint_eq(atomic_load(&t.h->dropped), 2);
    /* The unread records are intact. */
    uint64_t tail = 0;
    for (int i = 0; i < ok; i++) {
        const struct osp_rec_header *r = ring_next(&t, &tail);
        ck_assert_uint_eq(((const struct osp_rec_repeat *)r)->slot, (uint32_t)i);
    }
    /* Free one 32-byte record's worth: a 40-byte record does not fit, and is not written. */
    osp_ring_store_tail_release(t.h, 32);
    struct osp_rec_thread_start e = {.label_len = 8};
    ck_assert_int_eq(
        osp__event_ring_write(&t.w, OSP_REC_THREAD_START, &e, sizeof(e), "12345678", 8), -ENOSPC);
    ck_assert_int_eq(write_repeat(&t, 8), 0);
    /* Oversized or misaligned sizes are refused. */
    ck_assert_ptr_null(osp__event_ring_reserve(&t.w, 12, &new_head));
    ck_assert_ptr_null(osp__event_ring_reserve(&t.w, 512, &new_head));
    free(t.h);
}
END_TEST

/* ---- registry ---------------------------------------------------------------------------- */

static struct test_ring reg_ring;
static struct osp__registry reg;

static void registry_setup(void)
{
    ring_open(&reg_ring, 1 << 16);
    ck_assert_int_eq(osp__registry_init(&reg, &reg_ring.w, 4), 0);
}

static void registry_teardown(void)
{
    osp__registry_destroy(&reg);
    free(reg_ring.h);
    osp__tls_slot = NULL;
}

START_TEST(registry_registers_and_reuses_slots_with_new_generations)
{
    uint64_t tail = 0;
    ck_assert_int_eq(osp__registry_register(&reg, 0, "main"), 0);
    struct osp__slot *s = osp__tls_slot;
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->active, 1);
    ck_assert_uint_gt(s->stack_hi, s->stack_lo);
    uint64_t here = (uint64_t)(uintptr_t)&tail;
    ck_assert(here >= s->stack_lo && here < s->stack_hi); /* bounds hold this frame */
    const struct osp_rec_thread_start *st = (const void *)ring_next(&reg_ring, &tail);
    ck_assert_uint_eq(st->h.type, OSP_REC_THREAD_START);
    ck_assert_uint_eq(st->slot, 0);
    ck_assert_uint_eq(st->generation, 1);
    ck_assert_int_eq(st->fiber, 0);
    ck_assert_uint_eq(st->label_len, 4);
    ck_assert_int_eq(st->tid, gettid());

    osp__registry_unregister(&reg);
    ck_assert_ptr_null(osp__tls_slot);
    ck_assert_int_eq(s->active, 0);
    const struct osp_rec_thread_end *en = (const void *)ring_next(&reg_ring, &tail);
    ck_assert_uint_eq(en->h.type, OSP_REC_THREAD_END);
    ck_assert_uint_eq(en->slot, 0);
    ck_assert_uint_eq(en->generation, 1);
    osp__registry_unregister(&reg); /* not registered: nothing */
    ck_assert_ptr_null(ring_next(&reg_ring, &tail));

    /* The slot is reused under the next generation. */
    ck_assert_int_eq(osp__registry_register(&reg, 5, "fiber"), 0);
    ck_assert_ptr_eq(osp__tls_slot, s);
    st = (const void *)ring_next(&reg_ring, &tail);
    ck_assert_uint_eq(st->slot, 0);
    ck_assert_uint_eq(st->generation, 2);

    /* Registering again re-registers: the old generation ends, a new one starts with the
     * new label (a runtime's own label wins over the automatic one). */
    ck_assert_int_eq(osp__registry_register(&reg, -1, "effect"), 0);
    en = (const void *)ring_next(&reg_ring, &tail);
    ck_assert_uint_eq(en->h.type, OSP_REC_THREAD_END);
    ck_assert_uint_eq(en->generation, 2);
    st = (const void *)ring_next(&reg_ring, &tail);
    ck_assert_uint_eq(st->h.type, OSP_REC_THREAD_START);
    ck_assert_uint_eq(st->generation, 3);
    ck_assert_int_eq(st->fiber, -1);
    ck_assert_mem_eq((const char *)(st + 1), "effect", 6);
    osp__registry_unregister(&reg);
}
END_TEST

START_TEST(registry_renames_only_automatic_registrations)
{
    uint64_t tail = 0;
    ck_assert_int_eq(osp__registry_register(&reg, 0, "main"), 0);
    ring_next(&reg_ring, &tail);
    /* An explicit label is the runtime's: a thread name does not replace it. */
    ck_assert_int_eq(osp__registry_rename(&reg, pthread_self(), "renamed"), 0);
    ck_assert_ptr_null(ring_next(&reg_ring, &tail));
    ck_assert_int_eq(osp__registry_register(&reg, 77, "thread"), 0);
    osp__registry_mark_automatic(&reg, 0);
    ring_next(&reg_ring, &tail); /* THREAD_END of the explicit registration */
    ring_next(&reg_ring, &tail); /* THREAD_START, generation 2 */
    ck_assert_int_eq(osp__registry_rename(&reg, pthread_self(), "cruncher"), 1);
    const struct osp_rec_thread_end *en = (const void *)ring_next(&reg_ring, &tail);
    ck_assert_uint_eq(en->h.type, OSP_REC_THREAD_END);
    ck_assert_uint_eq(en->generation, 2);
    const struct osp_rec_thread_start *st = (const void *)ring_next(&reg_ring, &tail);
    ck_assert_uint_eq(st->h.type, OSP_REC_THREAD_START);
    ck_assert_uint_eq(st->generation, 3);
    ck_assert_int_eq(st->fiber, 77);
    ck_assert_uint_eq(st->label_len, 8);
    ck_assert_mem_eq((const char *)(st + 1), "cruncher", 8);
    osp__registry_unregister(&reg);
}
END_TEST

struct worker {
    pthread_barrier_t *registered, *release;
    struct osp__slot *slot;
    int err;
};

static void *register_and_wait(void *arg)
{
    struct worker *w = arg;
    w->err = osp__registry_register(&reg, gettid(), "thread");
    w->slot = osp__tls_slot;
    pthread_barrier_wait(w->registered);
    pthread_barrier_wait(w->release);
    osp__registry_unregister(&reg);
    return NULL;
}

START_TEST(registry_gives_concurrent_threads_distinct_slots_up_to_capacity)
{
    enum { N = 5 }; /* capacity is 4 */
    pthread_barrier_t registered, release;
    pthread_barrier_init(&registered, NULL, N + 1);
    pthread_barrier_init(&release, NULL, N + 1);
    struct worker w[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        w[i] = (struct worker){&registered, &release, NULL, 0};
        pthread_create(&t[i], NULL, register_and_wait, &w[i]);
    }
    pthread_barrier_wait(&registered);
    int ok = 0, full = 0;
    for (int i = 0; i < N; i++) {
        if (w[i].err == 0) {
            ok++;
            for (int j = 0; j < i; j++)
                ck_assert(w[j].err != 0 || w[j].slot != w[i].slot);
        } else {
            ck_assert_int_eq(w[i].err, -ENOSPC);
            ck_assert_ptr_null(w[i].slot);
            full++;
        }
    }
    ck_assert_int_eq(ok, 4);
    ck_assert_int_eq(full, 1);
    pthread_barrier_wait(&release);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    ck_assert_uint_eq(reg.count, 4);
    for (uint32_t i = 0; i < reg.count; i++)
        ck_assert_int_eq(reg.slots[i]->active, 0);
    pthread_barrier_destroy(&registered);
    pthread_barrier_destroy(&release);
}
END_TEST

START_TEST(samples_go_to_the_slot_ring_with_their_weight)
{
    /* A registration's samples are written to a ring of its own, as weighted records. */
    ck_assert_int_eq(osp__registry_register(&reg, 0, "main"), 0);
    struct osp__slot *s = osp__tls_slot;
    uint8_t *area = aligned_alloc(64, sizeof(struct osp_slot) + 4096);
    memset(area, 0, sizeof(struct osp_slot) + 4096);
    struct osp_slot *shared = (struct osp_slot *)area;
    reg_ring.h->slot_ring_size = 4096;
    struct osp__event_ring w;
    osp__slot_ring_attach(&w, reg_ring.h, shared);
    uint64_t pcs[2] = {0x10, 0x20};
    osp__emit_sample(&w, s, 100, OSP_STATE_ON_CPU, 3, pcs, 2, OSP_UNWIND_OUTERMOST);
    osp__emit_sample(&w, s, 200, OSP_STATE_WAITING, 40, pcs, 1, OSP_UNWIND_GO_ON);
    const struct osp_rec_sample_weighted *r = (const void *)(area + sizeof(struct osp_slot));
    ck_assert_uint_eq(r->h.type, OSP_REC_SAMPLE_WEIGHTED);
    ck_assert_uint_eq(r->h.size, sizeof(*r) + 16);
    ck_assert_uint_eq(r->weight, 3);
    ck_assert_uint_eq(r->stop, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(r->slot, s->index);
    ck_assert_uint_eq(r->generation, s->generation);
    const struct osp_rec_sample_weighted *r2 = (const void *)((const uint8_t *)r + r->h.size);
    ck_assert_uint_eq(r2->state, OSP_STATE_WAITING);
    ck_assert_uint_eq(r2->weight, 40);
    ck_assert_uint_eq(r2->stop, 0);
    ck_assert_uint_eq(r2->t_ns, 200);
    ck_assert_uint_eq(osp_index_load_own(&shared->head), r->h.size + r2->h.size);
    /* Full: samples stop short of the end and say so; the caller decides what is lost (the
     * handler carries the weight to the thread's next sample). */
    int n = 0;
    while (osp__emit_sample(&w, s, 300, OSP_STATE_ON_CPU, 2, pcs, 2, OSP_UNWIND_OUTERMOST) == 0 &&
           n < 10000)
        n++;
    ck_assert_int_lt(n, 10000);
    ck_assert_int_eq(
        osp__emit_sample(&w, s, 300, OSP_STATE_ON_CPU, 2, pcs, 2, OSP_UNWIND_OUTERMOST), -ENOSPC);
    ck_assert_uint_le(osp_index_load_own(&shared->head), 4096);
    ck_assert_uint_eq(atomic_load(&reg_ring.h->dropped), 0);
    free(area);
    osp__registry_unregister(&reg);
}
END_TEST

/* The registered thread's slot ring moved to a 4 KiB ring of the test's (its records read
 * from the returned area, after the struct osp_slot); `saved` keeps the ring it had. */
static uint8_t *slot_ring_of_the_test(struct osp__slot *s, struct osp__event_ring *saved)
{
    uint8_t *area = aligned_alloc(64, sizeof(struct osp_slot) + 4096);
    ck_assert_ptr_nonnull(area);
    memset(area, 0, sizeof(struct osp_slot) + 4096);
    reg_ring.h->slot_ring_size = 4096;
    *saved = s->ring;
    osp__slot_ring_attach(&s->ring, reg_ring.h, (struct osp_slot *)area);
    return area;
}

/* A fiber its runtime declared reaches the thread's ring as a FIBER record before the first
 * sample taken on it, once (not before each sample), and fiber 0 when the thread is back on its
 * own stack; never to a reader that did not ask for them (an older ospreyd rejects the type). */
START_TEST(fiber_records_precede_a_declared_fibers_samples)
{
    ck_assert_int_eq(osp__registry_register(&reg, 0, "main"), 0);
    struct osp__slot *s = osp__tls_slot;
    struct osp__event_ring saved;
    uint8_t *area = slot_ring_of_the_test(s, &saved);
    static char stack[4096];
    s->fiber_lo = (uint64_t)(uintptr_t)stack;
    s->fiber_id = 7;
    s->fiber_label = "task";
    s->fiber_hi = s->fiber_lo + sizeof stack;
    uint64_t pcs[1] = {0x10};
    const uint8_t *at = area + sizeof(struct osp_slot);
    atomic_store(&reg_ring.h->reader_features, 0u);
    ck_assert_int_eq(osp__emit_sample(&s->ring, s, 1, OSP_STATE_ON_CPU, 1, pcs, 1, 0), 0);
    ck_assert_uint_eq(((const struct osp_rec_header *)at)->type, OSP_REC_SAMPLE_WEIGHTED);
    at += ((const struct osp_rec_header *)at)->size;

    atomic_store(&reg_ring.h->reader_features, OSP_READER_FIBERS);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(osp__emit_sample(&s->ring, s, 2, OSP_STATE_ON_CPU, 1, pcs, 1, 0), 0);
    const struct osp_rec_fiber *f = (const void *)at;
    ck_assert_uint_eq(f->h.type, OSP_REC_FIBER);
    ck_assert_int_eq(f->fiber, 7);
    ck_assert_uint_eq(f->slot, s->index);
    ck_assert_uint_eq(f->generation, s->generation);
    /* The label is read from the runtime's string without faulting (where process_vm_readv
     * works: qemu-user, which runs the arm64 tests, has none, and the label is then empty). */
    uint64_t probe;
    if (osp__read_code((uint64_t)(uintptr_t)s->fiber_label, &probe, 1) == 0) {
        ck_assert_uint_eq(f->h.size, sizeof *f + 8);
        ck_assert_uint_eq(f->label_len, 4);
        ck_assert_mem_eq(f + 1, "task", 4);
    } else {
        ck_assert_uint_eq(f->h.size, sizeof *f);
        ck_assert_uint_eq(f->label_len, 0);
    }
    at += f->h.size;
    for (int i = 0; i < 2; i++) {
        ck_assert_uint_eq(((const struct osp_rec_header *)at)->type, OSP_REC_SAMPLE_WEIGHTED);
        at += ((const struct osp_rec_header *)at)->size;
    }
    /* Back on the thread's own stack. */
    s->fiber_hi = 0;
    ck_assert_int_eq(osp__emit_sample(&s->ring, s, 3, OSP_STATE_ON_CPU, 1, pcs, 1, 0), 0);
    f = (const void *)at;
    ck_assert_uint_eq(f->h.type, OSP_REC_FIBER);
    ck_assert_int_eq(f->fiber, 0);
    ck_assert_uint_eq(f->label_len, 0);
    ck_assert_uint_eq(f->h.size, sizeof *f);
    at += f->h.size;
    ck_assert_uint_eq(((const struct osp_rec_header *)at)->type, OSP_REC_SAMPLE_WEIGHTED);
    at += ((const struct osp_rec_header *)at)->size;
    /* A label that runs into a page that cannot be read, and one that is no memory at all:
     * read as far as they go, never a fault. */
    char *pages = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(pages, MAP_FAILED);
    ck_assert_int_eq(mprotect(pages + 4096, 4096, PROT_NONE), 0);
    memcpy(pages + 4096 - 2, "ab", 2);
    const char *labels[] = {pages + 4096 - 2, (const char *)16};
    for (int i = 0; i < 2; i++) {
        s->fiber_hi = 0;
        s->fiber_id = 8 + i;
        s->fiber_label = labels[i];
        s->fiber_hi = s->fiber_lo + sizeof stack;
        ck_assert_int_eq(osp__emit_sample(&s->ring, s, 4, OSP_STATE_ON_CPU, 1, pcs, 1, 0), 0);
        f = (const void *)at;
        ck_assert_uint_eq(f->h.type, OSP_REC_FIBER);
        ck_assert_int_eq(f->fiber, 8 + i);
        if (osp__read_code((uint64_t)(uintptr_t)pages, &probe, 1) == 0)
            ck_assert_uint_eq(f->label_len, i == 0 ? 2 : 0);
        at += f->h.size;
        at += ((const struct osp_rec_header *)at)->size;
    }
    munmap(pages, 2 * 4096);
    atomic_store(&reg_ring.h->reader_features, 0u);
    s->fiber_lo = 0;
    s->ring = saved;
    free(area);
    osp__registry_unregister(&reg);
}
END_TEST

START_TEST(samples_stop_short_of_a_full_event_ring)
{
    ck_assert_int_eq(osp__registry_register(&reg, 0, "main"), 0);
    struct osp__slot *s = osp__tls_slot;
    uint64_t pcs[OSP_MAX_DEPTH] = {1};
    pthread_mutex_lock(&reg.lock);
    int n = 0;
    while (osp__emit_sample(reg.ring, s, 1, OSP_STATE_ON_CPU, 1, pcs, OSP_MAX_DEPTH,
                            OSP_UNWIND_DEPTH) == 0 &&
           n < 10000)
        n++;
    pthread_mutex_unlock(&reg.lock);
    ck_assert_int_lt(n, 10000);
    /* Samples stopped while a quarter of the ring was still free ... */
    uint64_t used = osp_ring_load_head_own(reg_ring.h);
    ck_assert_uint_ge((1 << 16) - used, (1 << 16) / 4);
    ck_assert_uint_lt((1 << 16) - used, (1 << 16) / 4 + 40 + OSP_MAX_DEPTH * 8);
    /* ... so the thread's end still gets through. */
    osp__registry_unregister(&reg);
    uint64_t tail = 0;
    const struct osp_rec_header *r, *last = NULL;
    while ((r = ring_next(&reg_ring, &tail)) != NULL)
        last = r;
    ck_assert_ptr_nonnull(last);
    ck_assert_uint_eq(last->type, OSP_REC_THREAD_END);
}
END_TEST

/* ---- parsers ----------------------------------------------------------------------------- */

/* OSPREY_PROFILE_HZ's rate from text; what it said of the text is `bad` (-1: not checked). */
static uint32_t rate_of(const char *text, int bad)
{
    int said = -1;
    uint32_t rate = osp__parse_rate(text, &said);
    ck_assert_msg(bad < 0 || said == bad, "\"%s\": bad %d, not %d", text ? text : "(null)", said,
                  bad);
    return rate;
}

START_TEST(rate_is_clamped_and_defaults)
{
    ck_assert_uint_eq(rate_of(NULL, 0), 997);
    ck_assert_uint_eq(rate_of("", -1), 997);
    ck_assert_uint_eq(rate_of("250", 0), 250);
    ck_assert_uint_eq(rate_of("10000", 0), 10000);
    ck_assert_uint_eq(rate_of("3", 2), 10);
    ck_assert_uint_eq(rate_of("-5", 2), 10);
    ck_assert_uint_eq(rate_of("50000", 2), 10000);
    ck_assert_uint_eq(rate_of("99999999999999999999999", 2), 10000);
    ck_assert_uint_eq(rate_of("fast", 1), 997);
    ck_assert_uint_eq(rate_of("100x", 1), 997);
}
END_TEST

START_TEST(per_pid_path_inserts_before_extension)
{
    char out[256];
    ck_assert_int_eq(osp_per_pid_path("/tmp/out.json", 42, NULL, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/tmp/out.42.json");
    ck_assert_int_eq(osp_per_pid_path("/tmp/out", 42, NULL, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/tmp/out.42");
    ck_assert_int_eq(osp_per_pid_path("/a.b/out", 7, NULL, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/a.b/out.7");
    ck_assert_int_eq(osp_per_pid_path("/tmp/.hidden", 7, NULL, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/tmp/.hidden.7");
    ck_assert_int_eq(osp_per_pid_path("/tmp/x.tar.gz", 7, "ab", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/tmp/x.tar.7-ab.gz");
    volatile size_t small = 8; /* too small (volatile: the check is at run time) */
    ck_assert_int_eq(osp_per_pid_path("/tmp/out.json", 42, NULL, out, small), -ENAMETOOLONG);
}
END_TEST

START_TEST(credit_rule_pays_whole_periods_of_cpu_time)
{
    const uint64_t period = 1000000; /* 1 ms */
    struct osp__credit c = {.paid_ns = 0};
    uint64_t needed;
    /* Less than half a period: nothing yet; the rest is what is needed. */
    ck_assert_uint_eq(osp__credit_take(&c, 400000, period, &needed), 0);
    ck_assert_uint_eq(needed, 100000);
    /* Half a period rounds up to one sample, and the next is due a whole period later. */
    ck_assert_uint_eq(osp__credit_take(&c, 500000, period, &needed), 1);
    ck_assert_uint_eq(c.paid_ns, 1000000);
    ck_assert_uint_eq(needed, 1000000);
    /* A thread found late pays every period it ran, at once. */
    ck_assert_uint_eq(osp__credit_take(&c, 4600000, period, &needed), 4);
    ck_assert_uint_eq(c.paid_ns, 5000000);
    /* Over the lifetime, samples = CPU time / period, rounded. */
    struct osp__credit d = {0};
    uint32_t total = 0;
    for (uint64_t cpu = 0; cpu <= 100 * period; cpu += 370000)
        total += osp__credit_take(&d, cpu, period, &needed);
    ck_assert_int_ge(total, 99);
    ck_assert_int_le(total, 100);
    /* A backlog beyond the cap is not charged to this stack. */
    struct osp__credit e = {0};
    ck_assert_uint_eq(osp__credit_take(&e, 1000 * period, period, &needed),
                      OSP__MAX_WEIGHT_NS / period);
    ck_assert_uint_eq(e.paid_ns, 1000 * period);
}
END_TEST

START_TEST(credit_rule_at_a_calls_end_pays_only_the_recent_cpu_time)
{
    const uint64_t period = 1000000;
    uint64_t needed;
    /* 21 periods unpaid, 1 ms of them run since the last reading: one is paid at the call's
     * end and 20 stay due, for a sample at a running instant. */
    struct osp__credit c = {0};
    ck_assert_uint_eq(osp__credit_take_recent(&c, 21 * period, period, period, &needed), 1);
    ck_assert_uint_eq(c.paid_ns, period);
    ck_assert_uint_eq(needed, 0);
    ck_assert_uint_eq(osp__credit_take(&c, 21 * period, period, &needed), 20);
    ck_assert_uint_eq(c.paid_ns, 21 * period);
    /* Little run since the reading: still one, as the timer that fired is owed it. */
    struct osp__credit d = {0};
    ck_assert_uint_eq(osp__credit_take_recent(&d, 5 * period, 1000, period, &needed), 1);
    ck_assert_uint_eq(d.paid_ns, period);
    /* All of it recent (a thread working in the kernel): as osp__credit_take. */
    struct osp__credit e = {0};
    ck_assert_uint_eq(osp__credit_take_recent(&e, 4600000, 4600000, period, &needed), 5);
    ck_assert_uint_eq(e.paid_ns, 5 * period);
    ck_assert_uint_eq(needed, 900000);
    /* Nothing due: nothing paid. */
    struct osp__credit f = {0};
    ck_assert_uint_eq(osp__credit_take_recent(&f, 400000, 400000, period, &needed), 0);
    ck_assert_uint_eq(needed, 100000);
}
END_TEST

START_TEST(credit_rule_first_sample_counts_only_cpu_time_since_registration)
{
    const uint64_t period = 1000000;
    /* Registration sets paid_ns to the thread's CPU clock then: 5 s used before are not ours. */
    struct osp__credit c = {.paid_ns = 5000000000u};
    uint64_t needed;
    ck_assert_uint_eq(osp__credit_take(&c, 5000000000u + 300000, period, &needed), 0);
    ck_assert_uint_eq(needed, 200000);
    ck_assert_uint_eq(c.paid_ns, 5000000000u); /* nothing paid */
    ck_assert_uint_eq(osp__credit_take(&c, 5000000000u + 700000, period, &needed), 1);
    ck_assert_uint_eq(c.paid_ns, 5000000000u + period);
    ck_assert_uint_eq(needed, 800000); /* paid 0.3 ahead: half a period and that */
}
END_TEST

START_TEST(credit_rule_rounds_periods_to_the_nearest)
{
    const uint64_t period = 1000000;
    uint64_t needed;
    /* Just under half a period: not yet, and 1 ns is what is missing. */
    struct osp__credit c = {0};
    ck_assert_uint_eq(osp__credit_take(&c, period / 2 - 1, period, &needed), 0);
    ck_assert_uint_eq(needed, 1);
    /* Less than a period but at least half: one. */
    c.paid_ns = 0;
    ck_assert_uint_eq(osp__credit_take(&c, 900000, period, &needed), 1);
    ck_assert_uint_eq(needed, 600000);
    /* 1.49 periods: one; 1.5: two. */
    c.paid_ns = 0;
    ck_assert_uint_eq(osp__credit_take(&c, 1490000, period, &needed), 1);
    c.paid_ns = 0;
    ck_assert_uint_eq(osp__credit_take(&c, 1500000, period, &needed), 2);
    ck_assert_uint_eq(c.paid_ns, 2 * period);
    ck_assert_uint_eq(needed, period); /* half a period ahead: the next one a period later */
    /* Several periods at once, and the remainder stays owed. */
    c.paid_ns = 0;
    ck_assert_uint_eq(osp__credit_take(&c, 7200000, period, &needed), 7);
    ck_assert_uint_eq(c.paid_ns, 7 * period);
    ck_assert_uint_eq(needed, 300000);
}
END_TEST

START_TEST(credit_rule_caps_a_backlog_at_100_ms_or_16_periods)
{
    uint64_t needed;
    /* 1 kHz: 100 ms is 100 periods; a backlog of 1000 pays 100, and none is owed after. */
    struct osp__credit c = {0};
    ck_assert_uint_eq(osp__credit_take(&c, 1000 * 1000000u, 1000000, &needed), 100);
    ck_assert_uint_eq(c.paid_ns, 1000 * 1000000u);
    ck_assert_uint_eq(needed, 500000);
    /* 10 kHz: 1000 periods of 100 us. */
    c.paid_ns = 0;
    ck_assert_uint_eq(osp__credit_take(&c, 5000 * 100000u, 100000, &needed), 1000);
    ck_assert_uint_eq(c.paid_ns, 5000 * 100000u);
    /* 100 Hz: 100 ms is only 10 periods; the cap is at least 16. */
    c.paid_ns = 0;
    ck_assert_uint_eq(osp__credit_take(&c, 100 * 10000000u, 10000000, &needed), 16);
    ck_assert_uint_eq(c.paid_ns, 100 * 10000000u);
    /* Exactly at the cap: everything paid, nothing dropped. */
    c.paid_ns = 0;
    ck_assert_uint_eq(osp__credit_take(&c, 16 * 10000000u, 10000000, &needed), 16);
    ck_assert_uint_eq(c.paid_ns, 16 * 10000000u);
}
END_TEST

START_TEST(credit_rule_pays_nothing_for_a_clock_behind_what_is_paid)
{
    const uint64_t period = 1000000;
    uint64_t needed;
    /* A CPU clock behind what is paid (read before the last payment, or a slot's credit left
     * from another thread): no sample, nothing changes, and more CPU time is needed. */
    struct osp__credit c = {.paid_ns = 10 * period};
    ck_assert_uint_eq(osp__credit_take(&c, 3 * period, period, &needed), 0);
    ck_assert_uint_eq(c.paid_ns, 10 * period);
    ck_assert_uint_eq(needed, 7 * period + period / 2);
    ck_assert_uint_eq(osp__credit_needed(&c, 3 * period, period), 7 * period + period / 2);
    /* Once the clock is half a period past what is paid, samples resume. */
    ck_assert_uint_eq(osp__credit_take(&c, 10 * period + period / 2, period, &needed), 1);
    ck_assert_uint_eq(c.paid_ns, 11 * period);
}
END_TEST

START_TEST(credit_needed_is_what_take_reports_without_paying)
{
    const uint64_t period = 1000000;
    struct osp__credit c = {.paid_ns = 2 * period};
    ck_assert_uint_eq(osp__credit_needed(&c, 2 * period, period), period / 2);
    ck_assert_uint_eq(osp__credit_needed(&c, 2 * period + 400000, period), 100000);
    ck_assert_uint_eq(osp__credit_needed(&c, 2 * period + period / 2, period), 0);
    ck_assert_uint_eq(osp__credit_needed(&c, 9 * period, period), 0); /* overdue */
    ck_assert_uint_eq(c.paid_ns, 2 * period);
    uint64_t needed;
    struct osp__credit d = c;
    osp__credit_take(&d, 2 * period + 400000, period, &needed);
    ck_assert_uint_eq(needed, osp__credit_needed(&c, 2 * period + 400000, period));
}
END_TEST

START_TEST(wait_weight_is_wall_time_less_cpu_time_in_periods)
{
    const uint64_t p = 1000000;
    ck_assert_uint_eq(osp__wait_weight(0, 10 * p, 0, 2 * p, p), 8);
    ck_assert_uint_eq(osp__wait_weight(5, 5 + 400000, 0, 0, p), 0); /* too short to record */
    ck_assert_uint_eq(osp__wait_weight(5, 5 + 500000, 0, 0, p), 1); /* half rounds up */
    ck_assert_uint_eq(osp__wait_weight(0, 3 * p, 0, 4 * p, p), 0);  /* it ran all along */
    /* A guarded call reads no CPU clock (0 at both ends): its wall time. */
    ck_assert_uint_eq(osp__wait_weight(p, 4 * p, 0, 0, p), 3);
    /* Clocks that went backwards count as no time. */
    ck_assert_uint_eq(osp__wait_weight(10 * p, 2 * p, 0, 0, p), 0);
    ck_assert_uint_eq(osp__wait_weight(0, 5 * p, 9 * p, 1 * p, p), 5);
    /* A wait too long for the field is written as the most it can hold. */
    ck_assert_uint_eq(osp__wait_weight(0, UINT64_MAX / 2, 0, 0, 1000), UINT32_MAX);
}
END_TEST

START_TEST(wait_weight_carries_its_rounding_to_the_next_wait)
{
    const uint64_t p = 10000000; /* 100 Hz */
    int64_t carry = 0;
    uint32_t total = 0;
    /* 100 naps of 15 ms: 150 periods, not 200 (each alone rounds to 2). */
    for (int i = 0; i < 100; i++)
        total += osp__wait_weight_carry(0, 15000000, 0, 0, p, &carry);
    ck_assert_uint_eq(total, 150);
    ck_assert(carry >= -(int64_t)p / 2 && carry < (int64_t)p / 2);
    /* 1,000 waits of 0.3 ms: 30 periods, where each alone is too short to record. */
    carry = 0;
    total = 0;
    for (int i = 0; i < 1000; i++)
        total += osp__wait_weight_carry(5, 5 + 300000, 0, 0, p, &carry);
    ck_assert_uint_eq(total, 30);
    /* CPU time used is no wait; a carry out of range (a reused slot) starts again at 0. */
    carry = 3 * (int64_t)p;
    ck_assert_uint_eq(osp__wait_weight_carry(0, 4 * p, 0, p, p, &carry), 3);
    ck_assert_int_eq(carry, 0);
    carry = -(int64_t)p / 2;
    ck_assert_uint_eq(osp__wait_weight_carry(0, p / 4, 0, 0, p, &carry), 0);
    ck_assert_int_eq(carry, -(int64_t)p / 4);
    carry = 0;
    ck_assert_uint_eq(osp__wait_weight_carry(0, UINT64_MAX / 2, 0, 0, 1000, &carry), UINT32_MAX);
}
END_TEST

/* The clock a call timed by its clock reads is timed with (stamp.c): the CPU's counter, scaled
 * by a measure against CLOCK_MONOTONIC taken by the stamps asked for while it is unknown. Once
 * known, a 200 ms sleep lasts the same in stamps as in CLOCK_MONOTONIC, within 1% (the measure
 * itself is within 0.05%: two pairs of readings 20 ms apart, each within 10 us). Where the
 * counter cannot be used, stamps are CLOCK_MONOTONIC's and agree all the more. */
START_TEST(stamp_scale_agrees_with_clock_monotonic)
{
    for (int i = 0; i < 400 && !atomic_load(&osp__stamp_scale.ready); i++) {
        (void)osp__stamp_ns();
        osp__nap_us(1000);
    }
    if (osp__cpu_ticks_constant())
        ck_assert(atomic_load(&osp__stamp_scale.ready)); /* measured within 400 ms */
    for (int round = 0; round < 2; round++) {
        uint64_t m0 = osp__clock_ns(CLOCK_MONOTONIC), s0 = osp__stamp_ns();
        struct timespec nap = {0, 200000000};
        nanosleep(&nap, NULL);
        uint64_t s1 = osp__stamp_ns(), m1 = osp__clock_ns(CLOCK_MONOTONIC);
        ck_assert_uint_gt(m1, m0);
        double ratio = (double)(s1 - s0) / (double)(m1 - m0);
        ck_assert_msg(ratio > 0.99 && ratio < 1.01, "200 ms: %.4f of CLOCK_MONOTONIC in stamps",
                      ratio);
    }
    /* Turned off (a thread about to make its counter fault): CLOCK_MONOTONIC itself. */
    osp__stamp_off();
    ck_assert(!atomic_load(&osp__stamp_scale.ready));
    uint64_t before = osp__clock_ns(CLOCK_MONOTONIC), stamp = osp__stamp_ns();
    ck_assert_uint_ge(stamp, before);
    ck_assert_uint_le(stamp, osp__clock_ns(CLOCK_MONOTONIC));
    ck_assert(!atomic_load(&osp__stamp_scale.ready)); /* and measured no more */
    /* The scale of a 3 GHz counter; none for a counter that stood still or is no counter's. */
    ck_assert_uint_eq(osp__stamp_mult_of(1000000000u, 3000000000u), (UINT64_C(1) << 32) / 3);
    ck_assert_uint_eq(osp__stamp_mult_of(1000000000u, 0), 0);
    ck_assert_uint_eq(osp__stamp_mult_of(1000000000u, 100), 0);              /* 100 Hz */
    ck_assert_uint_eq(osp__stamp_mult_of(1000, UINT64_C(1000000000000)), 0); /* 1 THz */
}
END_TEST

/* The one word that lets a timed call go the quick way (osp__timed_gate): each of its bits
 * follows the flag it stands for, so the quick way never times a call the long way would not
 * (calls not timed, the kernel's records mapped, the stamps' scale unknown). */
START_TEST(timed_gate_follows_its_flags)
{
    osp__calls_timed_set(1);
    ck_assert(!(atomic_load(&osp__timed_gate) & OSP__GATE_UNTIMED));
    osp__calls_timed_set(0);
    ck_assert(atomic_load(&osp__timed_gate) & OSP__GATE_UNTIMED);
    osp__calls_timed_set(1);
    void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(map != MAP_FAILED);
    osp__switch_maps_set(&map, 1, 4096);
    ck_assert(atomic_load(&osp__timed_gate) & OSP__GATE_SWITCHES);
    osp__kernel_waits_off(); /* unmaps it */
    ck_assert(!(atomic_load(&osp__timed_gate) & OSP__GATE_SWITCHES));
    for (int i = 0; i < 400 && !atomic_load(&osp__stamp_scale.ready); i++) {
        (void)osp__stamp_ns();
        osp__nap_us(1000);
    }
    ck_assert_int_eq(!(atomic_load(&osp__timed_gate) & OSP__GATE_UNSCALED),
                     atomic_load(&osp__stamp_scale.ready));
    osp__stamp_off();
    ck_assert(atomic_load(&osp__timed_gate) & OSP__GATE_UNSCALED);
    osp__calls_timed_set(0);
}
END_TEST

/* A call's wait (osp__call_wait_weight): the sampling points a period apart along its site's
 * own time line of waits. Two sites whose short waits alternate each get their share, exact
 * within a period; with one carry for the thread, rounded to the nearest period, the site
 * whose wait made the sum cross one could take them all. And from a point drawn uniformly, a single
 * short wait weighs its length in expectation. */
START_TEST(call_wait_weight_samples_short_waits_by_their_length)
{
    const uint64_t p = 1000000; /* 997 Hz, about */
    uint64_t until_a = p / 3, until_b = p, x = 88172645463325252ull;
    uint32_t a = 0, b = 0;
    for (int i = 0; i < 100000; i++) {
        /* site A waits a tenth of a period, then site B 0.6 period, over and over: 1:6 */
        int at_a = i % 2 == 0;
        uint64_t length = at_a ? p / 10 : p * 6 / 10;
        *(at_a ? &a : &b) += osp__call_wait_weight(length, p, at_a ? &until_a : &until_b);
        ck_assert_uint_ge(at_a ? until_a : until_b, 1);
        ck_assert_uint_le(at_a ? until_a : until_b, p);
    }
    ck_assert_uint_ge(a, 4999); /* 5,000 and 30,000 periods */
    ck_assert_uint_le(a, 5001);
    ck_assert_uint_ge(b, 29999);
    ck_assert_uint_le(b, 30001);
    /* One carry for the thread, half a period at A then half at B: all at one site. */
    int64_t carried = 0;
    uint32_t carried_a = 0, carried_b = 0;
    for (int i = 0; i < 1000; i++)
        *(i % 2 == 0 ? &carried_a : &carried_b) +=
            osp__wait_weight_carry(0, p / 2, 0, 0, p, &carried);
    ck_assert_uint_eq(carried_a + carried_b, 500);
    ck_assert(carried_a == 0 || carried_b == 0);
    /* A wait of 0.3 period from a uniform point: weighs one 30% of the time (20,000 draws: a
     * standard deviation of 0.3 point). */
    uint32_t hits = 0;
    for (int i = 0; i < 20000; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t until = 1 + x * 2685821657736338717ull % p;
        hits += osp__call_wait_weight(p * 3 / 10, p, &until);
    }
    ck_assert_uint_ge(hits, 5800);
    ck_assert_uint_le(hits, 6200);
    /* A wait of a period or more weighs one at least; 100 of 1.5 periods weigh 150, within 1. */
    uint64_t until = 1;
    uint32_t total = 0;
    for (int i = 0; i < 100; i++) {
        uint32_t w = osp__call_wait_weight(p + p / 2, p, &until);
        ck_assert_uint_ge(w, 1);
        total += w;
    }
    ck_assert_uint_ge(total, 149);
    ck_assert_uint_le(total, 151);
    /* Bounds: a wait reaching the point weighs one, the next point a period on; a shorter one
     * brings it nearer; a point out of range (0, a slot's leftover at another rate) is a
     * period away; no period, nothing; a wait too long for the field, the most it holds. */
    until = p / 4;
    ck_assert_uint_eq(osp__call_wait_weight(p / 4, p, &until), 1);
    ck_assert_uint_eq(until, p);
    ck_assert_uint_eq(osp__call_wait_weight(p / 4 - 1, p, &until), 0);
    ck_assert_uint_eq(until, p * 3 / 4 + 1);
    until = 0;
    ck_assert_uint_eq(osp__call_wait_weight(p - 1, p, &until), 0);
    ck_assert_uint_eq(until, 1);
    until = 5 * p;
    ck_assert_uint_eq(osp__call_wait_weight(p, p, &until), 1);
    ck_assert_uint_eq(osp__call_wait_weight(5, 0, &until), 0);
    ck_assert_uint_eq(osp__call_wait_weight(UINT64_MAX / 2, 1000, &until), UINT32_MAX);
}
END_TEST

/* A forked child greets its parent's collector once that has attached, or where the parent
 * greeted no other; else the collector the parent greeted (a daemon's grandchild, whose middle
 * process's collector never starts), whose answer it need not wait for. */
START_TEST(fork_greets_the_collector_that_took_its_parent)
{
    int attached = -1;
    /* The parent's own collector attached: its socket, answered later. */
    ck_assert_str_eq(osp__fork_greets("/osprey-m", 1, "/osprey-p", &attached), "/osprey-m");
    ck_assert_int_eq(attached, 1);
    /* Not attached, the parent greeted its own parent's: that one, which answers. */
    ck_assert_str_eq(osp__fork_greets("/osprey-m", 0, "/osprey-p", &attached), "/osprey-p");
    ck_assert_int_eq(attached, 1);
    /* Not attached, no other greeted (the run's first image, or a collector of its own still
     * starting): its own socket, the answer waited for at the fork. */
    ck_assert_str_eq(osp__fork_greets("/osprey-m", 0, NULL, &attached), "/osprey-m");
    ck_assert_int_eq(attached, 0);
    ck_assert_str_eq(osp__fork_greets("/osprey-m", 0, "", &attached), "/osprey-m");
    ck_assert_int_eq(attached, 0);
    ck_assert_str_eq(osp__fork_greets("/osprey-m", 0, "/osprey-m", &attached), "/osprey-m");
    ck_assert_int_eq(attached, 0);
}
END_TEST

/* What /proc/PID/stat says of the collector the exit waits for: its start time (field 22) is
 * the header's, or the pid is another process's now; a zombie has ended (field 52 its wait
 * status), T and t are stopped. */
START_TEST(collector_seen_by_its_start_time_and_state)
{
    /* Fields from the state on: state ppid pgrp ... starttime (22) ... exit_code (52). */
    char stat[512];
    char state;
    int code;
#define STAT_OF(letter, start, exit_code)                                                          \
    snprintf(stat, sizeof stat,                                                                    \
             "%c 1 2 3 0 -1 4194560 10 0 0 0 1 2 0 0 20 0 1 0 %llu 1000 100 1844674407370955161"   \
             "5 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 1 2 3 4 5 6 7 8 %d",                          \
             letter, (unsigned long long)(start), exit_code)
    STAT_OF('S', 4242, 0);
    ck_assert_int_eq(osp__collector_seen(stat, 4242, &state, &code), OSP__COLLECTOR_RUNNING);
    ck_assert_int_eq(state, 'S');
    ck_assert_int_eq(code, 0);
    STAT_OF('R', 4242, 0);
    ck_assert_int_eq(osp__collector_seen(stat, 4242, &state, &code), OSP__COLLECTOR_RUNNING);
    STAT_OF('T', 4242, 0);
    ck_assert_int_eq(osp__collector_seen(stat, 4242, &state, &code), OSP__COLLECTOR_STOPPED);
    STAT_OF('t', 4242, 0);
    ck_assert_int_eq(osp__collector_seen(stat, 4242, &state, &code), OSP__COLLECTOR_STOPPED);
    STAT_OF('Z', 4242, 9);
    ck_assert_int_eq(osp__collector_seen(stat, 4242, &state, &code), OSP__COLLECTOR_ENDED);
    ck_assert_int_eq(code, 9);
    /* Another start time: the pid was taken since, stopped or not. */
    STAT_OF('T', 4243, 0);
    ck_assert_int_eq(osp__collector_seen(stat, 4242, &state, &code), OSP__COLLECTOR_ENDED);
    /* A collector that does not say who it is, and fields that do not parse. */
    STAT_OF('S', 4242, 0);
    ck_assert_int_eq(osp__collector_seen(stat, 0, &state, &code), OSP__COLLECTOR_UNKNOWN);
    ck_assert_int_eq(osp__collector_seen(NULL, 4242, &state, &code), OSP__COLLECTOR_UNKNOWN);
    ck_assert_int_eq(osp__collector_seen("S 1 2", 4242, &state, &code), OSP__COLLECTOR_UNKNOWN);
#undef STAT_OF
}
END_TEST

START_TEST(cpu_share_and_period_of_rate)
{
    ck_assert_uint_eq(osp__cpu_share(0, 0), 1024);          /* no time passed: a whole CPU */
    ck_assert_uint_eq(osp__cpu_share(1000, 1000), 1024);    /* all of it */
    ck_assert_uint_eq(osp__cpu_share(1000, 2000), 1024);    /* more than all (clock skew) */
    ck_assert_uint_eq(osp__cpu_share(1000, 500), 512);      /* half */
    ck_assert_uint_eq(osp__cpu_share(32 * 1000, 1000), 32); /* a 32nd */
    ck_assert_uint_eq(osp__cpu_share(1000000, 0), 0);       /* idle: osp__due_time takes 1 */
    ck_assert_uint_eq(osp__period_of_rate(1000), 1000000);
    ck_assert_uint_eq(osp__period_of_rate(0), 1000000000u / 997u); /* the default rate */
    ck_assert_uint_eq(osp__period_of_rate(10000), 100000);
}
END_TEST

START_TEST(due_time_follows_the_share_of_a_cpu)
{
    ck_assert_uint_eq(osp__due_time(1000, 500, 1024), 1500);       /* a whole CPU */
    ck_assert_uint_eq(osp__due_time(1000, 500, 32), 1000 + 16000); /* a 32nd of one */
    ck_assert_uint_eq(osp__due_time(1000, 0, 1), 1000);            /* due now */
    ck_assert_uint_eq(osp__due_time(0, 1, 0), 1024);               /* share 0 counts as 1 */
}
END_TEST

#if defined(__x86_64__)
#include <ucontext.h>
START_TEST(context_at_a_rewound_syscall_is_blocked)
{
    /* A pc at `syscall` with a syscall number in rax: the kernel rewound it for a restart. */
    static const unsigned char code[] = {0x90, 0x0f, 0x05, 0x90};
    ucontext_t uc;
    memset(&uc, 0, sizeof uc);
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)(code + 1);
    uc.uc_mcontext.gregs[REG_RAX] = 0; /* SYS_read */
    ck_assert_int_eq(osp__context_instant(&uc), OSP__INSTANT_BLOCKED);
    /* Just after it, with -EINTR: interrupted for good. */
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)(code + 3);
    uc.uc_mcontext.gregs[REG_RAX] = -EINTR;
    ck_assert_int_eq(osp__context_instant(&uc), OSP__INSTANT_BLOCKED);
    /* Just after it with a result: on the way out of a call. */
    uc.uc_mcontext.gregs[REG_RAX] = 1;
    ck_assert_int_eq(osp__context_instant(&uc), OSP__INSTANT_SYSCALL_RETURN);
    /* Anywhere else: running. */
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)code;
    uc.uc_mcontext.gregs[REG_RAX] = 0;
    ck_assert_int_eq(osp__context_instant(&uc), OSP__INSTANT_RUNNING);
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)(code + 1);
    uc.uc_mcontext.gregs[REG_RAX] = 0x7f0000001234; /* a pointer, not a syscall number */
    ck_assert_int_eq(osp__context_instant(&uc), OSP__INSTANT_RUNNING);
}
END_TEST
#endif

/* The run lock beside a profile in /tmp: only a regular file of ours (or root's), opened
 * without following a link or blocking (a FIFO's open would never return). */
START_TEST(open_shared_takes_only_a_regular_file_of_ours)
{
    char dir[] = "/tmp/osprey-test-shim.XXXXXX", path[64], link_path[64], fifo[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/lock", dir);
    snprintf(link_path, sizeof link_path, "%s/link", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    ck_assert_int_eq(osp__open_shared(path), -ENOENT);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    int fd = osp__open_shared(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(symlink(path, link_path), 0);
    ck_assert_int_eq(osp__open_shared(link_path), -ELOOP);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(osp__open_shared(fifo), -EMEDIUMTYPE);
    ck_assert_str_eq(osp__shared_strerror(-EMEDIUMTYPE), "is not a regular file");
    if (geteuid() == 0) {
        ck_assert_int_eq(chown(path, 65534, 65534), 0);
        ck_assert_int_eq(osp__open_shared(path), -EPERM);
        ck_assert_str_eq(osp__shared_strerror(-EPERM), "belongs to another user");
    }
    unlink(path);
    unlink(link_path);
    unlink(fifo);
    rmdir(dir);
}
END_TEST

#if defined(__x86_64__) /* the test counts voluntary switches: see shim_suite */
/* One guarded call of the program's, at one site: SLEEP_NS blocked in it (0: none), then SPIN_NS
 * of running as the call goes on (a send preempted in the middle). */
static __attribute__((noinline)) void guarded_call(struct osp__slot *s, long sleep_ns, long spin_ns)
{
    osp__guard_wait_begin(s, (const void *)guarded_call, 0);
    struct timespec nap = {0, sleep_ns};
    if (sleep_ns > 0)
        nanosleep(&nap, NULL);
    uint64_t until = osp__clock_ns(CLOCK_MONOTONIC) + (uint64_t)spin_ns;
    while (osp__clock_ns(CLOCK_MONOTONIC) < until)
        ;
    osp__guard_wait_end(s);
    __asm__ volatile("" ::: "memory"); /* not a tail call: the site stays on the stack */
}

/* Where ospreyd times the waits, a wait the handler captured blocked the thread too: a guarded
 * call after it that never blocked (a send, 1 ms long as a loaded machine preempted it) is no
 * wait. Its voluntary switches were not read for a captured wait's spans, and the call after
 * took the captured wait's block for its own: written as a wait of a unit, its site named the
 * short blocks after it (ospreyd gives a block no span covers the site of the span before). */
START_TEST(a_guarded_call_after_a_captured_wait_counts_only_its_own_blocks)
{
    ck_assert_int_eq(osp__registry_register(&reg, 0, "main"), 0);
    struct osp__slot *s = osp__tls_slot;
    struct osp__event_ring saved;
    uint8_t *area = slot_ring_of_the_test(s, &saved);
    struct osp_slot *saved_shared = s->shared;
    s->shared = (struct osp_slot *)area; /* the slot's published state, beside its ring */
    uint64_t saved_period = osp__period_ns;
    osp__set_period(1000); /* a unit of 1 ms: a span of 0.5 ms or more is a long one */
    atomic_store(&reg_ring.h->signals_paused, 1u); /* no timer of ours armed here */
    atomic_store(&reg_ring.h->daemon_state, (uint32_t)OSP_DAEMON_ATTACHED);
    atomic_store(&reg_ring.h->kernel_waits_ns, (uint64_t)1);
    atomic_store(&osp__switches_on, 1);
    osp__header = reg_ring.h;
    const uint8_t *at = area + sizeof(struct osp_slot);
    const struct osp_rec_wait_span *span;

    /* A call that blocked (its span), one that did not (its site new: a span all the same),
     * then a wait elsewhere that the handler captures, then a call at the first site that does
     * not block but lasts 1 ms. */
    long sleeps[4] = {2000000, 0, 0, 0}, spins[4] = {0, 0, 0, 1000000};
    for (int i = 0; i < 4; i++) {
        if (i == 2) {
            uint64_t pcs[1] = {0x40};
            osp__wait_captured(s, osp__clock_ns(CLOCK_MONOTONIC), pcs, 1);
            struct timespec nap = {0, 1000000};
            nanosleep(&nap, NULL);
            continue;
        }
        guarded_call(s, sleeps[i], spins[i]);
        if (i < 2) {
            span = (const void *)at;
            ck_assert_uint_eq(span->h.type, OSP_REC_WAIT_SPAN);
            ck_assert_uint_eq(span->flags, OSP_SPAN_GUARDED);
            at += span->h.size;
        }
    }
    /* The capture, as it happened and as it closed when the next call began. */
    span = (const void *)at;
    ck_assert_uint_eq(span->flags, OSP_SPAN_CAPTURED_START);
    ck_assert_uint_eq(span->end_ns, span->t_ns);
    at += span->h.size;
    span = (const void *)at;
    ck_assert_uint_eq(span->flags, OSP_SPAN_CAPTURED_START);
    ck_assert_uint_gt(span->end_ns, span->t_ns);
    at += span->h.size;
    /* And nothing of the call that did not block. */
    ck_assert_uint_eq(osp_index_load_own(&s->shared->head),
                      (uint64_t)(at - (area + sizeof(struct osp_slot))));

    osp__header = NULL;
    atomic_store(&osp__switches_on, 0);
    osp__period_ns = saved_period;
    s->ring = saved;
    s->shared = saved_shared;
    free(area);
    osp__registry_unregister(&reg);
}
END_TEST
#endif

Suite *shim_suite(void)
{
    Suite *s = suite_create("shim");
    TCase *unwind =
        SUITE_CASE(s, "unwind", 0, walk_follows_planted_chain, walk_stops_at_zero_return_address,
                   walk_stops_at_misaligned_frame_pointer, walk_stops_when_not_increasing,
                   walk_stops_outside_stack_bounds, walk_stops_at_oversized_frame,
                   walk_stops_at_depth_cap, walk_with_link_register_drops_duplicate,
                   rows_walk_frameless_then_frame_pointer_frames_to_the_outermost,
                   rows_fall_back_to_frame_pointers_and_back,
                   rows_that_lead_off_the_stack_end_the_walk, corrupt_tables_are_no_tables);
#if defined(__x86_64__)
    tcase_add_test(unwind, frameless_return_in_prologue_and_at_ret);
    tcase_add_test(unwind, rows_walk_through_a_signal_frame);
#endif
    SUITE_CASE(s, "rings", 0, event_ring_round_trips_records, event_ring_pads_at_the_end_and_wraps,
               event_ring_full_drops_and_never_overwrites);
    TCase *registry = SUITE_CASE(
        s, "registry", 0, registry_registers_and_reuses_slots_with_new_generations,
        registry_renames_only_automatic_registrations,
        registry_gives_concurrent_threads_distinct_slots_up_to_capacity,
        samples_go_to_the_slot_ring_with_their_weight,
        fiber_records_precede_a_declared_fibers_samples, samples_stop_short_of_a_full_event_ring);
    tcase_add_checked_fixture(registry, registry_setup, registry_teardown);
#if defined(__x86_64__)
    /* Counts the process's voluntary context switches (getrusage): under qemu-user (the arm64
     * run) they are the emulator's too, and move between the two calls. */
    tcase_add_test(registry, a_guarded_call_after_a_captured_wait_counts_only_its_own_blocks);
#endif
    TCase *parsers = SUITE_CASE(
        s, "parsers", 0, rate_is_clamped_and_defaults, per_pid_path_inserts_before_extension,
        credit_rule_pays_whole_periods_of_cpu_time, due_time_follows_the_share_of_a_cpu,
        credit_rule_first_sample_counts_only_cpu_time_since_registration,
        credit_rule_at_a_calls_end_pays_only_the_recent_cpu_time,
        credit_rule_rounds_periods_to_the_nearest,
        credit_rule_caps_a_backlog_at_100_ms_or_16_periods,
        credit_rule_pays_nothing_for_a_clock_behind_what_is_paid,
        credit_needed_is_what_take_reports_without_paying,
        wait_weight_is_wall_time_less_cpu_time_in_periods,
        wait_weight_carries_its_rounding_to_the_next_wait,
        call_wait_weight_samples_short_waits_by_their_length, cpu_share_and_period_of_rate,
        open_shared_takes_only_a_regular_file_of_ours, stamp_scale_agrees_with_clock_monotonic,
        fork_greets_the_collector_that_took_its_parent, timed_gate_follows_its_flags,
        collector_seen_by_its_start_time_and_state);
#if defined(__x86_64__)
    tcase_add_test(parsers, context_at_a_rewound_syscall_is_blocked);
#endif
    (void)unwind; /* more cases on x86_64 only */
    (void)parsers;
    return s;
}
