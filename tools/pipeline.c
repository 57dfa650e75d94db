/* pipeline.c — what the commands share: a raw profile turned into the outputs at a stem and
 * the report (ospx_process), the raw files of a profiled run (its own and its other
 * processes') kept at the stem once every collector has ended, the scratch directory a run or
 * an attach works in, a raw file named on the command line checked, and the ospreyd that
 * attaches. Nothing here changes the program's exit code: what fails is one warning line.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "osprey_cli.h"
#include "osprey_commands.h"
#include "ospx.h"

/* How long to wait, after the program ended, for ospreyd to finish the raw file while it
 * is still running (it writes what it has when the program was killed). */
#define RAW_WAIT_MS 15000
/* And for the other processes' collectors once the first raw file is there. */
#define COLLECTORS_WAIT_MS 10000

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
/* The post-processing allocates and frees tables of megabytes stage after stage (the call
 * trees, each writer's sample orders and leaves, the outputs' buffers). glibc serves each
 * with a fresh mmap and unmaps it when freed, so every stage faults its pages in again, and
 * zeroes them: a third of the benchmark's page faults and a sixth of its CPU. This process
 * ends once the outputs are written, so it keeps what it freed for the next stage instead:
 * large blocks from the heap, which is never trimmed. */
static void keep_freed_memory(void)
{
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

int osprey_post_process(const char *raw, const char *stem, const struct osprey_options *view,
                        const char *raw_written, int raw_replaced,
                        const struct osprey_more_raw *more, int no_outputs, int keep_better,
                        FILE *report, int *reported, char *message, size_t message_size)
{
    keep_freed_memory();
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

int osprey_check_raw_argument(const char *path)
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
                                     struct osprey_more_raw *more)
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
void osprey_finish_profile(const char *scratch_raw, const char *stem,
                           const struct osprey_options *options)
{
    pid_t stopped;
    int found = osprey_wait_for_file(scratch_raw, RAW_WAIT_MS, &stopped);
    if (found == OSPREY_COLLECTOR_STOPPED) {
        fprintf(stderr,
                "osprey: warning: no profile was written (the collector, process %d, is stopped: "
                "SIGSTOP)\n",
                (int)stopped);
        return;
    }
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
    int waited =
        slash != NULL ? osprey_wait_for_collectors(scratch, COLLECTORS_WAIT_MS, &stopped) : 0;
    if (waited == OSPREY_COLLECTOR_STOPPED)
        fprintf(stderr,
                "osprey: warning: a collector of the run (process %d) is stopped (SIGSTOP); the "
                "profiles it writes are missing\n",
                (int)stopped);
    else if (waited != 0)
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
    struct osprey_more_raw more = {0};
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
    if (osprey_post_process(raw, stem, options, raw != scratch_raw ? raw : NULL,
                            result == 0 && replaced, &more, 0, 0, run_report_stream(), &reported,
                            message, sizeof message) != 0 &&
        !reported)
        fprintf(stderr, "osprey: warning: post-processing failed: %s\n", message);
}

int osprey_make_scratch(char *scratch, size_t size)
{
    const char *tmpdir = getenv("TMPDIR");
    if (tmpdir == NULL || tmpdir[0] == '\0')
        tmpdir = "/tmp";
    if (snprintf(scratch, size, "%s/osprey-XXXXXX", tmpdir) >= (int)size)
        return -ENAMETOOLONG;
    return mkdtemp(scratch) != NULL ? 0 : -errno;
}

int osprey_make_scratch_beside(const char *stem, char *scratch, size_t size)
{
    const char *slash = strrchr(stem, '/');
    int length = slash == NULL ? 1 : slash == stem ? 1 : (int)(slash - stem);
    if (snprintf(scratch, size, "%.*s/.osprey-XXXXXX", length, slash == NULL ? "." : stem) >=
        (int)size)
        return -ENAMETOOLONG;
    if (mkdtemp(scratch) != NULL)
        return 0;
    return osprey_make_scratch(scratch, size);
}
const char *osprey_find_daemon(struct osprey_paths *paths)
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
