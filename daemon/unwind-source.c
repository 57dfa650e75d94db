/* unwind-source.c — ospreyd's unwind tables for one target: which images need rows, building
 * them off the loop thread, publishing them (unwind-publish.c).
 *
 * DESIGN. The images come from the target's /proc/PID/maps, not from its IMAGE records: the
 * executable mappings are all there at attach (the loader mapped every needed object before
 * the shim's constructor ran), and a later dlopen shows up there without any help from the
 * program (the shim cannot interpose dlopen: glibc resolves its name against the caller's
 * RUNPATH). The maps are read again when a drained stack holds a pc in no known range,
 * at most every RESCAN_NS. Each new range is built on libuv's thread pool (uv_queue_work:
 * a 33 MB cc1 takes about 0.4 s, which must not hold the rings' reader) and published on the
 * loop thread. The file is opened through /proc/PID/map_files/ when allowed, so the rows are
 * those of the object mapped, even if its path was replaced since; the vDSO's rows come
 * from ospreyd's own copy (one kernel, one vDSO).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elf.h>
#include <link.h>

#include "osp_python.h"
#include "osp_unwind_step.h"
#include "ospc.h"
#include "ospd_target.h"
#include "ospd_unwind_source.h"

#define RESCAN_NS 20000000ull /* the maps are read again at most this often */

/* An executable mapping of an object: its range and the file offset it maps. */
struct mapping {
    uint64_t start, end, offset;
};

struct build_job {
    uv_work_t req;
    struct ospd_unwinder *u;
    struct ospd_unwind_source src;
    char path[OSP_MAX_PATH + 1];
    char open_path[96];
    struct ospd_unwind_rows rows;
    int rc;
    char err[OSPD_ERROR_SIZE];
    uint64_t queued_ns, built_ns;
    /* The object's other executable mappings found in the same scan (its other PF_X
     * segments): the rows cover all of them, so they wait for this build; one the rows turn
     * out not to cover (the object mapped again elsewhere, a part of it remapped, or a build
     * that failed) is queued on its own once this one is done. */
    struct mapping *others;
    uint32_t other_count;
    uint8_t *copy_at; /* a large image's room in the object, filled on the pool (copy_work) */
    int copy_rc;
};

/* Rows of this many bytes or more are copied into the object on libuv's pool, not on the loop
 * thread: node's 372,203 rows (6 MB: the pages reserved in /dev/shm, then the copy) held the
 * loop 165-190 ms on a loaded machine, and its tick as long. */
#define COPY_APART_BYTES (1u << 20)

int ospd_unwinder_attach(struct ospd_unwinder *u, uv_loop_t *loop, int fd, int32_t proc_pid,
                         int worker_nice)
{
    memset(u, 0, sizeof *u);
    u->loop = loop;
    u->pid = proc_pid;
    u->worker_nice = worker_nice;
    u->fd = -1;
    if (fd < 0)
        return -EBADF; /* the shim made none: stacks follow frame pointers */
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < OSP_UNWIND_HEADER_SIZE ||
        (uint64_t)st.st_size > (UINT64_C(1) << 36)) {
        close(fd);
        return -EPROTO;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int e = errno;
        close(fd);
        return -e;
    }
    char err[OSPD_ERROR_SIZE];
    if (ospd_unwind_region_init(&u->region, map, (uint64_t)st.st_size, fd, err, sizeof err) != 0) {
        fprintf(stderr, "osprey: ospreyd: %s; stacks follow frame pointers only\n", err);
        munmap(map, (size_t)st.st_size);
        close(fd);
        return -EPROTO;
    }
    u->machine = (uint16_t)((const struct osp_unwind_header *)map)->arch;
    u->emulated = u->machine != OSPD_OWN_MACHINE;
    u->fd = fd;
    u->map = map;
    u->map_size = (size_t)st.st_size;
    u->attached = true;
    /* Rows are kept between runs by build id: $XDG_CACHE_HOME/osprey/unwind, else
     * ~/.cache/osprey/unwind (a 33 MB cc1 takes 0.4 s to build and milliseconds to read). */
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg != NULL && xdg[0] == '/')
        snprintf(u->cache_dir, sizeof u->cache_dir, "%s/osprey/unwind", xdg);
    else if (home != NULL && home[0] == '/')
        snprintf(u->cache_dir, sizeof u->cache_dir, "%s/.cache/osprey/unwind", home);
    return 0;
}

