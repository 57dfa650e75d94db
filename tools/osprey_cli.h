/* osprey_cli.h — the pieces of the `osprey` command, kept apart from main() so the unit suite
 * (tests/test-cli.c) can drive them: argument parsing, locating the shim and the daemon,
 * building a C file for profiling, running a child with signals forwarded, and the small
 * file helpers the pipeline needs.
 *
 * Errors: functions return 0 or a negative errno; where a message is useful they also fill
 * a caller's buffer with one line (no "osprey: " prefix, no trailing newline).
 */
#ifndef OSPREY_CLI_H
#define OSPREY_CLI_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit codes of the CLI itself (the program's own exit code passes through otherwise). */
#define OSPREY_EXIT_FAILURE 1 /* post-processing of `osprey report` failed, build failed */
#define OSPREY_EXIT_USAGE   2 /* bad arguments, a file that cannot be built or run */

/* The sampling rates the shim accepts (samples per second per thread); -F outside them is a
 * usage error, OSPREY_PROFILE_HZ outside them is clamped by the shim. */
#define OSPREY_MIN_HZ 10
#define OSPREY_MAX_HZ 10000

enum osprey_command {
    OSPREY_COMMAND_RUN,     /* osprey FILE [--run] [--profile [-F N]] [-o STEM] [-- ARGS...] */
    OSPREY_COMMAND_REPORT,  /* osprey report RAW [--binary PATH] [-o STEM] [view options] */
    OSPREY_COMMAND_DIFF,    /* osprey diff BASE NEW [--binary PATH] [-o STEM] [--top N] */
    OSPREY_COMMAND_CACHE,   /* osprey cache [prune] [--max-size SIZE] */
    OSPREY_COMMAND_ATTACH,  /* osprey attach PID [--duration S] [-F N] [-o STEM] [--format L] */
    OSPREY_COMMAND_TOP,     /* osprey top PID [-F N] [--interval S] */
    OSPREY_COMMAND_DUMP,    /* osprey dump PID [--duration S] [-F N] */
    OSPREY_COMMAND_HELP,    /* --help / -h; help_for says of which command */
    OSPREY_COMMAND_VERSION, /* --version / -V */
};

/* The most RAW files `osprey report` takes at once (a run's others beside them come too). */
#define OSPREY_MAX_RAW_FILES 64

struct osprey_options {
    enum osprey_command command;
    enum osprey_command help_for; /* HELP: the command whose help (RUN: the whole text) */
    const char *file;    /* FILE (run), RAW (report) or PID (attach, top, dump); from argv */
    int profile;         /* --profile (implies running) */
    unsigned frequency;  /* -F N / --frequency N: OSPREY_PROFILE_HZ for the program; 0: unset */
    double duration;     /* --duration SECONDS: profile this long, then report; 0: to the end */
    double interval;     /* top: --interval SECONDS between refreshes; 0: 1 s */
    const char *stem;    /* -o STEM; NULL: the default stem */
    const char *binary;  /* --binary PATH (report only); NULL: none */
    char **program_args; /* arguments after `--`, borrowed from argv; NULL-terminated */
    int program_argc;
    const char *file2;   /* diff: NEW (file is BASE) */
    const char *formats; /* --format LIST: the outputs to write; NULL: all */
    /* report's view: --top N (0: 10), --fiber F, --focus RE, --ignore RE, --inverted,
     * --list RE */
    size_t top;
    const char *fiber, *focus, *ignore, *list;
    int inverted;
    /* report: --pid LIST, --comm LIST (the processes of a run to keep), --per-process */
    const char *pid, *comm;
    int per_process;
    /* report and a profiled run: --merge-processes (one row per command, not per pid) */
    int merge_processes;
    /* report: every RAW given (files[0] is `file`); more than one are one run, merged */
    const char *files[OSPREY_MAX_RAW_FILES];
    size_t file_count;
    const char *symfs;   /* --symfs DIR[:DIR...] (report, diff): where moved objects are found */
    int ignore_build_id; /* --ignore-build-id (report, diff): use another build, marked */
    /* cache: "prune" or NULL (list); --max-size SIZE (NULL: the cache's bound) */
    const char *cache_action, *max_size;
};

/* Parse argv (argv[0] is the CLI's own name). On success fills *out and returns 0; on a
 * usage error returns -EINVAL and writes one line into error. */
int osprey_parse_args(int argc, char **argv, struct osprey_options *out, char *error,
                      size_t error_size);

/* The command table (commands.c): one row per command, from which the parsing recognizes
 * the command word, the help is printed, a typo finds its command and main() dispatches. A
 * command is a row looked up by name (or by its id), never by its position. */
