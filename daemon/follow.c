/* follow.c — later images followed in this collector's own process: the greeting of an
 * exec'd or spawned image, taken by forks.c, becomes a second session of this ospreyd, in its
 * loop, instead of a new ospreyd started for it (a forked child still gets a process: forks.c).
 *
 * Owns the list of images followed and their reaper. Each image is a ring source
 * (ring-source.c) of its own, made from the descriptors its greeting carried, exactly as the
 * command line of a collector process started for it would have made it: the same ring, the
 * same switch events, its own fork socket (its children greet it here), its own unwind
 * tables, the same raw file (path, content, "beside" rule), the run's lock this process
 * holds. Its ring and switch events are mapped on libuv's pool (held since its greeting,
 * forks.c), its handles then started on the loop; it watches its own target, ticks on its own
 * timer and finishes by itself, its raw file written on the pool; the reaper (a prepare
 * handle, unreferenced: it never keeps the loop alive) lets it go on the pool once its
 * handles are closed, its file written and its unwind builds back (its outputs exported first
 * when asked). The process ends, and its run lock goes, only when every image it follows has
 * its file written.
 *
 * DESIGN. A collector process per image cost more CPU than the image itself (its start:
 * clone, exec, the C library's start, the loop's handles; its end: the address space torn
 * down); a session is a struct and a few handles. What the sessions share is the loop's
 * thread, which answers every greeting: whatever waits on it holds up the next image. So the
 * kernel's slow parts go to the pool (a switch ring of an ended process maps in 15-23 ms with
 * the memory map locked; closing one can wait as long), the file too, and the thread runs at
 * the program's nice value once it follows an image (ring-source.c). Bounded: at most
 * OSPD_MAX_FOLLOWED images at once in one process (a program that keeps more alive gets a
 * collector process for each one beyond, as before: forks.c). One image's remaining blocking
 * work (its fork socket's last waits at its end, the wait for its next image's greeting
 * after an exec) delays the others' ticks by as much, which their rings' sizes absorb (a
 * quarter of a ring is read per tick at 4-16 ms). The list: the loop's thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ospd_follow.h"
#include "ospd_ring_daemon.h"
#include "ospd_ring_source.h"
#include "ospd_target.h"

/* One image followed: its options and the storage they point into. */
struct follower {
    struct follower *next;
    struct ospd_daemon *d;
    bool seen_finished; /* the reaper saw it finished once: its closes ran since */
    bool mapping;       /* its ring being mapped on the pool (map_work) */
    uv_work_t map;
    uv_loop_t *loop;
    int map_rc;
    int own[3 + OSP_MAX_SWITCH_FDS]; /* the descriptors handed to its session */
    struct ospd_switch_hold hold;    /* its switch events, mapped since its greeting */
    int n;
    int switch_fds[OSP_MAX_SWITCH_FDS];
    char ring_name[OSP_RING_NAME_SIZE];
    char out_path[OSP_MAX_PATH + 1];
};

static struct {
    uv_prepare_t reaper;
    bool reaping;
    bool ever; /* an image followed once */
    struct follower *list;
    unsigned count;
} followed;

static void close_follower(struct follower *f)
{
    ospd_ring_source.close(f->d);
    free(f);
}

/* Its ring, switch events and tables let go, its outputs exported (libuv's pool: closing an
 * ended process's switch events can wait for the kernel as long as mapping them). */
static void close_work(uv_work_t *work)
{
    struct follower *f = work->data;
    ospd_ring_source.close(f->d);
    f->d = NULL;
}

static void close_done(uv_work_t *work, int status)
{
    (void)status;
    struct follower *f = work->data;
    followed.count--;
    free(f);
}

/* Before each wait of the loop: free the images finished an iteration ago or more (their
 * handles' closes run at the end of the iteration in which they finished) whose unwind builds
 * are back. */
static void on_reap(uv_prepare_t *handle)
{
    (void)handle;
    for (struct follower **at = &followed.list; *at != NULL;) {
        struct follower *f = *at;
        if (f->mapping || !f->d->finished || f->d->publishing || f->d->unwinder.pending > 0) {
            at = &f->next;
            continue;
        }
        if (!f->seen_finished) {
            f->seen_finished = true;
            at = &f->next;
            continue;
        }
        *at = f->next;
        f->map.data = f;
        if (uv_queue_work(f->loop, &f->map, close_work, close_done) != 0) {
            followed.count--;
            close_follower(f);
        }
    }
}

/* The ring and the switch events mapped, ATTACHED answered (libuv's pool). */
static void map_work(uv_work_t *work)
{
    struct follower *f = work->data;
    f->map_rc = ospd_ring_source_map(f->d);
}