/* Is pc inside a range we know (published, being built, or failed)? */
static bool known(const struct ospd_unwinder *u, uint64_t pc)
{
    if (pc >= OSPD_KERNEL_PC)
        return true; /* a kernel frame (attach): no object of the process's */
    for (uint32_t i = 0; i < u->range_count; i++)
        if (pc >= u->ranges[i].start && pc < u->ranges[i].end)
            return true;
    return false;
}

static int remember(struct ospd_unwinder *u, uint64_t start, uint64_t end)
{
    uint64_t cap = u->ranges_cap;
    if (ospd_grow((void **)&u->ranges, &cap, (uint64_t)u->range_count + 1, sizeof *u->ranges) != 0)
        return -ENOMEM;
    u->ranges_cap = (uint32_t)cap;
    u->ranges[u->range_count++] = (struct ospd_unwind_range){start, end};
    return 0;
}

static void build_work(uv_work_t *req)
{
    struct build_job *job = req->data;
    /* A build is long work (tens of milliseconds for a large object) and competes with the
     * program's threads as their equal, not at the nice value and short slice of the tick
     * (ospreyd.c), which a pool made after the tick's request would inherit. */
    static _Thread_local bool scheduled;
    if (!scheduled) {
        scheduled = true;
        ospd_sched_self(job->u->worker_nice, 0);
    }
    /* OSPREYD_UNWIND_DELAY_MS: every build that long late, as a large object's on a loaded
     * machine (the tests' cold start, whose own objects build in milliseconds). */
    const char *delay = getenv("OSPREYD_UNWIND_DELAY_MS");
    if (delay != NULL && atoi(delay) > 0 && atoi(delay) <= 10000)
        uv_sleep((unsigned)atoi(delay));
    job->rc = ospd_unwind_build(&job->src, &job->rows, job->err, sizeof job->err);
    if (job->rc == -EACCES || job->rc == -EPERM || job->rc == -ENOENT) {
        if (job->src.open_path != NULL) { /* map_files refused: the path, then */
            job->src.open_path = NULL;
            job->rc = ospd_unwind_build(&job->src, &job->rows, job->err, sizeof job->err);
        }
    }
    job->built_ns = ospc_clock_ns(CLOCK_MONOTONIC);
}

static struct build_job *queue(struct ospd_unwinder *u, uint64_t start, uint64_t end,
                               uint64_t offset, const char *path);

/* The end of a job, on the loop thread: its rows published (or not: rc), the builds pending
 * counted down, the object's other mappings its rows do not cover queued. */
static void job_done(struct build_job *job, int rc)
{
    struct ospd_unwinder *u = job->u;
    /* The span the rows cover, where they were published: the object's other mappings
     * inside it need no build of their own. */
    uint64_t covered_start = 0, covered_end = 0;
    if (rc == 0) {
        uint64_t start = job->rows.bias + job->rows.start_vaddr;
        covered_start = start;
        covered_end = job->rows.bias + job->rows.end_vaddr;
        u->images_ready++;
        u->images_cached += job->rows.from_cache;
        u->rows += job->rows.count;
        uint64_t ms = (ospc_clock_ns(CLOCK_MONOTONIC) - job->queued_ns) / 1000000u;
        if (ms > u->longest_build_ms)
            u->longest_build_ms = ms;
        remember(u, start, covered_end);
    } else if (rc != -ECANCELED && !u->warned_full) {
        u->warned_full = true;
        fprintf(stderr,
                "osprey: ospreyd: no room for the unwind rows of %s (%s); its "
                "stacks follow frame pointers\n",
                job->path, strerror(-rc));
    }
    /* Only now, with the rows published: a shim that reads no build pending takes its wait
     * stacks as final (shim/handler.c), and one taken between the two stores would be cut
     * where this image has no frame pointers, for as long as the wait lasts. */
    u->pending--;
    if (u->pending == 0 && u->ready_mono_ns == 0)
        u->ready_mono_ns = ospc_clock_ns(CLOCK_MONOTONIC);
    if (u->attached) /* release: pairs with the shim's acquire (shim/unwind.c) */
        atomic_store_explicit(&((struct osp_unwind_header *)u->map)->builds_pending, u->pending,
                              memory_order_release);
    for (uint32_t i = 0; i < job->other_count && u->attached; i++) {
        const struct mapping *m = &job->others[i];
        /* (Its end is rounded up to a page, the rows' to the last instruction.) */
        if (m->start < covered_start || m->start >= covered_end)
            queue(u, m->start, m->end, m->offset, job->path);
    }
    free(job->others);
    ospd_unwind_rows_free(&job->rows);
    free(job);
}

