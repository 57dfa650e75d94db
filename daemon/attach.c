/* attach.c — perf events as a source of the collector's session (ospd_perf_events, behind
 * ospd_source_ops; the command line `ospreyd --attach-pid PID --out PATH` is ospreyd.c's):
 * profiling a process that was started without the profiler, from outside it
 * (perf-source.c), until a duration ends, SIGINT or
 * SIGTERM, or the process ends; then the raw profile, written as a launched profile's is.
 *
 * Lifecycle: one collector at a time per process (a lock named after the pid) → the images
 * from /proc/PID/maps → their unwind rows built (unwind-source.c, into a table object of our
 * own: the same rows the shim's handler reads) → the events opened on every thread and
 * enabled → the rings drained on a tick and when one is a quarter full → stop: the events
 * disabled, drained and closed, the waits resolved, the raw file written ("exit": "stopped",
 * or how the process ended if it did). The target is never stopped, signalled or written to.
 * Where perf_event_open is refused, the same lifecycle samples with ptrace instead
 * (ptrace-source.c, 100 Hz: a running thread stopped for an instant per sample); beside perf
 * events, ptrace-source.c reads the sites of the threads blocked when the window begins.
 * With --stream (`osprey top`), no raw file: every FLUSH_MS what was collected goes to stdout
 * (stream.c) and the collector keeps no samples; the reader closing the pipe ends it too.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "ospc.h"
#include "ospd_attach.h"
#include "ospd_perf_source.h"
#include "ospd_ptrace_source.h"
#include "ospd_session.h"
#include "ospd_target.h"
#include "ospd_unwind_source.h"
#include "ospx.h"

#define TICK_MS        4u
#define FLUSH_MS       250u                         /* --stream: a batch this often */
#define TABLES_WAIT_NS (UINT64_C(10) * 1000000000u) /* at most this long for the first rows */

struct attach {
    struct ospd_perf_options o; /* the command line's */
    int32_t pid;
    const char *out;
    bool stream; /* --stream: lines on stdout (stream.c) instead of a raw file */
    int lock;    /* take_lock's */
    struct ospd_stream live;
    uv_timer_t flush_timer;
    struct ospd_collector collector;
    struct ospd_perf_source source;
    /* Where perf events are refused, the ptrace sampler (by_ptrace); beside perf events, the
     * sites of the threads blocked when the window begins (ptrace-source.c). */
    struct ospd_ptrace_source sites;
    bool by_ptrace;
    struct ospd_unwinder unwinder;
    uv_loop_t *loop;
    uv_timer_t tick, stop_timer;
    uv_signal_t sigint, sigterm;
    uv_poll_t *polls;
    uint32_t poll_count;
    struct ospd_watch watch_pid; /* the target's pidfd */
    uint64_t cpu_at_start;
    bool finished, target_gone;
    int exit_code;
};

/* One collector per process and user: a lock named after the pid, in a directory of ours
 * alone (ospc_runtime_dir), held while attached. Another user can neither hold it nor write
 * what it says; two users' collectors of one process do not meet (each has its own events).
 * Returns the descriptor; -1 after one line (another collector of ours holds it); -2 when
 * there is no lock to take (one line says so; the attach goes on without). */
static char lock_path[4096];

