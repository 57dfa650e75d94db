/* cmd-run.c — `osprey FILE [--run] [--profile] [-o STEM] [-- ARGS...]`: FILE built if it is
 * a source (clang, profile build mode) into a scratch directory, run (under the preload shim
 * if it is an executable and we profile), its output and exit code passed through, then the
 * raw profile turned into the outputs and the report (pipeline.c), at the program's end or
 * when --duration ends.
 *
 * The program is what matters: whatever goes wrong in the profiling, its exit code comes
 * back unchanged, and what was lost is one "osprey: warning:" line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ospc.h"
#include "osprey_cli.h"
#include "osprey_commands.h"

/* The environment of a profiled program: the raw file, the daemon, the rate -F asked for
 * (over any OSPREY_PROFILE_HZ), and for an executable the preload shim ahead of any LD_PRELOAD
 * it already had. */
static char **profile_environment(const struct osprey_paths *paths, const char *raw, int preload,
                                  unsigned frequency, double duration)
{
    extern char **environ;
    char **with_profile = osprey_env_set(environ, "OSPREY_PROFILE", raw, 0);
    if (with_profile == NULL)
        return NULL;
    const char *daemon = getenv("OSPREY_DAEMON");
    char **with_daemon =
        osprey_env_set(with_profile, "OSPREY_DAEMON",
                       daemon != NULL && daemon[0] != '\0' ? daemon : paths->daemon, 0);
    osprey_env_free(with_profile);
    if (with_daemon != NULL && frequency != 0) {
        char hz[16];
        snprintf(hz, sizeof hz, "%u", frequency);
        char **with_rate = osprey_env_set(with_daemon, "OSPREY_PROFILE_HZ", hz, 0);
        osprey_env_free(with_daemon);
        with_daemon = with_rate;
    }
    if (with_daemon != NULL && duration > 0) {
        char seconds[32];
        snprintf(seconds, sizeof seconds, "%.3f", duration);
        char **with_seconds = osprey_env_set(with_daemon, "OSPREY_PROFILE_SECONDS", seconds, 0);
        osprey_env_free(with_daemon);
        with_daemon = with_seconds;
        /* And as one instant for every image of the run (a launcher that execs the program
         * must not restart the clock): the program starts now. */
        char until[32];
        snprintf(until, sizeof until, "%llu",
                 (unsigned long long)ospc_clock_ns(CLOCK_MONOTONIC) +
                     (unsigned long long)(duration * 1e9));
        char **with_until = with_daemon != NULL
                                ? osprey_env_set(with_daemon, "OSPREY_PROFILE_UNTIL_NS", until, 0)
                                : NULL;
        osprey_env_free(with_daemon);
        with_daemon = with_until;
    }
    if (with_daemon == NULL || !preload)
        return with_daemon;
    char **with_preload = osprey_env_set(with_daemon, "LD_PRELOAD", paths->shim_preload, 1);
    osprey_env_free(with_daemon);
    return with_preload;
}

/* Build a source into program (in the scratch directory). Returns 0, or the exit code for a
 * build that failed, after saying why on stderr. */
static int build_source(const struct osprey_options *options, enum osprey_file_kind kind,
                        const struct osprey_paths *paths, const char *program)
{
    struct stat include_info;
    const char *include_dir =
        stat(paths->include_dir, &include_info) == 0 ? paths->include_dir : NULL;
    int clang_exit;
    int result =
        osprey_compile(kind, options->file, program, options->profile ? paths->shim_archive : NULL,
                       include_dir, &clang_exit);
    if (result == -ENOENT) {
        fprintf(stderr, "osprey: %s not found on PATH; it builds %s (apt-get install clang)\n",
                kind == OSPREY_FILE_CXX_SOURCE ? "clang++" : "clang", options->file);
        return OSPREY_EXIT_USAGE;
    }
    if (result != 0) {
        fprintf(stderr, "osprey: %s: cannot start clang: %s\n", options->file, strerror(-result));
        return OSPREY_EXIT_FAILURE;
    }
    if (clang_exit != 0) {
        fprintf(stderr, "osprey: %s: build failed (clang exited with status %d)\n", options->file,
                clang_exit);
        return OSPREY_EXIT_FAILURE;
    }
    return 0;
}

