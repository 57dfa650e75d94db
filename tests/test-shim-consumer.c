/* test-shim-consumer.c — a minimal stand-in for ospreyd, for the shim's end-to-end tests.
 *
 * Accepts the command line the shim starts ospreyd with (--ring-fd N --ring-name NAME --out
 * PATH --detached, the other descriptors ignored), leaves the program's session as ospreyd
 * leaves its group, maps the ring, marks itself ATTACHED, drains every record through the
 * daemon's reader (ospd_ring_walk: the framing checked as ospreyd checks it) with the checks a
 * consumer must make, and when the shim has published EXITED (or the target is gone) writes
 * a plain-text summary to PATH (temp file + rename) and stores DONE — or, with
 * SHIM_CONSUMER_FAIL=1 in its environment, writes daemon_error and stores FAILED.
 *
 * Summary lines: "key value" for totals, then one "thread" line per registration:
 *   thread <slot> <generation> <fiber> <label> <samples> <waiting> <repeats> <first_ns> <last_ns>
 * one line per image:
 *   image <base> <slide> <text> <text_size> <arch> <path>
 * and the first few stacks of each state:
 *   stack <on-cpu|waiting> <slot> <generation> <pc> <pc> ...
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ospd.h"

#define MAX_THREADS 8192

struct thread_info {
    uint32_t slot, generation;
    int64_t fiber;
    char label[OSP_MAX_LABEL + 1];
    uint64_t samples, waiting, repeats, first_ns, last_ns;
    int ended;
};

static struct thread_info threads[MAX_THREADS];
static int nthreads;
static uint64_t pads, images, main_images, exit_records, exit_dropped, errors, starts, ends,
    unknown_samples, max_depth;
static char main_image[OSP_MAX_PATH + 1];
static char image_lines[64][640];
static int nimage_lines;
/* Executable ranges of the images seen so far, to count pcs that fall outside all of them. */
static uint64_t text_lo[1024], text_hi[1024];
static int ntext;
static uint64_t stray_pcs, deep_waiting, sample_records;

static int in_text(uint64_t pc)
{
    for (int i = 0; i < ntext; i++)
        if (pc >= text_lo[i] && pc < text_hi[i])
            return 1;
    return 0;
}
/* The first few stacks of each state, for tests that check what the walk found. */
#define KEPT_STACKS 4
static char kept[2][KEPT_STACKS][OSP_MAX_DEPTH * 19 + 64];
static int nkept[2];

static void keep_stack(const struct osp_rec_sample *r, const uint64_t *pcs)
{
    uint32_t state = r->state == OSP_STATE_WAITING;
    if (nkept[state] >= KEPT_STACKS)
        return;
    char *line = kept[state][nkept[state]++];
    int n = sprintf(line, "stack %s %u %u", state ? "waiting" : "on-cpu", r->slot, r->generation);
    for (uint32_t i = 0; i < r->depth; i++)
        n += sprintf(line + n, " 0x%llx", (unsigned long long)pcs[i]);
}

static struct thread_info *find_thread(uint32_t slot, uint32_t generation)
{
    for (int i = nthreads - 1; i >= 0; i--)
        if (threads[i].slot == slot && threads[i].generation == generation && !threads[i].ended)
            return &threads[i];
    return NULL;
}

/* Parsing a slot's ring: a sample of a registration whose start is not parsed yet waits. */
static int slot_mode, deferred;

static void sample_seen(uint32_t slot, uint32_t generation, uint64_t t_ns, int waiting, int repeat,
                        uint32_t weight)
{
    struct thread_info *t = find_thread(slot, generation);
    if (t == NULL) {
        if (slot_mode)
            deferred = 1;
        else
            unknown_samples++;
        return;
    }
    if (repeat) {
        t->repeats++;
    } else {
        t->samples += weight;
        sample_records++;
    }
    if (waiting && !repeat)
        t->waiting += weight;
    if (t->first_ns == 0)
        t->first_ns = t_ns;
    t->last_ns = t_ns;
}

static uint8_t *slot_table;
static uint64_t watch[OSP_ATTENTION_WORDS]; /* slots the tick looks at (ospd_watch_take) */
static uint32_t slot_count, slot_ring_size;

static struct osp_slot *slot_at(uint32_t i)
{
    return osp_slot_at(slot_table, slot_ring_size, i);
}

static int drain_ring(struct osp_ring_header *h, _Atomic uint64_t *head_index,
                      _Atomic uint64_t *tail_index, const uint8_t *data, uint64_t size);

