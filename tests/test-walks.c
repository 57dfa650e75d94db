/* test-walks.c — the one unwinder (proto/osp_unwind_step.h) driven by both of its walkers with
 * the same synthetic cases: the shim's walk of its live stack (shim/unwind.c, osp__unwind_why,
 * reading [lo, hi) in place) and ospreyd's walk of a stack copy (daemon/stack-walk.c,
 * ospd_walk_copy_why, reading the copy). For each case — frame-pointer chains, rows by sp and
 * by fp, the lazy PLT, an epilogue, the kernel's signal frame, an outermost row, a hostile
 * chain, a CFA past the stack, the depth cap, a guess while rows are still being built — both
 * must find the same frames and say the same reason for stopping. The shim's move to another
 * stack at a signal frame (osp__unwind_spans_why), which ospreyd's walker of one copy has no
 * use for, is checked beside the case it changes. */
#include <check.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "osp_core.h"
#include "osp_ring_write.h"
#include "osp_unwind.h"
#include "osp_unwind_step.h"
#include "ospd.h"
#include "ospd_attach.h"
#include "ospd_unwind.h"
#include "suite.h"
#include "unwind-rows.h"

#define WORDS 256u
static uint64_t stack[WORDS] __attribute__((aligned(16)));
static uint8_t object[OSP_UNWIND_HEADER_SIZE + 8192] __attribute__((aligned(4096)));

/* The address of stack word i. */
static uint64_t at(unsigned i)
{
    return (uint64_t)(uintptr_t)&stack[i];
}

static void set(unsigned i, uint64_t v)
{
    stack[i] = v;
}

/* A table object with the image at [start, start + 0x1000) and these rows, and (then not 0)
 * the same rows for a second image at `then`, published after. Every code
 * address of the cases is below the lowest address a process may map (mmap_min_addr, 64 KiB):
 * the shim's look at the leaf's code finds nothing there, as ospreyd, which reads no code. */
#define IMAGE 0x1000u
static void tables_at(uint64_t start, const struct osp_unwind_row *rows, uint32_t count,
                      uint64_t then)
{
    memset(object, 0, sizeof object);
    struct osp_unwind_header *h = (struct osp_unwind_header *)object;
    h->magic = OSP_UNWIND_MAGIC;
    h->abi_version = OSP_UNWIND_ABI_VERSION;
    h->header_size = OSP_UNWIND_HEADER_SIZE;
    h->size = sizeof object;
    h->arch = OSP__CPU_ELF_MACHINE;
    h->row_size = sizeof(struct osp_unwind_row);
    struct ospd_unwind_region region;
    char err[256];
    ck_assert_int_eq(ospd_unwind_region_init(&region, object, sizeof object, -1, err, sizeof err),
                     0);
    struct ospd_unwind_rows table = {
        (struct osp_unwind_row *)rows, count, start, start + 0x1000, 0, false};
    ck_assert_int_eq(ospd_unwind_region_publish(&region, start, &table), 0);
    if (then != 0) { /* a second image, a later snapshot */
        table.start_vaddr = then;
        table.end_vaddr = then + 0x1000;
        ck_assert_int_eq(ospd_unwind_region_publish(&region, then, &table), 0);
    }
    ospd_unwind_region_free(&region);
}

/* A table object with one image at [IMAGE, IMAGE + 0x1000) and these rows. */
static void tables_with(const struct osp_unwind_row *rows, uint32_t count)
{
    tables_at(IMAGE, rows, count, 0);
}

/* What a walk found. */
struct walked {
    uint32_t depth;
    enum osp_unwind_stop stop;
    uint64_t pcs[OSP_MAX_DEPTH];
};

/* The walk found `depth` frames and ended for `stop`. */
static void expect_walked(const struct walked *w, uint32_t depth, enum osp_unwind_stop stop)
{
    ck_assert_uint_eq(w->depth, depth);
    ck_assert_int_eq(w->stop, stop);
}

/* The shim's walk and ospreyd's found the same frames and said the same reason. */
static void expect_same(const struct walked *shim, const struct walked *daemon)
{
    ck_assert_uint_eq(shim->depth, daemon->depth);
    ck_assert_int_eq(shim->stop, daemon->stop);
    for (uint32_t i = 0; i < shim->depth; i++)
        ck_assert_uint_eq(shim->pcs[i], daemon->pcs[i]);
}

/* Both walkers from (pc, sp = word sp_at, fp) with the tables (or none), up to cap frames; the
 * two must agree, and the shim's result is returned. */
static struct walked both(int with_tables, uint64_t pc, unsigned sp_at, uint64_t fp, uint32_t cap)
{
    struct walked shim = {0}, daemon = {0};
    uint64_t sp = at(sp_at), hi = at(WORDS);
    struct osp__regs regs = {.pc = pc, .sp = sp, .fp = fp, .lr = 0};
    osp__unwind_set_tables(with_tables ? object : NULL, sizeof object);
    shim.depth = osp__unwind_why(&regs, 1, sp, hi, shim.pcs, cap, &shim.stop);
    osp__unwind_set_tables(NULL, 0);
    struct ospd_stack_copy copy = {sp, (const uint8_t *)&stack[sp_at], hi - sp};
    daemon.depth = ospd_walk_copy_why(with_tables ? object : NULL, sizeof object, pc, sp, fp, &copy,
                                      daemon.pcs, cap, &daemon.stop);
    expect_same(&shim, &daemon);
    return shim;
}

START_TEST(a_frame_pointer_chain)
{
    memset(stack, 0, sizeof stack);
    set(10, at(20)); /* records: caller's fp, return address */
    set(11, 0x9000);
    set(20, at(30));
    set(21, 0xa000);
    set(30, 0);
    set(31, 0); /* a zero return address: the outermost frame */
    struct walked w = both(0, 0x8010, 4, at(10), OSP_MAX_DEPTH);
    ck_assert_uint_eq(w.depth, 3);
    ck_assert_uint_eq(w.pcs[1], 0x9000);
    ck_assert_uint_eq(w.pcs[2], 0xa000);
    ck_assert_int_eq(w.stop, OSP_UNWIND_OUTERMOST);
    /* A zero frame pointer, read from a record or in the register, is no outermost frame:
     * frameless code (a JIT's) may hold 0 there, and a "record" read where there is none too. */
    set(20, 0);
    w = both(0, 0x8010, 4, at(10), OSP_MAX_DEPTH);
    expect_walked(&w, 3, OSP_UNWIND_NO_ROW);
    set(20, at(30));
    w = both(0, 0x8010, 4, 0, OSP_MAX_DEPTH);
    expect_walked(&w, 1, OSP_UNWIND_NO_ROW);
    /* The depth cap. */
    w = both(0, 0x8010, 4, at(10), 2);
    expect_walked(&w, 2, OSP_UNWIND_DEPTH);
    /* A chain that goes down, or a misaligned frame pointer: no row, and no frame. */
    set(20, at(12));
    w = both(0, 0x8010, 4, at(10), OSP_MAX_DEPTH);
    expect_walked(&w, 3, OSP_UNWIND_NO_ROW);
    w = both(0, 0x8010, 4, at(10) + 4, OSP_MAX_DEPTH);
    expect_walked(&w, 1, OSP_UNWIND_NO_ROW);
    /* A frame pointer past the stack's end is never read. */
    w = both(0, 0x8010, 4, at(WORDS - 1), OSP_MAX_DEPTH);
    expect_walked(&w, 1, OSP_UNWIND_NO_ROW);
}
END_TEST