enum {
    OSPREY_TAKES_PID = 1u << 0, /* osprey NAME PID: a running process, no program */
    OSPREY_READS_RAW = 1u << 1, /* osprey NAME RAW...: raw profiles, not a program */
    OSPREY_PROFILES = 1u << 2,  /* profiling is what it does: --duration and -F apply */
    OSPREY_OWN_WORDS = 1u << 3, /* its words after the name are its own (osprey cache prune) */
};
struct osprey_command_row {
    const char *name;       /* the word after `osprey`; NULL: `osprey FILE` (run) */
    enum osprey_command id; /* what struct osprey_options says was asked */
    unsigned flags;         /* OSPREY_TAKES_PID, ... */
    const char *usage;      /* its "usage: osprey ..." lines */
    const char *about;      /* the paragraph its help opens with */
    int (*run)(const struct osprey_options *options); /* its exit status */
};
extern const struct osprey_command_row osprey_commands[];
extern const size_t osprey_command_count;

/* The row named `name` ("report"), or NULL when no command has that name. */
const struct osprey_command_row *osprey_command_find(const char *name);
/* The row of command id (never NULL for RUN to DUMP; NULL for HELP and VERSION). */
const struct osprey_command_row *osprey_command_of(enum osprey_command id);

/* The command `word` is a typo of ("report" for "reprot"), or NULL when it is none's. */
const char *osprey_command_like(const char *word);

/* The help of `command` on out (OSPREY_COMMAND_RUN: the whole text, every command's); help.c. */
void osprey_print_help(FILE *out, enum osprey_command command);

/* What `osprey FILE` was given. */
enum osprey_file_kind {
    OSPREY_FILE_C_SOURCE,   /* .c: built with clang */
    OSPREY_FILE_CXX_SOURCE, /* .cc .cpp .cxx: built with clang++ */
    OSPREY_FILE_EXECUTABLE, /* a regular file we may execute */
};

/* Classify file. A name without a slash that is not in the current directory is looked up
 * on PATH, like a shell would; the path to use is written into resolved. Returns 0, or
 * -errno with one line in error ("FILE: is a directory", "FILE: not a C source (.c) and
 * not executable", ...). */
int osprey_classify_file(const char *file, enum osprey_file_kind *kind, char *resolved,
                         size_t resolved_size, char *error, size_t error_size);

/* What a file of a profile is, from its first bytes (kinds.c): the raw profile `osprey report`
 * takes, or one of the outputs made from it. */
enum osprey_profile_kind {
    OSPREY_KIND_UNKNOWN, /* none of these (or unreadable): the caller's own checks apply */
    OSPREY_KIND_RAW,
    OSPREY_KIND_SPEEDSCOPE,
    OSPREY_KIND_CPUPROFILE,
    OSPREY_KIND_TRACE,
    OSPREY_KIND_SUMMARY, /* STEM.profile.json */
    OSPREY_KIND_FOLDED,
    OSPREY_KIND_PPROF,
    OSPREY_KIND_HTML,
};
enum osprey_profile_kind osprey_profile_kind(const char *path);

/* One line for an output given where the raw profile belongs: "PATH: this is a speedscope
 * file; open it in speedscope (...), or give osprey report the raw profile: STEM.raw.json".
 * Returns 0, or -ENOENT for OSPREY_KIND_UNKNOWN and OSPREY_KIND_RAW (nothing to say). */
int osprey_describe_kind(const char *path, enum osprey_profile_kind kind, char *out, size_t size);

/* Before anything runs: can the outputs at stem be written? Its directory must exist and be
 * writable, or be creatable (its nearest existing ancestor a writable directory); stem and
 * STEM.raw.json must not be directories. Returns 0, or -errno with one line naming the path
 * and the problem in error. */
int osprey_check_output_place(const char *stem, char *error, size_t error_size);

/* 1 when path is a 64-bit ELF executable without a program interpreter: statically
 * linked, so LD_PRELOAD cannot load the profiler into it. 0 otherwise (also for scripts,
 * and for anything it cannot read). */
int osprey_is_static_elf(const char *path);

/* 1 when running path raises the caller's privileges — set-user-ID or set-group-ID to
 * another user or group, or file capabilities for a user other than root — so that the
 * loader runs it in secure mode and ignores LD_PRELOAD: the program runs unprofiled. how
 * gets "set-user-ID root", "set-group-ID shadow" or "given capabilities by the file". 0
 * otherwise (also where the bits are not honoured: a nosuid mount, no_new_privs). */
int osprey_gains_privileges(const char *path, char *how, size_t how_size);

/* Look a bare command name up on PATH, like execvp would. Returns 0 and the path in
 * resolved when an executable regular file is found, -ENOENT otherwise. */
int osprey_find_on_path(const char *name, char *resolved, size_t size);

/* Where the installed or built pieces live. */
struct osprey_paths {
    char shim_archive[PATH_MAX]; /* libospreyprof.a: linked into built C files */
    char shim_preload[PATH_MAX]; /* libospreyprof.so: LD_PRELOAD for executables */
    char daemon[PATH_MAX];       /* ospreyd */
    char include_dir[PATH_MAX];  /* holds osprey_prof.h */
    int build_tree;              /* 1: found relative to a build tree, 0: installed paths */
};

