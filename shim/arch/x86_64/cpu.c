/* cpu.c (x86_64) — the CPU-specific pieces of the shim (osp_cpu.h): registers from a signal's
 * context, the system-call instruction, the kernel's signal frame and the frame-pointer
 * prologue's code bytes. Everything here is async-signal-safe.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "osp_base.h"
#include "osp_cpu.h"
#include "osp_unwind_step.h"

const unsigned char osp__cpu_syscall_insn[OSP__CPU_SYSCALL_INSN_SIZE] = {0x0f, 0x05};

/* Async-signal-safe. */
void osp__cpu_regs(const void *context, struct osp__regs *out)
{
    const ucontext_t *uc = context;
    out->pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    out->sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
    out->fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
    out->lr = 0;
    out->iregs = uc->uc_mcontext.gregs;
}

/* Async-signal-safe. */
void osp__cpu_syscall_state(const void *context, uint64_t *pc, uint64_t *result,
                            int *restarted_number)
{
    const ucontext_t *uc = context;
    *pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    *result = (uint64_t)uc->uc_mcontext.gregs[REG_RAX];
    /* A restart puts the system call's number back in rax (a small number); else rax holds
     * what the call returned, or whatever the code put there. */
    *restarted_number = *result < 4096;
}

/* The shared step reads the kernel's signal frame at these offsets (proto/osp_unwind_step.h). */
_Static_assert(OSP_UNWIND_SIGNAL_PC == offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]), "rip");
_Static_assert(OSP_UNWIND_SIGNAL_SP == offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]), "rsp");
_Static_assert(OSP_UNWIND_SIGNAL_FP == offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]), "rbp");
_Static_assert(OSP_UNWIND_SIGNAL_REGS == offsetof(ucontext_t, uc_mcontext.gregs[0]), "gregs");
/* OSP_CFA_REG's register numbers are these slots (proto/osp_unwind.h; daemon/unwind-table.c). */
_Static_assert(REG_R8 == 0 && REG_R15 == 7 && REG_RDI == 8 && REG_RSI == 9 && REG_RBP == 10 &&
                   REG_RBX == 11 && REG_RDX == 12 && REG_RAX == 13 && REG_RCX == 14 &&
                   REG_RSP == 15 && sizeof(greg_t) == 8,
               "gregs");

/* Do the n bytes at window[at] match expected, all inside the window? */
static int code_matches(const unsigned char *window, long window_size, long at,
                        const unsigned char *expected, unsigned n)
{
    if (at < 0 || at + (long)n > window_size)
        return 0;
    for (unsigned i = 0; i < n; i++)
        if (window[at + (long)i] != expected[i])
            return 0;
    return 1;
}

/* Async-signal-safe (osp__read_pc_code). */
int osp__cpu_frameless_return_slot(uint64_t pc)
{
    static const unsigned char ret[] = {0xc3};
    static const unsigned char prologue[] = {0x55, 0x48, 0x89, 0xe5}; /* push; mov rsp,rbp */
    static const unsigned char endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
    /* window[0] is the byte before pc: [pc - 1, pc + 8), clipped to pc's page */
    unsigned char window[9];
    uint64_t page = pc & ~(uint64_t)4095;
    uint64_t first = pc > page ? pc - 1 : pc;
    uint64_t end = pc + 8 < page + 4096 ? pc + 8 : page + 4096;
    if (osp__read_pc_code(pc, first, window, (size_t)(end - first)) != 0)
        return -1;
    long size = (long)(end - first), at = (long)(pc - first); /* pc's byte in the window */
    if (code_matches(window, size, at, ret, 1) || code_matches(window, size, at, prologue, 4))
        return 0;
    if (code_matches(window, size, at, endbr64, 4) &&
        code_matches(window, size, at + 4, prologue, 4))
        return 0;
    if (code_matches(window, size, at - 1, prologue, 4))
        return 1; /* at the mov: the push has run */
    return -1;
}