/* --duration: the profile ends while the program runs on; once the collector has written it,
 * the report is printed at once, and the program's exit waited for afterwards. */
struct early_report {
    const char *scratch_raw;
    const struct osprey_options *options;
    int polls, done;
};

static int report_at_duration(void *ctx)
{
    struct early_report *early = ctx;
    if (access(early->scratch_raw, F_OK) != 0)
        return ++early->polls > 30000 / 20; /* 30 s on: reported at the end instead */
    char stem[PATH_MAX];
    osprey_output_stem(early->options, stem, sizeof stem);
    osprey_finish_profile(early->scratch_raw, stem, early->options);
    fflush(NULL);
    early->done = 1;
    return 1;
}

/* Run program (argv[0] named program_name) with the options' arguments, profiled when asked,
 * and post-process. Returns the program's exit code, as a shell would report it, or
 * OSPREY_EXIT_USAGE when it could not be started. */
static int run_program(const struct osprey_options *options, const struct osprey_paths *paths,
                       int preload, const char *program, const char *program_name,
                       const char *scratch)
{
    char scratch_raw[PATH_MAX + 32];
    snprintf(scratch_raw, sizeof scratch_raw, "%s/profile.raw.json", scratch);
    char **environment = NULL;
    if (options->profile) {
        environment =
            profile_environment(paths, scratch_raw, preload, options->frequency, options->duration);
        if (environment == NULL) {
            fprintf(stderr, "osprey: %s\n", strerror(ENOMEM));
            return OSPREY_EXIT_FAILURE;
        }
        /* The daemon outlives the program when the program is killed; as a subreaper we can
         * wait for it to finish the raw file. */
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    char **argv = calloc((size_t)options->program_argc + 2, sizeof *argv);
    if (argv == NULL) {
        fprintf(stderr, "osprey: %s\n", strerror(ENOMEM));
        osprey_env_free(environment);
        return OSPREY_EXIT_FAILURE;
    }
    argv[0] = (char *)program_name;
    for (int i = 0; i < options->program_argc; i++)
        argv[i + 1] = options->program_args[i];

    extern char **environ;
    int status;
    struct early_report early = {scratch_raw, options, 0, 0};
    int result = osprey_run_child_until(
        program, argv, environment != NULL ? environment : environ, &status,
        options->profile && options->duration > 0 ? options->duration : 0,
        options->profile && options->duration > 0 ? report_at_duration : NULL, &early);
    free(argv);
    osprey_env_free(environment);
    if (result != 0) {
        fprintf(stderr, "osprey: %s: cannot run: %s\n", options->file, strerror(-result));
        return OSPREY_EXIT_USAGE;
    }
    int exit_code = osprey_exit_code(status);
    if (options->profile && !early.done) {
        char stem[PATH_MAX];
        osprey_output_stem(options, stem, sizeof stem);
        osprey_finish_profile(scratch_raw, stem, options);
    }
    if (WIFSIGNALED(status))
        fprintf(stderr, "osprey: %s was killed by signal %d (%s); exit status %d\n", options->file,
                WTERMSIG(status), strsignal(WTERMSIG(status)), exit_code);
    return exit_code;
}

int osprey_cmd_run(const struct osprey_options *options)
{
    char error[PATH_MAX + 256];
    char program[PATH_MAX];
    enum osprey_file_kind kind;
    if (osprey_classify_file(options->file, &kind, program, sizeof program, error, sizeof error) !=
        0) {
        fprintf(stderr, "osprey: %s\n", error);
        return OSPREY_EXIT_USAGE;
    }
    int source = kind != OSPREY_FILE_EXECUTABLE;

    char self[PATH_MAX];
    ssize_t self_length = readlink("/proc/self/exe", self, sizeof self - 1);
    self[self_length > 0 ? self_length : 0] = '\0';
    struct osprey_paths paths;
    osprey_locate(self, &paths);
    if (options->profile && osprey_paths_check(&paths, source, !source, error, sizeof error) != 0) {
        fprintf(stderr, "osprey: %s\n", error);
        return OSPREY_EXIT_USAGE;
    }
    if (options->profile) {
        char stem[PATH_MAX];
        osprey_output_stem(options, stem, sizeof stem);
        if (osprey_check_output_place(stem, error, sizeof error) != 0) {
            fprintf(stderr, "osprey: %s\n", error);
            return OSPREY_EXIT_USAGE;
        }
    }
    if (options->profile && !source && osprey_is_static_elf(program))
        fprintf(stderr,
                "osprey: warning: %s is statically linked: the preload library cannot load "
                "into it, so it runs unprofiled; profile it from outside while it runs with "
                "'osprey attach PID' (or link it dynamically, or with libospreyprof.a)\n",
                options->file);
    char how[128];
    if (options->profile && !source && osprey_gains_privileges(program, how, sizeof how))
        fprintf(stderr,
                "osprey: warning: %s is %s: the loader keeps the preload library out of a "
                "program that raises its privileges, so it runs unprofiled and as it is; "
                "profile it from outside while it runs with 'osprey attach PID' as root\n",
                options->file, how);

    char scratch[PATH_MAX];
    int result = osprey_make_scratch(scratch, sizeof scratch);
    if (result != 0) {
        fprintf(stderr, "osprey: cannot make a scratch directory in %s: %s\n",
                getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp", strerror(-result));
        return OSPREY_EXIT_FAILURE;
    }
    /* The profile's own scratch (its raw files and the run's lock) beside the outputs: a
     * sandbox that leaves only the output directory writable still lets it be written. */
    char profile_scratch[PATH_MAX] = "";
    if (options->profile) {
        char stem[PATH_MAX];
        osprey_output_stem(options, stem, sizeof stem);
        result = osprey_make_scratch_beside(stem, profile_scratch, sizeof profile_scratch);
        if (result == 0)
            result = osprey_make_run_lock(profile_scratch);
        if (result != 0) {
            fprintf(stderr, "osprey: cannot make a scratch directory beside %s: %s\n", stem,
                    strerror(-result));
            if (profile_scratch[0] != '\0')
                osprey_remove_tree(profile_scratch);
            osprey_remove_tree(scratch);
            return OSPREY_EXIT_FAILURE;
        }
    }

    /* A built program is named after its source; an executable as the user named it. */
    char default_stem[PATH_MAX];
    osprey_default_run_stem(options->file, default_stem, sizeof default_stem);
    const char *program_name = source ? default_stem + 2 /* skip "./" */ : options->file;
    int exit_code = 0;
    if (source &&
        snprintf(program, sizeof program, "%s/%s", scratch, program_name) >= (int)sizeof program) {
        fprintf(stderr, "osprey: %s: %s\n", scratch, strerror(ENAMETOOLONG));
        exit_code = OSPREY_EXIT_FAILURE;
    }
    if (source && exit_code == 0)
        exit_code = build_source(options, kind, &paths, program);
    if (exit_code == 0)
        exit_code = run_program(options, &paths, !source, program, program_name,
                                options->profile ? profile_scratch : scratch);

    const char *made[] = {scratch, profile_scratch};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        if (made[i][0] == '\0')
            continue;
        result = osprey_remove_tree(made[i]);
        if (result != 0)
            fprintf(stderr, "osprey: warning: cannot remove %s: %s\n", made[i], strerror(-result));
    }
    return exit_code;
}