/* [0, 0x100) CFA = sp + 16; [0x100, 0x200) CFA = sp + 32, fp at CFA - 16; [0x200, 0x300) the
 * outermost frame; [0x300, 0x400) no CFI; [0x400, 0x500) CFA = fp + 16, fp at CFA - 16;
 * [0x500, 0x600) the lazy PLT (CFA = sp + 8, + 8 from (pc & 15) >= 11); [0x600, 0x700) the
 * signal trampoline; [0x700, 0x800) CFA = sp + 8 (an epilogue: fp's slot at CFA - 16, below sp);
 * [0x800, 0x900) CFA = sp (nothing pushed, the return address said to be at CFA - 8). */
static const struct osp_unwind_row rows[] = {
    {.pc_offset = 0, .cfa_offset = 16, .cfa_rule = OSP_CFA_SP, .ra_offset = -8},
    ROW_FP_SAVED(0x100, OSP_CFA_SP, 32),
    {.pc_offset = 0x200, .cfa_rule = OSP_CFA_END},
    {.pc_offset = 0x300, .cfa_rule = OSP_CFA_UNKNOWN},
    ROW_FP_SAVED(0x400, OSP_CFA_FP, 16),
    {.pc_offset = 0x500,
     .cfa_offset = 8,
     .cfa_rule = OSP_CFA_PLT,
     .plt_threshold = 11,
     .ra_offset = -8},
    {.pc_offset = 0x600, .cfa_rule = OSP_CFA_SIGNAL},
    ROW_FP_SAVED(0x700, OSP_CFA_SP, 8),
    {.pc_offset = 0x800, .cfa_offset = 0, .cfa_rule = OSP_CFA_SP, .ra_offset = -8},
    {.pc_offset = 0x900, .cfa_rule = OSP_CFA_UNKNOWN},
};
#define NROWS (sizeof rows / sizeof rows[0])

/* The fixture of the cases by rows: these rows published, the stack zeroed. */
static void rows_and_a_clear_stack(void)
{
    tables_with(rows, NROWS);
    memset(stack, 0, sizeof stack);
}

START_TEST(rows_by_sp_and_fp_and_the_outermost_row)
{
    /* leaf at +0x10, sp word 4: CFA word 6, ra at word 5 */
    set(5, IMAGE + 0x180);
    set(8, at(40)); /* its caller, CFA word 10: saved fp at word 8, ra at word 9 */
    set(9, IMAGE + 0x410);
    set(40, at(50)); /* CFA = fp (word 40) + 16 = word 42: fp at word 40, ra at 41 */
    set(41, IMAGE + 0x250);
    struct walked w = both(1, IMAGE + 0x10, 4, 0, OSP_MAX_DEPTH);
    ck_assert_uint_eq(w.depth, 4);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x180);
    ck_assert_uint_eq(w.pcs[2], IMAGE + 0x410);
    ck_assert_uint_eq(w.pcs[3], IMAGE + 0x250);
    ck_assert_int_eq(w.stop, OSP_UNWIND_OUTERMOST);
    /* A return address at a row's first byte is looked up at pc - 1: the row before. */
    set(5, IMAGE + 0x100);
    set(7, IMAGE + 0x250); /* by the first row: CFA word 8, ra at word 7 */
    w = both(1, IMAGE + 0x10, 4, 0, OSP_MAX_DEPTH);
    ck_assert_uint_eq(w.depth, 3);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x100);
    ck_assert_int_eq(w.stop, OSP_UNWIND_OUTERMOST);
    /* No CFI: the frame pointer the rows restored takes over. */
    set(5, IMAGE + 0x180);
    set(9, IMAGE + 0x310);
    w = both(1, IMAGE + 0x10, 4, 0, OSP_MAX_DEPTH);
    ck_assert_uint_eq(w.depth, 4);
    ck_assert_uint_eq(w.pcs[2], IMAGE + 0x310);
    ck_assert_uint_eq(w.pcs[3], IMAGE + 0x250);
    ck_assert_int_eq(w.stop, OSP_UNWIND_OUTERMOST);
    /* A return address outside every image with a frame pointer that fails: no row, no frame. */
    set(40, at(50) + 4);
    set(41, 0x9000);
    w = both(1, IMAGE + 0x10, 4, 0, OSP_MAX_DEPTH);
    expect_walked(&w, 4, OSP_UNWIND_NO_ROW);
    /* A CFA past the stack: the row's rule fails, nothing read beyond. */
    w = both(1, IMAGE + 0x110, WORDS - 2, 0, OSP_MAX_DEPTH);
    expect_walked(&w, 1, OSP_UNWIND_FAILED);
}
END_TEST

START_TEST(the_plt_an_epilogue_and_a_cfa_that_does_not_rise)
{
    /* The PLT below threshold: CFA word 5, ra at word 4; from pc & 15 == 11: word 6, ra at 5
     * (x86_64's lazy PLT; aarch64 has no such rule, the CFA stays). */
    set(4, IMAGE + 0x250);
    set(5, IMAGE + 0x260);
    struct walked w = both(1, IMAGE + 0x500, 4, 0, OSP_MAX_DEPTH);
    ck_assert_uint_eq(w.depth, 2);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x250);
    w = both(1, IMAGE + 0x50b, 4, 0, OSP_MAX_DEPTH);
    ck_assert_uint_eq(w.depth, 2);
