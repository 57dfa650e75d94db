/* test-arm64.c — the unwinder's arm64 rules, run on arm64 (under qemu-user in scripts/test.sh):
 * stacks walked from a real ucontext_t that a signal delivered to a thread spinning in code of
 * a known shape (a leaf that has not saved lr, a function whose frame record holds lr, a
 * frameless function between two frame-pointer ones), with the frame-pointer walk and with
 * the rows ospreyd's builder (daemon/unwind-table.c) makes from this very process's objects,
 * through the kernel's signal frame too (a sample inside a handler of the program's own);
 * pointer authentication: return addresses signed by the CPU (this file is built with
 * -mbranch-protection=pac-ret, and signs values itself with PACIA1716), synthetic ones with
 * the top bits set, and the mask the kernel reports where it can be read.
 *
 * Names are checked with dladdr (the executable is linked with --export-dynamic), so a frame
 * that is skipped, doubled or left signed fails by name. */
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "osp_core.h"
#include "osp_unwind.h"
#include "ospd_unwind.h"
#include "suite.h"

#ifndef HWCAP_PACA
#define HWCAP_PACA (1ul << 30)
#endif
#ifndef NT_ARM_PAC_MASK
#define NT_ARM_PAC_MASK 0x406
#endif
#ifndef PR_PAC_GET_ENABLED_KEYS
#define PR_PAC_GET_ENABLED_KEYS 61
#endif
#ifndef PR_PAC_APIAKEY
#define PR_PAC_APIAKEY (1ul << 0)
#endif

/* The kernel's mask of a user code address's PAC bits for a 48-bit address space with the
 * top byte ignored (ptrauth_user_pac_mask(): bits 54..48), used where the kernel's own
 * report cannot be read (no ptrace under qemu-user). */
#define USER_PAC_MASK_48 UINT64_C(0x007f000000000000)

/* Code of known shape, written out so no compiler choice changes it:
 *   leaf_spin(stop, lr_out, ready)  frameless leaf: lr never saved; CFA = sp, ra in x30
 *   fp_spin(stop, lr_out, ready)    frame record {x29, x30} at sp, x29 pointing at it
 *   frameless_mid(stop, lr_out, ready)  saves x30 below a 32-byte frame, never touches x29,
 *                                   calls leaf_spin
 *   pac_sign(value, modifier)       PACIA1716: value signed with key A (a no-op without PAuth)
 * The spinners store x30 at *lr_out, set *ready and spin until *stop. */
__asm__(".text\n"
        ".globl leaf_spin\n.type leaf_spin, %function\n.p2align 4\n"
        "leaf_spin:\n"
        "  .cfi_startproc\n"
        "  str x30, [x1]\n"
        "  mov w3, #1\n"
        "  stlr w3, [x2]\n"
        "1: ldar w3, [x0]\n"
        "  cbz w3, 1b\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".globl leaf_spin_end\nleaf_spin_end:\n"
        ".size leaf_spin, . - leaf_spin\n"

        ".globl fp_spin\n.type fp_spin, %function\n.p2align 4\n"
        "fp_spin:\n"
        "  .cfi_startproc\n"
        "  stp x29, x30, [sp, #-16]!\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset 29, -16\n"
        "  .cfi_offset 30, -8\n"
        "  mov x29, sp\n"
        "  str x30, [x1]\n"
        "  mov w3, #1\n"
        "  stlr w3, [x2]\n"
        "1: ldar w3, [x0]\n"
        "  cbz w3, 1b\n"
        "  ldp x29, x30, [sp], #16\n"
        "  .cfi_restore 29\n"
        "  .cfi_restore 30\n"
        "  .cfi_def_cfa_offset 0\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".globl fp_spin_end\nfp_spin_end:\n"
        ".size fp_spin, . - fp_spin\n"

        ".globl frameless_mid\n.type frameless_mid, %function\n.p2align 4\n"
        "frameless_mid:\n"
        "  .cfi_startproc\n"
        "  sub sp, sp, #32\n"
        "  .cfi_def_cfa_offset 32\n"
        "  str x30, [sp, #8]\n"
        "  .cfi_offset 30, -24\n"
        "  bl leaf_spin\n"
        "  ldr x30, [sp, #8]\n"
        "  .cfi_restore 30\n"
        "  add sp, sp, #32\n"
        "  .cfi_def_cfa_offset 0\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size frameless_mid, . - frameless_mid\n"

        ".globl pac_sign\n.type pac_sign, %function\n.p2align 4\n"
        "pac_sign:\n"
        "  .cfi_startproc\n"
        "  mov x17, x0\n"
        "  mov x16, x1\n"
        "  hint #8\n" /* PACIA1716 */
        "  mov x0, x17\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size pac_sign, . - pac_sign\n");

