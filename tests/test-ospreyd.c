/* test-ospreyd.c — the ospreyd binary end to end (suite e2e: it starts processes, so it is kept
 * out of the valgrind and sanitizer runs of the unit suites): its command line, a ring made
 * exactly as the shim makes it in shared memory (collected to the exit record, a killed or
 * vanished target, a bad header, a corrupt or truncated ring, an exec, SIGTERM, inherited
 * descriptors), and a real program under the preload shim. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-fixture.h"
#include "osp_daemon_args.h"
#include "ospc.h"
#include "ospd.h"
#include "suite.h"

extern char **environ;

/* ------------------------------------------------------------------------------------------ */
/* The daemon binary, against a ring made exactly as the shim makes it, on the command line the
 * shim gives it. */

struct shm_ring {
    char name[64];
    struct osp_ring_header *header;
    struct osp_ring_cursor ring;
    size_t size;
    int fd; /* a memfd, as the shim's, kept open: a test may resize it */
};

static void shm_ring_create(struct shm_ring *s, uint64_t data_size)
{
    static unsigned counter;
    snprintf(s->name, sizeof s->name, "/osprey-test-%d-%u-%lx", (int)getpid(), counter++,
             (unsigned long)time(NULL));
    /* A memfd, as the shim's, above the descriptors ospreyd is handed (3 and up). */
    int anon = memfd_create(s->name + 1, MFD_CLOEXEC);
    ck_assert_int_ge(anon, 0);
    int fd = fcntl(anon, F_DUPFD_CLOEXEC, 64);
    ck_assert_int_ge(fd, 0);
    close(anon);
    s->size = OSP_RING_HEADER_SIZE + data_size;
    ck_assert_int_eq(ftruncate(fd, (off_t)s->size), 0);
    void *map = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(map, MAP_FAILED);
    s->fd = fd;
    s->header = map;
    s->ring =
        (struct osp_ring_cursor){.data = (uint8_t *)map + OSP_RING_HEADER_SIZE, .size = data_size};
}

/* Fill the header as the shim does before it starts ospreyd. */
static void shm_ring_init_header(struct shm_ring *s, pid_t pid)
{
    osp_ring_header_init(s->header, s->ring.size, pid, 997, ospc_clock_ns(CLOCK_REALTIME),
                         ospc_clock_ns(CLOCK_MONOTONIC), "linux-x86_64");
    atomic_store_explicit(&s->header->shim_state, OSP_SHIM_RUNNING, memory_order_release);
}

/* Start ospreyd with the shim's command line (proto/osp_daemon_args.h), the ring at 3. In
 * the background (`detach`), as the shim does: from a child that exits at once, the daemon
 * --detached; returns that child's exit status. Otherwise the daemon's own. */
static int spawn_daemon(const struct shm_ring *s, const char *out, bool detach)
{
    struct osp_daemon_fds fds = {.ring = 3, .forks = -1, .unwind = -1, .run_lock = -1};
    struct osp_daemon_args args;
    osp_daemon_args_build(&args, &fds, s->name, out, detach, NULL);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, s->fd, 3);
    pid_t pid = detach ? fork() : 0;
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pid_t daemon;
        int err = posix_spawn(&daemon, OSPREYD_PATH, &actions, NULL, args.argv, environ);
        if (detach)
            _exit(err == 0 ? 0 : 127);
        ck_assert_int_eq(err, 0);
        pid = daemon;
    }
    posix_spawn_file_actions_destroy(&actions);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* Wait (bounded, as a safety net only) until daemon_state leaves NONE/ATTACHED. */
