/* ring-source.c — the shim's rings as the collector's source: attaching to a launched
 * program's shared-memory ring, the tick that drains it and its threads' sample rings, the
 * kernel's context switches the shim handed over, its forked children's greetings, watching
 * the target, and deciding when and how the profile ends. Parsing, interning and writing live
 * in the ospd library (collect.c, intern.c, raw-write.c); the loop, the target's pidfd,
 * publishing and the run's lock are the session's (session.c); the command line is
 * ospreyd.c's.
 *
 * Lifecycle: attach (validate the header, unlink the name, publish ATTACHED) → drain every
 * few milliseconds → finish once one of these happens:
 *   1. the shim's exit record arrives                       → "exited"
 *   2. the target's pidfd turns readable (it died)          → "killed" with the signal read
 *      from /proc/<pid>/stat while it is a zombie, else "vanished"
 *   3. the target no longer maps the ring (it exec'd)                      → "vanished"
 *   4. the ring breaks the protocol                         → "ring-rejected"
 * In every case the raw file is written with what was collected; daemon_state then says DONE
 * (file in place) or FAILED (daemon_error says why).
 *
 * The attach (mapping, validating and answering the ring) is ring-attach.c's; the state both
 * files share, struct ospd_daemon, is in ospd_ring_daemon.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "ospc.h"
#include "ospd.h"
#include "ospd_attach.h"
#include "ospd_follow.h"
#include "ospd_forks.h"
#include "ospd_ring_daemon.h"
#include "ospd_ring_source.h"
#include "ospd_session.h"
#include "ospd_switch.h"
#include "ospd_target.h"
#include "ospd_unwind_source.h"

#define IDLE_TICK_NS         4000000ull    /* the tick when no thread is running */
#define DRAIN_MIN_NS         250000ull     /* the rings are read at most this often */
#define DRAIN_MAX_NS         16000000ull   /* and at least this often */
#define TICK_MS_MIN_NS       2000000ull    /* ticks this far apart on the loop's timer */
#define LIVENESS_INTERVAL_NS 1000000000ull /* how often the target's liveness is checked */
#define NAP_NS               250000000ull  /* the tick while the shim wakes us at half full */
#define NAP_RATE_NS          2000000ull    /* naps only where drain_max_ns is this or more */

/* Whether the target's memory map still holds our ring (false when it exec'd away). When
 * the maps file cannot be read the answer is "yes": only positive evidence ends a profile. */
static bool target_maps_ring(const struct ospd_daemon *d)
{
    return ospd_target_maps_ring(d->collector.proc_pid, d->o.ring_name) != 0;
}

static void close_handles(struct ospd_daemon *d)
{
    ospd_forks_close(&d->forks);
    uv_poll_stop(&d->tick);
    uv_close((uv_handle_t *)&d->tick, NULL);
    uv_timer_stop(&d->tick_ms);
    uv_close((uv_handle_t *)&d->tick_ms, NULL);
    uv_signal_stop(&d->sigterm);
    uv_close((uv_handle_t *)&d->sigterm, NULL);
    uv_signal_stop(&d->sigurg);
    uv_close((uv_handle_t *)&d->sigurg, NULL);
    ospd_watch_close(&d->watch_pid);
    for (int i = 0; i < d->switches.count; i++)
        if (uv_is_active((uv_handle_t *)&d->switch_polls[i]) || d->switch_polls[i].data == d) {
            uv_poll_stop(&d->switch_polls[i]);
            uv_close((uv_handle_t *)&d->switch_polls[i], NULL);
        }
}

static void publish_work(uv_work_t *work);
static void publish_done(uv_work_t *work, int status);
static void published(struct ospd_daemon *d);

/* Write the raw file and tell the shim how it went. Runs once. */
static void finish(struct ospd_daemon *d, enum ospd_exit_status status)
{
    if (d->finished)
        return;
    d->finished = true;
    if (status == OSPD_EXIT_VANISHED)
        ospd_forks_next_image(&d->forks); /* its collector starts now, not after this file */
    struct ospd_collector *c = &d->collector;
    c->exit_status = status;
    if (!c->exit_seen || c->end_unix_ns == 0)
        c->end_unix_ns = ospc_clock_ns(CLOCK_REALTIME);
    /* A count, not a synchronisation point: relaxed (see osp_ring.h). */
    uint64_t dropped = atomic_load_explicit(&d->header->dropped, memory_order_relaxed);
    if (dropped > c->shim_dropped)
        c->shim_dropped = dropped;
    c->ring_full = atomic_load_explicit(&d->header->ring_full_drops, memory_order_relaxed);
    c->copies.refused = atomic_load_explicit(&d->header->copies_refused, memory_order_relaxed);
    /* Acquire: pairs with the shim's release store as the program entered its sandbox. */
    uint64_t sandboxed = atomic_load_explicit(&d->header->sandboxed_ns, memory_order_acquire);
    if (sandboxed != 0)
        c->sandboxed_rel_ns = sandboxed > c->start_mono_ns ? sandboxed - c->start_mono_ns : 1;

    uint64_t kept_out = c->lost - c->orphan_repeats - c->unknown_thread;
    if (kept_out > 0)
        fprintf(stderr,
                "osprey: ospreyd: %" PRIu64 " samples could not be kept (memory budget or "
                "limits); they are counted in \"dropped\"\n",
                kept_out);

    /* One line says what went wrong, in daemon_error for the shim (which prints it when it
     * is waiting at exit) and on stderr when nothing else will print it: the program did
     * not reach its exit handler, or the ring broke while it ran. */
    ospd_copies_walk(c, d->unwinder.map, d->unwinder.map_size, true); /* the rows there are */
    ospd_collector_note_cost(c, &d->unwinder);
    ospd_unwinder_close(&d->unwinder);
    if (c->waits.since_ns != 0) {
        uint64_t end = ospc_clock_ns(CLOCK_MONOTONIC);
        ospd_switches_drain(&d->switches, c, end, true);
        ospd_waits_finish(c, end);
    }
    /* While the program waits for its file: its code that no image named yet (a second
     * mapping of an object's, a JIT's with a map for perf). Not once it exec'd away. */
    if (target_maps_ring(d))
        ospd_code_names(c);
    if (c->forked && ospd_sample_total(c) == 0 && c->thread_count <= 1 && c->escaped_count == 0 &&
        (status == OSPD_EXIT_EXITED || status == OSPD_EXIT_VANISHED)) {
        /* A fork that exec'd or ended before its first sample (a shell's, a daemon's
         * double fork): no file. */
        atomic_store_explicit(&d->header->daemon_state, OSP_DAEMON_DONE, memory_order_release);
        ospd_ring_wake_shim(d->header);
        close_handles(d);
        return;
    }
    d->publish_status = status;
    d->pending = (struct ospc_atomic){.fd = -1};
    if (d->o.publish_apart) {
        /* Nothing of this session runs on the loop from here: its handles closed first. */
        close_handles(d);
        d->publishing = true;
        if (uv_queue_work(d->loop, &d->publish, publish_work, publish_done) == 0)
            return;
        d->publishing = false;
    }
    publish_work(&d->publish);
    published(d);
}