static int take_lock(int32_t pid)
{
    char dir[4000] = "";
    int rc = ospc_runtime_dir(dir, sizeof dir);
    if (rc == 0 && snprintf(lock_path, sizeof lock_path, "%s/osprey-attach-%d.lock", dir,
                            (int)pid) >= (int)sizeof lock_path)
        rc = -ENAMETOOLONG;
    if (rc != 0) {
        fprintf(stderr,
                "osprey: warning: no directory of this user's for attach's lock (%s %s); a "
                "second attach to process %d is not refused\n",
                dir, ospc_shared_strerror(rc), (int)pid);
        return -2;
    }
    /* The holder unlinks the file as it lets go: a lock taken on a file no longer at the path
     * is taken again on the new one. */
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = ospc_open_shared(lock_path, O_RDWR | O_CREAT, 0600, geteuid());
        if (fd < 0) {
            fprintf(stderr,
                    "osprey: warning: %s %s; a second attach to process %d is not refused\n",
                    lock_path, ospc_shared_strerror(fd), (int)pid);
            return -2;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            char holder[32] = "";
            ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
            holder[n > 0 ? n : 0] = '\0';
            holder[strspn(holder, "0123456789")] = '\0';
            fprintf(stderr,
                    "osprey: process %d is already being profiled by osprey (collector pid %s); "
                    "one profile of a process at a time\n",
                    (int)pid, holder[0] ? holder : "?");
            close(fd);
            return -1;
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && lstat(lock_path, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino) {
            char own[32];
            int n = snprintf(own, sizeof own, "%d\n", (int)getpid());
            if (ftruncate(fd, 0) == 0 && pwrite(fd, own, (size_t)n, 0) < 0)
                n = 0;
            return fd;
        }
        close(fd);
    }
    return -2;
}

/* Let go of the lock, removing its file (ours: the lock is held). */
static void drop_lock(int lock)
{
    if (lock >= 0) {
        unlink(lock_path);
        close(lock);
    }
}

/* A table object of our own, laid out as the shim makes one (proto/osp_unwind.h), for the
 * rows unwind-source.c builds. Returns its descriptor, or -1. */
static int make_tables(void)
{
    int fd = (int)syscall(SYS_memfd_create, "osprey-unwind", 1u /* MFD_CLOEXEC */);
    if (fd < 0)
        return -1;
    struct osp_unwind_header h;
    osp_unwind_header_init(&h, OSP_UNWIND_DEFAULT_SIZE, OSPD_OWN_MACHINE);
    if (ftruncate(fd, (off_t)OSP_UNWIND_DEFAULT_SIZE) != 0 ||
        pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        close(fd);
        return -1;
    }
    return fd;
}

static void drain(struct attach *a, bool all)
{
    if (a->by_ptrace && !all)
        ospd_ptrace_round(&a->sites, &a->collector, ospc_clock_ns(CLOCK_MONOTONIC));
    else if (!a->by_ptrace)
        ospd_perf_drain(&a->source, &a->collector, ospc_clock_ns(CLOCK_MONOTONIC), all);
    ospd_unwinder_check_stacks(&a->unwinder, &a->collector.stacks);
    if (a->collector.waits.since_ns != 0)
        ospd_waits_resolve(&a->collector, ospc_clock_ns(CLOCK_MONOTONIC), false);
}

static void close_handle(uv_handle_t *h)
{
    if (h->loop != NULL && !uv_is_closing(h))
        uv_close(h, NULL);
}

/* Stop sampling, read what is left, close every event, write the raw file. Runs once. */
static void finish(struct attach *a, enum ospd_exit_status status)
{
    if (a->finished)
        return;
    a->finished = true;
    struct ospd_collector *c = &a->collector;
    ospd_perf_enable(&a->source, false);
    uint64_t cpu = ospd_target_cpu_ns(a->pid);
    c->events_cpu_ns = ospd_perf_clock_ns(&a->source);
    drain(a, true);
    ospd_perf_close(&a->source); /* detached: nothing of ours is left on its threads */
    ospd_ptrace_end(&a->sites, c, ospc_clock_ns(CLOCK_MONOTONIC));
    if (a->by_ptrace) {
        c->events_cpu_ns = a->sites.cpu_ns; /* the threads' CPU time, which the samples pay */
        c->ptrace_rounds = a->sites.rounds;
        c->ptrace_stops = a->sites.stops;
        c->ptrace_stopped_ns = a->sites.stopped_ns;
    }
    c->exit_status = status;
    c->end_unix_ns = ospc_clock_ns(CLOCK_REALTIME);
    if (cpu > a->cpu_at_start)
        c->process_cpu_ns = cpu - a->cpu_at_start; /* over the window profiled */
    c->shim_dropped = a->source.lost;
    if (c->waits.since_ns != 0)
        ospd_waits_resolve(c, ospc_clock_ns(CLOCK_MONOTONIC), true);
    if (!a->stream)
        ospd_code_names(c); /* the process is still there: its maps are */
    ospd_collector_note_cost(c, &a->unwinder);
    a->source.tables = NULL;
    a->sites.tables = NULL;
    ospd_unwinder_close(&a->unwinder);
    char err[OSPD_ERROR_SIZE + OSP_MAX_PATH];
    if (a->stream) {
        ospd_stream_flush(&a->live, c, ospc_clock_ns(CLOCK_MONOTONIC) - c->start_mono_ns);
        ospd_stream_end(&a->live, c);
    } else if (ospd_raw_write(c, a->out, err, sizeof err) != 0) {
        fprintf(stderr, "osprey: ospreyd could not write the profile: %s\n", err);
        a->exit_code = 1;
    }
    close_handle((uv_handle_t *)&a->tick);
    close_handle((uv_handle_t *)&a->stop_timer);
    close_handle((uv_handle_t *)&a->flush_timer);
    close_handle((uv_handle_t *)&a->sigint);
    close_handle((uv_handle_t *)&a->sigterm);
    ospd_watch_close(&a->watch_pid);
    for (uint32_t i = 0; i < a->poll_count; i++)
        close_handle((uv_handle_t *)&a->polls[i]);
}