static uint32_t wait_daemon_final(struct osp_ring_header *h)
{
    for (int i = 0; i < 6000; i++) {
        uint32_t st = atomic_load_explicit(&h->daemon_state, memory_order_acquire);
        if (st == OSP_DAEMON_DONE || st == OSP_DAEMON_FAILED)
            return st;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return atomic_load_explicit(&h->daemon_state, memory_order_acquire);
}

static void publish(struct shm_ring *s)
{
    osp_ring_store_head_release(s->header, s->ring.head); /* (B) */
}

/* Records a small two-thread program would post. */
static void post_program(struct shm_ring *s)
{
    uint64_t now = s->header->start_mono_ns;
    uint64_t busy[] = {0x401123, 0x401456, 0x401789};
    uint64_t wait[] = {0x7f0000001100, 0x401999};
    put_image(&s->ring, 0x400000, 0x401000, 0x1000, OSP_IMAGE_MAIN, "/usr/bin/prog");
    put_thread_start(&s->ring, 0, 1, 0, (int32_t)s->header->pid, "main");
    put_thread_start(&s->ring, 1, 1, 77, 77, "worker");
    publish(s);
    for (int i = 0; i < 100; i++) {
        osp_put_sample(&s->ring, now + 1000000u * (uint64_t)i, 1, 1, 0, 3, busy);
        if (i == 0)
            osp_put_sample(&s->ring, now + 1000000u * (uint64_t)i, 0, 1, 1, 2, wait);
        else
            osp_put_repeat(&s->ring, now + 1000000u * (uint64_t)i, 0, 1);
        publish(s);
    }
}

/* One end-to-end case: a temp directory, the output path in it, and a shared-memory ring
 * whose header says `pid` is the target. */
struct e2e {
    char *dir, *out;
    struct shm_ring s;
    int ready[2]; /* fork_producer's pipe between the test and its producer */
};

static void e2e_begin(struct e2e *e, const char *out_name, pid_t pid)
{
    e->dir = temp_dir();
    e->out = join(e->dir, out_name);
    shm_ring_create(&e->s, 65536);
    if (pid > 0)
        shm_ring_init_header(&e->s, pid);
}

static void e2e_end(struct e2e *e)
{
    close(e->s.fd);
    munmap(e->s.header, e->s.size);
    free(e->out);
    remove_dir(e->dir);
}

/* Post the exit record, then EXITED (release, after the exit record's head store, as the
 * shim does), and wait for the daemon's verdict. */
static uint32_t e2e_exit(struct e2e *e)
{
    osp_put_exit(&e->s.ring, UINT64_C(1800000000000000000), 4);
    publish(&e->s);
    atomic_store_explicit(&e->s.header->shim_state, OSP_SHIM_EXITED, memory_order_release);
    return wait_daemon_final(e->s.header);
}

/* Begin a case whose target is this process, start the daemon (the intermediate process
 * exits 0 at once) and post post_program's records. */
static void e2e_start(struct e2e *e, const char *out_name)
{
    e2e_begin(e, out_name, getpid());
    ck_assert_int_eq(spawn_daemon(&e->s, e->out, true), 0);
    post_program(&e->s);
}

/* e2e_start, then e2e_exit, whose verdict is `state`. */
static void e2e_start_to_end(struct e2e *e, const char *out_name, uint32_t state)
{
    e2e_start(e, out_name);
    ck_assert_uint_eq(e2e_exit(e), state);
}

/* Wait until the daemon has consumed everything published so far. */
static void wait_drained(struct e2e *e)
{
    while (osp_ring_load_tail_acquire(e->s.header) != e->s.ring.head) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* A descriptor the program let the daemon inherit (here a pipe's write end) is closed by the
 * daemon, so the pipe's reader sees end of file as soon as the program closes its own end. */
START_TEST(daemon_does_not_hold_inherited_descriptors)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0); /* not close-on-exec: inherited */
    struct e2e e;
    e2e_start(&e, "raw.json");
    wait_drained(&e); /* attached: what it inherited was closed before */
    close(fds[1]);
    ck_assert_int_eq(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    char byte;
    ck_assert_int_eq(read(fds[0], &byte, 1), 0); /* EOF, not EAGAIN: no writer is left */
    close(fds[0]);
    ck_assert_uint_eq(e2e_exit(&e), OSP_DAEMON_DONE);
    e2e_end(&e);
}
END_TEST

START_TEST(daemon_collects_until_the_exit_record)
{
    struct e2e e;
    e2e_start_to_end(&e, "raw.json", OSP_DAEMON_DONE);
    ck_assert_int_gt(atomic_load_explicit(&e.s.header->daemon_pid, memory_order_relaxed), 0);
    ck_assert_uint_eq(osp_ring_load_tail_acquire(e.s.header), e.s.ring.head);

    json_t *root = load_json(e.out);
    ck_assert_int_eq(int_at(root, "version"), 1);
    ck_assert_int_eq(int_at(root, "pid"), getpid());
    ck_assert_str_eq(json_string_value(json_object_get(root, "exe")), "/usr/bin/prog");
    ck_assert_int_eq(int_at(root, "end_unix_ns"), 1800000000000000000);
    ck_assert_int_eq(int_at(root, "dropped"), 4);
    ck_assert_uint_eq(json_array_size(json_object_get(root, "threads")), 2);
    ck_assert_uint_eq(json_array_size(json_object_get(root, "stacks")), 2);
    ck_assert_uint_eq(json_array_size(json_object_get(root, "samples")), 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "exit"), "status")),
                     "exited");
    json_decref(root);
    ck_assert_int_eq(count_entries(e.dir), 1);
    e2e_end(&e);
}
END_TEST

