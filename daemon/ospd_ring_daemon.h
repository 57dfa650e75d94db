/* ospd_ring_daemon.h — the ring source's state (struct ospd_daemon) and what its files share:
 * ring-attach.c maps and validates the shim's ring and answers it, ring-source.c drains it
 * and decides when the profile ends. Internal to daemon/.
 */
#ifndef OSPD_RING_DAEMON_H
#define OSPD_RING_DAEMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "ospd.h"
#include "ospd_forks.h"
#include "ospd_ring_source.h"
#include "ospd_session.h"
#include "ospd_switch.h"
#include "ospd_unwind_source.h"

struct ospd_daemon {
    struct ospd_ring_options o;           /* the command line's */
    char written_path[OSP_MAX_PATH + 64]; /* where the raw file went */
    struct osp_ring_header *header;
    const uint8_t *data;
    uint64_t data_size;   /* validated at attach; never reread from the shared header */
    uint32_t code_ranges; /* the unwinder's ranges when ospd_maps_code last looked */
    uint64_t tail;        /* our consumer index; the shared copy is only ever written */
    size_t map_size;
    struct ospd_collector collector;
    struct ospd_unwinder unwinder; /* the unwind tables for the target's frameless code */
    struct ospd_switches switches; /* the kernel's context switches, for the waits */
    uv_poll_t switch_polls[OSP_MAX_SWITCH_FDS];
    struct ospd_forks forks; /* the target's forked children greet us here */

    uv_loop_t *loop;
    uv_poll_t tick; /* on timer_fd: the sampling tick, at intervals under TICK_MS_MIN_NS */
    int timer_fd;
    uv_timer_t tick_ms;   /* the same tick at longer intervals: the loop's own timeout */
    uint64_t deadline_ns; /* the tick's next absolute deadline */
    uint8_t *slots;       /* the slot table, or NULL */
    uint32_t slot_count, slot_ring_size;
    uint64_t watch[OSP_ATTENTION_WORDS]; /* slots to look at: running, or holding samples */
    uint64_t drain_ns, drain_max_ns;     /* the tick: how often the rings are read */
    uint64_t drain_ceil_ns;              /* the longest drain interval the fill may reach */
    uint32_t fullest;                    /* the fullest ring at the last read, in 1/256ths */
    bool wakes;           /* the shim wakes us at half full (OSP_RING_WAKES): the tick may nap */
    uint64_t blocks_seen; /* waits.blocks at the last tick: none since, the tick may nap */
    struct ospd_watch watch_pid; /* the target's pidfd */
    uv_signal_t sigterm;
    uv_signal_t sigurg; /* the shim's "read the rings now" at exit */
    uint64_t attach_mono_ns;
    uint64_t next_liveness_ns;
    bool finished;
    int exit_code; /* of ospreyd itself */
    /* The raw file being written on the pool (o.publish_apart): what the write says back. */
    uv_work_t publish;
    bool publishing;
    int publish_rc;
    bool beside;
    enum ospd_exit_status publish_status;
    struct ospc_atomic pending;
    char publish_err[OSPD_ERROR_SIZE + OSP_MAX_PATH];
};

/* ring-attach.c */
/* Rings mapped at once in one collector process (follow.c keeps its images below it). */
#define OSPD_MAX_RING_MAPS 64
/* Did the SIGBUS handler find the target shrank the ring mapped at `map` under the mapping? */
bool ospd_ring_truncated(const void *map);
/* Unmap the ring at `map` (its SIGBUS entry freed). */
void ospd_ring_unmap(void *map, size_t size);
/* The shim waits on daemon_state as a futex: wake it. */
void ospd_ring_wake_shim(struct osp_ring_header *h);
/* Publish a failure to the shim: daemon_error first, then FAILED. */
void ospd_ring_publish_failure(struct osp_ring_header *h, const char *message);
/* Map the ring named in the options, validate it and publish ATTACHED: 0 or a negative errno. */
int ospd_ring_daemon_attach(struct ospd_daemon *d);
/* The target's exe from /proc, used when no image is flagged main. */
void ospd_ring_read_exe_fallback(struct ospd_daemon *d);

#endif
