/* no-perf-attach.c — run a command with perf_event_open refused (EACCES), as the default
 * seccomp profiles of Docker and Kubernetes refuse it: `no-perf-attach osprey attach PID ...`
 * is an attach where perf events are not allowed and ptrace is (tests/e2e-attach-ptrace.sh).
 * The filter is inherited by everything the command starts (ospreyd); every other call is
 * allowed. Exit status 126 when the filter cannot be installed, else the command's.
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
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: no-perf-attach COMMAND [ARG...]\n");
        return 2;
    }
#ifdef ARCH
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof code / sizeof code[0]), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        fprintf(stderr, "no-perf-attach: cannot install the filter: %s\n", strerror(errno));
        return 126;
    }
#else
    fprintf(stderr, "no-perf-attach: no filter for this machine\n");
    return 126;
#endif
    execvp(argv[1], argv + 1);
    fprintf(stderr, "no-perf-attach: %s: %s\n", argv[1], strerror(errno));
    return 127;
}
