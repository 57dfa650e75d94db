/* switches.c — the kernel's context-switch records of the program's threads, opened at boot
 * for ospreyd ("Waits from the kernel" in proto/osp_ring.h).
 *
 * Owns opening one software dummy event per CPU on the booting thread, with context_switch
 * and inherit, so that every thread the program starts afterwards is covered, and the
 * descriptors' lifetime in the program: they exist only between boot and ospreyd's start,
 * which takes them over (spawn.c hands them on as fds 4..); the shim then closes its copies,
 * so the program holds no descriptor of ours. Nothing here runs in a signal handler.
 *
 * DESIGN. The kernel knows exactly when each thread blocked, woke and was preempted; the
 * shim only sees the instants its signals land. The records cost the program a few hundred
 * nanoseconds per context switch (the kernel writes 24 bytes into a ring), no signal and no
 * system call of ours. Opening them on the process itself needs no ptrace rights, only
 * perf_event_paranoid <= 2 (or CAP_PERFMON); where they are refused (Debian's default of 3,
 * many containers, seccomp), nothing is said here: the shim times waits itself, and the
 * profile says which way its waits were timed.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"
#include "osp_ring.h"

int osp__switches_open(int *fds, int max, uint32_t pages, int *refused)
{
    *refused = EINVAL;
    if (osp__forbidden & OSP__FORBIDS_PERF) {
        *refused = EPERM; /* a filter kills the call: as one that fails it */
        return 0;
    }
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    if (cpus <= 0 || cpus > max || cpus > (long)OSP_MAX_SWITCH_FDS)
        return 0;
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_SW_DUMMY;
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    attr.sample_id_all = 1;
    attr.context_switch = 1;
    attr.inherit = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    attr.watermark = 1;
    /* ospreyd reads a ring at a quarter full; an exec'd image opens its own events; threads
     * only inherit them: a forked child costs and sends nothing. */
    attr.wakeup_watermark = pages * 4096u / 4;
    attr.remove_on_exec = 1;
    attr.inherit_thread = 1;
    int n = 0;
    for (long cpu = 0; cpu < cpus; cpu++) {
        long fd = osp__sys(SYS_perf_event_open, (long)&attr, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0 && errno == EINVAL && attr.remove_on_exec) {
            /* Before Linux 5.13: children inherit the events too, and ospreyd ignores their
             * records (another pid), as it does another image's. */
            attr.remove_on_exec = 0;
            attr.inherit_thread = 0;
            fd = osp__sys(SYS_perf_event_open, (long)&attr, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        }
        if (fd < 0 && (errno == ENODEV || errno == ENOENT))
            continue; /* an offline CPU */
        if (fd < 0) {
            *refused = errno;
            osp__switches_close(fds, n);
            return 0;
        }
        fds[n++] = (int)fd;
    }
    /* The kernel allocates a ring, and keeps records, only once one is mapped: map each now,
     * so that nothing between boot and ospreyd's own mapping is lost. */
    void *maps[OSP_MAX_SWITCH_FDS];
    /* The full ring, else a quarter of it (over the user's locked-memory limit for perf
     * buffers, perf_event_mlock_kb): ospreyd maps what it finds (the first page says). */
    for (uint32_t want = pages; want >= pages / 4 && want > 0; want /= 4) {
        size_t size = (size_t)(1 + want) * (size_t)sysconf(_SC_PAGESIZE);
        int i = 0;
        for (; i < n; i++) {
            maps[i] = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
            if (maps[i] == MAP_FAILED)
                break;
        }
        if (i == n) {
            osp__switch_maps_set(maps, n, size);
            *refused = 0;
            return n;
        }
        for (int j = 0; j < i; j++)
            munmap(maps[j], size);
    }
    osp__switches_close(fds, n);        /* no ring at all: no records */
    *refused = n > 0 ? ENOMEM : ENOENT; /* no CPU online gave one */
    return 0;
}

void osp__switches_close(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            osp__sys(SYS_close, fds[i], 0, 0, 0, 0);
}