/* The object's pages reserved and a large image's rows copied, on libuv's pool: the object
 * stays mapped until copy_done (ospd_unwinder_close waits for it). */
static void copy_work(uv_work_t *req)
{
    struct build_job *job = req->data;
    job->copy_rc = ospd_unwind_region_fill(&job->u->region, job->copy_at, &job->rows);
}

static void release_map(struct ospd_unwinder *u);

static void copy_done(uv_work_t *req, int status)
{
    struct build_job *job = req->data;
    struct ospd_unwinder *u = job->u;
    u->copying--;
    int rc = status != 0 ? -ECANCELED : job->copy_rc;
    if (!u->attached) {
        rc = -ECANCELED;
        if (u->copying == 0)
            release_map(u); /* closed while we copied */
    }
    if (rc == 0)
        rc = ospd_unwind_region_add(&u->region, job->rows.bias + job->rows.start_vaddr, &job->rows,
                                    job->copy_at);
    job_done(job, rc);
}

static void build_done(uv_work_t *req, int status)
{
    struct build_job *job = req->data;
    struct ospd_unwinder *u = job->u;
    if (status != 0 || job->rc != 0 || !u->attached) {
        if (job->rc != 0 && !(u->emulated && job->rc == -ENOEXEC)) {
            /* (An emulated target's maps hold the emulator's objects and its own data
             * segments among the candidates: not code of its machine, not a failure.) */
            u->images_failed++;
            struct osp_unwind_header *h = (struct osp_unwind_header *)u->map;
            if (u->attached)
                atomic_fetch_add_explicit(&h->images_failed, 1, memory_order_relaxed);
        }
        job_done(job, -ECANCELED);
        return;
    }
    if ((uint64_t)job->rows.count * sizeof *job->rows.rows >= COPY_APART_BYTES) {
        job->copy_at = ospd_unwind_region_reserve(&u->region, &job->rows);
        if (job->copy_at != NULL && uv_queue_work(u->loop, &job->req, copy_work, copy_done) == 0) {
            u->copying++;
            return;
        }
    }
    uint64_t start = job->rows.bias + job->rows.start_vaddr;
    job_done(job, ospd_unwind_region_publish(&u->region, start, &job->rows));
}

/* Queue the build of one executable mapping: the job, or NULL when none was queued. */
static struct build_job *queue(struct ospd_unwinder *u, uint64_t start, uint64_t end,
                               uint64_t offset, const char *path)
{
    if (remember(u, start, end) != 0)
        return NULL;
    struct build_job *job = calloc(1, sizeof *job);
    if (job == NULL)
        return NULL;
    job->u = u;
    job->req.data = job;
    snprintf(job->path, sizeof job->path, "%s", path);
    job->src.path = job->path;
    job->src.machine = u->machine;
    job->src.mapped = true;
    job->src.map_start = start;
    job->src.map_offset = offset;
    if (strcmp(path, "[vdso]") == 0) {
        /* One kernel, one vDSO: ours is the target's. */
        const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
        if (eh == NULL) {
            free(job);
            return NULL;
        }
        job->src.memory = eh;
        job->src.memory_size = (size_t)eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
        job->src.map_offset = 0;
    } else {
        snprintf(job->open_path, sizeof job->open_path,
                 "/proc/%" PRId32 "/map_files/%" PRIx64 "-%" PRIx64, u->pid, start, end);
        job->src.open_path = job->open_path;
        job->src.cache_dir = u->cache_dir[0] ? u->cache_dir : NULL;
    }
    job->queued_ns = ospc_clock_ns(CLOCK_MONOTONIC);
    if (uv_queue_work(u->loop, &job->req, build_work, build_done) != 0) {
        free(job);
        return NULL;
    }
    u->pending++;
    atomic_store_explicit(&((struct osp_unwind_header *)u->map)->builds_pending, u->pending,
                          memory_order_relaxed);
    return job;
}