void leaf_spin(_Atomic int *stop, uint64_t *lr_out, _Atomic int *ready);
void fp_spin(_Atomic int *stop, uint64_t *lr_out, _Atomic int *ready);
void frameless_mid(_Atomic int *stop, uint64_t *lr_out, _Atomic int *ready);
uint64_t pac_sign(uint64_t value, uint64_t modifier);
extern const char leaf_spin_end[], fp_spin_end[];

/* What the signal handler saw and walked, on the spinning thread. */
enum shape { LEAF, FRAME_RECORD, FRAMELESS_MID };
static struct {
    _Atomic int stop, ready;
    _Atomic int stop2, ready2; /* the program's own handler, spinning (nested samples) */
    uint64_t lr_seen;          /* x30 as the spinner found it */
    uint64_t lr2_seen;
    uint64_t trampoline; /* where a signal handler returns to: the signal-return code */
    uint64_t stack_hi;   /* the thread's stack top */
    struct osp__regs regs;
    uint64_t raw_lr;    /* uc_mcontext.regs[30] before any stripping */
    uint64_t record_ra; /* the saved x30 in the frame record x29 points at, as stored */
    uint64_t lr_walk[32], unwind[32];
    uint32_t lr_depth, unwind_depth;
} got;

static const char *name_of(uint64_t pc)
{
    Dl_info info;
    if (pc == 0 || dladdr((void *)(uintptr_t)pc, &info) == 0 || info.dli_sname == NULL)
        return "";
    return info.dli_sname;
}

/* A return address names the function it returns into (pc - 1 stays inside the call's
 * function even when the call ends it). */
static const char *caller_of(uint64_t ra)
{
    return ra ? name_of(ra - 1) : "";
}

static void on_signal(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)info;
    const ucontext_t *uc = context;
    osp__cpu_regs(uc, &got.regs);
    got.raw_lr = uc->uc_mcontext.regs[30];
    uint64_t fp = got.regs.fp;
    if (fp >= got.regs.sp && fp + 16 <= got.stack_hi && !(fp & 7))
        got.record_ra = ((const uint64_t *)(uintptr_t)fp)[1];
    got.lr_depth = osp__unwind_walk_lr(got.regs.pc, got.regs.lr, got.regs.fp, got.regs.sp,
                                       got.stack_hi, got.lr_walk, 32);
    got.unwind_depth = osp__unwind(&got.regs, 1, got.regs.sp, got.stack_hi, got.unwind, 32);
    atomic_store_explicit(&got.stop, 1, memory_order_release);
    atomic_store_explicit(&got.stop2, 1, memory_order_release);
}

/* A handler of the program's own that runs for a while (spinning in fp_spin): a sample taken
 * there is walked through the kernel's signal frame back to the instant it interrupted. */
void on_first(int sig, siginfo_t *info, void *context);
void on_first(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)info;
    (void)context;
    got.trampoline = osp__strip_pac((uint64_t)(uintptr_t)__builtin_return_address(0));
    fp_spin(&got.stop2, &got.lr2_seen, &got.ready2);
    __asm__ volatile("" ::: "memory");
}

static int calls;

/* Built with frame pointers and pac-ret (its saved x30 is signed where the CPU has PAuth). */
__attribute__((noinline)) void call_leaf(void);
__attribute__((noinline)) void call_leaf(void)
{
    leaf_spin(&got.stop, &got.lr_seen, &got.ready);
    __asm__ volatile("" ::: "memory");
    calls++; /* no tail call: leaf_spin returns here */
}

__attribute__((noinline)) void call_fp(void);
__attribute__((noinline)) void call_fp(void)
{
    fp_spin(&got.stop, &got.lr_seen, &got.ready);
    __asm__ volatile("" ::: "memory");
    calls++;
}

__attribute__((noinline)) void worker_body(enum shape shape);
__attribute__((noinline)) void worker_body(enum shape shape)
{
    if (shape == LEAF)
        call_leaf();
    else if (shape == FRAME_RECORD)
        call_fp();
    else
        frameless_mid(&got.stop, &got.lr_seen, &got.ready);
    __asm__ volatile("" ::: "memory");
    calls++;
}

