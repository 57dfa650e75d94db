/* test-stacks.c — unit tests of the bounds of the stack a sample is on (shim/stacks.c) and of
 * the walk over them (osp__unwind_spans): a stack walked from its copy gives what the stack
 * gave in place, even once the stack itself is gone; a hostile chain in a copy ends inside it;
 * the spans found for a stack pointer on the thread's stack, on a declared fiber's, on the
 * signal stack, on memory no one declared (copied up to the first unreadable page) and on no
 * memory at all; a copy read further when the walk reaches its end. Linked with the shim's layers
 * 1-4 (no tables: the frame-pointer walk). */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "osp_core.h"
#include "suite.h"

#define PAGE 4096u

/* Three pages of fake stack with a chain of frame records from word 64 up, each record
 * [next frame pointer, return address], the last with return address 0 (outermost). */
static uint64_t *fake_stack(void)
{
    uint64_t *w = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(w, MAP_FAILED);
    for (size_t i = 64; i < 64 + 5 * 32; i += 32) {
        w[i] = (uint64_t)(uintptr_t)&w[i + 32];
        w[i + 1] = 0x1000 + i;
    }
    w[64 + 5 * 32 + 1] = 0; /* outermost */
    return w;
}

static uint32_t walk(const struct osp__stack_span *span, uint64_t sp, uint64_t fp, uint64_t *out)
{
    struct osp__regs regs = {.pc = 0xabc, .sp = sp, .fp = fp, .lr = 0};
    return osp__unwind_spans(&regs, 0, span, 1, out, OSP_MAX_DEPTH);
}

START_TEST(a_copied_stack_walks_as_in_place_even_once_gone)
{
    uint64_t *w = fake_stack();
    uint64_t base = (uint64_t)(uintptr_t)w, sp = base + 8 * 32, hi = base + 3 * PAGE;
    uint64_t in_place[OSP_MAX_DEPTH], copied[OSP_MAX_DEPTH];
    struct osp__stack_span span = {sp, hi, NULL, 0};
    uint32_t depth = walk(&span, sp, (uint64_t)(uintptr_t)&w[64], in_place);
    ck_assert_uint_eq(depth, 6); /* pc and five return addresses */
    ck_assert_uint_eq(in_place[1], 0x1000 + 64);

    uint8_t *copy = malloc(3 * PAGE);
    memcpy(copy, w, 3 * PAGE);
    munmap(w, 3 * PAGE); /* the stack is gone: only the copy may be read */
    struct osp__stack_span from_copy = {sp, hi, copy, base};
    ck_assert_uint_eq(walk(&from_copy, sp, base + 8 * 64, copied), depth);
    ck_assert_mem_eq(copied, in_place, depth * sizeof(uint64_t));
    free(copy);
}
END_TEST

START_TEST(a_hostile_chain_in_a_copy_ends_inside_it)
{
    uint64_t *w = fake_stack();
    uint64_t base = (uint64_t)(uintptr_t)w, sp = base + 8 * 32, hi = base + PAGE;
    uint64_t out[OSP_MAX_DEPTH];
    struct osp__stack_span span = {sp, hi, (const uint8_t *)w, base};
    w[64] = base + 8 * 64; /* a record pointing at itself */
    ck_assert_uint_le(walk(&span, sp, base + 8 * 64, out), 2);
    w[64] = base + 8 * 40; /* going down */
    w[40] = base + 8 * 64;
    ck_assert_uint_le(walk(&span, sp, base + 8 * 64, out), 2);
    w[64] = hi; /* past the copy's end: a real stack would go on, the copy does not */
    ck_assert_uint_eq(walk(&span, sp, base + 8 * 64, out), 2);
    ck_assert_uint_eq(walk(&span, sp, hi - 8, out), 1); /* a record straddling the end */
    for (size_t i = 32; i < PAGE / 8; i++)              /* random words */
        w[i] = (uint64_t)random() << 32 | (uint64_t)random();
    for (int k = 0; k < 1000; k++)
        ck_assert_uint_le(walk(&span, sp, sp + 8 * (uint64_t)(random() % 400), out), OSP_MAX_DEPTH);
    munmap(w, 3 * PAGE);
}
END_TEST

