/* test-session.c — the collector's session (daemon/ospd_session.h), what every source shares:
 * a source run through its four calls in order, the target's end told apart (killed, or its
 * exit code) from its pidfd, the raw file published at its path and then beside it, and the
 * run's lock taken shared only when it is there and free.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ospd_attach.h"
#include "ospd_ring_source.h"
#include "ospd_session.h"
#include "ospd_target.h"
#include "scratch.h"
#include "suite.h"

/* A source that records its calls and ends by itself on a timer. */
struct fake {
    char calls[64];
    int attach_rc;
    bool ended;
    enum ospd_exit_status stopped_with;
    uv_timer_t timer;
};

static void note(struct fake *f, char call)
{
    size_t n = strlen(f->calls);
    f->calls[n] = call;
    f->calls[n + 1] = '\0';
}

static void fake_end(uv_timer_t *t)
{
    struct fake *f = t->data;
    note(f, 'e');
    f->ended = true;
    uv_close((uv_handle_t *)t, NULL);
}

static int fake_attach(void *source, uv_loop_t *loop)
{
    struct fake *f = source;
    note(f, 'a');
    if (f->attach_rc != 0)
        return f->attach_rc;
    uv_timer_init(loop, &f->timer);
    f->timer.data = f;
    uv_timer_start(&f->timer, fake_end, 1, 0);
    return 0;
}

static bool fake_drain(void *source, bool all)
{
    (void)all;
    note(source, 'd');
    return ((struct fake *)source)->ended;
}

static void fake_stop(void *source, enum ospd_exit_status status)
{
    struct fake *f = source;
    note(f, 's');
    f->stopped_with = status;
}

static int fake_close(void *source)
{
    note(source, 'c');
    return 7;
}

static const struct ospd_source_ops fake_ops = {
    .name = "fake",
    .attach = fake_attach,
    .drain = fake_drain,
    .stop = fake_stop,
    .close = fake_close,
};

START_TEST(a_source_is_attached_run_stopped_and_closed)
{
    struct fake f = {.stopped_with = OSPD_EXIT_EXITED};
    ck_assert_int_eq(ospd_session_run(&fake_ops, &f), 7);
    ck_assert_str_eq(f.calls, "aesc"); /* the loop ran until the source ended */
    ck_assert_int_eq(f.stopped_with, OSPD_EXIT_STOPPED);
}
END_TEST

START_TEST(a_source_that_cannot_attach_is_closed_only)
{
    struct fake f = {.attach_rc = 3};
    ck_assert_int_eq(ospd_session_run(&fake_ops, &f), 3);
    ck_assert_str_eq(f.calls, "ac");
}
END_TEST

/* The watch on a child that ends by `how`: what the session says of its end. */
struct ended {
    struct ospd_watch watch;
    struct ospd_collector c;
    enum ospd_exit_status status;
};

static void on_end(uv_poll_t *poll, int status, int events)
{
    (void)status;
    (void)events;
    struct ended *e = poll->data;
    int wait_status;
    char state = ospd_target_state(e->watch.pid, &wait_status);
    e->status = ospd_watch_ended(&e->watch, state, wait_status, &e->c);
    ospd_watch_close(&e->watch);
}

