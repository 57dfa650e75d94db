/* osp_unwind_step.h — one step of a stack walk, and the walk made of them: the one unwinder
 * that the shim's SIGPROF handler (shim/unwind.c, its own live stack) and ospreyd's walker of
 * stack copies (daemon/stack-walk.c, the kernel's copy of a thread's stack) both execute, so
 * a stack is unwound by the same rules wherever its words are.
 *
 * A step takes the row for the frame's pc (proto/osp_unwind.h; NULL when no published table
 * covers the pc), the frame's registers and the caller's "read a word" callback, and gives the
 * caller's registers, or why the walk cannot go on. The rules, each stated once (the list in
 * proto/README.md, "One unwinder"):
 *
 *   - Every word read is 8-byte aligned and read through the callback, which alone knows
 *     where the words are and checks [addr, addr + 8) against its bounds (the shim: [lo, hi)
 *     of the live stack; ospreyd: the copy). A read it refuses ends the walk.
 *   - The stack pointer rises at every step, by at most OSP_UNWIND_MAX_FRAME_BYTES; the one
 *     exception is the first frame of an interrupted instant on aarch64 whose row says the
 *     return address is still in the link register and nothing is pushed (CFA = sp).
 *   - By a row: CFA = sp or fp + offset (the x86_64 lazy PLT adds 8 once (pc & 15) reaches
 *     the row's threshold), or another register + offset where the walk knows that register:
 *     the interrupted instant's registers (iregs: the walker's, or a signal frame's), which
 *     keep their values up through the frames above (DWARF's "same value", as libunwind and
 *     perf take it: a caller whose CFA is in a register needs its callees to keep it) until a
 *     row whose CFA is in a register (that frame set it) or the next signal frame; where the
 *     walk does not know it, such a row fails its check; or the word at sp or fp + offset
 *     plus a small addend (the caller's sp saved in the frame), read through the callback, a
 *     refused read failing the row's check, a word below sp only at the first frame and in
 *     x86_64's red zone (the walker's bounds must reach there: the shim's do on the live
 *     stack, a copy's do not); the CFA 8-byte aligned; the return
 *     address at CFA + ra_offset, or in lr at the first frame only; the caller's fp at
 *     CFA + fp_offset unless that slot is below sp (an epilogue restored it: the register
 *     holds it), else unchanged.
 *   - By the frame pointer (no row, or a row that says nothing): at the first frame, when the
 *     walker can read code and the pc is at a prologue's push or mov or at a ret (x86_64), the
 *     return address is at sp + 8 * slot; otherwise fp, 8-byte aligned, not below sp and at
 *     most OSP_UNWIND_MAX_FRAME_BYTES above it, holds the caller's fp and the return address.
 *   - A signal frame (the kernel's trampoline's row): the interrupted registers from the
 *     ucontext_t at sp (x86_64) or sp + 128 (aarch64's rt_sigframe), the frame after it an
 *     interrupted instant again; its sp must be above this one, unless the walker moves onto
 *     another stack that holds it (switch_stack: the shim's walk from a sigaltstack to the
 *     stack the handler interrupted); a signal frame is the only place a walk changes stack.
 *   - A zero return address, or a row that says the return address is undefined, is the
 *     outermost frame. A zero frame pointer is not: frameless code (a JIT's) may hold 0 in the
 *     register, and a frame record read where there is none may hold 0 in its slot.
 *   - Return addresses lose their pointer-authentication bits (aarch64).
 *
 * Header-only, no library beyond the compiler's own headers. Async-signal-safe when the
 * callbacks are.
 */
#ifndef OSP_UNWIND_STEP_H
#define OSP_UNWIND_STEP_H

#include <stdint.h>

#include "osp_unwind.h"

/* Every function here is inlined into its walker, so the walker's callbacks become direct,
 * inlined calls: the handler pays for no call through a pointer per word. */
#if defined(__GNUC__)
#define OSP_UNWIND_INLINE static inline __attribute__((always_inline))
#else
#define OSP_UNWIND_INLINE static inline
#endif
/* The walk's part past a record's cap, out of line: the common walk's loop stays as small. */
#if defined(__GNUC__)
#define OSP_UNWIND_COLD static __attribute__((noinline, cold, unused))
#else
#define OSP_UNWIND_COLD static
#endif

