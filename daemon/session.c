/* session.c — the collector's session, written once for every source (the shim's rings in
 * ospreyd.c, perf events in attach.c): the target's CPU clock, its pidfd watched in the
 * libuv loop and how it ended, the raw file published (under its directory's lock, beside
 * the path when another profiled process wrote it), the outputs exported under common/'s
 * stem, and the run's lock. Times are common/'s (ospc_clock_ns). What a source reads and
 * when the profile ends stay with its collector.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ospd_follow.h"
#include "ospd_session.h"
#include "ospd_target.h"
#include "ospx.h"

#define DIR_LOCK_WAIT_MS 100 /* the directory's lock, at most (held for a stat and a rename) */
#define DIR_LOCK_STEP_MS 5

uint64_t ospd_target_cpu_ns(int32_t pid)
{
    clockid_t clock;
    if (clock_getcpuclockid(pid, &clock) != 0)
        return 0;
    return ospc_clock_ns(clock);
}

int ospd_watch_start(struct ospd_watch *w, uv_loop_t *loop, int32_t pid, uv_poll_cb on_end,
                     void *data)
{
    w->pid = pid;
    w->polling = false;
    w->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0u);
    if (w->pidfd < 0)
        return -errno;
    if (uv_poll_init(loop, &w->poll, w->pidfd) != 0) {
        close(w->pidfd);
        w->pidfd = -1;
        return -ENOMEM;
    }
    w->poll.data = data;
    w->polling = true;
    uv_poll_start(&w->poll, UV_READABLE, on_end);
    return 0;
}

void ospd_watch_pause(struct ospd_watch *w)
{
    if (w->polling)
        uv_poll_stop(&w->poll);
}

void ospd_watch_close(struct ospd_watch *w)
{
    if (!w->polling)
        return;
    w->polling = false;
    uv_poll_stop(&w->poll);
    uv_close((uv_handle_t *)&w->poll, NULL);
}

void ospd_watch_free(struct ospd_watch *w)
{
    if (w->pidfd >= 0)
        close(w->pidfd);
    w->pidfd = -1;
}

enum ospd_exit_status ospd_watch_ended(const struct ospd_watch *w, char state, int wait_status,
                                       struct ospd_collector *c)
{
    if (state != 'Z')
        wait_status = ospd_target_pidfd_status(w->pidfd); /* already reaped: ask the pidfd */
    if (wait_status >= 0 && WIFSIGNALED(wait_status)) {
        c->exit_signal = WTERMSIG(wait_status);
        return OSPD_EXIT_KILLED;
    }
    if (wait_status >= 0 && WIFEXITED(wait_status))
        c->exit_code = WEXITSTATUS(wait_status);
    return OSPD_EXIT_VANISHED;
}

int ospd_session_publish(const struct ospd_collector *c, const char *out_path, char *written,
                         size_t written_size, bool *beside, struct ospc_atomic *pending, char *err,
                         size_t err_size)
{
    char beside_path[OSP_MAX_PATH + 64]; /* not static: images followed publish on the pool */
    *beside = false;
    /* Two collectors finishing at once must not both find the path free: they take turns on
     * a lock of its directory, only around this check and the rename. */
    int dir_lock = -1;
    char *dir_copy = strdup(out_path);
    if (dir_copy != NULL) {
        dir_lock = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        free(dir_copy);
    }
    /* Bounded: anyone who can open the directory (/tmp) can hold its lock for good. Past
     * DIR_LOCK_WAIT_MS the check and rename go on without it. */
    for (int waited = 0; dir_lock >= 0 && flock(dir_lock, LOCK_EX | LOCK_NB) != 0;
         waited += DIR_LOCK_STEP_MS) {
        if (waited >= DIR_LOCK_WAIT_MS) {
            close(dir_lock);
            dir_lock = -1;
            break;
        }
        uv_sleep(DIR_LOCK_STEP_MS);
    }
    /* Another profiled process (the other end of a pipeline, started with the same
     * OSPREY_PROFILE) wrote this path since this one started: keep both profiles. */
    struct stat st;
    if (stat(out_path, &st) == 0 &&
        (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec >=
            c->start_unix_ns &&
        osp_per_pid_path(out_path, c->pid, NULL, beside_path, sizeof beside_path) == 0) {
        out_path = beside_path;
        *beside = true;
    }
    int rc = ospd_raw_publish(c, out_path, pending, err, err_size);
    if (dir_lock >= 0)
        close(dir_lock); /* and its lock */
    snprintf(written, written_size, "%s", out_path);
    return rc;
}

int ospd_session_export(const char *raw_path, const char *formats)
{
    char stem[OSP_MAX_PATH + 64];
    if (ospc_raw_stem(raw_path, stem, sizeof stem) < 0) {
        fprintf(stderr, "osprey: ospreyd: exporting %s: the path is too long\n", raw_path);
        return -1;
    }
    struct ospx_error err;
    memset(&err, 0, sizeof err);
    /* One at a time: the images a collector follows export on libuv's pool (follow.c), and
     * the exporters keep state of their own (the symbolizer's). */
    static pthread_mutex_t exporting = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&exporting);
    int rc = ospx_export_files(raw_path, stem, formats, &err);
    pthread_mutex_unlock(&exporting);
    if (rc != 0) {
        fprintf(stderr, "osprey: ospreyd: exporting %s: %s%s%s\n", raw_path,
                err.file[0] ? err.file : "", err.file[0] ? ": " : "", err.text);
        return -1;
    }
    return 0;
}

int ospd_session_run_lock(int handed, const char *out_path)
{
    int fd = handed;
    if (fd < 0) {
        char lock[OSP_MAX_PATH + sizeof OSP_RUN_LOCK + 2];
        const char *slash = strrchr(out_path, '/');
        int dir = slash != NULL ? (int)(slash - out_path) : 0;
        snprintf(lock, sizeof lock, "%.*s/%s", dir, out_path, OSP_RUN_LOCK);
        /* Maybe /tmp: another user's FIFO, link or file there is not our lock (the shim has
         * said so already). */
        fd = ospc_open_shared(lock, O_RDONLY, 0, geteuid());
        if (fd < 0)
            return -1;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    /* Not blocking: held exclusively, osprey has found the run over already. */
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int ospd_session_run(const struct ospd_source_ops *ops, void *source)
{
    uv_loop_t *loop = uv_default_loop();
    int rc = ops->attach(source, loop);
    if (rc == 0) {
        uv_run(loop, UV_RUN_DEFAULT);
        ops->stop(source, OSPD_EXIT_STOPPED); /* nothing when it has ended */
        ospd_follow_stop();                   /* the images followed here, likewise */
        uv_run(loop, UV_RUN_DEFAULT);         /* the handles' closes */
        uv_loop_close(loop);
    }
    int code = ops->close(source);
    ospd_follow_close();
    return rc != 0 ? rc : code;
}