/* ospreyd told to spill every few samples (OSPREYD_SPILL_SAMPLES) writes the samples and
 * stacks it writes when it keeps them in memory, and leaves no file but the profile. */
START_TEST(daemon_spills_samples_and_writes_the_same_profile)
{
    json_t *roots[2];
    for (int spill = 0; spill < 2; spill++) {
        if (spill)
            setenv("OSPREYD_SPILL_SAMPLES", "3", 1);
        struct e2e e;
        e2e_start(&e, "raw.json");
        unsetenv("OSPREYD_SPILL_SAMPLES");
        ck_assert_uint_eq(e2e_exit(&e), OSP_DAEMON_DONE);
        roots[spill] = load_json(e.out);
        ck_assert_int_eq(count_entries(e.dir), 1);
        e2e_end(&e);
    }
    const char *keys[] = {"threads", "stacks", "samples", "dropped", "exit"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        ck_assert_msg(
            json_equal(json_object_get(roots[0], keys[i]), json_object_get(roots[1], keys[i])),
            "\"%s\" differs when the samples are spilled", keys[i]);
    ck_assert_uint_eq(json_array_size(json_object_get(roots[1], "samples")), 200);
    json_decref(roots[0]);
    json_decref(roots[1]);
}
END_TEST

/* A case begun (its daemon writing `out_name`) with a producer forked that, like a profiled
 * program, fills the header with its own pid, starts the daemon and posts post_program's
 * records; e->ready is a pipe between them. Returns the child's pid in the parent and 0 in the
 * child, which goes on with the caller's ending. */
static pid_t fork_producer(struct e2e *e, const char *out_name)
{
    e2e_begin(e, out_name, 0);
    ck_assert_int_eq(pipe(e->ready), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        shm_ring_init_header(&e->s, getpid());
        if (spawn_daemon(&e->s, e->out, true) != 0)
            _exit(3);
        post_program(&e->s);
    }
    return child;
}

START_TEST(daemon_writes_what_it_has_when_the_target_is_killed)
{
    struct e2e e;
    pid_t child = fork_producer(&e, "raw.json");
    if (child == 0) {
        /* killed before it can post an exit record */
        (void)!write(e.ready[1], "x", 1);
        for (;;)
            pause();
    }
    close(e.ready[1]);
    char byte;
    ck_assert_int_eq(read(e.ready[0], &byte, 1), 1);
    close(e.ready[0]);
    kill(child, SIGKILL);
    /* The child stays a zombie (not reaped) until the daemon is done. */
    ck_assert_uint_eq(wait_daemon_final(e.s.header), OSP_DAEMON_DONE);
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFSIGNALED(status));

    json_t *root = load_json(e.out);
    ck_assert_int_eq(int_at(root, "pid"), child);
    ck_assert_uint_eq(json_array_size(json_object_get(root, "samples")), 200);
    json_t *exit_obj = json_object_get(root, "exit");
    const char *st = json_string_value(json_object_get(exit_obj, "status"));
    ck_assert_msg(strcmp(st, "killed") == 0 || strcmp(st, "vanished") == 0, "status %s", st);
    if (strcmp(st, "killed") == 0)
        ck_assert_int_eq(int_at(exit_obj, "signal"), SIGKILL);
    ck_assert_int_gt(int_at(root, "end_unix_ns"), int_at(root, "start_unix_ns"));
    json_decref(root);
    e2e_end(&e);
}
END_TEST

START_TEST(daemon_rejects_a_bad_header_and_says_why)
{
    struct e2e e;
    e2e_begin(&e, "raw.json", getpid());
    e.s.header->abi_version = 9;
    int status = spawn_daemon(&e.s, e.out, false);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0);
    ck_assert_uint_eq(atomic_load_explicit(&e.s.header->daemon_state, memory_order_acquire),
                      OSP_DAEMON_FAILED);
    ck_assert_ptr_nonnull(strstr(e.s.header->daemon_error, "ABI version 9"));
    ck_assert_int_eq(count_entries(e.dir), 0);
    e2e_end(&e);
}
END_TEST

