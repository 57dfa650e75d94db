/* stacks.c — which stacks a sample's walk may read: the bounds of the stack the thread was
 * interrupted on, when it is not the thread's own.
 *
 * Owns osp__stack_spans: from the interrupted stack pointer, the stack it is on and the others
 * the walk may cross to at a kernel signal frame. The thread's own stack ([lo, hi) taken at
 * registration, registry.c) and a fiber's stack its runtime declared (osp_prof_fiber_switch,
 * start.c) are read in place: they are mapped for as long as the thread runs on them. The
 * thread's signal stack (sigaltstack, asked only when sp is on neither) is read in place too:
 * the kernel is delivering onto it. Any other stack — a goroutine's, a coroutine's on the heap,
 * a runtime's that said nothing — is known only by sp: the memory above it is copied without
 * faulting (process_vm_readv, page by page, stopping at the first page that cannot be read)
 * and walked in the copy. Nothing there is trusted: the walk's own checks (every word inside
 * the span, sp strictly rising, depth capped) end a corrupt chain.
 *
 * DESIGN (figures in shim/README.md, "Stacks that are not the thread's own"): a copy costs one
 * system call per sample taken off the thread's stack and nothing otherwise; the regions
 * ospreyd could publish from /proc/PID/maps were measured against it and not kept (a stack
 * mapped after ospreyd's last reading is in none, one unmapped since would fault a read in
 * place: a copy is needed either way).
 */
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "osp_base.h"
#include "osp_core.h"

static int holds(uint64_t lo, uint64_t hi, uint64_t sp)
{
    return lo < hi && sp >= lo && sp < hi;
}

/* The copy buffer as a spare span after out[0..n): a handler on the signal stack may have
 * interrupted a stack no one vouched for (a goroutine's, a coroutine's). */
static uint32_t spare(const struct osp__slot *s, struct osp__stack_span *out, uint32_t n)
{
    if (s->stack_copy != NULL)
        out[n++] = (struct osp__stack_span){0, 0, s->stack_copy, 0};
    return n;
}

/* Async-signal-safe: sigaltstack and process_vm_readv are plain system calls. */
uint32_t osp__stack_spans(struct osp__slot *s, uint64_t sp, struct osp__stack_span *out)
{
    uint32_t n = 0;
    /* The fiber's bounds as the runtime wrote them: hi last, so a pair half written is 0. */
    uint64_t fiber_hi = s->fiber_hi, fiber_lo = s->fiber_lo;
    atomic_signal_fence(memory_order_acquire);
    struct osp__stack_span own = {s->stack_lo, s->stack_hi, NULL, 0};
    struct osp__stack_span fiber = {fiber_lo, fiber_hi, NULL, 0};
    int on_own = holds(own.lo, own.hi, sp), on_fiber = holds(fiber.lo, fiber.hi, sp);
    if (on_fiber && !on_own)
        out[n++] = fiber;
    if (own.lo < own.hi)
        out[n++] = own;
    if (!on_fiber && fiber.lo < fiber.hi)
        out[n++] = fiber;
    if (on_own || on_fiber) {
        if (out[0].lo < sp)
            out[0].lo = sp;
        return spare(s, out, n);
    }
    /* A handler on the signal stack: the walk crosses to the stack it interrupted at the
     * kernel's frame. */
    stack_t ss;
    if (osp__sys(SYS_sigaltstack, 0, (long)&ss, 0, 0, 0) == 0 && !(ss.ss_flags & SS_DISABLE) &&
        holds((uint64_t)(uintptr_t)ss.ss_sp, (uint64_t)(uintptr_t)ss.ss_sp + ss.ss_size, sp)) {
        out[n] = out[0];
        out[0] = (struct osp__stack_span){sp, (uint64_t)(uintptr_t)ss.ss_sp + ss.ss_size, NULL, 0};
        return spare(s, out, n + 1);
    }
    /* A stack no one vouched for: copied. */
    if (s->stack_copy == NULL)
        return 0;
    uint64_t base = sp & ~(uint64_t)4095;
    size_t got = osp__read_pages(base, s->stack_copy, OSP__STACK_COPY_BYTES);
    if (got < sp - base + 8)
        return 0;
    out[n] = out[0];
    out[0] = (struct osp__stack_span){sp, base + got, s->stack_copy, base};
    return n + 1;
}

/* Async-signal-safe. */
uint64_t osp__stack_in_place(const struct osp__slot *s, uint64_t addr, uint64_t *lo)
{
    uint64_t fiber_hi = s->fiber_hi, fiber_lo = s->fiber_lo;
    atomic_signal_fence(memory_order_acquire);
    if (holds(s->stack_lo, s->stack_hi, addr)) {
        *lo = s->stack_lo;
        return s->stack_hi;
    }
    if (holds(fiber_lo, fiber_hi, addr)) {
        *lo = fiber_lo;
        return fiber_hi;
    }
    *lo = 0;
    return 0;
}
