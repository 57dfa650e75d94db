/* unwind.c — stack capture: the interrupted registers turned into a list of code addresses.
 *
 * Owns the one entry point the handler and the guard use (osp__unwind, osp__unwind_why), which
 * runs the shared walk of proto/osp_unwind_step.h on the live stack: each frame by the unwind
 * row ospreyd published for its pc (proto/osp_unwind.h) and, where there is none — an image
 * whose table is not ready yet, a pc no CFI covers, a rule the rows do not express — by the
 * frame-pointer chain. The step's rules are the ones ospreyd's walker of stack copies runs
 * (daemon/stack-walk.c); what is the shim's own is where the words are (the read callback's
 * [lo, hi)) and the leaf's code bytes (the x86_64 prologue). Also the frame-pointer walk on its own
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
 * its own addresses: the read callback adds the copy's offset. A walk may cross from one stack
 * to another only at the kernel's signal frame (a handler on a sigaltstack, the interrupted
 * stack below it: the step asks the walker's switch_stack callback), onto one of the spans it
 * was given and has not walked yet, or onto a stack copied there into a spare span's buffer
 * (hi 0); within a stack the stack pointer rises strictly. A frame pointer is 8-byte aligned,
 * its 16-byte record inside [lo, hi) above the current sp. Every offset and count read from
 * the tables is checked against the mapping's size. The walk ends at the first check that
 * fails, at an outermost frame (the CFI says the return address is undefined, or a zero
 * return address), or after OSP_UNWIND_MAX_STEPS frames (a stack deeper than `cap` keeps its
 * innermost and outermost frames and a marker for those between, proto/osp_unwind_step.h).
 * The CPU's part (registers, the x86_64 prologue)
 * is in shim/arch/<cpu>/osp_cpu.h; the signal frame and the lazy PLT are the step's.
 */
#include <stdint.h>

#include "osp_base.h"
#include "osp_core.h"
#include "osp_unwind.h"
#include "osp_unwind_step.h"

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
    return own.base != NULL && osp_unwind_building(own.base, own.size);
}

/* The walker's memory: the stack walked now, [memory.lo, memory.hi), its words at their
 * address plus `delta` (0 in place; a copy's offset from the stack's address), and the other
 * stacks it may move to at a signal frame (`entered`: those walked, each once at most). The
 * callbacks are given &memory, the first member, and find the rest around it; switch_stack
 * moves memory's bounds (the walker's own object, not const). */
struct walk_stacks {
    struct osp_unwind_memory memory;
    uint64_t delta;
    const struct osp__stack_span *spans;
    uint32_t n, entered;
    uint64_t base; /* the address a copy's first byte holds */
    /* A copy whose first read was whole (the stack goes on above it): how far it may still
     * be read, when the walk reaches its end (copy_further); memory.hi otherwise. */
    uint64_t grow_to;
    /* The leaf's red zone below memory.lo (x86_64, in place): its words read without faulting
     * (read_red_zone); 0: none. */
    uint64_t red_lo;
};

/* A word of the leaf's red zone on the page below sp's: process_vm_readv, which fails rather
 * than faults (the handler runs on its signal stack, so nothing vouches that the program ever
 * touched that page). Out of line, a rare row's; the word returned in registers, so that the
 * walk's words never need an address (taking one made the frame-pointer walk 110 -> 360 ns
 * for 33 frames in bench/walk). Async-signal-safe (osp__read_code). */
struct red_word {
    uint64_t value;
    int ok;
};
__attribute__((noinline, cold)) static struct red_word read_red_zone(uint64_t red_lo, uint64_t addr)
{
    struct red_word red = {0, 0};
    if (red_lo != 0 && addr >= red_lo && osp__read_code(addr, &red.value, sizeof red.value) == 0)
        red.ok = 1;
    return red;
}