#if defined(__x86_64__)
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x260);
#else
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x250);
#endif
    ck_assert_int_eq(w.stop, OSP_UNWIND_OUTERMOST);
    /* An epilogue: fp's slot (CFA - 16) is below sp, the register keeps the caller's fp. */
    set(4, IMAGE + 0x310);
    set(20, 0);
    set(21, IMAGE + 0x250);
    w = both(1, IMAGE + 0x710, 4, at(20), OSP_MAX_DEPTH);
    ck_assert_uint_eq(w.depth, 3);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x310);
    ck_assert_uint_eq(w.pcs[2], IMAGE + 0x250);
    /* CFA = sp with the return address in memory: not a frame (only an aarch64 leaf whose
     * return address is still in lr may not rise). */
    w = both(1, IMAGE + 0x810, 4, at(20), OSP_MAX_DEPTH);
    expect_walked(&w, 1, OSP_UNWIND_FAILED);
}
END_TEST

START_TEST(the_kernels_signal_frame)
{
    /* The trampoline at sp word 4: the interrupted instant's registers in the frame above. */
#if defined(OSP_UNWIND_SIGNAL_PC)
    unsigned base = 4;
    set(base + OSP_UNWIND_SIGNAL_PC / 8, IMAGE + 0x10);
    set(base + OSP_UNWIND_SIGNAL_SP / 8, at(150));
    set(base + OSP_UNWIND_SIGNAL_FP / 8, 0);
    set(151, IMAGE + 0x250); /* the interrupted leaf's row: CFA word 152, ra at word 151 */
    struct walked w = both(1, IMAGE + 0x610, base, 0, OSP_MAX_DEPTH);
    ck_assert_uint_eq(w.depth, 3);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x10); /* looked up at the pc itself */
    ck_assert_uint_eq(w.pcs[2], IMAGE + 0x250);
    ck_assert_int_eq(w.stop, OSP_UNWIND_OUTERMOST);
    /* A saved sp that does not rise ends the walk. */
    set(base + OSP_UNWIND_SIGNAL_SP / 8, at(base));
    w = both(1, IMAGE + 0x610, base, 0, OSP_MAX_DEPTH);
    expect_walked(&w, 1, OSP_UNWIND_FAILED);

    /* A handler on a signal stack above the stack it interrupted (words 128 on, the
     * interrupted leaf at word 20): one stack, the saved sp does not rise and the walk ends
     * there, for both walkers; the shim given the two stacks (osp__unwind_spans_why, as
     * shim/stacks.c gives them) moves onto the other at the signal frame, and only there. */
    memset(stack, 0, sizeof stack);
    base = 128;
    set(base + OSP_UNWIND_SIGNAL_PC / 8, IMAGE + 0x10);
    set(base + OSP_UNWIND_SIGNAL_SP / 8, at(20));
    set(base + OSP_UNWIND_SIGNAL_FP / 8, 0);
    set(21, IMAGE + 0x250);
    w = both(1, IMAGE + 0x610, base, 0, OSP_MAX_DEPTH);
    expect_walked(&w, 1, OSP_UNWIND_FAILED);
    struct osp__stack_span spans[2] = {{at(base), at(WORDS), NULL, 0}, {at(0), at(base), NULL, 0}};
    struct osp__regs regs = {.pc = IMAGE + 0x610, .sp = at(base), .fp = 0, .lr = 0};
    osp__unwind_set_tables(object, sizeof object);
    w.depth = osp__unwind_spans_why(&regs, 1, spans, 2, w.pcs, OSP_MAX_DEPTH, &w.stop);
    ck_assert_uint_eq(w.depth, 3);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x10);
    ck_assert_uint_eq(w.pcs[2], IMAGE + 0x250);
    ck_assert_int_eq(w.stop, OSP_UNWIND_OUTERMOST);
    /* A stack is walked once: a second signal frame back onto the first ends the walk. */
    set(21, IMAGE + 0x610);
    set(22 + OSP_UNWIND_SIGNAL_PC / 8, IMAGE + 0x10);
    set(22 + OSP_UNWIND_SIGNAL_SP / 8, at(base + 64));
    w.depth = osp__unwind_spans_why(&regs, 1, spans, 2, w.pcs, OSP_MAX_DEPTH, &w.stop);
    expect_walked(&w, 3, OSP_UNWIND_FAILED);
    osp__unwind_set_tables(NULL, 0);
#endif
}
END_TEST

START_TEST(a_frame_pointer_guess_while_rows_are_built_is_guessed)
{
    set(10, at(20));
    set(11, 0x9000); /* no image covers it */
    set(20, 0);
    set(21, 0);
    struct walked w = both(1, 0x8010, 4, at(10), OSP_MAX_DEPTH);
    expect_walked(&w, 2, OSP_UNWIND_OUTERMOST);
    struct osp_unwind_header *h = (struct osp_unwind_header *)object;
    atomic_store_explicit(&h->builds_pending, 1, memory_order_relaxed);
    w = both(1, 0x8010, 4, at(10), OSP_MAX_DEPTH);
    expect_walked(&w, 2, OSP_UNWIND_GUESSED);
    /* A row that says nothing is published: the frame pointer there is no guess. */
    set(11, IMAGE + 0x250);
    w = both(1, IMAGE + 0x310, 4, at(10), OSP_MAX_DEPTH);
    expect_walked(&w, 2, OSP_UNWIND_OUTERMOST);
    atomic_store_explicit(&h->builds_pending, 0, memory_order_relaxed);
}
END_TEST

/* A sample whose leaf's rows are not published yet (another image's are, more are being
 * built): the shim's walk guesses through it by the frame pointer and says where a copy of the
 * stack would let ospreyd walk on (osp__unwind_spans_resume); ospreyd keeps the sample as the
 * handler walked it, holds the copy (copies.c) while the rows are missing, and walks it by the
 * same step once they are published: the sample's stack becomes the whole one, its stop the
 * outermost frame. A copy whose rows never come keeps the guess. */
static void put_copy(struct osp_ring_cursor *cur, const struct osp_unwind_resume *resume,
                     const struct walked *w, uint64_t t_ns, uint32_t index, uint32_t len)
{
    struct osp_rec_stack_copy rec = {.sample.t_ns = t_ns,
                                     .sample.slot = 0,
                                     .sample.generation = 1,
                                     .sample.state = OSP_STATE_ON_CPU,
                                     .sample.depth = w->depth,
                                     .sample.weight = 1,
                                     .sample.stop = w->stop,
                                     .resume = resume->depth - 1,
                                     .flags = resume->first ? OSP_COPY_FIRST : 0,
                                     .pc = resume->regs.pc,
                                     .sp = resume->regs.sp,
                                     .fp = resume->regs.fp,
                                     .lr = resume->regs.lr,
                                     .copy_index = index,
                                     .copy_len = len,
                                     .copy_base = resume->regs.sp};
    osp_put_stack_copy(cur, &rec, w->pcs);
}

