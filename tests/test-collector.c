/* test-collector.c — the shim and its collector in real processes: test-shim-target run plain,
 * under the preloaded libospreyprof.so, and as a static-archive build, with test-shim-consumer
 * standing in for ospreyd. Asserts what a user relies on: the program's output and exit status do
 * not change, sleeps are not cut short, threads come and go safely, off means off, a program's own
 * SIGPROF handler is kept, and the ring carries well-formed records for every thread. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

extern char **environ;

static char dir[PATH_MAX]; /* build/tests */
static char so[PATH_MAX];  /* build/shim/libospreyprof.so */
static char scratch[PATH_MAX];

static void find_paths(void)
{
    ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    ck_assert_int_gt(n, 0);
    dir[n] = '\0';
    *strrchr(dir, '/') = '\0';
    ck_assert_int_lt(snprintf(so, sizeof(so), "%s/../shim/libospreyprof.so", dir), (int)sizeof(so));
    ck_assert_int_eq(access(so, R_OK), 0);
    snprintf(scratch, sizeof(scratch), "/tmp/osprey-shim-e2e-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(scratch));
}

/* A daemon of an image that exec'd away finishes on its own time (it notices within a second)
 * and may still be writing its profile into the scratch directory: rm -rf then fails on a
 * directory that is not empty yet. Retried for up to 10 s, so a test never fails by that. */
static void remove_scratch(void)
{
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' 2>/dev/null", scratch);
    int rc = -1;
    for (int attempt = 0; attempt < 100 && rc != 0; attempt++) {
        rc = system(cmd);
        if (rc != 0) {
            struct timespec wait = {0, 100000000};
            nanosleep(&wait, NULL);
        }
    }
    ck_assert_int_eq(rc, 0);
}

struct run {
    char out[1 << 16];
    char err[1 << 16];
    int status;     /* exit status, or 128 + signal */
    double seconds; /* wall time, start to exit */
};

/* Run build/tests/<program> with argv, in the test's environment minus LD_PRELOAD and
 * OSPREY_*, plus `extra` (NULL-terminated "NAME=value" list). Kills it after 120 s. */
/* The working directory of the next run (NULL: the test's own); reset by every run. */
static const char *run_cwd;

static void run(struct run *r, const char *program, const char *const *args,
                const char *const *extra)
{
    char path[PATH_MAX];
    ck_assert_int_lt(snprintf(path, sizeof(path), "%s/%s", dir, program), (int)sizeof(path));
    char *argv[16];
    int argc = 0;
    argv[argc++] = (char *)program;
    for (; args[argc - 1] && argc < 15; argc++)
        argv[argc] = (char *)args[argc - 1];
    argv[argc] = NULL;
    char *envp[512];
    int envc = 0;
    for (char **e = environ; *e && envc < 480; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "OSPREY_", 7) != 0 &&
            strncmp(*e, "TARGET_", 7) != 0)
            envp[envc++] = *e;
    for (; extra && *extra; extra++)
        envp[envc++] = (char *)*extra;
    envp[envc] = NULL;

    int out[2], err[2];
    ck_assert_int_eq(pipe(out), 0);
    ck_assert_int_eq(pipe(err), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addclose(&fa, err[0]);
    if (run_cwd)
        posix_spawn_file_actions_addchdir_np(&fa, run_cwd);
    run_cwd = NULL;
    pid_t pid;
    struct timespec began, ended;
    clock_gettime(CLOCK_MONOTONIC, &began);
    ck_assert_int_eq(posix_spawn(&pid, path, &fa, NULL, argv, envp), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    close(err[1]);
    size_t nout = 0, nerr = 0;
    struct pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    time_t start = time(NULL);
    int open_fds = 2;
    while (open_fds > 0) {
        if (time(NULL) - start > 120) {
            kill(pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, 1000) <= 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP)))
                continue;
            char *buf = i == 0 ? r->out : r->err;
            size_t *n = i == 0 ? &nout : &nerr;
            ssize_t got = read(fds[i].fd, buf + *n, sizeof(r->out) - 1 - *n);
            if (got <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            } else {
                *n += (size_t)got;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    r->out[nout] = '\0';
    r->err[nerr] = '\0';
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    clock_gettime(CLOCK_MONOTONIC, &ended);
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->seconds = (double)(ended.tv_sec - began.tv_sec) + (ended.tv_nsec - began.tv_nsec) / 1e9;
}

static char env_preload[PATH_MAX + 16], env_profile[PATH_MAX + 32], env_daemon[PATH_MAX + 32];

/* The environment of a profiled run: preload, profile path (in scratch), consumer, rate. */
static const char **profiled_env(const char *profile_name, const char *hz, int daemon)
{
    static const char *env[8];
    static char env_hz[32];
    int n = 0;
    snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", so);
    snprintf(env_profile, sizeof(env_profile), "OSPREY_PROFILE=%s/%s", scratch, profile_name);
    if (daemon)
        ck_assert_int_lt(
            snprintf(env_daemon, sizeof(env_daemon), "OSPREY_DAEMON=%s/test-shim-consumer", dir),
            (int)sizeof(env_daemon));
    else
        snprintf(env_daemon, sizeof(env_daemon), "OSPREY_DAEMON=/nonexistent");
    env[n++] = env_preload;
    env[n++] = env_profile;
    env[n++] = env_daemon;
    if (hz) {
        snprintf(env_hz, sizeof(env_hz), "OSPREY_PROFILE_HZ=%s", hz);
        env[n++] = env_hz;
    }
    env[n] = NULL;
    return env;
}

/* env with `entry` ("NAME=value") in place of the NAME= entry, or added. Static storage. */
static const char **with_env(const char **env, const char *entry)
{
    static const char *out[12];
    size_t name_len = strchr(entry, '=') - entry + 1;
    int n = 0, replaced = 0;
    for (; env[n] && n < 10; n++) {
        int same = strncmp(env[n], entry, name_len) == 0;
        out[n] = same ? entry : env[n];
        replaced |= same;
    }
    if (!replaced)
        out[n++] = entry;
    out[n] = NULL;
    return out;
}

/* The consumer's summary of a run. */
static char summary[1 << 20];

static void read_summary(const char *name)
{
    char path[PATH_MAX];
    ck_assert_int_lt(snprintf(path, sizeof(path), "%s/%s", scratch, name), (int)sizeof(path));
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no profile summary at %s", path);
    size_t n = fread(summary, 1, sizeof(summary) - 1, f);
    summary[n] = '\0';
    fclose(f);
}

/* A descendant's collector writes its profile once it has read the ring to the end, which may
 * be after the descendant (and the test's parent) ended: wait for it, bounded. */
static void read_summary_when_written(const char *name)
{
    char path[PATH_MAX];
    ck_assert_int_lt(snprintf(path, sizeof(path), "%s/%s", scratch, name), (int)sizeof(path));
    for (int i = 0; i < 1000 && access(path, F_OK) != 0; i++)
        usleep(10000);
    read_summary(name);
}

static long long summary_value(const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "\n%s ", key);
    char *at = strstr(summary, pattern);
    if (at == NULL && strncmp(summary, pattern + 1, strlen(pattern) - 1) == 0)
        at = summary - 1;
    ck_assert_msg(at != NULL, "summary has no %s", key);
    return atoll(at + strlen(pattern));
}

struct thread_line {
    long long fiber;
    char label[80];
    long long samples, waiting, repeats;
};

/* The n-th "thread" line with this label, or 0. */
static int summary_thread(const char *label, int nth, struct thread_line *t)
{
    const char *p = summary;
    while ((p = strstr(p, "\nthread ")) != NULL) {
        p++;
        unsigned slot, gen;
        unsigned long long first, last;
        if (sscanf(p, "thread %u %u %lld %79s %lld %lld %lld %llu %llu", &slot, &gen, &t->fiber,
                   t->label, &t->samples, &t->waiting, &t->repeats, &first, &last) == 9 &&
            strcmp(t->label, label) == 0 && nth-- == 0)
            return 1;
    }
    return 0;
}

static void assert_well_formed(void)
{
    ck_assert_int_eq(summary_value("errors"), 0);
    ck_assert_int_eq(summary_value("unknown_samples"), 0);
    /* A process registers its main thread at least; it need not have been sampled (a program
     * shorter than a period gets a sample only with the probability its CPU time says). */
    ck_assert_int_ge(summary_value("thread_starts"), 1);
    ck_assert_int_eq(summary_value("exit_records"), 1);
    ck_assert_int_eq(summary_value("main_images"), 1);
    ck_assert_int_ge(summary_value("images"), 3);
}

static int entries(const char *dirpath, const char *prefix)
{
    DIR *d = opendir(dirpath);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

START_TEST(preload_keeps_stdout_and_exit_status)
{
    static struct run plain, profiled;
    const char *args[] = {"print", "3", NULL};
    run(&plain, "test-shim-target", args, NULL);
    ck_assert_int_eq(plain.status, 3);
    ck_assert_str_eq(plain.err, "");
    run(&profiled, "test-shim-target", args, profiled_env("p.txt", NULL, 0));
    ck_assert_str_eq(profiled.out, plain.out);
    ck_assert_int_eq(profiled.status, 3);
    /* No daemon: the only difference is one warning line. */
    ck_assert_int_eq(count_lines(profiled.err), 1);
    ck_assert_msg(strncmp(profiled.err, "osprey: ", 8) == 0, "stderr: %s", profiled.err);
}
END_TEST

START_TEST(profile_records_every_thread)
{
    static struct run r;
    const char *args[] = {"print", "0", NULL};
    run(&r, "test-shim-target", args, profiled_env("p.txt", NULL, 1));
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    read_summary("p.txt");
    assert_well_formed();
    ck_assert_int_eq(summary_value("rate_hz"), 997);
    ck_assert_int_eq(summary_value("thread_starts"), 2);
    ck_assert_int_eq(summary_value("thread_ends"), 1);
    ck_assert_int_ge(summary_value("max_depth"), 3); /* frame-pointer walks got past frame 0 */
    struct thread_line t;
    ck_assert(summary_thread("main", 0, &t));
    ck_assert_int_eq(t.fiber, 0);
    ck_assert_int_gt(t.samples, 0);
    ck_assert(summary_thread("thread", 0, &t));
    ck_assert_int_gt(t.fiber, 0); /* its kernel tid */
    ck_assert_int_gt(t.samples, 0);
    /* The main image is the program itself, by its real path. */
    char self[PATH_MAX], want[PATH_MAX + 16];
    ck_assert_int_lt(snprintf(self, sizeof(self), "%s/test-shim-target", dir), (int)sizeof(self));
    ck_assert_ptr_nonnull(realpath(self, want + 11));
    memcpy(want, "main_image ", 11);
    ck_assert_msg(strstr(summary, want) != NULL, "%s", summary);
    /* The consumer unlinked the shared-memory name; nothing is left behind. */
    char shm[64];
    snprintf(shm, sizeof(shm), "osprey-%lld-", summary_value("pid"));
    ck_assert_int_eq(entries("/dev/shm", shm), 0);
}
END_TEST

START_TEST(sleeping_thread_is_not_woken_early)
{
    static struct run r;
    /* Each wait follows a busy spell, so a signal sent while the thread ran is often still
     * in flight when it starts to sleep: the guard (guard.c) must hold it back. */
    const char *short_args[] = {"sleep", "20", NULL};
    for (int i = 0; i < 10; i++) {
        run(&r, "test-shim-target", short_args, profiled_env("s.txt", "10000", 1));
        ck_assert_str_eq(r.out, "slept the whole time\n");
    }
    const char *args[] = {"sleep", "300", NULL};
    run(&r, "test-shim-target", args, profiled_env("s.txt", "10000", 1));
    ck_assert_str_eq(r.out, "slept the whole time\n");
    ck_assert_int_eq(r.status, 0);
    read_summary("s.txt");
    assert_well_formed();
    struct thread_line t;
    ck_assert(summary_thread("main", 0, &t));
    ck_assert_int_gt(summary_value("deep_waiting"), 0); /* its sleeping stack was captured ... */
    /* ... once per wait, weighted by the wait's length: three sleeps of 300 ms at 10 kHz. */
    ck_assert_int_ge(t.waiting, 3 * 3000 * 9 / 10);
    ck_assert_int_le(t.waiting, 3 * 3000 * 12 / 10);
    ck_assert_int_eq(t.repeats, 0);
}
END_TEST

START_TEST(thread_churn_at_10khz_completes)
{
    static struct run plain, profiled;
    const char *args[] = {"churn", "400", NULL};
    run(&plain, "test-shim-target", args, NULL);
    run(&profiled, "test-shim-target", args, profiled_env("c.txt", "10000", 1));
    ck_assert_int_eq(profiled.status, 0);
    ck_assert_str_eq(profiled.out, plain.out);
    read_summary("c.txt");
    assert_well_formed();
    ck_assert_int_eq(summary_value("thread_starts"), 401);
    ck_assert_int_eq(summary_value("thread_ends"), 400);
}
END_TEST

START_TEST(off_means_off)
{
    static struct run r;
    const char *args[] = {"tasks", NULL};
    char preload[PATH_MAX + 16];
    snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", so);
    const char *env[] = {preload, NULL};
    run(&r, "test-shim-target", args, env);
    ck_assert_str_eq(r.out, "tasks 1 shm 0 ring 0 sigprof-default 1\n");
    ck_assert_str_eq(r.err, "");
    run(&r, "test-shim-target-static", args, NULL);
    ck_assert_str_eq(r.out, "tasks 1 shm 0 ring 0 sigprof-default 1\n");
    /* When it is on, the probe sees the shared memory (the ring, a memfd: nothing in /dev/shm),
     * and still no thread of ours: each thread samples itself with its own timers (the program's
     * view of SIGPROF is kept). */
    run(&r, "test-shim-target", args, profiled_env("o.txt", NULL, 0));
    ck_assert_str_eq(r.out, "tasks 1 shm 0 ring 1 sigprof-default 1\n");
}
END_TEST

/* err without its line about sampling periods lost to full rings, which a machine loaded
 * enough to starve the consumer may add to any run (not what the caller tests). */
static const char *without_drop_line(char *err)
{
    char *drop = strstr(err, " sampling periods could not be recorded (");
    if (drop != NULL) {
        char *start = drop;
        while (start > err && start[-1] != '\n')
            start--;
        char *end = strchr(drop, '\n');
        memmove(start, end != NULL ? end + 1 : drop + strlen(drop),
                strlen(end != NULL ? end + 1 : drop + strlen(drop)) + 1);
    }
    return err;
}

START_TEST(program_sigprof_handler_is_kept)
{
    static struct run plain, r;
    const char *args[] = {"sigprof", NULL};
    /* Installed after the shim started (in main): the program sees its own handler and gets
     * its own signals, none of ours, none merged with ours; it was profiled until it sent
     * SIGPROF itself. */
    for (int i = 0; i < 5; i++) {
        run(&r, "test-shim-target", args, profiled_env("h.txt", "10000", 1));
        ck_assert_str_eq(r.out, "handler kept 1, own signals seen 2\n");
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(without_drop_line(r.err),
                         "osprey: the program uses SIGPROF itself; sampling stopped\n");
    }
    read_summary("h.txt");
    assert_well_formed();
    ck_assert_int_gt(summary_value("samples"), 10);

    /* Its own profiling timer keeps working beside ours. */
    const char *itimer[] = {"itimer", NULL};
    run(&r, "test-shim-target", itimer, profiled_env("i.txt", "10000", 1));
    ck_assert_str_eq(r.out, "timer signals arrived: yes\n");
    ck_assert_int_eq(r.status, 0);

    /* Without a handler, a SIGPROF that is not ours still has its default action. */
    const char *killed[] = {"killed", NULL};
    run(&plain, "test-shim-target", killed, NULL);
    run(&r, "test-shim-target", killed, profiled_env("k.txt", NULL, 1));
    ck_assert_int_eq(plain.status, 128 + SIGPROF);
    ck_assert_int_eq(r.status, plain.status);
    ck_assert_str_eq(r.out, plain.out);

    /* Installed before the shim boots: the shim stays off. */
    const char **env = with_env(profiled_env("h2.txt", NULL, 1), "TARGET_SIGPROF_EARLY=1");
    run(&r, "test-shim-target-static", args, env + 1); /* no LD_PRELOAD */
    ck_assert_str_eq(r.out, "handler kept 1, own signals seen 2\n");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err,
                     "osprey: the program already has a SIGPROF handler; profiling is off\n");
}
END_TEST

START_TEST(static_archive_profiles_like_the_preload)
{
    static struct run r;
    const char *args[] = {"print", "4", NULL};
    const char **env = profiled_env("a.txt", NULL, 1);
    run(&r, "test-shim-target-static", args, env + 1); /* no LD_PRELOAD */
    ck_assert_int_eq(r.status, 4);
    read_summary("a.txt");
    assert_well_formed();
    ck_assert_int_eq(summary_value("thread_starts"), 2);
}
END_TEST

START_TEST(descendants_write_beside_and_a_forked_child_leaves_the_parent_alone)
{
    static struct run r;
    const char *args[] = {"spawn", NULL};
    run(&r, "test-shim-target", args, profiled_env("d.txt", NULL, 1));
    ck_assert_int_eq(r.status, 0);
    int child = 0;
    ck_assert_ptr_nonnull(strstr(r.out, "child "));
    sscanf(strstr(r.out, "child "), "child %d", &child);
    char name[64];
    snprintf(name, sizeof(name), "d.%d.txt", child);
    read_summary_when_written(name); /* the exec'd child's own profile */
    assert_well_formed();
    read_summary("d.txt"); /* the parent's, not overwritten */
    assert_well_formed();
    ck_assert_int_eq(summary_value("pid") != child, 1);

    const char *fork_args[] = {"fork", NULL};
    run(&r, "test-shim-target", fork_args, profiled_env("f.txt", NULL, 1));
    ck_assert_str_eq(r.out, "forked child status 7\n");
    ck_assert_str_eq(r.err, "");
    read_summary("f.txt");
    assert_well_formed();
    ck_assert_int_eq(summary_value("thread_starts"), 1);
}
END_TEST

START_TEST(thread_named_after_start_is_relabelled)
{
    static struct run r;
    const char *args[] = {"named", NULL};
    run(&r, "test-shim-target", args, profiled_env("n.txt", NULL, 1));
    ck_assert_int_eq(r.status, 0);
    read_summary("n.txt");
    assert_well_formed();
    struct thread_line t;
    ck_assert(summary_thread("cruncher", 0, &t));
    ck_assert_int_gt(t.samples, 0);
    ck_assert_int_gt(t.fiber, 0);
}
END_TEST

START_TEST(objects_loaded_later_reach_the_image_list)
{
    static struct run r;
    const char *args[] = {"dlopen", NULL};
    run(&r, "test-shim-target", args, profiled_env("l.txt", NULL, 1));
    ck_assert_str_eq(r.out, "plugin unloaded\n");
    ck_assert_int_eq(r.status, 0);
    read_summary("l.txt");
    assert_well_formed();
    /* Loaded and unloaded again before exit: seen when it was unloaded (dlclose). */
    ck_assert_msg(strstr(summary, "/test-shim-plugin.so\n") != NULL, "%s", summary);
}
END_TEST

/* The profiles in scratch whose names start with prefix. */
static int profiles(const char *prefix)
{
    return entries(scratch, prefix);
}

START_TEST(exec_replacing_a_profiled_image_survives_and_writes_beside)
{
    static struct run plain, r;
    const char *args[] = {"exec", NULL};
    run(&plain, "test-shim-target", args, NULL);
    /* At 10 kHz a signal of ours is likely pending when execv runs; it must not kill the new
     * image (whose SIGPROF is the default again). */
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof(name), "e%d.txt", i);
        run(&r, "test-shim-target", args, profiled_env(name, "10000", 1));
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.out, plain.out);
        /* Taking back our pending signals before execve is not the program waiting for
         * SIGPROF: no "uses SIGPROF itself" line, sampling goes on if the exec fails. */
        ck_assert_str_eq(r.err, "");
        /* The consumer takes no greeting (it never accepts on the fork socket it was
         * handed): the second image, left without an answer, starts a consumer of its own
         * after a short wait, and does not wait the exit's 5 s for a profile that would
         * never come (a margin of seconds: what is checked is the fallback, not a speed). */
        ck_assert_msg(r.seconds < 4.0, "exec run %d took %.2f s", i, r.seconds);
    }
    /* Same pid, two images: the second writes e<i>.<pid>-<random>.txt, never over e<i>.txt.
     * The first image's profile is finished by its consumer once it sees the heartbeat stop,
     * after the program is gone: wait (bounded) for it. */
    for (int i = 0; i < 5; i++) {
        char first[16], second[16];
        snprintf(first, sizeof(first), "e%d.txt", i);
        snprintf(second, sizeof(second), "e%d.", i);
        for (int waited = 0; waited < 100 && profiles(first) == 0; waited++)
            usleep(100000);
        ck_assert_int_eq(profiles(first), 1);
        ck_assert_int_eq(profiles(second), 2);
    }
    read_summary("e0.txt");
    ck_assert_int_gt(summary_value("samples"), 0);
}
END_TEST

