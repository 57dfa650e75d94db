/* ospreyd.c — the collector process's command line and dispatch: which source the session
 * runs (session.c), the shim's rings (ring-source.c: `--ring-fd`, every descriptor named by its
 * role, as proto/osp_daemon_args.h writes the line) or perf events (attach.c: `--attach-pid`),
 * and, for the rings, only the descriptors handed over kept.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ospc.h"
#include "ospc_version.h"
#include "ospd_attach.h"
#include "ospd_ring_source.h"
#include "ospd_session.h"

/* The command line's descriptors, kept across the detach (ospd_ring_options says what each
 * holds); every other inherited one is closed. */
static int kept_fd = -1, ring_fd = -1, forks_fd = -1, run_lock = -1;
static int switch_fds[OSP_MAX_SWITCH_FDS], switch_count;

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: ospreyd --ring-fd N --ring-name NAME --out PATH [--detached] [--switch-fd N]...\n"
        "               [--forks-fd N] [--unwind-fd N] [--run-lock-fd N] [--export LIST]\n"
        "       ospreyd --attach-ring NAME --out PATH [--timeout SECONDS] [--export LIST]\n"
        "       ospreyd --attach-pid PID --out PATH [--rate N] [--duration SECONDS] [--export "
        "LIST]\n"
        "Collect the samples a profiled program posts to its shared-memory ring and write\n"
        "its raw profile to PATH when the program ends. Started by the shim (or by ospreyd\n"
        "for a forked child), every descriptor named by its role:\n"
        "  --ring-fd N         the program's ring (proto/osp_ring.h) on descriptor N\n"
        "  --ring-name NAME    its name (\"/osprey-...\"), under which its children greet us\n"
        "  --out PATH          where to write the raw profile (JSON, version 1)\n"
        "  --detached          in a process group of its own, started in the background already\n"
        "  --switch-fd N       one CPU's context-switch events (perf) on descriptor N; once a CPU\n"
        "  --forks-fd N        the socket the target's forked children greet (bound by the shim)\n"
        "  --unwind-fd N       the shim's unwind tables (proto/osp_unwind.h) on descriptor N\n"
        "  --run-lock-fd N     the run's lock (held shared while this collector lives)\n"
        "Started apart, by the user, for a program started with OSPREY_RING=NAME:\n"
        "  --attach-ring NAME  its ring /dev/shm/osprey-ring-NAME (this user's own only)\n"
        "  --timeout SECONDS   how long to wait for that ring to appear (default 30)\n"
        "  --export LIST       then write these outputs beside PATH (comma list of\n"
        "                      speedscope,cpuprofile,folded,profile,pprof,trace,html\n"
        "                      or all), as `osprey report` would\n"
        "  --help, --version\n");
}

static void attach_usage(FILE *f)
{
    fprintf(f, "usage: ospreyd --attach-pid PID --out PATH [--rate N] [--duration SECONDS]\n"
               "               [--export LIST]\n"
               "       ospreyd --attach-pid PID --stream [--rate N] [--duration SECONDS]\n"
               "Profile the running process PID from outside (perf events) until the duration\n"
               "ends, SIGINT or SIGTERM, or the process ends; write its raw profile to PATH,\n"
               "or with --stream its samples and stacks to stdout as they come.\n");
}

