/* stack-walk.c — a thread's stack, as the kernel copied it into a perf sample, turned into a
 * list of code addresses: each frame by the unwind row ospreyd built for its pc
 * (proto/osp_unwind.h, the rows the shim's handler walks its own stack with), else by the
 * frame-pointer chain. Pure: the tests hand it a synthetic stack and rows.
 *
 * DESIGN. The rules are the shim's (shim/unwind.c): the CFA from sp or fp plus an offset (or
 * the lazy PLT's), the return address and the caller's frame pointer at CFA-relative slots, a
 * signal frame's saved registers, an outermost frame. What differs is where the words are:
 * not the live stack but a copy of [sp, sp + size) taken at the sample, so every read is an
 * offset into the copy, checked, and a word above the copy ends the walk (a deep stack is
 * cut, never read past). Frame 0 is the exact pc; the frames above are return addresses, so
 * their rows are looked up at pc - 1. x86_64 only (the registers asked of the kernel and the
 * signal frame's layout are x86_64's).
 */
#include <stddef.h>
#include <string.h>
#include <ucontext.h>

#include "osp_unwind.h"
#include "ospd_attach.h"

#define MAX_FRAME_BYTES (UINT64_C(1) << 20) /* a step moves sp up by at most this */

struct regs {
    uint64_t pc, sp, fp;
};

/* The word at addr, when [addr, addr + 8) lies inside the copy. */
static int read_word(const struct ospd_stack_copy *s, uint64_t addr, uint64_t *out)
{
    if (addr < s->sp || s->size < 8 || addr - s->sp > s->size - 8)
        return -1;
    memcpy(out, s->bytes + (addr - s->sp), 8);
    return 0;
}

/* The registers the kernel saved in its signal frame: the ucontext_t at sp (x86_64). */
static int signal_frame(const struct ospd_stack_copy *s, uint64_t sp, struct regs *next)
{
#if defined(__x86_64__)
    size_t gregs = offsetof(ucontext_t, uc_mcontext.gregs);
    if (read_word(s, sp + gregs + 8u * REG_RIP, &next->pc) != 0 ||
        read_word(s, sp + gregs + 8u * REG_RSP, &next->sp) != 0 ||
        read_word(s, sp + gregs + 8u * REG_RBP, &next->fp) != 0)
        return -1;
    return 0;
#else
    (void)s;
    (void)sp;
    (void)next;
    return -1;
#endif
}

enum step { STEP_FAILED = -1, STEP_OUTERMOST = 0, STEP_DONE = 1 };

static enum step by_row(const struct osp_unwind_row *row, const struct regs *r,
                        const struct ospd_stack_copy *s, struct regs *next)
{
    if (row->cfa_rule == OSP_CFA_END)
        return STEP_OUTERMOST;
    if (row->cfa_rule == OSP_CFA_SIGNAL) {
        if (signal_frame(s, r->sp, next) != 0 || next->sp <= r->sp)
            return STEP_FAILED;
        return STEP_DONE;
    }
    uint64_t cfa;
    switch (row->cfa_rule) {
    case OSP_CFA_SP:
        cfa = r->sp + (uint64_t)(int64_t)row->cfa_offset;
        break;
    case OSP_CFA_FP:
        cfa = r->fp + (uint64_t)(int64_t)row->cfa_offset;
        break;
    case OSP_CFA_PLT:
        cfa = r->sp + (uint64_t)(int64_t)row->cfa_offset +
              ((r->pc & 15u) >= row->plt_threshold ? 8u : 0u);
        break;
    default:
        return STEP_FAILED;
    }
    if (cfa <= r->sp || cfa - r->sp > MAX_FRAME_BYTES || (cfa & 7u) ||
        row->ra_rule != OSP_RA_AT_CFA)
        return STEP_FAILED;
    uint64_t ra;
    if (read_word(s, cfa + (uint64_t)(int64_t)row->ra_offset, &ra) != 0)
        return STEP_FAILED;
    /* A saved frame pointer below sp was restored already (an epilogue): the register has it. */
    next->fp = r->fp;
    uint64_t fp_at = cfa + (uint64_t)(int64_t)row->fp_offset;
    if (row->fp_rule == OSP_FP_AT_CFA && fp_at >= r->sp && read_word(s, fp_at, &next->fp) != 0)
        return STEP_FAILED;
    next->sp = cfa;
    next->pc = ra;
    return ra != 0 ? STEP_DONE : STEP_OUTERMOST;
}

static enum step by_frame_pointer(const struct regs *r, const struct ospd_stack_copy *s,
                                  struct regs *next)
{
    uint64_t caller_fp, ra;
    if (r->fp < r->sp || r->fp - r->sp > MAX_FRAME_BYTES || (r->fp & 7u) ||
        read_word(s, r->fp, &caller_fp) != 0 || read_word(s, r->fp + 8, &ra) != 0)
        return STEP_FAILED;
    next->sp = r->fp + 16;
    next->fp = caller_fp;
    next->pc = ra;
    return ra != 0 ? STEP_DONE : STEP_OUTERMOST;
}

uint32_t ospd_walk_copy(const void *tables, uint64_t tables_size, uint64_t pc, uint64_t sp,
                        uint64_t fp, const struct ospd_stack_copy *stack, uint64_t *out,
                        uint32_t cap)
{
    const struct osp_unwind_index *ix =
        tables != NULL ? osp_unwind_snapshot(tables, tables_size) : NULL;
    struct regs r = {pc, sp, fp};
    bool exact = true; /* r.pc is an interrupted instant's pc, not a return address */
    uint32_t depth = 0;
    while (depth < cap && (depth == 0 || r.pc != 0)) {
        out[depth++] = r.pc;
        const struct osp_unwind_row *row =
            ix != NULL ? osp_unwind_find_row(tables, tables_size, ix, exact ? r.pc : r.pc - 1)
                       : NULL;
        struct regs next;
        enum step step = row != NULL && row->cfa_rule != OSP_CFA_UNKNOWN
                             ? by_row(row, &r, stack, &next)
                             : by_frame_pointer(&r, stack, &next);
        if (step != STEP_DONE)
            break;
        exact = row != NULL && row->cfa_rule == OSP_CFA_SIGNAL;
        r = next;
    }
    return depth;
}
