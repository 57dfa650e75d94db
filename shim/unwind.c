/* unwind.c — stack capture: the interrupted registers turned into a list of code addresses.
 *
 * Owns the one entry point the handler and the guard use (osp__unwind), which walks each
 * frame by the unwind row ospreyd published for its pc (proto/osp_unwind.h) and, where there
 * is none — an image whose table is not ready yet, a pc no CFI covers, a rule the rows do not
 * express — by the frame-pointer chain; and the frame-pointer walk on its own
 * (osp__unwind_walk, and the aarch64 form that also records lr), kept for code that has
 * frame pointers and no tables.
 *
 * DESIGN. Nothing read from the stack or from the tables is trusted. Each step must move the
 * stack pointer strictly up, to at most OSP__MAX_FRAME_BYTES above the last, and every word
 * read (a saved return address, a saved frame pointer, a frame record, the kernel's signal
 * frame) must lie inside [lo, hi): the callers pass lo = max(stack low bound, the interrupted
 * sp), and everything in [sp, hi) is mapped (the main thread's stack mapping grows down to
 * cover sp; pthread stacks are mapped whole), so no read can fault. A stack not known to stay
 * mapped is walked in a copy (osp__stack_span.copy, taken by stacks.c without faulting), at
 * its own addresses. A walk may cross from one stack to another only at the kernel's signal
 * frame (a handler on a sigaltstack, the interrupted stack below it), onto one of the spans it
 * was given and has not walked yet, or onto a stack copied there into a spare span's buffer
 * (hi 0); within a stack the stack pointer rises strictly. A frame
 * pointer is 8-byte aligned, its 16-byte record inside [lo, hi) above the current sp. Every offset
 * and count read from the tables is checked against the mapping's size. The walk ends at the first
 * check that fails, at an outermost frame (the CFI says the return address is undefined, or a zero
 * return address), or after `cap` addresses. The CPU's part (registers, the signal frame, the
 * x86_64 prologue and PLT) is in shim/arch/<cpu>/osp_cpu.h.
 */
#include <stdint.h>

#include "osp_base.h"
#include "osp_core.h"
#include "osp_unwind.h"

/* These functions read stack memory that belongs to frames they do not own (another
 * thread's, or their own callers' beyond any object): under AddressSanitizer those words are
 * redzones and every read would be reported. The checks above are what keep the reads in
 * bounds; the sanitizer is told to stay out of them. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
#define OSP__READS_FOREIGN_STACK __attribute__((no_sanitize("address", "hwaddress")))
#endif
#endif
#ifndef OSP__READS_FOREIGN_STACK
#define OSP__READS_FOREIGN_STACK
#endif

/* The walk. Async-signal-safe: it reads only memory inside [lo, hi). */
OSP__READS_FOREIGN_STACK
static uint32_t walk(uint64_t pc, uint64_t fp, uint64_t lo, uint64_t hi, uint64_t *out,
                     uint32_t cap)
{
    if (cap == 0)
        return 0;
    uint32_t depth = 0;
    out[depth++] = pc;
    uint64_t prev = 0;
    while (depth < cap) {
        if (fp & 7u)
            break; /* misaligned */
        if (fp < lo || hi < 16 || fp > hi - 16)
            break; /* record not inside the stack */
        if (prev != 0 && (fp <= prev || fp - prev > OSP__MAX_FRAME_BYTES))
            break; /* not strictly increasing, or an implausibly large frame */
        const uint64_t *record = (const uint64_t *)(uintptr_t)fp;
        uint64_t next = record[0];
        uint64_t ret = osp__strip_pac(record[1]);
        if (ret == 0)
            break; /* the outermost frame */
        out[depth++] = ret;
        prev = fp;
        fp = next;
    }
    return depth;
}

/* Async-signal-safe: reads only memory inside [lo, hi). */
uint32_t osp__unwind_walk(uint64_t pc, uint64_t fp, uint64_t lo, uint64_t hi, uint64_t *out,
                          uint32_t cap)
{
    return walk(pc, fp, lo, hi, out, cap);
}