static void watch_child(struct ended *e, int how)
{
    memset(e, 0, sizeof *e);
    e->c.exit_code = -1;
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        usleep(20000);
        if (how < 0)
            raise(-how);
        _exit(how);
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    ck_assert_int_eq(ospd_watch_start(&e->watch, &loop, child, on_end, e), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    ospd_watch_free(&e->watch);
    waitpid(child, NULL, 0);
}

START_TEST(the_targets_end_is_told_from_its_pidfd)
{
    struct ended e;
    watch_child(&e, -SIGKILL);
    ck_assert_int_eq(e.status, OSPD_EXIT_KILLED);
    ck_assert_int_eq(e.c.exit_signal, SIGKILL);
    watch_child(&e, 3);
    ck_assert_int_eq(e.status, OSPD_EXIT_VANISHED);
    ck_assert_int_eq(e.c.exit_code, 3);
    struct ospd_watch none;
    uv_loop_t loop;
    uv_loop_init(&loop);
    ck_assert_int_eq(ospd_watch_start(&none, &loop, 0x3ffffff0, on_end, NULL), -ESRCH);
    uv_loop_close(&loop);
}
END_TEST

static char dir[64];

static void make_dir(void)
{
    scratch_make(dir, sizeof dir, "session");
}

static void remove_dir(void)
{
    scratch_remove(dir);
}

START_TEST(the_raw_file_goes_to_its_path_then_beside_it)
{
    make_dir();
    char path[128], written[OSP_MAX_PATH + 64], err[256];
    snprintf(path, sizeof path, "%s/p.raw.json", dir);
    struct ospd_collector c;
    char platform[OSP_PLATFORM_SIZE] = "linux-x86_64";
    ospd_collector_init(&c);
    ospd_collector_identity(&c, 1234, 997, ospc_clock_ns(CLOCK_REALTIME),
                            ospc_clock_ns(CLOCK_MONOTONIC), platform);
    bool beside = true;
    struct ospc_atomic pending = {.fd = -1};
    ck_assert_int_eq(
        ospd_session_publish(&c, path, written, sizeof written, &beside, &pending, err, sizeof err),
        0);
    ospc_atomic_sync(&pending);
    ck_assert(!beside);
    ck_assert_str_eq(written, path);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    /* Written since this profile started: another process's, kept. */
    pending.fd = -1;
    ck_assert_int_eq(
        ospd_session_publish(&c, path, written, sizeof written, &beside, &pending, err, sizeof err),
        0);
    ospc_atomic_sync(&pending);
    ck_assert(beside);
    ck_assert_str_ne(written, path);
    ck_assert_int_eq(stat(written, &st), 0);
    ospd_collector_free(&c);
    remove_dir();
}
END_TEST

START_TEST(the_run_lock_is_held_shared_when_there_and_free)
{
    make_dir();
    char path[128], lock[128];
    snprintf(path, sizeof path, "%s/p.raw.json", dir);
    snprintf(lock, sizeof lock, "%s/%s", dir, OSP_RUN_LOCK);
    ck_assert_int_eq(ospd_session_run_lock(-1, path), -1); /* none: no lock */
    int mine = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ck_assert_int_ge(mine, 0);
    int fd = ospd_session_run_lock(-1, path);
    ck_assert_int_ge(fd, 0);
    int other = open(lock, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ne(flock(other, LOCK_EX | LOCK_NB), 0); /* held shared */
    close(fd);
    ck_assert_int_eq(flock(other, LOCK_EX | LOCK_NB), 0);
    ck_assert_int_eq(ospd_session_run_lock(-1, path), -1); /* the run is over */
    close(other);
    close(mine);
    remove_dir();
}
END_TEST

START_TEST(the_rings_behind_the_interface_refuse_a_missing_ring)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/p.raw.json", dir);
    struct ospd_ring_options o = {.ring_name = "/osprey-no-such-ring",
                                  .out_path = path,
                                  .unwind_fd = -1,
                                  .ring_fd = -1,
                                  .forks_fd = -1,
                                  .run_lock = -1};
    void *source = ospd_ring_source_new(&o);
    ck_assert_ptr_nonnull(source);
    ck_assert_int_eq(ospd_session_run(&ospd_ring_source, source), 1);
    ck_assert_int_ne(access(path, F_OK), 0); /* nothing written */
    remove_dir();
}
END_TEST

/* Perf events behind the interface, on a busy child for 0.3 s: the raw file says "stopped";
 * where perf events are refused, nothing is written. */
START_TEST(perf_events_behind_the_interface_profile_a_running_process)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/p.raw.json", dir);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        for (volatile unsigned long i = 0;; i++)
            ;
    }
    struct ospd_perf_options o = {.pid = child, .out = path, .duration = 0.3, .rate = 997};
    void *source = ospd_perf_collector_new(&o);
    ck_assert_ptr_nonnull(source);
    int rc = ospd_session_run(&ospd_perf_events, source);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    if (rc != 0) {
        ck_assert_int_ne(access(path, F_OK), 0);
    } else {
        char text[1 << 16] = "";
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
        ck_assert_ptr_nonnull(strstr(text, "\"stopped\""));
    }
    remove_dir();
}
END_TEST

Suite *session_suite(void)
{
    Suite *s = suite_create("session");
    SUITE_CASE(s, "run", 0, a_source_is_attached_run_stopped_and_closed,
               a_source_that_cannot_attach_is_closed_only);
    SUITE_CASE(s, "watch", 0, the_targets_end_is_told_from_its_pidfd);
    SUITE_CASE(s, "files", 0, the_raw_file_goes_to_its_path_then_beside_it,
               the_run_lock_is_held_shared_when_there_and_free);
    SUITE_CASE(s, "sources", 60, the_rings_behind_the_interface_refuse_a_missing_ring,
               perf_events_behind_the_interface_profile_a_running_process);
    return s;
}
