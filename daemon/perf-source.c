/* perf-source.c — the collector fed from outside the target: one software cpu-clock event
 * per thread of a process ospreyd attached to, each sample carrying the thread's user
 * registers and a copy of its user stack, walked here by the unwind rows (stack-walk.c);
 * and, for the waits, the thread's own context switches with the stack of each switch out.
 *
 * DESIGN. Per thread of /proc/PID/task and per CPU: a PERF_COUNT_SW_CPU_CLOCK event (pid =
 * tid) with sample_period = 1e9 / rate ns of the thread's CPU time, so a thread is sampled at
 * the rate while it runs and costs nothing while it sleeps, as the shim's own timers do; with
 * `inherit`, a thread it starts later gets events of its own that write where their parents
 * do, so no thread is missed between two scans and none is counted twice. The kernel maps
 * no ring of an inherited per-thread event (cpu = -1), hence one event per CPU, as `perf
 * record -p` opens them, and every event of a CPU redirected (PERF_EVENT_IOC_SET_OUTPUT) into
 * one ring per CPU. `context_switch` adds the thread's PERF_RECORD_SWITCH records (the exact
 * instants of each block and wake-up). A second event, PERF_COUNT_SW_CONTEXT_SWITCHES in
 * frequency mode (at most the rate per second per thread), samples the stack at a switch out,
 * which gives a block its site. A thread's switch out and in may be in two CPUs' rings: the
 * switches and sites are held, sorted by time, and handed to waits.c once 100 us old, as
 * switch-source.c does with the shim's.
 * Where the kernel allows it, each cpu-clock sample also carries the kernel's part of its call
 * chain (PERF_SAMPLE_CALLCHAIN, exclude_callchain_user), put below the user frames.
 * A user stack deeper than a record is walked on to its root, as far as the copy
 * (OSPD_PERF_STACK_BYTES) reaches, and folded as the shim's handler folds it (stack-walk.c).
 * Closing the descriptors removes every event, the inherited ones too: nothing of ours stays
 * in the target, which is never stopped, signalled or written to.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ospc.h"
#include "ospd_attach.h"
#include "ospd_perf_source.h"

#if defined(__x86_64__)
#include <asm/perf_regs.h>
#define USER_REGS                                                                                  \
    ((UINT64_C(1) << PERF_REG_X86_BP) | (UINT64_C(1) << PERF_REG_X86_SP) |                         \
     (UINT64_C(1) << PERF_REG_X86_IP))
#else
#define USER_REGS 0 /* the walk of copied stacks knows x86_64 only */
#endif

#define SAMPLE_TYPE                                                                                \
    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |                \
     PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define RING_PAGES 512u    /* 2 MiB of data per CPU's ring: 128 samples */
#define HOLD_NS    100000u /* switches this close to the read wait for the next one */

static void attr_common(struct perf_event_attr *a, bool user_only)
{
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->sample_type = SAMPLE_TYPE;
    a->sample_regs_user = USER_REGS;
    a->sample_stack_user = OSPD_PERF_STACK_BYTES;
    a->sample_id_all = 1;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->inherit = 1;
    a->disabled = 1;
    a->exclude_hv = 1;
    /* In the kernel too, where allowed: CPU time a system call spends is charged to the user
     * stack that made it (the registers are the user ones either way), as the shim does. */
    a->exclude_kernel = user_only;
    /* The kernel's frames where it allows them (perf_event_paranoid <= 1, CAP_PERFMON, root),
     * below the user stack walked here from the copy: the kernel's part of the call chain only. */
    a->exclude_callchain_user = 1;
    a->exclude_callchain_kernel = user_only;
}

static int push_fd(struct ospd_perf_source *s, int fd)
{
    uint64_t cap = s->fds_cap;
    if (ospd_grow((void **)&s->fds, &cap, (uint64_t)s->fd_count + 1, sizeof *s->fds) != 0)
        return -ENOMEM;
    s->fds_cap = (uint32_t)cap;
    s->fds[s->fd_count++] = fd;
    return 0;
}

/* Route event fd into CPU cpu's ring, making the ring with it if the CPU has none yet. */
static int route(struct ospd_perf_source *s, uint32_t cpu, int fd)
{
    struct ospd_perf_ring *r = &s->rings[cpu];
    if (r->fd >= 0)
        return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) == 0 ? 0 : -errno;
    long page = sysconf(_SC_PAGESIZE);
    for (uint32_t pages = RING_PAGES; pages >= 16; pages /= 4) {
        size_t size = (size_t)(pages + 1) * (size_t)page; /* over the locked-memory limit: less */
        void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map != MAP_FAILED) {
            *r = (struct ospd_perf_ring){fd, map, size};
            return 0;
        }
    }
    return -errno;
}

