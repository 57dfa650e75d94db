/* test-cli.c — the `osprey` command's pieces: argument parsing, what FILE is, default stems,
 * locating the shim and daemon, the program's environment, running a child (exit codes,
 * signals, forwarding), building with clang, and the file helpers. The whole command, with
 * the profiler, is exercised end to end by tests/e2e-cli.sh and tests/e2e-profile.sh.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "osprey_cli.h"
#include "osprey_top.h"
#include "scratch.h"
#include "suite.h"

extern char **environ;
static char error[1024];

static int parse(struct osprey_options *options, char **argv)
{
    int argc = 0;
    while (argv[argc] != NULL)
        argc++;
    error[0] = '\0';
    return osprey_parse_args(argc, argv, options, error, sizeof error);
}
/* PARSES(options, rc, word...): the command line of the words listed parses to rc. */
#define PARSES(options, rc, ...)                                                                   \
    ck_assert_int_eq(parse((options), (char *[]){__VA_ARGS__, NULL}), (rc))

/* The command line is refused (-EINVAL) with an error holding `needle` (NULL: any error). */
static void refused(const char *needle, char **argv)
{
    struct osprey_options options;
    ck_assert_int_eq(parse(&options, argv), -EINVAL);
    ck_assert_msg(needle == NULL || strstr(error, needle) != NULL, "no \"%s\" in: %s", needle,
                  error);
}
/* REFUSED(needle, word...): refused of the words listed. */
#define REFUSED(needle, ...) refused((needle), (char *[]){__VA_ARGS__, NULL})

START_TEST(parse_run_with_everything)
{
    char *argv[] = {"osprey", "--profile", "prog.c", "-o", "out/p", "--", "-x", "--help", NULL};
    struct osprey_options options;
    ck_assert_int_eq(parse(&options, argv), 0);
    ck_assert_int_eq(options.command, OSPREY_COMMAND_RUN);
    ck_assert_str_eq(options.file, "prog.c");
    ck_assert_int_eq(options.profile, 1);
    ck_assert_str_eq(options.stem, "out/p");
    ck_assert_int_eq(options.program_argc, 2);
    ck_assert_str_eq(options.program_args[0], "-x");
    ck_assert_str_eq(options.program_args[1], "--help"); /* the program's, not ours */
    ck_assert_ptr_null(options.program_args[2]);
}
END_TEST

START_TEST(parse_option_spellings)
{
    struct osprey_options options;
    PARSES(&options, 0, "osprey", "a.c", "-ostem");
    ck_assert_str_eq(options.stem, "stem");
    PARSES(&options, 0, "osprey", "--output=s2", "--run", "a.c");
    ck_assert_str_eq(options.stem, "s2");
    ck_assert_int_eq(options.profile, 0);
    ck_assert_int_eq(options.program_argc, 0);
    ck_assert_ptr_null(options.program_args[0]);
}
END_TEST

START_TEST(parse_help_and_version)
{
    struct osprey_options options;
    PARSES(&options, 0, "osprey", "a.c", "--help");
    ck_assert_int_eq(options.command, OSPREY_COMMAND_HELP);
    PARSES(&options, 0, "osprey", "-V");
    ck_assert_int_eq(options.command, OSPREY_COMMAND_VERSION);
}
END_TEST

START_TEST(parse_report)
{
    struct osprey_options options;
    char *argv[] = {"osprey", "report", "x.raw.json", "--binary", "bin/x", NULL};
    ck_assert_int_eq(parse(&options, argv), 0);
    ck_assert_int_eq(options.command, OSPREY_COMMAND_REPORT);
    ck_assert_str_eq(options.file, "x.raw.json");
    ck_assert_str_eq(options.binary, "bin/x");
}
END_TEST

START_TEST(parse_report_views_and_diff)
{
    struct osprey_options options;
    char *argv[] = {"osprey",  "report",   "x.raw.json",  "--top", "3",          "--fiber=main",
                    "--focus", "^a",       "--ignore",    "b$",    "--inverted", "--list",
                    "hot",     "--format", "pprof,trace", NULL};
    ck_assert_int_eq(parse(&options, argv), 0);
    ck_assert_uint_eq(options.top, 3);
    ck_assert_str_eq(options.fiber, "main");
    ck_assert_str_eq(options.focus, "^a");
    ck_assert_str_eq(options.ignore, "b$");
    ck_assert_int_eq(options.inverted, 1);
    ck_assert_str_eq(options.list, "hot");
    ck_assert_str_eq(options.formats, "pprof,trace");

    char *diff[] = {"osprey", "diff", "a.raw.json", "b.raw.json", "--top", "5", NULL};
    ck_assert_int_eq(parse(&options, diff), 0);
    ck_assert_int_eq(options.command, OSPREY_COMMAND_DIFF);
    ck_assert_str_eq(options.file, "a.raw.json");
    ck_assert_str_eq(options.file2, "b.raw.json");
    ck_assert_uint_eq(options.top, 5);

    PARSES(&options, 0, "osprey", "a.c", "--profile", "--format", "speedscope");
    ck_assert_str_eq(options.formats, "speedscope");

    REFUSED("--top", "osprey", "report", "x.raw.json", "--top", "0");
    REFUSED("belongs to 'osprey report RAW'", "osprey", "a.c", "--focus", "x");
    REFUSED(NULL, "osprey", "diff", "a", "b", "--inverted");
    /* --merge-processes: of a report and of a profiled run, not of a diff or an attach */
    PARSES(&options, 0, "osprey", "report", "x.raw.json", "--merge-processes");
    ck_assert_int_eq(options.merge_processes, 1);
    PARSES(&options, 0, "osprey", "./build.sh", "--profile", "--merge-processes");
    ck_assert_int_eq(options.merge_processes, 1);
    REFUSED("belongs to 'osprey report RAW' and 'osprey FILE", "osprey", "diff", "a", "b",
            "--merge-processes");
    REFUSED(NULL, "osprey", "attach", "1", "--merge-processes");
    REFUSED("missing BASE and NEW", "osprey", "diff", "a");
    REFUSED(NULL, "osprey", "diff", "a", "b", "c");
    REFUSED("'--list' needs", "osprey", "report", "x", "--list");
}
END_TEST

/* Finding objects later: --symfs and --ignore-build-id (report, diff), the cache command. */
START_TEST(parse_symbols_options_and_cache)
{
    struct osprey_options options;
    char *report[] = {"osprey", "report", "x.raw.json", "--symfs", "/a:/b", "--ignore-build-id",
                      NULL};
    ck_assert_int_eq(parse(&options, report), 0);
    ck_assert_str_eq(options.symfs, "/a:/b");
    ck_assert_int_eq(options.ignore_build_id, 1);
    char *diff[] = {"osprey", "diff", "a", "b", "--symfs=/s", NULL};
    ck_assert_int_eq(parse(&options, diff), 0);
    ck_assert_str_eq(options.symfs, "/s");
    ck_assert_int_eq(options.ignore_build_id, 0);
    REFUSED("belongs to 'osprey report' and 'osprey diff'", "osprey", "a.c", "--symfs", "/s");
    REFUSED(NULL, "osprey", "a.c", "--ignore-build-id");

    char *cache[] = {"osprey", "cache", NULL};
    ck_assert_int_eq(parse(&options, cache), 0);
    ck_assert_int_eq(options.command, OSPREY_COMMAND_CACHE);
    ck_assert_ptr_null(options.cache_action);
    char *prune[] = {"osprey", "cache", "prune", "--max-size", "500M", NULL};
    ck_assert_int_eq(parse(&options, prune), 0);
    ck_assert_str_eq(options.cache_action, "prune");
    ck_assert_str_eq(options.max_size, "500M");
    char *unknown[] = {"osprey", "cache", "clean", NULL};
    ck_assert_int_eq(parse(&options, unknown), -EINVAL);
    ck_assert_ptr_nonnull(strstr(error, "'clean'"));
    REFUSED(NULL, "osprey", "cache", "prune", "--max-size");
}
END_TEST