START_TEST(daemon_reports_an_unwritable_output)
{
    struct e2e e;
    e2e_start_to_end(&e, "missing/raw.json", OSP_DAEMON_FAILED);
    ck_assert_ptr_nonnull(strstr(e.s.header->daemon_error, e.out));
    ck_assert_ptr_nonnull(strstr(e.s.header->daemon_error, strerror(ENOENT)));
    e2e_end(&e);
}
END_TEST

/* The daemon rejected the ring, said why (mentioning `what`) and still wrote the 200 samples
 * post_program posted before the fault. */
static void expect_ring_rejected(struct e2e *e, const char *what)
{
    ck_assert_uint_eq(wait_daemon_final(e->s.header), OSP_DAEMON_FAILED);
    ck_assert_ptr_nonnull(strstr(e->s.header->daemon_error, what));
    json_t *root = load_json(e->out);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "exit"), "status")),
                     "ring-rejected");
    ck_assert_uint_eq(json_array_size(json_object_get(root, "samples")), 200);
    json_decref(root);
}

/* The ring damaged by `damage` once the daemon runs, then published: rejected as
 * expect_ring_rejected says, naming `what`. */
static void expect_damage_rejected(void (*damage)(struct e2e *), const char *what)
{
    struct e2e e;
    e2e_start(&e, "raw.json");
    damage(&e);
    publish(&e.s);
    expect_ring_rejected(&e, what);
    e2e_end(&e);
}

/* A sample whose depth is 0. */
static void write_a_sample_of_depth_zero(struct e2e *e)
{
    uint64_t bad[] = {1};
    osp_put_sample(&e->s.ring, 5, 0, 1, 0, 1, bad);
    uint8_t *at = e->s.ring.data + ((e->s.ring.head - 40) & (e->s.ring.size - 1));
    struct osp_rec_sample rec;
    memcpy(&rec, at, sizeof rec);
    rec.depth = 0;
    memcpy(at, &rec, sizeof rec);
}

START_TEST(daemon_rejects_a_corrupt_ring_but_keeps_what_it_had)
{
    expect_damage_rejected(write_a_sample_of_depth_zero, "depth 0");
}
END_TEST

/* The target shrinks the shared-memory object under the daemon's mapping: reading the lost
 * pages would be SIGBUS; the daemon rejects the ring instead and still writes what it had. */
/* A sample written once the daemon has drained the ring, then the object cut to its header. */
static void truncate_under_a_sample(struct e2e *e)
{
    wait_drained(e);
    uint64_t pcs[] = {0x401000};
    osp_put_sample(&e->s.ring, 5, 0, 1, 0, 1, pcs); /* written, then cut off */
    ck_assert_int_eq(ftruncate(e->s.fd, OSP_RING_HEADER_SIZE), 0);
}

START_TEST(daemon_survives_a_truncated_ring)
{
    expect_damage_rejected(truncate_under_a_sample, "truncated");
}
END_TEST

/* The target execs another program without an exit record: its heartbeat stops, the ring
 * leaves its memory map, and the daemon ends the profile as "vanished". */
START_TEST(daemon_notices_a_target_that_execs_away)
{
    struct e2e e;
    pid_t child = fork_producer(&e, "raw.json");
    if (child == 0) {
        dup2(e.ready[0], STDIN_FILENO);
        close(e.ready[1]);
        execl("/bin/sh", "sh", "-c", "read line", (char *)NULL); /* waits for the pipe */
        _exit(4);
    }
    close(e.ready[0]);
    ck_assert_uint_eq(wait_daemon_final(e.s.header), OSP_DAEMON_DONE);
    json_t *root = load_json(e.out);
    json_t *exit_obj = json_object_get(root, "exit");
    ck_assert_str_eq(json_string_value(json_object_get(exit_obj, "status")), "vanished");
    ck_assert_ptr_null(json_object_get(exit_obj, "code")); /* it did not exit: it is running */
    ck_assert_uint_eq(json_array_size(json_object_get(root, "samples")), 200);
    json_decref(root);
    ck_assert_int_eq(waitpid(child, NULL, WNOHANG), 0);
    close(e.ready[1]); /* the shell's read sees end of file and it exits */
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    e2e_end(&e);
}
END_TEST

/* The target is gone before the daemon even attaches (pidfd_open fails): the liveness check
 * notices, and the records it left are still written. */
