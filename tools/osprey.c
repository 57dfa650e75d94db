/* osprey.c — the `osprey` command: main(), and the two pipelines it runs.
 *
 *   osprey FILE [--run] [--profile] [-o STEM] [-- ARGS...]
 *     build FILE if it is a source (clang, profile build mode) into a scratch directory, run
 *     it (under the preload shim if it is an executable and we profile), pass its output and
 *     exit code through, then turn the raw profile into the outputs and the report.
 *   osprey report RAW [--binary PATH] [-o STEM]
 *     the same post-processing for a raw profile made elsewhere.
 *
 * The program is what matters: whatever goes wrong in the profiling, its exit code comes
 * back unchanged, and what was lost is one "osprey: warning:" line.
 */
#include <dirent.h>
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
#include "ospc_version.h"
#include "osprey_cli.h"
#include "osprey_config.h"
#include "osprey_top.h"
#include "ospx.h"

/* How long to wait, after the program ended, for ospreyd to finish the raw file while it
 * is still running (it writes what it has when the program was killed). */
#define RAW_WAIT_MS 15000
/* And for the other processes' collectors once the first raw file is there. */
#define COLLECTORS_WAIT_MS 10000

/* The help, one row per part, each marked with the commands whose help shows it: `osprey
 * --help` prints every row, `osprey report --help` those of report. A row starting "usage:"
 * is a usage line (the first one printed keeps the word, the others are indented under it);
 * @FORMATS@ and @OUTPUTS@ come from the exporters' registry (outputs.c). */