/* The copy of a stack, [base, hi) at base + delta, read further from hi: at least to
 * [addr, addr + 8), doubling, to grow_to at most, a piece of up to 64 KiB a system call. The
 * new end (hi when nothing more could be read). Out of line: the walk's reads of words it
 * has stay as they were. Async-signal-safe (process_vm_readv). */
__attribute__((noinline)) static uint64_t copy_further(uint64_t base, uint64_t hi, uint64_t delta,
                                                       uint64_t addr, uint64_t grow_to)
{
    uint64_t end = base + 2 * (hi - base);
    if (end < addr + 8)
        end = (addr + 8 + 4095) & ~(uint64_t)4095;
    if (end > grow_to)
        end = grow_to;
    while (hi < end) {
        size_t n = end - hi < (64u << 10) ? (size_t)(end - hi) : (64u << 10);
        size_t got = osp__read_pages(hi, (void *)(uintptr_t)(hi + delta), n);
        hi += got;
        if (got < n)
            break;
    }
    return hi;
}

/* The stack word at addr if [addr, addr + 8) is inside the stack walked now: the bounds check
 * of the shared step's reads (proto/osp_unwind_step.h), in place or in the stack's copy.
 * Async-signal-safe. */
OSP__READS_FOREIGN_STACK
static inline __attribute__((always_inline)) int read_word(const struct osp_unwind_memory *m,
                                                           uint64_t addr, uint64_t *out)
{
    if (__builtin_expect(addr < m->lo || m->hi < 8 || addr > m->hi - 8, 0)) {
        /* Past the end of a copy of a stack that goes on above: read further. */
        struct walk_stacks *w = (struct walk_stacks *)(uintptr_t)m;
        if (addr < m->lo) {
            struct red_word red = read_red_zone(w->red_lo, addr);
            if (!red.ok)
                return -1;
            *out = red.value;
            return 0;
        }
        if (w->grow_to <= m->hi || addr > w->grow_to - 8)
            return -1;
        uint64_t hi = copy_further(w->base, m->hi, w->delta, addr, w->grow_to);
        w->memory.hi = hi;
        if (addr > hi - 8) { /* an unreadable page before addr: the copy ends there */
            w->grow_to = hi;
            return -1;
        }
    }
    uint64_t delta = ((const struct walk_stacks *)m)->delta;
    if (__builtin_expect(delta != 0, 0)) /* a copy's: the add kept off an in-place walk's loads */
        addr += delta;
    *out = *(const uint64_t *)(uintptr_t)addr;
    return 0;
}

/* Where an interrupted instant's return address is, read from its code (x86_64's prologue and
 * ret). Async-signal-safe (osp__read_pc_code). */
static int return_slot(const struct osp_unwind_memory *m, uint64_t pc)
{
    (void)m;
    return osp__cpu_frameless_return_slot(pc);
}

/* The walk reads a stack from sp up to hi, its words at `copy` (the bytes from address base
 * on) when not NULL, in place otherwise. */
static void enter(struct walk_stacks *w, uint64_t sp, uint64_t hi, const uint8_t *copy,
                  uint64_t base)
{
    w->memory.lo = sp;
    w->memory.hi = hi;
    w->red_lo = 0; /* the first stack's, set by the walk */
    w->delta = copy != NULL ? (uint64_t)(uintptr_t)copy - base : 0;
    w->base = base;
    /* A copy as long as its first read asked for: the stack may go on above it. */
    w->grow_to =
        copy != NULL && hi - base == OSP__STACK_COPY_BYTES ? base + OSP__STACK_COPY_MAX : hi;
}

/* The stack a walk moves to at a signal frame whose interrupted stack pointer is sp: one of
 * the n spans it has not walked yet (`entered`) that holds sp, else a copy of sp's stack taken
 * now into a spare span's buffer; its index, its bounds from sp up in *to; -1 when neither.
 * Kept out of line: the walker's state never has its address taken by a call, so the stores
 * of the walk's frames need not reload it. Async-signal-safe (process_vm_readv). */
