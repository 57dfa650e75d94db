/* fork.c — forked children and processes the program clones itself.
 *
 * Owns the pthread_atfork child handler and the child of a raw clone: the parent's ring,
 * tables and events let go of, then a profile of the child's own (osp__profile_start) unless
 * the parent's had stopped, the program took SIGPROF or entered a sandbox, or
 * OSPREY_PROFILE_FORKS=0.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"
#include "osp_policy.h"
#include "osp_unwind.h"

/* In a forked child, before fork returns: a profile of its own, started as boot starts one
 * (osp__profile_start), from what boot read and decided; the images are the parent's at the
 * fork, the unwind tables the parent's (still mapped: the address space is the same), the
 * thread the one that forked, under its name. Its collector is started by the one greeted
 * with the ring (`parent_ring`: the parent's, or where that has not attached, the one the
 * parent greeted, osp__fork_greets; the parent's, `own_ring`, when that one is gone); when
 * none can be reached or answers (spawn.c), one is started as boot starts one. */
static void boot_forked(pid_t parent, int64_t fiber, const char *label, uint64_t stop_at_ns,
                        const char *parent_ring, int parent_attached, const char *own_ring,
                        int own_attached)
{
    pid_t pid = getpid();
    /* A thread of the parent's that held this lock at the fork was reading the loaded objects
     * (perhaps under the loader's own lock, which is held for good here): neither the list
     * nor a new scan can be trusted, and the child is left unprofiled. */
    if (pthread_mutex_trylock(&osp__images_lock) != 0) {
        pthread_mutex_init(&osp__images_lock, NULL);
        osp__warn("forked process %d is not profiled: it was forked while the profiler read the "
                  "loaded objects",
                  (int)pid);
        return;
    }
    if (osp_per_pid_path(osp__profile_absolute, (long)pid, NULL, osp__out_path,
                         sizeof osp__out_path) != 0) {
        pthread_mutex_unlock(&osp__images_lock);
        return;
    }
    long greeting = osp__greeting_connect(parent_ring);
    /* That collector gone already (its program ended at once, as daemon(3)'s caller does), or
     * of another user's (this process changed its user): the parent's own socket, as before,
     * whose greetings its parent's collector takes when the parent ends having recorded
     * nothing (daemon/forks.c), and whose collector names a child of another user's. */
    if (greeting < 0 && strcmp(parent_ring, own_ring) != 0) {
        parent_ring = own_ring;
        parent_attached = own_attached;
        greeting = osp__greeting_connect(parent_ring);
    }
    /* A child in another session than the run's (a daemon: its parent called setsid) cannot
     * start a collector of its own (start.c): it never gives up at the fork on a collector
     * still starting, whose answer comes once it has (its socket queues the greeting), but
     * looks for it later, as where that collector had attached. */
    if (osp__boot_session > 0 && getsid(0) != osp__boot_session)
        parent_attached = 1;
    if (greeting == -EPERM) { /* its parent's collector names it */
        pthread_mutex_unlock(&osp__images_lock);
        return;
    }
    struct osp__start start = {
        .rate = osp__boot_rate,
        .random_bits = osp__random64(),
        .parent = parent,
        .stop_at_ns = stop_at_ns,
        .greeting = greeting,
        .fiber = fiber,
        .label = label,
        .parent_ring = parent_ring,
        .defer_answer = parent_attached,
    };
    osp__profile_start(&start); /* releases osp__images_lock */
}

/* In a new process, the parent's copy: the parent's ring, tables and events are the parent's:
 * the child lets go of them, then profiles itself (boot_forked) when `allowed` and unless the
 * parent's profile had stopped, the program took SIGPROF or entered a sandbox, or
 * OSPREY_PROFILE_FORKS=0. Only the calling thread exists. */