enum {
    FOR_RUN = 1u << OSPREY_COMMAND_RUN,
    FOR_REPORT = 1u << OSPREY_COMMAND_REPORT,
    FOR_DIFF = 1u << OSPREY_COMMAND_DIFF,
    FOR_CACHE = 1u << OSPREY_COMMAND_CACHE,
    FOR_ATTACH = 1u << OSPREY_COMMAND_ATTACH,
    FOR_TOP = 1u << OSPREY_COMMAND_TOP,
    FOR_DUMP = 1u << OSPREY_COMMAND_DUMP,
    FOR_ALL = FOR_RUN | FOR_REPORT | FOR_DIFF | FOR_CACHE | FOR_ATTACH | FOR_TOP | FOR_DUMP,
    FOR_GENERAL = 1u << 16, /* `osprey --help` only */
    NOT_GENERAL = 1u << 17, /* not in `osprey --help` (a command's own wording) */
};
static const struct {
    unsigned commands;
    const char *text;
} help_rows[] = {
    {FOR_RUN, "usage: osprey FILE [--run] [--profile [-F N]] [-o STEM] [--format LIST]\n"
              "                   [-- ARGS...]\n"},
    {FOR_REPORT,
     "usage: osprey report RAW... [--binary PATH] [--symfs DIR] [-o STEM] [--format LIST]\n"
     "                     [--top N] [--pid PID] [--comm COMMAND] [--per-process]\n"
     "                     [--merge-processes]\n"
     "                     [--fiber F] [--focus REGEX] [--ignore REGEX]\n"
     "                     [--inverted] [--list REGEX]\n"},
    {FOR_DIFF, "usage: osprey diff BASE.raw.json NEW.raw.json [--binary PATH] [--symfs DIR]\n"
               "                   [-o STEM] [--top N]\n"},
    {FOR_CACHE, "usage: osprey cache [prune] [--max-size SIZE]\n"},
    {FOR_ATTACH,
     "usage: osprey attach PID [--duration SECONDS] [-F N] [-o STEM] [--format LIST]\n"},
    {FOR_TOP, "usage: osprey top PID [-F N] [--interval SECONDS]\n"},
    {FOR_DUMP, "usage: osprey dump PID [--duration SECONDS] [-F N]\n"},
    {FOR_GENERAL, "\n"
                  "Sampling CPU profiler for native programs.\n"},
    {FOR_RUN,
     "\n"
     "FILE is a C source (.c; C++: .cc .cpp .cxx) or an executable. A source is built with\n"
     "clang at -O2 -g with frame pointers in every function into a scratch directory that\n"
     "is removed afterwards. The program's stdin, stdout, stderr and exit code pass\n"
     "through unchanged (killed by signal N: exit 128+N). Ctrl-C stops the program and\n"
     "still writes the profile of what ran.\n"},
    {FOR_REPORT, "\n"
                 "osprey report symbolizes a raw profile (STEM.raw.json, from --profile or from\n"
                 "OSPREY_PROFILE=PATH), prints its report and writes its outputs again. A run's\n"
                 "other processes wrote raw files beside it (STEM.raw.<pid>.json): they are read\n"
                 "with it, one report of every process; several RAW files are merged too.\n"},
    {FOR_DIFF,
     "\n"
     "osprey diff prints the functions whose share of the CPU time moved most and writes\n"
     "STEM.{base,new}.{speedscope.json,pb.gz} (STEM: NEW's stem + .diff), for\n"
     "go tool pprof -diff_base STEM.base.pb.gz STEM.new.pb.gz.\n"},
    {FOR_CACHE,
     "\n"
     "osprey cache shows the build-id cache, where the binaries that ran under --profile\n"
     "are kept ($XDG_CACHE_HOME/osprey/buildid, else ~/.cache/osprey/buildid; bounded by\n"
     "OSPREY_BUILDID_CACHE_MAX, default 1G); prune removes the least recently used down\n"
     "to --max-size (default: the bound).\n"},
    {FOR_ATTACH,
     "\n"
     "osprey attach profiles the running process PID, every thread it has and starts,\n"
     "from outside (the kernel's perf events: nothing is loaded into it, it is never\n"
     "stopped), until --duration ends or Ctrl-C, then prints the report and writes the\n"
     "outputs as --profile does. It needs what ptrace needs (the same user, or\n"
     "CAP_SYS_PTRACE) and kernel.perf_event_paranoid 2 or less.\n"},
    {FOR_TOP, "\n"
              "osprey top shows the hottest functions of the last 5 seconds of the running\n"
              "process PID, refreshed in place (perf top -p, py-spy top): SELF% and TOTAL% of\n"
              "its on-CPU time, with the report's names and colours. Keys: s or 1 by SELF%,\n"
              "c or 2 by TOTAL%, t the threads, space or p pause, ? the keys, q or Ctrl-C\n"
              "quits; the process runs on as before. It attaches as osprey attach does, writes\n"
              "no files.\n"},
    {FOR_DUMP, "\n"
               "osprey dump prints the current stack of every thread of the running process PID\n"
               "once (py-spy dump): it samples the process from outside as osprey attach does\n"
               "for --duration (default 1 s) and prints each thread's last stack, on-CPU or where\n"
               "it blocked; a thread that neither ran nor blocked meanwhile is named with the\n"
               "call it waits in. The process runs on as before; nothing is written.\n"},
    {FOR_ALL, "\n"},
    {FOR_TOP | NOT_GENERAL,
     "  -F, --frequency N\n"
     "                 N samples per second per thread, 10 to 10000 (default 997)\n"
     "  --interval SECONDS\n"
     "                 between refreshes, 0.1 to 3600 (default 1)\n"},
    {FOR_GENERAL, "  --interval SECONDS\n"
                  "                 top: between refreshes (default 1)\n"},
    {FOR_DUMP | NOT_GENERAL,
     "  --duration SECONDS\n"
     "                 look this long, 0.1 to 60 (default 1)\n"
     "  -F, --frequency N\n"
     "                 N samples per second per thread, 10 to 10000 (default 997)\n"},
    {FOR_ATTACH | NOT_GENERAL,
     "  --duration SECONDS\n"
     "                 attach: profile this long (default: until Ctrl-C)\n"
     "  -F, --frequency N\n"
     "                 attach: N samples per second per thread, 10 to 10000\n"
     "                 (default 997)\n"},
    {FOR_RUN,
     "  --run          build (if a source) and run FILE, without profiling; this is also\n"
     "                 what `osprey FILE` without options does\n"
     "  --profile      run FILE with the profiler on (implies --run), then write the\n"
     "                 outputs and print the top-10 report (on stdout when it is a\n"
     "                 terminal, else on stderr, so the program's stdout stays its own);\n"
     "                 an executable is profiled through LD_PRELOAD without rebuilding it\n"
     "  --duration SECONDS\n"
     "                 --profile: profile for this long, print the report, and let the\n"
     "                 program run on unprofiled to its end (its exit status is osprey's)\n"
     "  -F, --frequency N\n"
     "                 --profile: N samples per second per thread, 10 to 10000 (default\n"
     "                 997); sets OSPREY_PROFILE_HZ for the program\n"
     "  --merge-processes\n"
     "                 --profile: the processes of one command (a build's compilers) as\n"
     "                 one in the report and the outputs: one row per function and command\n"},
    {FOR_RUN | FOR_REPORT | FOR_DIFF | FOR_ATTACH,
     "  -o, --output STEM\n"
     "                 output stem (default: ./NAME for FILE, RAW without .raw.json for\n"
     "                 report, NEW's stem + .diff for diff); missing directories are created;\n"
     "                 a place that cannot be written is refused before anything runs\n"},
    {FOR_RUN | FOR_REPORT | FOR_ATTACH, "  --format LIST  the outputs to write, a comma list of\n"
                                        "                 @FORMATS@\n"},
    {FOR_RUN, "  -- ARGS...     arguments for the program\n"},
    {FOR_GENERAL, "\nosprey report and osprey diff:\n"},
    {FOR_REPORT | FOR_DIFF,
     "  --binary PATH  symbolize the main image from PATH (the program moved, or was a\n"
     "                 scratch build); used only when its build id is the profile's\n"
     "  --symfs DIR[:DIR...]\n"
     "                 find objects that moved in DIR, by build id (DIR/<id>/NAME,\n"
     "                 DIR/.build-id/xx/rest) or by name (DIR/PATH, DIR/NAME), before the\n"
     "                 build-id cache\n"
     "  --ignore-build-id\n"
     "                 use a binary of another build than the one that ran anyway (by\n"
     "                 default its frames stay OBJECT+0xOFFSET); its names are marked\n"
     "                 [other build]\n"},
    {FOR_REPORT | FOR_DIFF, "  --top N        N rows in the table (default 10)\n"},
    {FOR_GENERAL, "\nosprey report's views:\n"},
    {FOR_REPORT,
     "  --pid PID[,PID...]\n"
     "                 only these processes of the run\n"
     "  --comm COMMAND[,COMMAND...]\n"
     "                 only the processes of these commands (the executable's name)\n"
     "  --per-process  after the run's report, one section per process\n"
     "  --merge-processes\n"
     "                 the processes of one command as one (one row per function and\n"
     "                 command, as perf report sorted by comm,sym), in the outputs too\n"
     "  --fiber F      only the thread (or fiber) with this id or label\n"
     "  --focus REGEX  only samples with a function matching REGEX on the stack\n"
     "  --ignore REGEX drop samples with a function matching REGEX on the stack\n"
     "                 (--pid, --comm, --fiber, --focus and --ignore apply to the\n"
     "                 outputs too, when -o or --format asks for them: a view alone\n"
     "                 writes nothing)\n"
     "  --inverted     under each function, the caller chains its self time came\n"
     "                 from, as a tree (a single chain on one line)\n"
     "  --list REGEX   the source lines of the matching functions with their self (flat)\n"
     "                 and total (cum) time, as pprof -list prints them\n"},
    {FOR_GENERAL, "\nosprey cache:\n"},
    {FOR_CACHE, "  prune          remove the least recently used objects down to the bound\n"
                "  --max-size SIZE\n"
                "                 prune: the bound (e.g. 500M, 2G)\n"},
    {FOR_GENERAL, "\n"},
    {FOR_ALL, "  -h, --help     this text (osprey report --help, osprey diff --help, osprey\n"
              "                 cache --help: that command's)\n"},
    {FOR_GENERAL, "  -V, --version  the version\n"},
    {FOR_RUN | FOR_REPORT, "\n"
                           "Outputs:\n"
                           "@OUTPUTS@\n"
                           "  STEM.raw.json         the raw profile, for `osprey report` "
                           "(--profile only)\n"},
    {FOR_RUN, "\n"
              "Environment: OSPREY_PROFILE_HZ=N samples per second when -F is not given\n"
              "(10..10000, default 997; a value outside the range is clamped to it);\n"
              "NO_COLOR disables colour in the report.\n"},
    {FOR_REPORT | NOT_GENERAL, "\n"
                               "NO_COLOR disables colour in the report.\n"},
    {FOR_GENERAL, "\n"
                  "Exit status: the program's; 2 for a usage error (also an output place that\n"
                  "cannot be written, -F out of range, a file of another kind than the command\n"
                  "takes); 1 when building fails or `osprey report` cannot read its raw file.\n"},
    {FOR_RUN | NOT_GENERAL,
     "\n"
     "Exit status: the program's; 2 for a usage error (also an output place that cannot\n"
     "be written, or -F out of range); 1 when building fails.\n"},
    {FOR_REPORT | FOR_DIFF | FOR_CACHE | NOT_GENERAL,
     "\n"
     "Exit status: 0; 2 for a usage error (also a file of another kind than a raw\n"
     "profile); 1 when a raw profile cannot be read or its outputs written.\n"},
};