/* Async-signal-safe. */
uint32_t osp__unwind_walk_lr(uint64_t pc, uint64_t lr, uint64_t fp, uint64_t lo, uint64_t hi,
                             uint64_t *out, uint32_t cap)
{
    if (cap == 0)
        return 0;
    if (lr == 0 || cap == 1)
        return osp__unwind_walk(pc, fp, lo, hi, out, cap);
    /* out[0] = pc, out[1] = lr, then the chain's return addresses from out[2] on. The walk
     * writes its own "pc" slot, so walk into out + 1 with lr in that slot. */
    uint32_t depth = 1 + osp__unwind_walk(lr, fp, lo, hi, out + 1, cap - 1);
    out[0] = pc;
    if (depth >= 3 && out[2] == lr) {
        for (uint32_t i = 2; i + 1 < depth; i++)
            out[i] = out[i + 1];
        depth--;
    }
    return depth;
}

/* Async-signal-safe. */
uint64_t osp__strip_pac(uint64_t addr)
{
    return osp__cpu_strip_pac(addr);
}

/* Async-signal-safe (osp__read_pc_code). */
OSP__READS_FOREIGN_STACK
uint64_t osp__unwind_x86_frameless_return(uint64_t pc, uint64_t sp, uint64_t hi)
{
    int slot = osp__cpu_frameless_return_slot(pc); /* where the return address is, in words */
    if (slot < 0 || sp & 7u || sp >= hi || hi - sp < 8u * (uint64_t)(slot + 1))
        return 0;
    return ((const uint64_t *)(uintptr_t)sp)[slot];
}

/* ---- the walk by unwind rows, with the frame-pointer chain where there are none ---------- */

/* The tables ospreyd publishes: set by boot, before any thread is sampled. A forked child's
 * own collector publishes its tables a few milliseconds after the fork; until its first
 * snapshot, the walk reads its parent's (inherited: the same address space at the fork). */
struct tables {
    const uint8_t *base;
    uint64_t size;
};
static struct tables own, inherited;

void osp__unwind_set_tables(const void *map, uint64_t size)
{
    own = (struct tables){map, map != NULL ? size : 0};
}

void osp__unwind_fork(void)
{
    /* The parent's own tables if they have a snapshot (or it had nothing else), else what it
     * inherited itself; the child's own come with its collector. */
    if (inherited.base == NULL || (own.base != NULL && osp_unwind_snapshot(own.base, own.size)))
        inherited = own;
    own = (struct tables){NULL, 0};
}

/* The snapshot a walk reads now, and the tables it is in (*t); NULL when there is none. */
static const struct osp_unwind_index *active_index(struct tables *t)
{
    const struct osp_unwind_index *ix = own.base ? osp_unwind_snapshot(own.base, own.size) : NULL;
    *t = own;
    if (ix == NULL && inherited.base != NULL) {
        ix = osp_unwind_snapshot(inherited.base, inherited.size);
        if (ix != NULL)
            *t = inherited;
    }
    return ix;
}

/* Async-signal-safe. */
uint64_t osp__unwind_generation(void)
{
    struct tables t;
    const struct osp_unwind_index *ix = active_index(&t);
    /* The inherited tables' generations are another count: told apart by the top bit. */
    return ix == NULL ? 0 : ix->generation | (t.base == inherited.base ? UINT64_C(1) << 63 : 0);
}

/* Async-signal-safe. */
int osp__unwind_settling(void)
{
    if (own.base == NULL)
        return 0;
    const struct osp_unwind_header *h = (const struct osp_unwind_header *)own.base;
    /* Acquire: ospreyd drops the count with release after publishing an image's rows, so a
     * generation read after a count of 0 includes them (handler.c compares it). */
    return atomic_load_explicit((_Atomic uint32_t *)&h->builds_pending, memory_order_acquire) !=
               0 ||
           osp_unwind_snapshot(own.base, own.size) == NULL;
}

/* The row for pc in the snapshot, or NULL. Async-signal-safe: reads only inside the mapping. */
static const struct osp_unwind_row *find_row(const struct osp_unwind_index *ix,
                                             const struct tables *t, uint64_t pc)
{
    return osp_unwind_find_row(t->base, t->size, ix, pc);
}

/* Where the word at addr of span m is: in place, or in the span's copy. */
static const uint8_t *span_at(const struct osp__stack_span *m, uint64_t addr)
{
    return m->copy != NULL ? m->copy + (addr - m->base) : (const uint8_t *)(uintptr_t)addr;
}

/* The stack word at addr if [addr, addr + 8) is an aligned word inside the span's [lo, hi). */
OSP__READS_FOREIGN_STACK
static int read_word(uint64_t addr, const struct osp__stack_span *m, uint64_t *out)
{
    if (addr & 7u || addr < m->lo || m->hi < 8 || addr > m->hi - 8)
        return -1;
    *out = *(const uint64_t *)(const void *)span_at(m, addr);
    return 0;
}

