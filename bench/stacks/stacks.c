/* stacks.c — what a sample off the thread's own stack costs the handler (shim/stacks.c): a
 * coroutine's stack of DEPTH frames (makecontext, 256 KiB from the heap, frame pointers),
 * captured with getcontext at its deepest frame, its bounds found (osp__stack_spans) and walked
 * (osp__unwind_spans) again and again: in place, as when the runtime declared the stack
 * (osp_prof_fiber_switch); and from a copy, as when nothing said where the stack is (a
 * sigaltstack query, then process_vm_readv of OSP__STACK_COPY_BYTES, more as the walk needs).
 * Prints the median and 99th percentile per sample and the frames found. FRAME_BYTES gives each
 * frame that much of the stack more (30 frames of 1 KiB: deeper than the first copy's 16 KiB, which
 * the walk reads further). Usage: stacks [DEPTH] [WALKS] [FRAME_BYTES]. Built and run by run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include "../walk/timing.h"
#include "osp_core.h"

#define STACK_SIZE (256u << 10)
#ifndef OSP__STACK_COPY_MAX /* a tree from before the copy was read further */
#define OSP__STACK_COPY_MAX OSP__STACK_COPY_BYTES
#endif

static ucontext_t captured, scheduler, coroutine;
static volatile int sink;
static int (*volatile next)(int); /* through a pointer: the recursion stays calls */
static int depth = 30, walks = 100000, frame_bytes;
static char *stack;
static struct osp__slot *slot;

static void measure(const char *what)
{
    struct osp__regs regs;
    osp__cpu_regs(&captured, &regs);
    uint64_t *t = calloc((size_t)walks, sizeof *t), pcs[OSP_MAX_DEPTH];
    uint32_t found = 0, spans_n = 0;
    for (int i = 0; i < walks; i++) {
        uint64_t t0 = now_ns();
        struct osp__stack_span spans[4];
        spans_n = osp__stack_spans(slot, regs.sp, spans);
        found = spans_n ? osp__unwind_spans(&regs, 1, spans, spans_n, pcs, OSP_MAX_DEPTH) : 1;
        t[i] = now_ns() - t0;
    }
    qsort(t, (size_t)walks, sizeof *t, compare);
    printf("%-34s median %6.2f us  p99 %6.2f us  %u frames\n", what, (double)t[walks / 2] / 1e3,
           (double)t[walks * 99 / 100] / 1e3, found);
    free(t);
}

__attribute__((noinline)) static int descend(int n)
{
    volatile char *pad = frame_bytes > 0 ? __builtin_alloca((size_t)frame_bytes) : NULL;
    if (pad != NULL)
        pad[0] = (char)n;
    if (n == 0) {
        getcontext(&captured);
        slot->fiber_lo = (uint64_t)(uintptr_t)stack;
        slot->fiber_hi = slot->fiber_lo + STACK_SIZE;
        measure("in place (the runtime declared it)");
        slot->fiber_lo = slot->fiber_hi = 0;
        measure("copied (nothing declared)");
        return 1;
    }
    int r = next(n - 1);
    sink = r;
    return r + 1;
}

static void entry(void)
{
    sink = descend(depth);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        depth = atoi(argv[1]);
    if (argc > 2)
        walks = atoi(argv[2]);
    if (argc > 3)
        frame_bytes = atoi(argv[3]);
    next = descend;
    slot = calloc(1, sizeof *slot);
    stack = malloc(STACK_SIZE);
    slot->stack_copy =
        mmap(NULL, OSP__STACK_COPY_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (slot == NULL || stack == NULL || slot->stack_copy == MAP_FAILED ||
        getcontext(&coroutine) != 0)
        return 1;
    osp__read_code_init();
    coroutine.uc_stack.ss_sp = stack;
    coroutine.uc_stack.ss_size = STACK_SIZE;
    coroutine.uc_link = &scheduler;
    makecontext(&coroutine, entry, 0);
    printf("a coroutine's stack, %d frames deep (frame pointers, %d bytes more each), %d samples "
           "each:\n",
           depth, frame_bytes, walks);
    swapcontext(&scheduler, &coroutine);
    return 0;
}