void *worker(void *arg);
void *worker(void *arg)
{
    pthread_attr_t attr;
    void *lo;
    size_t size;
    ck_assert_int_eq(pthread_getattr_np(pthread_self(), &attr), 0);
    ck_assert_int_eq(pthread_attr_getstack(&attr, &lo, &size), 0);
    pthread_attr_destroy(&attr);
    got.stack_hi = (uint64_t)(uintptr_t)lo + size;
    worker_body((enum shape)(uintptr_t)arg);
    return NULL;
}

/* Run a thread spinning in `shape`, interrupt it with a signal once it spins, and keep what
 * the handler saw. `nested`: first interrupt it with SIGUSR2, whose handler (on_first) spins
 * in its turn, and sample that. */
static void sample_in(enum shape shape, int nested)
{
    memset(&got, 0, sizeof got);
    struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    sa.sa_sigaction = on_first;
    ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, worker, (void *)(uintptr_t)shape), 0);
    while (!atomic_load_explicit(&got.ready, memory_order_acquire))
        sched_yield();
    if (nested) {
        ck_assert_int_eq(pthread_kill(t, SIGUSR2), 0);
        while (!atomic_load_explicit(&got.ready2, memory_order_acquire))
            sched_yield();
    }
    ck_assert_int_eq(pthread_kill(t, SIGUSR1), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(atomic_load(&got.stop), 1);
}

static void sample(enum shape shape)
{
    sample_in(shape, 0);
}

static int has_pauth(void)
{
    return (getauxval(AT_HWCAP) & HWCAP_PACA) != 0;
}

/* ---- the frame-pointer walk from a real context --------------------------------------- */

/* Interrupted in a leaf that has not saved lr: x29 is still its caller's frame record, so
 * only lr names the caller; it comes right after the pc, then the chain. */
START_TEST(lr_is_recorded_for_a_leaf_that_has_not_saved_it)
{
    sample(LEAF);
    ck_assert_uint_ge(got.regs.pc, (uint64_t)(uintptr_t)leaf_spin);
    ck_assert_uint_lt(got.regs.pc, (uint64_t)(uintptr_t)leaf_spin_end);
    ck_assert_uint_eq(got.regs.lr, got.lr_seen);
    ck_assert_uint_ge(got.lr_depth, 3);
    ck_assert_uint_eq(got.lr_walk[0], got.regs.pc);
    ck_assert_uint_eq(got.lr_walk[1], got.lr_seen);
    ck_assert_str_eq(caller_of(got.lr_walk[1]), "call_leaf");
    ck_assert_str_eq(caller_of(got.lr_walk[2]), "worker_body"); /* call_leaf's saved x30 */
    ck_assert_str_ne(caller_of(got.lr_walk[3]), "worker_body");
    /* The handler's entry point without tables takes the same path. */
    ck_assert_uint_eq(got.unwind_depth, got.lr_depth);
    ck_assert_mem_eq(got.unwind, got.lr_walk, got.lr_depth * sizeof got.unwind[0]);
}
END_TEST

/* Interrupted where the frame record holds lr already: lr equals the first chained return
 * address and is recorded once. */
START_TEST(lr_equal_to_the_first_chained_return_address_is_recorded_once)
{
    sample(FRAME_RECORD);
    ck_assert_uint_ge(got.regs.pc, (uint64_t)(uintptr_t)fp_spin);
    ck_assert_uint_lt(got.regs.pc, (uint64_t)(uintptr_t)fp_spin_end);
    ck_assert_uint_eq(osp__strip_pac(got.record_ra), got.regs.lr); /* the duplicate */
    ck_assert_uint_ge(got.lr_depth, 3);
    ck_assert_uint_eq(got.lr_walk[1], got.regs.lr);
    ck_assert_str_eq(caller_of(got.lr_walk[1]), "call_fp");
    ck_assert_str_eq(caller_of(got.lr_walk[2]), "worker_body");
    for (uint32_t i = 2; i < got.lr_depth; i++)
        ck_assert_uint_ne(got.lr_walk[i], got.regs.lr);
}
END_TEST

/* ---- pointer authentication --------------------------------------------------------- */

/* The kernel's PAC mask for code addresses, read as a tracer would (NT_ARM_PAC_MASK), or 0
 * when it cannot be (qemu-user has no ptrace; a kernel or CPU without PAuth). */
