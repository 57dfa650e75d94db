/* follow.c — later images followed in this collector's own process: a greeting taken by
 * forks.c (an exec'd or spawned image, a forked child) becomes a second session of this
 * ospreyd, in its loop, instead of a new ospreyd started for it.
 *
 * Owns the list of images followed and their reaper. Each image is a ring source
 * (ring-source.c) of its own, made from the descriptors its greeting carried, exactly as the
 * command line of a collector process started for it would have made it: the same ring, the
 * same switch events, its own fork socket (its children greet it here), its own unwind
 * tables, the same raw file (path, content, "beside" rule), the run's lock this process
 * holds. It attaches at once, watches its own target, ticks on its own timer, and finishes by
 * itself, its raw file written on libuv's pool (the loop answers the other images' greetings
 * meanwhile: written on the loop, the file of the image that just ended held up the next
 * one's answer); the reaper (a prepare handle, unreferenced: it never keeps the loop alive)
 * frees it once its handles are closed, its file written and its unwind builds back, its
 * outputs exported first when asked. The process ends, and its run lock goes, only when every image
 * it follows has its file written.
 *
 * DESIGN. A collector process per image cost 2.3 ms of CPU per shell command at load 5 (its
 * start: clone, exec, the C library's start, the loop's handles; its end: the address space
 * torn down), more than the image itself; a session is a struct and a few handles. Bounded:
 * at most OSPD_MAX_FOLLOWED images at once in one process (a program that keeps more alive
 * gets a collector process for each one beyond, as before: forks.c). What the sessions share
 * is the loop's thread: one image's blocking work (its exports, its fork socket's last 100 ms
 * at its end) delays the others' ticks by as much, which their rings' sizes absorb (a quarter
 * of a ring is read per tick at 4-16 ms). Loop's thread only.
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
    int switch_fds[OSP_MAX_SWITCH_FDS];
    char ring_name[OSP_RING_NAME_SIZE];
    char out_path[OSP_MAX_PATH + 1];
};

static struct {
    uv_prepare_t reaper;
    bool reaping;
    struct follower *list;
    unsigned count;
} followed;

static void close_follower(struct follower *f)
{
    ospd_ring_source.close(f->d);
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
        if (!f->d->finished || f->d->publishing || f->d->unwinder.pending > 0) {
            at = &f->next;
            continue;
        }
        if (!f->seen_finished) {
            f->seen_finished = true;
            at = &f->next;
            continue;
        }
        *at = f->next;
        followed.count--;
        close_follower(f);
    }
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
                const char *self, const char *export_formats, int run_lock)
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
    /* The attach at the program's nice value, as a collector process started for the image
     * ran its start (forks.c): at this one's, 10 below the program's where allowed, it took a
     * core from the new image on a busy machine. The session's start sets ours again. */
    ospd_sched_self(ospd_target_nice(hello->pid), 0);
    if (ospd_ring_source.attach(f->d, loop) != 0) {
        /* Refused (one line said why, and the shim reads daemon_error), as a collector process
         * of its own would have been. The ring's descriptor is closed by the attach; the
         * others are still ours when the ring was not mapped. */
        if (f->d->header == NULL)
            for (int i = 1; i < n; i++)
                close(own[i]);
        else /* mapped, then no timer: the process lives on, so the shim must be told */
            ospd_ring_publish_failure(f->d->header, "ospreyd could not follow this process");
        f->d->finished = true;
        close_follower(f);
        return 0;
    }
    f->next = followed.list;
    followed.list = f;
    followed.count++;
    return 0;
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
