/* ring-attach.c — attaching to a launched program's shared-memory ring: mapping it with a
 * SIGBUS guard against a shrunken object, validating its header, mapping the slot table and
 * the stack copies, publishing ATTACHED (or FAILED with the reason) and waking the shim.
 * The drain and the end of the profile are ring-source.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
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
#include "ospd_forks.h"
#include "ospd_ring_daemon.h"
#include "ospd_ring_source.h"
#include "ospd_session.h"
#include "ospd_switch.h"
#include "ospd_target.h"
#include "ospd_unwind_source.h"

/* This process's start time (/proc/self/stat's field 22, clock ticks since boot) and the inode
 * of its pid namespace, each 0 where /proc does not say: the ring's header names its collector
 * by them (proto/osp_ring.h, daemon_started). Read at each attach: an image followed attaches
 * on the pool's threads, and two reads cost less than one shared cache of them. */
static void self_identity(uint64_t *started, uint64_t *pid_ns)
{
    struct stat ns;
    if (stat("/proc/self/ns/pid", &ns) == 0)
        *pid_ns = (uint64_t)ns.st_ino;
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* comm may itself contain ')' */
    /* Fields after comm start at field 3 (the state); the start time is field 22. */
    for (int field = 2; p != NULL && *p != '\0'; p++)
        if (*p == ' ' && ++field == 22) {
            *started = strtoull(p + 1, NULL, 10);
            return;
        }
}

/* The rings mapped, for the SIGBUS handler: one collector process may follow several images
 * (follow.c), each ring its own entry and its own mark. The rings are read on the loop's
 * thread only, where the handler then runs. */
static struct {
    atomic_uintptr_t start, end; /* start 0: a free entry */
    atomic_int truncated;        /* set by the handler; lock-free atomics are async-signal-safe */
} ring_maps[OSPD_MAX_RING_MAPS];
/* Taken to fill or free an entry: an image followed maps its ring on libuv's pool (follow.c)
 * while the loop's thread may unmap another's. The handler takes nothing: it reads an
 * entry's start (acquire, after its end was stored) and skips a free one. */
static pthread_mutex_t ring_maps_lock = PTHREAD_MUTEX_INITIALIZER;
static long page_size;

/* SIGBUS: the target shrank the shared-memory object under our mapping, and touching a page
 * past its new end faulted. Put a page of zeros there (the parser rejects what it then reads)
 * and note it, so the ring is rejected with the real reason instead of the daemon dying. Any
 * other SIGBUS takes the default action. mmap is not on POSIX's async-signal-safe list, but on
 * Linux it is a bare system call that touches no user-space state. */