START_TEST(parse_errors_name_the_problem)
{
    struct osprey_options options;
    char *unknown[] = {"osprey", "a.c", "--frobnicate", NULL};
    ck_assert_int_eq(parse(&options, unknown), -EINVAL);
    ck_assert_ptr_nonnull(strstr(error, "unknown option '--frobnicate'"));

    char *missing[] = {"osprey", "--profile", NULL};
    ck_assert_int_eq(parse(&options, missing), -EINVAL);
    ck_assert_ptr_nonnull(strstr(error, "missing FILE"));

    REFUSED("'b.c'", "osprey", "a.c", "b.c");

    REFUSED("needs a STEM", "osprey", "a.c", "-o");

    REFUSED(NULL, "osprey", "a.c", "--binary", "x");

    REFUSED(NULL, "osprey", "report", "r.json", "--profile");

    REFUSED("missing RAW", "osprey", "report");
    ck_assert_ptr_null(strchr(error, '\n'));
}
END_TEST

/* A scratch directory per test, removed at the end. */
static char scratch[256];

static void scratch_setup(void)
{
    scratch_make(scratch, sizeof scratch, "cli");
}

static void scratch_teardown(void)
{
    scratch_remove(scratch);
}

static void write_file(const char *name, const char *text, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    FILE *file = fopen(path, "w");
    ck_assert_ptr_nonnull(file);
    fputs(text, file);
    fclose(file);
    ck_assert_int_eq(chmod(path, mode), 0);
}

static const char *in_scratch(const char *name)
{
    static char paths[4][512];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, sizeof paths[0], "%s/%s", scratch, name);
    return path;
}

START_TEST(classify_files)
{
    write_file("prog.c", "int main(void) { return 0; }\n", 0644);
    write_file("prog.cpp", "int main() { return 0; }\n", 0644);
    write_file("tool", "#!/bin/sh\nexit 0\n", 0755);
    write_file("notes.txt", "hello\n", 0644);
    ck_assert_int_eq(mkdir(in_scratch("dir"), 0755), 0);

    enum osprey_file_kind kind;
    char resolved[512];
    ck_assert_int_eq(osprey_classify_file(in_scratch("prog.c"), &kind, resolved, sizeof resolved,
                                          error, sizeof error),
                     0);
    ck_assert_int_eq(kind, OSPREY_FILE_C_SOURCE);
    ck_assert_int_eq(osprey_classify_file(in_scratch("prog.cpp"), &kind, resolved, sizeof resolved,
                                          error, sizeof error),
                     0);
    ck_assert_int_eq(kind, OSPREY_FILE_CXX_SOURCE);
    ck_assert_int_eq(osprey_classify_file(in_scratch("tool"), &kind, resolved, sizeof resolved,
                                          error, sizeof error),
                     0);
    ck_assert_int_eq(kind, OSPREY_FILE_EXECUTABLE);
    ck_assert_str_eq(resolved, in_scratch("tool"));

    ck_assert_int_eq(osprey_classify_file(in_scratch("notes.txt"), &kind, resolved, sizeof resolved,
                                          error, sizeof error),
                     -EACCES);
    ck_assert_ptr_nonnull(strstr(error, "notes.txt: not a C source (.c) and not executable"));
    ck_assert_int_eq(osprey_classify_file(in_scratch("dir"), &kind, resolved, sizeof resolved,
                                          error, sizeof error),
                     -EISDIR);
    ck_assert_ptr_nonnull(strstr(error, "is a directory"));
    ck_assert_int_eq(osprey_classify_file(in_scratch("absent.c"), &kind, resolved, sizeof resolved,
                                          error, sizeof error),
                     -ENOENT);
    ck_assert_ptr_nonnull(strstr(error, "absent.c: No such file or directory"));
}
END_TEST

START_TEST(classify_bare_name_searches_path)
{
    enum osprey_file_kind kind;
    char resolved[512];
    char *old_path = getenv("PATH") != NULL ? strdup(getenv("PATH")) : NULL;
    write_file("my-tool-on-path", "#!/bin/sh\n", 0755);
    setenv("PATH", scratch, 1);
    ck_assert_int_eq(osprey_classify_file("my-tool-on-path", &kind, resolved, sizeof resolved,
                                          error, sizeof error),
                     0);
    ck_assert_int_eq(kind, OSPREY_FILE_EXECUTABLE);
    ck_assert_str_eq(resolved, in_scratch("my-tool-on-path"));
    ck_assert_int_eq(osprey_classify_file("not-there-anywhere", &kind, resolved, sizeof resolved,
                                          error, sizeof error),
                     -ENOENT);
    if (old_path != NULL)
        setenv("PATH", old_path, 1);
    free(old_path);
}
END_TEST

START_TEST(static_executables_are_recognised)
{
    /* A dynamic executable, a script, and a missing file are not static. */
    ck_assert_int_eq(osprey_is_static_elf("/bin/sh"), 0);
    write_file("script", "#!/bin/sh\n", 0755);
    ck_assert_int_eq(osprey_is_static_elf(in_scratch("script")), 0);
    ck_assert_int_eq(osprey_is_static_elf(in_scratch("absent")), 0);

    char clang[512];
    if (osprey_find_on_path("clang", clang, sizeof clang) != 0)
        return; /* no compiler to make a static executable with */
    write_file("static.c", "int main(void) { return 0; }\n", 0644);
    char *argv[] = {
        "clang", "-static", (char *)in_scratch("static.c"), "-o", (char *)in_scratch("static"),
        NULL};
    int status;
    ck_assert_int_eq(osprey_run_child(clang, argv, environ, &status), 0);
    if (osprey_exit_code(status) != 0)
        return; /* no static libc installed */
    ck_assert_int_eq(osprey_is_static_elf(in_scratch("static")), 1);
}
END_TEST

/* The default stem of a run of `file` or of a report of it (a static buffer). */
static const char *stem_of(void (*stem_for)(const char *, char *, size_t), const char *file)
{
    static char stem[256];
    stem_for(file, stem, sizeof stem);
    return stem;
}