/* STEP_SWITCH: a signal frame whose interrupted stack pointer is outside the span walked. */
enum step { STEP_FAILED = -1, STEP_OUTERMOST = 0, STEP_DONE = 1, STEP_SWITCH = 2 };

/* One frame by its row. `first`: r holds every register of the interrupted instant (the leaf,
 * or the frame below a signal frame), so lr is valid. Async-signal-safe. */
static enum step step_by_row(const struct osp_unwind_row *row, const struct osp__regs *r, int first,
                             const struct osp__stack_span *m, struct osp__regs *next)
{
    uint64_t hi = m->hi;
    if (row->cfa_rule == OSP_CFA_END)
        return STEP_OUTERMOST;
    if (row->cfa_rule == OSP_CFA_SIGNAL) {
        if (r->sp < m->lo || r->sp >= hi ||
            osp__cpu_signal_frame_regs((uint64_t)(uintptr_t)span_at(m, r->sp),
                                       (uint64_t)(uintptr_t)span_at(m, hi), next) != 0)
            return STEP_FAILED;
        next->lr = osp__cpu_strip_pac(next->lr);
        if (next->sp >= m->lo && next->sp < hi) /* the same stack: it must rise */
            return next->sp > r->sp ? STEP_DONE : STEP_FAILED;
        return STEP_SWITCH; /* interrupted on another stack (a handler on a sigaltstack) */
    }
    uint64_t cfa;
    if (row->cfa_rule == OSP_CFA_SP)
        cfa = r->sp + (uint64_t)(int64_t)row->cfa_offset;
    else if (row->cfa_rule == OSP_CFA_FP)
        cfa = r->fp + (uint64_t)(int64_t)row->cfa_offset;
    else if (row->cfa_rule == OSP_CFA_PLT)
        cfa = r->sp + (uint64_t)(int64_t)row->cfa_offset +
              osp__cpu_plt_extra(r->pc, row->plt_threshold);
    else
        return STEP_FAILED;
    /* The CFA rises, except at an aarch64 leaf that has pushed nothing (CFA = sp, the return
     * address still in lr): that step cannot repeat, lr being known only at the first frame. */
    if (cfa < r->sp || (cfa == r->sp && row->ra_rule != OSP_RA_IN_LR) || cfa > hi ||
        cfa - r->sp > OSP__MAX_FRAME_BYTES || cfa & 7u)
        return STEP_FAILED;
    uint64_t ra;
    if (row->ra_rule == OSP_RA_AT_CFA) {
        if (read_word(cfa + (uint64_t)(int64_t)row->ra_offset, m, &ra) != 0)
            return STEP_FAILED;
    } else if (row->ra_rule == OSP_RA_IN_LR && first) {
        ra = r->lr;
    } else {
        return STEP_FAILED;
    }
    /* A saved frame pointer below the current sp was restored already (an epilogue's pops
     * come before the CFA rule changes, and the rule still names the old slot, which our own
     * signal frame may have overwritten since): the register holds it. */
    next->fp = r->fp;
    uint64_t fp_at = cfa + (uint64_t)(int64_t)row->fp_offset;
    if (row->fp_rule == OSP_FP_AT_CFA && fp_at >= r->sp && read_word(fp_at, m, &next->fp) != 0)
        return STEP_FAILED;
    next->sp = cfa;
    next->pc = osp__cpu_strip_pac(ra);
    next->lr = 0;
    return next->pc != 0 ? STEP_DONE : STEP_OUTERMOST;
}

/* One frame by the frame-pointer chain. `leaf`: r.pc is the interrupted pc itself, whose
 * page is mapped (its code bytes may be read directly). Async-signal-safe. */
OSP__READS_FOREIGN_STACK
static enum step step_by_fp(const struct osp__regs *r, int leaf, const struct osp__stack_span *m,
                            struct osp__regs *next)
{
    if (leaf) {
        /* In a prologue or at a ret (x86_64), the caller is found on the stack, not through
         * the frame pointer, which still holds the caller's frame. */
        int slot = osp__cpu_frameless_return_slot(r->pc);
        uint64_t ra;
        if (slot >= 0 && read_word(r->sp + 8u * (uint64_t)slot, m, &ra) == 0) {
            next->sp = r->sp + 8u * (uint64_t)(slot + 1);
            next->fp = r->fp;
            next->pc = ra;
            next->lr = 0;
            return ra != 0 ? STEP_DONE : STEP_OUTERMOST;
        }
    }
    uint64_t fp = r->fp, ra, caller_fp;
    if (fp < r->sp || fp - r->sp > OSP__MAX_FRAME_BYTES || read_word(fp, m, &caller_fp) != 0 ||
        read_word(fp + 8, m, &ra) != 0)
        return STEP_FAILED;
    next->sp = fp + 16;
    next->fp = caller_fp;
    next->pc = osp__cpu_strip_pac(ra);
    next->lr = 0;
    return next->pc != 0 ? STEP_DONE : STEP_OUTERMOST;
}