static void on_tick(uv_timer_t *t)
{
    drain(t->data, false);
}

static void on_ring(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct attach *a = p->data;
    if (!a->finished)
        drain(a, false);
}

/* --stream: a batch; the reader gone (the pipe closed) is the end. */
static void on_flush(uv_timer_t *t)
{
    struct attach *a = t->data;
    ospd_ptrace_blocked(&a->sites, &a->collector, ospc_clock_ns(CLOCK_MONOTONIC));
    uint64_t now = ospc_clock_ns(CLOCK_MONOTONIC) - a->collector.start_mono_ns;
    if (ospd_stream_flush(&a->live, &a->collector, now) != 0)
        finish(a, OSPD_EXIT_STOPPED);
}

static void on_stop(uv_timer_t *t)
{
    finish(t->data, OSPD_EXIT_STOPPED);
}

static void on_signal(uv_signal_t *s, int signum)
{
    (void)signum;
    finish(s->data, OSPD_EXIT_STOPPED);
}

/* The process ended while attached: say so in one line, and write what was collected. */
static void on_pidfd(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct attach *a = p->data;
    struct ospd_collector *c = &a->collector;
    if (ospd_target_threads_alive(c->proc_pid))
        return; /* only its main thread ended (pthread_exit) */
    int wait_status;
    char state = ospd_target_state(c->proc_pid, &wait_status);
    enum ospd_exit_status how = ospd_watch_ended(&a->watch_pid, state, wait_status, c);
    double seconds = (double)(ospc_clock_ns(CLOCK_MONOTONIC) - c->start_mono_ns) / 1e9;
    if (!a->stream) /* the stream's reader says it, from the end line */
        fprintf(
            stderr,
            "osprey: process %d ended %.1f s into the profile; the profile covers it until then\n",
            (int)a->pid, seconds);
    a->target_gone = true;
    ospd_watch_pause(&a->watch_pid);
    finish(a, how);
}

/* Build the rows of every image mapped now before sampling starts (from the cache, a few
 * milliseconds; else as long as the builds take), so the first samples walk whole. */
static void build_tables(struct attach *a)
{
    int fd = make_tables();
    if (ospd_unwinder_attach(&a->unwinder, a->loop, fd, a->collector.proc_pid,
                             ospd_target_nice(a->pid)) != 0)
        return; /* frame pointers only */
    ospd_unwinder_scan(&a->unwinder);
    uint64_t until = ospc_clock_ns(CLOCK_MONOTONIC) + TABLES_WAIT_NS;
    while (a->unwinder.pending > 0 && ospc_clock_ns(CLOCK_MONOTONIC) < until)
        uv_run(a->loop, UV_RUN_ONCE);
    a->source.tables = a->sites.tables = a->unwinder.map;
    a->source.tables_size = a->sites.tables_size = a->unwinder.map_size;
}