/* A step moves sp up by at most this. */
#define OSP_UNWIND_MAX_FRAME_BYTES (UINT64_C(1) << 20)

/* The registers a walk needs: pc, sp, the frame pointer (rbp, x29) and the link register (x30
 * on aarch64; 0 on x86_64, and 0 above the first frame). */
struct osp_unwind_regs {
    uint64_t pc, sp, fp, lr;
};

/* Every general register of an interrupted instant as the kernel's signal frame stores them
 * (x86_64: mcontext gregs[]; aarch64: regs[]), for a row whose CFA is in another register
 * (OSP_CFA_REG), known from that instant up to the frame whose CFA was in one (above, "By a
 * row"): their address, readable in place (the handler's own signal context), or with
 * OSP_UNWIND_IREGS_READ set read through the walker's callback (a signal frame on the stack
 * walked); 0 where the walk does not know them. The walk keeps it beside the registers, not
 * in them (the step copies those at every frame). */
#define OSP_UNWIND_IREGS_READ UINT64_C(1) /* bit 0: an address in the walked memory */

/* Why a step could not give the caller's registers, and so why a walk ended. The values are
 * the stop reason of the ring's samples and the raw file's stacks (proto/osp_ring.h,
 * proto/raw-format.md): never renumbered. */
enum osp_unwind_stop {
    OSP_UNWIND_GO_ON = 0,     /* not stopped (a step: the caller's registers are in *next);
                               * in a recorded sample: the walker did not say (an older shim) */
    OSP_UNWIND_OUTERMOST = 1, /* the outermost frame: the root reached */
    OSP_UNWIND_NO_ROW = 2,    /* no row for the pc, and its frame pointer failed the checks */
    OSP_UNWIND_FAILED = 3,    /* a row's rule failed a check (a read refused, sp not rising) */
    OSP_UNWIND_DEPTH = 4,     /* the depth cap */
    OSP_UNWIND_GUESSED = 5,   /* the frame pointer was followed from code no published table
                               * covers while rows were still being built: the stack may skip
                               * frames, however it ended */
};
#define OSP_UNWIND_STOP_COUNT 6u

/* Where the words are. read_word: the 8-byte word at addr (8-byte aligned) into *out, 0; or -1
 * when [addr, addr + 8) is not inside the memory the walker may read. return_slot (may be
 * NULL: a walker that cannot read code): where an interrupted instant's return address is when
 * its pc sits where the frame pointer does not yet (or no longer) hold its frame, in words
 * above sp (0 or 1), else -1. switch_stack (may be NULL: a walker of one stack, whose signal
 * frames must be on it): at a kernel signal frame whose interrupted stack pointer is sp, 0
 * when sp is on the stack walked now (it must then rise, as at every step); 1 when the walker
 * moved its reads onto another stack that holds sp (a handler on a sigaltstack interrupted
 * that stack: sp need not rise, the walker keeps each stack walked once); -1 when it cannot.
 * `context` is the walker's own. */
struct osp_unwind_memory;
typedef int (*osp_unwind_read_fn)(const struct osp_unwind_memory *m, uint64_t addr, uint64_t *out);
typedef int (*osp_unwind_slot_fn)(const struct osp_unwind_memory *m, uint64_t pc);
typedef int (*osp_unwind_switch_fn)(const struct osp_unwind_memory *m, uint64_t sp);
struct osp_unwind_memory {
    osp_unwind_read_fn read_word;
    osp_unwind_slot_fn return_slot;
    osp_unwind_switch_fn switch_stack;
    const void *context;
    uint64_t lo, hi;
};

/* The callbacks travel as arguments from the walk down (loaded once from the walker's
 * struct, before anything could change it), so that once inlined they are known calls. */
struct osp_unwind_access {
    const struct osp_unwind_memory *m;
    osp_unwind_read_fn read_word;
    osp_unwind_slot_fn return_slot;
    osp_unwind_switch_fn switch_stack;
};

/* A code address without its pointer-authentication bits: XPACLRI (hint #7) on aarch64 (a
 * no-op on cores without PAuth), the top byte cleared too (Linux ignores it in user addresses,
 * TBI); the identity elsewhere. Async-signal-safe. */
