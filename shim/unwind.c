/* unwind.c — stack capture by frame-pointer walk, and nothing else.
 *
 * Owns how the SIGPROF handler turns its thread's registers into a list of code addresses:
 * the walk (osp__unwind_walk, and the aarch64 form that also records lr), the x86_64 prologue
 * and ret case, and reading code bytes without faulting (osp__read_code).
 *
 * DESIGN. A frame record is two words: [fp] = the caller's frame pointer, [fp + 8] = the
 * return address into the caller (x86_64 `push rbp; mov rbp, rsp`; aarch64 `stp x29, x30`).
 * Nothing read from the stack is trusted: every frame pointer is checked before it is
 * dereferenced — 8-byte aligned, its 16-byte record inside [lo, hi), strictly above the
 * previous one, at most OSP__MAX_FRAME_BYTES above it — and the walk ends at the first check
 * that fails or after `cap` addresses. The callers pass lo = max(stack low bound, the
 * interrupted sp): everything in [sp, hi) is mapped (the main thread's stack mapping grows
 * down to cover sp; pthread stacks are mapped whole), so no read can fault. The functions are
 * pure in their arguments so tests can plant frame chains in an array. Code bytes (x86_64
 * prologue and ret detection) are read with process_vm_readv, which fails rather than faults.
 */
#include <stdatomic.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "osp_shim.h"

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
#if defined(__aarch64__)
    /* XPACLRI (hint #7) strips the PAC from x30; a no-op on cores without PAuth. */
    register uint64_t x30 __asm__("x30") = addr;
    __asm__("hint #7" : "+r"(x30));
    return x30;
#else
    return addr;
#endif
}

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

/* The process's own id for process_vm_readv, set at boot and in a forked child (0: ask). */
static _Atomic pid_t self_pid;
/* 1 where code the CPU is running can be read directly: x86_64 without protection keys in
 * use, where executable means readable. */
static _Atomic int code_readable;

void osp__read_code_init(void)
{
    atomic_store_explicit(&self_pid, getpid(), memory_order_relaxed);
#if defined(__x86_64__)
    unsigned a, b, c, d;
    /* CPUID.(EAX=7,ECX=0):ECX bit 4, OSPKE: the kernel enabled protection keys, with which a
     * page can be executable and unreadable. */
    int keys = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 4));
    atomic_store_explicit(&code_readable, !keys, memory_order_relaxed);
#endif
}

OSP__READS_FOREIGN_STACK
int osp__read_pc_code(uint64_t pc, uint64_t addr, void *out, size_t n)
{
    uint64_t page = pc & ~(uint64_t)4095;
    if (atomic_load_explicit(&code_readable, memory_order_relaxed) && addr >= page &&
        addr + n <= page + 4096) {
        /* pc's page is mapped and executable (the thread was running there): readable. */
        const volatile unsigned char *from = (const volatile unsigned char *)(uintptr_t)addr;
        unsigned char *to = out;
        for (size_t i = 0; i < n; i++)
            to[i] = from[i];
        return 0;
    }
    return osp__read_code(addr, out, n);
}

/* Async-signal-safe: process_vm_readv (and getpid, before osp__read_code_init) are plain
 * system calls (the caller saves errno). process_vm_readv fails instead of faulting: a page
 * may be execute-only (x86 protection keys make PROT_EXEC alone unreadable), or gone. */
int osp__read_code(uint64_t addr, void *out, size_t n)
{
    struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};
    pid_t pid = atomic_load_explicit(&self_pid, memory_order_relaxed);
    return process_vm_readv(pid ? pid : getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* Async-signal-safe (osp__read_code). */
OSP__READS_FOREIGN_STACK
uint64_t osp__unwind_x86_frameless_return(uint64_t pc, uint64_t sp, uint64_t hi)
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
        return 0;
    long size = (long)(end - first), at = (long)(pc - first); /* pc's byte in the window */
    long slot = -1; /* where the return address is, in words above sp */
    if (code_matches(window, size, at, ret, 1) || code_matches(window, size, at, prologue, 4))
        slot = 0;
    else if (code_matches(window, size, at, endbr64, 4) &&
             code_matches(window, size, at + 4, prologue, 4))
        slot = 0;
    else if (code_matches(window, size, at - 1, prologue, 4))
        slot = 1; /* at the mov: the push has run */
    if (slot < 0 || sp & 7u || sp >= hi || hi - sp < 8u * (uint64_t)(slot + 1))
        return 0;
    return ((const uint64_t *)(uintptr_t)sp)[slot];
}