START_TEST(privileged_executables_are_recognised)
{
    char how[128] = "";
    ck_assert_int_eq(osprey_gains_privileges("/bin/sh", how, sizeof how), 0);
    ck_assert_int_eq(osprey_gains_privileges(in_scratch("absent"), how, sizeof how), 0);
    /* Set-user-ID to oneself raises nothing. */
    write_file("own", "#!/bin/sh\n", 0755);
    ck_assert_int_eq(chmod(in_scratch("own"), 04755), 0);
    ck_assert_int_eq(osprey_gains_privileges(in_scratch("own"), how, sizeof how), 0);

    struct statvfs fs;
    if (geteuid() != 0 || (statvfs(scratch, &fs) == 0 && (fs.f_flag & ST_NOSUID)))
        return; /* only root makes a file of another user's; a nosuid mount honours no bit */
    write_file("other", "#!/bin/sh\n", 0755);
    ck_assert_int_eq(chown(in_scratch("other"), 65534, (gid_t)-1), 0);
    ck_assert_int_eq(chmod(in_scratch("other"), 04755), 0);
    ck_assert_int_eq(osprey_gains_privileges(in_scratch("other"), how, sizeof how), 1);
    ck_assert_ptr_nonnull(strstr(how, "set-user-ID "));
    write_file("group", "#!/bin/sh\n", 0755);
    ck_assert_int_eq(chown(in_scratch("group"), 0, 65534), 0);
    ck_assert_int_eq(chmod(in_scratch("group"), 02755), 0);
    ck_assert_int_eq(osprey_gains_privileges(in_scratch("group"), how, sizeof how), 1);
    ck_assert_ptr_nonnull(strstr(how, "set-group-ID "));
    /* A group's bit without its execute bit is mandatory locking, not set-group-ID. */
    ck_assert_int_eq(chmod(in_scratch("group"), 02745), 0);
    ck_assert_int_eq(osprey_gains_privileges(in_scratch("group"), how, sizeof how), 0);
}
END_TEST

START_TEST(default_stems)
{
    ck_assert_str_eq(stem_of(osprey_default_run_stem, "examples/hotspot.c"), "./hotspot");
    ck_assert_str_eq(stem_of(osprey_default_run_stem, "/usr/bin/sort"), "./sort");
    ck_assert_str_eq(stem_of(osprey_default_run_stem, "x.cpp"), "./x");
    ck_assert_str_eq(stem_of(osprey_default_report_stem, "out/hot.raw.json"), "out/hot");
    ck_assert_str_eq(stem_of(osprey_default_report_stem, "hot.json"), "hot");
    ck_assert_str_eq(stem_of(osprey_default_report_stem, "profile"), "profile");

    struct osprey_options options;
    char stem[256];
    PARSES(&options, 0, "osprey", "report", "d/x.raw.json");
    osprey_output_stem(&options, stem, sizeof stem);
    ck_assert_str_eq(stem, "d/x");
    PARSES(&options, 0, "osprey", "d/x.c", "-o", "elsewhere/y");
    osprey_output_stem(&options, stem, sizeof stem);
    ck_assert_str_eq(stem, "elsewhere/y");
}
END_TEST

START_TEST(locate_in_build_tree_and_installed)
{
    ck_assert_int_eq(mkdir(in_scratch("tools"), 0755), 0);
    ck_assert_int_eq(mkdir(in_scratch("shim"), 0755), 0);
    struct osprey_paths paths;

    /* Without the archive beside it, this is not a build tree: installed paths. */
    osprey_locate(in_scratch("tools/osprey"), &paths);
    ck_assert_int_eq(paths.build_tree, 0);
    ck_assert_ptr_nonnull(strstr(paths.shim_archive, "libospreyprof.a"));
    ck_assert_ptr_null(strstr(paths.shim_archive, scratch));

    write_file("shim/libospreyprof.a", "!<arch>\n", 0644);
    osprey_locate(in_scratch("tools/osprey"), &paths);
    ck_assert_int_eq(paths.build_tree, 1);
    ck_assert_str_eq(paths.shim_archive, in_scratch("shim/libospreyprof.a"));
    ck_assert_str_eq(paths.shim_preload, in_scratch("shim/libospreyprof.so"));
    ck_assert_str_eq(paths.daemon, in_scratch("daemon/ospreyd"));

    /* The preload library and daemon are missing: the check names what is missing. */
    ck_assert_int_eq(osprey_paths_check(&paths, 1, 1, error, sizeof error), -ENOENT);
    ck_assert_ptr_nonnull(strstr(error, "libospreyprof.so"));
    ck_assert_int_eq(osprey_paths_check(&paths, 1, 0, error, sizeof error), -ENOENT);
    ck_assert_ptr_nonnull(strstr(error, "ospreyd"));
}
END_TEST

static const char *env_lookup(char **envp, const char *name)
{
    size_t length = strlen(name);
    const char *found = NULL;
    for (size_t i = 0; envp[i] != NULL; i++)
        if (strncmp(envp[i], name, length) == 0 && envp[i][length] == '=') {
            ck_assert_ptr_null(found); /* defined once */
            found = envp[i] + length + 1;
        }
    return found;
}

START_TEST(environment_for_the_program)
{
    char *base[] = {"HOME=/root", "LD_PRELOAD=/lib/other.so", "OSPREY_PROFILE=old", NULL};
    char **set = osprey_env_set(base, "OSPREY_PROFILE", "/tmp/s/raw.json", 0);
    ck_assert_ptr_nonnull(set);
    ck_assert_str_eq(env_lookup(set, "OSPREY_PROFILE"), "/tmp/s/raw.json");
    ck_assert_str_eq(env_lookup(set, "HOME"), "/root");

    char **preload = osprey_env_set(set, "LD_PRELOAD", "/b/libospreyprof.so", 1);
    ck_assert_str_eq(env_lookup(preload, "LD_PRELOAD"), "/b/libospreyprof.so:/lib/other.so");
    osprey_env_free(preload);
    osprey_env_free(set);

    char *empty[] = {NULL};
    char **fresh = osprey_env_set(empty, "LD_PRELOAD", "/b/libospreyprof.so", 1);
    ck_assert_str_eq(env_lookup(fresh, "LD_PRELOAD"), "/b/libospreyprof.so");
    osprey_env_free(fresh);
}
END_TEST

static int run_shell(const char *script, int *status)
{
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    return osprey_run_child("/bin/sh", argv, environ, status);
}

START_TEST(run_passes_exit_codes_through)
{
    int status;
    ck_assert_int_eq(run_shell("exit 3", &status), 0);
    ck_assert_int_eq(osprey_exit_code(status), 3);
    ck_assert_int_eq(run_shell("exit 0", &status), 0);
    ck_assert_int_eq(osprey_exit_code(status), 0);
    ck_assert_int_eq(run_shell("kill -9 $$", &status), 0);
    ck_assert(WIFSIGNALED(status));
    ck_assert_int_eq(osprey_exit_code(status), 137);
}
END_TEST

START_TEST(run_reports_what_cannot_start)
{
    int status;
    char *argv[] = {"x", NULL};
    ck_assert_int_eq(osprey_run_child(in_scratch("absent"), argv, environ, &status), -ENOENT);
    write_file("plain", "not a program\n", 0644);
    ck_assert_int_eq(osprey_run_child(in_scratch("plain"), argv, environ, &status), -EACCES);
}
END_TEST

START_TEST(run_forwards_sigterm_to_the_child)
{
    /* The child asks its parent (us, waiting in osprey_run_child) to terminate; we survive
     * and pass the signal on, and the child's own handler decides the exit code. */
    struct sigaction before, after;
    sigaction(SIGTERM, NULL, &before);
    int status;
    ck_assert_int_eq(
        run_shell("trap 'exit 42' TERM; kill -TERM $PPID; sleep 3 & wait $!; exit 7", &status), 0);
    ck_assert_int_eq(osprey_exit_code(status), 42);
    /* Our own disposition is back to what it was. */
    sigaction(SIGTERM, NULL, &after);
    ck_assert_ptr_eq((void *)after.sa_handler, (void *)before.sa_handler);
}
END_TEST