OSP_UNWIND_INLINE uint64_t osp_unwind_strip_pac(uint64_t addr)
{
#if defined(__aarch64__)
    register uint64_t x30 __asm__("x30") = addr;
    __asm__("hint #7" : "+r"(x30));
    return x30 & UINT64_C(0x00ffffffffffffff);
#else
    return addr;
#endif
}

/* The kernel's signal frame: where the interrupted registers are, from sp at the trampoline.
 * x86_64: ucontext_t at sp, its gregs at 40 (REG_RBP 10, REG_RSP 15, REG_RIP 16). aarch64:
 * struct rt_sigframe { siginfo_t (128 bytes); ucontext_t; }, the mcontext's regs[] at 184 in
 * the ucontext_t (x29, x30, then sp and pc after the 31 registers). shim/arch/<cpu>/cpu.c and
 * daemon/stack-walk.c check these against <ucontext.h>. */
#if defined(__x86_64__)
#define OSP_UNWIND_SIGNAL_REGS 40u
#define OSP_UNWIND_SIGNAL_PC   (40u + 8u * 16u)
#define OSP_UNWIND_SIGNAL_SP   (40u + 8u * 15u)
#define OSP_UNWIND_SIGNAL_FP   (40u + 8u * 10u)
#elif defined(__aarch64__)
#define OSP_UNWIND_SIGNAL_REGS (128u + 184u)
#define OSP_UNWIND_SIGNAL_FP   (OSP_UNWIND_SIGNAL_REGS + 8u * 29u)
#define OSP_UNWIND_SIGNAL_LR   (OSP_UNWIND_SIGNAL_REGS + 8u * 30u)
#define OSP_UNWIND_SIGNAL_SP   (OSP_UNWIND_SIGNAL_REGS + 8u * 31u)
#define OSP_UNWIND_SIGNAL_PC   (OSP_UNWIND_SIGNAL_REGS + 8u * 32u)
#endif

/* The word at addr through the walker's callback, refused when misaligned. */
OSP_UNWIND_INLINE int osp_unwind_read(struct osp_unwind_access a, uint64_t addr, uint64_t *out)
{
    if (addr & 7u)
        return -1;
    return a.read_word(a.m, addr, out);
}

/* The registers the kernel saved in its signal frame at r->sp. */
OSP_UNWIND_INLINE enum osp_unwind_stop osp_unwind_signal_frame(const struct osp_unwind_regs *r,
                                                               struct osp_unwind_access m,
                                                               struct osp_unwind_regs *next,
                                                               uint64_t *iregs)
{
#if defined(OSP_UNWIND_SIGNAL_PC)
    next->lr = 0;
    *iregs = (r->sp + OSP_UNWIND_SIGNAL_REGS) | OSP_UNWIND_IREGS_READ; /* the kernel's */
    if (osp_unwind_read(m, r->sp + OSP_UNWIND_SIGNAL_PC, &next->pc) != 0 ||
        osp_unwind_read(m, r->sp + OSP_UNWIND_SIGNAL_SP, &next->sp) != 0 ||
        osp_unwind_read(m, r->sp + OSP_UNWIND_SIGNAL_FP, &next->fp) != 0)
        return OSP_UNWIND_FAILED;
#if defined(OSP_UNWIND_SIGNAL_LR)
    if (osp_unwind_read(m, r->sp + OSP_UNWIND_SIGNAL_LR, &next->lr) != 0)
        return OSP_UNWIND_FAILED;
    next->lr = osp_unwind_strip_pac(next->lr);
#endif
    int moved = m.switch_stack != NULL ? m.switch_stack(m.m, next->sp) : 0;
    if (moved < 0 || (moved == 0 && next->sp <= r->sp))
        return OSP_UNWIND_FAILED;
    return next->pc != 0 ? OSP_UNWIND_GO_ON : OSP_UNWIND_OUTERMOST;
#else
    (void)r;
    (void)m;
    (void)next;
    (void)iregs;
    return OSP_UNWIND_FAILED;
#endif
}