static int open_event(struct ospd_perf_source *s, struct perf_event_attr *a, int32_t tid,
                      uint32_t cpu, uint64_t *id)
{
    int fd = (int)syscall(SYS_perf_event_open, a, tid, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = push_fd(s, fd);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    if (id != NULL)
        ioctl(fd, PERF_EVENT_IOC_ID, id);
    return route(s, cpu, fd);
}

static int by_id(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Open the events of one thread on one CPU. 0 or -errno. */
static int open_thread(struct ospd_perf_source *s, int32_t tid, uint32_t cpu)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    attr_common(&a, s->user_only);
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = 1000000000u / s->rate_hz;
    a.context_switch = s->waits;
    a.watermark = 1;
    a.wakeup_watermark = RING_PAGES * 4096u / 4;
    int rc = open_event(s, &a, tid, cpu, NULL);
    uint64_t cap = s->clock_fds_cap;
    if (rc == 0 && ospd_grow((void **)&s->clock_fds, &cap, (uint64_t)s->clock_fd_count + 1,
                             sizeof *s->clock_fds) == 0) {
        s->clock_fds_cap = (uint32_t)cap;
        s->clock_fds[s->clock_fd_count++] = s->fds[s->fd_count - 1];
    }
    if (rc == -EACCES && !s->user_only) {
        s->user_only = true; /* perf_event_paranoid 2: user space only, and no waits */
        s->waits = false;
        return open_thread(s, tid, cpu);
    }
    if (rc != 0 || !s->waits)
        return rc;
    memset(&a, 0, sizeof a);
    attr_common(&a, false); /* the switch happens in the kernel */
    a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
    a.freq = 1;
    a.sample_freq = s->rate_hz;
    uint64_t id = 0;
    if (open_event(s, &a, tid, cpu, &id) != 0)
        return 0; /* the blocks keep the site of the last stack sampled */
    cap = s->switch_ids_cap;
    if (ospd_grow((void **)&s->switch_ids, &cap, (uint64_t)s->switch_id_count + 1,
                  sizeof *s->switch_ids) == 0) {
        s->switch_ids_cap = (uint32_t)cap;
        s->switch_ids[s->switch_id_count++] = id;
        qsort(s->switch_ids, s->switch_id_count, sizeof *s->switch_ids, by_id);
    }
    return 0;
}

int ospd_perf_open(struct ospd_perf_source *s, int32_t pid, uint32_t rate_hz, char *err,
                   size_t err_size)
{
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->rate_hz = rate_hz;
    s->waits = true;
    if (USER_REGS == 0) {
        snprintf(err, err_size, "attaching is implemented for x86_64 only");
        return -ENOTSUP;
    }
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    s->ring_count = cpus > 0 ? (uint32_t)cpus : 1;
    s->rings = calloc(s->ring_count, sizeof *s->rings);
    s->buffer = malloc(1u << 16);
    if (s->buffer == NULL || s->rings == NULL) {
        snprintf(err, err_size, "%s", strerror(ENOMEM));
        ospd_perf_close(s);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < s->ring_count; i++)
        s->rings[i].fd = -1;
    int refused = ospc_ptrace_refused(pid);
    if (refused != 0) {
        ospc_attach_refusal(pid, refused, true, err, err_size);
        ospd_perf_close(s);
        return -refused;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir == NULL) {
        int e = errno;
        ospc_attach_refusal(pid, e == ENOENT ? ESRCH : e, false, err, err_size);
        ospd_perf_close(s);
        return -e;
    }
    int rc = 0;
    uint32_t threads = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(dir)) != NULL;) {
        int32_t tid = (int32_t)atoi(e->d_name);
        if (tid <= 0)
            continue;
        uint32_t opened = 0;
        for (uint32_t cpu = 0; cpu < s->ring_count && rc == 0; cpu++) {
            rc = open_thread(s, tid, cpu);
            if (rc == -ENODEV || rc == -EINVAL) /* an offline CPU */
                rc = 0;
            else if (rc == 0)
                opened++;
        }
        if (rc == -ESRCH && threads > 0)
            rc = 0; /* that thread ended meanwhile */
        threads += opened > 0;
    }
    closedir(dir);
    if (rc == 0 && threads == 0)
        rc = -ESRCH;
    if (rc != 0) {
        /* The call itself refused (a seccomp filter's EACCES or EPERM, perf_event_paranoid 3,
         * no perf events): ptrace, allowed above, may sample instead. */
        s->refused =
            rc == -EACCES || rc == -EPERM || rc == -ENOSYS || rc == -ENOENT || rc == -EOPNOTSUPP;
        ospc_attach_refusal(pid, -rc, false, err, err_size);
        ospd_perf_close(s);
    }
    return rc;
}

