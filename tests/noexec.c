/* noexec.c — run a program under a seccomp filter that forbids execve from then on.
 *
 * `noexec [VAR=VALUE]... PROGRAM ARGS...` sets no_new_privs, installs a filter (raw BPF, no
 * libseccomp) that fails every execve and execveat with EPERM but this launcher's own execve of
 * PROGRAM (the one whose path is at the very address argv[1] holds), and execs PROGRAM with
 * VAR=VALUE added to its environment (LD_PRELOAD, OSPREY_RING: the launcher itself is not
 * profiled): the program and every process it starts run sandboxed, as a program whose sandbox
 * forbids execve does. The profiler's shim cannot start ospreyd there; a collector started apart
 * (`ospreyd --attach-ring NAME`) profiles it all the same (tests/e2e-attach-ring.sh).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NOEXEC_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NOEXEC_ARCH AUDIT_ARCH_AARCH64
#else
#error "noexec.c: no audit architecture for this CPU"
#endif

/* The low and high words of a system call's first argument (little-endian). */
#define ARG0_LOW  offsetof(struct seccomp_data, args[0])
#define ARG0_HIGH (offsetof(struct seccomp_data, args[0]) + 4)

int main(int argc, char **argv)
{
    int first = 1;
    for (; first < argc && strchr(argv[first], '=') != NULL; first++)
        putenv(argv[first]);
    if (first >= argc) {
        fprintf(stderr, "usage: noexec [VAR=VALUE]... PROGRAM [ARGS...]\n");
        return 2;
    }
    uint64_t path = (uint64_t)(uintptr_t)argv[first];
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NOEXEC_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM), /* another ABI: nothing */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LOW),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)path, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_HIGH),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(path >> 32), 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {.len = sizeof filter / sizeof *filter, .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) {
        fprintf(stderr, "noexec: cannot install the filter: %s\n", strerror(errno));
        return 125;
    }
    execv(argv[first], argv + first);
    fprintf(stderr, "noexec: %s: %s\n", argv[first], strerror(errno));
    return 127;
}