/* Mapped: the session's handles started (the loop's thread), or, refused, freed. */
static void map_done(uv_work_t *work, int status)
{
    (void)status;
    struct follower *f = work->data;
    f->mapping = false;
    ospd_switches_release(&f->hold);
    if (f->map_rc == 0 && ospd_ring_source_start(f->d, f->loop) == 0)
        return;
    /* Refused (one line said why, and the shim reads daemon_error), as a collector process of
     * its own would have been. The ring's descriptor is closed by the map; the others are
     * still ours when the ring was not mapped. */
    if (f->d->header == NULL)
        for (int i = 1; i < f->n; i++)
            close(f->own[i]);
    else /* mapped, then no timer: the process lives on, so the shim must be told */
        ospd_ring_publish_failure(f->d->header, "ospreyd could not follow this process");
    f->d->finished = true;
    for (struct follower **at = &followed.list; *at != NULL; at = &(*at)->next)
        if (*at == f) {
            *at = f->next;
            break;
        }
    followed.count--;
    close_follower(f);
}

static int dup_all(const int *fds, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        out[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        if (out[i] < 0) {
            int err = -errno;
            while (i-- > 0)
                close(out[i]);
            return err;
        }
    }
    return 0;
}

int ospd_follow(uv_loop_t *loop, const struct osp_fork_hello *hello, const int *fds, int n,
                struct ospd_switch_hold *hold, const char *self, const char *export_formats,
                int run_lock)
{
    /* OSPREYD_FOLLOW=0 (ospreyd's environment): a collector process per image, as before, for
     * comparisons. */
    static int off = -1;
    if (off < 0) {
        const char *knob = getenv("OSPREYD_FOLLOW");
        off = knob != NULL && strcmp(knob, "0") == 0;
    }
    if (off || followed.count >= OSPD_MAX_FOLLOWED)
        return -EBUSY;
    if (n > 3 + (int)OSP_MAX_SWITCH_FDS ||
        n != 1 + (int)hello->switch_fds + (int)hello->listener + (int)hello->unwind)
        return -EINVAL;
    if (!followed.reaping) {
        if (uv_prepare_init(loop, &followed.reaper) != 0)
            return -ENOMEM;
        uv_prepare_start(&followed.reaper, on_reap);
        uv_unref((uv_handle_t *)&followed.reaper);
        followed.reaping = true;
    }
    struct follower *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -ENOMEM;
    int own[3 + OSP_MAX_SWITCH_FDS];
    int err = dup_all(fds, n, own);
    if (err != 0) {
        free(f);
        return err;
    }
    snprintf(f->ring_name, sizeof f->ring_name, "%s", hello->ring_name);
    snprintf(f->out_path, sizeof f->out_path, "%s", hello->out_path);
    /* As the greeting laid them out: ring, switch events, socket, tables. */
    struct ospd_ring_options o = {.ring_name = f->ring_name,
                                  .out_path = f->out_path,
                                  .export_formats = export_formats,
                                  .unwind_fd = -1,
                                  .switch_fds = f->switch_fds,
                                  .ring_fd = own[0],
                                  .forks_fd = -1,
                                  .run_lock = run_lock,
                                  .publish_apart = true};
    snprintf(o.self, sizeof o.self, "%s", self);
    int next = 1;
    for (; o.switch_count < (int)hello->switch_fds; o.switch_count++)
        f->switch_fds[o.switch_count] = own[next++];
    if (hello->listener)
        o.forks_fd = own[next++];
    if (hello->unwind)
        o.unwind_fd = own[next++];
    f->d = ospd_ring_source_new(&o);
    if (f->d == NULL) {
        for (int i = 0; i < n; i++)
            close(own[i]);
        free(f);
        return -ENOMEM;
    }
    if (!followed.ever) {
        /* From now on at the program's nice value, not below it (ring-source.c's
         * request_short_slice): the images' starts and ends run on this thread. */
        followed.ever = true;
        ospd_sched_self(ospd_target_nice(hello->pid), 100000);
    }
    memcpy(f->own, own, sizeof(int) * (size_t)n);
    f->n = n;
    f->loop = loop;
    f->next = followed.list;
    followed.list = f;
    followed.count++;
    /* Mapped on the pool, at the program's nice value (the pool's threads run at it), so that
     * the loop answers the next image's greeting meanwhile; its switch events held since its
     * greeting (forks.c) until then, so that they map at once: the events of a process that
     * has ended take 15-23 ms to map, the process's memory map locked all along, which held
     * up every other image's session (ospd_switch.h). */
    f->hold = *hold;
    memset(hold, 0, sizeof *hold);
    f->mapping = true;
    f->map.data = f;
    if (uv_queue_work(loop, &f->map, map_work, map_done) != 0) {
        map_work(&f->map);
        map_done(&f->map, 0);
    }
    return 0;
}

bool ospd_following(void)
{
    return followed.ever;
}

void ospd_follow_stop(void)
{
    for (struct follower *f = followed.list; f != NULL; f = f->next)
        ospd_ring_source.stop(f->d, OSPD_EXIT_STOPPED); /* nothing when it has ended */
    if (followed.reaping) {
        uv_prepare_stop(&followed.reaper);
        uv_close((uv_handle_t *)&followed.reaper, NULL);
        followed.reaping = false;
    }
}

void ospd_follow_close(void)
{
    while (followed.list != NULL) {
        struct follower *f = followed.list;
        followed.list = f->next;
        followed.count--;
        close_follower(f);
    }
}
