/* refuse.c — runs a command with one system call refused, as a sandbox refuses it: a seccomp
 * filter (raw BPF, so the tests need no libseccomp), inherited by the command and everything it
 * starts, every other call allowed.
 *
 * Usage: refuse SYSCALL [VAR=VALUE]... COMMAND [ARG...], SYSCALL one of
 *   perf_event_open  fails with EACCES, what Docker's and Kubernetes' default profiles return
 *                    and what perf_event_paranoid 3 looks like (e2e-waits-noperf,
 *                    e2e-attach-ptrace);
 *   execve           execve and execveat fail with EPERM, but for this launcher's own exec of
 *                    COMMAND (the one whose path is at the very address argv holds): a program
 *                    whose sandbox forbids execve, whose shim cannot start ospreyd
 *                    (e2e-attach-ring).
 *   sigprof          rt_sigaction(SIGPROF, act, …) with an action fails with EPERM, as a sandbox
 *                    that keeps the program's signals to itself refuses it (e2e-sandbox).
 *   kill-CALL        CALL kills the process (SECCOMP_RET_KILL_PROCESS), as a strict allow-list
 *                    kills on a call it does not list: CALL one of timer_create, timer_settime,
 *                    process_vm_readv, kill, memfd_create, clone3, socket, perf_event_open, or
 *                    sigprof (rt_sigaction(SIGPROF) with an action), (e2e-sandbox);
 *   trap-CALL        CALL raises SIGSYS (SECCOMP_RET_TRAP), as Chromium's sandbox does.
 * COMMAND without a slash is looked up in PATH (not under execve: its exec is of a path built
 * apart, refused). Each VAR=VALUE is added to COMMAND's environment (LD_PRELOAD, OSPREY_RING: the
 * launcher itself is not profiled). A call made through another ABI (x86_64's x32 or i386 numbers:
 * not ours to read) is refused with the same errno. no_new_privs is set first, as an unprivileged
 * filter needs. Exit status 2 on a bad command line, 126 when the filter cannot be installed, 127
 * when COMMAND cannot be run, else COMMAND's.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define REFUSE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define REFUSE_ARCH AUDIT_ARCH_AARCH64
#else
#error "refuse.c: no audit architecture for this CPU"
#endif

/* The low and high words of a system call's first argument (little-endian). */
#define ARG0_LOW  offsetof(struct seccomp_data, args[0])
#define ARG0_HIGH (offsetof(struct seccomp_data, args[0]) + 4)

#define LOAD(what)      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (what))
#define RETURN(what)    BPF_STMT(BPF_RET | BPF_K, (what))
#define REFUSED         (SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA))
#define IF_EQ(k, t, f)  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define IF_GE(k, t, f)  BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (k), (t), (f))
#define ALWAYS(forward) BPF_JUMP(BPF_JMP | BPF_JA, (forward), 0, 0)