/* The lazy PLT's CFA adjustment (x86_64): 8 more once (pc & 15) >= threshold. */
OSP_UNWIND_INLINE uint64_t osp_unwind_plt_extra(uint64_t pc, unsigned threshold)
{
#if defined(__x86_64__)
    return (pc & 15u) >= threshold ? 8u : 0u;
#else
    (void)pc;
    (void)threshold;
    return 0;
#endif
}

/* OSP_CFA_REG's CFA from the registers at `at` (0: not known) into *cfa: 0, or -1. Out of
 * line, a rare row's: inlined into the walk, the walk by rows took 691-701 ns for 35 frames
 * in bench/walk against 681. */
static __attribute__((noinline, unused)) int
osp_unwind_register_cfa(const struct osp_unwind_row *row, uint64_t at, struct osp_unwind_access m,
                        uint64_t *cfa)
{
    if (row->cfa_reg >= OSP_UNWIND_CFA_REGS || at == 0)
        return -1;
    if (!(at & OSP_UNWIND_IREGS_READ))
        __builtin_memcpy(cfa, (const uint8_t *)(uintptr_t)at + 8u * row->cfa_reg, 8);
    else if (osp_unwind_read(m, (at & ~OSP_UNWIND_IREGS_READ) + 8u * row->cfa_reg, cfa) != 0)
        return -1;
    *cfa += (uint64_t)(int64_t)row->cfa_offset;
    return 0;
}

/* How far below an interrupted instant's sp its code may keep words: x86_64's red zone, which
 * the kernel leaves intact when it delivers a signal (OpenSSL's SHA-512 AVX2 loop keeps the
 * caller's rsp at rsp - 8); none on aarch64. */
#if defined(__x86_64__)
#define OSP_UNWIND_RED_ZONE 128u
#else
#define OSP_UNWIND_RED_ZONE 0u
#endif

/* OSP_CFA_DEREF's CFA into *cfa: the word at sp or fp + cfa_offset, read through the walker's
 * callback, plus the row's addend; 0, or -1 when the read is refused or the word is below sp
 * (stale: a callee's since), save in the red zone of the interrupted instant (`first`). Out of
 * line, a rare row's, as the register's. */
static __attribute__((noinline, unused)) int
osp_unwind_deref_cfa(const struct osp_unwind_row *row, const struct osp_unwind_regs *r, int first,
                     struct osp_unwind_access m, uint64_t *cfa)
{
    uint64_t base = (row->cfa_deref & OSP_CFA_DEREF_FP) ? r->fp : r->sp;
    uint64_t addr = base + (uint64_t)(int64_t)row->cfa_offset;
    if (addr < r->sp && (!first || r->sp - addr > OSP_UNWIND_RED_ZONE))
        return -1;
    if (osp_unwind_read(m, addr, cfa) != 0)
        return -1;
    *cfa += 8u * (uint64_t)(row->cfa_deref & OSP_CFA_DEREF_WORDS);
    return 0;
}

/* One frame by its row (cfa_rule not OSP_CFA_UNKNOWN); *iregs the interrupted instant's
 * registers this frame knows, then its caller's. */