/* perf_event_open refused where ptrace is allowed: the ptrace sampler, said in one line. 0, or
 * 1 after one line. */
static int fall_back_to_ptrace(struct attach *a, uint32_t *rate)
{
    long paranoid = -1;
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
    if (f != NULL && fscanf(f, "%ld", &paranoid) != 1)
        paranoid = -1;
    if (f != NULL)
        fclose(f);
    char why[160];
    if (paranoid > 2)
        snprintf(why, sizeof why, "kernel.perf_event_paranoid is %ld", paranoid);
    else if (getenv("OSPREYD_SAMPLER") != NULL)
        snprintf(why, sizeof why, "OSPREYD_SAMPLER=%s", getenv("OSPREYD_SAMPLER"));
    else
        snprintf(why, sizeof why,
                 "perf_event_open is refused to this process: a seccomp filter, as container "
                 "runtimes install");
    if (*rate > OSPD_PTRACE_MAX_HZ)
        *rate = OSPD_PTRACE_MAX_HZ;
    if (!a->stream)
        fprintf(stderr,
                "osprey: no perf events here (%s): sampling process %d from outside by ptrace "
                "at %u Hz\n",
                why, (int)a->pid, (unsigned)*rate);
    a->by_ptrace = true;
    a->source.waits = false; /* no switch records: the waits are the rounds' */
    if (ospd_ptrace_open(&a->sites, a->pid, *rate, true) != 0) {
        fprintf(stderr, "osprey: cannot attach: %s\n", strerror(ENOMEM));
        return 1;
    }
    /* The benchmarks' comparison with py-spy's way: every thread stopped at every round. */
    const char *sampler = getenv("OSPREYD_SAMPLER");
    a->sites.stop_all = sampler != NULL && strcmp(sampler, "ptrace-all") == 0;
    return 0;
}

/* The lock, the events, the images and their unwind rows, then sampling on. 0, or 1 after
 * one line. */