START_TEST(relative_profile_path_is_resolved_at_start)
{
    static struct run r;
    const char *args[] = {"chdir", NULL};
    run_cwd = scratch;
    run(&r, "test-shim-target", args,
        with_env(profiled_env("unused", NULL, 1), "OSPREY_PROFILE=rel.txt"));
    ck_assert_str_eq(r.out, "moved\n");
    read_summary("rel.txt"); /* in the starting directory, not in / */
    assert_well_formed();
}
END_TEST

START_TEST(daemon_failure_or_absence_is_one_line_and_never_a_hang)
{
    static struct run plain, r;
    const char *args[] = {"print", "5", NULL};
    run(&plain, "test-shim-target", args, NULL);
    /* ospreyd reports FAILED: its message, prefixed. */
    run(&r, "test-shim-target", args,
        with_env(profiled_env("f.txt", NULL, 1), "SHIM_CONSUMER_FAIL=1"));
    ck_assert_int_eq(r.status, 5);
    ck_assert_str_eq(r.out, plain.out);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof(want), "osprey: cannot write %s/f.txt\n", scratch);
    ck_assert_str_eq(r.err, want);
    /* A "daemon" alive but never attaching (for 8 s, longer than daemon_wait_ms): the program
     * waits at most daemon_wait_ms, says so in one line and exits as it would have. */
    run(&r, "test-shim-target", args,
        with_env(profiled_env("g.txt", NULL, 1), "SHIM_CONSUMER_LATE=8000"));
    ck_assert_int_eq(r.status, 5);
    ck_assert_str_eq(r.out, plain.out);
    ck_assert_int_eq(count_lines(r.err), 1);
    ck_assert_msg(strstr(r.err, "osprey: ospreyd did not finish writing ") == r.err, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "/g.txt within "));
    ck_assert_ptr_nonnull(strstr(r.err, "; the profile may be missing\n"));
    /* One that ended before attaching (crashed at its start, killed): said as soon as it is
     * seen, not after the whole wait (before: "did not finish writing ... within 5 s"). */
    run(&r, "test-shim-target", args,
        with_env(profiled_env("h.txt", NULL, 1), "OSPREY_DAEMON=/bin/false"));
    ck_assert_int_eq(r.status, 5);
    ck_assert_str_eq(r.out, plain.out);
    snprintf(want, sizeof(want),
             "osprey: ospreyd ended before it attached; no profile was written to %s/h.txt\n",
             scratch);
    ck_assert_str_eq(r.err, want);
}
END_TEST