/* Async-signal-safe. */
uint32_t osp__unwind_spans(const struct osp__regs *regs, int leaf,
                           const struct osp__stack_span *spans, uint32_t n, uint64_t *out,
                           uint32_t cap)
{
    if (cap == 0 || n == 0)
        return 0;
    struct tables t;
    const struct osp_unwind_index *ix = active_index(&t);
    if (ix == NULL && regs->lr != 0 && leaf && spans[0].copy == NULL) /* aarch64, no tables */
        return osp__unwind_walk_lr(regs->pc, regs->lr, regs->fp, spans[0].lo, spans[0].hi, out,
                                   cap);
    struct osp__stack_span m = spans[0]; /* the stack walked now */
    uint32_t entered = 1;                /* the spans walked: each once, so no walk loops */
    struct osp__regs r = *regs;
    int precise = leaf; /* r.pc is the instant's own pc, not a return address */
    uint32_t depth = 0;
    /* The first address is stored whatever it is (a jump to 0 still has a leaf). */
    while (depth < cap && (depth == 0 || r.pc != 0)) {
        out[depth++] = r.pc;
        if (depth == cap)
            break;
        const struct osp_unwind_row *row = ix ? find_row(ix, &t, precise ? r.pc : r.pc - 1) : NULL;
        struct osp__regs next;
        enum step step = row != NULL && row->cfa_rule != OSP_CFA_UNKNOWN
                             ? step_by_row(row, &r, precise, &m, &next)
                             : step_by_fp(&r, leaf && depth == 1, &m, &next);
        if (step == STEP_SWITCH) {
            /* The bounds switch at the kernel's signal frame: the walk goes on from the
             * interrupted stack pointer up, on a stack it has not walked yet. */
            uint32_t k = 0;
            while (k < n &&
                   ((entered >> k & 1u) || next.sp < spans[k].lo || next.sp >= spans[k].hi))
                k++;
            if (k < n) {
                m = spans[k];
                m.lo = next.sp;
            } else { /* on a stack no one vouched for: copied now, into a spare span's buffer */
                k = 0;
                while (k < n && ((entered >> k & 1u) || spans[k].copy == NULL || spans[k].hi != 0))
                    k++;
                if (k == n)
                    break;
                uint64_t base = next.sp & ~(uint64_t)4095;
                size_t got =
                    osp__read_pages(base, (void *)(uintptr_t)spans[k].copy, OSP__STACK_COPY_BYTES);
                if (got < next.sp - base + 8)
                    break;
                m = (struct osp__stack_span){next.sp, base + got, spans[k].copy, base};
            }
            entered |= 1u << k;
        } else if (step != STEP_DONE) {
            break;
        }
        /* Past the kernel's signal frame, the registers are an interrupted instant again. */
        precise = row != NULL && row->cfa_rule == OSP_CFA_SIGNAL;
        r = next;
    }
    return depth;
}

/* Async-signal-safe. */
uint32_t osp__unwind(const struct osp__regs *regs, int leaf, uint64_t lo, uint64_t hi,
                     uint64_t *out, uint32_t cap)
{
    struct osp__stack_span span = {.lo = lo, .hi = hi, .copy = NULL, .base = 0};
    return osp__unwind_spans(regs, leaf, &span, 1, out, cap);
}

/* Async-signal-safe. */
uint32_t osp__unwind_caller(uint64_t fp, uint32_t own_frames, uint64_t lo, uint64_t hi,
                            uint64_t *out, uint32_t cap)
{
    struct osp__regs r = {.pc = 0, .sp = lo, .fp = fp, .lr = 0};
    struct osp__stack_span span = {.lo = lo, .hi = hi, .copy = NULL, .base = 0};
    for (uint32_t i = 0; i < own_frames; i++) {
        struct osp__regs next;
        if (step_by_fp(&r, 0, &span, &next) != STEP_DONE)
            return 0;
        r = next;
    }
    return osp__unwind(&r, 0, lo, hi, out, cap);
}