static void drain_slot(struct osp_ring_header *h, uint32_t i)
{
    struct osp_slot *s = slot_at(i);
    slot_mode = 1;
    deferred = 0;
    drain_ring(h, &s->head, &s->tail, (const uint8_t *)(s + 1), slot_ring_size);
    slot_mode = 0;
    deferred = 0;
}

static void drain_slots(struct osp_ring_header *h)
{
    uint32_t used = osp_slots_in_use(h, slot_count);
    for (uint32_t i = 0; i < used; i++)
        drain_slot(h, i);
}

/* Consume every complete record below head. Returns 1 after the EXIT record. */
static int drain(struct osp_ring_header *h, const uint8_t *data)
{
    drain_slots(h);
    int done = drain_ring(h, &h->head, &h->tail, data, h->data_size);
    drain_slots(h);
    return done;
}

struct drain {
    struct osp_ring_header *h;
    int done; /* the exit record was read */
};

/* The visitor of ospd_ring_walk (the daemon's reader): one record, copied out of the ring. */
static int consume_record(void *ctx, uint64_t pos, const uint8_t *rec, uint32_t type, uint32_t size)
{
    struct drain *d = ctx;
    struct osp_ring_header *h = d->h;
    (void)pos;
    switch (type) {
    case OSP_REC_PAD:
        pads++;
        break;
    case OSP_REC_THREAD_START: {
        struct osp_rec_thread_start r;
        memcpy(&r, rec, sizeof(r));
        starts++;
        if (r.label_len > OSP_MAX_LABEL || sizeof(r) + r.label_len > size) {
            errors++;
            break;
        }
        if (nthreads < MAX_THREADS) {
            struct thread_info *t = &threads[nthreads++];
            memset(t, 0, sizeof(*t));
            t->slot = r.slot;
            t->generation = r.generation;
            t->fiber = r.fiber;
            memcpy(t->label, rec + sizeof(r), r.label_len);
        }
        break;
    }
    case OSP_REC_THREAD_END: {
        struct osp_rec_thread_end r;
        memcpy(&r, rec, sizeof(r));
        ends++;
        if (slot_table != NULL && r.slot < slot_count) {
            drain_slot(h, r.slot); /* its samples, up to its end */
            atomic_store_explicit(&slot_at(r.slot)->drained_generation, r.generation,
                                  memory_order_release);
        }
        struct thread_info *t = find_thread(r.slot, r.generation);
        if (t)
            t->ended = 1;
        else
            errors++;
        break;
    }
    case OSP_REC_STACK_COPY: /* a shim's before it saw this consumer attach: the sample */
    case OSP_REC_SAMPLE_WEIGHTED:
    case OSP_REC_SAMPLE: {
        /* A plain sample is the weighted record's first 32 bytes, of weight 1; a stack copy's
         * first 40 bytes are the weighted record's, its pcs after its own fixed part. */
        struct osp_rec_sample_weighted w = {.weight = 1};
        uint32_t fixed = type == OSP_REC_SAMPLE       ? (uint32_t)sizeof(struct osp_rec_sample)
                         : type == OSP_REC_STACK_COPY ? (uint32_t)sizeof(struct osp_rec_stack_copy)
                                                      : (uint32_t)sizeof w;
        memcpy(&w, rec, sizeof w < fixed ? sizeof w : fixed);
        if (w.depth < 1 || w.depth > OSP_MAX_DEPTH || fixed + w.depth * 8u != size ||
            w.weight == 0) {
            errors++;
            break;
        }
        if (w.depth > max_depth)
            max_depth = w.depth;
        sample_seen(w.slot, w.generation, w.t_ns, w.state == OSP_STATE_WAITING, 0, w.weight);
        if (deferred)
            break;
        struct osp_rec_sample r = {
            .slot = w.slot, .generation = w.generation, .state = w.state, .depth = w.depth};
        uint64_t pcs[OSP_MAX_DEPTH];
        memcpy(pcs, rec + fixed, w.depth * 8u);
        keep_stack(&r, pcs);
        for (uint32_t i = 0; i < w.depth; i++)
            stray_pcs += !in_text(pcs[i]);
        deep_waiting += w.state == OSP_STATE_WAITING && w.depth >= 2;
        break;
    }
    case OSP_REC_WAIT_SPAN: /* the waits' sites, before a collector said it times them */
        break;
    case OSP_REC_REPEAT: {
        struct osp_rec_repeat r;
        memcpy(&r, rec, sizeof(r));
        sample_seen(r.slot, r.generation, r.t_ns, 1, 1, 1);
        break;
    }
    case OSP_REC_IMAGE: {
        struct osp_rec_image r;
        memcpy(&r, rec, sizeof(r));
        if (r.path_len > OSP_MAX_PATH || sizeof(r) + r.path_len > size) {
            errors++;
            break;
        }
        images++;
        if (ntext < 1024) {
            text_lo[ntext] = r.text;
            text_hi[ntext++] = r.text + r.text_size;
        }
        if (nimage_lines < 64)
            snprintf(image_lines[nimage_lines++], sizeof(image_lines[0]),
                     "image 0x%llx 0x%llx 0x%llx 0x%llx %s %.*s", (unsigned long long)r.base,
                     (unsigned long long)r.slide, (unsigned long long)r.text,
                     (unsigned long long)r.text_size, r.arch,
                     (int)(r.path_len < 512 ? r.path_len : 512), rec + sizeof(r));
        if (r.flags & OSP_IMAGE_MAIN) {
            main_images++;
            memcpy(main_image, rec + sizeof(r), r.path_len);
            main_image[r.path_len] = '\0';
        }
        break;
    }
    case OSP_REC_EXIT: {
        struct osp_rec_exit r;
        memcpy(&r, rec, sizeof(r));
        exit_records++;
        exit_dropped = r.dropped;
        d->done = 1;
        return OSPD_VISIT_STOP;
    }
    default:
        errors++;
        break;
    }
    return deferred ? OSPD_VISIT_AGAIN : 0; /* read it again once its thread's start is known */
}