static uint64_t kernel_insn_pac_mask(void)
{
    pid_t child = fork();
    if (child == 0) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
            _exit(2);
        raise(SIGSTOP);
        _exit(0);
    }
    ck_assert_int_gt(child, 0);
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    uint64_t mask = 0;
    if (WIFSTOPPED(status)) {
        struct {
            uint64_t data_mask, insn_mask;
        } pac;
        struct iovec iov = {&pac, sizeof pac};
        if (ptrace(PTRACE_GETREGSET, child, (void *)(uintptr_t)NT_ARM_PAC_MASK, &iov) == 0)
            mask = pac.insn_mask;
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    return mask;
}

/* Code addresses signed by the CPU strip back to themselves, and the bits the signature set
 * are inside the mask the kernel reports (or, where it cannot be read, the kernel's mask for
 * a 48-bit address space); synthetic pointers with those bits, or a tag in the top byte,
 * strip too. */
START_TEST(pac_bits_are_stripped)
{
    uint64_t code = (uint64_t)(uintptr_t)worker_body;
    ck_assert_uint_eq(osp__strip_pac(code), code);
    ck_assert_uint_eq(osp__strip_pac(code | UINT64_C(0xff00000000000000)), code); /* a tag */
    uint64_t kernel_mask = kernel_insn_pac_mask();
    long keys = prctl(PR_PAC_GET_ENABLED_KEYS, 0, 0, 0, 0);
    fprintf(stderr, "arm64: PAuth %s, kernel's code PAC mask %#llx%s, enabled keys %ld%s\n",
            has_pauth() ? "present" : "absent", (unsigned long long)kernel_mask,
            kernel_mask ? "" : " (not readable here)", keys, keys < 0 ? " (not reported)" : "");
    if (!has_pauth())
        return; /* XPACLRI is a no-op and nothing is ever signed */
    uint64_t mask = kernel_mask ? kernel_mask : USER_PAC_MASK_48;
    ck_assert_uint_eq(osp__strip_pac(code | mask), code);
    ck_assert_uint_eq(osp__strip_pac(code | mask | UINT64_C(0xff00000000000000)), code);
    int signed_any = 0;
    for (uint64_t modifier = 1; modifier <= 8; modifier++) {
        uint64_t s = pac_sign(code, modifier);
        ck_assert_uint_eq(s & ~mask, code); /* the signature lies inside the mask */
        ck_assert_uint_eq(osp__strip_pac(s), code);
        signed_any |= s != code;
    }
    if (keys < 0 || (keys & (long)PR_PAC_APIAKEY))
        ck_assert_int_eq(signed_any, 1); /* key A on: eight PACs of 0 would be 2^-56 */
}
END_TEST

/* With pac-ret, call_leaf saves x30 signed in its frame record; the walk strips it. */
START_TEST(signed_return_addresses_in_frame_records_are_stripped)
{
    int seen_signed = 0;
    for (int round = 0; round < 4 && !seen_signed; round++) {
        sample(LEAF);
        uint64_t stripped = osp__strip_pac(got.record_ra);
        ck_assert_str_eq(caller_of(stripped), "worker_body");
        ck_assert_uint_eq(got.lr_walk[2], stripped);
        seen_signed = got.record_ra != stripped;
    }
    long keys = prctl(PR_PAC_GET_ENABLED_KEYS, 0, 0, 0, 0);
    if (has_pauth() && (keys < 0 || (keys & (long)PR_PAC_APIAKEY)))
        ck_assert_int_eq(seen_signed, 1);
}
END_TEST

/* ---- the walk by the rows ospreyd builds ------------------------------------------- */

#define REGION_SIZE (16u << 20)
static _Alignas(4096) uint8_t region_mem[REGION_SIZE];

/* Build and publish the rows of this executable and the C library from this process's maps,
 * as ospreyd does for its target, and hand the table to the unwinder. Returns the rows of
 * this executable (the caller frees them) through *own. */