static int perf_attach(void *source, uv_loop_t *loop)
{
    struct attach *a = source;
    uint32_t rate = a->o.rate;
    a->lock = take_lock(a->pid);
    if (a->lock == -1)
        return 1;
    a->loop = loop;
    struct ospd_collector *c = &a->collector;
    if (!a->stream) /* the stream empties the samples every batch; a raw file spills them */
        ospd_spill_enable(c, a->out, ospd_spill_batch());
    char err[512];
    /* The events first: a refusal (no such process, not allowed) is said before any work.
     * OSPREYD_SAMPLER=ptrace takes the ptrace sampler where perf events are allowed (the
     * benchmarks compare the two on one machine). */
    const char *sampler = getenv("OSPREYD_SAMPLER");
    bool want_ptrace = sampler != NULL && strncmp(sampler, "ptrace", 6) == 0;
    int rc = ospd_perf_open(&a->source, a->pid, rate, err, sizeof err);
    if (rc == 0 && want_ptrace)
        ospd_perf_close(&a->source); /* they were allowed: the check of who may attach */
    if ((rc == 0 && want_ptrace) || (rc != 0 && a->source.refused)) {
        if (fall_back_to_ptrace(a, &rate) != 0)
            return 1;
    } else if (rc != 0) {
        fprintf(stderr, "osprey: cannot attach: %s\n", err);
        return 1;
    }
    if (!a->by_ptrace && ospd_ptrace_open(&a->sites, a->pid, rate, false) != 0)
        fprintf(stderr, "osprey: warning: %s: threads blocked all the attach are left out\n",
                strerror(ENOMEM));
    char platform[OSP_PLATFORM_SIZE] = "linux-x86_64";
    ospd_collector_identity(c, a->pid, rate, ospc_clock_ns(CLOCK_REALTIME),
                            ospc_clock_ns(CLOCK_MONOTONIC), platform);
    ospd_proc_unseen(c);
    if (ospd_maps_images(c, c->proc_pid) <= 0)
        fprintf(stderr, "osprey: warning: no images of process %d could be read\n", (int)a->pid);
    char exe_link[64], exe[OSP_MAX_PATH + 1];
    snprintf(exe_link, sizeof exe_link, "/proc/%d/exe", (int)c->proc_pid);
    ssize_t n = c->proc_pid > 0 ? readlink(exe_link, exe, sizeof exe - 1) : -1;
    if (n > 0)
        c->exe_fallback = ospd_utf8_sanitize(exe, (size_t)n);
    c->comm = ospd_target_comm(c->proc_pid);
    build_tables(a);

    uv_timer_init(a->loop, &a->tick);
    a->tick.data = a;
    uv_timer_init(a->loop, &a->stop_timer);
    a->stop_timer.data = a;
    uv_timer_init(a->loop, &a->flush_timer);
    a->flush_timer.data = a;
    uv_signal_init(a->loop, &a->sigint);
    a->sigint.data = a;
    uv_signal_start(&a->sigint, on_signal, SIGINT);
    uv_signal_init(a->loop, &a->sigterm);
    a->sigterm.data = a;
    uv_signal_start(&a->sigterm, on_signal, SIGTERM);
    a->polls = calloc(a->source.ring_count, sizeof *a->polls);
    for (uint32_t i = 0; a->polls != NULL && i < a->source.ring_count; i++)
        if (a->source.rings[i].fd >= 0 &&
            uv_poll_init(a->loop, &a->polls[i], a->source.rings[i].fd) == 0) {
            a->polls[i].data = a;
            uv_poll_start(&a->polls[i], UV_READABLE, on_ring);
        }
    a->poll_count = a->polls != NULL ? a->source.ring_count : 0;
    ospd_watch_start(&a->watch_pid, a->loop, a->pid, on_pidfd, a);

    uint64_t now = ospc_clock_ns(CLOCK_MONOTONIC);
    c->start_mono_ns = now;
    c->start_unix_ns = ospc_clock_ns(CLOCK_REALTIME);
    if (a->source.waits)
        c->waits.since_ns = now;
    a->cpu_at_start = ospd_target_cpu_ns(a->pid);
    ospd_ptrace_begin(&a->sites, c, now);
    ospd_perf_enable(&a->source, true);
    uint64_t tick_ms = a->by_ptrace ? 1000u / rate : TICK_MS; /* a round, or a drain */
    uv_timer_start(&a->tick, on_tick, tick_ms, tick_ms);
    if (a->o.duration > 0)
        uv_timer_start(&a->stop_timer, on_stop, (uint64_t)(a->o.duration * 1000.0), 0);
    if (a->stream && ospd_stream_begin(&a->live, stdout, a->pid, rate) == 0)
        uv_timer_start(&a->flush_timer, on_flush, FLUSH_MS, FLUSH_MS);
    else if (a->stream)
        finish(a, OSPD_EXIT_STOPPED);
    return 0;
}

static bool perf_drain(void *source, bool all)
{
    struct attach *a = source;
    if (!a->finished)
        drain(a, all);
    return a->finished;
}

static void perf_stop(void *source, enum ospd_exit_status status)
{
    finish(source, status);
}

static int perf_close(void *source)
{
    struct attach *a = source;
    free(a->polls);
    ospd_ptrace_close(&a->sites);
    ospd_watch_free(&a->watch_pid);
    if (a->exit_code == 0 && a->o.export_formats != NULL && !a->stream &&
        ospd_session_export(a->out, a->o.export_formats) != 0)
        a->exit_code = 1;
    ospd_collector_free(&a->collector);
    drop_lock(a->lock);
    int rc = a->exit_code;
    free(a);
    return rc;
}

void *ospd_perf_collector_new(const struct ospd_perf_options *o)
{
    struct attach *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->o = *o;
    a->pid = o->pid;
    a->out = o->out;
    a->stream = o->stream;
    a->lock = -2;
    a->watch_pid.pidfd = -1;
    ospd_collector_init(&a->collector);
    return a;
}

const struct ospd_source_ops ospd_perf_events = {
    .name = "perf events",
    .attach = perf_attach,
    .drain = perf_drain,
    .stop = perf_stop,
    .close = perf_close,
};