/* no_new_privs, then the filter of `count` instructions: 0, or -errno. */
static int load(struct sock_filter *code, size_t count)
{
    struct sock_fprog prog = {.len = (unsigned short)count, .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -errno;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return -errno;
    return 0;
}

/* The filter: another ABI refused, then `nr` (and `also`, when not -1) refused with `err`, but
 * for a call whose first argument is `allowed_arg0` (when `exempt`); every other call allowed. */
static int install(long nr, long also, int err, int exempt, uint64_t allowed_arg0)
{
    struct sock_filter code[] = {
        LOAD(offsetof(struct seccomp_data, arch)),
        IF_EQ(REFUSE_ARCH, 1, 0),
        RETURN(REFUSED),
        LOAD(offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
        IF_GE(0x40000000u, 3, 0), /* x32 numbers carry bit 30 on x86_64's audit architecture */
#else
        ALWAYS(0),
#endif
        IF_EQ((uint32_t)nr, 3, 0),
        IF_EQ((uint32_t)also, also >= 0 ? 2 : 0, 0),
        RETURN(SECCOMP_RET_ALLOW),
        RETURN(REFUSED),
        ALWAYS(exempt ? 1 : 0), /* the refused call: allowed only for its exempt argument */
        RETURN(REFUSED),
        LOAD(ARG0_LOW),
        IF_EQ((uint32_t)allowed_arg0, 1, 0),
        RETURN(REFUSED),
        LOAD(ARG0_HIGH),
        IF_EQ((uint32_t)(allowed_arg0 >> 32), 1, 0),
        RETURN(REFUSED),
        RETURN(SECCOMP_RET_ALLOW),
    };
    return load(code, sizeof code / sizeof *code);
}

/* rt_sigaction(SIGPROF, act != NULL, …) answered with `action` (EPERM: SECCOMP_RET_ERRNO |
 * EPERM); every other call allowed. */
static int install_sigprof(uint32_t action)
{
    struct sock_filter code[] = {
        LOAD(offsetof(struct seccomp_data, arch)),
        IF_EQ(REFUSE_ARCH, 1, 0),
        RETURN(SECCOMP_RET_ERRNO | EPERM),
        LOAD(offsetof(struct seccomp_data, nr)),
        IF_EQ(SYS_rt_sigaction, 1, 0),
        RETURN(SECCOMP_RET_ALLOW),
        LOAD(ARG0_LOW),
        IF_EQ(SIGPROF, 1, 0),
        RETURN(SECCOMP_RET_ALLOW),
        LOAD(offsetof(struct seccomp_data, args[1])),
        IF_EQ(0, 1, 0),
        RETURN(action),
        LOAD(offsetof(struct seccomp_data, args[1]) + 4),
        IF_EQ(0, 1, 0),
        RETURN(action),
        RETURN(SECCOMP_RET_ALLOW),
    };
    return load(code, sizeof code / sizeof *code);
}

/* `nr` answered with `action` (a kill or a trap), every other call allowed; another ABI's
 * calls are refused with EPERM. */
static int install_action(long nr, uint32_t action)
{
    struct sock_filter code[] = {
        LOAD(offsetof(struct seccomp_data, arch)),
        IF_EQ(REFUSE_ARCH, 1, 0),
        RETURN(SECCOMP_RET_ERRNO | EPERM),
        LOAD(offsetof(struct seccomp_data, nr)),
        IF_EQ((uint32_t)nr, 0, 1),
        RETURN(action),
        RETURN(SECCOMP_RET_ALLOW),
    };
    return load(code, sizeof code / sizeof *code);
}

/* kill-CALL, trap-CALL: 0 and the filter installed, -errno, or 1 when `what` is not one. */
static int install_kill(const char *what)
{
    static const struct {
        const char *name;
        long nr;
    } calls[] = {
        {"timer_create", SYS_timer_create},
        {"timer_settime", SYS_timer_settime},
        {"process_vm_readv", SYS_process_vm_readv},
        {"kill", SYS_kill},
        {"memfd_create", SYS_memfd_create},
#ifdef SYS_clone3
        {"clone3", SYS_clone3},
#endif
        {"socket", SYS_socket},
        {"perf_event_open", SYS_perf_event_open},
        {"pidfd_open", 434 /* SYS_pidfd_open, on every architecture */},
        {"sigprof", -1},
    };
    uint32_t action;
    if (strncmp(what, "kill-", 5) == 0)
        action = SECCOMP_RET_KILL_PROCESS;
    else if (strncmp(what, "trap-", 5) == 0)
        action = SECCOMP_RET_TRAP;
    else
        return 1;
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
        if (strcmp(what + 5, calls[i].name) == 0)
            return calls[i].nr < 0 ? install_sigprof(action) : install_action(calls[i].nr, action);
    return 1;
}

int main(int argc, char **argv)
{
    int first = 2;
    for (; first < argc && strchr(argv[first], '=') != NULL; first++)
        putenv(argv[first]);
    int known =
        argc > 1 && (strcmp(argv[1], "perf_event_open") == 0 || strcmp(argv[1], "execve") == 0 ||
                     strcmp(argv[1], "sigprof") == 0 || strncmp(argv[1], "kill-", 5) == 0 ||
                     strncmp(argv[1], "trap-", 5) == 0);
    if (!known || first >= argc) {
        fprintf(stderr, "usage: refuse perf_event_open|execve|sigprof|kill-CALL|trap-CALL "
                        "[VAR=VALUE]... COMMAND [ARG...]\n");
        return 2;
    }
    int rc = strncmp(argv[1], "kill-", 5) == 0 || strncmp(argv[1], "trap-", 5) == 0
                 ? install_kill(argv[1])
             : strcmp(argv[1], "sigprof") == 0 ? install_sigprof(SECCOMP_RET_ERRNO | EPERM)
             : strcmp(argv[1], "execve") == 0
                 ? install(SYS_execve, SYS_execveat, EPERM, 1, (uint64_t)(uintptr_t)argv[first])
                 : install(SYS_perf_event_open, -1, EACCES, 0, 0);
    if (rc == 1) {
        fprintf(stderr, "refuse: %s: not a call this launcher knows\n", argv[1]);
        return 2;
    }
    if (rc != 0) {
        fprintf(stderr, "refuse: cannot install the seccomp filter: %s\n", strerror(-rc));
        return 126;
    }
    execvp(argv[first], argv + first); /* a path: the very pointer execve is given */
    fprintf(stderr, "refuse: %s: %s\n", argv[first], strerror(errno));
    return 127;
}