START_TEST(thread_that_blocks_sigprof_never_finds_ours_pending)
{
    static struct run r;
    const char *args[] = {"masked", NULL};
    for (int i = 0; i < 3; i++) {
        run(&r, "test-shim-target", args, profiled_env("m.txt", "10000", 1));
        ck_assert_str_eq(r.out, "SIGPROF pending in a thread that blocks it: no\n");
        ck_assert_int_eq(r.status, 0);
    }
}
END_TEST

/* A worker that starts with every signal blocked (xz's do) is sampled as perf samples it,
 * while the program still sees the masks it set and its sigtimedwait takes none of ours. */
START_TEST(thread_that_blocks_every_signal_is_sampled)
{
    static struct run plain, r;
    const char *args[] = {"allblocked", NULL};
    run(&plain, "test-shim-target", args, NULL);
    ck_assert_str_eq(plain.out, "worker: SIGPROF blocked yes, signals taken 0\n"
                                "main: SIGPROF blocked yes\nmain restored: SIGPROF blocked no\n");
    const char *rates[] = {"997", "10000"};
    for (int i = 0; i < 2; i++) {
        run(&r, "test-shim-target", args, profiled_env("a.txt", rates[i], 1));
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.out, plain.out);
        read_summary("a.txt");
        assert_well_formed();
        struct thread_line t;
        ck_assert(summary_thread("thread", 0, &t));
        /* 300 ms of its CPU time: about 300 periods at 997 Hz (3000 at 10 kHz). */
        ck_assert_msg(t.samples >= (i == 0 ? 150 : 1500), "the worker has %lld samples at %s Hz",
                      t.samples, rates[i]);
    }
}
END_TEST

