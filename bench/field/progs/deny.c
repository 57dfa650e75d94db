/* deny.c — runs a command under a seccomp filter that forbids one thing, as a sandbox does: a
 * raw BPF filter (no libseccomp), inherited by the command and everything it starts.
 *
 * Usage: deny WHAT COMMAND [ARG...], WHAT one of
 *   execve, socket, memfd_create, perf_event_open, process_vm_readv, timer_create  that call
 *       fails with EPERM (execve: but for this launcher's own exec of COMMAND, the path at the
 *       very address argv holds; execveat always);
 *   sigprof   rt_sigaction(SIGPROF, …) with a new action fails with EPERM;
 *   kill-timer_create  timer_create kills the process (SECCOMP_RET_KILL_PROCESS), as a strict
 *       profile does.
 * Exit status 126 when the filter cannot be installed, 127 when COMMAND cannot be run, else
 * COMMAND's. no_new_privs is set first. (bench/field/round7-sandbox.sh)
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
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

#define LOAD(what)     (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (what))
#define RET(what)      (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, (what))
#define IF_EQ(k, t, f) (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define NR             offsetof(struct seccomp_data, nr)
#define ARG0           offsetof(struct seccomp_data, args[0])
#define ARG1_LOW       offsetof(struct seccomp_data, args[1])
#define ARG1_HIGH      (offsetof(struct seccomp_data, args[1]) + 4)
#define ALLOW          SECCOMP_RET_ALLOW
#define EPERM_         (SECCOMP_RET_ERRNO | EPERM)

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: deny WHAT COMMAND [ARG...]\n");
        return 2;
    }
    const char *what = argv[1];
    uintptr_t own = (uintptr_t)argv[2];
    struct sock_filter head[] = {LOAD(offsetof(struct seccomp_data, arch)), IF_EQ(ARCH, 1, 0),
                                 RET(ALLOW), LOAD(NR)};
    struct sock_filter body[16];
    int n = 0;
    if (strcmp(what, "sigprof") == 0) {
        /* rt_sigaction(SIGPROF, act != NULL, …) refused */
        body[n++] = IF_EQ(SYS_rt_sigaction, 1, 0);
        body[n++] = RET(ALLOW);
        body[n++] = LOAD(ARG0);
        body[n++] = IF_EQ(SIGPROF, 1, 0);
        body[n++] = RET(ALLOW);
        body[n++] = LOAD(ARG1_LOW);
        body[n++] = IF_EQ(0, 1, 0);
        body[n++] = RET(EPERM_);
        body[n++] = LOAD(ARG1_HIGH);
        body[n++] = IF_EQ(0, 1, 0);
        body[n++] = RET(EPERM_);
        body[n++] = RET(ALLOW);
    } else if (strcmp(what, "execve") == 0) {
        body[n++] = IF_EQ(SYS_execveat, 0, 1);
        body[n++] = RET(EPERM_);
        body[n++] = IF_EQ(SYS_execve, 1, 0);
        body[n++] = RET(ALLOW);
        body[n++] = LOAD(ARG0);
        body[n++] = IF_EQ((uint32_t)own, 1, 0);
        body[n++] = RET(EPERM_);
        body[n++] = LOAD(ARG0 + 4);
        body[n++] = IF_EQ((uint32_t)((uint64_t)own >> 32), 1, 0);
        body[n++] = RET(EPERM_);
        body[n++] = RET(ALLOW);
    } else {
        static const struct {
            const char *name;
            long nr;
            uint32_t action;
        } calls[] = {
            {"socket", SYS_socket, EPERM_},
            {"memfd_create", SYS_memfd_create, EPERM_},
            {"perf_event_open", SYS_perf_event_open, EPERM_},
            {"process_vm_readv", SYS_process_vm_readv, EPERM_},
            {"timer_create", SYS_timer_create, EPERM_},
            {"kill-timer_create", SYS_timer_create, SECCOMP_RET_KILL_PROCESS},
        };
        size_t i = 0;
        while (i < sizeof calls / sizeof *calls && strcmp(calls[i].name, what) != 0)
            i++;
        if (i == sizeof calls / sizeof *calls) {
            fprintf(stderr, "deny: %s: not a case this launcher knows\n", what);
            return 2;
        }
        body[n++] = IF_EQ((uint32_t)calls[i].nr, 0, 1);
        body[n++] = RET(calls[i].action);
        body[n++] = RET(ALLOW);
    }
    struct sock_filter code[4 + 16];
    memcpy(code, head, sizeof head);
    memcpy(code + 4, body, sizeof(struct sock_filter) * (size_t)n);
    struct sock_fprog prog = {.len = (unsigned short)(4 + n), .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        fprintf(stderr, "deny: cannot install the filter: %s\n", strerror(errno));
        return 126;
    }
    execvp(argv[2], argv + 2);
    fprintf(stderr, "deny: %s: %s\n", argv[2], strerror(errno));
    return 127;
}