/* Write the raw file (the loop's thread, or the pool's for an image followed). */
static void publish_work(uv_work_t *work)
{
    struct ospd_daemon *d =
        (struct ospd_daemon *)((char *)work - offsetof(struct ospd_daemon, publish));
    /* Renamed into place now, fsync'd once the program has been let go (published): the
     * program waits for the file to be there, not for the disk (an fsync took 4-22 ms here). */
    d->publish_rc =
        ospd_session_publish(&d->collector, d->o.out_path, d->written_path, sizeof d->written_path,
                             &d->beside, &d->pending, d->publish_err, sizeof d->publish_err);
}

static void publish_done(uv_work_t *work, int status)
{
    (void)status;
    struct ospd_daemon *d =
        (struct ospd_daemon *)((char *)work - offsetof(struct ospd_daemon, publish));
    d->publishing = false;
    published(d);
}

/* The raw file written (or not): tell the shim how it went, and close the handles (once). */
static void published(struct ospd_daemon *d)
{
    struct ospd_collector *c = &d->collector;
    enum ospd_exit_status status = d->publish_status;
    int rc = d->publish_rc;
    const char *err = d->publish_err;
    char line[sizeof d->publish_err + 512];
    const char *out_path = d->written_path;
    if (d->beside)
        atomic_store_explicit(&d->header->wrote_beside, 1, memory_order_relaxed);
    if (rc != 0)
        snprintf(line, sizeof line, "ospreyd could not write the profile: %s", err);
    else if (status == OSPD_EXIT_RING_REJECTED)
        snprintf(line, sizeof line,
                 "ospreyd rejected the ring: %s; the %" PRIu64
                 " samples collected before it are in %s",
                 c->error, ospd_sample_total(c), out_path);
    if (rc != 0 || status == OSPD_EXIT_RING_REJECTED) {
        if (status != OSPD_EXIT_EXITED)
            fprintf(stderr, "osprey: %s\n", line);
        ospd_ring_publish_failure(d->header, line);
        d->exit_code = 1;
    } else {
        atomic_store_explicit(&d->header->daemon_dropped, c->lost, memory_order_relaxed);
        /* Release: pairs with the shim's acquire load; the file is renamed into place. */
        atomic_store_explicit(&d->header->daemon_state, OSP_DAEMON_DONE, memory_order_release);
        ospd_ring_wake_shim(d->header);
    }
    /* A published file is made durable whatever was said — unless it is in an osprey run's
     * scratch directory (the run's lock is beside it), which osprey empties once the run is
     * over: there an fsync (11-45 ms here) would only keep osprey waiting for the lock. */
    if (d->o.run_lock >= 0)
        ospc_atomic_release(&d->pending);
    else
        ospc_atomic_sync(&d->pending);
    if (!d->o.publish_apart)
        close_handles(d);
}

/* After the program has been let go (DONE): the outputs OSPREY_EXPORT asked for, beside the
 * raw file (under its stem, ospc_raw_stem). One line on stderr when
 * they cannot be written; the raw file stays either way. */
static void export_outputs(struct ospd_daemon *d)
{
    if (d->o.export_formats == NULL || d->written_path[0] == '\0' || d->exit_code != 0)
        return;
    if (ospd_session_export(d->written_path, d->o.export_formats) != 0)
        d->exit_code = 1;
}

static struct osp_slot *slot_at(const struct ospd_daemon *d, uint32_t i)
{
    return osp_slot_at(d->slots, d->slot_ring_size, i);
}

/* Consume what slot i's ring holds. Returns the parser's result. */
static int drain_slot(struct ospd_daemon *d, uint32_t i)
{
    struct osp_slot *s = slot_at(d, i);
    uint64_t tail = osp_index_load_own(&s->tail);
    uint64_t head = osp_index_load_acquire(&s->head); /* (C) pairs with the thread's (B) */
    if (head == tail)
        return 0;
    uint64_t fill = (head - tail) * 256u / d->slot_ring_size;
    if (fill > d->fullest)
        d->fullest = fill > 256u ? 256u : (uint32_t)fill;
    uint64_t new_tail;
    int rc = ospd_parse_slot(&d->collector, (const uint8_t *)(s + 1), d->slot_ring_size, tail, head,
                             &new_tail);
    if (new_tail != tail)
        osp_index_store_release(&s->tail, new_tail); /* (D) pairs with the thread's (A) */
    return rc;
}