/* --attach-pid's command line into `a`: -1 to go on, else ospreyd's exit status. */
static int parse_attach(int argc, char **argv, struct ospd_perf_options *a)
{
    static const struct option options[] = {
        {"attach-pid", required_argument, NULL, 'p'},
        {"out", required_argument, NULL, 'o'},
        {"rate", required_argument, NULL, 'r'},
        {"duration", required_argument, NULL, 'd'},
        {"export", required_argument, NULL, 'e'},
        {"stream", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int opt;
    char *end;
    while ((opt = getopt_long(argc, argv, ":", options, NULL)) != -1) {
        switch (opt) {
        case 'p':
            a->pid = (int32_t)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || a->pid <= 0) {
                fprintf(stderr, "ospreyd: --attach-pid %s: not a process id\n", optarg);
                return 2;
            }
            break;
        case 'o':
            a->out = optarg;
            break;
        case 'r': {
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 10 || v > 10000) {
                fprintf(stderr, "ospreyd: --rate %s: not a rate of 10..10000\n", optarg);
                return 2;
            }
            a->rate = (uint32_t)v;
            break;
        }
        case 'd':
            a->duration = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(a->duration > 0)) {
                fprintf(stderr, "ospreyd: --duration %s: not a number of seconds\n", optarg);
                return 2;
            }
            break;
        case 'e':
            a->export_formats = optarg;
            break;
        case 's':
            a->stream = true;
            break;
        case 'h':
            attach_usage(stdout);
            return 0;
        default:
            fprintf(stderr, "ospreyd: bad option %s (try --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (a->pid <= 0 || (a->out == NULL) == !a->stream || optind < argc) {
        attach_usage(stderr);
        return 2;
    }
    return -1;
}

/* Close every descriptor above stderr that the program let us inherit (pipes, sockets), so
 * the daemon never holds a reader's end of file back after the program is gone. */
static bool fd_kept(int fd)
{
    for (int i = 0; i < switch_count; i++)
        if (fd == switch_fds[i])
            return true;
    return fd == kept_fd || fd == ring_fd || fd == forks_fd || fd == run_lock;
}

/* The highest descriptor handed over. */
static int highest_kept(void)
{
    int highest = kept_fd;
    int named[] = {ring_fd, forks_fd, run_lock};
    for (size_t i = 0; i < sizeof named / sizeof *named; i++)
        highest = named[i] > highest ? named[i] : highest;
    for (int i = 0; i < switch_count; i++)
        highest = switch_fds[i] > highest ? switch_fds[i] : highest;
    return highest;
}

static void close_inherited_fds(void)
{
#ifdef SYS_close_range
    /* Ours sit at 3 and up, one after another: everything above them goes at once. */
    int highest = 2;
    for (int fd = 3; fd_kept(fd); fd++)
        highest = fd;
    if (highest_kept() <= highest && syscall(SYS_close_range, (unsigned)highest + 1, ~0u, 0u) == 0)
        return;
#endif
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL)
        return;
    int own = dirfd(dir);
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        int fd = atoi(e->d_name);
        if (fd > STDERR_FILENO && fd != own && !fd_kept(fd))
            close(fd);
    }
    closedir(dir);
}

/* Leave the caller's process group and directories (--detached: the shim's grandchild, whose
 * parent has exited, so no fork: one process creation less for every profiled image). stderr
 * stays so warnings reach the user.
 *
 * A process group of its own, not a session: the terminal's ^C and ^Z go to the foreground
 * group, not to ospreyd, and a hangup or a stopped job's SIGTTOU (it writes warnings to the
 * terminal) is ignored; but it stays in the program's session, and so in the program's
 * scheduling group where the kernel groups tasks by session (autogroup, on by default). In a
 * session of its own, the tick competed as a group of its own with every other session's,
 * whatever its nice value: beside two CPU hogs and a test suite on 2 cores, 50-640 ms late
 * (runnable, not running) and the 4 KiB rings of a 997 Hz client full for 200 ms of it; in
 * the program's group it is 0.1-7 ms late (daemon/README.md, "Scheduling"). */
static int detach(void)
{
    close_inherited_fds();
    setpgid(0, 0); /* run() ignores SIGHUP and SIGTTOU */
    if (chdir("/") != 0)
        return -1;
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        if (null > STDERR_FILENO)
            close(null);
    }
    return 0;
}

/* `path` made absolute against the current directory (the daemon chdirs to / when it
 * detaches). NULL when out of memory or the directory is unknown. */