/* A later mapping of the object a job of this scan builds: it waits for that build
 * (build_done). 0, or -ENOMEM and the caller queues it alone. */
static int wait_for(struct ospd_unwinder *u, struct build_job *job, uint64_t start, uint64_t end,
                    uint64_t offset)
{
    struct mapping *grown = realloc(job->others, ((size_t)job->other_count + 1) * sizeof *grown);
    if (grown == NULL || remember(u, start, end) != 0) {
        if (grown != NULL)
            job->others = grown;
        return -ENOMEM;
    }
    job->others = grown;
    job->others[job->other_count++] = (struct mapping){start, end, offset};
    return 0;
}

/* An executable mapping the scan found, queued once the whole maps file has been read. */
struct candidate {
    uint64_t start, end, offset;
    char *path;
    bool main;             /* the target's executable */
    struct build_job *job; /* queued by this scan */
};

/* The order builds start in (libuv's pool runs them first come, first served): the
 * executable first, then the largest mappings, whose builds take longest and where a big
 * program's samples land (clang: libLLVM and libclang-cpp, not the 0.1 MB executable). */
static int build_order(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    if (x->main != y->main)
        return x->main ? -1 : 1;
    uint64_t xs = x->end - x->start, ys = y->end - y->start;
    if (xs != ys)
        return xs > ys ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

void ospd_unwinder_scan(struct ospd_unwinder *u)
{
    if (!u->attached)
        return;
    u->last_scan_ns = ospc_clock_ns(CLOCK_MONOTONIC);
    u->scans++;
    char maps[64];
    snprintf(maps, sizeof maps, "/proc/%" PRId32 "/maps", u->pid);
    FILE *f = fopen(maps, "re");
    if (f == NULL)
        return;
    /* The image is still the one whose ring we read only if its maps hold the ring: a short
     * command that exec'd the next before its collector started (a shell script's, a
     * self-exec chain's) shows the next image's objects under the same pid, whose rows nobody
     * here would read (300 self-execs: 3.8-4.1 ms of CPU an image with those builds, 3.4-3.9
     * without; bench/spawn). */
    const char *ring = u->ring_name == NULL     ? NULL
                       : u->ring_name[0] == '/' ? u->ring_name + 1
                                                : u->ring_name;
    bool ours = ring == NULL;
    struct candidate *found = NULL;
    uint64_t found_count = 0, found_cap = 0;
    char line[OSP_MAX_PATH + 256];
    while (fgets(line, sizeof line, f) != NULL) {
        if (!ours && strstr(line, ring) != NULL)
            ours = true;
        uint64_t start, end, offset;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &start, &end, perms,
                   &offset, &path_at) != 4 ||
            path_at == 0 || (perms[2] != 'x' && !(u->emulated && perms[0] == 'r')))
            continue; /* emulated: any readable mapping of a file may be its code */
        char *path = line + path_at;
        path[strcspn(path, "\n")] = '\0';
        if (path[0] != '/' && (u->emulated || strcmp(path, "[vdso]") != 0))
            continue; /* anonymous code (a JIT's): no CFI to read */
        if (known(u, start))
            continue;
        char *copy = strdup(path);
        if (copy == NULL ||
            ospd_grow((void **)&found, &found_cap, found_count + 1, sizeof *found) != 0) {
            free(copy);
            break;
        }
        found[found_count++] = (struct candidate){start, end, offset, copy, false, NULL};
    }
    fclose(f);
    char exe[OSP_MAX_PATH + 1], link[64];
    snprintf(link, sizeof link, "/proc/%" PRId32 "/exe", u->pid);
    ssize_t n = readlink(link, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    for (uint64_t i = 0; i < found_count; i++)
        found[i].main = exe[0] != '\0' && strcmp(found[i].path, exe) == 0;
    if (found_count > 1)
        qsort(found, found_count, sizeof *found, build_order);
    /* One build an object: its rows cover every PF_X segment, and a program with several
     * (node: three, so three builds and three copies of 372,203 rows published, each
     * ~190 ms of this thread on a loaded machine) maps each apart. The largest comes first
     * (build_order); the object's other mappings wait for its build. */
    for (uint64_t i = 0; i < found_count; i++) {
        if (!ours || known(u, found[i].start))
            continue;
        struct build_job *first = NULL;
        for (uint64_t j = 0; j < i && first == NULL; j++)
            if (found[j].job != NULL && strcmp(found[j].path, found[i].path) == 0)
                first = found[j].job;
        if (first == NULL || wait_for(u, first, found[i].start, found[i].end, found[i].offset) != 0)
            found[i].job = queue(u, found[i].start, found[i].end, found[i].offset, found[i].path);
    }
    for (uint64_t i = 0; i < found_count; i++)
        free(found[i].path);
    free(found);
}