START_TEST(bad_rate_warns_once_and_uses_default)
{
    static struct run r;
    const char *args[] = {"print", "0", NULL};
    run(&r, "test-shim-target", args, profiled_env("r.txt", "lots", 1));
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "osprey: OSPREY_PROFILE_HZ=lots is not a number; sampling at 997 Hz\n");
    read_summary("r.txt");
    ck_assert_int_eq(summary_value("rate_hz"), 997);
}
END_TEST

/* Nothing dropped with many busy threads (per-thread rings sized for a late tick, the event
 * ring drained by a consumer). */
START_TEST(busy_threads_lose_no_samples)
{
    static struct run r;
    const char *a64[] = {"busy", "64", "1000", NULL};
    run(&r, "test-shim-target", a64, profiled_env("b64.txt", "997", 1));
    ck_assert_int_eq(r.status, 0);
    read_summary("b64.txt");
    assert_well_formed();
    ck_assert_int_eq(summary_value("thread_starts"), 65);
    ck_assert_int_eq(summary_value("dropped"), 0);
    const char *a8[] = {"busy", "8", "1000", NULL};
    run(&r, "test-shim-target", a8, profiled_env("b8.txt", "10000", 1));
    ck_assert_int_eq(r.status, 0);
    read_summary("b8.txt");
    assert_well_formed();
    ck_assert_int_eq(summary_value("dropped"), 0);
}
END_TEST