/* A THREAD_END was parsed: read the slot's ring up to it, then let the shim reuse the slot. */
static void on_thread_end(void *ctx, uint32_t slot, uint32_t generation)
{
    struct ospd_daemon *d = ctx;
    if (d->slots == NULL || slot >= d->slot_count)
        return;
    drain_slot(d, slot);
    /* Release: pairs with the shim's acquire before it hands the slot out again. */
    atomic_store_explicit(&slot_at(d, slot)->drained_generation, generation, memory_order_release);
}

/* Drain the slots on the watch list (every slot in use when `all`). Returns the first
 * parser error, or 0. */
static int drain_slots(struct ospd_daemon *d, bool all)
{
    uint32_t used = d->slots != NULL ? osp_slots_in_use(d->header, d->slot_count) : 0;
    int rc = 0;
    if (all) {
        for (uint32_t i = 0; i < used && rc == 0; i++)
            rc = drain_slot(d, i);
        return rc;
    }
    if (d->slots != NULL)
        ospd_watch_take(d->header, d->watch);
    for (uint32_t w = 0; w < OSP_ATTENTION_WORDS && rc == 0; w++)
        for (uint64_t bits = d->watch[w]; bits != 0 && rc == 0; bits &= bits - 1) {
            uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);
            if (i < used)
                rc = drain_slot(d, i);
        }
    return rc;
}

/* The target's CPU time so far, from its process CPU clock, while it is there. */
static void read_target_cpu(struct ospd_daemon *d)
{
    uint64_t cpu = ospd_target_cpu_ns(d->collector.pid);
    if (cpu != 0)
        d->collector.process_cpu_ns = cpu;
}

/* Consume everything the shim has published. Returns true when the profile has finished. */
static bool drain_once(struct ospd_daemon *d)
{
    struct osp_ring_header *h = d->header;
    /* Acquire: after the shim's EXITED, every ring is read to the end, watched or not. */
    bool all = atomic_load_explicit(&h->shim_state, memory_order_acquire) == OSP_SHIM_EXITED;
    int slot_rc = drain_slots(d, all);
    uint64_t head = osp_ring_load_head_acquire(h); /* (C) pairs with (B) */
    uint64_t new_tail;
    int rc = ospd_parse(&d->collector, d->data, d->data_size, d->tail, head, &new_tail);
    if (new_tail != d->tail) {
        d->tail = new_tail;
        osp_ring_store_tail_release(h, new_tail); /* (D) pairs with (A) */
    }
    ospd_unwinder_check_stacks(&d->unwinder, &d->collector.stacks);
    /* copies.c: held samples whose rows came since, walked */
    ospd_copies_walk(&d->collector, d->unwinder.map, d->unwinder.map_size, false);
    ospd_python_names(&d->collector); /* python.c: new Python frames named while they live */
    /* The unwinder found executable mappings it did not know (it reads the maps again for a
     * pc in no known range): an object's code mapped a second time becomes an image while it
     * is mapped (V8 unmaps node's builtins before exit). */
    if (d->unwinder.range_count != d->code_ranges) {
        d->code_ranges = d->unwinder.range_count;
        ospd_maps_code(&d->collector, d->collector.proc_pid, d->o.ring_name);
    }
    /* Samples of threads whose start was only now parsed, and those written after the
     * first pass. */
    if (slot_rc == 0 && rc == 0)
        slot_rc = drain_slots(d, all || d->collector.exit_seen);
    if (rc == 0)
        rc = slot_rc;
    if (d->slots != NULL)
        ospd_watch_settle(d->slots, d->slot_ring_size, d->watch);
    if (d->collector.waits.since_ns != 0) {
        uint64_t now = ospc_clock_ns(CLOCK_MONOTONIC);
        ospd_switches_drain(&d->switches, &d->collector, now, false);
        ospd_waits_resolve(&d->collector, now, false);
    }
    if (ospd_ring_truncated(d->header)) {
        snprintf(d->collector.error, sizeof d->collector.error,
                 "the shared memory object was truncated under the mapping");
        rc = -EPROTO;
    }
    if (rc != 0) {
        finish(d, OSPD_EXIT_RING_REJECTED);
        return true;
    }
    if (d->collector.exit_seen) {
        read_target_cpu(d); /* the target waits for us: its CPU clock still answers */
        finish(d, OSPD_EXIT_EXITED);
        return true;
    }
    return false;
}

/* drain_once, timed: the longest read of the rings. */
static bool drain(struct ospd_daemon *d)
{
    if (d->finished)
        return true;
    uint64_t start = ospc_clock_ns(CLOCK_MONOTONIC);
    bool done = drain_once(d);
    uint64_t took_us = (ospc_clock_ns(CLOCK_MONOTONIC) - start) / 1000u;
    if (took_us > d->collector.longest_read_us)
        d->collector.longest_read_us = took_us;
    return done;
}

/* The target's state letter as /proc says (ospd_target_state), or 0 when it is gone. Where
 * /proc does not show it (proc_pid 0: a /proc of a pid namespace above none of ours), 'R'
 * while kill finds it: its pidfd tells its end. */
static char target_state(const struct ospd_daemon *d, int *wait_status)
{
    if (d->collector.proc_pid > 0)
        return ospd_target_state(d->collector.proc_pid, wait_status);
    *wait_status = -1;
    return kill(d->collector.pid, 0) == 0 || errno == EPERM ? 'R' : 0;
}

