/* switch-source.c — the kernel's context-switch records of the target, read for waits.c.
 *
 * Owns the per-CPU perf rings the shim opened and handed over (proto/osp_ring.h, "Waits from
 * the kernel"): mapping them, reading their PERF_RECORD_SWITCH records in time order across
 * CPUs, and asking a thread that has been blocked for a while, with no site the shim has
 * reported, where it is waiting (a SIGPROF of ours, SI_QUEUE with the ring's cookie: the
 * handler captures the wait's stack and the system call goes on).
 *
 * DESIGN. Each CPU's ring is in time order, but one thread's switch out on one CPU and in on
 * another are in two rings, read one after the other: records newer than the instant the
 * reading began (less a margin for a record being written) are held for the next round, and
 * each round's records are sorted by time before waits.c sees them. The rings are read at
 * every drain of the slot rings (4 ms at the default rate) and, when one is half full, at
 * once (its descriptor polls readable at the watermark the shim set).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ospd_switch.h"

#define HOLD_NS 100000ull /* records this close to the read are held for the next round */

struct switch_rec {
    uint64_t t_ns;
    int32_t tid;
    uint16_t misc;
};

/* Map the ring the shim mapped on `fd`: the full size, else the quarter it fell back to (a
 * mapping of another size than the kernel's ring is refused). MAP_FAILED, or the map. */
static void *map_ring(int fd, size_t *size)
{
    long page = sysconf(_SC_PAGESIZE);
    *size = (size_t)(1 + OSP_SWITCH_RING_PAGES) * (size_t)page;
    void *map = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        *size = (size_t)(1 + OSP_SWITCH_RING_PAGES / 4) * (size_t)page;
        map = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    return map;
}

void ospd_switches_hold(struct ospd_switch_hold *h, const int *fds, int count)
{
    memset(h, 0, sizeof *h);
    for (int i = 0; i < count && i < (int)OSP_MAX_SWITCH_FDS; i++) {
        h->maps[i] = map_ring(fds[i], &h->sizes[i]);
        if (h->maps[i] == MAP_FAILED)
            h->maps[i] = NULL;
    }
}

void ospd_switches_release(struct ospd_switch_hold *h)
{
    for (int i = 0; i < (int)OSP_MAX_SWITCH_FDS; i++)
        if (h->maps[i] != NULL)
            munmap(h->maps[i], h->sizes[i]);
    memset(h, 0, sizeof *h);
}

int ospd_switches_attach(struct ospd_switches *sw, const int *fds, int count)
{
    memset(sw, 0, sizeof *sw);
    for (int i = 0; i < count && i < (int)OSP_MAX_SWITCH_FDS; i++) {
        size_t size;
        void *map = map_ring(fds[i], &size);
        if (map == MAP_FAILED) {
            int err = errno;
            ospd_switches_close(sw);
            for (int j = i; j < count; j++)
                close(fds[j]);
            return -err;
        }
        sw->rings[sw->count++] = (struct ospd_switch_ring){fds[i], map, size};
    }
    return sw->count > 0 ? 0 : -ENOENT;
}

void ospd_switches_close(struct ospd_switches *sw)
{
    for (int i = 0; i < sw->count; i++) {
        munmap(sw->rings[i].map, sw->rings[i].size);
        close(sw->rings[i].fd);
    }
    free(sw->held);
    sw->held = NULL;
    sw->held_count = sw->held_cap = 0;
    sw->count = 0;
}

static int push(struct ospd_switches *sw, struct switch_rec r)
{
    if (sw->held_count == sw->held_cap) {
        uint64_t cap = sw->held_cap;
        if (ospd_grow((void **)&sw->held, &cap, sw->held_count + 1, sizeof(struct switch_rec)) != 0)
            return -ENOMEM;
        sw->held_cap = (uint32_t)cap;
    }
    ((struct switch_rec *)sw->held)[sw->held_count++] = r;
    return 0;
}