static char *absolute_path(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    char *cwd = getcwd(NULL, 0);
    if (cwd == NULL)
        return NULL;
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(n);
    if (out != NULL)
        snprintf(out, n, "%s/%s", cwd, path);
    free(cwd);
    return out;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"ring-fd", required_argument, NULL, 'f'},   {"ring-name", required_argument, NULL, 'n'},
        {"out", required_argument, NULL, 'o'},       {"detached", no_argument, NULL, 'D'},
        {"switch-fd", required_argument, NULL, 's'}, {"forks-fd", required_argument, NULL, 'F'},
        {"unwind-fd", required_argument, NULL, 'u'}, {"run-lock-fd", required_argument, NULL, 'L'},
        {"export", required_argument, NULL, 'e'},    {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},         {"attach-ring", required_argument, NULL, 'r'},
        {"timeout", required_argument, NULL, 't'},   {NULL, 0, NULL, 0},
    };
    /* A process started without the profiler, profiled from outside (attach.c). */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--attach-pid") == 0 || strncmp(argv[i], "--attach-pid=", 13) == 0) {
            struct ospd_perf_options a = {.rate = 997};
            int rc = parse_attach(argc, argv, &a);
            if (rc >= 0)
                return rc;
            signal(SIGPIPE, SIG_IGN);
            void *source = ospd_perf_collector_new(&a);
            return source != NULL ? ospd_session_run(&ospd_perf_events, source) : 1;
        }
    struct ospd_ring_options o = {.ring_name = NULL};
    bool detached = false;
    const char *out = NULL, *attach_ring = NULL;
    double timeout = 30;
    char ring_named[OSP_RING_NAME_SIZE];
    opterr = 0;
    int opt, index = 0;
    while ((opt = getopt_long(argc, argv, ":", options, &index)) != -1) {
        switch (opt) {
        case 'n':
            o.ring_name = optarg;
            break;
        case 'r':
            attach_ring = optarg;
            break;
        case 't': {
            char *end;
            timeout = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(timeout >= 0 && timeout <= 1e6)) {
                fprintf(stderr, "ospreyd: --timeout %s: not a number of seconds\n", optarg);
                return 2;
            }
            break;
        }
        case 'o':
            out = optarg;
            break;
        case 'u':
        case 'f':
        case 'F':
        case 'L':
        case 's': {
            char *end;
            long fd = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || fd < 3 || fd > 1 << 20) {
                fprintf(stderr, "osprey: ospreyd: --%s %s: not a descriptor number\n",
                        options[index].name, optarg);
                return 2;
            }
            if (opt == 's' && switch_count == (int)OSP_MAX_SWITCH_FDS) {
                fprintf(stderr, "osprey: ospreyd: --switch-fd %s: more than %u\n", optarg,
                        OSP_MAX_SWITCH_FDS);
                return 2;
            }
            if (opt == 's')
                switch_fds[switch_count++] = (int)fd;
            else
                *(opt == 'u'   ? &kept_fd
                  : opt == 'f' ? &ring_fd
                  : opt == 'F' ? &forks_fd
                               : &run_lock) = (int)fd;
            break;
        }
        case 'D':
            detached = true;
            break;
        case 'e':
            o.export_formats = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("ospreyd %s\n", OSPREY_VERSION);
            return 0;
        case ':':
            fprintf(stderr, "ospreyd: %s needs an argument (try --help)\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "ospreyd: unknown option %s (try --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ospreyd: unexpected argument %s (try --help)\n", argv[optind]);
        return 2;
    }
    if (attach_ring != NULL && (ring_fd >= 0 || o.ring_name != NULL || detached)) {
        fprintf(stderr, "ospreyd: --attach-ring NAME finds the ring by its name: no --ring-fd, "
                        "--ring-name or --detached (try --help)\n");
        return 2;
    }
    if (attach_ring != NULL && out != NULL && out[0] != '\0') {
        int rc = ospd_ring_named_open(attach_ring, timeout, &ring_fd, &kept_fd, ring_named,
                                      sizeof ring_named);
        if (rc != 0)
            return rc == -EINVAL ? 2 : 1;
        o.ring_name = ring_named;
    }
    if (o.ring_name == NULL || out == NULL || o.ring_name[0] == '\0' || out[0] == '\0' ||
        ring_fd < 0) {
        fprintf(stderr, "ospreyd: --ring-fd N and --ring-name NAME (or --attach-ring NAME) and "
                        "--out PATH are required (try --help)\n");
        return 2;
    }
    char *out_path = absolute_path(out);
    if (out_path == NULL) {
        fprintf(stderr, "ospreyd: cannot make %s absolute: %s\n", out, strerror(errno));
        return 2;
    }
    o.out_path = out_path;
    signal(SIGPIPE, SIG_IGN);
    run_lock = ospd_session_run_lock(run_lock, out_path);
    if (detached && detach() != 0) {
        free(out_path);
        return 1;
    }
    /* Ours alone: a forked child's collector gets only its own descriptors. */
    if (kept_fd >= 0)
        fcntl(kept_fd, F_SETFD, FD_CLOEXEC);
    for (int i = 0; i < switch_count; i++)
        fcntl(switch_fds[i], F_SETFD, FD_CLOEXEC);
    ssize_t self = readlink("/proc/self/exe", o.self, sizeof o.self - 1);
    o.self[self > 0 ? self : 0] = '\0';
    o.unwind_fd = kept_fd;
    o.switch_fds = switch_fds;
    o.switch_count = switch_count;
    o.ring_fd = ring_fd;
    o.forks_fd = forks_fd;
    o.run_lock = run_lock;
    void *source = ospd_ring_source_new(&o);
    int rc = source != NULL ? ospd_session_run(&ospd_ring_source, source) : 1;
    free(out_path);
    return rc;
}