static void publish_own_rows(struct ospd_unwind_rows *own, uint64_t *own_start, uint64_t trampoline)
{
    memset(region_mem, 0, sizeof region_mem);
    struct osp_unwind_header *h = (struct osp_unwind_header *)region_mem;
    osp_unwind_header_init(h, REGION_SIZE, EM_AARCH64);
    struct ospd_unwind_region region;
    char err[256] = "";
    ck_assert_int_eq(ospd_unwind_region_init(&region, region_mem, REGION_SIZE, -1, err, sizeof err),
                     0);
    char self[4096] = "";
    ck_assert_int_gt(readlink("/proc/self/exe", self, sizeof self - 1), 0);
    FILE *maps = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(maps);
    char line[8192];
    int published = 0;
    while (fgets(line, sizeof line, maps)) {
        char perms[8], path[4096] = "";
        unsigned long long s, e, o;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &s, &e, perms, &o, path) < 5 ||
            perms[2] != 'x' || (strcmp(path, self) != 0 && !strstr(path, "/libc.so")))
            continue;
        struct ospd_unwind_source src = {
            .path = path, .machine = EM_AARCH64, .mapped = true, .map_start = s, .map_offset = o};
        struct ospd_unwind_rows rows;
        ck_assert_msg(ospd_unwind_build(&src, &rows, err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(ospd_unwind_region_publish(&region, rows.bias + rows.start_vaddr, &rows),
                         0);
        published++;
        if (strcmp(path, self) == 0) {
            *own = rows;
            *own_start = rows.bias + rows.start_vaddr;
        } else {
            ospd_unwind_rows_free(&rows);
        }
    }
    fclose(maps);
    ck_assert_int_eq(published, 2);
    if (trampoline != 0) {
        /* The signal-return code as the kernel's vDSO describes it (a signal frame from one
         * instruction before __kernel_rt_sigreturn: a return address is looked up at - 1);
         * under qemu-user it is a page of the emulator's own, without CFI. */
        struct osp_unwind_row signal_row = {.cfa_rule = OSP_CFA_SIGNAL};
        struct ospd_unwind_rows rows = {
            .rows = &signal_row, .count = 1, .start_vaddr = 0, .end_vaddr = 4 + 64};
        ck_assert_int_eq(ospd_unwind_region_publish(&region, trampoline - 4, &rows), 0);
    }
    ospd_unwind_region_free(&region);
    osp__unwind_set_tables(region_mem, REGION_SIZE);
}

static const struct osp_unwind_row *row_for(const struct ospd_unwind_rows *r, uint64_t start,
                                            uint64_t pc)
{
    const struct osp_unwind_row *best = NULL;
    for (uint32_t i = 0; i < r->count; i++)
        if (start + r->rows[i].pc_offset <= pc)
            best = &r->rows[i];
    return best;
}

/* The builder on arm64 objects: at a leaf's instructions the return address is "same value"
 * in x30 (the CIE's return-address column), which is OSP_RA_IN_LR; a function that saved it
 * has it at CFA + offset, the CFA from sp. */
START_TEST(rows_of_arm64_code_say_where_x30_is)
{
    struct ospd_unwind_rows own;
    uint64_t start;
    publish_own_rows(&own, &start, 0);
    const struct osp_unwind_row *leaf = row_for(&own, start, (uint64_t)(uintptr_t)leaf_spin + 8);
    ck_assert_ptr_nonnull(leaf);
    ck_assert_int_eq(leaf->cfa_rule, OSP_CFA_SP);
    ck_assert_int_eq(leaf->cfa_offset, 0);
    ck_assert_int_eq(leaf->ra_rule, OSP_RA_IN_LR);
    const struct osp_unwind_row *mid =
        row_for(&own, start, (uint64_t)(uintptr_t)frameless_mid + 8); /* after the str */
    ck_assert_ptr_nonnull(mid);
    ck_assert_int_eq(mid->cfa_rule, OSP_CFA_SP);
    ck_assert_int_eq(mid->cfa_offset, 32);
    ck_assert_int_eq(mid->ra_rule, OSP_RA_AT_CFA);
    ck_assert_int_eq(mid->ra_offset, -24);
    ck_assert_int_eq(mid->fp_rule, OSP_FP_SAME);
    const struct osp_unwind_row *rec = row_for(&own, start, (uint64_t)(uintptr_t)fp_spin + 8);
    ck_assert_ptr_nonnull(rec);
    ck_assert_int_eq(rec->cfa_rule, OSP_CFA_SP);
    ck_assert_int_eq(rec->cfa_offset, 16);
    ck_assert_int_eq(rec->ra_offset, -8);
    ck_assert_int_eq(rec->fp_rule, OSP_FP_AT_CFA);
    ck_assert_int_eq(rec->fp_offset, -16);
    ospd_unwind_rows_free(&own);
    osp__unwind_set_tables(NULL, 0);
}
END_TEST

/* A frameless function between the leaf and a frame-pointer caller: the frame-pointer walk
 * (lr, then x29's chain) cannot see that caller, the rows can — leaf by x30, the frameless
 * frame by sp + 32 and its saved x30, and on through the C library to the thread's
 * outermost frame. */