uint64_t ospd_perf_clock_ns(const struct ospd_perf_source *s)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < s->clock_fd_count; i++) {
        uint64_t count; /* read_format 0: the count alone, the inherited events' included */
        if (read(s->clock_fds[i], &count, sizeof count) == (ssize_t)sizeof count)
            total += count;
    }
    return total;
}

void ospd_perf_enable(struct ospd_perf_source *s, bool on)
{
    unsigned long request = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;
    for (uint32_t i = 0; i < s->fd_count; i++)
        ioctl(s->fds[i], request, 0);
}

int64_t ospd_attach_thread(struct ospd_collector *c, int32_t pid, int32_t tid)
{
    for (uint32_t i = c->thread_count; i-- > 0;)
        if (c->threads[i].tid == tid)
            return i;
    char label[OSP_MAX_LABEL + 1] = "main";
    if (tid != pid) {
        char path[96];
        snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
        FILE *f = fopen(path, "re");
        if (f == NULL || fgets(label, sizeof label, f) == NULL)
            snprintf(label, sizeof label, "thread");
        if (f != NULL)
            fclose(f);
        label[strcspn(label, "\n")] = '\0';
    }
    char *copy = ospd_utf8_sanitize(label, strlen(label));
    if (copy == NULL)
        return -ENOMEM;
    return ospd_collector_thread(c, c->thread_count, 1, tid == pid ? 0 : tid, tid, copy);
}

/* The collector thread of tid (ospd_attach_thread), with room for its site. */
static int64_t thread_of(struct ospd_perf_source *s, struct ospd_collector *c, int32_t tid)
{
    int64_t thread = ospd_attach_thread(c, s->pid, tid);
    if (thread < 0 || (uint64_t)thread < s->site_cap)
        return thread;
    uint64_t cap = s->site_cap;
    if (ospd_grow((void **)&s->site_of, &cap, (uint64_t)thread + 1, sizeof *s->site_of) != 0)
        return thread;
    for (uint64_t i = s->site_cap; i < cap; i++)
        s->site_of[i] = -1;
    s->site_cap = (uint32_t)cap;
    return thread;
}

static void hold(struct ospd_perf_source *s, struct ospd_perf_held h)
{
    uint64_t cap = s->held_cap;
    if (ospd_grow((void **)&s->held, &cap, (uint64_t)s->held_count + 1, sizeof *s->held) != 0) {
        s->lost++;
        return;
    }
    s->held_cap = (uint32_t)cap;
    s->held[s->held_count++] = h;
}

static bool is_site_event(const struct ospd_perf_source *s, uint64_t id)
{
    return bsearch(&id, s->switch_ids, s->switch_id_count, sizeof id, by_id) != NULL;
}

/* One record. */
static void handle(struct ospd_perf_source *s, struct ospd_collector *c, const uint8_t *rec,
                   size_t size)
{
    struct ospd_perf_record p;
    s->records++;
    if (ospd_perf_parse(rec, size, &p) != 0)
        return;
    if (p.kind == OSPD_PERF_LOST) {
        s->lost += p.lost;
        return;
    }
    if (p.kind == OSPD_PERF_OTHER)
        return;
    if ((int32_t)p.pid != s->pid) {
        s->foreign++; /* a forked child inherited the event: not this profile's */
        return;
    }
    int64_t thread = thread_of(s, c, (int32_t)p.tid);
    if (thread < 0)
        return;
    if (p.kind == OSPD_PERF_SWITCH) {
        if (s->waits && c->waits.since_ns != 0)
            hold(s, (struct ospd_perf_held){p.time_ns, -1, (uint32_t)thread, (int32_t)p.tid, p.out,
                                            p.preempted});
        return;
    }
    if (!p.has_regs)
        return; /* a kernel thread's instant: no user stack */
    uint64_t pcs[OSP_MAX_DEPTH];
    bool site = is_site_event(s, p.id);
    enum osp_unwind_stop stop;
    uint32_t depth = ospd_perf_stack(s->tables, s->tables_size, &p, !site, pcs, &stop);
    if (site) {
        /* The stack at a switch out: the site of the block that follows, if it is one. */
        int64_t stack = ospd_intern(&c->stacks, pcs, depth);
        if (stack >= 0 && s->waits && c->waits.since_ns != 0)
            hold(s, (struct ospd_perf_held){p.time_ns, stack, (uint32_t)thread, (int32_t)p.tid,
                                            false, false});
        return;
    }
    s->samples++;
    int64_t stack =
        ospd_collector_sample(c, p.time_ns, (uint32_t)thread, pcs, depth, OSP_STATE_ON_CPU, 1);
    if (stack >= 0)
        ospd_stack_set_end(&c->stacks, (uint32_t)stack, stop);
}

