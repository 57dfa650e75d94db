/* switch-refused.c — why the kernel refused the target its context-switch records, for the
 * profile to say how its waits were timed.
 *
 * Owns turning the errno the shim's perf_event_open got at its start (the ring header's
 * switches_refused) into what refused it and how to allow it: the kernel's
 * perf_event_paranoid above 2 for a process without CAP_PERFMON (Debian's default of 3), a
 * seccomp filter (Docker's and Kubernetes' default profiles return EACCES), or the kernel
 * itself (no perf events, or a security module). Read once, at attach, from /proc: the
 * setting as it is then, and the target's own Seccomp and CapEff lines.
 *
 * DESIGN. The shim only records the errno: it runs in the program, which should not read
 * /proc files at its start for a line of the report. Both refusals give EACCES, so they are
 * told apart by what would refuse: a paranoid setting that refuses this process refuses it
 * with or without a filter (and must be changed first); otherwise a process under a seccomp
 * filter had it refused by the filter.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ospd.h"

#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT   38

/* The integer after `key` on a line of `path` ("Seccomp:\t2"), in `base`; -1 when absent. */
static int64_t proc_field(const char *path, const char *key, int base)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    char line[256];
    int64_t value = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, key, n) != 0)
            continue;
        unsigned long long v;
        if (sscanf(line + n, base == 16 ? "%llx" : "%llu", &v) == 1 && v <= INT64_MAX)
            value = (int64_t)v;
        break;
    }
    fclose(f);
    return value;
}

const char *ospd_refused_by(int32_t err, int32_t paranoid, int64_t seccomp, int64_t caps)
{
    int privileged =
        caps > 0 &&
        (caps & ((INT64_C(1) << CAP_PERFMON_BIT) | (INT64_C(1) << CAP_SYS_ADMIN_BIT))) != 0;
    if (err != EACCES && err != EPERM)
        return "kernel";
    if (paranoid > 2 && !privileged)
        return "perf_event_paranoid";
    return seccomp == 2 ? "seccomp" : "kernel";
}

void ospd_switches_refused(struct ospd_waits *w, int32_t pid, int32_t err)
{
    w->refused_errno = err;
    w->refused_paranoid = INT32_MIN;
    int paranoid;
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
    if (f != NULL) {
        if (fscanf(f, "%d", &paranoid) == 1)
            w->refused_paranoid = paranoid;
        fclose(f);
    }
    char status[64];
    snprintf(status, sizeof status, "/proc/%d/status", (int)pid);
    int64_t seccomp = proc_field(status, "Seccomp:", 10);
    int64_t caps = proc_field(status, "CapEff:", 16);
    w->refused_by = ospd_refused_by(err, w->refused_paranoid, seccomp, caps);
}
