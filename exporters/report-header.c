/* report-header.c — the terminal report's lines above the table: the header (wall, CPU,
 * samples, rate, threads; with several processes their count first; the collector's CPU per
 * second when over 1% of a core), a line per process, the
 * processes that ran unprofiled (`escaped`) or left the session, and the per-thread state split,
 * busiest first. */
#include <stdlib.h>
#include <string.h>

#include "ospc.h"
#include "ospx_internal.h"

#define MAX_FIBER_LINES    8
#define FIBER_NAME_COLUMNS 28
#define COLLECTOR_CPU_SAID 10.0 /* ms of the collector's CPU per second: 1% of a core */

/* A profiled thread is a thread (the main one, or one the preload library or the shim
 * registered under its own tid); a fiber is a runtime's own, registered under an id of the
 * runtime's (osp_prof_thread_register). */
static int is_runtime_fiber(const struct ospx_model *model, size_t index)
{
    const struct ospx_thread *thread = &model->raw->threads[index];
    return thread->fiber != 0 && thread->tid != 0 && thread->fiber != thread->tid;
}

const char *ospx__fiber_label(const struct ospx_model *model, size_t index)
{
    const char *label = model->fibers[index].label;
    if (is_runtime_fiber(model, index) || strcmp(label, "thread") != 0)
        return label;
    return ospx__process_comm(model->raw, model->raw->threads[index].process);
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
int ospx__report_several_processes(const struct ospx_model *model)
{
    return model->processes_sampled > 1;
}

/* The header counts every sample and says how many were on-CPU: the figures below are
 * over those; with several processes it counts them first; then the collector's CPU per second
 * of wall time when that is over 1% of a core. `title` begins it ("osprey"). */
void ospx__report_header(FILE *out, size_t width, const struct ospx_model *model, const char *title)
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
    if (ospx__report_several_processes(model) && model->raw->merged_processes)
        snprintf(processes, sizeof processes, "%zu processes of %zu commands, ", merged,
                 model->processes_sampled);
    else if (ospx__report_several_processes(model))
        snprintf(processes, sizeof processes, "%zu processes, ", model->processes_sampled);
    snprintf(line, sizeof line, "%s: %s%s wall, %s CPU, %llu samples (%llu on-CPU), %u Hz, %s",
             title, processes, wall, cpu, (unsigned long long)model->total_samples,
             (unsigned long long)model->on_cpu_samples, model->raw->rate_hz, threads);
    /* The collector's own CPU per second of the run, once it is over 1% of a core: after a
     * semicolon, or on a line of its own when the header would be cut. */
    double collector =
        model->wall_seconds > 0 ? (double)model->raw->collector_cpu_ms / model->wall_seconds : 0;
    char said[64];
    snprintf(said, sizeof said, "collector %.0f ms CPU/s", collector);
    if (collector > COLLECTOR_CPU_SAID)
        ospx__emit_pair(out, width, NULL, line, said);
    else
        ospx__emit(out, width, NULL, line);
}

/* "4243 hotspot": a process as the table's PROCESS column and the lines name it; merged by
 * command, "gzip" (its line says how many processes). */
void ospx__report_process_name(char *out, size_t size, const struct ospx_model *model,
                               uint32_t process)
{
    if (model->raw->merged_processes)
        snprintf(out, size, "%s", model->processes[process].comm);
    else
        snprintf(out, size, "%lld %s", (long long)model->processes[process].pid,
                 model->processes[process].comm);
}

/* "process 4243 (hotspot)", merged by command "gzip (3 processes)": a process's line and its
 * --per-process section. */