void ospd_unwinder_check_stacks(struct ospd_unwinder *u, const struct ospd_interner *stacks)
{
    if (!u->attached)
        return;
    bool unknown = false;
    for (; u->stacks_checked < stacks->count && !unknown; u->stacks_checked++) {
        uint32_t depth;
        const uint64_t *pcs = ospd_stack_pcs(stacks, u->stacks_checked, &depth);
        for (uint32_t i = 0; i < depth && !unknown; i++)
            unknown = !osp_py_pc_is(pcs[i]) && !osp_unwind_left_out_is(pcs[i]) &&
                      !known(u, pcs[i]); /* a Python frame or frames left out: no object */
    }
    u->stacks_checked = stacks->count;
    /* A pc in no known range: maybe an object loaded since (dlopen). */
    if (unknown && ospc_clock_ns(CLOCK_MONOTONIC) - u->last_scan_ns >= RESCAN_NS)
        ospd_unwinder_scan(u);
}

/* The table object unmapped and its descriptor closed. */
static void release_map(struct ospd_unwinder *u)
{
    if (u->map != NULL)
        munmap(u->map, u->map_size);
    if (u->fd >= 0)
        close(u->fd);
    u->map = NULL;
    u->fd = -1;
    ospd_unwind_region_free(&u->region);
}

void ospd_unwinder_close(struct ospd_unwinder *u)
{
    u->attached = false; /* builds still queued publish nothing */
    if (u->copying == 0) /* else the last copy_done releases it: a copy writes there */
        release_map(u);
    free(u->ranges);
    u->ranges = NULL;
    u->range_count = u->ranges_cap = 0;
}

void ospd_collector_note_cost(struct ospd_collector *c, const struct ospd_unwinder *u)
{
    /* The process's CPU not yet counted in a profile it wrote: one collector process may follow
     * several images (follow.c), and the files of a run add their cpu_ms up. The loop's thread
     * only. */
    static uint64_t counted_ms;
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) == 0) {
        c->peak_rss_kb = (uint64_t)usage.ru_maxrss;
        uint64_t ms = (uint64_t)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000 +
                      (uint64_t)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000;
        c->cpu_ms = ms > counted_ms ? ms - counted_ms : 0;
        counted_ms = ms > counted_ms ? ms : counted_ms;
    }
    c->unwind_images = u->images_ready;
    c->unwind_failed = u->images_failed;
    c->unwind_cached = u->images_cached;
    c->unwind_rows = u->rows;
    c->unwind_bytes = u->region.used;
    c->unwind_longest_ms = u->longest_build_ms;
    /* On the samples' axis (t_rel_ns); both clocks are CLOCK_MONOTONIC. */
    c->unwind_ready_ns = u->ready_mono_ns > c->start_mono_ns ? u->ready_mono_ns - c->start_mono_ns
                         : u->ready_mono_ns != 0             ? 1
                                                             : 0;
}