OSP_UNWIND_INLINE enum osp_unwind_stop
osp_unwind_step_by_row(const struct osp_unwind_row *row, const struct osp_unwind_regs *r, int first,
                       struct osp_unwind_access m, struct osp_unwind_regs *next, uint64_t *iregs)
{
    uint64_t cfa;
    switch (row->cfa_rule) {
    case OSP_CFA_END:
        return OSP_UNWIND_OUTERMOST;
    case OSP_CFA_SIGNAL:
        return osp_unwind_signal_frame(r, m, next, iregs);
    case OSP_CFA_SP:
        cfa = r->sp + (uint64_t)(int64_t)row->cfa_offset;
        break;
    case OSP_CFA_FP:
        cfa = r->fp + (uint64_t)(int64_t)row->cfa_offset;
        break;
    case OSP_CFA_PLT:
        cfa = r->sp + (uint64_t)(int64_t)row->cfa_offset +
              osp_unwind_plt_extra(r->pc, row->plt_threshold);
        break;
    case OSP_CFA_REG: { /* only where the walk knows the register (iregs) */
        uint64_t at = *iregs;
        *iregs = 0; /* this frame set it: its callers' value is not known */
        if (osp_unwind_register_cfa(row, at, m, &cfa) != 0)
            return OSP_UNWIND_FAILED;
        break;
    }
    case OSP_CFA_DEREF: /* the caller's sp saved in the frame */
        if (osp_unwind_deref_cfa(row, r, first, m, &cfa) != 0)
            return OSP_UNWIND_FAILED;
        break;
    default:
        return OSP_UNWIND_FAILED;
    }
    int in_lr = row->ra_rule == OSP_RA_IN_LR;
    if (cfa < r->sp || (cfa == r->sp && !(first && in_lr)) ||
        cfa - r->sp > OSP_UNWIND_MAX_FRAME_BYTES || (cfa & 7u))
        return OSP_UNWIND_FAILED;
    uint64_t ra;
    if (row->ra_rule == OSP_RA_AT_CFA) {
        if (osp_unwind_read(m, cfa + (uint64_t)(int64_t)row->ra_offset, &ra) != 0)
            return OSP_UNWIND_FAILED;
    } else if (in_lr && first) {
        ra = r->lr;
    } else {
        return OSP_UNWIND_FAILED;
    }
    /* A saved frame pointer below the current sp was restored already (an epilogue's pops
     * come before the CFA rule changes, and the rule still names the old slot, which a signal
     * frame may have overwritten since): the register holds it. */
    next->fp = r->fp;
    uint64_t fp_at = cfa + (uint64_t)(int64_t)row->fp_offset;
    if (row->fp_rule == OSP_FP_AT_CFA && fp_at >= r->sp &&
        osp_unwind_read(m, fp_at, &next->fp) != 0)
        return OSP_UNWIND_FAILED;
    next->sp = cfa;
    next->pc = osp_unwind_strip_pac(ra);
    next->lr = 0;
    return next->pc != 0 ? OSP_UNWIND_GO_ON : OSP_UNWIND_OUTERMOST;
}

/* One frame by the frame pointer: the prologue or ret case at the first frame, else the chain. */
OSP_UNWIND_INLINE enum osp_unwind_stop osp_unwind_step_by_fp(const struct osp_unwind_regs *r,
                                                             int first, struct osp_unwind_access m,
                                                             struct osp_unwind_regs *next)
{
    if (first && m.return_slot != NULL) {
        int slot = m.return_slot(m.m, r->pc);
        uint64_t ra;
        if (slot >= 0 && osp_unwind_read(m, r->sp + 8u * (uint64_t)slot, &ra) == 0) {
            next->sp = r->sp + 8u * (uint64_t)(slot + 1);
            next->fp = r->fp;
            next->pc = osp_unwind_strip_pac(ra);
            next->lr = 0;
            return next->pc != 0 ? OSP_UNWIND_GO_ON : OSP_UNWIND_OUTERMOST;
        }
    }
    uint64_t fp = r->fp, ra, caller_fp;
    if (fp < r->sp || fp - r->sp > OSP_UNWIND_MAX_FRAME_BYTES ||
        osp_unwind_read(m, fp, &caller_fp) != 0 || osp_unwind_read(m, fp + 8, &ra) != 0)
        return OSP_UNWIND_NO_ROW;
    next->sp = fp + 16;
    next->fp = caller_fp;
    next->pc = osp_unwind_strip_pac(ra);
    next->lr = 0;
    return next->pc != 0 ? OSP_UNWIND_GO_ON : OSP_UNWIND_OUTERMOST;
}

/* One step: from the frame r (its row, or NULL) to its caller's registers in *next
 * (OSP_UNWIND_GO_ON), or why not. `first`: r holds every register of an interrupted instant
 * (the leaf, or the frame a signal frame saved): its pc is exact and lr is valid. *iregs: the
 * interrupted instant's other registers as the frame knows them (OSP_UNWIND_IREGS_READ), then
 * as its caller does. Async-signal-safe when m's callbacks are. */