static void fork_child(int allowed)
{
    if (atomic_load_explicit(&osp__sandboxed, memory_order_relaxed)) {
        /* Inside a sandbox, whose filter the child keeps: not profiled, and no system call of
         * ours (the parent's ring stays mapped, unread; nothing writes to it from here). */
        atomic_store_explicit(&osp__active_flag, 0, memory_order_relaxed);
        atomic_store_explicit(&osp__registry_ready, 0, memory_order_relaxed);
        osp__tls_slot = NULL;
        osp__header = NULL;
        return;
    }
    osp__read_code_init();
    pid_t parent = osp__booted_pid;
    int profiled =
        allowed && osp__is_active() && osp__ring_header != NULL &&
        !atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) &&
        !atomic_load_explicit(&osp__ring_header->stopped, memory_order_acquire) &&
        atomic_load_explicit(&osp__ring_header->signals_paused, memory_order_acquire) == 0 &&
        !osp__boot_env.forks_off;
    if (profiled && osp__boot_env.has_ring) {
        osp__warn("process %d, forked by a process profiled with OSPREY_RING=%s, is not "
                  "profiled: a collector started apart follows one process",
                  (int)getpid(), osp__boot_env.ring);
        profiled = 0;
    }
    uint64_t stop_at_ns = osp__ring_header != NULL ? osp__ring_header->stop_at_ns : 0;
    /* Acquire: pairs with ospreyd's release store. A collector still starting answers only
     * once it has: the child waits for it at the fork, as its image would at boot. */
    int own_attached = osp__ring_header != NULL &&
                       atomic_load_explicit(&osp__ring_header->daemon_state,
                                            memory_order_acquire) == OSP_DAEMON_ATTACHED;
    int64_t fiber = 0;
    char label[OSP_MAX_LABEL + 1] = "main";
    struct osp__slot *self = osp__tls_slot;
    if (self != NULL && self->active) {
        fiber = self->fiber;
        snprintf(label, sizeof label, "%s", self->label);
    }
    /* A parent whose own collector has not attached, having greeted its parent's (a forked
     * child itself), has its children greet that one: a daemon's middle process forks and
     * ends at once, and its own collector never starts (osp__fork_greets). */
    int parent_attached = 0;
    char parent_ring[OSP_RING_NAME_SIZE], own_ring[OSP_RING_NAME_SIZE];
    snprintf(own_ring, sizeof own_ring, "%s", osp__shm_name);
    snprintf(parent_ring, sizeof parent_ring, "%s",
             osp__fork_greets(own_ring, own_attached, osp__greet_ring(), &parent_attached));
    atomic_store_explicit(&osp__active_flag, 0, memory_order_relaxed);
    atomic_store_explicit(&osp__registry_ready, 0, memory_order_relaxed);
    osp__tls_slot = NULL;
    osp__header = NULL;
    if (osp__ring_header) {
        munmap(osp__ring_header, osp__ring_bytes);
        osp__ring_header = NULL;
    }
    osp__events.header = NULL;
    osp__shm_name[0] = '\0';
    osp__daemon_spawned = 0;
    if (!profiled) {
        osp__unwind_set_tables(NULL, 0);
        if (osp__unwind_map != MAP_FAILED) {
            munmap(osp__unwind_map, OSP_UNWIND_DEFAULT_SIZE);
            osp__unwind_map = MAP_FAILED;
        }
    } else {
        osp__unwind_fork();           /* the parent's tables, until the child's own are published */
        osp__unwind_map = MAP_FAILED; /* mapped still, and read */
    }
    osp__greeting_forget(); /* the parent's, and its descriptors (below) */
    osp__handover_close();
    osp__kernel_waits_off(); /* the parent's */
    if (profiled)
        boot_forked(parent, fiber, label, stop_at_ns, parent_ring, parent_attached, own_ring,
                    own_attached);
}

/* pthread_atfork child. */
void osp__at_fork_child(void)
{
    fork_child(1);
}

void osp__cloned_child(int single_threaded)
{
    /* A process our boot or fork_child saw already (a fork's handler ran), or none of ours. */
    if (!osp__is_active() || atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) ||
        getpid() == osp__booted_pid)
        return;
    if (!single_threaded)
        osp__warn("process %d, made by calling clone directly in a program of several threads, "
                  "is not profiled",
                  (int)getpid());
    fork_child(single_threaded);
}

void osp__forked_exec(void)
{
    struct osp_ring_header *h = osp__header;
    if (!osp__is_active() || atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) ||
        getpid() != osp__booted_pid || h == NULL || !(h->ring_flags & OSP_RING_FORKED))
        return; /* a vfork child shares our memory: never its business */
    osp__mutex_lock(&osp__the_registry.lock);
    int recorded = osp__registry_recorded(&osp__the_registry);
    pthread_mutex_unlock(&osp__the_registry.lock);
    recorded = recorded || atomic_load_explicit(&h->escapes, memory_order_relaxed) != 0;
    osp__forked_settle(recorded ? 1 : -1);
}
