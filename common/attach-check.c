/* attach-check.c — whether this process may attach to another, and the one line that says
 * why not: the kernel's own ptrace check (Yama's ptrace_scope included), and the words for a
 * refused perf event or ptrace (no such process, a kernel thread or a zombie, another user's,
 * perf_event_paranoid, a setuid or undumpable program). ospreyd's attach asks before it opens
 * anything; osprey attach asks before it checks where its outputs go, so the more basic refusal
 * comes first.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ospc.h"

static int read_int_file(const char *path, long *out)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -errno;
    int ok = fscanf(f, "%ld", out) == 1;
    fclose(f);
    return ok ? 0 : -EINVAL;
}

/* The owner of pid from /proc/PID/status ("Uid: real effective ..."), or -1. */
static long owner_of(int32_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    long uid = -1;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "Uid: %*d %ld", &uid) == 1)
            break;
    fclose(f);
    return uid;
}

/* For a pid the kernel refuses with ESRCH: whether it is there all the same, without memory to
 * read. 'K' a kernel thread (PF_KTHREAD among /proc/PID/stat's flags: kthreadd, a kworker),
 * 'Z' a process that ended and was not reaped yet, 0 no such process (or one that is neither);
 * its command into comm. */
static char memoryless(int32_t pid, char *comm, size_t comm_size)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    char *read = fgets(line, sizeof line, f); /* one line */
    fclose(f);
    /* "PID (COMM) STATE PPID PGRP SESSION TTY TPGID FLAGS ...": COMM may hold anything, so the
     * fields are read after its last ')'. */
    char *open = read != NULL ? strchr(line, '(') : NULL;
    char *close = open != NULL ? strrchr(open, ')') : NULL;
    char state;
    unsigned long flags;
    if (close == NULL || sscanf(close + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
        return 0;
    snprintf(comm, comm_size, "%.*s", (int)(close - open - 1), open + 1);
    if (flags & 0x00200000ul) /* PF_KTHREAD */
        return 'K';
    return state == 'Z' ? 'Z' : 0;
}

/* Who may attach is who may ptrace the process: the kernel's own check (ptrace's attach mode,
 * Yama's ptrace_scope included), which process_vm_readv makes before it reads anything, here
 * at an address never mapped (EFAULT: allowed). The perf events' own check is a weaker one
 * (read mode, no Yama). 0, or the errno of the refusal. */
int ospc_ptrace_refused(int32_t pid)
{
    char byte;
    struct iovec local = {&byte, 1}, remote = {NULL, 1};
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) >= 0 || errno == EFAULT || errno == ENOSYS)
        return 0;
    return errno;
}

/* One line saying why the kernel refused an event on pid with errno e (ptrace: refused by
 * ptrace's check, where perf_event_paranoid plays no part). */
void ospc_attach_refusal(int32_t pid, int e, bool ptrace, char *err, size_t err_size)
{
    long paranoid = 2, scope = 0;
    read_int_file("/proc/sys/kernel/perf_event_paranoid", &paranoid);
    if (geteuid() != 0)
        read_int_file("/proc/sys/kernel/yama/ptrace_scope", &scope);
    long uid = owner_of(pid);
    char comm[64] = "", there = e == ESRCH ? memoryless(pid, comm, sizeof comm) : 0;
    if (there == 'K')
        snprintf(err, err_size,
                 "process %d (%s) is a kernel thread: it runs no user code to sample", (int)pid,
                 comm);
    else if (there == 'Z')
        snprintf(err, err_size,
                 "process %d (%s) has ended (its parent has not reaped it yet): nothing is left "
                 "to sample",
                 (int)pid, comm);
    else if (e == ESRCH)
        snprintf(err, err_size, "no process %d", (int)pid);
    else if ((e == EACCES || e == EPERM) && paranoid > 2 && !ptrace)
        snprintf(err, err_size,
                 "perf events are not allowed here (kernel.perf_event_paranoid is %ld; attaching "
                 "needs 2 or less, or CAP_PERFMON)",
                 paranoid);
    else if ((e == EACCES || e == EPERM) && uid >= 0 && uid != (long)geteuid())
        snprintf(err, err_size,
                 "process %d belongs to another user (uid %ld); attaching to it needs "
                 "CAP_SYS_PTRACE, as ptrace does",
                 (int)pid, uid);
    else if ((e == EACCES || e == EPERM) && scope > 0)
        snprintf(err, err_size,
                 "not allowed to attach to process %d: kernel.yama.ptrace_scope is %ld (%s); "
                 "attaching needs what ptrace needs",
                 (int)pid, scope,
                 scope == 1 ? "only a parent may trace a process, or CAP_SYS_PTRACE"
                            : "only CAP_SYS_PTRACE may");
    else if (e == EACCES || e == EPERM)
        snprintf(err, err_size,
                 "not allowed to attach to process %d (%s): it may be a setuid program or not "
                 "dumpable; attaching needs what ptrace needs (CAP_SYS_PTRACE)",
                 (int)pid, strerror(e));
    else if (e == ENOENT || e == ENOSYS || e == EOPNOTSUPP)
        snprintf(err, err_size, "this kernel has no software perf events (%s)", strerror(e));
    else
        snprintf(err, err_size, "cannot open a perf event on process %d: %s", (int)pid,
                 strerror(e));
}