/* Every blocking call the kernel never restarts, fortified forms and syscall(2) included,
 * entered right after a busy spell, at the default rate and at 10 kHz: none returns early. */
START_TEST(blocking_calls_never_return_early)
{
    static struct run plain, r;
    /* A socket with a receive timeout the program inherits (its timeout set before it ran). */
    int pair[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    struct timeval rcv = {0, 3000};
    ck_assert_int_eq(setsockopt(pair[0], SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof rcv), 0);
    char fd[16];
    snprintf(fd, sizeof fd, "%d", pair[0]);
    const char *args[] = {"20", fd, NULL};
    run(&plain, "test-shim-blocking", args, NULL);
    ck_assert_msg(strstr(plain.out, "\nearly 0\n") != NULL, "%s", plain.out);
    const char *rates[] = {"997", "10000"};
    for (int i = 0; i < 2; i++) {
        run(&r, "test-shim-blocking", args, profiled_env("k.txt", rates[i], 1));
        ck_assert_int_eq(r.status, 0);
        ck_assert_msg(strstr(r.out, "\nearly 0\n") != NULL, "at %s Hz:\n%s", rates[i], r.out);
        read_summary("k.txt");
        assert_well_formed();
    }
    close(pair[0]);
    close(pair[1]);
}
END_TEST

/* No thread of ours: glibc's single-thread fast paths stay on in a program that never
 * starts a thread, and the kernel lets it enter a user namespace. */
START_TEST(single_threaded_program_stays_single_threaded)
{
    static struct run plain, r;
    const char *single[] = {"single", NULL};
    run(&r, "test-shim-target", single, profiled_env("1.txt", "997", 1));
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "single-threaded 1 1\n");
    read_summary("1.txt");
    assert_well_formed();
    const char *unshare_args[] = {"unshare", NULL};
    run(&plain, "test-shim-target", unshare_args, NULL);
    run(&r, "test-shim-target", unshare_args, profiled_env("u.txt", "997", 1));
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, plain.out);
}
END_TEST