static struct osp__slot *slot_with_copy(void)
{
    struct osp__slot *s = calloc(1, sizeof *s);
    s->stack_copy =
        mmap(NULL, OSP__STACK_COPY_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(s->stack_copy, MAP_FAILED);
    return s;
}

START_TEST(spans_name_the_stack_sp_is_on)
{
    struct osp__slot *s = slot_with_copy();
    struct osp__stack_span out[4];
    uint64_t *region =
        mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t lo = (uint64_t)(uintptr_t)region, sp = lo + PAGE + 64;
    ck_assert_int_eq(mprotect((char *)region + 3 * PAGE, PAGE, PROT_NONE), 0);
    s->stack_lo = 0x1000;
    s->stack_hi = 0x2000;

    /* The thread's own stack, and the copy buffer as a spare. */
    ck_assert_uint_eq(osp__stack_spans(s, 0x1800, out), 2);
    ck_assert_uint_eq(out[0].lo, 0x1800);
    ck_assert_uint_eq(out[0].hi, 0x2000);
    ck_assert_ptr_null(out[0].copy);
    ck_assert_ptr_eq(out[1].copy, s->stack_copy);
    ck_assert_uint_eq(out[1].hi, 0);

    /* A fiber's stack its runtime declared: in place, the thread's next. */
    s->fiber_lo = lo;
    s->fiber_hi = lo + 2 * PAGE;
    ck_assert_uint_eq(osp__stack_spans(s, sp, out), 3);
    ck_assert_uint_eq(out[0].lo, sp);
    ck_assert_uint_eq(out[0].hi, lo + 2 * PAGE);
    ck_assert_ptr_null(out[0].copy);
    ck_assert_uint_eq(out[1].lo, 0x1000);
    ck_assert_uint_eq(osp__stack_in_place(s, sp, &lo), (uint64_t)(uintptr_t)region + 2 * PAGE);

    /* Nothing declared: copied from sp's page up to the first page that cannot be read (where
     * process_vm_readv works: qemu-user, which runs the arm64 tests, has none, and then
     * nothing is walked). */
    s->fiber_lo = s->fiber_hi = 0;
    region[(PAGE + 64) / 8] = 0x5eed;
    uint64_t probe;
    if (osp__read_code((uint64_t)(uintptr_t)region, &probe, sizeof probe) != 0) {
        ck_assert_uint_eq(osp__stack_spans(s, sp, out), 0);
    } else {
        ck_assert_uint_eq(osp__stack_spans(s, sp, out), 2);
        ck_assert_ptr_eq(out[0].copy, s->stack_copy);
        ck_assert_uint_eq(out[0].base, (uint64_t)(uintptr_t)region + PAGE);
        ck_assert_uint_eq(out[0].lo, sp);
        ck_assert_uint_eq(out[0].hi, (uint64_t)(uintptr_t)region + 3 * PAGE);
        ck_assert_uint_eq(*(const uint64_t *)(const void *)(out[0].copy + 64), 0x5eed);
    }
    ck_assert_uint_eq(osp__stack_in_place(s, sp, &lo), 0);

    /* On no memory at all: nothing to walk. */
    ck_assert_uint_eq(osp__stack_spans(s, (uint64_t)(uintptr_t)region + 3 * PAGE + 8, out), 0);

    /* On the signal stack: in place, to its top. */
    stack_t ss = {.ss_sp = region, .ss_size = 3 * PAGE, .ss_flags = 0}, old;
    ck_assert_int_eq(sigaltstack(&ss, &old), 0);
    ck_assert_uint_eq(osp__stack_spans(s, sp, out), 3);
    ck_assert_ptr_null(out[0].copy);
    ck_assert_uint_eq(out[0].hi, (uint64_t)(uintptr_t)region + 3 * PAGE);
    ck_assert_uint_eq(out[1].lo, 0x1000);
    ck_assert_int_eq(sigaltstack(&old, NULL), 0);

    munmap(region, 4 * PAGE);
    munmap(s->stack_copy, OSP__STACK_COPY_MAX);
    free(s);
}
END_TEST

/* A stack no one declared that goes on past the first copy (OSP__STACK_COPY_BYTES): read
 * further when the walk reaches the copy's end, to its outermost frame 80 KiB up; a chain that
 * runs into a page that cannot be read ends there. */
START_TEST(a_deep_copied_stack_is_read_further)
{
    enum { PAGES = 24, GAP = 8192 / 8, RECORDS = 10 };
    struct osp__slot *s = slot_with_copy();
    s->stack_lo = 0x1000;
    s->stack_hi = 0x2000;
    uint64_t *w =
        mmap(NULL, (PAGES + 1) * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(w, MAP_FAILED);
    ck_assert_int_eq(mprotect((char *)w + PAGES * PAGE, PAGE, PROT_NONE), 0);
    uint64_t base = (uint64_t)(uintptr_t)w, sp = base + 64;
    for (size_t r = 0; r < RECORDS; r++) {
        size_t i = 16 + r * GAP;
        w[i] = r + 1 < RECORDS ? (uint64_t)(uintptr_t)&w[i + GAP] : 0;
        w[i + 1] = r + 1 < RECORDS ? 0x1000 + r : 0; /* the last: outermost */
    }
    uint64_t probe, out[OSP_MAX_DEPTH];
    struct osp__stack_span spans[4];
    if (osp__read_code(base, &probe, sizeof probe) != 0) {
        ck_assert_uint_eq(osp__stack_spans(s, sp, spans), 0); /* no process_vm_readv (qemu) */
    } else {
        uint32_t n = osp__stack_spans(s, sp, spans);
        ck_assert_uint_ge(n, 1);
        ck_assert_uint_eq(spans[0].hi - spans[0].base, OSP__STACK_COPY_BYTES);
        struct osp__regs regs = {.pc = 0xabc, .sp = sp, .fp = base + 16 * 8, .lr = 0};
        enum osp_unwind_stop stop;
        uint32_t depth = osp__unwind_spans_why(&regs, 0, spans, n, out, OSP_MAX_DEPTH, &stop);
        ck_assert_uint_eq(depth, RECORDS); /* pc and RECORDS - 1 return addresses */
        ck_assert_uint_eq(out[RECORDS - 1], 0x1000 + RECORDS - 2);
        ck_assert_int_eq(stop, OSP_UNWIND_OUTERMOST);
        /* The chain's last record now points into the page that cannot be read. */
        w[16 + (RECORDS - 1) * GAP] = base + PAGES * PAGE + 64;
        w[16 + (RECORDS - 1) * GAP + 1] = 0x2000;
        n = osp__stack_spans(s, sp, spans);
        depth = osp__unwind_spans_why(&regs, 0, spans, n, out, OSP_MAX_DEPTH, &stop);
        ck_assert_uint_eq(depth, RECORDS + 1);
        ck_assert_int_ne(stop, OSP_UNWIND_OUTERMOST);
    }
    munmap(w, (PAGES + 1) * PAGE);
    munmap(s->stack_copy, OSP__STACK_COPY_MAX);
    free(s);
}
END_TEST

Suite *stacks_suite(void)
{
    Suite *s = suite_create("stacks");
    SUITE_CASE(s, "stacks", 0, a_copied_stack_walks_as_in_place_even_once_gone,
               a_hostile_chain_in_a_copy_ends_inside_it, a_deep_copied_stack_is_read_further,
               spans_name_the_stack_sp_is_on);
    return s;
}
