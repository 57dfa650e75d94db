/* start.c — the one start of a profile, and the registration of threads.
 *
 * Owns osp__profile_start, the sequence both a process's boot (boot.c) and a forked child
 * (fork.c) run: the ring, the unwind tables, the switch events, the registry, the image list,
 * the run published as active, the collector (started or greeted), and the descriptors handed
 * over. Also the public osp_prof_thread_register/unregister, the pthread key that unregisters
 * a thread however it ends, and the image list refreshed as threads register (and our SIGPROF
 * handler put back in front of one the program set behind the C library).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"
#include "osp_handler.h"
#include "osprey_prof.h"

#define OSP__MAX_SLOTS 16384u

/* Its destructor unregisters a registered thread however it ends: by returning, by
 * pthread_exit or by cancellation alike. */
static pthread_key_t thread_key;
static int thread_key_ready;

static void thread_ends(void *value)
{
    (void)value;
    osp_prof_thread_unregister();
}

static int thread_key_init(void)
{
    if (thread_key_ready)
        return 0;
    int err = pthread_key_create(&thread_key, thread_ends);
    if (err)
        return -err;
    thread_key_ready = 1;
    return 0;
}

/* Arrange for the calling (registered) thread to be unregistered when it ends. */
static void thread_key_mark(void)
{
    if (thread_key_ready)
        pthread_setspecific(thread_key, (void *)1);
}

void osp_prof_thread_register(int64_t fiber_id, const char *label)
{
    /* Relaxed: a one-way flag. A thread that starts inside a sandbox is not registered: its
     * timers are system calls the sandbox may kill the program for. */
    if (!osp__is_active() || atomic_load_explicit(&osp__sandboxed, memory_order_relaxed))
        return;
    if (osp__registry_register(&osp__the_registry, fiber_id, label) == 0) {
        thread_key_mark();
        osp__sigmask_adopt(0); /* sampled even where the program blocks every signal */
    }
    /* A runtime that set SIGPROF's action behind the C library did so before starting its
     * threads (Go's, where cgo gives it no sigaction): ours goes back in front of it. */
    static _Atomic int reclaimed_said;
    if (osp__sigprof_reclaim() == 1 &&
        atomic_exchange_explicit(&reclaimed_said, 1, memory_order_relaxed) == 0)
        osp__warn("the program set its SIGPROF handler without the C library; it runs behind "
                  "Osprey's from now on (signals of each sent before may have reached the "
                  "other)");
    osp__images_refresh();
}

void osp_prof_fiber_switch(int64_t fiber_id, const char *label, const void *stack,
                           size_t stack_size)
{
    struct osp__slot *s = osp__tls_slot;
    if (s == NULL)
        return;
    uint64_t lo = (uint64_t)(uintptr_t)stack;
    uint64_t hi = stack != NULL && stack_size <= UINT64_MAX - lo ? lo + stack_size : 0;
    /* The thread's own handler reads the bounds, id and label (stacks.c, fibers.c): hi
     * cleared first and set last, so a sample between the stores sees none rather than half
     * of one. The label is read only when a sample is taken on the fiber, without faulting. */
    s->fiber_hi = 0;
    atomic_signal_fence(memory_order_release);
    s->fiber_lo = lo;
    s->fiber_id = hi != 0 ? fiber_id : 0;
    s->fiber_label = label;
    atomic_signal_fence(memory_order_release);
    s->fiber_hi = hi;
}

void osp__images_refresh(void)
{
    /* Relaxed: a one-way flag; inside a sandbox not even getpid (a dlclose's refresh). */
    if (!osp__is_active() || atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) ||
        getpid() != osp__booted_pid)
        return;
    /* Threads register at once: the image table is one. Lock order: images, then registry. */
    osp__mutex_lock(&osp__images_lock);
    if (osp__images_changed(&osp__image_table)) {
        osp__images_scan(&osp__image_table); /* the loader lock, never under the registry lock */
        osp__mutex_lock(&osp__the_registry.lock);
        if (!osp__the_registry.stopped)
            osp__images_emit(&osp__image_table, &osp__events);
        pthread_mutex_unlock(&osp__the_registry.lock);
    }
    pthread_mutex_unlock(&osp__images_lock);
}

