/* cpu.c (aarch64) — the CPU-specific pieces of the shim (osp_cpu.h): registers from a
 * signal's context, the system-call instruction and the kernel's signal frame. Everything here
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

/* Async-signal-safe: reads the frame once it is known to lie below hi. */
__attribute__((no_sanitize("address", "hwaddress"))) int
osp__cpu_signal_frame_regs(uint64_t sp, uint64_t hi, struct osp__regs *out)
{
    uint64_t at = sp + 128; /* siginfo_t first */
    if (sp & 15u || at < sp || at >= hi || hi - at < sizeof(ucontext_t))
        return -1;
    osp__cpu_regs((const ucontext_t *)(uintptr_t)at, out);
    return 0;
}