/* One row of the help, with the registry's lists in place of @FORMATS@ and @OUTPUTS@. */
static void print_help_row(FILE *out, const char *at)
{
    for (;;) {
        const char *formats = strstr(at, "@FORMATS@"), *outputs = strstr(at, "@OUTPUTS@\n");
        const char *next =
            formats != NULL && (outputs == NULL || formats < outputs) ? formats : outputs;
        if (next == NULL)
            break;
        fwrite(at, 1, (size_t)(next - at), out);
        if (next == formats) {
            char list[256];
            ospx_formats_list(list, sizeof list);
            fprintf(out, "%s (default: all)", list);
            at = next + strlen("@FORMATS@");
        } else {
            ospx_outputs_help(out);
            at = next + strlen("@OUTPUTS@\n");
        }
    }
    fputs(at, out);
}

/* The help of `command` (OSPREY_COMMAND_RUN: the whole text, every command's). */
static void print_usage(FILE *out, enum osprey_command command)
{
    int general = command == OSPREY_COMMAND_RUN;
    unsigned wanted = general ? FOR_ALL | FOR_GENERAL : 1u << command;
    int usage_printed = 0;
    for (size_t i = 0; i < sizeof help_rows / sizeof help_rows[0]; i++) {
        unsigned commands = help_rows[i].commands;
        if ((commands & wanted) == 0 || (general && (commands & NOT_GENERAL) != 0))
            continue;
        const char *text = help_rows[i].text;
        if (strncmp(text, "usage: ", 7) == 0 && usage_printed++ > 0) {
            fputs("      ", out);
            text += 6;
        }
        print_help_row(out, text);
    }
}