/* Sample i's stack and its end. */
static uint32_t sample_stack(const struct ospd_collector *c, uint64_t i, const uint64_t **pcs,
                             uint32_t *end)
{
    uint32_t stack = c->samples[i].stack_state >> 1, depth;
    *pcs = ospd_stack_pcs(&c->stacks, stack, &depth);
    *end = ospd_stack_end(&c->stacks, stack);
    return depth;
}

/* The stack of rows_by_sp_and_fp_and_the_outermost_row from word 4, fp holding the frame
 * record of an ancestor at word 40 (the frameless frames' callers keep it). */
static void copied_stack(void)
{
    memset(stack, 0, sizeof stack);
    set(5, IMAGE + 0x180);
    set(8, at(40));
    set(9, IMAGE + 0x410);
    set(40, at(50));
    set(41, IMAGE + 0x250);
}

/* A slot ring in data[0..size) that starts with thread 4242's start. */
static struct osp_ring_cursor ring_with_a_thread(uint8_t *data, uint32_t size)
{
    memset(data, 0, size);
    struct osp_ring_cursor cur = {data, size, 0};
    osp_put_thread_start(&cur, 0, 1, 0, 4242, "main", 4);
    return cur;
}

/* A collector whose ring's pool is `count` buffers of `size` bytes at pool, each holding len
 * bytes of the stack from word 4 on, as the handler copies it, and every buffer busy. */
static void collector_with_copies(struct ospd_collector *c, uint8_t *pool, uint32_t count,
                                  uint32_t size, uint32_t len, _Atomic uint64_t *busy)
{
    for (uint32_t i = 0; i < count; i++)
        memcpy(pool + (size_t)i * size, &stack[4], len);
    atomic_store(busy, (UINT64_C(1) << count) - 1);
    ospd_collector_init(c);
    c->copy_pool = pool;
    c->copy_count = count;
    c->copy_size = size;
    c->copies_busy = busy;
}

START_TEST(a_copy_is_held_until_its_rows_are_published)
{
    copied_stack();
    tables_at(0x5000, rows, NROWS, 0); /* another image's rows only */
    struct osp_unwind_header *h = (struct osp_unwind_header *)object;
    atomic_store_explicit(&h->builds_pending, 1, memory_order_relaxed);

    struct walked w = {0};
    struct osp_unwind_resume resume;
    struct osp__regs regs = {.pc = IMAGE + 0x10, .sp = at(4), .fp = at(40), .lr = 0};
    const struct osp__stack_span span = {at(4), at(WORDS), NULL, 0};
    osp__unwind_set_tables(object, sizeof object);
    w.depth = osp__unwind_spans_resume(&regs, 1, &span, 1, w.pcs, OSP_MAX_DEPTH, &w.stop, &resume);
    ck_assert_uint_eq(w.depth, 2); /* the leaf, then the ancestor's caller: a guess */
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x250);
    ck_assert_int_eq(w.stop, OSP_UNWIND_GUESSED);
    ck_assert_uint_eq(resume.depth, 1); /* the leaf itself, an interrupted instant */
    ck_assert(resume.first);
    ck_assert_uint_eq(resume.regs.sp, at(4));
    /* Once rows are published for every frame, the walk meets no such frame. */
    atomic_store_explicit(&h->builds_pending, 0, memory_order_relaxed);
    osp__unwind_spans_resume(&regs, 1, &span, 1, w.pcs, OSP_MAX_DEPTH, &w.stop, &resume);
    ck_assert_uint_eq(resume.depth, 0);
    atomic_store_explicit(&h->builds_pending, 1, memory_order_relaxed);
    w.depth = osp__unwind_spans_resume(&regs, 1, &span, 1, w.pcs, OSP_MAX_DEPTH, &w.stop, &resume);
    osp__unwind_set_tables(NULL, 0);

    /* The pool: the stack from the resume frame's sp, as the handler copies it. */
    static uint8_t pool[2][4096];
    uint32_t len = (uint32_t)(at(WORDS) - at(4));
    _Atomic uint64_t busy;
    struct ospd_collector c;
    collector_with_copies(&c, &pool[0][0], 2, sizeof pool[0], len, &busy);
    static uint8_t data[4096];
    struct osp_ring_cursor cur = ring_with_a_thread(data, sizeof data);
    put_copy(&cur, &resume, &w, 1000, 0, len);
    put_copy(&cur, &resume, &w, 2000, 1, len);
    uint64_t tail;
    ck_assert_int_eq(ospd_parse(&c, data, sizeof data, 0, cur.head, &tail), 0);
    ck_assert_uint_eq(tail, cur.head);
    ck_assert_uint_eq(atomic_load(&busy), 0); /* both buffers read and handed back */
    ck_assert_uint_eq(c.sample_count, 2);
    ck_assert_uint_eq(c.copies.count, 2);
    const uint64_t *pcs;
    uint32_t end;
    ck_assert_uint_eq(sample_stack(&c, 0, &pcs, &end), 2); /* as the handler walked it */
    ck_assert_uint_eq(end, OSP_UNWIND_GUESSED);

    /* Nothing published for the leaf: held. */
    ck_assert_uint_eq(ospd_copies_walk(&c, object, sizeof object, false), 0);
    ck_assert_uint_eq(c.copies.count, 2);
    /* The leaf's rows published (a later snapshot), others still being built: walked. */
    tables_at(0x5000, rows, NROWS, IMAGE);
    atomic_store_explicit(&h->builds_pending, 1, memory_order_relaxed);
    ck_assert_uint_eq(ospd_copies_walk(&c, object, sizeof object, false), 2);
    ck_assert_uint_eq(c.copies.count, 0);
    ck_assert_uint_eq(c.copies.walked, 2);
    ck_assert_uint_eq(sample_stack(&c, 0, &pcs, &end), 4);
    ck_assert_uint_eq(pcs[0], IMAGE + 0x10);
    ck_assert_uint_eq(pcs[1], IMAGE + 0x180);
    ck_assert_uint_eq(pcs[2], IMAGE + 0x410);
    ck_assert_uint_eq(pcs[3], IMAGE + 0x250);
    ck_assert_uint_eq(end, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(c.samples[1].stack_state, c.samples[0].stack_state);

    /* A copy whose rows never come: at the profile's end it is walked with the rows there
     * are, and the stop says the guess. */
    tables_at(0x5000, rows, NROWS, 0);
    atomic_store_explicit(&h->builds_pending, 1, memory_order_relaxed);
    busy = 1;
    cur = (struct osp_ring_cursor){data, sizeof data, cur.head};
    put_copy(&cur, &resume, &w, 3000, 0, len);
    ck_assert_int_eq(ospd_parse(&c, data, sizeof data, tail, cur.head, &tail), 0);
    ck_assert_uint_eq(atomic_load(&busy), 0);
    ck_assert_uint_eq(ospd_copies_walk(&c, object, sizeof object, false), 0);
    ck_assert_uint_eq(ospd_copies_walk(&c, object, sizeof object, true), 1);
    ck_assert_uint_eq(sample_stack(&c, 2, &pcs, &end), 2);
    ck_assert_uint_eq(end, OSP_UNWIND_GUESSED);
    atomic_store_explicit(&h->builds_pending, 0, memory_order_relaxed);
    ospd_collector_free(&c);
}
END_TEST

