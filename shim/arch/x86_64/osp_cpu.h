/* osp_cpu.h (x86_64) — what the shim must know of the CPU it runs on, in one place: the
 * interrupted registers, the system-call instruction and the frame-pointer prologue (the
 * kernel's signal frame and the lazy PLT are the shared step's, proto/osp_unwind_step.h). The
 * unwinder, the handler and the raw system call reach the CPU only through this header
 * (shim/arch/<cpu>/, chosen by meson).
 */
#ifndef OSP_CPU_H
#define OSP_CPU_H

#include <cpuid.h>
#include <stdint.h>

#define OSP__CPU_NAME        "x86_64"
#define OSP__CPU_PLATFORM    "linux-x86_64"
#define OSP__CPU_ELF_MACHINE 62u /* EM_X86_64 */

/* The registers an unwind needs. lr is 0: x86_64 has no link register. */
struct osp__regs {
    uint64_t pc, sp, fp, lr;
    const void *iregs; /* a signal context's registers (osp_unwind_regs), or NULL */
};

/* A system call with up to five arguments, made directly. Returns what the kernel returned
 * (a negative errno on failure). Async-signal-safe. */
static inline long osp__cpu_syscall(long nr, long a, long b, long c, long d, long e)
{
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
}

/* 1 where code the CPU is running can be read as plain memory: executable means readable,
 * unless the kernel enabled protection keys (CPUID.(EAX=7,ECX=0):ECX bit 4, OSPKE), with
 * which a page can be executable and unreadable. */
static inline int osp__cpu_code_readable(void)
{
    unsigned a, b, c, d;
    int keys = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 4));
    return !keys;
}

/* The CPU's time-stamp counter (rdtsc): a few instructions, no system call, where the vDSO's
 * clock_gettime is a call, a sequence lock and a conversion around the same read. Not ordered
 * with the code around it: it times system calls, hundreds of nanoseconds. Async-signal-safe. */
static inline uint64_t osp__cpu_ticks(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* The counter's rate where the CPU states it (0: measured against CLOCK_MONOTONIC, stamp.c). */
static inline uint64_t osp__cpu_ticks_hz(void)
{
    return 0;
}

/* Does the counter tick at one rate whatever the core's frequency and through its sleep states
 * (CPUID.80000007H:EDX bit 8, the invariant TSC: the kernel's constant_tsc and nonstop_tsc)? */
static inline int osp__cpu_ticks_constant(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8));
}

/* The interrupted registers from a signal's ucontext_t. Async-signal-safe. */
void osp__cpu_regs(const void *context, struct osp__regs *out);

/* The system-call instruction's bytes, and how many. */
#define OSP__CPU_SYSCALL_INSN_SIZE 2
extern const unsigned char osp__cpu_syscall_insn[OSP__CPU_SYSCALL_INSN_SIZE];

/* From a signal's context: the pc, the system-call result register, and whether that
 * register can hold a restarted call's number (1 on x86_64: rax holds the number again after
 * the kernel rewinds a restartable call, a small nonnegative value). Async-signal-safe. */
void osp__cpu_syscall_state(const void *context, uint64_t *pc, uint64_t *result,
                            int *restarted_number);

/* Strip pointer-authentication bits (none on x86_64). Async-signal-safe. */
static inline uint64_t osp__cpu_strip_pac(uint64_t addr)
{
    return addr;
}

/* When pc sits where the interrupted function's frame record is not in rbp — at the
 * `push %rbp` of a frame-pointer prologue (`push %rbp; mov %rsp,%rbp`, optionally after
 * endbr64), at the `mov %rsp,%rbp` that follows it, or at a `ret` — return how many words
 * above sp its return address is (0 or 1), else -1. Code bytes around pc, within pc's own
 * page, are read without faulting. Async-signal-safe. */
int osp__cpu_frameless_return_slot(uint64_t pc);

#endif /* OSP_CPU_H */