START_TEST(daemon_handles_a_target_already_gone)
{
    pid_t gone = fork();
    ck_assert_int_ge(gone, 0);
    if (gone == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(gone, NULL, 0), gone);
    struct e2e e;
    e2e_begin(&e, "raw.json", gone);
    post_program(&e.s);
    ck_assert_int_eq(spawn_daemon(&e.s, e.out, true), 0);
    ck_assert_uint_eq(wait_daemon_final(e.s.header), OSP_DAEMON_DONE);
    json_t *root = load_json(e.out);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "exit"), "status")),
                     "vanished");
    ck_assert_int_eq(int_at(root, "pid"), gone);
    ck_assert_uint_eq(json_array_size(json_object_get(root, "samples")), 200);
    json_decref(root);
    e2e_end(&e);
}
END_TEST

/* Asked to stop (SIGTERM), the daemon writes what it has rather than losing it. */
START_TEST(daemon_writes_what_it_has_on_sigterm)
{
    struct e2e e;
    e2e_start(&e, "raw.json");
    wait_drained(&e);
    pid_t daemon = atomic_load_explicit(&e.s.header->daemon_pid, memory_order_relaxed);
    ck_assert_int_gt(daemon, 0);
    ck_assert_int_eq(kill(daemon, SIGTERM), 0);
    ck_assert_uint_eq(wait_daemon_final(e.s.header), OSP_DAEMON_DONE);
    json_t *root = load_json(e.out);
    ck_assert_uint_eq(json_array_size(json_object_get(root, "samples")), 200);
    json_decref(root);
    e2e_end(&e);
}
END_TEST

/* Run ospreyd with arguments; returns its exit status and its first output line. */
static int run_daemon(char *const argv[], char *line, size_t line_size)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, OSPREYD_PATH, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    line[0] = '\0';
    if (fgets(line, (int)line_size, f) == NULL)
        line[0] = '\0';
    while (fgetc(f) != EOF) {
    }
    fclose(f);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* ospreyd run with the arguments `argv` ends `rc` and its first line holds `needle`. */
static void daemon_says(int rc, const char *needle, char *const argv[])
{
    char line[512];
    ck_assert_int_eq(run_daemon(argv, line, sizeof line), rc);
    ck_assert_msg(strstr(line, needle) != NULL, "no \"%s\" in: %s", needle, line);
}
/* DAEMON_SAYS(rc, needle, argument...): daemon_says of ospreyd with the arguments listed. */
#define DAEMON_SAYS(rc, needle, ...)                                                               \
    daemon_says((rc), (needle), (char *[]){OSPREYD_PATH, __VA_ARGS__, NULL})

START_TEST(command_line)
{
    DAEMON_SAYS(0, "ospreyd ", "--version");
    DAEMON_SAYS(0, "usage: ospreyd", "--help");
    daemon_says(2, "required", (char *[]){OSPREYD_PATH, NULL});
    DAEMON_SAYS(2, "--frobnicate", "--frobnicate");
    DAEMON_SAYS(2, "--out", "--out");
    DAEMON_SAYS(2, "stray", "--ring-fd", "3", "--ring-name", "/x", "--out", "/tmp/x", "stray");
    DAEMON_SAYS(2, "--ring-name", "--ring-fd", "3", "--out", "/tmp/x");
    DAEMON_SAYS(2, "--switch-fd 4x: not a descriptor number", "--ring-fd", "3", "--ring-name", "/x",
                "--out", "/tmp/x", "--switch-fd", "4x");
    /* A descriptor that is not open: one line naming the ring. */
    DAEMON_SAYS(1, "/osprey-no-such-ring", "--ring-fd", "999", "--ring-name",
                "/osprey-no-such-ring", "--out", "/tmp/x");
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* A real program under the preload shim: a busy worker thread and a main thread waiting for
 * it (examples/hotspot). */

/* Run hotspot with extra environment entries; returns its exit status, its output in out. */
static int run_hotspot(char *const extra_env[], char *out, size_t out_size)
{
    size_t n = 0, extra = 0;
    while (environ[n] != NULL)
        n++;
    while (extra_env[extra] != NULL)
        extra++;
    char **env = calloc(n + extra + 1, sizeof *env);
    ck_assert_ptr_nonnull(env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "OSPREY_", 7) != 0 && strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            env[k++] = environ[i];
    for (size_t i = 0; i < extra; i++)
        env[k++] = extra_env[i];
    env[k] = NULL;

    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    char *argv[] = {OSPREY_BUILD_ROOT "/examples/hotspot", "4000", NULL};
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, argv[0], &fa, NULL, argv, env), 0);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    close(fds[1]);
    size_t len = 0;
    for (ssize_t got;
         len + 1 < out_size && (got = read(fds[0], out + len, out_size - 1 - len)) > 0;)
        len += (size_t)got;
    out[len] = '\0';
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* Whether pc lies in the executable span of one of the images. */
static bool pc_in_images(json_t *images, json_int_t pc)
{
    size_t i;
    json_t *im;
    json_array_foreach(images, i, im)
    {
        json_int_t text = int_at(im, "text"), size = int_at(im, "text_size");
        if (pc >= text && pc < text + size)
            return true;
    }
    return false;
}