static int drain_ring(struct osp_ring_header *h, _Atomic uint64_t *head_index,
                      _Atomic uint64_t *tail_index, const uint8_t *data, uint64_t size)
{
    uint64_t tail = osp_index_load_own(tail_index);
    uint64_t head = osp_index_load_acquire(head_index); /* (C) */
    char error[256] = "";
    uint64_t new_tail;
    struct drain d = {.h = h};
    int rc =
        ospd_ring_walk(data, size, tail, head, consume_record, &d, error, sizeof error, &new_tail);
    if (rc < 0) {
        errors++;
        return 1;
    }
    osp_index_store_release(tail_index, new_tail); /* (D) */
    return d.done;
}

static int write_summary(const char *path, struct osp_ring_header *h)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return -1;
    uint64_t samples = 0, repeats = 0;
    for (int i = 0; i < nthreads; i++) {
        samples += threads[i].samples;
        repeats += threads[i].repeats;
    }
    fprintf(f, "pid %d\n", (int)h->pid);
    fprintf(f, "rate_hz %u\n", h->rate_hz);
    fprintf(f, "platform %s\n", h->platform);
    fprintf(f, "samples %llu\n", (unsigned long long)samples);
    fprintf(f, "repeats %llu\n", (unsigned long long)repeats);
    fprintf(f, "sample_records %llu\n", (unsigned long long)sample_records);
    fprintf(f, "dropped %llu\n", (unsigned long long)exit_dropped);
    fprintf(f, "header_dropped %llu\n",
            (unsigned long long)atomic_load_explicit(&h->dropped, memory_order_relaxed));
    fprintf(f, "exit_records %llu\n", (unsigned long long)exit_records);
    fprintf(f, "images %llu\n", (unsigned long long)images);
    fprintf(f, "main_images %llu\n", (unsigned long long)main_images);
    fprintf(f, "main_image %s\n", main_image);
    fprintf(f, "thread_starts %llu\n", (unsigned long long)starts);
    fprintf(f, "thread_ends %llu\n", (unsigned long long)ends);
    fprintf(f, "unknown_samples %llu\n", (unsigned long long)unknown_samples);
    fprintf(f, "max_depth %llu\n", (unsigned long long)max_depth);
    fprintf(f, "errors %llu\n", (unsigned long long)errors);
    fprintf(f, "stray_pcs %llu\n", (unsigned long long)stray_pcs);
    fprintf(f, "deep_waiting %llu\n", (unsigned long long)deep_waiting);
    for (int i = 0; i < nthreads; i++) {
        struct thread_info *t = &threads[i];
        fprintf(f, "thread %u %u %lld %s %llu %llu %llu %llu %llu\n", t->slot, t->generation,
                (long long)t->fiber, t->label[0] ? t->label : "-", (unsigned long long)t->samples,
                (unsigned long long)t->waiting, (unsigned long long)t->repeats,
                (unsigned long long)t->first_ns, (unsigned long long)t->last_ns);
    }
    for (int i = 0; i < nimage_lines; i++)
        fprintf(f, "%s\n", image_lines[i]);
    for (int state = 0; state < 2; state++)
        for (int i = 0; i < nkept[state]; i++)
            fprintf(f, "%s\n", kept[state][i]);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