START_TEST(compile_success_and_failure)
{
    write_file("good.c", "#include <stdio.h>\nint main(void) { puts(\"built\"); return 5; }\n",
               0644);
    write_file("bad.c", "int main(void) { return undeclared_name; }\n", 0644);
    int exit_code = -1;
    int result = osprey_compile(OSPREY_FILE_C_SOURCE, in_scratch("good.c"), in_scratch("good"),
                                NULL, NULL, &exit_code);
    if (result == -ENOENT)
        return; /* no clang on this machine: nothing to check here */
    ck_assert_int_eq(result, 0);
    ck_assert_int_eq(exit_code, 0);
    int status;
    char *argv[] = {"good", NULL};
    ck_assert_int_eq(osprey_run_child(in_scratch("good"), argv, environ, &status), 0);
    ck_assert_int_eq(osprey_exit_code(status), 5);

    ck_assert_int_eq(osprey_compile(OSPREY_FILE_C_SOURCE, in_scratch("bad.c"), in_scratch("bad"),
                                    NULL, NULL, &exit_code),
                     0);
    ck_assert_int_ne(exit_code, 0);
    ck_assert_int_ne(access(in_scratch("bad"), F_OK), 0);
}
END_TEST

START_TEST(file_helpers)
{
    ck_assert_int_eq(osprey_make_parent_dirs(in_scratch("a/b/c/stem")), 0);
    struct stat info;
    ck_assert_int_eq(stat(in_scratch("a/b/c"), &info), 0);
    ck_assert(S_ISDIR(info.st_mode));
    ck_assert_int_eq(osprey_make_parent_dirs("stem-in-cwd"), 0);

    write_file("raw.json", "{\"version\":1}\n", 0600);
    ck_assert_int_eq(osprey_move_file(in_scratch("raw.json"), in_scratch("a/b/kept.raw.json")), 0);
    ck_assert_int_ne(access(in_scratch("raw.json"), F_OK), 0);
    FILE *file = fopen(in_scratch("a/b/kept.raw.json"), "r");
    ck_assert_ptr_nonnull(file);
    char line[64] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, file));
    fclose(file);
    ck_assert_str_eq(line, "{\"version\":1}\n");

    /* Across file systems (a scratch directory on tmpfs): copied, then the source removed. */
    struct stat shm_info, scratch_info;
    if (stat("/dev/shm", &shm_info) == 0 && stat(scratch, &scratch_info) == 0 &&
        shm_info.st_dev != scratch_info.st_dev) {
        char elsewhere[64];
        snprintf(elsewhere, sizeof elsewhere, "/dev/shm/osprey-test-%ld.raw.json", (long)getpid());
        FILE *other = fopen(elsewhere, "w");
        ck_assert_ptr_nonnull(other);
        fputs("{\"version\":2}\n", other);
        fclose(other);
        ck_assert_int_eq(osprey_move_file(elsewhere, in_scratch("a/b/kept.raw.json")), 0);
        ck_assert_int_ne(access(elsewhere, F_OK), 0);
        file = fopen(in_scratch("a/b/kept.raw.json"), "r");
        ck_assert_ptr_nonnull(file);
        ck_assert_ptr_nonnull(fgets(line, sizeof line, file));
        fclose(file);
        ck_assert_str_eq(line, "{\"version\":2}\n");
    }

    /* The file appears (or exists): found at once. Missing with nobody left to write it. */
    pid_t stopped = -1;
    ck_assert_int_eq(osprey_wait_for_file(in_scratch("a/b/kept.raw.json"), 1000, &stopped), 0);
    ck_assert_int_eq(osprey_wait_for_file(in_scratch("never.raw.json"), 60000, &stopped), -ENOENT);
    ck_assert_int_eq(stopped, 0);

    ck_assert_int_eq(osprey_remove_tree(in_scratch("a")), 0);
    ck_assert_int_ne(access(in_scratch("a"), F_OK), 0);
}
END_TEST

START_TEST(parse_frequency)
{
    struct osprey_options options;
    PARSES(&options, 0, "osprey", "-F", "99", "prog.c", "--profile", "--", "-F", "5");
    ck_assert_uint_eq(options.frequency, 99);
    ck_assert_str_eq(options.program_args[0], "-F"); /* after --: the program's */
    PARSES(&options, 0, "osprey", "prog.c", "--profile", "-F10000");
    ck_assert_uint_eq(options.frequency, 10000);
    PARSES(&options, 0, "osprey", "prog.c", "--frequency=10", "--profile");
    ck_assert_uint_eq(options.frequency, 10);
    PARSES(&options, 0, "osprey", "prog.c", "--profile");
    ck_assert_uint_eq(options.frequency, 0);

    /* Out of range, not a number, missing: one line naming the range. */
    const char *bad[] = {"9", "10001", "50000", "abc", "99x", "-5", "", " 99"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = {"osprey", "prog.c", "--profile", "-F", (char *)bad[i], NULL};
        ck_assert_int_eq(parse(&options, argv), -EINVAL);
        ck_assert_msg(strstr(error, "from 10 to 10000 samples per second") != NULL, "%s: %s",
                      bad[i], error);
    }
    char *missing[] = {"osprey", "prog.c", "--profile", "--frequency", NULL};
    ck_assert_int_eq(parse(&options, missing), -EINVAL);
    ck_assert_ptr_nonnull(strstr(error, "'--frequency' needs a rate from 10 to 10000"));
    /* Meaningless without --profile, and for a recorded profile. */
    REFUSED("add --profile", "osprey", "prog.c", "-F", "99");
    char *report[] = {"osprey", "report", "p.raw.json", "-F", "99", NULL};
    ck_assert_int_eq(parse(&options, report), -EINVAL);
    ck_assert_ptr_nonnull(strstr(error, "'-F' belongs to 'osprey FILE --profile'"));
}
END_TEST

START_TEST(parse_command_help_and_typos)
{
    struct osprey_options options;
    const char *commands[] = {"report", "diff", "cache"};
    const enum osprey_command expected[] = {OSPREY_COMMAND_REPORT, OSPREY_COMMAND_DIFF,
                                            OSPREY_COMMAND_CACHE};
    for (size_t i = 0; i < 3; i++) {
        PARSES(&options, 0, "osprey", (char *)commands[i], "--help");
        ck_assert_int_eq(options.command, OSPREY_COMMAND_HELP);
        ck_assert_int_eq(options.help_for, expected[i]);
    }
    PARSES(&options, 0, "osprey", "--help");
    ck_assert_int_eq(options.help_for, OSPREY_COMMAND_RUN);

    REFUSED(NULL, "osprey", "reprot", "p.raw.json");
    ck_assert_str_eq(error, "unknown command 'reprot': did you mean 'osprey report'?");
    REFUSED(NULL, "osprey", "--profile", "dif");
    ck_assert_str_eq(error, "unknown command 'dif': did you mean 'osprey diff'?");
    /* mistakes inside a command point to its own help */
    char *missing[] = {"osprey", "report", NULL};
    ck_assert_int_eq(parse(&options, missing), -EINVAL);
    ck_assert_str_eq(error, "missing RAW file (try 'osprey report --help')");
    char *unknown[] = {"osprey", "diff", "a.raw.json", "b.raw.json", "--bogus", NULL};
    ck_assert_int_eq(parse(&options, unknown), -EINVAL);
    ck_assert_str_eq(error, "unknown option '--bogus' (try 'osprey diff --help')");
    ck_assert_str_eq(osprey_command_like("dif"), "diff");
    ck_assert_str_eq(osprey_command_like("cahce"), "cache");
    ck_assert_str_eq(osprey_command_like("repor"), "report");
    ck_assert_ptr_null(osprey_command_like("report")); /* the command itself */
    ck_assert_ptr_null(osprey_command_like("prog.c"));
    ck_assert_ptr_null(osprey_command_like("./repot"));
    ck_assert_ptr_null(osprey_command_like("ls"));
    ck_assert_ptr_null(osprey_command_like("hotspot"));
}
END_TEST

