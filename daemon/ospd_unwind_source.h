/* ospd_unwind_source.h — ospreyd's unwind tables for one target (unwind-source.c): the
 * target's executable mappings found in /proc/PID/maps, their rows built on libuv's thread
 * pool and published in the shared object the shim's handler reads.
 */
#ifndef OSPD_UNWIND_SOURCE_H
#define OSPD_UNWIND_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "ospd.h"
#include "ospd_unwind.h"

#if defined(__x86_64__)
#define OSPD_OWN_MACHINE 62u /* EM_X86_64 */
#elif defined(__aarch64__)
#define OSPD_OWN_MACHINE 183u /* EM_AARCH64 */
#else
#define OSPD_OWN_MACHINE 0u
#endif

struct ospd_unwind_range {
    uint64_t start, end;
};

struct ospd_unwinder {
    bool attached;
    uv_loop_t *loop;
    int32_t pid; /* the number /proc gives the target (ospd_proc_pid); 0: /proc shows none */
    int fd;
    void *map;
    size_t map_size;
    struct ospd_unwind_region region;
    /* The rows' ELF machine (the shim's header). Another than ospreyd's own means a target
     * emulated by qemu-user: the host's maps show its code without execute permission (the
     * emulator translates it) and the vDSO there is the host's. */
    uint16_t machine;
    bool emulated;
    struct ospd_unwind_range *ranges; /* every range seen: published, building or failed */
    uint32_t range_count, ranges_cap;
    uint32_t stacks_checked; /* interned stacks already looked at */
    uint32_t pending;        /* builds queued (and their copies, below) */
    uint32_t copying;        /* large images' rows being copied on the pool (copy_work) */
    int worker_nice;         /* the nice value builds run at: the target's */
    uint64_t last_scan_ns;
    bool warned_full;
    /* For the raw file's collector section. */
    uint32_t images_ready, images_failed, images_cached, scans;
    char cache_dir[4096]; /* where rows are kept between runs, or "" */
    uint64_t rows, longest_build_ms;
    /* CLOCK_MONOTONIC when no build was pending for the first time: every object mapped at
     * attach had its rows (0: not yet). Samples before it followed frame pointers only. */
    uint64_t ready_mono_ns;
    /* The ring's name (the shim's memfd, in the target's maps), when the tables are for the
     * image that mapped it: a scan that finds the maps without it (the target exec'd into
     * another image, or ended) builds nothing. NULL: no such check (attach.c's). */
    const char *ring_name;
};

/* Map the shim's table object, the memfd it handed over as descriptor fd (--unwind-fd; -1
 * for none), which is ours from then on; builds run at nice value worker_nice (the target's).
 * Returns 0, or a negative errno (no tables: the stacks follow frame pointers). */
int ospd_unwinder_attach(struct ospd_unwinder *u, uv_loop_t *loop, int fd, int32_t proc_pid,
                         int worker_nice);
/* Read the target's maps and queue a build for every executable mapping not seen before. */
void ospd_unwinder_scan(struct ospd_unwinder *u);
/* Look at the stacks interned since the last call; a pc in no known range rescans the maps
 * (at most every 20 ms). */
void ospd_unwinder_check_stacks(struct ospd_unwinder *u, const struct ospd_interner *stacks);
void ospd_unwinder_close(struct ospd_unwinder *u);
/* The collector's "collector" figures, just before the raw file is written: ospreyd's own
 * peak memory and CPU time (since the last file this process wrote: it may follow several
 * images, follow.c), and what the unwinder built. */
void ospd_collector_note_cost(struct ospd_collector *c, const struct ospd_unwinder *u);

#endif /* OSPD_UNWIND_SOURCE_H */