/* Whether this process can read itself with process_vm_readv (qemu-user, which runs the arm64
 * tests, has no such call: there nothing is read on). */
static bool own_memory_readable(void)
{
    volatile uint64_t src = 0x5eed, dst = 0;
    struct iovec local = {(void *)&dst, sizeof dst}, remote = {(void *)&src, sizeof src};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof dst &&
           dst == 0x5eed;
}

START_TEST(a_copy_that_filled_its_buffer_is_read_on_from_the_live_stack)
{
    if (!own_memory_readable())
        return;
    /* The stack of the test above, copied 256 bytes from sp (words 4-35): the frame record at
     * words 40-41 is past the copy's end, in this process's live stack. */
    copied_stack();
    tables_at(0x5000, rows, NROWS, IMAGE);
    struct osp_unwind_resume resume = {{IMAGE + 0x10, at(4), at(40), 0}, 1, 1};
    struct walked w = {.depth = 1, .stop = OSP_UNWIND_GUESSED, .pcs = {IMAGE + 0x10}};
    enum { SIZE = 256 };
    static uint8_t pool[2][SIZE];
    _Atomic uint64_t busy;
    struct ospd_collector c;
    collector_with_copies(&c, &pool[0][0], 2, SIZE, SIZE, &busy);
    c.pid = (int32_t)getpid(); /* the live stack is this process's */
    static uint8_t data[4096];
    struct osp_ring_cursor cur = ring_with_a_thread(data, sizeof data);
    put_copy(&cur, &resume, &w, 1000, 0, SIZE);
    uint64_t tail;
    ck_assert_int_eq(ospd_parse(&c, data, sizeof data, 0, cur.head, &tail), 0);
    /* The copy's last 64 bytes still live: read on, to the end of the live stack's mapping. */
    ck_assert_uint_eq(c.copies.read_on, 1);
    ck_assert_uint_gt(c.copies.held[0].len, SIZE);
    /* The live stack moved since the second sample (a word of the copy's last 64 bytes
     * changed): not read on. */
    set(34, 0x1234);
    cur = (struct osp_ring_cursor){data, sizeof data, cur.head};
    put_copy(&cur, &resume, &w, 2000, 1, SIZE);
    ck_assert_int_eq(ospd_parse(&c, data, sizeof data, tail, cur.head, &tail), 0);
    ck_assert_uint_eq(c.copies.moved, 1);
    ck_assert_uint_eq(c.copies.held[1].len, SIZE);

    ck_assert_uint_eq(ospd_copies_walk(&c, object, sizeof object, true), 2);
    const uint64_t *pcs;
    uint32_t end;
    ck_assert_uint_eq(sample_stack(&c, 0, &pcs, &end), 4); /* whole, past the copy's end */
    ck_assert_uint_eq(pcs[3], IMAGE + 0x250);
    ck_assert_uint_eq(end, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(sample_stack(&c, 1, &pcs, &end), 3); /* cut where the copy ends */
    ck_assert_uint_eq(end, OSP_UNWIND_FAILED);
    ospd_collector_free(&c);
}
END_TEST

/* A frame-pointer chain of `frames` frames in deep_stack from word 4 up, the outermost with a
 * zero return address: frame i (i >= 1) returns to 0x10000 + 16 * i. */
#define DEEP_WORDS 2400u
static uint64_t deep_stack[DEEP_WORDS] __attribute__((aligned(16)));
static void deep_chain(unsigned frames)
{
    memset(deep_stack, 0, sizeof deep_stack);
    for (unsigned i = 0; i + 1 < frames; i++) {
        deep_stack[4 + 2 * i] = (uint64_t)(uintptr_t)&deep_stack[6 + 2 * i];
        deep_stack[5 + 2 * i] = 0x10000 + 16 * (uint64_t)(i + 1);
    }
    /* The last record, words 4 + 2 * (frames - 1) on, stays zero: the outermost frame. */
}

/* The shim's walk of deep_stack (the ring's samples), ospreyd's walk of it as a held copy
 * folded to a record (copies.c: ospd_walk_copy_regs, then ospd_stack_keep_ends) and the
 * attach's walk of it as a sample's copy (perf events, ptrace, osprey dump:
 * ospd_walk_copy_why into a record): the same frames, the same stop. */
static struct walked deep_both(void)
{
    struct walked shim = {0}, copies = {0}, attach = {0};
    uint64_t sp = (uint64_t)(uintptr_t)&deep_stack[4];
    uint64_t hi = (uint64_t)(uintptr_t)&deep_stack[DEEP_WORDS];
    struct osp__regs regs = {.pc = 0x8010, .sp = sp, .fp = sp, .lr = 0};
    osp__unwind_set_tables(NULL, 0);
    shim.depth = osp__unwind_why(&regs, 1, sp, hi, shim.pcs, OSP_MAX_DEPTH, &shim.stop);
    static uint64_t all[OSP_UNWIND_MAX_STEPS];
    struct ospd_stack_copy copy = {sp, (const uint8_t *)&deep_stack[4], hi - sp};
    const struct osp_unwind_regs leaf = {0x8010, sp, sp, 0};
    uint32_t n = ospd_walk_copy_regs(NULL, 0, &leaf, 1, &copy, all, OSP_UNWIND_MAX_STEPS,
                                     &copies.stop, NULL);
    copies.depth = ospd_stack_keep_ends(all, n, OSP_MAX_DEPTH);
    memcpy(copies.pcs, all, copies.depth * sizeof *all);
    expect_same(&shim, &copies);
    attach.depth =
        ospd_walk_copy_why(NULL, 0, 0x8010, sp, sp, &copy, attach.pcs, OSP_MAX_DEPTH, &attach.stop);
    expect_same(&shim, &attach);
    return shim;
}

START_TEST(a_stack_deeper_than_a_record_keeps_its_root)
{
    /* 300 frames: the innermost 95, a marker for the 173 left out, the outermost 32. */
    deep_chain(300);
    struct walked w = deep_both();
    expect_walked(&w, OSP_MAX_DEPTH, OSP_UNWIND_OUTERMOST);
    const uint32_t inner = OSP_MAX_DEPTH - 1 - OSP_UNWIND_OUTER_FRAMES;
    ck_assert_uint_eq(w.pcs[0], 0x8010);
    for (uint32_t i = 1; i < inner; i++)
        ck_assert_uint_eq(w.pcs[i], 0x10000 + 16 * i);
    ck_assert(osp_unwind_left_out_is(w.pcs[inner]));
    ck_assert_uint_eq(osp_unwind_left_out_count(w.pcs[inner]), 300 - (OSP_MAX_DEPTH - 1));
    for (uint32_t i = 0; i < OSP_UNWIND_OUTER_FRAMES; i++)
        ck_assert_uint_eq(w.pcs[inner + 1 + i], 0x10000 + 16 * (300 - OSP_UNWIND_OUTER_FRAMES + i));
    /* One frame more than a record holds; exactly as many: no marker. */
    deep_chain(OSP_MAX_DEPTH + 1);
    w = deep_both();
    expect_walked(&w, OSP_MAX_DEPTH, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(osp_unwind_left_out_count(w.pcs[inner]), 2);
    ck_assert_uint_eq(w.pcs[OSP_MAX_DEPTH - 1], 0x10000 + 16 * OSP_MAX_DEPTH);
    deep_chain(OSP_MAX_DEPTH);
    w = deep_both();
    expect_walked(&w, OSP_MAX_DEPTH, OSP_UNWIND_OUTERMOST);
    ck_assert(!osp_unwind_left_out_is(w.pcs[inner]));
    /* Deeper than the walk's bound: the frames it reached, and the depth cap. */
    deep_chain(1100);
    w = deep_both();
    expect_walked(&w, OSP_MAX_DEPTH, OSP_UNWIND_DEPTH);
    ck_assert_uint_eq(osp_unwind_left_out_count(w.pcs[inner]),
                      OSP_UNWIND_MAX_STEPS - (OSP_MAX_DEPTH - 1));
    ck_assert_uint_eq(w.pcs[OSP_MAX_DEPTH - 1], 0x10000 + 16 * (OSP_UNWIND_MAX_STEPS - 1));
    /* A record too short for a marker is cut at its cap, as before. */
    uint64_t pcs[8];
    enum osp_unwind_stop stop;
    struct osp__regs regs = {.pc = 0x8010,
                             .sp = (uint64_t)(uintptr_t)&deep_stack[4],
                             .fp = (uint64_t)(uintptr_t)&deep_stack[4],
                             .lr = 0};
    ck_assert_uint_eq(osp__unwind_why(&regs, 1, regs.sp,
                                      (uint64_t)(uintptr_t)&deep_stack[DEEP_WORDS], pcs, 8, &stop),
                      8);
    ck_assert_int_eq(stop, OSP_UNWIND_DEPTH);
    ck_assert(!osp_unwind_left_out_is(pcs[7]));
}
END_TEST

/* A perf sample 300 frames deep with 3 kernel frames (ospd_perf_stack, perf-source.c): the
 * kernel's frames first, then the user stack as the shim's walk folds it into the 125 frames
 * they leave, its outermost frame the root; a switch's sample (no kernel frames) as the
 * attach's walk into a whole record. */
START_TEST(a_deep_perf_sample_keeps_its_kernel_frames_and_its_root)
{
    deep_chain(300);
    uint64_t sp = (uint64_t)(uintptr_t)&deep_stack[4];
    uint64_t hi = (uint64_t)(uintptr_t)&deep_stack[DEEP_WORDS];
    const uint64_t chain[] = {PERF_CONTEXT_KERNEL, 0xffffffff81000010u, 0xffffffff81000020u,
                              0xffffffff81000030u};
    struct ospd_perf_record p = {
        .kind = OSPD_PERF_SAMPLE,
        .has_regs = true,
        .regs = {[OSPD_REG_FP] = sp, [OSPD_REG_SP] = sp, [OSPD_REG_PC] = 0x8010},
        .stack = (const uint8_t *)&deep_stack[4],
        .stack_size = hi - sp,
        .kernel = (const uint8_t *)chain,
        .kernel_count = 4};
    struct walked shim = {0}, perf = {0};
    struct osp__regs regs = {.pc = 0x8010, .sp = sp, .fp = sp, .lr = 0};
    osp__unwind_set_tables(NULL, 0);
    shim.depth = osp__unwind_why(&regs, 1, sp, hi, shim.pcs, OSP_MAX_DEPTH - 3, &shim.stop);
    perf.depth = ospd_perf_stack(NULL, 0, &p, true, perf.pcs, &perf.stop);
    ck_assert_uint_eq(perf.depth, OSP_MAX_DEPTH);
    ck_assert_int_eq(perf.stop, OSP_UNWIND_OUTERMOST);
    for (uint32_t i = 0; i < 3; i++)
        ck_assert_uint_eq(perf.pcs[i], chain[i + 1]);
    ck_assert_uint_eq(shim.depth, OSP_MAX_DEPTH - 3);
    for (uint32_t i = 0; i < shim.depth; i++)
        ck_assert_uint_eq(perf.pcs[3 + i], shim.pcs[i]);
    const uint32_t marker = OSP_MAX_DEPTH - 1 - OSP_UNWIND_OUTER_FRAMES;
    ck_assert_uint_eq(osp_unwind_left_out_count(perf.pcs[marker]), 300 - (OSP_MAX_DEPTH - 4));
    ck_assert_uint_eq(perf.pcs[OSP_MAX_DEPTH - 1], 0x10000 + 16 * 299);
    /* No kernel frames: the record holds the whole walk, as the attach's walk keeps it. */
    struct walked site = {0};
    site.depth = ospd_perf_stack(NULL, 0, &p, false, site.pcs, &site.stop);
    shim.depth = osp__unwind_why(&regs, 1, sp, hi, shim.pcs, OSP_MAX_DEPTH, &shim.stop);
    expect_same(&shim, &site);
    ck_assert_uint_eq(osp_unwind_left_out_count(site.pcs[marker]), 300 - (OSP_MAX_DEPTH - 1));
}
END_TEST

/* A CFA in another register (OSP_CFA_REG, OpenSSL's AES-GCM): [0, 0x100) CFA = the register +
 * 8 (rax on x86_64, x9 on aarch64), the return address at CFA - 8; [0x100, 0x200) an ordinary
 * callee, CFA = sp + 8; [0x200, 0x300) the outermost frame; [0x300, 0x400) the signal
 * trampoline. The shim knows the register from the signal context (iregs) at the leaf and,
 * unchanged, through the rows above it until the frame that set it; ospreyd's walk of a copy,
 * which has no such registers, fails the row; both know it below a signal frame on the stack
 * (the kernel saved it there). */
#if defined(__x86_64__)
#define CFA_SLOT 13u /* REG_RAX */
#else
#define CFA_SLOT 9u
#endif
static const struct osp_unwind_row register_rows[] = {
    {.pc_offset = 0,
     .cfa_offset = 8,
     .cfa_rule = OSP_CFA_REG,
     .cfa_reg = CFA_SLOT,
     .ra_offset = -8},
    {.pc_offset = 0x100, .cfa_offset = 8, .cfa_rule = OSP_CFA_SP, .ra_offset = -8},
    {.pc_offset = 0x200, .cfa_rule = OSP_CFA_END},
    {.pc_offset = 0x300, .cfa_rule = OSP_CFA_SIGNAL},
};

/* The shim's walk from the leaf (pc, sp = word sp_at) with these interrupted registers. */
static struct walked shim_walk(uint64_t pc, unsigned sp_at, const uint64_t *iregs)
{
    struct walked w = {0};
    struct osp__regs regs = {.pc = pc, .sp = at(sp_at), .fp = 0, .lr = 0, .iregs = iregs};
    osp__unwind_set_tables(object, sizeof object);
    w.depth = osp__unwind_why(&regs, 1, at(sp_at), at(WORDS), w.pcs, OSP_MAX_DEPTH, &w.stop);
    osp__unwind_set_tables(NULL, 0);
    return w;
}

START_TEST(a_cfa_in_another_register)
{
    tables_with(register_rows, sizeof register_rows / sizeof register_rows[0]);
    memset(stack, 0, sizeof stack);
    uint64_t iregs[OSP_UNWIND_CFA_REGS] = {0};
    iregs[CFA_SLOT] = at(20); /* CFA word 21: the return address at word 20 */
    set(20, IMAGE + 0x250);
    /* The leaf in the register frame, sp realigned below (word 4, nothing there). */
    struct walked w = shim_walk(IMAGE + 0x10, 4, iregs);
    expect_walked(&w, 2, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x250);
    /* Without the registers (a copy's walk, a frame after the first): the row fails. */
    w = shim_walk(IMAGE + 0x10, 4, NULL);
    expect_walked(&w, 1, OSP_UNWIND_FAILED);
    struct walked d = {0};
    struct ospd_stack_copy copy = {at(4), (const uint8_t *)&stack[4], at(WORDS) - at(4)};
    d.depth = ospd_walk_copy_why(object, sizeof object, IMAGE + 0x10, at(4), 0, &copy, d.pcs,
                                 OSP_MAX_DEPTH, &d.stop);
    expect_walked(&d, 1, OSP_UNWIND_FAILED);
    /* The leaf in an ordinary callee (its return address at word 4, into the register frame):
     * the register keeps its value through the callee's row. */
    set(4, IMAGE + 0x20);
    w = shim_walk(IMAGE + 0x110, 4, iregs);
    expect_walked(&w, 3, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x20);
    ck_assert_uint_eq(w.pcs[2], IMAGE + 0x250);
    /* A register frame called from another: the inner one set the register, the outer one's
     * value is not known. */
    set(20, IMAGE + 0x30);
    w = shim_walk(IMAGE + 0x10, 4, iregs);
    expect_walked(&w, 2, OSP_UNWIND_FAILED);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x30);
    /* A CFA below sp, or a register number past the registers: the row fails. */
    set(20, IMAGE + 0x250);
    iregs[CFA_SLOT] = at(2);
    w = shim_walk(IMAGE + 0x10, 4, iregs);
    expect_walked(&w, 1, OSP_UNWIND_FAILED);
    struct osp_unwind_row bad[sizeof register_rows / sizeof register_rows[0]];
    memcpy(bad, register_rows, sizeof bad);
    bad[0].cfa_reg = OSP_UNWIND_CFA_REGS;
    tables_with(bad, sizeof bad / sizeof bad[0]);
    iregs[CFA_SLOT] = at(20);
    w = shim_walk(IMAGE + 0x10, 4, iregs);
    expect_walked(&w, 1, OSP_UNWIND_FAILED);
#if defined(OSP_UNWIND_SIGNAL_REGS)
    /* Below the kernel's signal frame (the trampoline at sp word 4): the interrupted instant's
     * register from the frame, for both walkers; its leaf in the register frame, CFA word 161.
     */
    tables_with(register_rows, sizeof register_rows / sizeof register_rows[0]);
    memset(stack, 0, sizeof stack);
    set(4 + OSP_UNWIND_SIGNAL_PC / 8, IMAGE + 0x10);
    set(4 + OSP_UNWIND_SIGNAL_SP / 8, at(150));
    set(4 + OSP_UNWIND_SIGNAL_REGS / 8 + CFA_SLOT, at(160));
    set(160, IMAGE + 0x250);
    w = both(1, IMAGE + 0x310, 4, 0, OSP_MAX_DEPTH);
    expect_walked(&w, 3, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x10);
    ck_assert_uint_eq(w.pcs[2], IMAGE + 0x250);
    /* ... and through an ordinary callee the signal interrupted (its return address at word
     * 150, into the register frame). */
    set(4 + OSP_UNWIND_SIGNAL_PC / 8, IMAGE + 0x110);
    set(150, IMAGE + 0x20);
    w = both(1, IMAGE + 0x310, 4, 0, OSP_MAX_DEPTH);
    expect_walked(&w, 4, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(w.pcs[2], IMAGE + 0x20);
    ck_assert_uint_eq(w.pcs[3], IMAGE + 0x250);
#endif
}
END_TEST

/* A CFA read from the frame (OSP_CFA_DEREF, OpenSSL's SHA/AES/bignum assembly: breg7 N;
 * deref; plus_uconst 8; GCC's DRAP: breg6 -8; deref): [0, 0x100) CFA = the word at sp + 16,
 * plus 8; [0x100, 0x200) CFA = the word at fp - 8, plus 0; [0x200, 0x300) the outermost frame;
 * [0x300, 0x400) CFA = the word at sp - 8, plus 8 (OpenSSL's SHA-512 AVX2 loop: x86_64's red
 * zone). Both walkers read the word through their callbacks: the same stack either way, but
 * below sp, where only the shim's walk of the leaf on its live stack reads. */
static const struct osp_unwind_row deref_rows[] = {
    {.pc_offset = 0, .cfa_offset = 16, .cfa_rule = OSP_CFA_DEREF, .cfa_deref = 1, .ra_offset = -8},
    {.pc_offset = 0x100,
     .cfa_offset = -8,
     .cfa_rule = OSP_CFA_DEREF,
     .cfa_deref = OSP_CFA_DEREF_FP,
     .ra_offset = -8,
     .fp_rule = OSP_FP_AT_CFA,
     .fp_offset = -16},
    {.pc_offset = 0x200, .cfa_rule = OSP_CFA_END},
    {.pc_offset = 0x300,
     .cfa_offset = -8,
     .cfa_rule = OSP_CFA_DEREF,
     .cfa_deref = 1,
     .ra_offset = -8},
};

START_TEST(a_cfa_read_from_the_frame)
{
    tables_with(deref_rows, sizeof deref_rows / sizeof deref_rows[0]);
    memset(stack, 0, sizeof stack);
    /* The leaf at sp word 4 (realigned): the caller's sp saved at word 6 (sp + 16) points at
     * word 30, its return address there (CFA word 31 = the saved sp + 8). */
    set(6, at(30));
    set(30, IMAGE + 0x250);
    struct walked w = both(1, IMAGE + 0x10, 4, 0, OSP_MAX_DEPTH);
    expect_walked(&w, 2, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x250);
    /* By the frame pointer (word 10): the CFA at word 9, the caller's rbp below the return
     * address; its caller a frame of the first kind, its saved sp at its sp (word 40) + 16. */
    memset(stack, 0, sizeof stack);
    set(9, at(40));
    set(38, at(50)); /* the caller's fp at CFA - 16 */
    set(39, IMAGE + 0x20);
    set(60, IMAGE + 0x250);
    w = both(1, IMAGE + 0x110, 4, at(10), OSP_MAX_DEPTH);
    expect_walked(&w, 2, OSP_UNWIND_FAILED); /* its caller's sp is word 40: no saved sp there */
    set(42, at(60));
    w = both(1, IMAGE + 0x110, 4, at(10), OSP_MAX_DEPTH);
    expect_walked(&w, 3, OSP_UNWIND_OUTERMOST);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x20);
    ck_assert_uint_eq(w.pcs[2], IMAGE + 0x250);
    /* A saved sp below sp, misaligned, past the stack, or a read outside it: the row fails. */
    memset(stack, 0, sizeof stack);
    set(30, IMAGE + 0x250);
    const uint64_t bad[] = {at(1), at(30) + 4, at(WORDS) + 64, 0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set(6, bad[i]);
        w = both(1, IMAGE + 0x10, 4, 0, OSP_MAX_DEPTH);
        expect_walked(&w, 1, OSP_UNWIND_FAILED);
    }
    set(6, at(30));
    w = both(1, IMAGE + 0x10, WORDS - 1, 0, OSP_MAX_DEPTH); /* sp + 16 past the stack */
    expect_walked(&w, 1, OSP_UNWIND_FAILED);
    /* Below sp: the leaf's red zone (x86_64), read by the shim's walk within sp's page. */
    unsigned sp_at = 40;
    while ((at(sp_at) & 4095u) < 16u)
        sp_at++;
    memset(stack, 0, sizeof stack);
    set(sp_at - 1, at(70));
    set(70, IMAGE + 0x250);
    w = shim_walk(IMAGE + 0x310, sp_at, NULL);
    if (OSP_UNWIND_RED_ZONE > 0) {
        expect_walked(&w, 2, OSP_UNWIND_OUTERMOST);
        ck_assert_uint_eq(w.pcs[1], IMAGE + 0x250);
    } else {
        expect_walked(&w, 1, OSP_UNWIND_FAILED);
    }
    /* ospreyd's copy starts at sp: the row fails there. */
    struct walked d = {0};
    struct ospd_stack_copy copy = {at(sp_at), (const uint8_t *)&stack[sp_at],
                                   at(WORDS) - at(sp_at)};
    d.depth = ospd_walk_copy_why(object, sizeof object, IMAGE + 0x310, at(sp_at), 0, &copy, d.pcs,
                                 OSP_MAX_DEPTH, &d.stop);
    expect_walked(&d, 1, OSP_UNWIND_FAILED);
    /* Not the leaf (a frame the leaf returns to): the word below its sp is a callee's since. */
    set(sp_at - 8, IMAGE + 0x310); /* the leaf's return address, its CFA = its sp (word
                                    * sp_at - 9) + 16 + 8 */
    set(sp_at - 9 + 2, at(sp_at - 8) + 0);
    w = shim_walk(IMAGE + 0x10, sp_at - 9, NULL);
    expect_walked(&w, 2, OSP_UNWIND_FAILED);
    ck_assert_uint_eq(w.pcs[1], IMAGE + 0x310);
}
END_TEST

Suite *walks_suite(void)
{
    Suite *s = suite_create("walks");
    SUITE_CASE(s, "frame pointers", 0, a_frame_pointer_chain);
    TCase *by_rows =
        SUITE_CASE(s, "rows", 0, rows_by_sp_and_fp_and_the_outermost_row,
                   the_plt_an_epilogue_and_a_cfa_that_does_not_rise, the_kernels_signal_frame,
                   a_frame_pointer_guess_while_rows_are_built_is_guessed);
    tcase_add_checked_fixture(by_rows, rows_and_a_clear_stack, NULL);
    SUITE_CASE(s, "copies", 0, a_copy_is_held_until_its_rows_are_published,
               a_copy_that_filled_its_buffer_is_read_on_from_the_live_stack);
    SUITE_CASE(s, "deep", 0, a_stack_deeper_than_a_record_keeps_its_root);
    SUITE_CASE(s, "deep perf sample", 0, a_deep_perf_sample_keeps_its_kernel_frames_and_its_root);
    SUITE_CASE(s, "register CFA", 0, a_cfa_in_another_register);
    SUITE_CASE(s, "CFA read from the frame", 0, a_cfa_read_from_the_frame);
    return s;
}