/* One table drives the commands: every row is found by its name, parsed as its own command,
 * listed by the help with its usage and paragraph, and reached by a near miss of its name. */
START_TEST(command_table_drives_parsing_help_and_typos)
{
    char *help = NULL;
    size_t help_size = 0;
    FILE *out = open_memstream(&help, &help_size);
    ck_assert_ptr_nonnull(out);
    osprey_print_help(out, OSPREY_COMMAND_RUN);
    fclose(out);
    ck_assert_ptr_nonnull(osprey_command_of(OSPREY_COMMAND_RUN));
    ck_assert_ptr_null(osprey_command_of(OSPREY_COMMAND_RUN)->name);
    ck_assert_ptr_null(osprey_command_of(OSPREY_COMMAND_HELP));
    ck_assert_uint_eq(osprey_command_count, 7);
    for (size_t i = 0; i < osprey_command_count; i++) {
        const struct osprey_command_row *row = &osprey_commands[i];
        ck_assert_ptr_eq(osprey_command_of(row->id), row);
        ck_assert_ptr_nonnull(row->run);
        ck_assert_ptr_nonnull(strstr(help, row->about));
        if (row->name == NULL)
            continue;
        ck_assert_ptr_eq(osprey_command_find(row->name), row);
        /* its usage line is in the help, and its own help is its usage first */
        char usage[64];
        snprintf(usage, sizeof usage, "osprey %s ", row->name);
        ck_assert_ptr_nonnull(strstr(help, usage));
        ck_assert_int_eq(strncmp(row->usage, "usage: ", 7), 0);
        ck_assert_ptr_nonnull(strstr(row->usage, usage));
        /* the word parses as the command: --help asks for its help */
        char help_word[] = "--help";
        char *argv[] = {"osprey", (char *)row->name, help_word, NULL};
        struct osprey_options options;
        char error[256];
        ck_assert_int_eq(osprey_parse_args(3, argv, &options, error, sizeof error), 0);
        ck_assert_int_eq(options.command, OSPREY_COMMAND_HELP);
        ck_assert_int_eq(options.help_for, row->id);
        /* a swap of its first two letters is a near miss of it, or of another command */
        char typo[32];
        snprintf(typo, sizeof typo, "%c%c%s", row->name[1], row->name[0], row->name + 2);
        ck_assert_ptr_nonnull(osprey_command_like(typo));
    }
    ck_assert_ptr_null(osprey_command_find("run"));
    ck_assert_ptr_null(osprey_command_find("reprot"));
    free(help);
}
END_TEST

/* Other tools' habits get the way forward: perf's and py-spy's -p PID, perf's record. */
START_TEST(other_tools_habits_get_a_way_forward)
{
    struct osprey_options options;
    static const char attach[] =
        "to profile the running process 1234, 'osprey attach 1234' (a live view: 'osprey top "
        "1234')";
    char *p[] = {"osprey", "-p", "1234", NULL};
    ck_assert_int_eq(parse(&options, p), -EINVAL);
    ck_assert_msg(strncmp(error, "unknown option '-p': ", 21) == 0 && strstr(error, attach), "%s",
                  error);
    REFUSED(NULL, "osprey", "-p1234");
    ck_assert_msg(strstr(error, attach) != NULL, "%s", error);
    REFUSED(NULL, "osprey", "--pid", "1234");
    ck_assert_msg(strstr(error, attach) != NULL, "%s", error);
    REFUSED(NULL, "osprey", "-p");
    ck_assert_msg(strstr(error, "'osprey attach PID'") != NULL, "%s", error);
    char *top[] = {"osprey", "top", "-p", "1234", NULL};
    ck_assert_int_eq(parse(&options, top), -EINVAL);
    ck_assert_str_eq(error, "'osprey top' takes the PID as it is: 'osprey top 1234'");
    /* a report's --pid is its own option, and -pthread no PID */
    PARSES(&options, 0, "osprey", "report", "r.raw.json", "--pid", "1234");
    ck_assert_str_eq(options.pid, "1234");
    REFUSED(NULL, "osprey", "prog.c", "-pthread");
    ck_assert_str_eq(error, "unknown option '-pthread' (try 'osprey --help')");

    char *record[] = {"osprey", "record", "./prog", NULL};
    ck_assert_int_eq(parse(&options, record), -EINVAL);
    ck_assert_str_eq(error, "unknown command 'record': to run and profile a program, 'osprey "
                            "./prog --profile'");
    REFUSED(NULL, "osprey", "record", "-g", "-F", "99", "--", "./prog", "x");
    ck_assert_str_eq(error, "unknown command 'record': to run and profile a program, 'osprey "
                            "./prog --profile -F 99 -- ARGS'");
    REFUSED(NULL, "osprey", "record", "-g", "-p", "77");
    ck_assert_str_eq(error, "unknown command 'record': to profile the running process 77, 'osprey "
                            "attach 77'");
}
END_TEST

START_TEST(output_place_checked)
{
    ck_assert_int_eq(osprey_check_output_place(in_scratch("stem"), error, sizeof error), 0);
    /* missing directories are created later: their existing ancestor is what counts */
    ck_assert_int_eq(osprey_check_output_place(in_scratch("new/deeper/stem"), error, sizeof error),
                     0);
    ck_assert_int_ne(access(in_scratch("new"), F_OK), 0); /* nothing made by the check */
    ck_assert_int_eq(mkdir(in_scratch("dir"), 0755), 0);
    ck_assert_int_eq(osprey_check_output_place(in_scratch("dir"), error, sizeof error), -EISDIR);
    ck_assert_ptr_nonnull(strstr(error, "dir: is a directory; -o takes a stem"));
    ck_assert_int_eq(mkdir(in_scratch("taken.raw.json"), 0755), 0);
    ck_assert_int_eq(osprey_check_output_place(in_scratch("taken"), error, sizeof error), -EISDIR);
    ck_assert_ptr_nonnull(strstr(error, "taken.raw.json: is a directory"));
    write_file("file", "x\n", 0644);
    ck_assert_int_eq(osprey_check_output_place(in_scratch("file/sub/stem"), error, sizeof error),
                     -ENOTDIR);
    ck_assert_ptr_nonnull(strstr(error, "file: not a directory"));
    /* an unwritable directory (root writes anywhere: then only the rest is checked) */
    ck_assert_int_eq(mkdir(in_scratch("locked"), 0555), 0);
    if (geteuid() != 0) {
        ck_assert_int_eq(
            osprey_check_output_place(in_scratch("locked/new/stem"), error, sizeof error), -EACCES);
        ck_assert_ptr_nonnull(
            strstr(error, "locked: cannot create the directories of the outputs at"));
    }
}
END_TEST