/* main ends with pthread_exit: the process ends when its worker does, exit handlers run,
 * and the worker's samples after main's end are in the profile. */
START_TEST(pthread_exit_from_main_ends_with_the_last_thread)
{
    static struct run r;
    const char *args[] = {"mainexit", NULL};
    run(&r, "test-shim-target", args, profiled_env("m.txt", "997", 1));
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "worker done\n");
    read_summary("m.txt");
    assert_well_formed();
    struct thread_line t;
    ck_assert(summary_thread("thread", 0, &t));
    ck_assert_int_gt(t.samples, 5); /* 300 ms of spinning (wall time) after main ended */
}
END_TEST

/* execve through syscall(2) right after a busy spell at 10 kHz: no signal of ours is left to
 * kill the new image. */
START_TEST(raw_execve_is_never_killed_by_a_leftover_signal)
{
    static struct run r;
    const char *args[] = {"rawexec", NULL};
    for (int i = 0; i < 20; i++) {
        run(&r, "test-shim-target", args, profiled_env("x.txt", "10000", 1));
        ck_assert_msg(r.status == 0 && strstr(r.out, "bye 0\n") != NULL, "run %d: status %d", i,
                      r.status);
        ck_assert_str_eq(r.err, "");
    }
}
END_TEST

/* Waiting threads cost a record per wait, not one per tick: 200 threads waiting 2 s. */
START_TEST(idle_threads_cost_a_record_per_wait)
{
    static struct run r;
    const char *args[] = {"idle", "200", "2000", NULL};
    run(&r, "test-shim-target", args, profiled_env("i.txt", "997", 1));
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "idle 200\n");
    read_summary("i.txt");
    assert_well_formed();
    ck_assert_int_eq(summary_value("dropped"), 0);
    /* ~2000 periods of waiting per thread, in a handful of records each. */
    ck_assert_int_le(summary_value("sample_records"), 201 * 5);
    ck_assert_int_ge(summary_value("samples"), 200 * 1994 * 8 / 10);
}
END_TEST

