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
 * take no columns) only when options->color.
 *
 * Its parts: the lines above the table (report-header.c), the notes under it (report-notes.c),
 * the width and colour helpers it shares with `osprey top` (text.c), the --inverted caller tree
 * under a row (listing.c, beside the chains it prints). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osp_unwind_step.h"
#include "ospc.h"
#include "ospx_internal.h"

#define TOP_FUNCTIONS  10
#define LOW_CONFIDENCE 100

/* The self gutter: OSPX__BAR_CELLS cells of eighth blocks, proportional to `percent` (a full
 * gutter is 100%); a function with any self time gets at least one eighth. Always
 * OSPX__BAR_CELLS columns. */
static void format_bar(char *out, size_t size, double percent, int any)
{
    static const char *const eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    long units = lround(percent / 100.0 * OSPX__BAR_CELLS * 8);
    if (units > OSPX__BAR_CELLS * 8)
        units = OSPX__BAR_CELLS * 8;
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
    for (; cells < OSPX__BAR_CELLS; cells++)
        used += (size_t)snprintf(out + used, size - used, " ");
}

/* file:line, with the file relative to the working directory when inside it, else its base
 * name; frames without a file show the image they belong to, and the marker of frames a deep
 * walk left out (`[… N frames]`, no code of any object) shows none. */
void ospx__report_location(char *out, size_t size, const struct ospx_model *model,
                           const struct ospx_function_stat *fn, const char *cwd)
{
    if (fn->file[0] == '\0') {
        const struct ospx_frame *frame = &model->symbols->frames[fn->frame];
        const char *image = ospx__str(frame->image);
        snprintf(out, size, "%s",
                 image[0] != '\0'                         ? ospx__basename(image)
                 : osp_unwind_left_out_is(frame->address) ? ""
                                                          : "?");
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

/* Columns before FUNCTION: bar, SELF%, TOTAL%, SELF, TOTAL and their separators. */
#define FIXED_COLUMNS   (OSPX__BAR_CELLS + 1 + 6 + 1 + 6 + 1 + 6 + 1 + 6 + 2)
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
    int processes = ospx__report_several_processes(model) && model->process_functions != NULL;
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
            ospx__report_process_name(name, sizeof name, model, entry->process);
            ospx_text_fit(row->process, sizeof row->process, name, PROCESS_COLUMNS, OSPX_CUT_END);
            row->process_index = entry->process;
        } else {
            row->fn = &model->functions[i];
            row->self = row->fn->self;
            row->total = row->fn->total;
        }
        if (row->total == 0)
            continue;
        ospx__report_location(row->location, sizeof row->location, model, row->fn, here);
        ospx_short_name(row->name, sizeof row->name, row->fn->name);
        row_count++;
    }
    /* with several processes one function is a row per process: alike on purpose */
    if (!processes)
        tell_apart(rows, row_count);
    for (size_t r = 0; r < row_count; r++) {
        size_t f = ospx_text_columns(rows[r].name), l = ospx_text_columns(rows[r].location);
        size_t q = ospx_text_columns(rows[r].process);
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
    snprintf(line, sizeof line, "%*s %6s %6s %6s %6s  %s%-*s  %s", OSPX__BAR_CELLS, "", "SELF%",
             "TOTAL%", "SELF", "TOTAL", process, (int)function_width, "FUNCTION", "LOCATION");
    ospx__emit(out, width, NULL, line);
    for (size_t r = 0; r < row_count; r++) {
        const struct table_row *row = &rows[r];
        double self_pct = ospx__percent_of(row->self, model->on_cpu_samples);
        double total_pct = ospx__percent_of(row->total, model->on_cpu_samples);
        char bar[64], self_pct_text[16], total_pct_text[16], self[32], total[32];
        format_bar(bar, sizeof bar, self_pct, row->self > 0);
        snprintf(self_pct_text, sizeof self_pct_text, "%.1f%%", self_pct);
        snprintf(total_pct_text, sizeof total_pct_text, "%.1f%%", total_pct);
        double rate = model->raw->rate_hz > 0 ? model->raw->rate_hz : 1;
        ospx__format_duration(self, sizeof self, (double)row->self / rate);
        ospx__format_duration(total, sizeof total, (double)row->total / rate);
        /* a name's end tells two apart (the method, the closure): cut at its start */
        ospx_text_fit(function, sizeof function, row->name, function_width, OSPX_CUT_START);
        ospx_text_fit(location, sizeof location, row->location, location_width, OSPX_CUT_START);
        /* %-*s pads by bytes: widen by the bytes the multi-byte characters add. */
        int pad = (int)(function_width + strlen(function) - ospx_text_columns(function));
        if (processes)
            snprintf(process, sizeof process, "%-*s  ",
                     (int)(process_width + strlen(row->process) - ospx_text_columns(row->process)),
                     row->process);
        snprintf(line, sizeof line, "%s %6s %6s %6s %6s  %s%-*s  %s", bar, self_pct_text,
                 total_pct_text, self, total, process, pad, function, location);
        ospx__emit(out, width, color ? ospx_share_color(self_pct) : NULL, line);
        if (callers != NULL)
            ospx__report_callers(out, width, model, callers, row->fn, row->process_index, row->self,
                                 here);
    }
    free(rows);
}

/* The report of one model (the run, or one process of it) down to its notes: the header
 * (begun with `title`), processes, threads, the processes that ran unprofiled (those
 * `process` started; -1 all), the table, the notes. */
