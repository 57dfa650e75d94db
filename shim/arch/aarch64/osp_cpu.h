/* osp_cpu.h (aarch64) — what the shim must know of the CPU it runs on, in one place: the
 * interrupted registers, the system-call instruction and pointer authentication (the kernel's
 * signal frame is the shared step's, proto/osp_unwind_step.h). The unwinder, the handler and the
 * raw system call reach the CPU only through this header (shim/arch/<cpu>/, chosen by meson).
 */
#ifndef OSP_CPU_H
#define OSP_CPU_H

#include <stdint.h>

#include "osp_unwind_step.h"

#define OSP__CPU_NAME        "aarch64"
#define OSP__CPU_PLATFORM    "linux-aarch64"
#define OSP__CPU_ELF_MACHINE 183u /* EM_AARCH64 */

/* The registers an unwind needs: pc, sp, x29 and x30 (the link register). */
struct osp__regs {
    uint64_t pc, sp, fp, lr;
    const void *iregs; /* a signal context's registers (osp_unwind_regs), or NULL */
};

/* A system call with up to five arguments, made directly. Returns what the kernel returned
 * (a negative errno on failure). Async-signal-safe. */
static inline long osp__cpu_syscall(long nr, long a, long b, long c, long d, long e)
{
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
    return x0;
}

/* Strip pointer-authentication bits from a code address. XPACLRI (hint #7) strips the PAC
 * from x30 (bits 54 down to the address size; a no-op on cores without PAuth, where nothing is
 * signed). Linux ignores the top byte of user addresses (TBI), so XPAC leaves it, and a user
 * code address never needs it: it is cleared too. Async-signal-safe. */
static inline uint64_t osp__cpu_strip_pac(uint64_t addr)
{
    return osp_unwind_strip_pac(addr);
}

/* Code is never read as plain memory here: an execute-only page is possible. */
static inline int osp__cpu_code_readable(void)
{
    return 0;
}

/* The generic timer's virtual count (CNTVCT_EL0, which Linux lets user space read: the vDSO's
 * clock reads it): one instruction, no system call. Async-signal-safe. */
static inline uint64_t osp__cpu_ticks(void)
{
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}

/* Its rate, which the architecture states (CNTFRQ_EL0). */
static inline uint64_t osp__cpu_ticks_hz(void)
{
    uint64_t hz;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(hz));
    return hz;
}

/* The generic timer runs at its one rate by the architecture's definition. */
static inline int osp__cpu_ticks_constant(void)
{
    return 1;
}

/* The interrupted registers from a signal's ucontext_t (lr PAC-stripped). Async-signal-safe. */
void osp__cpu_regs(const void *context, struct osp__regs *out);

#define OSP__CPU_SYSCALL_INSN_SIZE 4
extern const unsigned char osp__cpu_syscall_insn[OSP__CPU_SYSCALL_INSN_SIZE];

/* From a signal's context: the pc, the system-call result register (x0), and whether that
 * register can hold a restarted call's number (aarch64 restores the first argument instead:
 * nothing to tell by, so 1). Async-signal-safe. */
void osp__cpu_syscall_state(const void *context, uint64_t *pc, uint64_t *result,
                            int *restarted_number);

/* No prologue patterns on aarch64: the leaf's caller is in lr. */
static inline int osp__cpu_frameless_return_slot(uint64_t pc)
{
    (void)pc;
    return -1;
}

#endif /* OSP_CPU_H */