START_TEST(rows_walk_a_frameless_function_that_the_chain_skips)
{
    sample(FRAMELESS_MID); /* no tables: lr, then the chain */
    ck_assert_str_eq(caller_of(got.lr_walk[1]), "frameless_mid");
    ck_assert_str_ne(caller_of(got.lr_walk[2]), "worker_body");

    struct ospd_unwind_rows own;
    uint64_t start;
    publish_own_rows(&own, &start, 0);
    ospd_unwind_rows_free(&own);
    sample(FRAMELESS_MID);
    ck_assert_uint_ge(got.unwind_depth, 4);
    ck_assert_uint_ge(got.unwind[0], (uint64_t)(uintptr_t)leaf_spin);
    ck_assert_uint_lt(got.unwind[0], (uint64_t)(uintptr_t)leaf_spin_end);
    ck_assert_uint_eq(got.unwind[1], got.lr_seen); /* x30, by the leaf's row */
    ck_assert_str_eq(caller_of(got.unwind[1]), "frameless_mid");
    ck_assert_str_eq(caller_of(got.unwind[2]), "worker_body"); /* by frameless_mid's row */
    ck_assert_str_eq(caller_of(got.unwind[3]), "worker");
    /* The walk ends at the C library's outermost frame (the thread's start), not short. */
    Dl_info info;
    uint64_t last = got.unwind[got.unwind_depth - 1];
    ck_assert_int_ne(dladdr((void *)(uintptr_t)(last - 1), &info), 0);
    ck_assert_ptr_nonnull(strstr(info.dli_fname, "libc.so"));
    ck_assert_uint_lt(got.unwind_depth, 32);
    /* The same with a frame record: the rows give no duplicate either. */
    sample(FRAME_RECORD);
    ck_assert_str_eq(caller_of(got.unwind[1]), "call_fp");
    ck_assert_str_eq(caller_of(got.unwind[2]), "worker_body");
    osp__unwind_set_tables(NULL, 0);
}
END_TEST

/* A sample inside the program's own signal handler: the rows walk the handler, then the kernel's
 * signal frame (struct rt_sigframe at sp: siginfo, then the ucontext_t the interrupted
 * registers are read from), then the interrupted instant itself, lr included. */
START_TEST(rows_walk_through_the_kernels_signal_frame)
{
    sample_in(LEAF, 1); /* learns where handlers return to */
    uint64_t trampoline = got.trampoline;
    ck_assert_uint_ne(trampoline, 0);
    struct ospd_unwind_rows own;
    uint64_t start;
    publish_own_rows(&own, &start, trampoline);
    ospd_unwind_rows_free(&own);
    sample_in(LEAF, 1);
    ck_assert_uint_eq(got.trampoline, trampoline);
    ck_assert_uint_ge(got.unwind_depth, 7);
    ck_assert_uint_ge(got.unwind[0], (uint64_t)(uintptr_t)fp_spin);
    ck_assert_uint_lt(got.unwind[0], (uint64_t)(uintptr_t)fp_spin_end);
    ck_assert_str_eq(caller_of(got.unwind[1]), "on_first");
    ck_assert_uint_eq(got.unwind[2], trampoline);
    ck_assert_uint_ge(got.unwind[3], (uint64_t)(uintptr_t)leaf_spin); /* the exact pc */
    ck_assert_uint_lt(got.unwind[3], (uint64_t)(uintptr_t)leaf_spin_end);
    ck_assert_uint_eq(got.unwind[4], got.lr_seen); /* its lr, from the saved context */
    ck_assert_str_eq(caller_of(got.unwind[4]), "call_leaf");
    ck_assert_str_eq(caller_of(got.unwind[5]), "worker_body");
    ck_assert_str_eq(caller_of(got.unwind[6]), "worker");
    osp__unwind_set_tables(NULL, 0);
}
END_TEST

Suite *arm64_suite(void)
{
    Suite *s = suite_create("arm64");
    SUITE_CASE(s, "walk", 60, lr_is_recorded_for_a_leaf_that_has_not_saved_it,
               lr_equal_to_the_first_chained_return_address_is_recorded_once);
    SUITE_CASE(s, "pac", 60, pac_bits_are_stripped,
               signed_return_addresses_in_frame_records_are_stripped);
    SUITE_CASE(s, "rows", 120, rows_of_arm64_code_say_where_x30_is,
               rows_walk_a_frameless_function_that_the_chain_skips,
               rows_walk_through_the_kernels_signal_frame);
    return s;
}