static void drain_ring(struct ospd_perf_source *s, struct ospd_collector *c,
                       const struct ospd_perf_ring *r)
{
    struct perf_event_mmap_page *meta = r->map;
    uint64_t data_offset = meta->data_offset, data_size = meta->data_size;
    if (data_offset == 0 || data_offset + data_size > r->map_size ||
        (data_size & (data_size - 1)) != 0)
        return;
    const uint8_t *data = (const uint8_t *)r->map + data_offset;
    /* Acquire: pairs with the kernel's store of data_head after the records it covers. */
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    while (head - tail >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        for (size_t k = 0; k < sizeof h; k++)
            ((uint8_t *)&h)[k] = data[(tail + k) & (data_size - 1)];
        if (h.size < sizeof h || h.size > head - tail)
            break;
        uint64_t at = tail & (data_size - 1);
        uint64_t first = data_size - at < h.size ? data_size - at : h.size;
        memcpy(s->buffer, data + at, first);
        memcpy(s->buffer + first, data, h.size - first);
        tail += h.size;
        handle(s, c, s->buffer, h.size);
    }
    /* Release: the kernel may reuse the bytes once it sees the new tail. */
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

/* In time order; at one instant a site before the switch it is the site of. */
static int by_time(const void *x, const void *y)
{
    const struct ospd_perf_held *a = x, *b = y;
    if (a->t_ns != b->t_ns)
        return a->t_ns < b->t_ns ? -1 : 1;
    return (a->stack < 0) - (b->stack < 0);
}

void ospd_perf_drain(struct ospd_perf_source *s, struct ospd_collector *c, uint64_t now_ns,
                     bool all)
{
    for (uint32_t i = 0; i < s->ring_count; i++)
        if (s->rings[i].fd >= 0)
            drain_ring(s, c, &s->rings[i]);
    c->waits.lost_records = s->lost;
    if (s->held_count > 1) /* qsort's array may not be NULL, even for no element */
        qsort(s->held, s->held_count, sizeof *s->held, by_time);
    uint64_t cut = all ? UINT64_MAX : now_ns - HOLD_NS;
    uint32_t used = 0;
    for (; used < s->held_count && s->held[used].t_ns < cut; used++) {
        const struct ospd_perf_held *h = &s->held[used];
        int64_t *site = h->thread < s->site_cap ? &s->site_of[h->thread] : NULL;
        if (h->stack >= 0) {
            if (site != NULL)
                *site = h->stack;
            continue;
        }
        ospd_waits_switch(c, h->tid, h->t_ns, h->out, h->preempted);
        if (h->out && !h->preempted && site != NULL && *site >= 0)
            ospd_waits_span(c, h->thread, h->t_ns, h->t_ns, 0, (uint32_t)*site);
        if (h->out && site != NULL)
            *site = -1;
    }
    memmove(s->held, s->held + used, (s->held_count - used) * sizeof *s->held);
    s->held_count -= used;
}

void ospd_perf_close(struct ospd_perf_source *s)
{
    for (uint32_t i = 0; s->rings != NULL && i < s->ring_count; i++)
        if (s->rings[i].fd >= 0)
            munmap(s->rings[i].map, s->rings[i].map_size);
    for (uint32_t i = 0; i < s->fd_count; i++)
        close(s->fds[i]);
    free(s->rings);
    free(s->fds);
    free(s->switch_ids);
    free(s->clock_fds);
    free(s->site_of);
    free(s->held);
    free(s->buffer);
    s->rings = NULL;
    s->fds = NULL;
    s->switch_ids = NULL;
    s->site_of = NULL;
    s->clock_fds = NULL;
    s->clock_fd_count = s->clock_fds_cap = 0;
    s->held = NULL;
    s->buffer = NULL;
    s->ring_count = s->fd_count = s->fds_cap = s->site_cap = 0;
    s->switch_id_count = s->switch_ids_cap = s->held_count = s->held_cap = 0;
}