/* Locate the pieces from the CLI's own executable path: in a build tree
 * (<build>/tools/osprey) they sit at <build>/shim/ and <build>/daemon/ and the header in the
 * source tree; otherwise the configured install paths are used. Never fails: the caller
 * checks the pieces it needs with osprey_paths_check(). */
void osprey_locate(const char *self_exe, struct osprey_paths *out);

/* Check that what a run needs exists: the archive when building with the shim, the preload
 * library when preloading, the daemon whenever profiling. Returns 0 or -ENOENT with a line
 * naming the missing file in error. */
int osprey_paths_check(const struct osprey_paths *paths, int need_archive, int need_preload,
                       char *error, size_t error_size);

/* Build a C or C++ source into output with clang in the profile build mode (-O2 -g, frame
 * pointers in every function including leaves, -pthread), linking the shim archive with
 * --whole-archive when shim_archive is not NULL. clang's diagnostics go to our stderr. On
 * return *exit_code is clang's exit code (128+N when it died by signal N). Returns 0 when
 * clang ran, -errno when it could not be started (-ENOENT: not installed). */
int osprey_compile(enum osprey_file_kind kind, const char *source, const char *output,
                   const char *shim_archive, const char *include_dir, int *exit_code);

/* Spawn path with argv and envp, stdio inherited, and wait for it. While waiting, SIGINT and
 * SIGTERM sent to this process by another process are forwarded to the child (a Ctrl-C from
 * the terminal already reaches the child through the process group and is not repeated).
 * Returns 0 and the raw wait status in *wait_status, or -errno when the child could not be
 * started (-ENOENT, -EACCES, -ENOEXEC...). */
int osprey_run_child(const char *path, char *const argv[], char *const envp[], int *wait_status);
/* The same, and once `after_seconds` (> 0) have passed while the child runs, calls
 * at_deadline(ctx) every 20 ms until it returns nonzero (or the child ends), then waits on. */
int osprey_run_child_until(const char *path, char *const argv[], char *const envp[],
                           int *wait_status, double after_seconds, int (*at_deadline)(void *),
                           void *ctx);
/* The process id of the last child osprey_run_child started (0 before any). */
pid_t osprey_last_child(void);

/* The exit code a shell would report for a wait status: the exit code, or 128+N when the
 * child was killed by signal N. */
int osprey_exit_code(int wait_status);

/* A copy of envp with name set to value (replacing an earlier definition). When prepend is
 * non-zero and name is already set, the result is "value:old" (for LD_PRELOAD). Returns a
 * NULL-terminated array owned by the caller (osprey_env_free), or NULL when out of memory. */
char **osprey_env_set(char *const envp[], const char *name, const char *value, int prepend);
void osprey_env_free(char **envp);

/* What the waits below return once a collector of the run, re-parented to us, has been stopped
 * (SIGSTOP) for a second: it writes nothing until it is continued. */
#define OSPREY_COLLECTOR_STOPPED 1
/* After the program exited: wait until path exists (ospreyd writes it with a rename, so it
 * exists only when complete). While it is missing, reap descendants that were re-parented
 * to us (we are a child subreaper) and stop early once none are left. Returns 0 when the
 * file exists, -ENOENT when no writer is left, OSPREY_COLLECTOR_STOPPED (*stopped its pid),
 * -ETIMEDOUT after timeout_ms. */
int osprey_wait_for_file(const char *path, int timeout_ms, pid_t *stopped);
/* The run's lock (OSP_RUN_LOCK in proto/osp_ring.h) in the scratch directory: made before the
 * program starts; every collector of the run holds it shared while it lives. */
int osprey_make_run_lock(const char *scratch);
/* Until every collector of the run has ended (the lock taken exclusively): 0,
 * OSPREY_COLLECTOR_STOPPED (*stopped its pid), or -ETIMEDOUT after timeout_ms. 0 without a
 * lock. */
int osprey_wait_for_collectors(const char *scratch, int timeout_ms, pid_t *stopped);

/* Default output stem for `osprey FILE`: "./<name>" where name is FILE's basename without a
 * source extension. For `osprey report RAW`: RAW without ".raw.json" or ".json". */
void osprey_default_run_stem(const char *file, char *stem, size_t size);
void osprey_default_report_stem(const char *raw, char *stem, size_t size);

/* The stem the outputs are written to: -o STEM, or the command's default. */
void osprey_output_stem(const struct osprey_options *options, char *stem, size_t size);

/* Create the parent directories of path (like mkdir -p on its dirname). Returns 0 or
 * -errno. */
int osprey_make_parent_dirs(const char *path);

/* Copy (or, on the same file system, move) source to destination atomically: a temporary
 * file beside destination, then rename. Returns 0 or -errno. */
int osprey_move_file(const char *source, const char *destination);

/* Remove a directory and everything inside it (one level of nesting is all a scratch
 * directory holds, but deeper trees are handled). Returns 0 or -errno. */
int osprey_remove_tree(const char *path);

#endif /* OSPREY_CLI_H */