/* Colour for a report written to `stream`: a terminal, and NO_COLOR unset or empty. */
static int report_color(FILE *stream)
{
    const char *no_color = getenv("NO_COLOR");
    return isatty(fileno(stream)) && (no_color == NULL || no_color[0] == '\0');
}

/* Where the report of a profiled run goes: stdout when it is a terminal, where the user reads
 * it; otherwise stderr, so a redirected or piped stdout carries the program's bytes and
 * nothing else (`osprey ./gzip --profile -- -c f > f.gz` must give a valid f.gz). */
static FILE *run_report_stream(void)
{
    return isatty(STDOUT_FILENO) ? stdout : stderr;
}

/* Post-process raw into the outputs at stem and the report on `report`. Returns 0, or
 * -errno with the problem formatted into message; *reported (when not NULL) is 1 when the
 * report was printed all the same, naming the outputs that are missing. */
/* The run's other raw files, kept beside raw_written: how many, and how the report names
 * them. */
struct more_raw {
    size_t count;
    char pattern[PATH_MAX + 32];
};

static int post_process(const char *raw, const char *stem, const struct osprey_options *view,
                        const char *raw_written, int raw_replaced, const struct more_raw *more,
                        int no_outputs, int keep_better, FILE *report, int *reported, char *message,
                        size_t message_size)
{
    int result = no_outputs ? 0 : osprey_make_parent_dirs(stem);
    if (result != 0) {
        snprintf(message, message_size, "%s: cannot create its directory: %s", stem,
                 strerror(-result));
        return result;
    }
    struct ospx_process_options options = {
        .raw_path = raw,
        .stem = stem,
        .binary = view->binary,
        .report = report,
        .color = report_color(report),
        .progress = isatty(STDERR_FILENO),
        .formats = view->formats,
        .filter = {.fiber = view->fiber,
                   .pid = view->pid,
                   .comm = view->comm,
                   .focus = view->focus,
                   .ignore = view->ignore},
        /* osprey report A B: both, and each one's descendants' files beside it */
        .more_raw_paths = view->file_count > 1 ? view->files : NULL,
        .more_raw_count = view->file_count > 1 ? view->file_count : 0,
        .per_process = view->per_process,
        .merge_processes = view->merge_processes,
        .raw_more_kept = more != NULL ? more->count : 0,
        .raw_more_pattern = more != NULL ? more->pattern : NULL,
        .top = view->top,
        .inverted = view->inverted,
        .list = view->list,
        .symfs = view->symfs,
        .use_other_build = view->ignore_build_id,
        .no_outputs = no_outputs,
        .raw_written = raw_written,
        .raw_replaced = raw_replaced,
        .keep_better = keep_better,
        /* a profiled run (no view): its program into the build-id cache */
        .keep_main_object = raw_written != NULL,
        .reported = reported,
    };
    struct ospx_error error;
    memset(&error, 0, sizeof error);
    fflush(stdout);
    result = ospx_process(&options, &error);
    fflush(report);
    if (result != 0) {
        if (error.text[0] == '\0')
            snprintf(error.text, sizeof error.text, "%s", strerror(-result));
        ospx_error_format(&error, message, message_size);
        if (error.file[0] == '\0') { /* about no file: say who speaks */
            char text[sizeof error.text + 16];
            snprintf(text, sizeof text, "osprey: %s", message);
            snprintf(message, message_size, "%s", text);
        }
    }
    return result;
}