static void on_sigbus(int signum, siginfo_t *info, void *context)
{
    (void)context;
    uintptr_t addr = (uintptr_t)info->si_addr;
    for (int i = 0; i < OSPD_MAX_RING_MAPS; i++) {
        /* Acquire: pairs with the release store of start after end (install_sigbus_handler). */
        uintptr_t start = atomic_load_explicit(&ring_maps[i].start, memory_order_acquire);
        if (start == 0 || addr < start ||
            addr >= atomic_load_explicit(&ring_maps[i].end, memory_order_relaxed))
            continue;
        void *page = (void *)(addr & ~((uintptr_t)page_size - 1));
        if (mmap(page, (size_t)page_size, PROT_READ | PROT_WRITE,
                 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED) {
            /* Relaxed: the flag is read by the same thread after the faulting access. */
            atomic_store_explicit(&ring_maps[i].truncated, 1, memory_order_relaxed);
            return;
        }
        break;
    }
    signal(signum, SIG_DFL);
    raise(signum);
}

/* Note the mapping for the handler. -ENOSPC when every entry is taken (follow.c keeps fewer
 * rings than that at once: the caller then does not map). */
static int install_sigbus_handler(const void *map, size_t size)
{
    int free_entry = -1;
    pthread_mutex_lock(&ring_maps_lock);
    for (int i = 0; i < OSPD_MAX_RING_MAPS && free_entry < 0; i++)
        if (atomic_load_explicit(&ring_maps[i].start, memory_order_relaxed) == 0)
            free_entry = i;
    if (free_entry < 0) {
        pthread_mutex_unlock(&ring_maps_lock);
        return -ENOSPC;
    }
    page_size = sysconf(_SC_PAGESIZE);
    atomic_store_explicit(&ring_maps[free_entry].truncated, 0, memory_order_relaxed);
    atomic_store_explicit(&ring_maps[free_entry].end, (uintptr_t)map + size, memory_order_relaxed);
    /* Release: the handler that sees start sees end (and the cleared mark). */
    atomic_store_explicit(&ring_maps[free_entry].start, (uintptr_t)map, memory_order_release);
    pthread_mutex_unlock(&ring_maps_lock);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    return 0;
}

bool ospd_ring_truncated(const void *map)
{
    for (int i = 0; i < OSPD_MAX_RING_MAPS; i++)
        if (map != NULL &&
            atomic_load_explicit(&ring_maps[i].start, memory_order_relaxed) == (uintptr_t)map)
            /* Relaxed: set by a signal handler on this same thread. */
            return atomic_load_explicit(&ring_maps[i].truncated, memory_order_relaxed) != 0;
    return false;
}

void ospd_ring_unmap(void *map, size_t size)
{
    pthread_mutex_lock(&ring_maps_lock);
    for (int i = 0; i < OSPD_MAX_RING_MAPS; i++)
        if (map != NULL &&
            atomic_load_explicit(&ring_maps[i].start, memory_order_relaxed) == (uintptr_t)map)
            atomic_store_explicit(&ring_maps[i].start, 0, memory_order_relaxed);
    pthread_mutex_unlock(&ring_maps_lock);
    munmap(map, size);
}

/* Publish a failure to the shim: daemon_error first, then FAILED with release ordering so a
 * shim that acquires FAILED also sees the whole message. */
/* The shim waits on daemon_state as a futex (shared: both processes map it): wake it. */
void ospd_ring_wake_shim(struct osp_ring_header *h)
{
    syscall(SYS_futex, &h->daemon_state, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

void ospd_ring_publish_failure(struct osp_ring_header *h, const char *message)
{
    if (h == NULL)
        return;
    size_t n = strnlen(message, sizeof h->daemon_error - 1);
    memcpy(h->daemon_error, message, n);
    h->daemon_error[n] = '\0';
    atomic_store_explicit(&h->daemon_state, OSP_DAEMON_FAILED, memory_order_release);
    ospd_ring_wake_shim(h);
}

/* Map and check the ring. Returns 0, or -1 after one line on stderr (and daemon_error when
 * the object is recognisably an osprey ring). */
/* The pool of stack copies the shim's header names (proto/osp_ring.h, "Stack copies"), read
 * once: used only when it lies inside the mapping, after the slot table (slots_end). */
static void attach_copies(struct ospd_daemon *d, struct osp_ring_header *h, uint64_t slots_end)
{
    uint64_t offset = h->copies_offset;
    uint32_t count = h->copy_count, size = h->copy_size;
    if (count == 0 || count > OSP_COPY_MAX_COUNT || size == 0 || size > OSP_COPY_MAX_SIZE ||
        offset % 8 != 0 || offset < slots_end || offset > d->map_size ||
        (uint64_t)count * size > d->map_size - offset)
        return;
    d->collector.copy_pool = (const uint8_t *)h + offset;
    d->collector.copy_count = count;
    d->collector.copy_size = size;
    d->collector.copies_busy = &h->copies_busy;
    /* Release: the pool's fields above were read before the shim writes its first copy. */
    atomic_store_explicit(&h->copies_read, 1, memory_order_release);
}

int ospd_ring_daemon_attach(struct ospd_daemon *d)
{
    int fd = d->o.ring_fd;
    d->o.ring_fd = -1; /* closed below whatever happens */
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fprintf(stderr, "osprey: ospreyd: ring %s: %s\n", d->o.ring_name, strerror(errno));
        close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size < OSP_RING_HEADER_SIZE) {
        fprintf(stderr, "osprey: ospreyd: ring %s: %jd bytes, smaller than a ring header\n",
                d->o.ring_name, (intmax_t)st.st_size);
        close(fd);
        return -1;
    }
    uint64_t size = (uint64_t)st.st_size;
    uint64_t largest = (uint64_t)OSP_RING_HEADER_SIZE + OSP_RING_MAX_DATA_SIZE +
                       (uint64_t)OSPD_MAX_SLOTS * osp_slot_stride(OSP_MAX_SLOT_RING);
    if (size > largest)
        size = largest;
    void *map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        fprintf(stderr, "osprey: ospreyd: cannot map ring %s: %s\n", d->o.ring_name,
                strerror(errno));
        return -1;
    }
    if (install_sigbus_handler(map, (size_t)size) != 0) {
        fprintf(stderr, "osprey: ospreyd: cannot map ring %s: %d rings mapped already\n",
                d->o.ring_name, OSPD_MAX_RING_MAPS);
        munmap(map, (size_t)size);
        return -1;
    }
    struct osp_ring_header *h = map;
    /* Check and use a private copy of the identity fields: the target can rewrite the shared
     * header at any time, so nothing validated is ever read from it again. */
    struct osp_ring_header identity; /* not static: an image followed attaches on the pool */
    memcpy(&identity, h, offsetof(struct osp_ring_header, shim_state));
    char err[OSPD_ERROR_SIZE];
    if (ospd_ring_validate(&identity, size, err, sizeof err) != 0) {
        fprintf(stderr, "osprey: ospreyd: ring %s rejected: %s\n", d->o.ring_name, err);
        if (identity.magic == OSP_RING_MAGIC)
            ospd_ring_publish_failure(h, err);
        ospd_ring_unmap(map, (size_t)size);
        return -1;
    }
    d->header = h;
    d->data = (const uint8_t *)map + identity.data_offset;
    d->data_size = identity.data_size;
    d->map_size = (size_t)size;
    d->tail = osp_ring_load_tail_own(h); /* 0 unless a previous consumer left it elsewhere */
    if (identity.slot_count > 0) {
        d->slots = (uint8_t *)map + identity.slots_offset;
        d->slot_count = identity.slot_count;
        d->slot_ring_size = identity.slot_ring_size;
    }
    d->wakes = (identity.ring_flags & OSP_RING_WAKES) != 0; /* the tick may nap */
    ospd_collector_set_identity(&d->collector, &identity);
    attach_copies(d, h,
                  identity.slots_offset +
                      (uint64_t)identity.slot_count * osp_slot_stride(identity.slot_ring_size));
    /* Who this collector is, for the shim's exit (a process that took its pid since is not
     * it); release: a shim that acquires the pid reads these. */
    uint64_t started = 0, pid_ns = 0;
    self_identity(&started, &pid_ns);
    atomic_store_explicit(&h->daemon_started, started, memory_order_relaxed);
    atomic_store_explicit(&h->daemon_pid_ns, pid_ns, memory_order_relaxed);
    atomic_store_explicit(&h->daemon_pid, (int32_t)getpid(), memory_order_release);
    /* Release (with ATTACHED's below): a shim that pauses our signals from now on needs to
     * wait only for a round under way. */
    atomic_store_explicit(&h->asking, OSP_ASKING_IDLE, memory_order_release);
    /* The switch records' rings before ATTACHED: a shim that sees ATTACHED without
     * kernel_waits_ns times its waits itself from then on, and none is counted twice. */
    if (d->o.switch_count > 0 &&
        ospd_switches_attach(&d->switches, d->o.switch_fds, d->o.switch_count) == 0) {
        uint64_t since = ospc_clock_ns(CLOCK_MONOTONIC);
        d->collector.waits.since_ns = since;
        /* Release: the shim that sees it unmaps its own copies of the rings. */
        atomic_store_explicit(&h->kernel_waits_ns, since, memory_order_release);
    } else if (h->switches_refused > 0) {
        ospd_switches_refused(&d->collector.waits, d->collector.proc_pid, h->switches_refused);
    }
    /* The records beyond the first ABI's that the collector reads (collect.c): fibers. */
    atomic_fetch_or_explicit(&h->reader_features, OSP_READER_FIBERS, memory_order_release);
    /* Release: the pid store above is visible to a shim that acquires ATTACHED. */
    atomic_store_explicit(&h->daemon_state, OSP_DAEMON_ATTACHED, memory_order_release);
    return 0;
}

/* The target's exe from /proc, used when no image is flagged main. */
void ospd_ring_read_exe_fallback(struct ospd_daemon *d)
{
    char link[64], buf[OSP_MAX_PATH + 1];
    if (d->collector.proc_pid <= 0)
        return;
    snprintf(link, sizeof link, "/proc/%d/exe", (int)d->collector.proc_pid);
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    if (n > 0)
        d->collector.exe_fallback = ospd_utf8_sanitize(buf, (size_t)n);
}