START_TEST(profile_kinds_are_recognised)
{
    static const struct {
        const char *name, *text;
        enum osprey_profile_kind kind;
        const char *said;
    } files[] = {
        {"p.raw.json", "{\"version\":1,\n\"pid\":5,\n\"rate_hz\":997,\n\"samples\":[]}",
         OSPREY_KIND_RAW, NULL},
        {"p.speedscope.json",
         "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{}}",
         OSPREY_KIND_SPEEDSCOPE, "this is a speedscope file; open it in speedscope"},
        {"p.cpuprofile", "{\"nodes\":[{\"id\":1,\"callFrame\":{}}],\"startTime\":0}",
         OSPREY_KIND_CPUPROFILE, "this is a Chrome .cpuprofile"},
        {"p.trace.json", "{\"traceEvents\":[\n]}", OSPREY_KIND_TRACE, "this is a Chrome trace"},
        {"p.profile.json", "{\n  \"version\": 1,\n  \"totals\": {\"rate_hz\": 997}\n}",
         OSPREY_KIND_SUMMARY, "this is the summary JSON"},
        {"p.folded", "fiber-0;main;work 12\nfiber-0;main 3\n", OSPREY_KIND_FOLDED,
         "this is a folded-stacks file"},
        {"p.offcpu.folded", "", OSPREY_KIND_FOLDED, "this is a folded-stacks file"},
        {"p.pb.gz", "\x1f\x8b\x08\x00", OSPREY_KIND_PPROF, "this is a pprof profile"},
        {"p.html", "<!DOCTYPE html>\n<html>", OSPREY_KIND_HTML, "flame-graph page"},
        {"notes.txt", "hello there\n", OSPREY_KIND_UNKNOWN, NULL},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        write_file(files[i].name, files[i].text, 0644);
        ck_assert_msg(osprey_profile_kind(in_scratch(files[i].name)) == files[i].kind, "%s",
                      files[i].name);
        char said[2048] = "";
        int rc = osprey_describe_kind(in_scratch(files[i].name), files[i].kind, said, sizeof said);
        if (files[i].said == NULL) {
            ck_assert_int_eq(rc, -ENOENT);
            continue;
        }
        ck_assert_int_eq(rc, 0);
        ck_assert_msg(strstr(said, files[i].said) != NULL, "%s", said);
        /* the raw file beside it is named */
        ck_assert_msg(strstr(said, in_scratch("p.raw.json")) != NULL, "%s", said);
    }
    enum osprey_file_kind kind;
    char resolved[512];
    ck_assert_int_eq(osprey_classify_file(in_scratch("p.raw.json"), &kind, resolved,
                                          sizeof resolved, error, sizeof error),
                     -EACCES);
    ck_assert_ptr_nonnull(strstr(error, "a raw profile, not a program: did you mean 'osprey "
                                        "report "));
}
END_TEST

/* ---- osprey top: the window and the screen (tools/top-window.c) ---- */

/* Stacks of function indices, leaf first: 0 = hot <- main, 1 = warm <- main,
 * 2 = recurse <- recurse <- main (a function counted once per sample). */
static const uint32_t top_stack_hot[] = {0, 3}, top_stack_warm[] = {1, 3},
                      top_stack_recurse[] = {2, 2, 3};

static size_t top_stacks(void *context, uint32_t stack, const uint32_t **functions)
{
    (void)context;
    static const uint32_t *const stacks[] = {top_stack_hot, top_stack_warm, top_stack_recurse};
    static const size_t depths[] = {2, 2, 3};
    if (stack >= 3)
        return 0;
    *functions = stacks[stack];
    return depths[stack];
}

#define SECOND UINT64_C(1000000000)

static void top_add(struct osprey_top_window *w, uint64_t t_ns, uint32_t stack, uint32_t weight,
                    uint8_t state)
{
    struct osprey_top_sample sample = {t_ns, stack, weight, state, 0};
    ck_assert_int_eq(osprey_top_window_add(w, &sample), 0);
}

/* The screen of process 4242 (server) sampled at 100 Hz over a second, its functions' names
 * and locations given; the rest for the test to fill. */
static struct osprey_top_screen server_screen(const char *const *names,
                                              const char *const *locations)
{
    return (struct osprey_top_screen){.pid = 4242,
                                      .command = "server",
                                      .rate_hz = 100,
                                      .seconds = 1.0,
                                      .names = names,
                                      .locations = locations,
                                      .line_end = "\n"};
}

/* The screen drawn (malloc'd), the lines it took into *lines. */
static char *screen_text(const struct osprey_top_screen *screen, size_t *lines)
{
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    *lines = osprey_top_render(out, screen);
    fclose(out);
    return text;
}

/* A row of the top table: its function and self periods. */
static void expect_top_row(const struct osprey_top_row *row, uint32_t function, uint64_t self)
{
    ck_assert_uint_eq(row->function, function);
    ck_assert_uint_eq(row->self, self);
}

/* A row of the threads view: its thread, on-CPU periods and hottest function. */
static void expect_thread_row(const struct osprey_top_thread_row *row, uint32_t thread,
                              uint64_t on_cpu, uint32_t hottest)
{
    ck_assert_uint_eq(row->thread, thread);
    ck_assert_uint_eq(row->on_cpu, on_cpu);
    ck_assert_uint_eq(row->hottest, hottest);
}

/* Sorted by total, main (in every stack) leads; per thread, each thread's time and its
 * hottest leaf, the busiest thread first. */