/* Copy the records of one ring into the batch; moves its tail. */
static void read_ring(struct ospd_switches *sw, struct ospd_switch_ring *r, int32_t pid)
{
    struct perf_event_mmap_page *meta = r->map;
    uint64_t data_offset = meta->data_offset ? meta->data_offset : (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t data_size = meta->data_size ? meta->data_size : r->size - data_offset;
    if (data_offset + data_size > r->size || (data_size & (data_size - 1)) != 0)
        return; /* not the layout asked for: read nothing */
    const uint8_t *data = (const uint8_t *)r->map + data_offset;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    if (head - tail > data_size)
        tail = head - data_size; /* cannot happen with the kernel's ring; stay in bounds */
    while (head - tail >= sizeof(struct perf_event_header)) {
        uint8_t rec[64];
        struct perf_event_header h;
        for (size_t k = 0; k < sizeof h; k++)
            ((uint8_t *)&h)[k] = data[(tail + k) & (data_size - 1)];
        if (h.size < sizeof h || h.size > head - tail)
            break;
        size_t n = h.size < sizeof rec ? h.size : sizeof rec;
        for (size_t k = 0; k < n; k++)
            rec[k] = data[(tail + k) & (data_size - 1)];
        tail += h.size;
        if (h.type == PERF_RECORD_SWITCH && n >= sizeof h + 16) {
            /* sample_id: u32 pid, tid; u64 time */
            uint32_t rpid, rtid;
            uint64_t t;
            memcpy(&rpid, rec + sizeof h, 4);
            memcpy(&rtid, rec + sizeof h + 4, 4);
            memcpy(&t, rec + sizeof h + 8, 8);
            if ((int32_t)rpid == pid &&
                push(sw, (struct switch_rec){t, (int32_t)rtid, h.misc}) != 0)
                sw->lost++;
        } else if (h.type == PERF_RECORD_LOST && n >= sizeof h + 16) {
            uint64_t lost;
            memcpy(&lost, rec + sizeof h + 8, 8);
            sw->lost += lost;
        }
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

static int by_time(const void *a, const void *b)
{
    const struct switch_rec *x = a, *y = b;
    return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

void ospd_switches_drain(struct ospd_switches *sw, struct ospd_collector *c, uint64_t now_ns,
                         bool all)
{
    if (sw->count == 0)
        return;
    for (int i = 0; i < sw->count; i++)
        read_ring(sw, &sw->rings[i], c->pid);
    struct switch_rec *recs = sw->held;
    qsort(recs, sw->held_count, sizeof *recs, by_time);
    uint64_t cut = all ? UINT64_MAX : now_ns - HOLD_NS;
    uint32_t used = 0;
    while (used < sw->held_count && recs[used].t_ns < cut) {
        const struct switch_rec *r = &recs[used++];
        bool out = (r->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
        bool preempted = (r->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
        ospd_waits_switch(c, r->tid, r->t_ns, out, out && preempted);
    }
    memmove(recs, recs + used, (sw->held_count - used) * sizeof *recs);
    sw->held_count -= used;
    c->waits.lost_records = sw->lost;
}

bool ospd_switches_may_ask(int32_t pid, int32_t tid)
{
    char path[64], text[256];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true; /* cannot tell (not ours to read): as before */
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return true;
    text[n] = '\0';
    long nr = -1;
    unsigned long long arg0 = 0;
    if (sscanf(text, "%ld 0x%llx", &nr, &arg0) != 2)
        return true; /* "running", or a format of another kernel */
    bool io = false;
#ifdef SYS_read
    io |= nr == SYS_read;
#endif
#ifdef SYS_write
    io |= nr == SYS_write;
#endif
#ifdef SYS_readv
    io |= nr == SYS_readv || nr == SYS_writev;
#endif
    if (!io)
        return true;
    /* A read or write on a socket with SO_RCVTIMEO/SO_SNDTIMEO returns EINTR when a handler
     * runs, SA_RESTART or not, and whether it has one cannot be read from here: no signal. */
    char link[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%llu", pid, arg0);
    n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
        return true;
    link[n] = '\0';
    return strncmp(link, "socket:", 7) != 0;
}

int ospd_switches_ask(int32_t pid, int32_t tid, uint64_t cookie)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = SIGPROF;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    info.si_value.sival_ptr = (void *)(uintptr_t)cookie;
    return syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGPROF, &info) == 0 ? 0 : -errno;
}