START_TEST(real_program_under_the_preload_shim)
{
    char plain[256], profiled[256];
    char *no_env[] = {NULL};
    int status = run_hotspot(no_env, plain, sizeof plain);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    char *dir = temp_dir();
    char *out = join(dir, "hotspot.json");
    char profile_env[4200];
    snprintf(profile_env, sizeof profile_env, "OSPREY_PROFILE=%s", out);
    char *env[] = {profile_env, "LD_PRELOAD=" OSPREY_BUILD_ROOT "/shim/libospreyprof.so",
                   "OSPREY_DAEMON=" OSPREYD_PATH, NULL};
    status = run_hotspot(env, profiled, sizeof profiled);
    /* The program is untouched: same exit status, same output. */
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_str_eq(profiled, plain);

    json_t *root = load_json(out);
    ck_assert_int_eq(int_at(root, "version"), 1);
    const char *exe = json_string_value(json_object_get(root, "exe"));
    ck_assert_ptr_nonnull(exe);
    ck_assert_ptr_nonnull(strstr(exe, "/examples/hotspot"));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "exit"), "status")),
                     "exited");
    ck_assert_int_ge(int_at(root, "end_unix_ns"), int_at(root, "start_unix_ns"));
    json_t *images = json_object_get(root, "images");
    json_t *threads = json_object_get(root, "threads");
    json_t *stacks = json_object_get(root, "stacks");
    json_t *samples = json_object_get(root, "samples");
    ck_assert_uint_ge(json_array_size(images), 2);
    ck_assert_uint_ge(json_array_size(threads), 2);
    ck_assert_uint_gt(json_array_size(samples), 10);

    /* Every leaf pc is inside an image's executable span. */
    size_t i;
    json_t *stack;
    json_array_foreach(stacks, i, stack)
    {
        ck_assert_uint_ge(json_array_size(stack), 1);
        json_int_t leaf = json_integer_value(json_array_get(stack, 0));
        ck_assert_msg(pc_in_images(images, leaf), "leaf pc 0x%llx of stack %zu is in no image",
                      (long long)leaf, i);
    }
    /* Both states are present, samples name valid threads and stacks, time moves forward. */
    size_t states[2] = {0, 0};
    json_t *sample;
    json_array_foreach(samples, i, sample)
    {
        /* [t, thread, stack, state] or, standing for several periods, [..., weight]. */
        ck_assert(json_array_size(sample) == 4 || json_array_size(sample) == 5);
        if (json_array_size(sample) == 5)
            ck_assert_int_ge(json_integer_value(json_array_get(sample, 4)), 2);
        ck_assert_int_ge(json_integer_value(json_array_get(sample, 0)), 0);
        ck_assert_int_lt(json_integer_value(json_array_get(sample, 1)),
                         (json_int_t)json_array_size(threads));
        ck_assert_int_lt(json_integer_value(json_array_get(sample, 2)),
                         (json_int_t)json_array_size(stacks));
        json_int_t state = json_integer_value(json_array_get(sample, 3));
        ck_assert(state == 0 || state == 1);
        states[state]++;
    }
    ck_assert_uint_gt(states[0], 0);
    ck_assert_uint_gt(states[1], 0);
    json_decref(root);
    free(out);
    remove_dir(dir);
}
END_TEST

Suite *ospreyd_suite(void)
{
    Suite *s = suite_create("ospreyd");
    SUITE_CASE(s, "binary", 120, command_line, daemon_collects_until_the_exit_record,
               daemon_spills_samples_and_writes_the_same_profile,
               daemon_writes_what_it_has_when_the_target_is_killed,
               daemon_rejects_a_bad_header_and_says_why, daemon_reports_an_unwritable_output,
               daemon_rejects_a_corrupt_ring_but_keeps_what_it_had,
               daemon_survives_a_truncated_ring, daemon_notices_a_target_that_execs_away,
               daemon_handles_a_target_already_gone, daemon_does_not_hold_inherited_descriptors,
               daemon_writes_what_it_has_on_sigterm);
    SUITE_CASE(s, "real", 120, real_program_under_the_preload_shim);
    return s;
}