void ospx__report_process_title(char *out, size_t size, const struct ospx_model *model,
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
void ospx__report_processes(FILE *out, size_t width, const struct ospx_model *model)
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
        ospx__report_process_title(name, sizeof name, model, p);
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
                 ospx__percent_of(process->on_cpu, model->on_cpu_samples),
                 (unsigned long long)(process->on_cpu + process->waiting), process->threads,
                 process->threads == 1 ? "thread" : "threads", how);
        ospx__emit(out, width, NULL, line);
    }
    if (rest > 0) {
        char line[160];
        snprintf(line, sizeof line, "  … %zu more processes: %.1f%% of the CPU", rest,
                 ospx__percent_of(rest_on_cpu, model->on_cpu_samples));
        ospx__emit(out, width, NULL, line);
    }
}

#define ESCAPED_LINES 3

/* The forked children that left the program's session and their parent (daemons): their
 * profile ends there, and they ran on unprofiled, which one line each says; the first few, the
 * rest counted (a server's children that outlive it by a double fork, many at a time). */
void ospx__report_left_session(FILE *out, size_t width, const struct ospx_model *model,
                               const char *warn)
{
    const struct ospx_raw *raw = model->raw;
    size_t count = 0;
    for (size_t p = 0; p < raw->process_count; p++) {
        const struct ospx_process *process = &raw->processes[p];
        if (!process->exit.left_session || ++count > ESCAPED_LINES)
            continue;
        const char *name = ospx__process_comm(raw, (uint32_t)p);
        char line[600];
        snprintf(line, sizeof line, "process %lld (%s) left the session (a daemon)",
                 (long long)process->pid, name);
        ospx__emit_pair(
            out, width, warn, line,
            "profiled until its collector saw it (within a second), then ran on unprofiled");
    }
    if (count > ESCAPED_LINES) {
        char line[160];
        snprintf(line, sizeof line, "… and %zu more processes left the session, likewise",
                 count - ESCAPED_LINES);
        ospx__emit(out, width, warn, line);
    }
}

/* The processes that ran unprofiled (their environment dropped the profiler): named, so that a
 * program that waited for them is not read as waiting for nothing. The first few one line
 * each, the rest counted. `process`: only those that process started; -1 all. */
