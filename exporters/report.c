/* report.c — the terminal report printed after a profiled run: a header line (wall, CPU,
 * samples, rate, threads), the per-thread state split, the top-10 functions by self time with
 * eighth-block bars in the self gutter, a low-confidence line below 100 on-CPU samples, a line
 * for dropped samples, and the paths written. Function figures are over on-CPU samples.
 *
 * Width: no line is wider than options->width display columns; with width 0 (the output is no
 * terminal) the table is 100 columns wide and the notes under it are never cut. Widths are counted
 * in code points (every character the report itself prints is one column wide; a name with East
 * Asian wide characters may overshoot). FUNCTION is cut at its end and LOCATION at its start (the
 * file name and line are the useful part), each marked with `…`. Colour (escape sequences that
 * take no columns) only when options->color. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ospc.h"
#include "ospx_internal.h"

#define TOP_FUNCTIONS      10
#define MAX_FIBER_LINES    8
#define FIBER_NAME_COLUMNS 28
#define BAR_CELLS          8 /* a full gutter is 100% */
#define LOW_CONFIDENCE     100
#define DEFAULT_WIDTH      100
#define CALLER_LINES       3    /* --inverted: callers shown under each row */
#define ACHIEVED_WARN      90.0 /* percent of the requested rate */
#define MOSTLY_UNNAMED     50.0 /* percent of CPU time in unnamed code: say how to name it */

#define COLOR_HOT   "\033[1;31m" /* self >= 5%: red, bold */
#define COLOR_WARM  "\033[33m"   /* self >= 0.5%: yellow */
#define COLOR_RESET OSPX_COLOR_RESET

/* Display columns of UTF-8 text: one per code point. */
static size_t columns(const char *text)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

/* Byte offset where column `column` starts. */
static size_t column_offset(const char *text, size_t column)
{
    size_t n = 0, i = 0;
    for (; text[i] != '\0'; i++) {
        if (((unsigned char)text[i] & 0xC0) != 0x80) {
            if (n == column)
                return i;
            n++;
        }
    }
    return i;
}

enum cut { CUT_END, CUT_START, CUT_MIDDLE };

/* Copy `text` into `out` (size bytes) fitted to `width` columns: when too wide, cut with `…` at
 * the end, at the start (paths: the file name is the useful part) or in the middle (function
 * names: long names often differ only at their end). Control characters become spaces. */
static void fit(char *out, size_t size, const char *text, size_t width, enum cut cut)
{
    char clean[1024];
    snprintf(clean, sizeof clean, "%s", ospx__str(text));
    ospc_printable(clean);
    size_t have = columns(clean);
    if (have <= width) {
        snprintf(out, size, "%s", clean);
    } else if (width == 0) {
        out[0] = '\0';
    } else if (cut == CUT_START) {
        snprintf(out, size, "…%s", clean + column_offset(clean, have - (width - 1)));
    } else if (cut == CUT_MIDDLE && width >= 8) {
        size_t tail = (width - 1) / 3, head = width - 1 - tail;
        snprintf(out, size, "%.*s…%s", (int)column_offset(clean, head), clean,
                 clean + column_offset(clean, have - tail));
    } else {
        snprintf(out, size, "%.*s…", (int)column_offset(clean, width - 1), clean);
    }
}

size_t ospx_text_columns(const char *text)
{
    return columns(text);
}

void ospx_text_fit(char *out, size_t size, const char *text, size_t width, enum ospx_cut cut)
{
    fit(out, size, text, width,
        cut == OSPX_CUT_START    ? CUT_START
        : cut == OSPX_CUT_MIDDLE ? CUT_MIDDLE
                                 : CUT_END);
}

const char *ospx_share_color(double self_percent)
{
    return self_percent >= 5.0 ? COLOR_HOT : self_percent >= 0.5 ? COLOR_WARM : NULL;
}

/* Print one line, cut to the width, optionally coloured. */
static void emit(FILE *out, size_t width, const char *color, const char *text)
{
    char line[4096];
    fit(line, sizeof line, text, width > 0 ? width : sizeof line, CUT_END);
    if (color != NULL)
        fprintf(out, "%s%s%s\n", color, line, COLOR_RESET);
    else
        fprintf(out, "%s\n", line);
}

/* Print "first; second" on one line, or on two (the second indented) when one would be wider
 * than the width. Width 0: the output is no terminal: two lines past DEFAULT_WIDTH, neither
 * cut (a log or a pipe keeps the whole note). */
static void emit_pair(FILE *out, size_t width, const char *color, const char *first,
                      const char *second)
{
    char line[1024];
    snprintf(line, sizeof line, "%s; %s", first, second);
    if (columns(line) <= (width > 0 ? width : DEFAULT_WIDTH)) {
        emit(out, width, color, line);
        return;
    }
    snprintf(line, sizeof line, "%s;", first);
    emit(out, width, color, line);
    snprintf(line, sizeof line, "  %s", second);
    emit(out, width, color, line);
}

void ospx__format_duration(char *out, size_t size, double seconds)
{
    if (seconds <= 0)
        snprintf(out, size, "0s");
    else if (seconds >= 100)
        snprintf(out, size, "%.0fs", seconds);
    else if (seconds >= 10)
        snprintf(out, size, "%.1fs", seconds);
    else if (seconds >= 0.9995)
        snprintf(out, size, "%.2fs", seconds);
    else if (seconds >= 0.00995)
        snprintf(out, size, "%.0fms", seconds * 1000);
    else
        snprintf(out, size, "%.1fms", seconds * 1000);
}