/* Does process pid still map the ring called name? (Yes when its maps cannot be read.) */
static int maps_ring(int32_t pid, const char *name)
{
    char path[64], line[4352];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 1;
    int found = 0, any = 0;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        any = 1;
        found = strstr(line, name + 1) != NULL;
    }
    fclose(f);
    return found || !any;
}

int main(int argc, char **argv)
{
    const char *ring = NULL, *out = NULL;
    int detached = 0, ring_fd = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ring-fd") == 0 && i + 1 < argc)
            ring_fd = atoi(argv[++i]);
        else if (strcmp(argv[i], "--ring-name") == 0 && i + 1 < argc)
            ring = argv[++i];
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--detached") == 0)
            detached = 1; /* in the background already: no fork */
    }
    if (ring == NULL || out == NULL || ring_fd < 0) {
        fprintf(stderr, "usage: %s --ring-fd N --ring-name NAME --out PATH [--detached]\n",
                argv[0]);
        return 2;
    }
    if (detached)
        setsid();
    /* SHIM_CONSUMER_LATE=MS: live that long without attaching, then end (a collector that
     * never attaches while its program runs and exits). */
    const char *late = getenv("SHIM_CONSUMER_LATE");
    if (late != NULL) {
        usleep((useconds_t)atoi(late) * 1000u);
        return 0;
    }
    /* As ospreyd does where it may: a tick that waits behind busy threads lets rings fill. */
    if (setpriority(PRIO_PROCESS, 0, -10) != 0)
        errno = 0;
    int fd = ring_fd;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < OSP_RING_HEADER_SIZE)
        return 1;
    uint8_t *map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return 1;
    struct osp_ring_header *h = (struct osp_ring_header *)map;
    char why[OSPD_ERROR_SIZE];
    if (ospd_ring_validate(h, (uint64_t)st.st_size, why, sizeof why) != 0) {
        fprintf(stderr, "test-shim-consumer: %s\n", why);
        return 1;
    }
    if (h->slot_count > 0) {
        slot_table = map + h->slots_offset;
        slot_count = h->slot_count;
        slot_ring_size = h->slot_ring_size;
    }
    uint64_t period = 1000000000u / h->rate_hz;
    atomic_store_explicit(&h->daemon_pid, (int32_t)getpid(), memory_order_relaxed);
    atomic_store_explicit(&h->daemon_state, OSP_DAEMON_ATTACHED, memory_order_release);
    const uint8_t *data = map + h->data_offset;
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    uint64_t deadline = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
    uint64_t next_map_check = deadline + 500000000u;
    for (;;) {
        /* The tick, as ospreyd runs it (without jitter). */
        clock_gettime(CLOCK_MONOTONIC, &mono);
        uint64_t now = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
        ospd_tick_round(h, slot_table, slot_count, slot_ring_size, watch);
        if (slot_table != NULL)
            ospd_watch_settle(slot_table, slot_ring_size, watch);
        uint32_t state = atomic_load_explicit(&h->shim_state, memory_order_acquire);
        if (drain(h, data))
            break;
        if (state == OSP_SHIM_EXITED) {
            drain(h, data);
            break;
        }
        if (kill(h->pid, 0) != 0 && errno == ESRCH) {
            drain(h, data);
            break;
        }
        /* The target exec'd away from this ring (its pid lives on). */
        if (now > next_map_check) {
            next_map_check = now + 500000000u;
            if (!maps_ring(h->pid, ring)) {
                drain(h, data);
                break;
            }
        }
        deadline += period;
        if (deadline < now)
            deadline = now;
        struct timespec at = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
    }
    /* SHIM_CONSUMER_FAIL=1: fail the way ospreyd reports failure (tests of the shim's side). */
    const char *fail = getenv("SHIM_CONSUMER_FAIL");
    if ((fail && strcmp(fail, "1") == 0) || write_summary(out, h) != 0) {
        snprintf(h->daemon_error, sizeof(h->daemon_error), "cannot write %s", out);
        atomic_store_explicit(&h->daemon_state, OSP_DAEMON_FAILED, memory_order_release);
        return 1;
    }
    atomic_store_explicit(&h->daemon_state, OSP_DAEMON_DONE, memory_order_release);
    return 0;
}
