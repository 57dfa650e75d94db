/* stack-walk.c — a thread's stack, as the kernel copied it into a perf sample, turned into a
 * list of code addresses: each frame by the unwind row ospreyd built for its pc
 * (proto/osp_unwind.h, the rows the shim's handler walks its own stack with), else by the
 * frame-pointer chain. Pure: the tests hand it a synthetic stack and rows.
 *
 * DESIGN. The walk is the shim's, the same code: proto/osp_unwind_step.h's osp_unwind_walk
 * (the CFA from sp or fp plus an offset or the lazy PLT's, the return address and the
 * caller's frame pointer at CFA-relative slots, a signal frame's saved registers, an
 * outermost frame). What is this file's own is where the words are: not the live stack but a
 * copy of [sp, sp + size) taken at the sample, so the read callback turns an address into an
 * offset into the copy, checked, and a word above the copy ends the walk (a deep stack is
 * cut, never read past). No code bytes: the leaf's prologue is not looked at (the chain from
 * fp). x86_64 only (the registers asked of the kernel are x86_64's). The same walk from any
 * frame's registers (ospd_walk_copy_regs) walks the shim's copies of stacks whose rows were not
 * published yet (copies.c), from the frame where the handler's walk found none; a stack deeper
 * than a record is folded to one as the handler's walk keeps it (ospd_stack_keep_ends, after
 * the handler's frames). The attach's samplers' walk (ospd_walk_copy_why: perf events, ptrace,
 * a blocked thread's site) goes on past a record's cap as the handler's does and is folded by
 * the same code (osp_unwind_walk_deep), as far as the copy reaches.
 */
#include <linux/perf_event.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>

#include "osp_unwind.h"
#include "osp_unwind_step.h"
#include "ospd_attach.h"

#if defined(__x86_64__)
/* The shared step reads the kernel's signal frame at these offsets. */
_Static_assert(OSP_UNWIND_SIGNAL_PC == offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]), "rip");
_Static_assert(OSP_UNWIND_SIGNAL_SP == offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]), "rsp");
_Static_assert(OSP_UNWIND_SIGNAL_FP == offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]), "rbp");
#endif

/* The word at addr, when [addr, addr + 8) lies inside the copy [lo, hi) whose bytes are
 * m->context: the bounds check of the shared step's reads. */
static int read_word(const struct osp_unwind_memory *m, uint64_t addr, uint64_t *out)
{
    if (addr < m->lo || m->hi - m->lo < 8 || addr - m->lo > m->hi - m->lo - 8)
        return -1;
    memcpy(out, (const uint8_t *)m->context + (addr - m->lo), 8);
    return 0;
}

/* The walk of the copy from regs, up to `steps` frames, folded into cap (osp_unwind_walk_deep). */
static uint32_t walk_copy(const void *tables, uint64_t tables_size,
                          const struct osp_unwind_regs *regs, int leaf,
                          const struct ospd_stack_copy *stack, uint64_t *out, uint32_t cap,
                          uint32_t steps, enum osp_unwind_stop *stop,
                          struct osp_unwind_resume *resume)
{
    const struct osp_unwind_tables t = {
        tables, tables_size, tables != NULL ? osp_unwind_snapshot(tables, tables_size) : NULL,
        tables, tables_size};
    const struct osp_unwind_memory memory = {read_word,    NULL,      NULL,
                                             stack->bytes, stack->sp, stack->sp + stack->size};
    *stop = OSP_UNWIND_DEPTH;
    return osp_unwind_walk_deep(&t, regs, leaf, 0, &memory, out, cap, steps, stop, resume);
}

uint32_t ospd_walk_copy_regs(const void *tables, uint64_t tables_size,
                             const struct osp_unwind_regs *regs, int leaf,
                             const struct ospd_stack_copy *stack, uint64_t *out, uint32_t cap,
                             enum osp_unwind_stop *stop, struct osp_unwind_resume *resume)
{
    return walk_copy(tables, tables_size, regs, leaf, stack, out, cap, cap, stop, resume);
}

uint32_t ospd_walk_copy_why(const void *tables, uint64_t tables_size, uint64_t pc, uint64_t sp,
                            uint64_t fp, const struct ospd_stack_copy *stack, uint64_t *out,
                            uint32_t cap, enum osp_unwind_stop *stop)
{
    const struct osp_unwind_regs r = {pc, sp, fp, 0};
    return walk_copy(tables, tables_size, &r, 1, stack, out, cap, OSP_UNWIND_MAX_STEPS, stop, NULL);
}

/* The sample's kernel frames (its call chain, markers dropped) into pcs, at most
 * OSP_MAX_DEPTH / 2 of them. Returns their count. */
static uint32_t kernel_frames(const struct ospd_perf_record *p, uint64_t *pcs)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < p->kernel_count && count < OSP_MAX_DEPTH / 2; i++) {
        uint64_t pc;
        memcpy(&pc, p->kernel + 8u * i, 8);
        if (pc < (uint64_t)PERF_CONTEXT_MAX) /* not a context marker */
            pcs[count++] = pc;
    }
    return count;
}

uint32_t ospd_perf_stack(const void *tables, uint64_t tables_size, const struct ospd_perf_record *p,
                         bool with_kernel, uint64_t *pcs, enum osp_unwind_stop *stop)
{
    uint32_t kernel = with_kernel ? kernel_frames(p, pcs) : 0;
    const struct ospd_stack_copy copy = {p->regs[OSPD_REG_SP], p->stack, p->stack_size};
    return kernel + ospd_walk_copy_why(tables, tables_size, p->regs[OSPD_REG_PC],
                                       p->regs[OSPD_REG_SP], p->regs[OSPD_REG_FP], &copy,
                                       pcs + kernel, OSP_MAX_DEPTH - kernel, stop);
}

uint32_t ospd_stack_keep_ends(uint64_t *pcs, uint32_t depth, uint32_t cap)
{
    if (depth <= cap)
        return depth;
    if (cap < OSP_UNWIND_OUTER_FRAMES + 2)
        return cap; /* too short for a marker: cut */
    uint32_t inner = cap - 1 - OSP_UNWIND_OUTER_FRAMES;
    pcs[inner] = osp_unwind_left_out_pc(depth - (cap - 1));
    memmove(pcs + inner + 1, pcs + depth - OSP_UNWIND_OUTER_FRAMES,
            OSP_UNWIND_OUTER_FRAMES * sizeof *pcs);
    return cap;
}

uint64_t ospd_read_stack(int32_t pid, uint64_t addr, uint8_t *out, uint64_t size)
{
    enum { PAGE = 4096, PIECES = 64 };
    uint64_t done = 0;
    while (done < size) {
        struct iovec remote[PIECES];
        uint64_t at = addr + done, asked = 0;
        int pieces = 0;
        while (done + asked < size && pieces < PIECES) {
            uint64_t piece = PAGE - (at & (PAGE - 1));
            piece = piece < size - done - asked ? piece : size - done - asked;
            remote[pieces++] = (struct iovec){(void *)(uintptr_t)at, piece};
            at += piece;
            asked += piece;
        }
        struct iovec local = {out + done, asked};
        ssize_t n = process_vm_readv(pid, &local, 1, remote, (unsigned long)pieces, 0);
        if (n > 0)
            done += (uint64_t)n;
        if (n < 0 || (uint64_t)n < asked)
            break; /* a page that cannot be read: the stack ends there */
    }
    return done;
}
