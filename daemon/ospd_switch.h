/* ospd_switch.h — the kernel's context-switch records of the target (switch-source.c), which
 * feed waits.c. ospreyd.c maps the rings at start, drains them with the slot rings, and asks
 * the threads waits.c names for their wait's site.
 */
#ifndef OSPD_SWITCH_H
#define OSPD_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ospd.h"

struct ospd_switch_ring {
    int fd;
    void *map;
    size_t size;
};

struct ospd_switches {
    struct ospd_switch_ring rings[OSP_MAX_SWITCH_FDS];
    int count;
    void *held; /* records read, not yet handed on (newest of the round) */
    uint32_t held_count, held_cap;
    uint64_t lost; /* PERF_RECORD_LOST: records the kernel could not write */
};

/* Map the rings of the `count` descriptors `fds` (--switch-fd). 0, or -errno (every
 * descriptor closed then). */
int ospd_switches_attach(struct ospd_switches *sw, const int *fds, int count);
/* The rings of `fds` mapped and kept while a greeting is taken (forks.c): mapped while the
 * process lives, a ring is the one its shim made; once it has ended or exec'd, the kernel
 * makes another, after an RCU grace period (15-23 ms here) with the mapper's memory map
 * locked. Held, the session's own mapping of it is quick. NULL where one could not be. */
struct ospd_switch_hold {
    void *maps[OSP_MAX_SWITCH_FDS];
    size_t sizes[OSP_MAX_SWITCH_FDS];
};
void ospd_switches_hold(struct ospd_switch_hold *h, const int *fds, int count);
void ospd_switches_release(struct ospd_switch_hold *h);
void ospd_switches_close(struct ospd_switches *sw);
/* Read every ring and hand the target's switches to waits.c in time order; those within
 * 100 us of now_ns wait for the next call unless `all`. */
void ospd_switches_drain(struct ospd_switches *sw, struct ospd_collector *c, uint64_t now_ns,
                         bool all);
/* May thread tid of pid be asked for its site? Not while it blocks in read or write on a
 * socket (its /proc syscall and fd say so): a timeout option there makes any handler cut the
 * call short with EINTR. true when it cannot tell. */
bool ospd_switches_may_ask(int32_t pid, int32_t tid);
/* A SIGPROF of ours (SI_QUEUE, the ring's cookie) to thread tid of pid. 0 or -errno. */
int ospd_switches_ask(int32_t pid, int32_t tid, uint64_t cookie);

#endif