static double percent_of(uint64_t part, uint64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The self gutter: BAR_CELLS cells of eighth blocks, proportional to `percent` (a full gutter is
 * 100%); a function with any self time gets at least one eighth. Always BAR_CELLS columns. */
static void format_bar(char *out, size_t size, double percent, int any)
{
    static const char *const eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    long units = lround(percent / 100.0 * BAR_CELLS * 8);
    if (units > BAR_CELLS * 8)
        units = BAR_CELLS * 8;
    if (units == 0 && any)
        units = 1;
    size_t used = 0, cells = 0;
    out[0] = '\0';
    for (; cells < (size_t)units / 8; cells++)
        used += (size_t)snprintf(out + used, size - used, "█");
    if (units % 8 != 0) {
        used += (size_t)snprintf(out + used, size - used, "%s", eighths[units % 8]);
        cells++;
    }
    for (; cells < BAR_CELLS; cells++)
        used += (size_t)snprintf(out + used, size - used, " ");
}

/* file:line, with the file relative to the working directory when inside it, else its base
 * name; frames without a file show the image they belong to. */
static void format_location(char *out, size_t size, const struct ospx_model *model,
                            const struct ospx_function_stat *fn, const char *cwd)
{
    if (fn->file[0] == '\0') {
        const char *image = ospx__str(model->symbols->frames[fn->frame].image);
        snprintf(out, size, "%s", image[0] != '\0' ? ospx__basename(image) : "?");
        return;
    }
    char normalized[1024];
    ospx__normalize_path(normalized, sizeof normalized, fn->file);
    const char *file = normalized;
    size_t cwd_length = cwd != NULL ? strlen(cwd) : 0;
    if (cwd_length > 1 && strncmp(file, cwd, cwd_length) == 0 && file[cwd_length] == '/')
        file += cwd_length + 1;
    else
        file = ospx__basename(file);
    if (fn->line > 0)
        snprintf(out, size, "%s:%d", file, fn->line);
    else
        snprintf(out, size, "%s", file);
}

/* A profiled thread is a thread (the main one, or one the preload library or the shim
 * registered under its own tid); a fiber is a runtime's own, registered under an id of the
 * runtime's (osp_prof_thread_register). */
static int is_runtime_fiber(const struct ospx_model *model, size_t index)
{
    const struct ospx_thread *thread = &model->raw->threads[index];
    return thread->fiber != 0 && thread->tid != 0 && thread->fiber != thread->tid;
}

/* "2 threads", "1 thread, 3 fibers", "3 fibers": how many of sorted[from..to) (NULL: of the
 * model's own order) are which. */
static void count_threads(char *out, size_t size, const struct ospx_model *model,
                          const struct ospx_fiber_stat *const *sorted, size_t from, size_t to)
{
    size_t runtime = 0;
    for (size_t i = from; i < to; i++)
        runtime +=
            is_runtime_fiber(model, sorted != NULL ? (size_t)(sorted[i] - model->fibers) : i);
    size_t threads = to - from - runtime;
    if (runtime == 0 || threads > 0)
        snprintf(out, size, "%zu %s%s", threads, threads == 1 ? "thread" : "threads",
                 runtime > 0 ? ", " : "");
    else
        out[0] = '\0';
    if (runtime > 0)
        snprintf(out + strlen(out), size - strlen(out), "%zu %s", runtime,
                 runtime == 1 ? "fiber" : "fibers");
}

/* Thread t is shown: its process has samples (a view of some of a run's processes leaves the
 * others' threads out), or the profile has one process. */
static int thread_shown(const struct ospx_model *model, size_t t)
{
    uint32_t process = model->raw->threads[t].process;
    return model->raw->process_count <= 1 || process >= model->process_count ||
           model->processes[process].on_cpu + model->processes[process].waiting > 0;
}

/* With more than one process sampled, the report names processes (a column, lines, thread
 * names); with one it reads as a profile of one process always did. */
static int several_processes(const struct ospx_model *model)
{
    return model->processes_sampled > 1;
}

/* The header counts every sample and says how many were on-CPU: the figures below are
 * over those; with several processes it counts them first. `title` begins it ("osprey"). */
static void print_header(FILE *out, size_t width, const struct ospx_model *model, const char *title)
{
    char wall[32], cpu[32], threads[64], line[1024], processes[48] = "";
    ospx__format_duration(wall, sizeof wall, model->wall_seconds);
    ospx__format_duration(cpu, sizeof cpu, model->cpu_seconds);
    const struct ospx_fiber_stat **shown = malloc((model->fiber_count + 1) * sizeof *shown);
    size_t count = 0;
    for (size_t t = 0; shown != NULL && t < model->fiber_count; t++)
        if (thread_shown(model, t))
            shown[count++] = &model->fibers[t];
    count_threads(threads, sizeof threads, model, shown, 0, shown != NULL ? count : 0);
    free(shown);
    size_t merged = 0; /* processes, when each row is a command's */
    for (size_t p = 0; model->raw->merged_processes && p < model->process_count; p++)
        if (model->processes[p].on_cpu + model->processes[p].waiting > 0)
            merged += model->processes[p].merged;
    if (several_processes(model) && model->raw->merged_processes)
        snprintf(processes, sizeof processes, "%zu processes of %zu commands, ", merged,
                 model->processes_sampled);
    else if (several_processes(model))
        snprintf(processes, sizeof processes, "%zu processes, ", model->processes_sampled);
    snprintf(line, sizeof line, "%s: %s%s wall, %s CPU, %llu samples (%llu on-CPU), %u Hz, %s",
             title, processes, wall, cpu, (unsigned long long)model->total_samples,
             (unsigned long long)model->on_cpu_samples, model->raw->rate_hz, threads);
    emit(out, width, NULL, line);
}

/* "4243 hotspot": a process as the table's PROCESS column and the lines name it; merged by
 * command, "gzip" (its line says how many processes). */
static void format_process(char *out, size_t size, const struct ospx_model *model, uint32_t process)
{
    if (model->raw->merged_processes)
        snprintf(out, size, "%s", model->processes[process].comm);
    else
        snprintf(out, size, "%lld %s", (long long)model->processes[process].pid,
                 model->processes[process].comm);
}

/* "process 4243 (hotspot)", merged by command "gzip (3 processes)": a process's line and its
 * --per-process section. */
static void format_process_title(char *out, size_t size, const struct ospx_model *model,
                                 uint32_t process)
{
    const struct ospx_process_stat *stat = &model->processes[process];
    if (model->raw->merged_processes)
        snprintf(out, size, "%s (%zu %s)", stat->comm, stat->merged,
                 stat->merged == 1 ? "process" : "processes");
    else
        snprintf(out, size, "process %lld (%s)", (long long)stat->pid, stat->comm);
}

#define MAX_PROCESS_LINES 8

/* With several processes: one line each, in the run's order (the program first; an image that
 * exec'd the next is marked), past MAX_PROCESS_LINES the rest on one line. */
static void print_processes(FILE *out, size_t width, const struct ospx_model *model)
{
    const struct ospx_raw *raw = model->raw;
    size_t shown = 0, rest = 0;
    uint64_t rest_on_cpu = 0;
    for (uint32_t p = 0; p < model->process_count; p++) {
        const struct ospx_process_stat *process = &model->processes[p];
        if (process->on_cpu + process->waiting == 0)
            continue;
        if (shown == MAX_PROCESS_LINES && model->processes_sampled > MAX_PROCESS_LINES + 1) {
            rest++;
            rest_on_cpu += process->on_cpu;
            continue;
        }
        shown++;
        char name[600], cpu[32], how[96] = "", line[1024];
        format_process_title(name, sizeof name, model, p);
        ospx__format_duration(cpu, sizeof cpu,
                              raw->rate_hz > 0 ? (double)process->on_cpu / raw->rate_hz : 0);
        if (raw->merged_processes)
            ; /* a command's processes: how each began is theirs */
        else if (p < raw->process_count && raw->processes[p].execd)
            snprintf(how, sizeof how, ", then exec'd");
        else if (p < raw->process_count && raw->processes[p].forked &&
                 raw->processes[p].parent_pid > 0)
            snprintf(how, sizeof how, ", forked from %lld",
                     (long long)raw->processes[p].parent_pid);
        snprintf(line, sizeof line, "  %-28s  %6s CPU %5.1f%%  (%llu samples, %zu %s%s)", name, cpu,
                 percent_of(process->on_cpu, model->on_cpu_samples),
                 (unsigned long long)(process->on_cpu + process->waiting), process->threads,
                 process->threads == 1 ? "thread" : "threads", how);
        emit(out, width, NULL, line);
    }
    if (rest > 0) {
        char line[160];
        snprintf(line, sizeof line, "  … %zu more processes: %.1f%% of the CPU", rest,
                 percent_of(rest_on_cpu, model->on_cpu_samples));
        emit(out, width, NULL, line);
    }
}

#define ESCAPED_LINES 3

/* The forked children that left the program's session (daemons): their profile ends there,
 * and they ran on unprofiled, which one line each says. */
static void print_left_session(FILE *out, size_t width, const struct ospx_model *model,
                               const char *warn)
{
    const struct ospx_raw *raw = model->raw;
    for (size_t p = 0, shown = 0; p < raw->process_count && shown < ESCAPED_LINES; p++) {
        const struct ospx_process *process = &raw->processes[p];
        if (!process->exit.left_session)
            continue;
        const char *exe = process->exe != NULL ? process->exe : "?";
        const char *name = strrchr(exe, '/') != NULL ? strrchr(exe, '/') + 1 : exe;
        char line[600];
        snprintf(line, sizeof line, "process %lld (%s) left the session (a daemon)",
                 (long long)process->pid, name);
        emit_pair(out, width, warn, line,
                  "profiled until its collector saw it (within a second), then ran on unprofiled");
        shown++;
    }
}

/* The processes that ran unprofiled (their environment dropped the profiler): named, so that a
 * program that waited for them is not read as waiting for nothing. The first few one line
 * each, the rest counted. `process`: only those that process started; -1 all. */
static void print_escaped(FILE *out, size_t width, const struct ospx_model *model, long process,
                          const char *warn)
{
    const struct ospx_raw *raw = model->raw;
    size_t count = 0;
    for (size_t i = 0; i < raw->escaped_count; i++) {
        const struct ospx_escaped *escaped = &raw->escaped[i];
        if (process >= 0 && escaped->process != (uint32_t)process)
            continue;
        if (++count > ESCAPED_LINES)
            continue;
        char line[1400];
        const char *exe = ospx__str(escaped->exe), *reason = ospx__str(escaped->reason);
        snprintf(line, sizeof line, "process %lld%s%s%s ran unprofiled%s%s",
                 (long long)escaped->pid, exe[0] != '\0' ? " (" : "", exe,
                 exe[0] != '\0' ? ")" : "", reason[0] != '\0' ? ": " : "", reason);
        emit(out, width, warn, line);
    }
    if (count > ESCAPED_LINES) {
        char line[160];
        snprintf(line, sizeof line, "… and %zu more processes ran unprofiled",
                 count - ESCAPED_LINES);
        emit(out, width, warn, line);
    }
    if (count > 0)
        emit(out, width, NULL,
             "  their CPU time is not in this profile; time spent waiting for them shows as "
             "waiting");
}

static int compare_fiber_samples(const void *a, const void *b)
{
    const struct ospx_fiber_stat *x = *(const struct ospx_fiber_stat *const *)a;
    const struct ospx_fiber_stat *y = *(const struct ospx_fiber_stat *const *)b;
    uint64_t nx = x->on_cpu + x->waiting, ny = y->on_cpu + y->waiting;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    return (x->fiber > y->fiber) - (x->fiber < y->fiber);
}

/* One line per fiber, busiest first; past MAX_FIBER_LINES the rest share one summary line. */
static void print_fibers(FILE *out, size_t width, const struct ospx_model *model)
{
    const struct ospx_fiber_stat **sorted = malloc((model->fiber_count + 1) * sizeof *sorted);
    if (sorted == NULL)
        return;
    size_t fiber_count = 0;
    for (size_t i = 0; i < model->fiber_count; i++)
        if (thread_shown(model, i))
            sorted[fiber_count++] = &model->fibers[i];
    qsort(sorted, fiber_count, sizeof *sorted, compare_fiber_samples);
    size_t shown = fiber_count <= MAX_FIBER_LINES + 1 ? fiber_count : MAX_FIBER_LINES;
    int processes = several_processes(model);
    /* Names are padded to the widest shown (at most FIBER_NAME_COLUMNS); the sample count is
     * left off a line that would not fit the width. */
    char line[1024], names[MAX_FIBER_LINES + 1][FIBER_NAME_COLUMNS * 4 + 48];
    size_t name_width = 0;
    for (size_t i = 0; i < shown; i++) {
        char name[640], pid[32] = "";
        size_t t = (size_t)(sorted[i] - model->fibers);
        if (processes && model->raw->merged_processes)
            snprintf(pid, sizeof pid, "%.20s ",
                     ospx__process_comm(model->raw, model->raw->threads[t].process));
        else if (processes)
            snprintf(pid, sizeof pid, "%lld ",
                     (long long)ospx__process_pid(model->raw, model->raw->threads[t].process));
        snprintf(name, sizeof name, "%s%s %lld (%s)", pid,
                 is_runtime_fiber(model, t) ? "fiber" : "thread", (long long)sorted[i]->fiber,
                 sorted[i]->label);
        fit(names[i], sizeof names[i], name, FIBER_NAME_COLUMNS + (processes ? 8 : 0), CUT_END);
        name_width = columns(names[i]) > name_width ? columns(names[i]) : name_width;
    }
    int any_preempted = 0;
    for (size_t i = 0; i < model->fiber_count; i++)
        any_preempted |= model->fibers[i].preempted > 0;
    for (size_t i = 0; i < shown; i++) {
        const struct ospx_fiber_stat *fiber = sorted[i];
        uint64_t all = fiber->on_cpu + fiber->waiting;
        if (all == 0) {
            snprintf(line, sizeof line, "  %-*s  no samples",
                     (int)(name_width + strlen(names[i]) - columns(names[i])), names[i]);
            emit(out, width, NULL, line);
            continue;
        }
        /* With the kernel's records, the time a thread was runnable but not on a CPU is
         * neither running nor waiting: its own share. */
        char preempted[32] = "";
        if (any_preempted) {
            all += fiber->preempted;
            snprintf(preempted, sizeof preempted, "  preempted %5.1f%%",
                     percent_of(fiber->preempted, all));
        }
        int length =
            snprintf(line, sizeof line, "  %-*s  running %5.1f%%%s  waiting %5.1f%%",
                     (int)(name_width + strlen(names[i]) - columns(names[i])), names[i],
                     percent_of(fiber->on_cpu, all), preempted, percent_of(fiber->waiting, all));
        if (length > 0 && (size_t)length < sizeof line && columns(line) + 24 <= width)
            snprintf(line + length, sizeof line - (size_t)length, "  (%llu samples)",
                     (unsigned long long)(fiber->on_cpu + fiber->waiting));
        emit(out, width, NULL, line);
    }
    if (shown < fiber_count) {
        uint64_t on_cpu = 0, waiting = 0;
        for (size_t i = shown; i < fiber_count; i++) {
            on_cpu += sorted[i]->on_cpu;
            waiting += sorted[i]->waiting;
        }
        char more[64];
        count_threads(more, sizeof more, model, sorted, shown, fiber_count);
        /* "… 4 more threads: …", or of both kinds "… 4 more (2 threads, 2 fibers): …" */
        const char *kind = strchr(more, ' ');
        int mixed = strchr(more, ',') != NULL;
        snprintf(line, sizeof line, "  … %zu more%s%s%s: running %.1f%%  waiting %.1f%%",
                 fiber_count - shown, mixed ? " (" : kind, mixed ? more : "", mixed ? ")" : "",
                 percent_of(on_cpu, on_cpu + waiting), percent_of(waiting, on_cpu + waiting));
        emit(out, width, NULL, line);
    }
    free(sorted);
}

/* --inverted: under a row, the caller chains its self time came from, as a tree (perf report
 * --no-children -G, pprof's inverted flame graph, read in a terminal): each line a caller with
 * the share of the row's self time that came through it; a caller through which all of its
 * line's time came from one caller goes on the same line, "← 60.0%  parse  p.c:40  ← load ←
 * main", so a single chain is one line whatever its depth (stacks that end sooner, cut, do
 * not part it: the share is the first caller's); where the callers part, each goes
 * on a line of its own, indented under the caller they share. At most CALLER_LINES callers
 * under one caller (the others summed on one line, "… 4 more callers"), at most TREE_LINES
 * lines under a row. */
#define TREE_LINES  12
#define TREE_INDENT 3

struct caller_tree {
    FILE *out;
    size_t width;
    const struct ospx_model *model;
    const struct ospx__chain *chains;
    uint64_t row_self;
    const char *here;
    size_t lines; /* printed under this row */
};

/* The callers at `level` of the chains [lo, hi) (which share their first `level` callers),
 * most time first. */
static void print_caller_level(struct caller_tree *tree, size_t lo, size_t hi, size_t level,
                               size_t indent)
{
    struct group {
        size_t lo, hi;
        uint64_t self;
    } groups[CALLER_LINES + 1];
    size_t shown = 0, others = 0;
    uint64_t others_self = 0;
    for (size_t i = lo; i < hi;) {
        const struct ospx__chain *first = &tree->chains[i];
        struct group group = {i, i, 0};
        while (group.hi < hi &&
               (first->length > level
                    ? tree->chains[group.hi].length > level &&
                          tree->chains[group.hi].functions[level] == first->functions[level]
                    : tree->chains[group.hi].length <= level))
            group.self += tree->chains[group.hi++].self;
        i = group.hi;
        /* keep the CALLER_LINES heaviest, heaviest first */
        size_t at = shown < CALLER_LINES ? shown++ : CALLER_LINES;
        if (at == CALLER_LINES && group.self <= groups[CALLER_LINES - 1].self) {
            others++;
            others_self += group.self;
            continue;
        }
        if (at == CALLER_LINES) {
            others++;
            others_self += groups[CALLER_LINES - 1].self;
            at = CALLER_LINES - 1;
        }
        while (at > 0 && groups[at - 1].self < group.self) {
            groups[at] = groups[at - 1];
            at--;
        }
        groups[at] = group;
    }
    for (size_t g = 0; g < shown && tree->lines < TREE_LINES; g++) {
        const struct group *group = &groups[g];
        const struct ospx__chain *first = &tree->chains[group->lo];
        char line[2048], location[512] = "";
        int used;
        if (first->length <= level) {
            used =
                snprintf(line, sizeof line, "%*s ← %5.1f%%  %s", (int)indent, "",
                         percent_of(group->self, tree->row_self),
                         level == 0 ? "(no caller: the stack ends here)" : "(the stack ends here)");
            emit(tree->out, tree->width, NULL, line);
            tree->lines++;
            continue;
        }
        const struct ospx_function_stat *fn = &tree->model->functions[first->functions[level]];
        char name[1024];
        ospx_short_name(name, sizeof name, fn->name);
        format_location(location, sizeof location, tree->model, fn, tree->here);
        used = snprintf(line, sizeof line, "%*s ← %5.1f%%  %s  %s", (int)indent, "",
                        percent_of(group->self, tree->row_self), name, location);
        /* one way on: its callers on this line */
        size_t next = level + 1;
        for (;;) {
            int same = 1;
            size_t going = 0; /* stacks that end here do not part the way */
            for (size_t i = group->lo; i < group->hi && same; i++) {
                if (tree->chains[i].length <= next)
                    continue;
                going++;
                same =
                    tree->chains[i].functions[next] == tree->chains[group->hi - 1].functions[next];
            }
            same = same && going > 0;
            if (!same || used <= 0 || (size_t)used >= sizeof line)
                break;
            char caller[1024];
            ospx_short_name(
                caller, sizeof caller,
                tree->model->functions[tree->chains[group->hi - 1].functions[next]].name);
            used += snprintf(line + used, sizeof line - (size_t)used, "%s ← %s",
                             next == level + 1 ? " " : "", caller);
            next++;
        }
        emit(tree->out, tree->width, NULL, line);
        tree->lines++;
        /* where they part (or some stacks end here while others go on) */
        int ends = 1;
        for (size_t i = group->lo; i < group->hi && ends; i++)
            ends = tree->chains[i].length <= next;
        if (!ends)
            print_caller_level(tree, group->lo, group->hi, next, indent + TREE_INDENT);
    }
    if (others > 0 && tree->lines < TREE_LINES) {
        char line[256];
        snprintf(line, sizeof line, "%*s ← %5.1f%%  … %zu more %s", (int)indent, "",
                 percent_of(others_self, tree->row_self), others,
                 others == 1 ? "caller" : "callers");
        emit(tree->out, tree->width, NULL, line);
        tree->lines++;
    }
}

static void print_callers(FILE *out, size_t width, const struct ospx_model *model,
                          const struct ospx__callers *callers, const struct ospx_function_stat *fn,
                          uint32_t process, uint64_t self, const char *here)
{
    struct ospx__chain *chains;
    size_t count =
        ospx__callers_chains(callers, (uint32_t)(fn - model->functions), process, &chains);
    struct caller_tree tree = {out, width, model, chains, self, here, 0};
    if (count > 0 && self > 0)
        print_caller_level(&tree, 0, count, 0, BAR_CELLS);
    free(chains);
}

/* Columns before FUNCTION: bar, SELF%, TOTAL%, SELF, TOTAL and their separators. */
#define FIXED_COLUMNS   (BAR_CELLS + 1 + 6 + 1 + 6 + 1 + 6 + 1 + 6 + 2)
#define PROCESS_COLUMNS 24 /* at most, for "pid comm" */

/* One row of the table: a function, or with several processes a function in one process. */
struct table_row {
    const struct ospx_function_stat *fn;
    uint64_t self, total;
    char name[1024];                       /* the function's short name (ospx_short_name) */
    char process[PROCESS_COLUMNS * 4 + 8]; /* "" without a PROCESS column */
    uint32_t process_index;                /* its row in model->processes; 0 without */
    char location[512];
};

static int compare_row_names(const void *a, const void *b)
{
    const struct table_row *const *x = a, *const *y = b;
    int c = strcmp((*x)->name, (*y)->name);
    return c != 0 ? c : strcmp((*x)->location, (*y)->location);
}

/* Rows that one short name and location would show alike (a generic function's instances:
 * two `std::panic::catch_unwind` at panic.rs:359) show their arguments too. */
static void tell_apart(struct table_row *rows, size_t count)
{
    struct table_row **sorted = malloc((count + 1) * sizeof *sorted);
    if (sorted == NULL)
        return;
    for (size_t i = 0; i < count; i++)
        sorted[i] = &rows[i];
    qsort(sorted, count, sizeof *sorted, compare_row_names);
    for (size_t i = 0; i < count;) {
        size_t j = i + 1;
        while (j < count && compare_row_names(&sorted[i], &sorted[j]) == 0)
            j++;
        for (size_t k = i; j - i > 1 && k < j; k++)
            ospx__short_name_with_arguments(sorted[k]->name, sizeof sorted[k]->name,
                                            sorted[k]->fn->name);
        i = j;
    }
    free(sorted);
}

static void print_table(FILE *out, size_t width, const struct ospx_model *model, int color,
                        size_t top, const struct ospx__callers *callers)
{
    struct table_row *rows = calloc(top + 1, sizeof *rows);
    if (rows == NULL)
        return;
    int processes = several_processes(model) && model->process_functions != NULL;
    size_t row_count = 0, function_width = strlen("FUNCTION"), location_width = strlen("LOCATION");
    size_t process_width = processes ? strlen("PROCESS") : 0;
    char cwd[1024];
    const char *here = getcwd(cwd, sizeof cwd);
    size_t candidates = processes ? model->process_function_count : model->function_count;
    for (size_t i = 0; i < candidates && row_count < top; i++) {
        struct table_row *row = &rows[row_count];
        if (processes) {
            const struct ospx_process_function *entry = &model->process_functions[i];
            row->fn = &model->functions[entry->function];
            row->self = entry->self;
            row->total = entry->total;
            char name[640];
            format_process(name, sizeof name, model, entry->process);
            fit(row->process, sizeof row->process, name, PROCESS_COLUMNS, CUT_END);
            row->process_index = entry->process;
        } else {
            row->fn = &model->functions[i];
            row->self = row->fn->self;
            row->total = row->fn->total;
        }
        if (row->total == 0)
            continue;
        format_location(row->location, sizeof row->location, model, row->fn, here);
        ospx_short_name(row->name, sizeof row->name, row->fn->name);
        row_count++;
    }
    /* with several processes one function is a row per process: alike on purpose */
    if (!processes)
        tell_apart(rows, row_count);
    for (size_t r = 0; r < row_count; r++) {
        size_t f = columns(rows[r].name), l = columns(rows[r].location);
        size_t q = columns(rows[r].process);
        function_width = f > function_width ? f : function_width;
        location_width = l > location_width ? l : location_width;
        process_width = q > process_width ? q : process_width;
    }

    /* Share what the width leaves between FUNCTION and LOCATION: when both do not fit,
     * LOCATION gets up to 2/5 of it and FUNCTION the rest (LOCATION takes back what FUNCTION
     * does not need). */
    size_t fixed = FIXED_COLUMNS + (processes ? process_width + 2 : 0);
    size_t available = width > fixed + 2 + 2 ? width - fixed - 2 : 2;
    if (function_width + location_width > available) {
        size_t location_share = available * 2 / 5 > 1 ? available * 2 / 5 : 1;
        if (location_width > location_share)
            location_width = location_share;
        if (function_width > available - location_width)
            function_width = available - location_width;
        else
            location_width = available - function_width;
    }

    char line[4096], function[1024], location[1024], process[256] = "";
    if (processes)
        snprintf(process, sizeof process, "%-*s  ", (int)process_width, "PROCESS");
    snprintf(line, sizeof line, "%*s %6s %6s %6s %6s  %s%-*s  %s", BAR_CELLS, "", "SELF%", "TOTAL%",
             "SELF", "TOTAL", process, (int)function_width, "FUNCTION", "LOCATION");
    emit(out, width, NULL, line);
    for (size_t r = 0; r < row_count; r++) {
        const struct table_row *row = &rows[r];
        double self_pct = percent_of(row->self, model->on_cpu_samples);
        double total_pct = percent_of(row->total, model->on_cpu_samples);
        char bar[64], self_pct_text[16], total_pct_text[16], self[32], total[32];
        format_bar(bar, sizeof bar, self_pct, row->self > 0);
        snprintf(self_pct_text, sizeof self_pct_text, "%.1f%%", self_pct);
        snprintf(total_pct_text, sizeof total_pct_text, "%.1f%%", total_pct);
        double rate = model->raw->rate_hz > 0 ? model->raw->rate_hz : 1;
        ospx__format_duration(self, sizeof self, (double)row->self / rate);
        ospx__format_duration(total, sizeof total, (double)row->total / rate);
        /* a name's end tells two apart (the method, the closure): cut at its start */
        fit(function, sizeof function, row->name, function_width, CUT_START);
        fit(location, sizeof location, row->location, location_width, CUT_START);
        /* %-*s pads by bytes: widen by the bytes the multi-byte characters add. */
        int pad = (int)(function_width + strlen(function) - columns(function));
        if (processes)
            snprintf(process, sizeof process, "%-*s  ",
                     (int)(process_width + strlen(row->process) - columns(row->process)),
                     row->process);
        snprintf(line, sizeof line, "%s %6s %6s %6s %6s  %s%-*s  %s", bar, self_pct_text,
                 total_pct_text, self, total, process, pad, function, location);
        emit(out, width, color ? ospx_share_color(self_pct) : NULL, line);
        if (callers != NULL)
            print_callers(out, width, model, callers, row->fn, row->process_index, row->self, here);
    }
    free(rows);
}

/* Is `name` a root of stacks: the program's start (_start, the C library's start of main,
 * main itself) or a thread's (start_thread, clone3, clone)? */
static int is_root(const char *name)
{
    static const char *const roots[] = {
        "_start",      "__libc_start_main", "__libc_start_call_main",
        "main",        "start_thread",      "clone3",
        "clone",       "__clone",           "__clone3",
        "thread_start"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (strcmp(name, roots[i]) == 0)
            return 1;
    return 0;
}

/* When sample s's process had the unwind rows of every object mapped at its start, on the
 * run's t_rel_ns axis: UINT64_MAX when they never were, 0 when the raw file does not say. */
static uint64_t unwind_ready(const struct ospx_raw *raw, const struct ospx_sample *s)
{
    if (raw->process_count == 0 || s->thread >= raw->thread_count)
        return 0;
    uint32_t p = raw->threads[s->thread].process;
    if (p >= raw->process_count)
        return 0;
    const struct ospx_process *process = &raw->processes[p];
    if (process->unwind_ready_ns < 0)
        return 0;
    if (process->unwind_ready_ns == 0)
        return UINT64_MAX;
    uint64_t offset = process->start_unix_ns > raw->start_unix_ns
                          ? process->start_unix_ns - raw->start_unix_ns
                          : 0;
    return offset + (uint64_t)process->unwind_ready_ns;
}

/* "stacks: N% of on-CPU samples end before main or a thread's start, in IMAGE (N%), ...":
 * where the code had neither unwind tables nor frame pointers (JIT code, an object without
 * .eh_frame, a frame the rows could not express), or a sample came before ospreyd had built
 * its object's rows (how many of them, when the raw file says when it had). Said when at
 * least CUT_SAY of the on-CPU samples are cut; --inverted shows where. */
#define CUT_SAY 1.0
static void print_cut_stacks(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn)
{
    const struct ospx_raw *raw = model->raw;
    const struct ospx_symbols *sym = model->symbols;
    if (model->on_cpu_samples == 0 || sym == NULL)
        return;
    struct where {
        const char *image;
        uint64_t weight;
    } top[4] = {{0}};
    uint64_t cut = 0, elsewhere = 0, early = 0;
    /* Per stack: 0 not looked at, 1 whole, 2 cut. */
    unsigned char *seen = calloc(sym->stack_count ? sym->stack_count : 1, 1);
    if (seen == NULL)
        return;
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *s = &raw->samples[i];
        if (s->state != 0 || s->stack >= sym->stack_count || sym->stack_depths[s->stack] == 0)
            continue;
        size_t depth = sym->stack_depths[s->stack];
        const struct ospx_frame *outer = &sym->frames[sym->stack_slots[s->stack][depth - 1].frame];
        if (seen[s->stack] == 0) {
            /* Whole when any frame is a root: in a stripped executable, main and _start have
             * no names, but the C library's start of main does. */
            seen[s->stack] = 2;
            for (size_t k = depth; k-- > 0 && seen[s->stack] == 2;)
                if (is_root(sym->frames[sym->stack_slots[s->stack][k].frame].name))
                    seen[s->stack] = 1;
        }
        if (seen[s->stack] == 1)
            continue;
        cut += s->weight;
        if (s->t_rel_ns < unwind_ready(raw, s))
            early += s->weight;
        const char *image = outer->image[0] ? outer->image : "code in no object (a JIT's)";
        const char *slash = strrchr(image, '/');
        image = slash ? slash + 1 : image;
        size_t k = 0;
        while (k < 4 && top[k].image != NULL && strcmp(top[k].image, image) != 0)
            k++;
        if (k < 4 && top[k].image == NULL)
            top[k].image = image;
        if (k < 4)
            top[k].weight += s->weight;
        else
            elsewhere += s->weight;
    }
    free(seen);
    double share = 100.0 * (double)cut / (double)model->on_cpu_samples;
    if (cut == 0 || share < CUT_SAY)
        return;
    for (size_t a = 0; a < 4; a++) /* heaviest first */
        for (size_t b = a + 1; b < 4; b++)
            if (top[b].weight > top[a].weight) {
                struct where t = top[a];
                top[a] = top[b];
                top[b] = t;
            }
    char first[128], second[768];
    snprintf(first, sizeof first,
             "stacks: %.1f%% of on-CPU samples end before main or a thread's start", share);
    int n = snprintf(second, sizeof second, "they end in");
    for (size_t k = 0; k < 4 && top[k].image != NULL && n > 0 && (size_t)n < sizeof second; k++)
        n += snprintf(second + n, sizeof second - (size_t)n, "%s %s %.1f%%", k ? "," : "",
                      top[k].image, 100.0 * (double)top[k].weight / (double)model->on_cpu_samples);
    if (elsewhere > 0 && n > 0 && (size_t)n < sizeof second)
        n += snprintf(second + n, sizeof second - (size_t)n, ", elsewhere %.1f%%",
                      100.0 * (double)elsewhere / (double)model->on_cpu_samples);
    double early_share = 100.0 * (double)early / (double)model->on_cpu_samples;
    if (early_share >= 0.05 && n > 0 && (size_t)n < sizeof second) {
        /* In a profile of one process, when: the startup window a longer run outgrows. */
        char window[64] = "";
        const struct ospx_process *process = raw->process_count == 1 ? raw->processes : NULL;
        if (process != NULL && process->unwind_ready_ns > 0) {
            char duration[32];
            ospx__format_duration(duration, sizeof duration,
                                  (double)process->unwind_ready_ns / 1e9);
            snprintf(window, sizeof window, " in the first %s,", duration);
        }
        snprintf(second + n, sizeof second - (size_t)n,
                 "; %.1f%% came%s before the unwind tables were ready", early_share, window);
    }
    emit_pair(out, width, warn, first, second);
}

/* "sampling: achieved N samples/s of M requested": on-CPU periods over the CPU time the
 * collector measured, when it measured one. Below ACHIEVED_WARN of the rate asked for, a
 * warning: the CPU figures (times, not shares) then undercount. Always the whole run's: in a
 * view (--focus, --fiber, ...) the line says so, and a section of a view has none (the run's
 * line is above it). */
static void print_achieved_rate(FILE *out, size_t width, const struct ospx_model *model,
                                const char *warn, long process)
{
    const char *whole = model->raw->whole.view ? " (the whole run)" : "";
    if (process >= 0 && model->raw->whole.view)
        return;
    if (model->measured_cpu_ns <= 0 && model->raw->exit.signal > 0) {
        char line[128];
        snprintf(line, sizeof line,
                 "sampling: not checked: the program was killed by signal %d before the "
                 "collector read its CPU time",
                 model->raw->exit.signal);
        emit(out, width, NULL, line);
        return;
    }
    if (model->measured_cpu_ns <= 0 || model->raw->rate_hz == 0)
        return;
    double cpu = (double)model->measured_cpu_ns / 1e9;
    double achieved = (double)model->sampled_on_cpu / cpu;
    double share = 100.0 * achieved / model->raw->rate_hz;
    char measured[32], line[512];
    ospx__format_duration(measured, sizeof measured, cpu);
    snprintf(line, sizeof line,
             "sampling: achieved %.0f samples/s of %u requested (%.1f%%) over %s CPU measured%s",
             achieved, model->raw->rate_hz, share, measured, whole);
    if (share >= ACHIEVED_WARN) {
        emit(out, width, NULL, line);
        return;
    }
    snprintf(line, sizeof line, "warning: achieved %.0f samples/s of %u requested (%.1f%%)%s",
             achieved, model->raw->rate_hz, share, whole);
    char second[256];
    /* With no on-CPU sample there is no share to hold. */
    snprintf(second, sizeof second, "CPU times undercount (%s measured)%s", measured,
             model->sampled_on_cpu > 0 ? "; shares hold" : "");
    emit_pair(out, width, warn, line, second);
}

/* 1 when the symbolizer named nothing at the frame: `object+0xOFFSET`, or the raw pc. */
static int frame_unnamed(const struct ospx_frame *frame)
{
    const char *object = ospx__basename(frame->image);
    size_t length = strlen(object);
    return strncmp(frame->name, "0x", 2) == 0 ||
           (length > 0 && strncmp(frame->name, object, length) == 0 &&
            strncmp(frame->name + length, "+0x", 3) == 0);
}

/* When most of the CPU time is in code nothing named (stripped objects: Debian's gzip, git,
 * openssl) and no debuginfod server is set, one line says how to get the names: the objects'
 * -dbgsym packages, or DEBUGINFOD_URLS (llvm-symbolizer fetches debug information from it). */
static void print_names_hint(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (model->on_cpu_samples == 0 || (urls != NULL && urls[0] != '\0'))
        return;
    struct {
        const char *name;
        uint64_t self;
    } objects[3] = {{0}};
    uint64_t unnamed = 0;
    for (size_t i = 0; i < model->function_count; i++) {
        const struct ospx_function_stat *fn = &model->functions[i];
        const struct ospx_frame *frame = &model->symbols->frames[fn->frame];
        if (fn->self == 0 || !frame_unnamed(frame))
            continue;
        unnamed += fn->self;
        const char *object = ospx__basename(frame->image);
        size_t k = 0;
        while (k < 3 && objects[k].name != NULL && strcmp(objects[k].name, object) != 0)
            k++;
        if (k < 3) {
            objects[k].name = object;
            objects[k].self += fn->self;
        }
    }
    double share = percent_of(unnamed, model->on_cpu_samples);
    if (share < MOSTLY_UNNAMED)
        return;
    char line[512];
    int used = snprintf(line, sizeof line, "names: %.0f%% of CPU time without symbols", share);
    for (size_t k = 0; k < 3 && objects[k].name != NULL && used > 0 && (size_t)used < sizeof line;
         k++)
        used += snprintf(line + used, sizeof line - (size_t)used, "%s%s", k == 0 ? " (" : ", ",
                         objects[k].name[0] != '\0' ? objects[k].name : "no object");
    if (objects[0].name != NULL && used > 0 && (size_t)used < sizeof line)
        snprintf(line + used, sizeof line - (size_t)used, ")");
    emit_pair(out, width, warn, line, "install -dbgsym packages or set DEBUGINFOD_URLS");
}

/* The report of one model (the run, or one process of it) down to its notes: the header
 * (begun with `title`), processes, threads, the processes that ran unprofiled (those
 * `process` started; -1 all), the table, the notes. */
static int print_body(FILE *out, size_t width, const struct ospx_model *model,
                      const struct ospx_report_options *options, const char *title, long process)
{
    const char *warn = options->color ? COLOR_WARM : NULL;
    /* The notes under the table: fitted to a terminal, whole otherwise. */
    size_t notes = options->width > 0 ? width : 0;
    char line[512];
    print_header(out, width, model, title);
    if (several_processes(model))
        print_processes(out, width, model);
    print_fibers(out, width, model);
    print_escaped(out, width, model, process, warn);
    print_left_session(out, width, model, warn);
    fputc('\n', out);
    if (model->on_cpu_samples == 0) {
        emit(out, width, warn,
             "no on-CPU samples: the program waited all the time or ended "
             "before the first sample");
    } else if (options->list != NULL) {
        int rc = ospx__print_listing(out, width, model, options->list);
        if (rc != 0)
            return rc;
    } else {
        struct ospx__callers *callers = options->inverted ? ospx__callers_build(model) : NULL;
        print_table(out, width, model, options->color,
                    options->top > 0 ? options->top : TOP_FUNCTIONS, callers);
        ospx__callers_free(callers);
        if (model->on_cpu_samples < LOW_CONFIDENCE) {
            snprintf(line, sizeof line, "low confidence: only %llu on-CPU samples",
                     (unsigned long long)model->on_cpu_samples);
            emit_pair(out, notes, warn, line,
                      "run longer or raise the rate with -F N (OSPREY_PROFILE_HZ)");
        }
    }
    print_achieved_rate(out, notes, model, warn, process);
    print_cut_stacks(out, notes, model, warn);
    print_names_hint(out, notes, model, warn);
    if (model->dropped > 0) {
        const struct ospx_raw *raw = model->raw;
        int used = snprintf(line, sizeof line, "dropped: %llu samples could not be recorded",
                            (unsigned long long)model->dropped);
        for (size_t i = 0; i < raw->drop_count && used > 0 && (size_t)used < sizeof line; i++)
            used +=
                snprintf(line + used, sizeof line - (size_t)used, "%s%s %llu", i == 0 ? " (" : ", ",
                         raw->drops[i].reason, (unsigned long long)raw->drops[i].count);
        if (raw->drop_count > 0 && used > 0 && (size_t)used < sizeof line)
            snprintf(line + used, sizeof line - (size_t)used, ")");
        emit_pair(out, notes, warn, line, "the figures undercount");
    }
    return 0;
}

/* --per-process: after the run's report, each process with samples on its own, as if it had
 * been profiled alone (its samples, its span, its CPU time measured). */
static int print_sections(FILE *out, size_t width, const struct ospx_model *model,
                          const struct ospx_report_options *options)
{
    const struct ospx_raw *raw = model->raw;
    struct ospx_sample *samples = malloc((raw->sample_count + 1) * sizeof *samples);
    if (samples == NULL)
        return -ENOMEM;
    int rc = 0;
    for (uint32_t p = 0; rc == 0 && p < model->process_count && p < raw->process_count; p++) {
        if (model->processes[p].on_cpu + model->processes[p].waiting == 0)
            continue;
        struct ospx_raw alone = *raw;
        const struct ospx_process *process = &raw->processes[p];
        alone.sample_count = 0;
        alone.samples = samples;
        for (size_t i = 0; i < raw->sample_count; i++)
            if (raw->threads[raw->samples[i].thread].process == p)
                samples[alone.sample_count++] = raw->samples[i];
        alone.pid = process->pid;
        alone.exe = process->exe;
        alone.start_unix_ns = process->start_unix_ns;
        alone.end_unix_ns = process->end_unix_ns;
        alone.dropped = process->dropped;
        alone.drop_count = 0;
        alone.exit = process->exit;
        struct ospx_model section;
        rc = ospx_model_build(&alone, model->symbols, &section, NULL);
        if (rc != 0)
            break;
        char title[700];
        format_process_title(title, sizeof title, model, p);
        fputc('\n', out);
        rc = print_body(out, width, &section, options, title, (long)p);
        ospx_model_free(&section);
    }
    free(samples);
    return rc;
}

int ospx_report_print(const struct ospx_model *model, const struct ospx_report_options *options,
                      FILE *out)
{
    struct ospx_report_options defaults = {0};
    if (options == NULL)
        options = &defaults;
    size_t width = options->width > 0 ? (size_t)options->width : DEFAULT_WIDTH;
    const char *warn = options->color ? COLOR_WARM : NULL;
    char line[512];

    int rc = print_body(out, width, model, options, "osprey", -1);
    if (rc == 0 && options->per_process && model->processes_sampled > 1)
        rc = print_sections(out, width, model, options);
    if (rc != 0)
        return rc;
    if (options->written_count == 0 && options->kept_better) {
        fputc('\n', out);
        emit_pair(out, width, NULL,
                  "written: nothing (objects of this profile are not here, and the outputs "
                  "beside it were made when they were)",
                  "-o STEM or --format LIST writes anyway");
    } else if (options->written_count == 0 && options->view_only) {
        fputc('\n', out);
        emit_pair(out, width, NULL, "written: nothing (a view of the profile)",
                  "-o STEM or --format LIST writes its outputs");
    }
    if (options->written_count > 0) {
        fputc('\n', out);
        emit(out, width, NULL, "written:");
        for (size_t i = 0; i < options->written_count; i++) {
            char path[1300], fitted[1200];
            fit(fitted, sizeof fitted, options->written_paths[i], width > 2 ? width - 2 : 0,
                CUT_START);
            snprintf(path, sizeof path, "  %s", fitted);
            emit(out, width, NULL, path);
        }
        if (options->more_raw_count > 0) {
            char more[1300];
            snprintf(more, sizeof more, "  %zu more raw %s: %s", options->more_raw_count,
                     options->more_raw_count == 1 ? "file" : "files",
                     ospx__str(options->more_raw_pattern));
            emit(out, width, NULL, more);
        }
    }
    if (options->missing_count > 0) {
        /* the first in full, the others by what follows the stem they share: one line */
        const char *first = options->missing_paths[0];
        size_t stem = strlen(first);
        for (size_t i = 1; i < options->missing_count; i++) {
            size_t same = 0;
            while (same < stem && options->missing_paths[i][same] == first[same])
                same++;
            stem = same;
        }
        while (options->missing_count > 1 && stem > 0 && first[stem] != '.')
            stem--;
        char missing[2048];
        int used = snprintf(missing, sizeof missing, "not written: %s", first);
        for (size_t i = 1; i < options->missing_count && used > 0 && (size_t)used < sizeof missing;
             i++)
            used += snprintf(missing + used, sizeof missing - (size_t)used, ", %s",
                             options->missing_paths[i] + stem);
        fputc('\n', out);
        emit_pair(out, width, warn, missing,
                  options->missing_reason != NULL && options->missing_reason[0] != '\0'
                      ? options->missing_reason
                      : "a write failed");
    }
    if (options->replaced_count > 0) {
        snprintf(line, sizeof line, "replaced %zu %s from an earlier run at this stem",
                 options->replaced_count, options->replaced_count == 1 ? "file" : "files");
        emit(out, width, NULL, line);
    }
    return ferror(out) ? -EIO : 0;
}