__attribute__((noinline)) static int find_stack(const struct osp__stack_span *spans, uint32_t n,
                                                uint32_t entered, uint64_t sp,
                                                struct osp__stack_span *to)
{
    uint32_t k = 0;
    while (k < n && ((entered >> k & 1u) || sp < spans[k].lo || sp >= spans[k].hi))
        k++;
    if (k < n) {
        *to = (struct osp__stack_span){sp, spans[k].hi, spans[k].copy, spans[k].base};
        return (int)k;
    }
    k = 0; /* on a stack no one vouched for: copied now, into a spare span's buffer */
    while (k < n && ((entered >> k & 1u) || spans[k].copy == NULL || spans[k].hi != 0))
        k++;
    if (k == n)
        return -1;
    uint64_t base = sp & ~(uint64_t)4095;
    size_t got = osp__read_pages(base, (void *)(uintptr_t)spans[k].copy, OSP__STACK_COPY_BYTES);
    if (got < sp - base + 8)
        return -1;
    *to = (struct osp__stack_span){sp, base + got, spans[k].copy, base};
    return (int)k;
}

/* At a kernel signal frame whose interrupted stack pointer is sp: 0 when sp is on the stack
 * walked now (the step then wants it to rise); 1 when the walk moved onto another stack that
 * holds sp (find_stack); -1 when there is none. Async-signal-safe. */
static inline int switch_stack(const struct osp_unwind_memory *m, uint64_t sp)
{
    struct walk_stacks *w = (struct walk_stacks *)(uintptr_t)m;
    if (sp >= w->memory.lo && sp < w->memory.hi)
        return 0;
    struct osp__stack_span to;
    int k = find_stack(w->spans, w->n, w->entered, sp, &to);
    if (k < 0)
        return -1;
    enter(w, to.lo, to.hi, to.copy, to.base);
    w->entered |= 1u << k;
    return 1;
}

/* Async-signal-safe. */
uint32_t osp__unwind_spans_why(const struct osp__regs *regs, int leaf,
                               const struct osp__stack_span *spans, uint32_t n, uint64_t *out,
                               uint32_t cap, enum osp_unwind_stop *stop)
{
    return osp__unwind_spans_resume(regs, leaf, spans, n, out, cap, stop, NULL);
}

/* Async-signal-safe. */
OSP__READS_FOREIGN_STACK
uint32_t osp__unwind_spans_resume(const struct osp__regs *regs, int leaf,
                                  const struct osp__stack_span *spans, uint32_t n, uint64_t *out,
                                  uint32_t cap, enum osp_unwind_stop *stop,
                                  struct osp_unwind_resume *resume)
{
    if (resume != NULL)
        resume->depth = 0;
    *stop = OSP_UNWIND_DEPTH;
    if (cap == 0)
        return 0;
    if (n == 0) {
        *stop = OSP_UNWIND_FAILED;
        return 0;
    }
    if (n > 32)
        n = 32; /* `entered` has a bit for each */
    struct tables t;
    const struct osp_unwind_index *ix = active_index(&t);
    if (ix == NULL && regs->lr != 0 && leaf && spans[0].copy == NULL) {
        /* aarch64 without tables: lr, then the chain */
        uint32_t depth =
            osp__unwind_walk_lr(regs->pc, regs->lr, regs->fp, spans[0].lo, spans[0].hi, out, cap);
        *stop = depth < cap ? OSP_UNWIND_NO_ROW : OSP_UNWIND_DEPTH;
        return depth;
    }
    const struct osp_unwind_tables tables = {t.base, t.size, ix, own.base, own.size};
    struct walk_stacks w = {
        {read_word, return_slot, switch_stack, NULL, 0, 0}, 0, spans, n, 1, 0, 0, 0};
    enter(&w, spans[0].lo, spans[0].hi, spans[0].copy, spans[0].base);
    /* The leaf's red zone on its own stack, in place, for a row that keeps the CFA there
     * (OSP_CFA_DEREF): read directly within the page that holds sp (mapped: [sp, hi) is),
     * through read_red_zone below it. */
    if (leaf && spans[0].copy == NULL && spans[0].lo == regs->sp &&
        regs->sp - OSP_UNWIND_RED_ZONE < regs->sp) {
        uint64_t page = regs->sp & ~(uint64_t)4095;
        w.red_lo = regs->sp - OSP_UNWIND_RED_ZONE;
        w.memory.lo = w.red_lo > page ? w.red_lo : page;
    }
    /* A leaf's other registers: for a row whose CFA is in one of them (OSP_CFA_REG). */
    const struct osp_unwind_regs r = {regs->pc, regs->sp, regs->fp, regs->lr};
    /* A stack deeper than cap walked on to its root (OSP_UNWIND_MAX_STEPS frames at most),
     * its outermost frames kept after a marker. */
    const uint64_t iregs = leaf ? (uint64_t)(uintptr_t)regs->iregs : 0;
    uint32_t depth = osp_unwind_walk_deep(&tables, &r, leaf, iregs, &w.memory, out, cap,
                                          OSP_UNWIND_MAX_STEPS, stop, resume);
    /* A frame the walk reached on another stack than the first, or in a copy of one, is not
     * where a copy of the thread's stack would start. */
    if (resume != NULL && resume->depth > 0 &&
        (w.entered != 1u || spans[0].copy != NULL || resume->regs.sp < spans[0].lo ||
         resume->regs.sp >= spans[0].hi))
        resume->depth = 0;
    return depth;
}