/* The target is gone (its pidfd fired, or /proc says so). */
static void target_gone(struct ospd_daemon *d)
{
    int wait_status;
    /* Read before anything else: the zombie's exit code is there only until it is reaped. */
    char state = target_state(d, &wait_status);
    if (drain(d))
        return;
    /* Acquire: pairs with the shim's release store of EXITED after its last head store. */
    if (atomic_load_explicit(&d->header->shim_state, memory_order_acquire) == OSP_SHIM_EXITED &&
        drain(d))
        return;
    finish(d, ospd_watch_ended(&d->watch_pid, state, wait_status, &d->collector));
}

static void on_pidfd(uv_poll_t *poll, int status, int events)
{
    (void)status;
    (void)events;
    struct ospd_daemon *d = poll->data;
    if (ospd_target_threads_alive(d->collector.proc_pid)) {
        /* Only the main thread ended (pthread_exit from main): its other threads run on.
         * The liveness check notices the real end. */
        ospd_watch_pause(&d->watch_pid);
        return;
    }
    target_gone(d);
}

static void stop_now(struct ospd_daemon *d, enum ospd_exit_status status);

/* Once a second: is the target still there, and still ours? */
static void check_liveness(struct ospd_daemon *d, uint64_t now)
{
    (void)now;
    ospd_forks_reap(&d->forks);
    int wait_status;
    char state = target_state(d, &wait_status);
    if (state == 0 || state == 'X' ||
        (state == 'Z' && !ospd_target_threads_alive(d->collector.proc_pid))) {
        target_gone(d); /* also covers kernels without pidfd_open */
        return;
    }
    if (!target_maps_ring(d)) {
        drain(d);
        finish(d, OSPD_EXIT_VANISHED); /* exec'd away from the ring */
        return;
    }
    /* A forked child in a session of its own whose parent has gone (setsid and a double
     * fork, or a parent that did not wait: reparented, its PPid no longer the pid that forked
     * it) is a daemon, not the program's any more: it may run for days, and the run (osprey
     * waits for every collector's end) ends without it. Its profile ends here, written now,
     * and it runs on unprofiled. Collectors stay in the program's session (README.md,
     * "Scheduling"). A child that only called setsid (a PostgreSQL backend) while its parent
     * is still its parent is followed to its end; once that parent exits, it is reparented
     * and let go at the next check. A session whose leader is still there and not the child
     * (a program that called setsid itself, then forked its workers) is the program's own. */
    pid_t session = getsid(d->collector.pid);
    if (d->collector.forked && session > 0 && session != getsid(0) &&
        (session == d->collector.pid || (kill(session, 0) != 0 && errno == ESRCH)) &&
        (d->collector.parent_pid <= 0 ||
         ospd_target_parent(d->collector.proc_pid) != ospd_proc_pid(d->collector.parent_pid)))
        stop_now(d, OSPD_EXIT_LEFT_SESSION);
}

/* How often the rings are read, from how full the fullest was: half full or more, twice as
 * often (down to 250 us); otherwise the interval at which that ring, at the pace it filled,
 * is a quarter full when read — at most twice the last interval, up to four times the
 * interval in which a thread sampled at the rate fills a quarter of its ring with samples of
 * 256 bytes (that interval, drain_max_ns, is where the tick starts: 4 ms at the default rate,
 * 0.4 ms at 10 kHz), and DRAIN_MAX_NS at most. A ring read a quarter full leaves room for its
 * samples to grow fourfold between two reads before one is lost, and a half-full ring halves
 * the interval at once. (Doubling only while the fullest was under an eighth kept the same
 * bound but stopped short of it: one busy thread at 997 Hz, 70-byte samples, was read every
 * 8 ms a seventh full, 125 wake-ups a second; README.md, "The tick's pace".) */
static void on_tick_ms(uv_timer_t *timer);

static void adapt_drain(struct ospd_daemon *d)
{
    uint64_t next = d->drain_ns * 2;
    if (d->fullest >= 128)
        next = d->drain_ns / 2;
    else if (d->fullest > 32)
        next = d->drain_ns * 64 / d->fullest;
    if (next < DRAIN_MIN_NS)
        next = DRAIN_MIN_NS;
    if (next > d->drain_ceil_ns)
        next = d->drain_ceil_ns;
    d->drain_ns = next;
    d->fullest = 0;
}

/* Arm the tick for its next absolute deadline: the drain interval, or a longer nap while no
 * thread is running. The program's threads sample themselves (each arms its own timer, with
 * its own jitter); the tick only reads what they wrote, so it needs no jitter of its own.
 * Intervals of TICK_MS_MIN_NS or more go to libuv's timer, whose milliseconds become the
 * epoll_wait timeout: a tick is then one system call, not three (epoll_wait, the timerfd's
 * read and its re-arm), at most a millisecond off the deadline, which the next deadline does
 * not inherit. Shorter ones (0.4 ms at 10 kHz) keep the timerfd's nanoseconds. */
/* Whether the tick may nap until a producer wakes us (proto/osp_ring.h, "Waking the
 * collector"): a shim that wakes (OSP_RING_WAKES, read at attach), a rate at which what a
 * ring holds past its mark lasts (drain_max_ns, a quarter ring of 256-byte samples, 2 ms or
 * more: up to about 2 kHz; at 10 kHz 64 busy threads lost 41 samples to full rings on a
 * loaded machine, the wake come too late), and nothing that wants
 * reading sooner than a ring's fill says — an unwind build pending, a stack copy held or in
 * the pool (its sample waits for rows; the pool's 32 buffers are freed as they are read), or,
 * while the kernel's records time the waits, threads that blocked since the last tick (a
 * block gets the site of the shim's capture inside it, which the thread's next capture
 * replaces: read late, a contended mutex's blocks took the span before's site, lock_site
 * 2.64 s of 3.01), blocks still waiting for the spans of the shim's that give their site,
 * or a thread blocked that is to be asked for its site (asked a nap late, its wait may be
 * over before the ask lands). */
