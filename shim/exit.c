/* exit.c — the end of a profiled image.
 *
 * Owns the exit handler (sampling stopped, the last CPU time paid, waits flushed, the final
 * image list and the EXIT record published, then a bounded wait for ospreyd, whose failure or
 * absence is said in one line), the look at that collector while the exit waits (ended,
 * stopped: shim/README.md, "The exit's wait for its collector"), the CPU time paid before
 * _exit, and reading /proc/PID/stat. Never changes the program's exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"

#ifndef OSPREY_DAEMON_WAIT_MS
#define OSPREY_DAEMON_WAIT_MS 5000
#endif
/* The collector is looked at this often while the exit waits (ns). */
#define COLLECTOR_LOOK_NS 16000000ull

/* Sleep with the C library's nanosleep, guarded as the program's own sleeps are (guard.c):
 * the exit handler's naps run on the program's thread, where the guard stands aside once
 * profiling is off. Not inlined: like guard.c's wrappers, one frame of ours between the wait
 * and its caller, which the wait's stack leaves out. */
__attribute__((noinline)) static void nap_guarded(const struct timespec *req)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "nanosleep");
    if (sym == NULL)
        return;
    int (*real)(const struct timespec *, struct timespec *);
    memcpy(&real, &sym, sizeof(real));
    sigset_t old;
    int guarded = osp__timespec_blocks(req) ? osp__guard_begin(&old, sym) : 0;
    real(req, NULL);
    osp__guard_end(guarded, &old);
}

/* /proc/PID/stat (`path`) read into `buf` with raw calls: its fields after comm, from the
 * state (field 3) on, or NULL. */
static const char *proc_stat_fields(const char *path, char *buf, size_t size)
{
    long fd = osp__sys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0);
    if (fd < 0)
        return NULL;
    long n = osp__sys(SYS_read, fd, (long)buf, (long)size - 1, 0, 0);
    osp__sys(SYS_close, fd, 0, 0, 0, 0);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    const char *end = strrchr(buf, ')'); /* "pid (comm) S ...": comm may hold anything */
    return end != NULL && end[1] == ' ' ? end + 2 : NULL;
}

/* Has process pid ended (no such process, or a zombie its reaper has not collected: osprey is
 * the run's subreaper)? Raw calls, at exit. */
static int process_ended(long pid)
{
    if (osp__forbidden & OSP__FORBIDS_KILL)
        return 0; /* a filter kills the check: the bounded wait decides */
    if (osp__sys(SYS_kill, pid, 0, 0, 0, 0) != 0)
        return errno == ESRCH;
    char path[48], stat[160];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const char *fields = proc_stat_fields(path, stat, sizeof stat);
    return fields != NULL && (fields[0] == 'Z' || fields[0] == 'X');
}

/* No such process (a zombie is not gone here). */
static int process_gone(long pid)
{
    return !(osp__forbidden & OSP__FORBIDS_KILL) && osp__sys(SYS_kill, pid, 0, 0, 0, 0) != 0 &&
           errno == ESRCH;
}

/* The collector the exit waits for: the ring's current owner, the process daemon_pid names
 * (each collector that attaches writes its own, after the start time and pid namespace that
 * tell it from a process that took its pid since). */
static struct {
    int32_t pid;         /* daemon_pid when last looked at; 0: not looked at yet */
    long pidfd;          /* its pidfd, or -1 (not opened, an old kernel, a sandbox) */
    int known;           /* its /proc/PID/stat gave the header's start time: the pid is it */
    int legacy;          /* a collector that does not say who it is: by the pid alone */
    int elsewhere;       /* a pid of another pid namespace than ours: never looked at */
    int proc_ours;       /* /proc is our pid namespace's (/proc/self is us); -1: not read */
    char state;          /* the state letter last read, 0 when none */
    int exit_code;       /* a zombie's wait status, or -1 */
    uint64_t looked_ns;  /* CLOCK_MONOTONIC of the last look */
    uint64_t stopped_ns; /* of the first look of a stop still going on, 0 */
    enum osp__collector_seen seen;
} collector = {.pidfd = -1, .exit_code = -1, .proc_ours = -1};