static int print_body(FILE *out, size_t width, const struct ospx_model *model,
                      const struct ospx_report_options *options, const char *title, long process)
{
    const char *warn = options->color ? OSPX__COLOR_WARN : NULL;
    /* The notes under the table: fitted to a terminal, whole otherwise. */
    size_t notes = options->width > 0 ? width : 0;
    char line[512];
    ospx__report_header(out, width, model, title);
    if (ospx__report_several_processes(model))
        ospx__report_processes(out, width, model);
    ospx__report_fibers(out, width, model);
    ospx__report_escaped(out, width, model, process, warn);
    ospx__report_left_session(out, width, model, warn);
    int ended = ospx__report_sampling_ended(out, width, model, process, warn);
    fputc('\n', out);
    /* CPU time measured where no sample was taken (five periods or more, of the whole run):
     * the sampling stopped or never began (a seccomp sandbox entered early, the program's own
     * SIGPROF), not a program that waited. */
    int unsampled_cpu = model->on_cpu_samples == 0 && process < 0 && !model->raw->whole.view &&
                        model->raw->rate_hz > 0 &&
                        (double)model->measured_cpu_ns * model->raw->rate_hz >= 5e9;
    if (unsampled_cpu && ended > 0) {
        /* said above, with when and why */
    } else if (unsampled_cpu) {
        char measured[32];
        ospx__format_duration(measured, sizeof measured, (double)model->measured_cpu_ns / 1e9);
        snprintf(line, sizeof line, "no on-CPU samples, though the collector measured %s of CPU",
                 measured);
        ospx__emit_pair(out, notes, warn, line,
                        "sampling stopped early or never began (a seccomp sandbox it entered, a "
                        "SIGPROF of its own)");
    } else if (model->on_cpu_samples == 0) {
        ospx__emit(out, width, warn,
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
            ospx__emit_pair(out, notes, warn, line,
                            "run longer or raise the rate with -F N (OSPREY_PROFILE_HZ)");
        }
    }
    ospx__report_achieved_rate(out, notes, model, warn, process);
    ospx__report_cut_stacks(out, notes, model, warn);
    ospx__report_names_hint(out, notes, model, warn);
    ospx__report_kernel_hint(out, notes, model);
    ospx__report_late_cpu(out, notes, model, warn);
    for (size_t i = 0; i < model->raw->jit_note_count; i++) {
        snprintf(line, sizeof line, "jit: %s", model->raw->jit_notes[i]);
        ospc_printable(line); /* a path the program chose */
        ospx__emit(out, notes, warn, line);
    }
    ospx__report_wait_source(out, notes, model, warn, process);
    ospx__report_waits_lost(out, notes, model, warn, process);
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
        ospx__emit_pair(out, notes, warn, line, "the figures undercount");
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
        memcpy(alone.comm, process->comm, sizeof alone.comm);
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
        ospx__report_process_title(title, sizeof title, model, p);
        fputc('\n', out);
        rc = print_body(out, width, &section, options, title, (long)p);
        ospx_model_free(&section);
    }
    free(samples);
    return rc;
}

int ospx__report_print_body(const struct ospx_model *model,
                            const struct ospx_report_options *options, FILE *out)
{
    size_t width = options->width > 0 ? (size_t)options->width : OSPX__DEFAULT_WIDTH;
    int rc = print_body(out, width, model, options, "osprey", -1);
    if (rc == 0 && options->per_process && model->processes_sampled > 1)
        rc = print_sections(out, width, model, options);
    return rc;
}

int ospx__report_print_outcome(const struct ospx_report_options *options, FILE *out)
{
    size_t width = options->width > 0 ? (size_t)options->width : OSPX__DEFAULT_WIDTH;
    const char *warn = options->color ? OSPX__COLOR_WARN : NULL;
    char line[512];
    if (options->written_count == 0 && options->kept_better) {
        fputc('\n', out);
        ospx__emit_pair(out, width, NULL,
                        "written: nothing (objects of this profile are not here, and the outputs "
                        "beside it were made when they were)",
                        "-o STEM or --format LIST writes anyway");
    } else if (options->written_count == 0 && options->view_only) {
        fputc('\n', out);
        ospx__emit_pair(out, width, NULL, "written: nothing (a view of the profile)",
                        "-o STEM or --format LIST writes its outputs");
    }
    if (options->written_count > 0) {
        fputc('\n', out);
        ospx__emit(out, width, NULL, "written:");
        for (size_t i = 0; i < options->written_count; i++) {
            char path[1300], fitted[1200];
            ospx_text_fit(fitted, sizeof fitted, options->written_paths[i],
                          width > 2 ? width - 2 : 0, OSPX_CUT_START);
            snprintf(path, sizeof path, "  %s", fitted);
            ospx__emit(out, width, NULL, path);
        }
        if (options->more_raw_count > 0) {
            char more[1300];
            snprintf(more, sizeof more, "  %zu more raw %s: %s", options->more_raw_count,
                     options->more_raw_count == 1 ? "file" : "files",
                     ospx__str(options->more_raw_pattern));
            ospx__emit(out, width, NULL, more);
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
        ospx__emit_pair(out, width, warn, missing,
                        options->missing_reason != NULL && options->missing_reason[0] != '\0'
                            ? options->missing_reason
                            : "a write failed");
    }
    if (options->replaced_count > 0) {
        snprintf(line, sizeof line, "replaced %zu %s from an earlier run at this stem",
                 options->replaced_count, options->replaced_count == 1 ? "file" : "files");
        ospx__emit(out, width, NULL, line);
    }
    return ferror(out) ? -EIO : 0;
}

int ospx_report_print(const struct ospx_model *model, const struct ospx_report_options *options,
                      FILE *out)
{
    struct ospx_report_options defaults = {0};
    if (options == NULL)
        options = &defaults;
    int rc = ospx__report_print_body(model, options, out);
    return rc != 0 ? rc : ospx__report_print_outcome(options, out);
}