static bool may_nap(const struct ospd_daemon *d)
{
    const struct ospd_collector *c = &d->collector;
    return d->wakes && d->slots != NULL && d->unwinder.pending == 0 &&
           d->drain_max_ns >= NAP_RATE_NS &&
           (c->waits.since_ns == 0 ||
            (c->waits.blocks == d->blocks_seen && !ospd_waits_asking_soon(c))) &&
           atomic_load_explicit(&d->header->napping, memory_order_relaxed) != OSP_NAP_REFUSED &&
           d->collector.copies.count == 0 &&
           /* Relaxed: a hint; a copy taken after it is read at its ring's mark or the nap. */
           atomic_load_explicit(&d->header->copies_busy, memory_order_relaxed) == 0;
}

static void arm_tick(struct ospd_daemon *d, uint64_t now, bool idle)
{
    /* Idle: a thread that runs again fills its ring no faster than at the rate. */
    uint64_t nap = IDLE_TICK_NS < 4 * d->drain_max_ns ? IDLE_TICK_NS : 4 * d->drain_max_ns;
    uint64_t period = idle && nap > d->drain_ns ? nap : d->drain_ns;
    if (may_nap(d) && ospd_nap_begin(d->header, d->data_size, d->slots, d->slot_count,
                                     d->slot_ring_size, d->watch)) {
        /* Until a ring is half full (the shim's SIGURG, on_wake), the liveness check, or the
         * profile's end, whichever comes first. */
        period = NAP_NS;
        d->deadline_ns = now;
        /* Read from the shared header, so never trusted beyond "now or later". */
        uint64_t stop_at = d->header->stop_at_ns;
        if (stop_at > now && stop_at < now + period)
            period = stop_at - now;
        if (d->next_liveness_ns > now && d->next_liveness_ns < now + period)
            period = d->next_liveness_ns - now;
    } else if (may_nap(d)) {
        period = DRAIN_MIN_NS; /* a ring past its mark as we went to sleep: read it now */
    }
    d->blocks_seen = d->collector.waits.blocks;
    /* Woken before the deadline (a ring at its mark during a nap, the shim's exit): the next
     * deadline counts from now, not from the nap's end. From that one, a wake that found a
     * thread blocking since (no nap then) had its next read a quarter second away, and the
     * thread's ring full after 40 ms of samples: 18-31 periods of 110 lost in 2 runs of 12
     * of an event loop polling between 5 ms bursts. */
    if (d->deadline_ns > now)
        d->deadline_ns = now;
    d->deadline_ns += period;
    if (d->deadline_ns + 10 * period < now)
        d->deadline_ns = now; /* after a stall, do not burst to catch up */
    if (period >= TICK_MS_MIN_NS) {
        uv_update_time(d->loop);
        uint64_t fresh = ospc_clock_ns(CLOCK_MONOTONIC);
        uint64_t wait = d->deadline_ns > fresh ? d->deadline_ns - fresh : 0;
        uv_timer_start(&d->tick_ms, on_tick_ms, (wait + 999999u) / 1000000u, 0);
        return;
    }
    uv_timer_stop(&d->tick_ms); /* a nap's deadline, when a wake came before it */
    struct itimerspec its = {
        .it_value = {(time_t)(d->deadline_ns / 1000000000u), (long)(d->deadline_ns % 1000000000u)}};
    timerfd_settime(d->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* waits.c: the last instant the shim's handler found the thread blocked (its slot's
 * capture_ns), 0 when its slot holds another registration now. */
static uint64_t capture_of(void *ctx, uint32_t thread)
{
    struct ospd_daemon *d = ctx;
    const struct ospd_thread *t = &d->collector.threads[thread];
    if (d->slots == NULL || t->slot >= d->slot_count)
        return 0;
    struct osp_slot *s = slot_at(d, t->slot);
    if (atomic_load_explicit(&s->generation, memory_order_relaxed) != t->generation)
        return 0;
    return atomic_load_explicit(&s->capture_ns, memory_order_relaxed);
}

/* waits.c: when the thread registered (its slot's registered_ns), read as its THREAD_START
 * record is: its slot cannot have been handed to another registration yet (that waits until
 * this thread's end is drained), and its generation is stored only after the record. */
static uint64_t registered_of(void *ctx, uint32_t thread)
{
    struct ospd_daemon *d = ctx;
    const struct ospd_thread *t = &d->collector.threads[thread];
    if (d->slots == NULL || t->slot >= d->slot_count)
        return 0;
    return atomic_load_explicit(&slot_at(d, t->slot)->registered_ns, memory_order_relaxed);
}

static void ask_one(void *ctx, uint32_t thread)
{
    struct ospd_daemon *d = ctx;
    struct ospd_thread *t = &d->collector.threads[thread];
    if (d->slots != NULL && t->slot < d->slot_count &&
        (atomic_load_explicit(&slot_at(d, t->slot)->state, memory_order_relaxed) ==
             OSP_SLOT_GUARDED ||
         atomic_load_explicit(&slot_at(d, t->slot)->state, memory_order_relaxed) == OSP_SLOT_TIMED))
        return; /* inside a guarded or timed call: the shim knows its site */
    /* The main thread's id is the process's pid, in /proc's numbers too. */
    int32_t proc_pid = d->collector.proc_pid;
    if (t->proc_tid == 0)
        t->proc_tid = t->tid == d->collector.pid ? proc_pid : ospd_proc_tid(proc_pid, t->tid);
    if (ospd_switches_may_ask(proc_pid, t->proc_tid))
        ospd_switches_ask(d->collector.pid, t->tid, d->header->signal_cookie);
}

/* Threads blocked for a period or more in a wait whose site the shim has not seen: ask each
 * once (its handler captures the stack and the call goes on). Never while our signals are
 * paused (an exec under way, the program's own SIGPROF). */
static void ask_for_sites(struct ospd_daemon *d, uint64_t now)
{
    if (d->collector.waits.since_ns == 0 || d->finished)
        return;
    struct osp_ring_header *h = d->header;
    /* Seq_cst, both: a shim that raises signals_paused (seq_cst) and then loads `asking`
     * (seq_cst) either sees OSP_ASKING and waits for this round to end, or this load sees
     * its raise (proto/osp_ring.h, "signals_paused"). */
    atomic_store_explicit(&h->asking, OSP_ASKING, memory_order_seq_cst);
    if (atomic_load_explicit(&h->signals_paused, memory_order_seq_cst) == 0)
        ospd_waits_to_ask(&d->collector, now, 1000000000u / d->collector.rate_hz, ask_one, d);
    /* Release: the signals sent above are queued before a shim that sees IDLE goes on. */
    atomic_store_explicit(&h->asking, OSP_ASKING_IDLE, memory_order_release);
}

/* Where the shim times waits (no kernel records), a thread still inside a wait its call times
 * (OSP_SLOT_TIMED: a condvar, a lock, a join) writes that wait only when the call returns, after
 * the profile: a thread that waited the whole run had no samples. Each is asked, once the shim
 * can see the profile has stopped, for the wait so far (handler.c, flush_timed_call), and
 * answers (signals_handled) within the bound below; one that does not (never scheduled in
 * time) loses its wait, as before. Under the `asking` protocol, as ask_for_sites: never while
 * our signals are paused (an exec under way). */
#define TIMED_WAITS_ANSWER_NS 500000000u
static void ask_timed_waits(struct ospd_daemon *d)
{
    struct osp_ring_header *h = d->header;
    if (d->collector.waits.since_ns != 0 || d->slots == NULL)
        return;
    uint32_t used = osp_slots_in_use(h, d->slot_count), asked = 0;
    uint32_t *before = calloc(used ? used : 1, sizeof *before);
    uint8_t *pending = calloc(used ? used : 1, 1);
    if (before == NULL || pending == NULL) {
        free(before);
        free(pending);
        return;
    }
    /* Seq_cst, as in ask_for_sites: a shim raising signals_paused sees ASKING and waits. */
    atomic_store_explicit(&h->asking, OSP_ASKING, memory_order_seq_cst);
    if (atomic_load_explicit(&h->signals_paused, memory_order_seq_cst) == 0) {
        /* Release: a handler that takes our signal sees the profile stopped (its relaxed load
         * comes after the signal's delivery). */
        atomic_store_explicit(&h->stopped, 1, memory_order_release);
        for (uint32_t i = 0; i < used; i++) {
            struct osp_slot *s = slot_at(d, i);
            if (atomic_load_explicit(&s->state, memory_order_relaxed) != OSP_SLOT_TIMED ||
                (atomic_load_explicit(&s->flags, memory_order_relaxed) & OSP_SLOT_PROF_BLOCKED))
                continue;
            /* Acquire (F): pairs with the handler's release (E). */
            before[i] = atomic_load_explicit(&s->signals_handled, memory_order_acquire);
            int32_t tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
            if (tid > 0 && ospd_switches_ask(d->collector.pid, tid, h->signal_cookie) == 0) {
                pending[i] = 1;
                asked++;
            }
        }
    }
    /* Release: the signals sent above are queued before a shim that sees IDLE goes on. */
    atomic_store_explicit(&h->asking, OSP_ASKING_IDLE, memory_order_release);
    uint64_t limit = ospc_clock_ns(CLOCK_MONOTONIC) + TIMED_WAITS_ANSWER_NS;
    while (asked > 0 && ospc_clock_ns(CLOCK_MONOTONIC) < limit) {
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
        for (uint32_t i = 0; i < used; i++)
            if (pending[i] && atomic_load_explicit(&slot_at(d, i)->signals_handled,
                                                   memory_order_acquire) != before[i]) {
                pending[i] = 0;
                asked--;
            }
    }
    free(before);
    free(pending);
}

/* The profile's duration is over (stop_at_ns, from the shim; `status` OSPD_EXIT_STOPPED), or
 * a forked child left the session (OSPD_EXIT_LEFT_SESSION): pause our signals (no thread
 * arms a timer again), say so (the handler returns at once from then on), read everything,
 * and write the profile while the program runs on. */
static void stop_now(struct ospd_daemon *d, enum ospd_exit_status status)
{
    struct osp_ring_header *h = d->header;
    ask_timed_waits(d);
    atomic_fetch_add_explicit(&h->signals_paused, 1, memory_order_seq_cst);
    atomic_store_explicit(&h->stopped, 1, memory_order_release);
    if (drain(d))
        return;
    drain_slots(d, true);
    read_target_cpu(d);
    finish(d, status);
}

/* A switch ring is a quarter full: read them all now. Hung up (the target exec'd away, which
 * removes the events, or ended): poll it no more (a hung-up descriptor polls ready for good,
 * which spun ospreyd until its next liveness check), and look at the target now. */
static void on_switches(uv_poll_t *poll, int status, int events)
{
    struct ospd_daemon *d = poll->data;
    if (status < 0 || (events & UV_DISCONNECT)) {
        uv_poll_stop(poll);
        if (!d->finished)
            check_liveness(d, ospc_clock_ns(CLOCK_MONOTONIC));
        return;
    }
    if (d->finished || d->collector.waits.since_ns == 0)
        return;
    uint64_t now = ospc_clock_ns(CLOCK_MONOTONIC);
    ospd_switches_drain(&d->switches, &d->collector, now, false);
}

/* The tick, from either timer (arm_tick). */
static void tick(struct ospd_daemon *d)
{
    if (d->wakes)
        ospd_nap_end(d->header); /* reading now: no producer need wake us */
    uint64_t tick_now = ospc_clock_ns(CLOCK_MONOTONIC);
    /* How late the tick came: the machine's load keeping ospreyd off a CPU, or its own work. */
    if (tick_now > d->deadline_ns &&
        (tick_now - d->deadline_ns) / 1000u > d->collector.longest_late_us)
        d->collector.longest_late_us = (tick_now - d->deadline_ns) / 1000u;
    ask_for_sites(d, tick_now); /* before the round is counted (signals_paused) */
    uint32_t running =
        ospd_tick_round(d->header, d->slots, d->slot_count, d->slot_ring_size, d->watch);
    if (drain(d))
        return;
    adapt_drain(d);
    arm_tick(d, tick_now, running == 0);
    /* Acquire: pairs with the shim's release store of EXITED after its last head store, so a
     * second drain sees the exit record. */
    if (atomic_load_explicit(&d->header->shim_state, memory_order_acquire) == OSP_SHIM_EXITED) {
        if (!drain(d))
            finish(d, OSPD_EXIT_EXITED); /* EXITED without an exit record: end here anyway */
        return;
    }
    uint64_t now = ospc_clock_ns(CLOCK_MONOTONIC);
    /* Read from the shared header, so never trusted beyond "now or later". */
    uint64_t stop_at = d->header->stop_at_ns;
    if (stop_at != 0 && now >= stop_at) {
        stop_now(d, OSPD_EXIT_STOPPED);
        return;
    }
    if (now >= d->next_liveness_ns) {
        d->next_liveness_ns = now + LIVENESS_INTERVAL_NS;
        check_liveness(d, now);
    }
}

static void on_tick(uv_poll_t *poll, int status, int events)
{
    (void)status;
    (void)events;
    struct ospd_daemon *d = poll->data;
    uint64_t expirations;
    if (read(d->timer_fd, &expirations, sizeof expirations) < 0 && errno == EAGAIN)
        return;
    tick(d);
}

static void on_tick_ms(uv_timer_t *timer)
{
    tick(timer->data);
}

/* The shim posted its exit record and waits, or a ring passed its mark while we napped (the
 * shim's SIGURG, proto/osp_ring.h "Waking the collector"): read the rings now, not at the
 * next tick. */
static void on_wake(uv_signal_t *handle, int signum)
{
    (void)signum;
    struct ospd_daemon *d = handle->data;
    /* The shim paused our signals (an exec) and woke us to say so: no round is under way
     * between two callbacks, and every later one sees the pause (its seq_cst increment came
     * before the signal), so two rounds are as good as done. */
    if (!d->finished && atomic_load_explicit(&d->header->signals_paused, memory_order_acquire) != 0)
        atomic_fetch_add_explicit(&d->header->tick_seq, 2, memory_order_release);
    /* Or a ring is half full while we napped: a round of the tick, which naps again. */
    if (!d->finished)
        tick(d);
}

static void on_sigterm(uv_signal_t *handle, int signum)
{
    (void)signum;
    struct ospd_daemon *d = handle->data;
    if (!drain(d))
        finish(d, OSPD_EXIT_VANISHED);
}

/* Ask the scheduler to run the tick promptly (Linux >= 6.12, EEVDF: sched_attr.sched_runtime
 * of a SCHED_OTHER thread is its slice request): a woken ospreyd then gets an early virtual
 * deadline even among many busy threads, instead of waiting out their slices; it never runs
 * long anyway. Where allowed (CAP_SYS_NICE or RLIMIT_NICE), also a nice value 10 below the
 * target's (not below its own: a forked child's collector, started by one at -10, took -20
 * and beat the others). Only this thread: the unwind builds on libuv's pool run at the
 * target's nice value (run, unwind-source.c). Older kernels and unprivileged users keep what
 * they had. */
static void request_short_slice(int program_nice)
{
    errno = 0;
    int own = getpriority(PRIO_PROCESS, 0);
    if (errno != 0)
        return;
    /* A collector that follows images (follow.c) does their starts and ends on this thread:
     * 10 below the program, it took the program's core from it (a spawn's wall time to its
     * reaping, median of 200 at load 12-16: 4.3-9.5 ms, 2.3-4.2 at the program's value, 3.6-5.8
     * with a collector process per image). */
    int below = ospd_following() ? 0 : 10;
    if (ospd_sched_self(program_nice - below, 100000 /* the shortest */) != 0)
        ospd_sched_self(own, 100000);
}

/* The loop's handles, once the ring is mapped: the tick, the target's pidfd, the signals,
 * the switch rings, the fork socket, the unwind tables' builds. 0, or 1 after one line. */
static int start(struct ospd_daemon *d, uv_loop_t *loop)
{
    /* In the program's session (detach): a hangup of its terminal is not ours to end on,
     * and a warning written to it from the background must not stop us. */
    signal(SIGHUP, SIG_IGN);
    signal(SIGTTOU, SIG_IGN);
    /* The program's nice value first (a forked child's collector starts at its parent's
     * tick's): libuv's pool threads, made at the first build, inherit it. */
    int program_nice = ospd_target_nice(d->collector.pid);
    ospd_sched_self(program_nice, 0);
    d->loop = loop;
    /* First, before any other handle: a start that fails leaves none in the loop (an image
     * followed in a collector's process, follow.c, is then freed with the loop running on). */
    d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (d->timer_fd < 0 || uv_poll_init(d->loop, &d->tick, d->timer_fd) != 0) {
        fprintf(stderr, "osprey: ospreyd: cannot create the sampling timer: %s\n", strerror(errno));
        return 1;
    }
    d->attach_mono_ns = ospc_clock_ns(CLOCK_MONOTONIC);
    d->next_liveness_ns = d->attach_mono_ns + LIVENESS_INTERVAL_NS;
    uint64_t quarter_ring = (uint64_t)d->slot_ring_size * 1000000000u / 4 / 256u;
    d->drain_max_ns = d->slot_ring_size ? quarter_ring / d->collector.rate_hz : IDLE_TICK_NS;
    if (d->drain_max_ns < DRAIN_MIN_NS)
        d->drain_max_ns = DRAIN_MIN_NS;
    if (d->drain_max_ns > DRAIN_MAX_NS)
        d->drain_max_ns = DRAIN_MAX_NS;
    d->drain_ns = d->drain_max_ns;
    d->drain_ceil_ns = 4 * d->drain_max_ns < DRAIN_MAX_NS ? 4 * d->drain_max_ns : DRAIN_MAX_NS;
    if (d->drain_ceil_ns < d->drain_max_ns)
        d->drain_ceil_ns = d->drain_max_ns;
    if (ospd_unwinder_attach(&d->unwinder, d->loop, d->o.unwind_fd, d->collector.proc_pid,
                             program_nice) == 0) {
        d->unwinder.ring_name = d->o.ring_name;
        ospd_unwinder_scan(&d->unwinder);
    }
    request_short_slice(program_nice); /* this thread only, now that the pool has its threads */
    d->collector.waits.capture_of = capture_of;
    d->collector.waits.registered_of = registered_of;
    d->collector.waits.capture_ctx = d;
    for (int i = 0; i < d->switches.count; i++)
        if (uv_poll_init(d->loop, &d->switch_polls[i], d->switches.rings[i].fd) == 0) {
            d->switch_polls[i].data = d;
            uv_poll_start(&d->switch_polls[i], UV_READABLE | UV_DISCONNECT, on_switches);
        }
    d->collector.on_thread_end = on_thread_end;
    d->collector.ctx = d;
    /* Without the socket, a forked child that cannot greet us starts a collector itself. */
    d->forks.fd = -1;
    if (d->o.forks_fd >= 0)
        ospd_forks_adopt(&d->forks, d->loop, d->o.forks_fd, d->o.self, d->o.export_formats,
                         d->o.run_lock, &d->collector);
    d->tick.data = d;
    uv_timer_init(d->loop, &d->tick_ms);
    d->tick_ms.data = d;
    uv_signal_init(d->loop, &d->sigterm);
    d->sigterm.data = d;
    uv_signal_start(&d->sigterm, on_sigterm, SIGTERM);
    uv_signal_init(d->loop, &d->sigurg);
    d->sigurg.data = d;
    uv_signal_start(&d->sigurg, on_wake, SIGURG);

    if (ospd_watch_start(&d->watch_pid, d->loop, d->collector.pid, on_pidfd, d) == -ESRCH)
        d->next_liveness_ns = d->attach_mono_ns; /* gone already: at the first tick */
    /* Without a pidfd (old kernel, or the target already gone) the liveness check notices. */
    d->deadline_ns = ospc_clock_ns(CLOCK_MONOTONIC);
    arm_tick(d, d->deadline_ns, false);
    uv_poll_start(&d->tick, UV_READABLE, on_tick);
    return 0;
}

int ospd_ring_source_map(void *source)
{
    struct ospd_daemon *d = source;
    if (ospd_ring_daemon_attach(d) != 0)
        return 1;
    ospd_proc_unseen(&d->collector);
    ospd_ring_read_exe_fallback(d);
    d->collector.comm = ospd_target_comm(d->collector.proc_pid);
    return 0;
}

int ospd_ring_source_start(void *source, uv_loop_t *loop)
{
    return start(source, loop);
}

static int ring_attach(void *source, uv_loop_t *loop)
{
    int rc = ospd_ring_source_map(source);
    return rc != 0 ? rc : start(source, loop);
}

static bool ring_drain(void *source, bool all)
{
    struct ospd_daemon *d = source;
    (void)all; /* every read takes all there is */
    return drain(d);
}

static void ring_stop(void *source, enum ospd_exit_status status)
{
    struct ospd_daemon *d = source;
    if (!d->finished && d->header != NULL)
        stop_now(d, status);
}

static int ring_close(void *source)
{
    struct ospd_daemon *d = source;
    ospd_switches_close(&d->switches);
    ospd_watch_free(&d->watch_pid);
    if (d->timer_fd >= 0)
        close(d->timer_fd);
    if (d->header != NULL)
        ospd_ring_unmap(d->header, d->map_size);
    export_outputs(d);
    int rc = d->exit_code;
    ospd_collector_free(&d->collector);
    free(d);
    return rc;
}

void *ospd_ring_source_new(const struct ospd_ring_options *o)
{
    struct ospd_daemon *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    d->o = *o;
    d->watch_pid.pidfd = -1;
    d->timer_fd = -1;
    ospd_collector_init(&d->collector);
    /* A long run's samples go to disk as they come (spill.c): memory stays flat. */
    ospd_spill_enable(&d->collector, d->o.out_path, ospd_spill_batch());
    return d;
}

const struct ospd_source_ops ospd_ring_source = {
    .name = "rings",
    .attach = ring_attach,
    .drain = ring_drain,
    .stop = ring_stop,
    .close = ring_close,
};