OSP_UNWIND_INLINE enum osp_unwind_stop
osp_unwind_step_with(const struct osp_unwind_row *row, const struct osp_unwind_regs *r, int first,
                     struct osp_unwind_access m, struct osp_unwind_regs *next, uint64_t *iregs)
{
    if (row != NULL && row->cfa_rule != OSP_CFA_UNKNOWN)
        return osp_unwind_step_by_row(row, r, first, m, next, iregs);
    return osp_unwind_step_by_fp(r, first, m, next);
}

OSP_UNWIND_INLINE enum osp_unwind_stop osp_unwind_step(const struct osp_unwind_row *row,
                                                       const struct osp_unwind_regs *r, int first,
                                                       const struct osp_unwind_memory *m,
                                                       struct osp_unwind_regs *next)
{
    const struct osp_unwind_access a = {m, m->read_word, m->return_slot, m->switch_stack};
    uint64_t iregs = 0;
    return osp_unwind_step_with(row, r, first, a, next, &iregs);
}

/* Whether ospreyd is still building rows into the table object [map, map + size): builds under
 * way, or no snapshot yet. Acquire: ospreyd drops the count with release after publishing an
 * image's rows, so a snapshot read after a count of 0 includes them. Async-signal-safe. */
OSP_UNWIND_INLINE int osp_unwind_building(const void *map, uint64_t size)
{
    const struct osp_unwind_header *h = (const struct osp_unwind_header *)map;
    return atomic_load_explicit((_Atomic uint32_t *)&h->builds_pending, memory_order_acquire) !=
               0 ||
           osp_unwind_snapshot(map, size) == NULL;
}

/* The tables a walk reads: the object [map, map + size) and its snapshot ix (NULL: none, every
 * frame by the frame pointer). `building`: the table object ospreyd is filling for this
 * process (NULL: none), asked (osp_unwind_building) once a frame is found by the frame pointer
 * for a pc no entry covers: while rows are being built, that pc may be in code whose rows are
 * not yet published. */
struct osp_unwind_tables {
    const void *map;
    uint64_t size;
    const struct osp_unwind_index *ix;
    const void *building;
    uint64_t building_size;
};

/* Where a walk reached code no published row covers while rows were still being built (the
 * frame a stack copy lets ospreyd walk again once its rows exist, proto/osp_ring.h "Stack
 * copies"): that frame's registers, its index in out (0: none reached) plus one, and whether
 * they are an interrupted instant's. */
struct osp_unwind_resume {
    struct osp_unwind_regs regs;
    uint32_t depth; /* out[depth - 1] is the frame; 0: the walk met no such frame */
    int first;
};

/* A stack deeper than the record: the walk goes on past `cap` up to OSP_UNWIND_MAX_STEPS
 * frames in all (a bounded cost: at most that many steps, each bounded), and the record keeps
 * its innermost cap - 1 - OSP_UNWIND_OUTER_FRAMES frames, one marker frame saying how many
 * were left out, and its OSP_UNWIND_OUTER_FRAMES outermost ones: a stack 300 deep still ends
 * at main, and its stop reason is the walk's (the outermost frame reached, or the depth cap
 * when OSP_UNWIND_MAX_STEPS frames did not reach it). */
#define OSP_UNWIND_MAX_STEPS    1024u
#define OSP_UNWIND_OUTER_FRAMES 32u

/* The marker frame: bit 61 set, the count of frames left out in bits 0..31 (proto/osp_ring.h,
 * "Frames left out"): above every user address, below the Python frames' pseudo-pcs (bit 62,
 * proto/osp_python.h) and the kernel's (bit 63). Readers draw it as one frame named
 * "[… N frames]". */
#define OSP_UNWIND_LEFT_OUT_MARK (UINT64_C(1) << 61)

OSP_UNWIND_INLINE uint64_t osp_unwind_left_out_pc(uint64_t frames)
{
    return OSP_UNWIND_LEFT_OUT_MARK | (frames & UINT32_MAX);
}

/* Whether pc is the marker (a reader's pc - 1 included: the count is at least 1): its high
 * half exactly the mark's, so that a word a walk took for a return address past the frames
 * (a string, a stale value) is not read as one. */
OSP_UNWIND_INLINE int osp_unwind_left_out_is(uint64_t pc)
{
    return (pc >> 32) == (OSP_UNWIND_LEFT_OUT_MARK >> 32);
}