/* Async-signal-safe. */
uint32_t osp__unwind_spans(const struct osp__regs *regs, int leaf,
                           const struct osp__stack_span *spans, uint32_t n, uint64_t *out,
                           uint32_t cap)
{
    enum osp_unwind_stop stop;
    return osp__unwind_spans_why(regs, leaf, spans, n, out, cap, &stop);
}

/* Async-signal-safe. */
uint32_t osp__unwind_why(const struct osp__regs *regs, int leaf, uint64_t lo, uint64_t hi,
                         uint64_t *out, uint32_t cap, enum osp_unwind_stop *stop)
{
    const struct osp__stack_span span = {.lo = lo, .hi = hi, .copy = NULL, .base = 0};
    return osp__unwind_spans_why(regs, leaf, &span, 1, out, cap, stop);
}

/* Async-signal-safe. */
uint32_t osp__unwind(const struct osp__regs *regs, int leaf, uint64_t lo, uint64_t hi,
                     uint64_t *out, uint32_t cap)
{
    enum osp_unwind_stop stop;
    return osp__unwind_why(regs, leaf, lo, hi, out, cap, &stop);
}

/* Async-signal-safe. */
uint32_t osp__unwind_caller(uint64_t fp, uint32_t own_frames, uint64_t lo, uint64_t hi,
                            uint64_t *out, uint32_t cap)
{
    enum osp_unwind_stop stop;
    return osp__unwind_caller_why(fp, own_frames, lo, hi, out, cap, &stop);
}

/* Async-signal-safe. */
uint32_t osp__unwind_caller_why(uint64_t fp, uint32_t own_frames, uint64_t lo, uint64_t hi,
                                uint64_t *out, uint32_t cap, enum osp_unwind_stop *stop)
{
    *stop = OSP_UNWIND_FAILED;
    const struct walk_stacks w = {{read_word, NULL, NULL, NULL, lo, hi}, 0, NULL, 0, 0, 0, 0, 0};
    struct osp_unwind_regs r = {.pc = 0, .sp = lo, .fp = fp, .lr = 0};
    for (uint32_t i = 0; i < own_frames; i++) {
        struct osp_unwind_regs next;
        if (osp_unwind_step(NULL, &r, 0, &w.memory, &next) != OSP_UNWIND_GO_ON)
            return 0;
        r = next;
    }
    const struct osp__regs caller = {r.pc, r.sp, r.fp, r.lr, NULL};
    return osp__unwind_why(&caller, 0, lo, hi, out, cap, stop);
}