START_TEST(top_sorts_by_total_and_adds_up_threads)
{
    struct osprey_top_window w = {.span_ns = 5 * SECOND};
    const struct osprey_top_sample samples[] = {
        {1 * SECOND, 0, 5, 0, 1}, /* thread 1: hot 5 */
        {1 * SECOND, 1, 2, 0, 1}, /* thread 1: warm 2 */
        {2 * SECOND, 1, 3, 0, 0}, /* thread 0: warm 3 */
        {2 * SECOND, 0, 7, 1, 0}, /* thread 0: waiting 7 */
        {2 * SECOND, 0, 4, 1, 2}, /* thread 2: waiting only */
    };
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
        ck_assert_int_eq(osprey_top_window_add(&w, &samples[i]), 0);
    struct osprey_top_row *rows;
    size_t count;
    struct osprey_top_totals totals;
    ck_assert_int_eq(
        osprey_top_aggregate(&w, 3 * SECOND, 4, top_stacks, NULL, &rows, &count, &totals), 0);
    ck_assert_uint_eq(count, 3);
    ck_assert_uint_eq(rows[0].function, 0); /* by self: hot 5, warm 5 (index), main 0 */
    osprey_top_sort(rows, count, OSPREY_TOP_BY_TOTAL);
    ck_assert_uint_eq(rows[0].function, 3); /* main: total 10 */
    ck_assert_uint_eq(rows[0].total, 10);
    osprey_top_sort(rows, count, OSPREY_TOP_BY_SELF);
    ck_assert_uint_eq(rows[0].function, 0);
    free(rows);

    struct osprey_top_thread_row *threads;
    ck_assert_int_eq(osprey_top_threads(&w, 3 * SECOND, 4, top_stacks, NULL, &threads, &count), 0);
    ck_assert_uint_eq(count, 3);
    expect_thread_row(&threads[0], 1, 7, 0);
    expect_thread_row(&threads[1], 0, 3, 1);
    expect_thread_row(&threads[2], 2, 0, UINT32_MAX);
    ck_assert_uint_eq(threads[1].waiting, 7);

    /* the threads view and the keys: their names on the screen, the view in the header */
    static const char *const names[] = {"hot", "warm", "recurse", "main"};
    static const char *const locations[] = {"hot.c", "warm.c", "recurse.c", "main.c"};
    static const int32_t tids[] = {4242, 4243, 4244};
    static const char *const labels[] = {"main", "worker", "sleeper"};
    struct osprey_top_screen screen = server_screen(names, locations);
    screen.totals = (struct osprey_top_totals){10, 11, 5};
    screen.width = 100;
    screen.height = 30;
    screen.view = OSPREY_TOP_THREADS;
    screen.paused = 1;
    screen.threads = threads;
    screen.thread_row_count = count;
    screen.tids = tids;
    screen.thread_labels = labels;
    screen.thread_count = 3;
    size_t lines;
    char *text = screen_text(&screen, &lines);
    ck_assert_uint_eq(lines, 7); /* 3 of header, titles, 3 threads */
    ck_assert_ptr_nonnull(strstr(text, "threads  PAUSED"));
    ck_assert_ptr_nonnull(strstr(text, "    7%   0.0%     4243  worker           hot"));
    ck_assert_ptr_nonnull(strstr(text, "    3%  70.0%     4242  main             warm"));
    ck_assert_ptr_nonnull(strstr(text, "    0% 100.0%     4244  sleeper          -"));
    free(text);
    screen.view = OSPREY_TOP_HELP;
    text = screen_text(&screen, &lines);
    ck_assert_ptr_nonnull(strstr(text, "by TOTAL%"));
    ck_assert_ptr_nonnull(strstr(text, "pause"));
    free(text);
    free(threads);
    osprey_top_window_free(&w);
}
END_TEST

START_TEST(top_window_counts_the_last_seconds)
{
    struct osprey_top_window w = {.span_ns = 5 * SECOND};
    top_add(&w, 1 * SECOND, 1, 100, 0);  /* left the window at 7 s */
    top_add(&w, 3 * SECOND, 0, 6, 0);    /* in */
    top_add(&w, 6 * SECOND, 1, 2, 0);    /* in */
    top_add(&w, 6 * SECOND, 2, 3, 0);    /* in: recurse once, though twice on the stack */
    top_add(&w, 6 * SECOND, 0, 4, 1);    /* waiting: in the header, not the table */
    top_add(&w, 8 * SECOND, 1, 50, 0);   /* after now: not yet */
    top_add(&w, 2 * SECOND, 1, 1000, 0); /* exactly 5 s before now: out */
    struct osprey_top_row *rows;
    size_t count;
    struct osprey_top_totals totals;
    ck_assert_int_eq(
        osprey_top_aggregate(&w, 7 * SECOND, 4, top_stacks, NULL, &rows, &count, &totals), 0);
    ck_assert_uint_eq(totals.on_cpu, 11);
    ck_assert_uint_eq(totals.waiting, 4);
    ck_assert_uint_eq(totals.samples, 4);
    ck_assert_uint_eq(count, 4);
    /* by self, then total: hot 6, recurse 3, warm 2, main 0 (total 11) */
    expect_top_row(&rows[0], 0, 6);
    expect_top_row(&rows[1], 2, 3);
    expect_top_row(&rows[2], 1, 2);
    expect_top_row(&rows[3], 3, 0);
    ck_assert_uint_eq(rows[1].total, 3);
    ck_assert_uint_eq(rows[3].total, 11);
    free(rows);

    /* Advancing forgets what left; what is still in stays. */
    osprey_top_window_advance(&w, 7 * SECOND);
    ck_assert_uint_eq(w.count, 5);
    osprey_top_window_advance(&w, 12 * SECOND);
    ck_assert_uint_eq(w.count, 1); /* the sample at 8 s */
    ck_assert_int_eq(
        osprey_top_aggregate(&w, 12 * SECOND, 4, top_stacks, NULL, &rows, &count, &totals), 0);
    ck_assert_uint_eq(totals.on_cpu, 50);
    ck_assert_uint_eq(count, 2);
    ck_assert_uint_eq(rows[0].function, 1);
    free(rows);
    osprey_top_window_free(&w);
}
END_TEST

/* Display columns of a line (one per code point), its escapes left out. */
static size_t top_columns(const char *line)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)line; *p != '\0'; p++) {
        if (*p == '\033') {
            while (*p != '\0' && *p != 'm')
                p++;
            continue;
        }
        n += (*p & 0xC0) != 0x80;
    }
    return n;
}

static char *top_draw_over(double seconds, size_t width, size_t height, int color, size_t *lines)
{
    static const char *const names[] = {"hot_function_with_a_rather_long_name_indeed", "warm",
                                        "recurse", "main"};
    static const char *const locations[] = {"/some/deep/directory/of/sources/hot.c", "warm.c",
                                            "recurse.c", "main.c"};
    static const struct osprey_top_row rows[] = {{0, 60, 60}, {2, 30, 30}, {1, 9, 9}, {3, 1, 100}};
    struct osprey_top_screen screen = server_screen(names, locations);
    screen.seconds = seconds;
    screen.totals = (struct osprey_top_totals){100, 0, 100};
    screen.rows = rows;
    screen.row_count = 4;
    screen.width = width;
    screen.height = height;
    screen.color = color;
    return screen_text(&screen, lines);
}

static char *top_draw(size_t width, size_t height, int color, size_t *lines)
{
    return top_draw_over(1.0, width, height, color, lines);
}

START_TEST(top_window_under_a_second)
{
    /* The first refreshes cover less than a second: said in tenths, not "last 0 s". */
    size_t lines;
    char *text = top_draw_over(0.4, 120, 30, 0, &lines);
    ck_assert_ptr_nonnull(strstr(text, "last 0.4 s: 100 samples"));
    free(text);
    text = top_draw_over(5.0, 120, 30, 0, &lines);
    ck_assert_ptr_nonnull(strstr(text, "last 5 s: 100 samples"));
    free(text);
}
END_TEST

START_TEST(top_screen_fits_the_terminal)
{
    size_t lines;
    char *text = top_draw(120, 30, 0, &lines);
    ck_assert_uint_eq(lines, 8); /* 4 of header, 4 rows */
    ck_assert_ptr_nonnull(strstr(text, "pid 4242 (server)"));
    ck_assert_ptr_nonnull(strstr(text, "100 Hz"));
    ck_assert_ptr_nonnull(strstr(text, "CPU 100% of a core"));
    ck_assert_ptr_nonnull(
        strstr(text, " 60.0%   60.0%  hot_function_with_a_rather_long_name_indeed"));
    ck_assert_ptr_null(strchr(text, '\033'));
    /* in order: hot, recurse, warm, main */
    char *hot = strstr(text, "hot_function"), *recurse = strstr(text, "recurse  "),
         *warm = strstr(text, "warm  "), *main_row = strstr(text, "  main  ");
    ck_assert(hot != NULL && recurse != NULL && warm != NULL && main_row != NULL);
    ck_assert(hot < recurse && recurse < warm && warm < main_row);
    free(text);

    /* 6 rows of terminal: 5 lines, so 1 row of the table. */
    text = top_draw(120, 6, 0, &lines);
    ck_assert_uint_eq(lines, 5);
    ck_assert_ptr_nonnull(strstr(text, "hot_function"));
    ck_assert_ptr_null(strstr(text, "recurse"));
    free(text);

    /* 40 columns: every line fits, the name cut in its middle, the location at its start. */
    text = top_draw(40, 30, 1, &lines);
    ck_assert_uint_eq(lines, 8);
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n"))
        ck_assert_msg(top_columns(line) <= 40, "wider than 40: %s", line);
    free(text);
    text = top_draw(40, 30, 1, &lines);
    ck_assert_ptr_nonnull(strstr(text, "…"));
    ck_assert_ptr_nonnull(strstr(text, "\033[1;31m")); /* the report's hot colour */
    ck_assert_ptr_null(strstr(text, "/some/deep"));
    free(text);
}
END_TEST