/* The frames a marker (or a reader's pc - 1 of it) says were left out. */
OSP_UNWIND_INLINE uint64_t osp_unwind_left_out_count(uint64_t pc)
{
    return pc & UINT32_MAX;
}

/* A walk's state between steps: the frame reached, whether its registers are an interrupted
 * instant's, whether ospreyd was still building rows (-1: not asked yet), whether a frame was
 * guessed, and the interrupted instant's other registers as the frame knows them (iregs,
 * OSP_UNWIND_IREGS_READ; 0: not known). Local to the walk (inlined: kept in registers). */
struct osp_unwind_state {
    struct osp_unwind_regs r;
    int first, building, guessed;
    uint64_t iregs;
};

/* From the frame s->r (the walk's frame `depth`, one-based) to its caller: s moved on
 * (OSP_UNWIND_GO_ON), or why not. `resume` (may be NULL): set at the first frame with no row
 * while rows are being built. */
OSP_UNWIND_INLINE enum osp_unwind_stop
osp_unwind_next(const struct osp_unwind_tables *t, struct osp_unwind_access a,
                struct osp_unwind_state *s, struct osp_unwind_resume *resume, uint32_t depth)
{
    const struct osp_unwind_row *row =
        t->ix != NULL
            ? osp_unwind_find_row(t->map, t->size, t->ix, s->first ? s->r.pc : s->r.pc - 1)
            : NULL;
    struct osp_unwind_regs next = s->r; /* set by a step that goes on (said so to gcc 12) */
    enum osp_unwind_stop why = osp_unwind_step_with(row, &s->r, s->first, a, &next, &s->iregs);
    if (__builtin_expect(row == NULL, 0) && t->building != NULL) {
        if (s->building < 0) { /* asked once, at the first frame with no row */
            s->building = osp_unwind_building(t->building, t->building_size);
            if (s->building && resume != NULL)
                *resume = (struct osp_unwind_resume){s->r, depth, s->first};
        }
        if (s->building && (why == OSP_UNWIND_GO_ON || why == OSP_UNWIND_OUTERMOST))
            s->guessed = 1;
    }
    if (why == OSP_UNWIND_GO_ON) {
        /* Past the kernel's signal frame, the registers are an interrupted instant again. */
        s->first = row != NULL && row->cfa_rule == OSP_CFA_SIGNAL;
        s->r = next;
    }
    return why;
}

/* pcs[0..n) in reverse order. */
OSP_UNWIND_INLINE void osp_unwind_reverse(uint64_t *pcs, uint32_t n)
{
    for (uint32_t lo = 0, hi = n; lo + 1 < hi; lo++, hi--) {
        uint64_t x = pcs[lo];
        pcs[lo] = pcs[hi - 1];
        pcs[hi - 1] = x;
    }
}

/* The walk past out[cap - 1] (s at that frame), up to `steps` frames in all: the outermost
 * OSP_UNWIND_OUTER_FRAMES kept in out[cap - OSP_UNWIND_OUTER_FRAMES, cap) (a ring while the
 * walk goes on, put in order at its end), the marker in the slot before them; the depth stays
 * cap. Not when the record is too short for it, or when the frame a stack copy resumes from
 * is among those the marker and the ring overwrite (ospreyd's walk of the copy goes deep
 * itself): the stack then stays cut at the cap. Returns why the walk ended (the walk's stop
 * reason, OSP_UNWIND_GUESSED when a frame was guessed). Out of line, s taken by value: the
 * common walk's state never has its address taken. */