/* The number in a link's text ("pid:[4026531836]", "1234"), or 0. Raw calls. */
static uint64_t link_number(const char *path)
{
    char text[64];
    /* The call's shape seccomp.c tries (readlink where there is one). */
#ifdef SYS_readlink
    long n = osp__sys(SYS_readlink, (long)path, (long)text, sizeof text - 1, 0, 0);
#else
    long n = osp__sys(SYS_readlinkat, AT_FDCWD, (long)path, (long)text, sizeof text - 1, 0);
#endif
    if (n <= 0)
        return 0;
    text[n] = '\0';
    const char *p = text;
    while (*p != '\0' && (*p < '0' || *p > '9'))
        p++;
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    return v;
}

/* Look at the collector (every COLLECTOR_LOOK_NS at most): its pidfd, /proc/PID/stat where
 * /proc is this pid namespace's, else kill(pid, 0). A pid in another pid namespace than ours
 * (a collector started apart, elsewhere) names nothing here: UNKNOWN. Raw calls, at exit. */
static enum osp__collector_seen collector_look(void)
{
    struct osp_ring_header *h = osp__ring_header;
    /* Acquire: pairs with ospreyd's release store of its pid, after its start and namespace;
     * the fence and the second load: a collector that attached meanwhile is looked at next. */
    int32_t pid = atomic_load_explicit(&h->daemon_pid, memory_order_acquire);
    uint64_t started = atomic_load_explicit(&h->daemon_started, memory_order_relaxed);
    uint64_t pid_ns = atomic_load_explicit(&h->daemon_pid_ns, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (pid <= 0 || atomic_load_explicit(&h->daemon_pid, memory_order_relaxed) != pid)
        return OSP__COLLECTOR_UNKNOWN;
    if (pid != collector.pid) { /* the first look, or another collector attached */
        if (collector.pidfd >= 0)
            osp__sys(SYS_close, collector.pidfd, 0, 0, 0, 0);
        collector.pid = pid;
        collector.pidfd = -1;
        collector.known = 0;
        collector.stopped_ns = 0;
        static uint64_t own_ns;
        if (own_ns == 0)
            own_ns = link_number("/proc/self/ns/pid");
        /* Without the namespaces to compare, by the pid alone, as before. */
        collector.legacy = started == 0 || pid_ns == 0 || own_ns == 0;
        collector.elsewhere = !collector.legacy && own_ns != pid_ns;
        if (!collector.elsewhere && !(osp__forbidden & OSP__FORBIDS_PIDFD)) {
            collector.pidfd = osp__sys(SYS_pidfd_open, pid, 0, 0, 0, 0);
            if (collector.pidfd < 0 && errno == ESRCH)
                return OSP__COLLECTOR_ENDED; /* no such process in our namespace */
        }
    }
    if (collector.elsewhere)
        return OSP__COLLECTOR_UNKNOWN;
    enum osp__collector_seen seen = OSP__COLLECTOR_UNKNOWN;
    /* /proc/PID/stat names our pid only where /proc is our namespace's (/proc/self is us). */
    if (collector.proc_ours < 0)
        collector.proc_ours = link_number("/proc/self") == (uint64_t)osp__booted_pid;
    if (collector.proc_ours && !collector.legacy) {
        char path[48], stat[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        errno = 0;
        const char *fields = proc_stat_fields(path, stat, sizeof stat);
        if (fields == NULL && errno == ENOENT)
            return OSP__COLLECTOR_ENDED; /* ended and reaped */
        seen = osp__collector_seen(fields, started, &collector.state, &collector.exit_code);
        if (seen == OSP__COLLECTOR_ENDED)
            return seen;
        collector.known |= seen != OSP__COLLECTOR_UNKNOWN;
    }
    /* Readable once the process has ended, a zombie too; a pid taken since never made it so
     * while ours ran. */
    if (collector.pidfd >= 0 && !(osp__forbidden & OSP__FORBIDS_SOCKETS)) { /* ppoll's flag */
        struct pollfd ended = {.fd = (int)collector.pidfd, .events = POLLIN};
        struct timespec now = {0, 0};
        if (osp__sys(SYS_ppoll, (long)&ended, 1, (long)&now, 0, 8) == 1)
            return OSP__COLLECTOR_ENDED;
    } else if (collector.pidfd < 0 && process_gone(pid)) {
        return OSP__COLLECTOR_ENDED;
    }
    return seen;
}

/* What the exit goes by: ENDED, or STOPPED once the collector has been stopped at every look
 * for OSP__COLLECTOR_STOPPED_NS; else RUNNING or UNKNOWN (waited for). Looks again only
 * COLLECTOR_LOOK_NS after the last look. Raw calls, at exit. */
static enum osp__collector_seen collector_verdict(void)
{
    uint64_t now = osp__mono_ns();
    if (collector.looked_ns != 0 && now - collector.looked_ns < COLLECTOR_LOOK_NS)
        return collector.seen;
    collector.looked_ns = now;
    enum osp__collector_seen seen = collector_look();
    if (seen == OSP__COLLECTOR_STOPPED) {
        if (collector.stopped_ns == 0)
            collector.stopped_ns = now;
        if (now - collector.stopped_ns < OSP__COLLECTOR_STOPPED_NS)
            seen = OSP__COLLECTOR_RUNNING;
    } else {
        collector.stopped_ns = 0;
    }
    collector.seen = seen;
    return seen;
}

/* Wake the collector (SIGURG: ignored by default, so one still starting is not hurt) through
 * its pidfd once the pid is known to be it, or where nothing can tell (by the pid alone, as
 * before: a collector that does not say who it is, or a /proc that is not our namespace's);
 * not at all when the pid is known to be another process's (its tick reads the ring all the
 * same). */
static void collector_wake(void)
{
    if (collector_verdict() == OSP__COLLECTOR_ENDED || collector.elsewhere || collector.pid <= 0)
        return;
    if (collector.pidfd >= 0 && (collector.known || collector.legacy || !collector.proc_ours))
        osp__sys(SYS_pidfd_send_signal, collector.pidfd, SIGURG, 0, 0, 0);
    else if (collector.pidfd < 0 && collector.legacy && !(osp__forbidden & OSP__FORBIDS_KILL))
        osp__sys(SYS_kill, collector.pid, SIGURG, 0, 0, 0);
}

/* The collector's pidfd closed, once the exit no longer looks at it. */
static void collector_forget(void)
{
    if (collector.pidfd >= 0)
        osp__sys(SYS_close, collector.pidfd, 0, 0, 0, 0);
    collector.pidfd = -1;
}

/* The line for a collector that will not write the profile: ENDED or STOPPED. */
static void collector_warn(enum osp__collector_seen seen)
{
    if (seen == OSP__COLLECTOR_STOPPED)
        osp__warn("ospreyd (process %d) was stopped (%s) before writing %s; the program did "
                  "not wait for it: the profile is written only if ospreyd is continued",
                  (int)collector.pid, collector.state == 't' ? "by a debugger" : "SIGSTOP",
                  osp__out_path);
    else if (collector.state == 'Z' && collector.exit_code > 0 && WIFSIGNALED(collector.exit_code))
        osp__warn("ospreyd was killed by signal %d (%s) before writing %s; the profile is "
                  "missing",
                  WTERMSIG(collector.exit_code), strsignal(WTERMSIG(collector.exit_code)),
                  osp__out_path);
    else
        osp__warn("ospreyd ended before writing %s; the profile is missing", osp__out_path);
}

static void wait_for_daemon(void)
{
    uint64_t limit = (uint64_t)OSPREY_DAEMON_WAIT_MS * 1000000u;
    uint64_t start = osp__mono_ns();
    unsigned waits = 0;
    for (;;) {
        /* Acquire: pairs with ospreyd's release store after the file is renamed or
         * daemon_error is written. */
        uint32_t state =
            atomic_load_explicit(&osp__ring_header->daemon_state, memory_order_acquire);
        if (state == OSP_DAEMON_DONE)
            return;
        if (state == OSP_DAEMON_FAILED) {
            char line[sizeof(osp__ring_header->daemon_error)];
            memcpy(line, osp__ring_header->daemon_error, sizeof(line));
            line[sizeof(line) - 1] = '\0';
            for (char *c = line; *c; c++)
                if (*c == '\n' || *c == '\r')
                    *c = ' ';
            osp__warn("%s", line);
            return;
        }
        /* The collector that attached, ended (a zombie too) or stopped for a second: one line,
         * unless it wrote the profile just before (its DONE is stored before it ends). */
        enum osp__collector_seen seen =
            state == OSP_DAEMON_ATTACHED ? collector_verdict() : OSP__COLLECTOR_UNKNOWN;
        if ((seen == OSP__COLLECTOR_ENDED || seen == OSP__COLLECTOR_STOPPED) &&
            atomic_load_explicit(&osp__ring_header->daemon_state, memory_order_acquire) == state) {
            collector_warn(seen);
            return;
        }
        /* One that ended before it attached (killed, or crashed at its start) is looked for
         * every 16 ms: otherwise the program's exit would wait the whole limit for it. */
        if (state == OSP_DAEMON_NONE && osp__daemon_spawned_pid > 0 && (waits++ & 15) == 0 &&
            process_ended(osp__daemon_spawned_pid)) {
            osp__warn("ospreyd ended before it attached; no profile was written to %s",
                      osp__out_path);
            return;
        }
        if (osp__mono_ns() - start >= limit) {
            if (OSPREY_DAEMON_WAIT_MS % 1000 == 0)
                osp__warn("ospreyd did not finish writing %s within %d s; the profile may be "
                          "missing",
                          osp__out_path, OSPREY_DAEMON_WAIT_MS / 1000);
            else
                osp__warn("ospreyd did not finish writing %s within %d ms; the profile may be "
                          "missing",
                          osp__out_path, OSPREY_DAEMON_WAIT_MS);
            return;
        }
        /* Until ospreyd's state changes (it wakes this futex after each store), or 1 ms. A
         * shared futex: the word is in memory both processes map. */
        struct timespec nap = {0, 1000000};
        osp__sys(SYS_futex, (long)&osp__ring_header->daemon_state, FUTEX_WAIT, (long)state,
                 (long)&nap, 0);
    }
}

/* The registry lock, waiting at most a second: exit() may run in a signal handler that
 * interrupted the lock's holder on this very thread. */
static int lock_bounded(pthread_mutex_t *lock)
{
    struct timespec limit;
    osp__clock_read(CLOCK_REALTIME, &limit);
    limit.tv_sec += 1;
    return pthread_mutex_timedlock(lock, &limit);
}

/* atexit: stop sampling, flush, publish the EXIT record, wait for ospreyd (bounded). Never
 * changes the exit status; a forked child's exit does nothing. */
void osp__at_exit(void)
{
    /* Inactive first: a forked child is, and the sandbox check before getpid, a system call
     * a sandbox may forbid. */
    if (!osp__is_active())
        return;
    if (atomic_load_explicit(&osp__sandboxed, memory_order_relaxed)) {
        atomic_store_explicit(&osp__active_flag, 0, memory_order_release);
        /* Inside a sandbox: the exit record alone (shared memory, no system call); ospreyd
         * writes the profile on its own, and nobody waits for it. */
        struct osp_rec_exit rec = {
            .dropped = atomic_load_explicit(&osp__ring_header->dropped, memory_order_relaxed)};
        if (pthread_mutex_trylock(&osp__the_registry.lock) == 0) {
            osp__event_ring_write(&osp__events, OSP_REC_EXIT, &rec, sizeof(rec), NULL, 0);
            osp__the_registry.stopped = 1;
            pthread_mutex_unlock(&osp__the_registry.lock);
        }
        return;
    }
    if (getpid() != osp__booted_pid)
        return;
    /* A forked child's greeting not answered yet: answered now, or its own collector. */
    osp__forked_settle(1);
    atomic_store_explicit(&osp__active_flag, 0, memory_order_release);
    /* OSPREY_RING: no collector may attach once we are gone (one that did holds the ring). */
    int ring_taken = osp__ring_unlink();
    osp__registry_disarm_timers(&osp__the_registry);
    /* Bounded, like the registry lock below: without it the final image list is skipped. */
    int have_images = lock_bounded(&osp__images_lock) == 0;
    if (have_images)
        osp__images_scan(&osp__image_table); /* the loader lock, never under the registry lock */

    struct osp__registry *reg = &osp__the_registry;
    /* Acquire: pairs with ospreyd's release store of its state. */
    int attached = atomic_load_explicit(&osp__ring_header->daemon_state, memory_order_acquire) ==
                   OSP_DAEMON_ATTACHED;
    for (int attempt = 0;; attempt++) {
        if (lock_bounded(&reg->lock) != 0) {
            if (have_images)
                pthread_mutex_unlock(&osp__images_lock);
            osp__warn("the profiler's registry is locked at exit; the profile at %s may be "
                      "incomplete",
                      osp__out_path);
            return;
        }
        if (attempt == 0) {
            osp__registry_pay_at_exit(reg);
            osp__registry_flush_waits(reg, osp__mono_ns());
            if (have_images)
                osp__images_emit(&osp__image_table, &osp__events);
        }
        struct timespec cpu = {0, 0};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
        struct osp_rec_exit rec = {
            .end_unix_ns = osp__unix_ns(),
            .dropped = atomic_load_explicit(&osp__ring_header->dropped, memory_order_relaxed),
            .process_cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec,
        };
        int err = osp__event_ring_write(&osp__events, OSP_REC_EXIT, &rec, sizeof(rec), NULL, 0);
        if (err == 0 || attempt >= 200 || !attached) {
            /* A forked child that recorded nothing leaves no profile: nothing to wait for. */
            if (osp__ring_header->ring_flags & OSP_RING_FORKED && !osp__registry_recorded(reg) &&
                atomic_load_explicit(&osp__ring_header->escapes, memory_order_relaxed) == 0)
                osp__daemon_spawned = 0;
            reg->stopped = 1; /* nothing follows the exit record */
            pthread_mutex_unlock(&reg->lock);
            break;
        }
        pthread_mutex_unlock(&reg->lock);
        /* The ring is full and ospreyd is draining it: give it a moment — not when it has
         * ended or stays stopped (the wait below says so). */
        attached = atomic_load_explicit(&osp__ring_header->daemon_state, memory_order_acquire) ==
                   OSP_DAEMON_ATTACHED;
        enum osp__collector_seen seen = attached ? collector_verdict() : OSP__COLLECTOR_UNKNOWN;
        attached &= seen != OSP__COLLECTOR_ENDED && seen != OSP__COLLECTOR_STOPPED;
        struct timespec nap = {0, 1000000};
        nap_guarded(&nap);
    }
    if (have_images)
        pthread_mutex_unlock(&osp__images_lock);
    /* Release: the exit record's head store (B) happens before; ospreyd loads acquire. */
    atomic_store_explicit(&osp__ring_header->shim_state, OSP_SHIM_EXITED, memory_order_release);
    /* Acquire: pairs with ospreyd's release; the profile ended at its duration, ospreyd is gone. */
    int stopped = atomic_load_explicit(&osp__ring_header->stopped, memory_order_acquire) != 0;
    /* A descendant (a forked child, an image another profiled process started) whose
     * collector has not attached yet (it starts a few milliseconds after the process) does
     * not wait for it: the ring outlives the process in the collector's descriptor, and the
     * collector reads it to the end whenever it comes; osprey waits for every collector of
     * the run (OSP_RUN_LOCK). Nor does one whose collector holds the run's lock, attached or
     * not: osprey waits for it (a short command's collector, started faster, attached before
     * it ended, and it waited for its profile to be written). The run's first process waits,
     * so that its profile is there when it has ended; and so does a process in a pid namespace
     * made during the run (its session's leader outside it: getsid says 0; unshare --pid
     * --fork, bwrap), whose first process's end kills every other process of the namespace,
     * the collector started in it among them. */
    if (osp__run_root_pid != 0 && osp__run_root_pid != (long)getpid() && getsid(0) != 0 &&
        (osp__run_locked || atomic_load_explicit(&osp__ring_header->daemon_state,
                                                 memory_order_acquire) == OSP_DAEMON_NONE))
        osp__daemon_spawned = 0;
    /* A collector started apart is waited for as a spawned one once it has attached (or
     * opened the ring: its name was gone); without
     * one, what the ring held is lost, and one line says so (not what it dropped). */
    if (osp__boot_env.has_ring) {
        osp__daemon_spawned =
            ring_taken || atomic_load_explicit(&osp__ring_header->daemon_state,
                                               memory_order_acquire) != OSP_DAEMON_NONE;
        if (!osp__daemon_spawned) {
            collector_forget();
            osp__warn("no collector attached to ring %s before the program ended (ospreyd "
                      "--attach-ring %s --out PATH); no profile was written",
                      osp__boot_env.ring, osp__boot_env.ring);
            return;
        }
    }
    if (osp__daemon_spawned && !stopped) {
        /* ospreyd reads the rings on a tick: wake it now rather than at its next one. */
        if (atomic_load_explicit(&osp__ring_header->daemon_state, memory_order_acquire) ==
            OSP_DAEMON_ATTACHED)
            collector_wake();
        wait_for_daemon();
    }
    collector_forget();
    /* Relaxed: stored before DONE, whose acquire wait_for_daemon made. */
    if (atomic_load_explicit(&osp__ring_header->wrote_beside, memory_order_relaxed)) {
        char beside[PATH_MAX + 32];
        if (osp_per_pid_path(osp__out_path, (long)getpid(), NULL, beside, sizeof beside) == 0)
            osp__warn("%s was written by another profiled process meanwhile; this profile is %s",
                      osp__out_path, beside);
    }
    /* Relaxed: counts read once at the end. */
    uint64_t lost = atomic_load_explicit(&osp__ring_header->dropped, memory_order_relaxed) +
                    atomic_load_explicit(&osp__ring_header->daemon_dropped, memory_order_relaxed);
    if (lost > 0 && !stopped) /* after a stop, the profile said so itself */
        osp__warn("%llu sampling periods could not be recorded (%s); the profile undercounts",
                  (unsigned long long)lost,
                  atomic_load_explicit(&osp__ring_header->daemon_dropped, memory_order_relaxed) > 0
                      ? "ospreyd's memory budget"
                  : osp__boot_env.has_ring
                      ? "the shared rings were full: ospreyd attached late or fell behind"
                      : "the shared rings were full: ospreyd fell behind");
}

void osp__pay_before_exit(void)
{
    /* Inactive (after exit's handler, in a child we do not profile), in a sandbox (getpid may
     * be forbidden), or in a vfork child (the parent's memory, another process): nothing. */
    if (!osp__is_active() || atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) ||
        getpid() != osp__booted_pid)
        return;
    osp__forked_settle(1); /* a forked child's greeting not answered yet, as at exit */
    sigset_t old;
    if (osp__sigprof_mask_raw(SIG_BLOCK, &old) != 0) /* no handler of ours from here on */
        return;
    osp__registry_pay_at_exit(&osp__the_registry);
}

int osp__threads_in_process(void)
{
    char buf[1024];
    const char *p = proc_stat_fields("/proc/self/stat", buf, sizeof buf);
    /* num_threads is field 20; p is at field 3. */
    for (int field = 3; p != NULL && *p != '\0'; p++)
        if (*p == ' ' && ++field == 20)
            return atoi(p + 1);
    return 0;
}
