/* target.c — what /proc and a pidfd say of a target process: whether it is there, how it
 * ended, whether a thread of it other than a zombie main thread still runs; and the nice
 * value ospreyd's threads take beside it; its command name. Shared by the ring collector
 * (ospreyd.c) and the attach collector (attach.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ospd.h"
#include "ospd_target.h"

/* /proc/<pid>/stat into `buf`: the fields after comm (from the state, field 3), or NULL when
 * the process is gone. */
static char *read_stat(int32_t pid, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* comm may itself contain ')' */
    if (p == NULL || p[1] != ' ' || p[2] == '\0')
        return NULL;
    return p + 2;
}

int32_t ospd_target_parent(int32_t pid)
{
    char buf[4096];
    const char *fields = read_stat(pid, buf, sizeof buf);
    int parent = 0;
    char state;
    if (fields == NULL || sscanf(fields, "%c %d", &state, &parent) != 2 || parent < 0)
        return 0;
    return parent;
}

char ospd_target_state(int32_t pid, int *exit_code)
{
    char buf[4096];
    *exit_code = -1;
    const char *fields = read_stat(pid, buf, sizeof buf);
    if (fields == NULL)
        return 0;
    char state = fields[0];
    /* Fields after comm start at field 3 (state); field 52 is the 50th of them. */
    int field = 3;
    for (const char *q = fields; *q != '\0'; q++) {
        if (*q == ' ' && ++field == 52) {
            char *end;
            long v = strtol(q + 1, &end, 10);
            if (end != q + 1 && v >= 0 && v <= 0xffff)
                *exit_code = (int)v;
            break;
        }
    }
    return state;
}

/* PIDFD_GET_INFO (Linux 6.15 and later): a pidfd keeps the wait status of its process after
 * the process is reaped, which closes the race with a parent that reaps its child before
 * /proc can be read. Declared here because older kernel headers do not have it. */
struct ospd_pidfd_info {
    uint64_t mask, cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    int32_t exit_code;
};
_Static_assert(sizeof(struct ospd_pidfd_info) == 64, "PIDFD_INFO_SIZE_VER0");
#define OSPD_PIDFD_INFO_EXIT (UINT64_C(1) << 3)
#define OSPD_PIDFD_GET_INFO  _IOWR(0xFF, 11, struct ospd_pidfd_info)

/* The wait status the pidfd knows, or -1 (old kernel, or not known yet). */
int ospd_target_pidfd_status(int pidfd)
{
    if (pidfd < 0)
        return -1;
    struct ospd_pidfd_info info = {.mask = OSPD_PIDFD_INFO_EXIT};
    if (ioctl(pidfd, OSPD_PIDFD_GET_INFO, &info) != 0 || !(info.mask & OSPD_PIDFD_INFO_EXIT))
        return -1;
    return info.exit_code;
}

/* Whether a thread of the process other than a zombie main thread is still alive (a main
 * thread that called pthread_exit stays a zombie while the others run). */
bool ospd_target_threads_alive(int32_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return false;
    bool alive = false;
    for (struct dirent *e; !alive && (e = readdir(dir)) != NULL;) {
        int tid = atoi(e->d_name);
        if (tid <= 0 || tid == pid)
            continue;
        char stat[96], buf[512];
        snprintf(stat, sizeof stat, "/proc/%d/task/%d/stat", (int)pid, tid);
        int fd = open(stat, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        alive = p != NULL && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
    }
    closedir(dir);
    return alive;
}

int ospd_target_maps_ring(int32_t pid, const char *ring)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    const char *name = ring[0] == '/' ? ring + 1 : ring;
    char line[4096 + 256]; /* a path of up to OSP_MAX_PATH bytes and the fields before it */
    int found = -1;
    while (found != 1 && fgets(line, sizeof line, f) != NULL)
        found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

int ospd_target_nice(int32_t pid)
{
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)pid);
    if (errno != 0) {
        errno = 0;
        nice = getpriority(PRIO_PROCESS, 0);
        if (errno != 0)
            nice = 0;
    }
    return nice;
}

int ospd_sched_self(int nice, uint64_t slice_ns)
{
    struct { /* struct sched_attr, not in glibc's headers */
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
    } attr = {.size = 48, .policy = 0 /* SCHED_OTHER */};
    attr.nice = nice < -20 ? -20 : nice > 19 ? 19 : nice;
    attr.runtime = slice_ns;
    return syscall(SYS_sched_setattr, 0, &attr, 0u) == 0 ? 0 : -1;
}

char *ospd_target_comm(int32_t pid)
{
    char path[64], name[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, name, sizeof name - 1);
    close(fd);
    while (n > 0 && name[n - 1] == '\n')
        n--;
    return n > 0 ? ospd_utf8_sanitize(name, (size_t)n) : NULL;
}
