/* ospd_perf_source.h — the second source of the collector: the kernel's perf events on every
 * thread of a process ospreyd attached to (perf-source.c). Samples (user registers and a
 * copy of the user stack) are walked by the unwind rows ospreyd builds and fed to the
 * collector as the shim's are; the threads' context switches feed waits.c.
 */
#ifndef OSPD_PERF_SOURCE_H
#define OSPD_PERF_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "ospd.h"

#define OSPD_PERF_STACK_BYTES (16u << 10) /* of user stack copied with each sample */

/* One CPU's ring: every event of the target's on that CPU writes into it. */
struct ospd_perf_ring {
    int fd; /* the event that owns the ring; the others of the CPU are redirected to it */
    void *map;
    size_t map_size;
};

/* A switch or the site stack of a switch out, held until the records around it are read. */
struct ospd_perf_held {
    uint64_t t_ns;
    int64_t stack; /* a site: its stack; a switch: -1 */
    uint32_t thread;
    int32_t tid;
    bool out, preempted;
};

struct ospd_perf_source {
    int32_t pid;
    uint32_t rate_hz;
    struct ospd_perf_ring *rings; /* by CPU, fd -1 for a CPU that has none */
    uint32_t ring_count;
    int *fds; /* every event */
    uint32_t fd_count, fds_cap;
    int *clock_fds; /* of those, the cpu-clock events (not owned: fds holds them too) */
    uint32_t clock_fd_count, clock_fds_cap;
    uint64_t *switch_ids; /* the site events' ids, sorted */
    uint32_t switch_id_count, switch_ids_cap;
    bool waits;         /* the switch records and their sites were allowed */
    bool user_only;     /* perf_event_paranoid allowed user-space samples only */
    bool refused;       /* ospd_perf_open failed: perf_event_open itself was refused */
    const void *tables; /* the unwind rows (proto/osp_unwind.h), or NULL */
    uint64_t tables_size;
    int64_t *site_of; /* per collector thread: the stack of its last switch out, or -1 */
    uint32_t site_cap;
    struct ospd_perf_held *held;
    uint32_t held_count, held_cap;
    uint8_t *buffer; /* one record, copied out of its ring whole */
    uint64_t lost, foreign, samples, records;
};

/* Open the events on every thread of pid (/proc/PID/task; a thread started later inherits
 * its creator's), one per CPU each, at rate_hz, disabled. Returns 0, or a negative errno with one
 * line in err saying why (no such process, not allowed and by what, perf events disabled). */
int ospd_perf_open(struct ospd_perf_source *s, int32_t pid, uint32_t rate_hz, char *err,
                   size_t err_size);
/* Start and stop counting on every thread (and the threads they started). */
void ospd_perf_enable(struct ospd_perf_source *s, bool on);
/* Read every ring into the collector; the switches within 100 us of now_ns wait for the next
 * call (a thread's switch out and in may be in two CPUs' rings) unless `all`. */
void ospd_perf_drain(struct ospd_perf_source *s, struct ospd_collector *c, uint64_t now_ns,
                     bool all);
/* The CPU time, in ns, the kernel's cpu-clock events counted on every thread (and the threads
 * they started): what the samples should add up to, a period each. */
uint64_t ospd_perf_clock_ns(const struct ospd_perf_source *s);
/* The collector thread of tid of process pid, registered at its first sample: fiber 0 and
 * "main" for the main thread, else the tid and the thread's name, as the preload library
 * registers them. Its index, or a negative errno. */
int64_t ospd_attach_thread(struct ospd_collector *c, int32_t pid, int32_t tid);
/* Close every event: nothing of ours is left on the target's threads. */
void ospd_perf_close(struct ospd_perf_source *s);

#endif /* OSPD_PERF_SOURCE_H */
