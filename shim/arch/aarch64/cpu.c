/* cpu.c (aarch64) — the CPU-specific pieces of the shim (osp_cpu.h): registers from a
 * signal's context and the system-call instruction (the kernel's signal frame is read by the
 * shared step, proto/osp_unwind_step.h; its offsets are checked here). Everything here
 * is async-signal-safe.
 */
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include "osp_base.h"
#include "osp_cpu.h"

const unsigned char osp__cpu_syscall_insn[OSP__CPU_SYSCALL_INSN_SIZE] = {0x01, 0x00, 0x00,
                                                                         0xd4}; /* svc #0 */

/* Async-signal-safe. */
void osp__cpu_regs(const void *context, struct osp__regs *out)
{
    const ucontext_t *uc = context;
    out->pc = uc->uc_mcontext.pc;
    out->sp = uc->uc_mcontext.sp;
    out->fp = uc->uc_mcontext.regs[29];
    out->lr = osp__cpu_strip_pac(uc->uc_mcontext.regs[30]);
    out->iregs = uc->uc_mcontext.regs; /* x0..x30: OSP_CFA_REG's numbers */
}

/* Async-signal-safe. */
void osp__cpu_syscall_state(const void *context, uint64_t *pc, uint64_t *result,
                            int *restarted_number)
{
    const ucontext_t *uc = context;
    *pc = uc->uc_mcontext.pc;
    *result = uc->uc_mcontext.regs[0];
    *restarted_number = 1; /* x0 is the first argument again: nothing to tell by */
}

/* The shared step reads the kernel's signal frame (struct rt_sigframe: siginfo_t, then the
 * ucontext_t) at these offsets (proto/osp_unwind_step.h). */
_Static_assert(OSP_UNWIND_SIGNAL_REGS == 128 + offsetof(ucontext_t, uc_mcontext.regs[0]), "x0");
_Static_assert(OSP_UNWIND_SIGNAL_FP == 128 + offsetof(ucontext_t, uc_mcontext.regs[29]), "x29");
_Static_assert(OSP_UNWIND_SIGNAL_LR == 128 + offsetof(ucontext_t, uc_mcontext.regs[30]), "x30");
_Static_assert(OSP_UNWIND_SIGNAL_SP == 128 + offsetof(ucontext_t, uc_mcontext.sp), "sp");
_Static_assert(OSP_UNWIND_SIGNAL_PC == 128 + offsetof(ucontext_t, uc_mcontext.pc), "pc");