/* A raw file named on the command line: a regular file, not one of the outputs, or one line
 * and the usage status. */
static int check_raw_argument(const char *path)
{
    struct stat info;
    if (stat(path, &info) != 0) {
        fprintf(stderr, "osprey: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(info.st_mode)) {
        fprintf(stderr, "osprey: %s: not a raw profile file\n", path);
        return -1;
    }
    char message[2048];
    if (osprey_describe_kind(path, osprey_profile_kind(path), message, sizeof message) == 0) {
        fprintf(stderr, "osprey: %s\n", message);
        return -1;
    }
    return 0;
}

static int command_report(const struct osprey_options *options)
{
    for (size_t i = 0; i < options->file_count; i++)
        if (check_raw_argument(options->files[i]) != 0)
            return OSPREY_EXIT_USAGE;
    char message[2048];
    if (options->binary != NULL && access(options->binary, R_OK) != 0) {
        fprintf(stderr, "osprey: %s: %s\n", options->binary, strerror(errno));
        return OSPREY_EXIT_USAGE;
    }
    char stem[PATH_MAX];
    osprey_output_stem(options, stem, sizeof stem);
    /* A view (a selection of samples, another table) changes what is shown, never the run's
     * files, as perf report's and pprof's filters do: it writes only when -o or --format
     * asks. */
    int view = options->fiber != NULL || options->focus != NULL || options->ignore != NULL ||
               options->inverted || options->top > 0 || options->list != NULL ||
               options->pid != NULL || options->comm != NULL || options->per_process ||
               options->merge_processes;
    int no_outputs = view && options->stem == NULL && options->formats == NULL;
    if (!no_outputs && osprey_check_output_place(stem, message, sizeof message) != 0) {
        fprintf(stderr, "osprey: %s\n", message);
        return OSPREY_EXIT_USAGE;
    }

    /* The run's own outputs (no -o, no --format) are not rewritten by a report that could
     * only do worse: one whose objects are gone. */
    int keep_better = options->stem == NULL && options->formats == NULL;
    if (post_process(options->file, stem, options, NULL, 0, NULL, no_outputs, keep_better, stdout,
                     NULL, message, sizeof message) != 0) {
        /* A positioned error starts with the file it is about, as a compiler's does. */
        fprintf(stderr, "%s%s\n", strchr(message, ':') != NULL ? "" : "osprey: ", message);
        return OSPREY_EXIT_FAILURE;
    }
    return 0;
}

/* osprey diff BASE NEW: outputs at STEM (default: NEW's stem + ".diff"), the table on stdout. */
static int command_diff(const struct osprey_options *options)
{
    if (check_raw_argument(options->file) != 0 || check_raw_argument(options->file2) != 0)
        return OSPREY_EXIT_USAGE;
    char stem[PATH_MAX];
    if (options->stem != NULL) {
        snprintf(stem, sizeof stem, "%s", options->stem);
    } else {
        char new_stem[PATH_MAX - 8];
        osprey_default_report_stem(options->file2, new_stem, sizeof new_stem);
        snprintf(stem, sizeof stem, "%s.diff", new_stem);
    }
    char message[2048];
    if (osprey_check_output_place(stem, message, sizeof message) != 0) {
        fprintf(stderr, "osprey: %s\n", message);
        return OSPREY_EXIT_USAGE;
    }
    int result = osprey_make_parent_dirs(stem);
    if (result != 0) {
        fprintf(stderr, "osprey: %s: cannot create its directory: %s\n", stem, strerror(-result));
        return OSPREY_EXIT_FAILURE;
    }
    struct ospx_diff_options diff = {.base_path = options->file,
                                     .new_path = options->file2,
                                     .stem = stem,
                                     .binary = options->binary,
                                     .report = stdout,
                                     .top = options->top,
                                     .symfs = options->symfs,
                                     .use_other_build = options->ignore_build_id};
    struct ospx_error error;
    memset(&error, 0, sizeof error);
    if (ospx_diff(&diff, &error) != 0) {
        ospx_error_format(&error, message, sizeof message);
        fprintf(stderr, "%s%s\n", strchr(message, ':') != NULL ? "" : "osprey: ", message);
        return OSPREY_EXIT_FAILURE;
    }
    return 0;
}

/* osprey cache [prune] [--max-size SIZE]: where the build-id cache is and what it holds;
 * prune removes the least recently used entries down to SIZE (default: the cache's bound). */
static int command_cache(const struct osprey_options *options)
{
    char directory[PATH_MAX];
    if (ospc_cache_dir(directory, sizeof directory) != 0) {
        fprintf(stderr, "osprey: no build-id cache: neither XDG_CACHE_HOME nor HOME is set\n");
        return OSPREY_EXIT_FAILURE;
    }
    uint64_t bound = ospc_cache_max_bytes();
    if (options->max_size != NULL && ospc_parse_size(options->max_size, &bound) != 0) {
        fprintf(stderr, "osprey: --max-size %s: not a size (e.g. 500M, 2G)\n", options->max_size);
        return OSPREY_EXIT_USAGE;
    }
    int prune = options->cache_action != NULL;
    size_t kept = 0, removed = 0;
    uint64_t kept_bytes = 0, removed_bytes = 0;
    int result =
        ospc_cache_prune(prune ? bound : UINT64_MAX, &kept, &kept_bytes, &removed, &removed_bytes);
    if (result != 0) {
        fprintf(stderr, "osprey: %s: %s\n", directory, ospc_cache_strerror(result));
        return OSPREY_EXIT_FAILURE;
    }
    printf("build-id cache: %s\n", directory);
    printf("  %zu object%s, %.1f MiB (bound %.1f MiB)\n", kept, kept == 1 ? "" : "s",
           (double)kept_bytes / 1048576.0, (double)bound / 1048576.0);
    if (prune)
        printf("  pruned %zu object%s, %.1f MiB\n", removed, removed == 1 ? "" : "s",
               (double)removed_bytes / 1048576.0);
    return 0;
}

/* The raw files an earlier run at this stem left for its other processes
 * (<stem>.raw.<pid>….json): the run kept now replaces them, so none is read as this run's.
 * Only our own: in a shared directory (/tmp) one of another user's is theirs to keep, and the
 * report leaves it out, saying so. */
static void remove_earlier_descendants(const char *kept_raw)
{
    char **earlier;
    size_t count;
    if (ospx_run_siblings(kept_raw, &earlier, &count) != 0)
        return;
    for (size_t i = 0; i < count; i++) {
        struct stat info;
        if (lstat(earlier[i], &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != geteuid())
            continue;
        if (unlink(earlier[i]) != 0 && errno != ENOENT)
            fprintf(stderr, "osprey: warning: %s: cannot remove an earlier run's raw file: %s\n",
                    earlier[i], strerror(errno));
    }
    ospx_paths_free(earlier, count);
}

/* The run's other processes (descendants that exec'd with its environment, forked children,
 * the program's own later images when it replaced itself by exec) wrote raw files of their own
 * beside the scratch raw file (profile.raw.<pid>.json, profile.raw.<pid>-<hex>.json): keep each
 * as <stem>.raw.<pid…>.json before the scratch directory goes, where the report reads them with
 * <stem>.raw.json (exporters/run.c). How many were kept goes to `more`. */
static void keep_descendant_profiles(const char *scratch_raw, const char *stem,
                                     struct more_raw *more)
{
    char **found;
    size_t count;
    more->count = 0;
    snprintf(more->pattern, sizeof more->pattern, "%s.raw.<pid>….json", stem);
    if (ospx_run_siblings(scratch_raw, &found, &count) != 0)
        return;
    const char *scratch_base = strrchr(scratch_raw, '/');
    size_t prefix_length = strlen(scratch_base != NULL ? scratch_base + 1 : scratch_raw) - 4;
    for (size_t i = 0; i < count; i++) {
        const char *name = strrchr(found[i], '/');
        name = name != NULL ? name + 1 : found[i];
        char kept[PATH_MAX + 300];
        /* profile.raw.<pid…>.json -> <stem>.raw.<pid…>.json */
        snprintf(kept, sizeof kept, "%s.raw.%s", stem, name + prefix_length);
        int result = osprey_move_file(found[i], kept);
        if (result == 0)
            more->count++;
        else
            fprintf(stderr, "osprey: warning: %s: cannot keep a descendant's profile: %s\n", kept,
                    strerror(-result));
    }
    ospx_paths_free(found, count);
}

/* After a profiled run: keep the raw files as <stem>.raw.json and <stem>.raw.<pid…>.json and
 * post-process them, one report of every process, which keeps the programs that ran in the
 * build-id cache. Nothing here changes the exit code; a failure is one warning line. */
static void finish_profile(const char *scratch_raw, const char *stem,
                           const struct osprey_options *options)
{
    int found = osprey_wait_for_file(scratch_raw, RAW_WAIT_MS);
    if (found != 0) {
        fprintf(stderr, "osprey: warning: no profile was written (%s)\n",
                found == -ETIMEDOUT ? "the collector did not finish in time"
                                    : "the collector did not run or was lost; see the "
                                      "warnings above");
        return;
    }
    /* The other processes' collectors (forked children, exec'd descendants) may still be
     * writing theirs. */
    char scratch[PATH_MAX + 32];
    snprintf(scratch, sizeof scratch, "%s", scratch_raw);
    char *slash = strrchr(scratch, '/');
    if (slash != NULL)
        *slash = '\0';
    if (slash != NULL && osprey_wait_for_collectors(scratch, COLLECTORS_WAIT_MS) != 0)
        fprintf(stderr,
                "osprey: warning: processes of the run were still being profiled %d s after it "
                "ended; their profiles are missing\n",
                COLLECTORS_WAIT_MS / 1000);
    char kept[PATH_MAX + 16];
    snprintf(kept, sizeof kept, "%s.raw.json", stem);
    const char *raw = scratch_raw;
    int result = osprey_make_parent_dirs(kept);
    int replaced = access(kept, F_OK) == 0;
    if (result == 0) {
        remove_earlier_descendants(kept);
        result = osprey_move_file(scratch_raw, kept);
    }
    struct more_raw more = {0};
    if (result == 0)
        keep_descendant_profiles(scratch_raw, stem, &more);
    if (result == 0)
        raw = kept;
    else
        fprintf(stderr, "osprey: warning: %s: cannot keep the raw profile: %s\n", kept,
                strerror(-result));

    /* Outputs that could not be written are named at the end of the report, when it is
     * printed; anything else that failed gets its warning line. */
    char message[2048];
    int reported = 0;
    if (post_process(raw, stem, options, raw != scratch_raw ? raw : NULL, result == 0 && replaced,
                     &more, 0, 0, run_report_stream(), &reported, message, sizeof message) != 0 &&
        !reported)
        fprintf(stderr, "osprey: warning: post-processing failed: %s\n", message);
}

/* Make the scratch directory under $TMPDIR (or /tmp). */
static int make_scratch(char *scratch, size_t size)
{
    const char *tmpdir = getenv("TMPDIR");
    if (tmpdir == NULL || tmpdir[0] == '\0')
        tmpdir = "/tmp";
    if (snprintf(scratch, size, "%s/osprey-XXXXXX", tmpdir) >= (int)size)
        return -ENAMETOOLONG;
    return mkdtemp(scratch) != NULL ? 0 : -errno;
}

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
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        char until[32];
        snprintf(until, sizeof until, "%llu",
                 (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec +
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
    finish_profile(early->scratch_raw, stem, early->options);
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
        finish_profile(scratch_raw, stem, options);
    }
    if (WIFSIGNALED(status))
        fprintf(stderr, "osprey: %s was killed by signal %d (%s); exit status %d\n", options->file,
                WTERMSIG(status), strsignal(WTERMSIG(status)), exit_code);
    return exit_code;
}

static int command_run(const struct osprey_options *options)
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

    char scratch[PATH_MAX];
    int result = make_scratch(scratch, sizeof scratch);
    if (result == 0)
        result = osprey_make_run_lock(scratch);
    if (result != 0) {
        fprintf(stderr, "osprey: cannot make a scratch directory in %s: %s\n",
                getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp", strerror(-result));
        return OSPREY_EXIT_FAILURE;
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
        exit_code = run_program(options, &paths, !source, program, program_name, scratch);

    result = osprey_remove_tree(scratch);
    if (result != 0)
        fprintf(stderr, "osprey: warning: cannot remove %s: %s\n", scratch, strerror(-result));
    return exit_code;
}

/* The ospreyd that attaches: OSPREY_DAEMON, else the one beside us. NULL after one line. */
static const char *find_daemon(struct osprey_paths *paths)
{
    char self[PATH_MAX], error[PATH_MAX + 256];
    ssize_t self_length = readlink("/proc/self/exe", self, sizeof self - 1);
    self[self_length > 0 ? self_length : 0] = '\0';
    osprey_locate(self, paths);
    if (osprey_paths_check(paths, 0, 0, error, sizeof error) != 0) {
        fprintf(stderr, "osprey: %s\n", error);
        return NULL;
    }
    const char *daemon = getenv("OSPREY_DAEMON");
    return daemon != NULL && daemon[0] != '\0' ? daemon : paths->daemon;
}

/* osprey attach PID: ospreyd profiles the process from outside (daemon/attach.c) into the
 * scratch directory until --duration ends or Ctrl-C (which reaches ospreyd too: it stops and
 * writes what it has); then the same outputs and report as a profiled run. Exit status 0, or 1
 * when it could not attach (ospreyd's one line says why). */
static int command_attach(const struct osprey_options *options)
{
    char error[PATH_MAX + 256];
    struct osprey_paths paths;
    const char *daemon = find_daemon(&paths);
    if (daemon == NULL)
        return OSPREY_EXIT_USAGE;
    struct osprey_options attach = *options;
    char stem[PATH_MAX], comm[64] = "process";
    if (attach.stem == NULL) { /* ./NAME-PID, NAME the process's command */
        char path[64];
        snprintf(path, sizeof path, "/proc/%s/comm", options->file);
        FILE *f = fopen(path, "re");
        if (f != NULL && fgets(comm, sizeof comm, f) != NULL)
            comm[strcspn(comm, "\n/")] = '\0';
        if (f != NULL)
            fclose(f);
        snprintf(stem, sizeof stem, "./%s-%s", comm[0] ? comm : "process", options->file);
        attach.stem = stem;
    }
    if (osprey_check_output_place(attach.stem, error, sizeof error) != 0) {
        fprintf(stderr, "osprey: %s\n", error);
        return OSPREY_EXIT_USAGE;
    }
    char scratch[PATH_MAX];
    int result = make_scratch(scratch, sizeof scratch);
    if (result != 0) {
        fprintf(stderr, "osprey: cannot make a scratch directory: %s\n", strerror(-result));
        return OSPREY_EXIT_FAILURE;
    }
    char scratch_raw[PATH_MAX + 32], rate[16], seconds[32];
    snprintf(scratch_raw, sizeof scratch_raw, "%s/profile.raw.json", scratch);
    snprintf(rate, sizeof rate, "%u", options->frequency != 0 ? options->frequency : 997u);
    snprintf(seconds, sizeof seconds, "%.3f", options->duration);
    char *argv[] = {(char *)daemon,
                    "--attach-pid",
                    (char *)options->file,
                    "--out",
                    scratch_raw,
                    "--rate",
                    rate,
                    options->duration > 0 ? "--duration" : NULL,
                    seconds,
                    NULL};
    extern char **environ;
    int status = 0;
    result = osprey_run_child(daemon, argv, environ, &status);
    int exit_code = 0;
    if (result != 0) {
        fprintf(stderr, "osprey: cannot run %s: %s\n", daemon, strerror(-result));
        exit_code = OSPREY_EXIT_FAILURE;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || access(scratch_raw, F_OK) != 0) {
        exit_code = OSPREY_EXIT_FAILURE; /* its one line said why */
    } else {
        finish_profile(scratch_raw, attach.stem, &attach);
    }
    result = osprey_remove_tree(scratch);
    if (result != 0)
        fprintf(stderr, "osprey: warning: cannot remove %s: %s\n", scratch, strerror(-result));
    return exit_code;
}

int main(int argc, char **argv)
{
    struct osprey_options options;
    char error[1024];
    if (osprey_parse_args(argc, argv, &options, error, sizeof error) != 0) {
        fprintf(stderr, "osprey: %s\n", error);
        return OSPREY_EXIT_USAGE;
    }
    switch (options.command) {
    case OSPREY_COMMAND_HELP:
        print_usage(stdout, options.help_for);
        return 0;
    case OSPREY_COMMAND_VERSION:
        printf("osprey %s\n", OSPREY_VERSION);
        return 0;
    case OSPREY_COMMAND_REPORT:
        return command_report(&options);
    case OSPREY_COMMAND_DIFF:
        return command_diff(&options);
    case OSPREY_COMMAND_CACHE:
        return command_cache(&options);
    case OSPREY_COMMAND_ATTACH:
        return command_attach(&options);
    case OSPREY_COMMAND_TOP: {
        struct osprey_paths paths;
        const char *daemon = find_daemon(&paths);
        return daemon != NULL ? osprey_top(&options, daemon) : OSPREY_EXIT_USAGE;
    }
    case OSPREY_COMMAND_DUMP: {
        struct osprey_paths paths;
        const char *daemon = find_daemon(&paths);
        return daemon != NULL ? osprey_dump(&options, daemon) : OSPREY_EXIT_USAGE;
    }
    case OSPREY_COMMAND_RUN:
        break;
    }
    return command_run(&options);
}
