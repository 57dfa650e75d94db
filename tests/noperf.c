/* noperf.c — runs a command with perf_event_open refused, as most machines refuse it to a
 * user: a seccomp filter that makes the call fail with EACCES (what Docker's and Kubernetes'
 * default profiles return), every other system call allowed.
 *
 * Usage: noperf COMMAND [ARG...]   (exec'd with the filter in place: it and every process it
 * starts inherit it; 126 when the filter cannot be installed, 127 when COMMAND cannot be run.)
 *
 * A raw BPF filter, so the tests need no libseccomp: check the architecture (a call made
 * through another ABI, such as x86_64's x32 or i386 numbers, is refused too: its numbers are
 * not ours), then the number. no_new_privs is set first, as an unprivileged filter needs.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NOPERF_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NOPERF_ARCH AUDIT_ARCH_AARCH64
#else
#error "noperf: no audit architecture for this CPU"
#endif

static int refuse_perf_events(void)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NOPERF_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
        /* x32 numbers carry bit 30 on x86_64's audit architecture. */
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 2, 0),
#else
        BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof code / sizeof code[0]),
                              .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -errno;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return -errno;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: noperf COMMAND [ARG...]\n");
        return 2;
    }
    int err = refuse_perf_events();
    if (err != 0) {
        fprintf(stderr, "noperf: cannot install the seccomp filter: %s\n", strerror(-err));
        return 126;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "noperf: %s: %s\n", argv[1], strerror(errno));
    return 127;
}