void ospx__report_escaped(FILE *out, size_t width, const struct ospx_model *model, long process,
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
        ospx__emit(out, width, warn, line);
    }
    if (count > ESCAPED_LINES) {
        char line[160];
        snprintf(line, sizeof line, "… and %zu more processes ran unprofiled",
                 count - ESCAPED_LINES);
        ospx__emit(out, width, warn, line);
    }
    if (count > 0)
        ospx__emit(out, width, NULL,
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
void ospx__report_fibers(FILE *out, size_t width, const struct ospx_model *model)
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
    int processes = ospx__report_several_processes(model);
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
        /* A thread that never named itself goes by its process's command; the id tells several
         * apart. */
        int runtime_fiber = is_runtime_fiber(model, t);
        const char *label = ospx__fiber_label(model, t);
        snprintf(name, sizeof name, "%s%s %lld (%s)", pid, runtime_fiber ? "fiber" : "thread",
                 (long long)sorted[i]->fiber, label);
        ospx_text_fit(names[i], sizeof names[i], name, FIBER_NAME_COLUMNS + (processes ? 8 : 0),
                      OSPX_CUT_END);
        name_width =
            ospx_text_columns(names[i]) > name_width ? ospx_text_columns(names[i]) : name_width;
    }
    int any_preempted = 0;
    uint64_t any_waiting = 0;
    for (size_t i = 0; i < model->fiber_count; i++) {
        any_preempted |= model->fibers[i].preempted > 0;
        any_waiting += model->fibers[i].waiting;
    }
    /* An attach the kernel gave no frames of its own records no waits either: "waiting 0.0%"
     * would read as a thread that never waited (an nginx worker attached by its own user:
     * "running 100.0%", where root's attach of it waited 53.8%). */
    int waits_unknown = any_waiting == 0 && ospx__kernel_samples_withheld(model);
    for (size_t i = 0; i < shown; i++) {
        const struct ospx_fiber_stat *fiber = sorted[i];
        uint64_t all = fiber->on_cpu + fiber->waiting;
        if (all == 0) {
            snprintf(line, sizeof line, "  %-*s  no samples",
                     (int)(name_width + strlen(names[i]) - ospx_text_columns(names[i])), names[i]);
            ospx__emit(out, width, NULL, line);
            continue;
        }
        if (waits_unknown) {
            int length = snprintf(
                line, sizeof line, "  %-*s  on-CPU samples only",
                (int)(name_width + strlen(names[i]) - ospx_text_columns(names[i])), names[i]);
            if (length > 0 && (size_t)length < sizeof line && ospx_text_columns(line) + 24 <= width)
                snprintf(line + length, sizeof line - (size_t)length, "  (%llu samples)",
                         (unsigned long long)fiber->on_cpu);
            ospx__emit(out, width, NULL, line);
            continue;
        }
        /* With the kernel's records, the time a thread was runnable but not on a CPU is
         * neither running nor waiting: its own share. */
        char preempted[32] = "";
        if (any_preempted) {
            all += fiber->preempted;
            snprintf(preempted, sizeof preempted, "  preempted %5.1f%%",
                     ospx__percent_of(fiber->preempted, all));
        }
        int length = snprintf(line, sizeof line, "  %-*s  running %5.1f%%%s  waiting %5.1f%%",
                              (int)(name_width + strlen(names[i]) - ospx_text_columns(names[i])),
                              names[i], ospx__percent_of(fiber->on_cpu, all), preempted,
                              ospx__percent_of(fiber->waiting, all));
        if (length > 0 && (size_t)length < sizeof line && ospx_text_columns(line) + 24 <= width)
            snprintf(line + length, sizeof line - (size_t)length, "  (%llu samples)",
                     (unsigned long long)(fiber->on_cpu + fiber->waiting));
        ospx__emit(out, width, NULL, line);
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
                 ospx__percent_of(on_cpu, on_cpu + waiting),
                 ospx__percent_of(waiting, on_cpu + waiting));
        ospx__emit(out, width, NULL, line);
    }
    if (waits_unknown)
        ospx__emit(out, width, NULL,
                   "  waits: not recorded without the kernel's records (not root, "
                   "perf_event_paranoid >= 2)");
    free(sorted);
}

/* What stopped the sampling for good before the program ended ("sampling_ended"), in words. */
static const char *sampling_ended_why(const char *reason)
{
    return strcmp(reason, "seccomp") == 0 ? "the program entered a seccomp sandbox" : reason;
}

int ospx__report_sampling_ended(FILE *out, size_t width, const struct ospx_model *model,
                                long process, const char *warn)
{
    const struct ospx_raw *raw = model->raw;
    char line[700];
    if (process >= 0 || raw->process_count <= 1) {
        if (raw->exit.sampling_ended_ns == 0)
            return 0;
        snprintf(line, sizeof line, "sampling stopped at %.2f s: %s",
                 (double)raw->exit.sampling_ended_ns / 1e9,
                 sampling_ended_why(raw->exit.sampling_ended_reason));
        ospx__emit(out, width, warn, line);
        return 1;
    }
    int said = 0;
    for (uint32_t p = 0; p < raw->process_count && p < model->process_count; p++) {
        const struct ospx_exit *exit = &raw->processes[p].exit;
        if (exit->sampling_ended_ns == 0)
            continue;
        char title[600];
        ospx__report_process_title(title, sizeof title, model, p);
        /* An image that exec'd the next (a sandbox's launcher: the filter, then the program):
         * the sampling stopped for that image only, and its next image was profiled anew. */
        snprintf(line, sizeof line, "%s: sampling stopped at %.2f s: %s", title,
                 (double)exit->sampling_ended_ns / 1e9,
                 sampling_ended_why(exit->sampling_ended_reason));
        if (raw->processes[p].execd)
            ospx__emit_pair(out, width, warn, line, "the program it exec'd next was profiled anew");
        else
            ospx__emit(out, width, warn, line);
        said++;
    }
    return said;
}