/* A /dev/shm too small for the shared memory (a container's is 64 MiB; here 1 MiB, as root in
 * a mount namespace of its own) is no limit: the ring is a memfd, and the run is profiled. */
START_TEST(small_dev_shm_is_no_limit)
{
    if (geteuid() != 0)
        return; /* needs a mount namespace */
    char cmd[8 * PATH_MAX];
    snprintf(cmd, sizeof cmd,
             "unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs -o size=1m tmpfs "
             "/dev/shm && LD_PRELOAD=%s OSPREY_PROFILE=%s/shm.txt "
             "OSPREY_DAEMON=%s/test-shim-consumer %s/test-shim-target print 0' >%s/shm.out "
             "2>%s/shm.err",
             so, scratch, dir, dir, scratch, scratch);
    int status = system(cmd);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/shm.err", scratch);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char err[4096] = "";
    size_t n = fread(err, 1, sizeof err - 1, f);
    err[n] = '\0';
    fclose(f);
    if (strstr(err, "unshare:") != NULL || strstr(err, "mount:") != NULL)
        return; /* no mount namespaces here */
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d, stderr: %s", status,
                  err);
    ck_assert_msg(err[0] == '\0', "stderr: %s", err);
    read_summary("shm.txt");
    assert_well_formed();
}
END_TEST

/* The program put a data file on fd 2: the shim's warning (here: the daemon failed) must not
 * land in it. */
START_TEST(warnings_never_go_into_a_data_file_on_fd_2)
{
    static struct run r;
    char data[PATH_MAX + 16], fail[] = "SHIM_CONSUMER_FAIL=1";
    snprintf(data, sizeof data, "%s/data.txt", scratch);
    const char *args[] = {"stderrfile", data, NULL};
    run(&r, "test-shim-target", args, with_env(profiled_env("f.txt", NULL, 1), fail));
    ck_assert_int_eq(r.status, 0);
    FILE *f = fopen(data, "r");
    ck_assert_ptr_nonnull(f);
    char text[256] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    ck_assert_str_eq(text, "data\n");
}
END_TEST