void osp_prof_thread_unregister(void)
{
    /* Not osp__is_active(): after the exit handler cleared it, a thread that ends must still
     * leave the registry (its timer, its slot). Acquire: pairs with the release in boot. */
    if (!atomic_load_explicit(&osp__registry_ready, memory_order_acquire))
        return;
    osp__registry_unregister(&osp__the_registry);
}

int osp__profile_start(const struct osp__start *start)
{
    int forked = start->parent != 0;
    pid_t pid = getpid();
    const char *step = "start profiling"; /* what failed, for the line that says so */
    int err = osp__ring_create(start->rate, start->random_bits, start->reserve);
    if (err != 0) {
        osp__ring_unlink(); /* with OSPREY_RING, the temporary name it made */
        if (forked)
            osp__warn("cannot create the shared-memory ring of forked process %d: %s; it is not "
                      "profiled",
                      (int)pid, strerror(-err));
        else if (err != -ECANCELED) /* else osp__ring_create said why */
            osp__warn("cannot create the shared-memory ring: %s; profiling is off", strerror(-err));
        if (start->greeting >= 0)
            osp__sys(SYS_close, start->greeting, 0, 0, 0, 0);
        if (forked)
            pthread_mutex_unlock(&osp__images_lock);
        return err;
    }
    /* A filter kills the collector's wake-up (seccomp.c): it reads on its tick from the start,
     * as after a wake that failed. Relaxed: the collector attaches after this store. */
    if (osp__forbidden & OSP__FORBIDS_KILL)
        atomic_store_explicit(&osp__ring_header->napping, OSP_NAP_REFUSED, memory_order_relaxed);
    if (forked) {
        osp__ring_header->stop_at_ns = start->stop_at_ns;
        osp__ring_header->parent_pid = (int32_t)start->parent;
        osp__ring_header->ring_flags |= OSP_RING_FORKED;
    } else {
        uint64_t stop_at = osp__stop_at_from_env(osp__ring_header->start_mono_ns);
        if (stop_at != 0)
            osp__ring_header->stop_at_ns = stop_at;
    }
    osp__unwind_create();
    err = !forked && osp__boot_env.has_ring ? osp__ring_publish() : 0;
    if (err != 0) {
        if (err == -EEXIST)
            osp__warn("/dev/shm/osprey-ring-%s is there already (OSPREY_RING): profiling is off",
                      osp__boot_env.ring);
        else
            osp__warn("cannot name the ring /dev/shm/osprey-ring-%s (OSPREY_RING): %s; profiling "
                      "is off",
                      osp__boot_env.ring, strerror(-err));
        osp__ring_destroy();
        return err;
    }
    /* The kernel allocates and clears an event ring's pages as it is mapped: an image that
     * does not reserve its ring gets a forked child's quarter, read at every drain as a forked
     * worker's are (shim/README.md, "Measuring"). */
    /* Not for a collector started apart: nobody would map them in time (its waits are the
     * shim's own, osp__kernel_waits_off below). */
    int refused = 0;
    osp__switch_count =
        osp__boot_env.has_ring
            ? 0
            : osp__switches_open(osp__switch_fds, OSP_MAX_SWITCH_FDS,
                                 start->reserve ? OSP_SWITCH_RING_PAGES : OSP__SWITCH_FORK_PAGES,
                                 &refused);
    osp__ring_header->switches_refused = refused; /* for the report: how waits were timed */
    osp__calls_timed_set(osp__switch_count == 0);
    if (forked)
        osp__timer_ids_after_fork();
    err = osp__registry_init(&osp__the_registry, &osp__events, OSP__MAX_SLOTS);
    if (err == 0) {
        osp__registry_set_table(&osp__the_registry, osp__ring_header);
        osp__set_period(start->rate);
        osp__header = osp__ring_header;
    }
    if (err == 0)
        err = thread_key_init(); /* a forked child's is its parent's, made at its boot */
    if (err == 0 && !forked)
        err = osp__images_init(&osp__image_table);
    if (err == 0 && !forked)
        err = osp__images_scan(&osp__image_table);
    if (err == 0 && !forked)
        osp__python_detect();
    if (err == 0) {
        if (forked)
            osp__images_unsend(&osp__image_table); /* osp__images_lock held by the caller */
        osp__mutex_lock(&osp__the_registry.lock);
        osp__images_emit(&osp__image_table, &osp__events);
        pthread_mutex_unlock(&osp__the_registry.lock);
        if (!forked && (err = osp__sigprof_install(osp__sigprof_handler)) != 0)
            step = "install the SIGPROF handler (rt_sigaction)";
    }
    if (forked)
        pthread_mutex_unlock(&osp__images_lock);
    if (err != 0) {
        if (!forked)
            osp__warn("cannot %s: %s; profiling is off", step, strerror(-err));
        osp__ring_destroy();
        if (start->greeting >= 0)
            osp__sys(SYS_close, start->greeting, 0, 0, 0, 0);
        return err;
    }
    if (forked)
        osp__bookkeeping_set(osp__run_root_pid, (long)pid);
    osp__booted_pid = pid;
    if (!forked) {
        osp__read_code_init();
        osp__fds_timed_scan(); /* sockets with a timeout inherited across exec */
        pthread_atfork(NULL, NULL, start->at_fork);
    }
    atomic_store_explicit(&osp__registry_ready, 1, memory_order_release);
    /* Release: a thread that sees the flag sees the registry and ring set up above. */
    atomic_store_explicit(&osp__active_flag, 1, memory_order_release);
    if (!osp__boot_env.has_ring)
        osp__forks_listen();
    int greeted_parent = 0;
    if (!forked && osp__boot_env.has_ring) {
        osp__daemon_spawned = 0; /* a collector started apart attaches by the ring's name */
    } else if (!forked) {
        /* A later image greets the collector it was pointed to (boot.c), as a forked child
         * does, and starts one only when that one is gone or refuses: no process start here.
         * The run's lock either way: a greeted collector holds the one its greeter handed on,
         * and the image need not wait at its exit for its profile (exit.c). */
        osp__run_lock_take();
        osp__run_locked = osp__run_lock_fd >= 0;
        osp__daemon_spawned_pid = 0;
        osp__daemon_spawned = (start->greeting >= 0 && osp__greet_parent(start->greeting) == 0) ||
                              osp__spawn_daemon(&osp__boot_env) == 0;
    } else {
        osp__daemon_spawned_pid =
            0; /* the parent's; a collector the parent's hands over has none */
        /* Where the parent's collector had attached, the greeting sent and its answer not
         * waited for: the handler confirms it once it has come, the first guarded wait, the
         * exec or the exit settles it (osp__forked_settle), and the descriptors stay until
         * then (a child without an answer starts its own collector with them). Else (a
         * collector still starting answers once it has) waited for here, as an image does. */
        err = start->defer_answer ? osp__greet_deferred(start->greeting)
                                  : osp__greet_parent(start->greeting);
        greeted_parent = err == 0 && start->parent_ring != NULL;
        /* A child in a session of its own whose parent's collector is gone is a daemon whose
         * middle process has ended: a collector of its own would be in its session, not the
         * program's, and would hold the run's lock as long as the daemon runs (osprey would
         * wait for it); its parent's collector would have ended its profile (ospreyd.c). */
        if (err != 0 && osp__left_session()) {
            osp__warn("process %d left the session (a daemon) after its parent's collector "
                      "ended; it is not profiled",
                      (int)pid);
            osp__daemon_spawned = 0;
        } else {
            osp__daemon_spawned = err == 0 || osp__spawn_daemon(&osp__boot_env) == 0;
        }
    }
    /* The images this one starts greet its collector on its socket; a forked child's, the
     * parent's collector it greeted (its own starts only once it has sampled). */
    osp__greet_set(greeted_parent ? start->parent_ring
                   : osp__daemon_spawned && osp__forks_fd >= 0 && !osp__boot_env.has_ring
                       ? osp__shm_name
                       : NULL);
    if (!(forked && start->defer_answer && err == 0)) {
        osp__handover_close(); /* the ring, the switch events: the collector's now */
        if (!osp__daemon_spawned)
            osp__kernel_waits_off(); /* nobody will read them */
    }
    /* The thread last, a forked child's as the main thread: its timers start sampling now, and
     * none of this start's CPU or waits are the program's. The main thread registered before
     * ospreyd's spawn once, and the kernel's records timed its vfork and reap as the program's
     * waits: 0.10-0.30 s under load (2 cores, 8 busy loops), at the site of whatever stack
     * the thread showed next, or at none (shim/README.md, "Waits from the kernel"). */
    if (forked)
        osp_prof_thread_register(start->fiber, start->label);
    else if (gettid() == pid)
        osp_prof_thread_register(0, "main");
    return 0;
}