OSP_UNWIND_COLD enum osp_unwind_stop osp_unwind_walk_on(const struct osp_unwind_tables *t,
                                                        struct osp_unwind_access a,
                                                        struct osp_unwind_state s, uint64_t *out,
                                                        uint32_t cap, uint32_t steps,
                                                        const struct osp_unwind_resume *resume)
{
    const uint32_t ring = OSP_UNWIND_OUTER_FRAMES, inner = cap - 1 - ring;
    enum osp_unwind_stop why = OSP_UNWIND_DEPTH;
    uint32_t total = cap;
    while (cap >= ring + 2 && (resume == NULL || resume->depth <= inner) && total < steps) {
        enum osp_unwind_stop step = osp_unwind_next(t, a, &s, NULL, 0);
        if (step != OSP_UNWIND_GO_ON) {
            why = step;
            break;
        }
        out[inner + 1 + (total - inner - 1) % ring] = s.r.pc;
        total++;
    }
    if (total > cap) {
        /* The ring's oldest frame first: rotated left by `by`, as three reversals. */
        uint32_t by = (total - inner - 1) % ring;
        if (by != 0) {
            osp_unwind_reverse(out + inner + 1, by);
            osp_unwind_reverse(out + inner + 1 + by, ring - by);
            osp_unwind_reverse(out + inner + 1, ring);
        }
        out[inner] = osp_unwind_left_out_pc(total - (cap - 1));
    }
    return s.guessed ? OSP_UNWIND_GUESSED : why;
}

/* The walk: from regs, leaf first, into out[0..cap), each frame by its row where the snapshot
 * has one (looked up at the pc itself for an interrupted instant, at pc - 1 for a return
 * address), else by the frame pointer; the first address stored whatever it is. `leaf`: regs
 * are an interrupted instant's (0: regs->pc is a return address); `iregs`: its other registers
 * (OSP_UNWIND_IREGS_READ), 0 when not known. A stack deeper than cap is
 * walked on up to `steps` frames (no further than cap when steps <= cap), its outermost frames
 * kept after a marker (osp_unwind_walk_on). Returns the depth; *stop says why the walk ended
 * (never OSP_UNWIND_GO_ON when cap >= 1). `resume` (may be NULL): the first frame with no row
 * while rows were being built, depth 0 when none. Async-signal-safe when m's callbacks are. */
OSP_UNWIND_INLINE uint32_t osp_unwind_walk_deep(const struct osp_unwind_tables *t,
                                                const struct osp_unwind_regs *regs, int leaf,
                                                uint64_t iregs, const struct osp_unwind_memory *m,
                                                uint64_t *out, uint32_t cap, uint32_t steps,
                                                enum osp_unwind_stop *stop,
                                                struct osp_unwind_resume *resume)
{
    const struct osp_unwind_access a = {m, m->read_word, m->return_slot, m->switch_stack};
    struct osp_unwind_state s = {*regs, leaf, -1, 0, iregs};
    uint32_t depth = 0;
    enum osp_unwind_stop why = OSP_UNWIND_DEPTH;
    if (resume != NULL)
        resume->depth = 0;
    while (depth < cap) {
        out[depth++] = s.r.pc;
        if (depth == cap)
            break;
        why = osp_unwind_next(t, a, &s, resume, depth);
        if (why != OSP_UNWIND_GO_ON)
            break;
        why = OSP_UNWIND_DEPTH;
    }
    if (__builtin_expect(why == OSP_UNWIND_DEPTH && depth == cap && steps > cap, 0))
        *stop = osp_unwind_walk_on(t, a, s, out, cap, steps, resume);
    else
        *stop = s.guessed ? OSP_UNWIND_GUESSED : why;
    return depth;
}

/* osp_unwind_walk_deep cut at cap: a stack deeper than cap ends there (OSP_UNWIND_DEPTH). */
OSP_UNWIND_INLINE uint32_t osp_unwind_walk_resume(const struct osp_unwind_tables *t,
                                                  const struct osp_unwind_regs *regs, int leaf,
                                                  uint64_t iregs, const struct osp_unwind_memory *m,
                                                  uint64_t *out, uint32_t cap,
                                                  enum osp_unwind_stop *stop,
                                                  struct osp_unwind_resume *resume)
{
    return osp_unwind_walk_deep(t, regs, leaf, iregs, m, out, cap, cap, stop, resume);
}

/* osp_unwind_walk_resume without the resume frame. */
OSP_UNWIND_INLINE uint32_t osp_unwind_walk(const struct osp_unwind_tables *t,
                                           const struct osp_unwind_regs *regs, int leaf,
                                           const struct osp_unwind_memory *m, uint64_t *out,
                                           uint32_t cap, enum osp_unwind_stop *stop)
{
    return osp_unwind_walk_resume(t, regs, leaf, 0, m, out, cap, stop, NULL);
}

#endif /* OSP_UNWIND_STEP_H */