START_TEST(parse_top)
{
    struct osprey_options o;
    char error[256];
    char *ok[] = {"osprey", "top", "4242", "-F", "99", "--interval", "0.5", NULL};
    ck_assert_int_eq(osprey_parse_args(7, ok, &o, error, sizeof error), 0);
    ck_assert_int_eq(o.command, OSPREY_COMMAND_TOP);
    ck_assert_str_eq(o.file, "4242");
    ck_assert_uint_eq(o.frequency, 99);
    ck_assert(o.interval == 0.5);
    char *no_pid[] = {"osprey", "top", "abc", NULL};
    ck_assert_int_eq(osprey_parse_args(3, no_pid, &o, error, sizeof error), -EINVAL);
    ck_assert_str_eq(error, "'abc' is not a process id");
    char *files[] = {"osprey", "top", "1", "-o", "x", NULL};
    ck_assert_int_eq(osprey_parse_args(5, files, &o, error, sizeof error), -EINVAL);
    ck_assert_ptr_nonnull(strstr(error, "'osprey top' has no option '-o'"));
    char *missing[] = {"osprey", "top", NULL};
    ck_assert_int_eq(osprey_parse_args(2, missing, &o, error, sizeof error), -EINVAL);
    ck_assert_str_eq(error, "missing PID (try 'osprey top --help')");
}
END_TEST

/* The stream's thread records and the sample's thread field; a first version's sample line
 * (no thread) still read; nothing kept while paused (no window, no clock). */
START_TEST(top_stream_names_the_threads)
{
    struct osprey_top_symbols *symbols = osprey_top_symbols_new();
    ck_assert_ptr_nonnull(symbols);
    struct osprey_top_window w = {.span_ns = 5 * SECOND};
    uint64_t now = 0;
    int ended = 0;
    char how[32] = "";
    const char *lines[] = {"thread 0 4242 main",
                           "thread 1 4243 io worker",
                           "thread 5 1 skipped",
                           "stack 0 1000",
                           "sample 10 0 0 1 1",
                           "sample 11 0 1 2",
                           "flush 20"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_int_eq(
            osprey_top_symbols_line(symbols, lines[i], &w, &now, &ended, how, sizeof how), 0);
    const int32_t *tids;
    const char *const *labels;
    ck_assert_uint_eq(osprey_top_symbols_threads(symbols, &tids, &labels), 2);
    ck_assert_int_eq(tids[1], 4243);
    ck_assert_str_eq(labels[1], "io worker"); /* the rest of the line, spaces and all */
    ck_assert_uint_eq(w.count, 2);
    ck_assert_uint_eq(w.samples[0].thread, 1);
    ck_assert_uint_eq(w.samples[1].thread, UINT32_MAX); /* no thread field: none known */
    ck_assert_uint_eq(w.samples[1].weight, 2);
    ck_assert_uint_eq(now, 20);
    ck_assert_uint_eq(osprey_top_symbols_stack_count(symbols), 1);
    /* paused: the stream still read (stacks kept), its samples and clock not */
    ck_assert_int_eq(
        osprey_top_symbols_line(symbols, "sample 30 0 0 1 0", NULL, NULL, &ended, how, sizeof how),
        0);
    ck_assert_int_eq(
        osprey_top_symbols_line(symbols, "stack 1 2000", NULL, NULL, &ended, how, sizeof how), 0);
    ck_assert_int_eq(
        osprey_top_symbols_line(symbols, "flush 40", NULL, NULL, &ended, how, sizeof how), 0);
    ck_assert_uint_eq(w.count, 2);
    ck_assert_uint_eq(now, 20);
    ck_assert_uint_eq(osprey_top_symbols_stack_count(symbols), 2);
    osprey_top_window_free(&w);
    osprey_top_symbols_free(symbols);
}
END_TEST

START_TEST(parse_dump)
{
    struct osprey_options o;
    char error[256];
    char *ok[] = {"osprey", "dump", "4242", "--duration", "2.5", NULL};
    ck_assert_int_eq(osprey_parse_args(5, ok, &o, error, sizeof error), 0);
    ck_assert_int_eq(o.command, OSPREY_COMMAND_DUMP);
    ck_assert_str_eq(o.file, "4242");
    ck_assert(o.duration == 2.5);
    char *files[] = {"osprey", "dump", "1", "-o", "x", NULL};
    ck_assert_int_eq(osprey_parse_args(5, files, &o, error, sizeof error), -EINVAL);
    ck_assert_ptr_nonnull(strstr(error, "'osprey dump' has no option '-o'"));
    char *long_look[] = {"osprey", "dump", "1", "--duration", "600", NULL};
    ck_assert_int_eq(osprey_parse_args(5, long_look, &o, error, sizeof error), -EINVAL);
    ck_assert_str_eq(error, "'osprey dump' looks from 0.1 to 60 seconds (--duration)");
    char *missing[] = {"osprey", "dump", NULL};
    ck_assert_int_eq(osprey_parse_args(2, missing, &o, error, sizeof error), -EINVAL);
    ck_assert_str_eq(error, "missing PID (try 'osprey dump --help')");
    ck_assert_str_eq(osprey_command_like("dupm"), "dump");
}
END_TEST

Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    SUITE_CASE(s, "parsing", 0, parse_run_with_everything, parse_option_spellings,
               parse_help_and_version, parse_report, parse_report_views_and_diff,
               other_tools_habits_get_a_way_forward, parse_symbols_options_and_cache,
               parse_errors_name_the_problem, default_stems, parse_frequency,
               parse_command_help_and_typos, command_table_drives_parsing_help_and_typos);
    TCase *files = SUITE_CASE(s, "files", 0, classify_files, classify_bare_name_searches_path,
                              locate_in_build_tree_and_installed, file_helpers,
                              output_place_checked, profile_kinds_are_recognised);
    tcase_add_checked_fixture(files, scratch_setup, scratch_teardown);
    TCase *running =
        SUITE_CASE(s, "running", 120, environment_for_the_program, run_passes_exit_codes_through,
                   run_reports_what_cannot_start, run_forwards_sigterm_to_the_child,
                   compile_success_and_failure, static_executables_are_recognised,
                   privileged_executables_are_recognised);
    tcase_add_checked_fixture(running, scratch_setup, scratch_teardown);
    SUITE_CASE(s, "top", 0, parse_top, parse_dump, top_stream_names_the_threads,
               top_window_counts_the_last_seconds, top_sorts_by_total_and_adds_up_threads,
               top_screen_fits_the_terminal, top_window_under_a_second);
    return s;
}
