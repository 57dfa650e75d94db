/* proc-view.c — the numbers /proc gives the processes and threads ospreyd watches.
 *
 * A collector runs in its program's pid namespace: the pids the ring header, the greetings and
 * the context-switch records carry are that namespace's, and so are kill, pidfd_open and
 * process_vm_readv's. /proc is usually the same namespace's, but not always: `unshare --pid
 * --fork` without `--mount-proc`, firejail and some container runtimes keep the host's /proc,
 * where /proc/<namespace pid> is another process (the host's pid 1 for the namespace's). Here
 * that number is translated, once per process looked up: where /proc/self names getpid(), the
 * pid itself (one readlink, once a process, and nothing else); otherwise a pidfd of the
 * process, whose fdinfo's `Pid:` is the pid in the pid namespace of the /proc it is read
 * through (Linux 5.5; 0 there when that namespace does not see the process). Threads: a pidfd
 * of the thread (PIDFD_THREAD, Linux 6.9), else the `NSpid:` line of each thread of the
 * process's task/ directory. daemon/README.md, "A /proc of another pid namespace".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ospd.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#define OSPD_PIDFD_THREAD 0200 /* O_EXCL: a pidfd of the thread, not its process (Linux 6.9) */

/* 1 when this process's /proc is its own pid namespace's, 0 when not, -1 until asked.
 * ospreyd's forks keep its namespace, so a value once read stays true in them. */
static int proc_is_ours = -1;

bool ospd_proc_ours(void)
{
    if (proc_is_ours < 0) {
        char link[32];
        ssize_t n = readlink("/proc/self", link, sizeof link - 1);
        if (n > 0)
            link[n] = '\0';
        proc_is_ours = n > 0 && strtol(link, NULL, 10) == (long)getpid();
    }
    return proc_is_ours == 1;
}

/* The `Pid:` the fdinfo of pidfd `fd` gives, read through this /proc: > 0; 0 when this /proc
 * does not show the process; -1 when it cannot be read or the process has ended. */
static int32_t pidfd_shown(int fd)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    int info = open(path, O_RDONLY | O_CLOEXEC);
    if (info < 0)
        return -1;
    ssize_t n = read(info, text, sizeof text - 1);
    close(info);
    if (n <= 0)
        return -1;
    text[n] = '\0';
    const char *at = strstr(text, "\nPid:");
    if (at == NULL)
        return -1; /* a kernel before 5.5 */
    long pid = strtol(at + 5, NULL, 10);
    return pid > 0 && pid <= INT32_MAX ? (int32_t)pid : pid == 0 ? 0 : -1;
}

int32_t ospd_proc_pid(int32_t pid)
{
    if (pid <= 0)
        return -1;
    if (ospd_proc_ours())
        return pid;
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0u);
    if (fd < 0)
        return -1;
    int32_t shown = pidfd_shown(fd);
    close(fd);
    return shown;
}

int32_t ospd_proc_innermost_id(const char *status)
{
    int fd = open(status, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char text[2048];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    char *line = strstr(text, "\nNSpid:");
    if (line == NULL)
        return 0;
    line[strcspn(line + 1, "\n") + 1] = '\0';
    char *last = strrchr(line, '\t');
    long id = last != NULL ? strtol(last + 1, NULL, 10) : 0;
    return id > 0 && id <= INT32_MAX ? (int32_t)id : 0;
}

int32_t ospd_proc_tid(int32_t proc_pid, int32_t tid)
{
    if (tid <= 0 || proc_pid <= 0)
        return 0;
    if (ospd_proc_ours())
        return tid;
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)tid, OSPD_PIDFD_THREAD);
    if (fd >= 0) {
        int32_t shown = pidfd_shown(fd);
        close(fd);
        return shown > 0 ? shown : 0;
    }
    /* An older kernel: the thread of the process whose innermost id is tid. The process's
     * namespace is ours (it is the one the collector watches), so that id is unique in it. */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)proc_pid);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return 0;
    int32_t found = 0;
    for (struct dirent *e; found == 0 && (e = readdir(dir)) != NULL;) {
        long shown = strtol(e->d_name, NULL, 10);
        if (shown <= 0 || shown > INT32_MAX)
            continue;
        char status[96];
        snprintf(status, sizeof status, "/proc/%d/task/%ld/status", (int)proc_pid, shown);
        if (ospd_proc_innermost_id(status) == tid)
            found = (int32_t)shown;
    }
    closedir(dir);
    return found;
}

void ospd_proc_unseen(const struct ospd_collector *c)
{
    if (c->proc_pid > 0 || c->pid <= 0 || ospd_proc_ours() ||
        (kill(c->pid, 0) != 0 && errno != EPERM))
        return; /* shown, or gone already (the profile says how it ended) */
    fprintf(stderr,
            "osprey: ospreyd: process %d is not in this /proc (another pid namespace's, or none "
            "mounted): its name, maps and unwind tables cannot be read; its stacks follow frame "
            "pointers\n",
            (int)c->pid);
}