/* Two processes of a pipeline started with the same OSPREY_PROFILE (both roots): both
 * profiles are kept, the second beside the first. */
START_TEST(two_roots_with_one_path_keep_both_profiles)
{
    char cmd[8 * PATH_MAX];
    snprintf(cmd, sizeof cmd,
             "export LD_PRELOAD=%s OSPREY_PROFILE=%s/pipe.json OSPREY_DAEMON=%s/../daemon/ospreyd; "
             "%s/test-shim-target busy 1 200 | %s/test-shim-target busy 1 300 >/dev/null 2>&1",
             so, scratch, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(profiles("pipe."), 2);
}
END_TEST

/* The shim's bookkeeping stays out of the environment the program sees, yet a child started
 * through system(3) still writes its profile beside ours. */
START_TEST(bookkeeping_stays_out_of_the_program_environment)
{
    static struct run r;
    const char *args[] = {"environment", NULL};
    char daemon[PATH_MAX + 32];
    snprintf(daemon, sizeof daemon, "OSPREY_DAEMON=%s/../daemon/ospreyd", dir);
    run(&r, "test-shim-target", args, with_env(profiled_env("env.json", NULL, 1), daemon));
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "bookkeeping visible 0\n");
    /* ours and the child's beside it (the shell's too, once its ospreyd sees it exec'd away);
     * without the bookkeeping the child would take our path */
    ck_assert_int_ge(profiles("env."), 2);
}
END_TEST

/* OSPREY_EXPORT: ospreyd writes the outputs asked for beside the raw file once the program is
 * gone (the program's exit waits for the raw file only). */
START_TEST(ospreyd_writes_the_outputs_asked_for)
{
    static struct run r;
    const char *args[] = {"busy", "1", "200", NULL};
    char daemon[PATH_MAX + 32], exports[] = "OSPREY_EXPORT=folded,profile";
    snprintf(daemon, sizeof daemon, "OSPREY_DAEMON=%s/../daemon/ospreyd", dir);
    run(&r, "test-shim-target", args,
        with_env(with_env(profiled_env("exp.raw.json", NULL, 1), daemon), exports));
    ck_assert_int_eq(r.status, 0);
    char folded[PATH_MAX + 32], summary_path[PATH_MAX + 32];
    snprintf(folded, sizeof folded, "%s/exp.folded", scratch);
    snprintf(summary_path, sizeof summary_path, "%s/exp.profile.json", scratch);
    for (int waited = 0; waited < 300 && (access(folded, F_OK) || access(summary_path, F_OK));
         waited++) {
        struct timespec nap = {0, 100000000};
        nanosleep(&nap, NULL);
    }
    ck_assert_int_eq(access(folded, F_OK), 0);
    ck_assert_int_eq(access(summary_path, F_OK), 0);
    /* the raw file and the two asked for (folded comes with its off-CPU companion) */
    ck_assert_int_eq(profiles("exp."), 4);
}
END_TEST

Suite *collector_suite(void)
{
    Suite *s = suite_create("collector");
    TCase *tc = SUITE_CASE(
        s, "process", 240, preload_keeps_stdout_and_exit_status, profile_records_every_thread,
        sleeping_thread_is_not_woken_early, thread_churn_at_10khz_completes, off_means_off,
        program_sigprof_handler_is_kept, static_archive_profiles_like_the_preload,
        descendants_write_beside_and_a_forked_child_leaves_the_parent_alone,
        thread_named_after_start_is_relabelled, objects_loaded_later_reach_the_image_list,
        exec_replacing_a_profiled_image_survives_and_writes_beside,
        relative_profile_path_is_resolved_at_start,
        daemon_failure_or_absence_is_one_line_and_never_a_hang,
        thread_that_blocks_sigprof_never_finds_ours_pending,
        thread_that_blocks_every_signal_is_sampled, bad_rate_warns_once_and_uses_default,
        busy_threads_lose_no_samples, blocking_calls_never_return_early,
        single_threaded_program_stays_single_threaded,
        pthread_exit_from_main_ends_with_the_last_thread,
        raw_execve_is_never_killed_by_a_leftover_signal, idle_threads_cost_a_record_per_wait,
        small_dev_shm_is_no_limit, warnings_never_go_into_a_data_file_on_fd_2,
        two_roots_with_one_path_keep_both_profiles,
        bookkeeping_stays_out_of_the_program_environment, ospreyd_writes_the_outputs_asked_for);
    tcase_add_checked_fixture(tc, find_paths, remove_scratch);
    return s;
}
