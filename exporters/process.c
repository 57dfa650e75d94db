/* process.c — the whole post-processing of a raw profile, as `osprey report`, `osprey FILE
 * --profile` and ospreyd (ospx_export_files) run it: read the run's raw files (run.c: the
 * one named and its descendants' beside it, one profile of every process), symbolize it, build the
 * model, write the chosen outputs beside `stem` (each atomically), then print the terminal
 * report naming them.
 * The first failure stops the run and is returned through the error record; outputs already
 * written stay complete, nothing is ever half-written. A failure to write an output still
 * prints the report, which names the files that are missing. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "ospc.h"
#include "ospx_html.h"
#include "ospx_internal.h"

/* At most this many rows in the registry (outputs.c): the masks below are unsigned. */
#define MAX_OUTPUTS 32

/* Which outputs a formats list ("speedscope,pprof", "all"; NULL or "" is all) selects, as a
 * mask over the registry's rows; an output made from another's file brings that one. Returns
 * 0, or -EINVAL naming the first unknown format. */
static int select_outputs(const char *formats, unsigned *mask, struct ospx_error *err)
{
    size_t count;
    const struct ospx_output *outputs = ospx_outputs(&count);
    unsigned all = count >= MAX_OUTPUTS ? ~0u : (1u << count) - 1;
    *mask = 0;
    if (formats == NULL || formats[0] == '\0') {
        *mask = all;
        return 0;
    }
    const char *at = formats;
    while (*at != '\0') {
        size_t length = strcspn(at, ",");
        int known = 0;
        if (length == 3 && strncmp(at, "all", 3) == 0) {
            *mask = all;
            known = 1;
        }
        for (size_t i = 0; i < count; i++) {
            if (!ospx_output_is(&outputs[i], at, length))
                continue;
            *mask |= 1u << i;
            known = 1;
            for (size_t k = 0; outputs[i].made_from != NULL && k < count; k++)
                if (strcmp(outputs[k].format, outputs[i].made_from) == 0)
                    *mask |= 1u << k;
        }
        if (!known && length > 0) {
            char list[256];
            ospx_formats_list(list, sizeof list);
            return ospx_error_set(err, EINVAL, "", 0, 0, "unknown output format '%.*s' (known: %s)",
                                  (int)length, at, list);
        }
        at += length + (at[length] == ',');
    }
    if (*mask == 0)
        return ospx_error_set(err, EINVAL, "", 0, 0, "no output format in '%s'", formats);
    return 0;
}

/* Each process's main image into the build-id cache, when the file at its path is still the
 * object that ran (a program exec'd by a launcher is its own main image: its raw file names
 * it). 0 kept or nothing to keep, else the cache's negative errno. */
static int keep_main_object(const struct ospx_raw *raw, const char *exe)
{
    for (size_t i = 0; exe[0] != '\0' && i < raw->image_count; i++) {
        const struct ospx_image *image = &raw->images[i];
        const char *id = ospx__str(image->build_id);
        if (strcmp(image->path, exe) != 0 || id[0] == '\0')
            continue;
        struct ospc_elf_identity identity;
        /* As its process sees it while it lives (attached in another mount namespace). */
        char rooted[4096];
        const char *file = image->path;
        if (ospc_path_in_root((int32_t)ospx__process_pid(raw, image->process), image->path, rooted,
                              sizeof rooted) == 0 &&
            ospc_elf_identity(rooted, &identity, NULL, 0) == 0 &&
            strcmp(identity.build_id, id) == 0)
            file = rooted;
        if (ospc_elf_identity(file, &identity, NULL, 0) != 0 || strcmp(identity.build_id, id) != 0)
            return 0; /* gone or rebuilt already: nothing right to keep */
        int rc = ospc_cache_add(file, id);
        /* 1: another user's, not kept (not ours to vouch for); -EFBIG: too big to copy */
        return rc < 0 && rc != -EFBIG ? rc : 0;
    }
    return 0;
}

/* A failure to keep any of them is one warning line naming each program (a build of many
 * processes says it once, not once per command), and the outputs are written all the same. */
static void keep_main_objects(const struct ospx_raw *raw)
{
    char names[1024] = "";
    size_t used = 0, failed = 0;
    int reason = 0;
    for (uint32_t p = 0; p < ospx__process_count(raw); p++) {
        const char *exe = ospx__process_exe(raw, p);
        int seen = 0; /* forked children share their parent's */
        for (uint32_t q = 0; q < p; q++)
            seen |= strcmp(ospx__process_exe(raw, q), exe) == 0;
        int rc = seen ? 0 : keep_main_object(raw, exe);
        if (rc == 0)
            continue;
        reason = reason ? reason : rc;
        if (failed++ < 8 && used < sizeof names) {
            int n = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", exe);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    if (failed == 0)
        return;
    char directory[4096], more[32] = "", text[8400];
    if (ospc_cache_dir(directory, sizeof directory) != 0)
        snprintf(directory, sizeof directory, "(none: HOME is not set)");
    if (failed > 8)
        snprintf(more, sizeof more, " and %zu more", failed - 8);
    snprintf(text, sizeof text,
             "osprey: warning: cannot keep %s%s in the build-id cache %s: %s; `osprey report` "
             "will need --binary once %s gone",
             names, more, directory, ospc_cache_strerror(reason),
             failed > 1 ? "they are" : "it is");
    ospc_printable(text);
    fprintf(stderr, "%s\n", text);
}

/* 1 when a file of one of the outputs in `mask` is at the stem already. */
static int outputs_exist(const char *stem, unsigned mask)
{
    size_t count;
    const struct ospx_output *outputs = ospx_outputs(&count);
    for (size_t i = 0; i < count; i++) {
        char path[4096];
        if ((mask & (1u << i)) != 0 &&
            snprintf(path, sizeof path, "%s%s", stem, outputs[i].suffix) < (int)sizeof path &&
            access(path, F_OK) == 0)
            return 1;
    }
    return 0;
}

/* OSPREY_TIMING=1: one stderr line per stage with its wall time, for the benchmarks. */
struct stage_clock {
    int on;
    uint64_t last, last_cpu; /* wall, and this thread's CPU time (ns) */
};

static void stage_start(struct stage_clock *clock)
{
    const char *timing = getenv("OSPREY_TIMING");
    clock->on = timing != NULL && strcmp(timing, "1") == 0;
    clock->last = ospc_clock_ns(CLOCK_MONOTONIC);
    clock->last_cpu = ospc_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void stage_done(struct stage_clock *clock, const char *stage)
{
    if (!clock->on)
        return;
    uint64_t now = ospc_clock_ns(CLOCK_MONOTONIC), now_cpu = ospc_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    fprintf(stderr, "osprey: timing: %-18s %7.3f s  (this thread's CPU %.3f s)\n", stage,
            ospc_seconds_between(clock->last, now), ospc_seconds_between(clock->last_cpu, now_cpu));
    clock->last = now;
    clock->last_cpu = now_cpu;
}

/* Columns of the terminal the report goes to: the tty's own width, else $COLUMNS, else 0 (the
 * report's default). */
static int report_width(FILE *report)
{
    struct winsize size;
    if (isatty(fileno(report)) && ioctl(fileno(report), TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
        return size.ws_col;
    const char *columns = getenv("COLUMNS");
    if (columns != NULL) {
        long value = strtol(columns, NULL, 10);
        if (value > 0 && value < 10000)
            return (int)value;
    }
    return 0;
}

/* What the writer threads share: the outputs to write, taken by rank, and each one's
 * result. */
struct writers {
    const struct ospx_model *model;
    const struct ospx_output *outputs;
    size_t count;
    const char *stem;
    char *const *paths; /* per output index; NULL: not selected */
    int timing;
    pthread_mutex_t lock;
    pthread_cond_t finished_one;
    size_t work_order[MAX_OUTPUTS]; /* output indices by rank */
    size_t next;                    /* into work_order */
    unsigned finished;              /* mask over the outputs */
    int rc[MAX_OUTPUTS];            /* each output's result */
    struct ospx_error errors[MAX_OUTPUTS];
    /* the report's body, the last job: made into `body` by the thread that runs out of
     * outputs first (the model's alone; what was written is printed after it) */
    const struct ospx_report_options *report;
    int report_taken, report_rc;
    char *body;
    size_t body_size;
};

/* The report's body into memory, when no thread has taken it yet. */
static void write_report_body(struct writers *writers)
{
    pthread_mutex_lock(&writers->lock);
    int mine = writers->report != NULL && !writers->report_taken;
    writers->report_taken |= mine;
    pthread_mutex_unlock(&writers->lock);
    if (!mine)
        return;
    uint64_t start = ospc_clock_ns(CLOCK_MONOTONIC);
    uint64_t start_cpu = ospc_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    FILE *memory = open_memstream(&writers->body, &writers->body_size);
    int rc =
        memory != NULL ? ospx__report_print_body(writers->model, writers->report, memory) : -ENOMEM;
    if (memory != NULL && fclose(memory) != 0 && rc == 0)
        rc = -ENOMEM;
    writers->report_rc = rc; /* read after both threads are joined */
    if (writers->timing)
        fprintf(stderr, "osprey: timing: %-18s %7.3f s  (this thread's CPU %.3f s)\n",
                "report (body)", ospc_seconds_between(start, ospc_clock_ns(CLOCK_MONOTONIC)),
                ospc_seconds_between(start_cpu, ospc_clock_ns(CLOCK_THREAD_CPUTIME_ID)));
}

/* The selected outputs of format `format`, as a mask. */
static unsigned rows_of(const struct writers *writers, const char *format)
{
    unsigned mask = 0;
    for (size_t k = 0; format != NULL && k < writers->count; k++)
        if (writers->paths[k] != NULL && strcmp(writers->outputs[k].format, format) == 0)
            mask |= 1u << k;
    return mask;
}

/* Writes output i; one made from others' files (html) once those are done. */
static int write_one(struct writers *writers, size_t i, struct ospx_error *err)
{
    const struct ospx_output *output = &writers->outputs[i];
    if (output->write != NULL)
        return output->write(writers->model, writers->paths[i], err);
    unsigned from = rows_of(writers, output->made_from),
             reads = rows_of(writers, output->also_reads);
    unsigned needs = from | reads;
    pthread_mutex_lock(&writers->lock);
    while ((writers->finished & needs) != needs)
        pthread_cond_wait(&writers->finished_one, &writers->lock);
    int ready = 1;
    for (size_t k = 0; k < writers->count; k++)
        if ((needs & (1u << k)) != 0 && writers->rc[k] != 0)
            ready = 0;
    pthread_mutex_unlock(&writers->lock);
    if (!ready) /* the failure is reported for that output */
        return ospx_error_set(err, EIO, writers->paths[i], 0, 0, "not written");
    return ospx_html_write_fresh(writers->stem, reads != 0, err);
}

/* One writer thread: the next output not yet taken, until none is left or one failed. */
static void *run_writer(void *argument)
{
    struct writers *writers = argument;
    for (;;) {
        pthread_mutex_lock(&writers->lock);
        int failed = 0;
        for (size_t k = 0; k < writers->count; k++)
            failed |= writers->rc[k] != 0;
        size_t i = writers->count;
        while (!failed && writers->next < writers->count && i == writers->count) {
            size_t candidate = writers->work_order[writers->next++];
            if (writers->paths[candidate] != NULL)
                i = candidate;
        }
        pthread_mutex_unlock(&writers->lock);
        if (i == writers->count) { /* none left, or one failed: the report all the same */
            write_report_body(writers);
            return NULL;
        }
        uint64_t start = ospc_clock_ns(CLOCK_MONOTONIC);
        uint64_t start_cpu = ospc_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        struct ospx_error err = {0};
        int rc = write_one(writers, i, &err);
        if (writers->timing)
            fprintf(stderr, "osprey: timing: %-18s %7.3f s  (this thread's CPU %.3f s)\n",
                    writers->outputs[i].suffix,
                    ospc_seconds_between(start, ospc_clock_ns(CLOCK_MONOTONIC)),
                    ospc_seconds_between(start_cpu, ospc_clock_ns(CLOCK_THREAD_CPUTIME_ID)));
        pthread_mutex_lock(&writers->lock);
        writers->rc[i] = rc;
        writers->errors[i] = err;
        writers->finished |= 1u << i;
        pthread_cond_broadcast(&writers->finished_one);
        pthread_mutex_unlock(&writers->lock);
    }
}

/* The outputs are independent readers of the model: two threads write them (one per core of
 * the machines this runs on), each output still atomically. A failure stops both threads
 * taking more; the error reported is the one of the first output, in output order, that
 * failed. */
static int write_outputs(const struct ospx_model *model, const struct ospx_process_options *options,
                         unsigned mask, int kept_better, struct stage_clock *clock,
                         struct ospx_error *err)
{
    size_t count;
    const struct ospx_output *outputs = ospx_outputs(&count);
    char *paths[MAX_OUTPUTS] = {NULL};
    const char *listed[MAX_OUTPUTS + 1], *missing[MAX_OUTPUTS];
    size_t written = 0, missed = 0, replaced = options->raw_replaced ? 1 : 0;
    unsigned existed = 0; /* outputs at the stem before: replaced once the new one is whole */
    struct writers writers = {.model = model,
                              .outputs = outputs,
                              .count = count,
                              .stem = options->stem,
                              .paths = paths,
                              .timing = clock->on,
                              .lock = PTHREAD_MUTEX_INITIALIZER,
                              .finished_one = PTHREAD_COND_INITIALIZER};
    size_t stem_length = strlen(options->stem);
    for (size_t i = 0; i < count; i++) {
        if ((mask & (1u << i)) == 0)
            continue;
        size_t size = stem_length + strlen(outputs[i].suffix) + 1;
        paths[i] = malloc(size);
        if (paths[i] == NULL) {
            for (size_t k = 0; k < i; k++)
                free(paths[k]);
            return ospx_error_set(err, ENOMEM, options->stem, 0, 0, "out of memory");
        }
        snprintf(paths[i], size, "%s%s", options->stem, outputs[i].suffix);
        if (access(paths[i], F_OK) == 0)
            existed |= 1u << i;
    }
    /* The report's options: what was written is filled in once it is known. */
    char reason[sizeof err->text + 8] = "";
    struct ospx_report_options report = {
        .color = options->color,
        .width = options->report != NULL ? report_width(options->report) : 0,
        .written_paths = listed,
        .top = options->top,
        .inverted = options->inverted,
        .list = options->list,
        .view_only = options->no_outputs,
        .kept_better = kept_better,
        .missing_paths = missing,
        .missing_reason = reason,
        .per_process = options->per_process,
        .more_raw_count = options->raw_more_kept,
        .more_raw_pattern = options->raw_more_pattern};
    writers.report = options->report != NULL ? &report : NULL;
    /* What several writers share, made before they start: the model is read-only after. */
    const size_t *order, *first;
    int rc = ospx__model_thread_order(model, &order, &first) != 0 ||
                     ospx__model_frame_functions(model) != 0
                 ? ospx_error_set(err, ENOMEM, options->stem, 0, 0, "out of memory")
                 : 0;
    if (rc == 0) {
        /* by rank: insertion sort of a handful */
        for (size_t i = 0; i < count; i++) {
            size_t at = i;
            while (at > 0 && outputs[writers.work_order[at - 1]].rank > outputs[i].rank) {
                writers.work_order[at] = writers.work_order[at - 1];
                at--;
            }
            writers.work_order[at] = i;
        }
        pthread_t second;
        int threaded = pthread_create(&second, NULL, run_writer, &writers) == 0;
        run_writer(&writers);
        if (threaded)
            pthread_join(second, NULL);
        stage_done(clock, "outputs (both)");
        for (size_t i = 0; i < count && rc == 0; i++) {
            if (writers.rc[i] != 0) {
                rc = writers.rc[i];
                if (err != NULL)
                    *err = writers.errors[i];
            }
        }
    }
    /* What was written (each file complete), and what was not: after a failure the writers
     * take no more, so the rest is missing too. */
    for (size_t i = 0; i < count; i++) {
        if (paths[i] == NULL)
            continue;
        if ((writers.finished & (1u << i)) != 0 && writers.rc[i] == 0) {
            listed[written++] = paths[i];
            replaced += (existed & (1u << i)) != 0;
        } else
            missing[missed++] = paths[i];
    }
    if (options->raw_written != NULL)
        listed[written++] = options->raw_written;
    if (rc != 0 && err != NULL)
        snprintf(reason, sizeof reason, "%s", err->text);
    report.written_count = written;
    report.missing_count = missed;
    report.replaced_count = replaced;
    /* The report of a run whose outputs were not all written is still the run's report. Its
     * body was made by a writer thread when one ran out of outputs (the model's alone). */
    if (options->report != NULL && (rc == 0 || missed > 0)) {
        if (writers.report_taken && writers.report_rc == 0) {
            fwrite(writers.body, 1, writers.body_size, options->report);
            ospx__report_print_outcome(&report, options->report);
        } else {
            ospx_report_print(model, &report, options->report);
        }
        if (options->reported != NULL)
            *options->reported = 1;
        fflush(options->report);
        stage_done(clock, "report");
    }
    for (size_t i = 0; i < count; i++)
        free(paths[i]);
    free(writers.body);
    return rc;
}

int ospx_process(const struct ospx_process_options *options, struct ospx_error *err)
{
    if (options == NULL || options->raw_path == NULL || options->stem == NULL ||
        options->stem[0] == '\0')
        return ospx_error_set(err, EINVAL, "", 0, 0, "no raw profile or output stem given");

    unsigned mask = 0;
    int rc = options->no_outputs ? 0 : select_outputs(options->formats, &mask, err);
    if (rc == 0 && options->list != NULL)
        rc = ospx__listing_check(options->list, err);
    if (rc != 0)
        return rc;
    struct ospx_raw raw;
    struct ospx_symbols symbols;
    struct ospx_model model;
    memset(&raw, 0, sizeof raw);
    memset(&symbols, 0, sizeof symbols);
    memset(&model, 0, sizeof model);

    struct stage_clock clock;
    stage_start(&clock);
    /* llvm-symbolizer loads for half a second: let it do so while the raw file is read. */
    struct ospx_prestarted_symbolizer *prestarted = ospx_symbolizer_prestart();
    const char *first_path[1] = {options->raw_path};
    const char *const *paths = options->more_raw_count > 0 ? options->more_raw_paths : first_path;
    rc = ospx_run_read(paths, options->more_raw_count > 0 ? options->more_raw_count : 1,
                       options->no_siblings, stderr, &raw, err);
    if (rc != 0) {
        ospx_symbolizer_prestart_free(prestarted);
        return rc;
    }
    stage_done(&clock, "read");
    struct ospx_symbolize_options symbolize = {.binary = options->binary,
                                               .progress = options->progress,
                                               .prestarted = prestarted,
                                               .symfs = options->symfs,
                                               .use_other_build = options->use_other_build};
    rc = ospx_symbolize(&raw, &symbolize, &symbols, err);
    stage_done(&clock, "symbolize");
    if (rc == 0)
        rc = ospx_filter_samples(&raw, &symbols, &options->filter, err);
    if (rc == 0 && options->merge_processes)
        ospx_run_merge_processes(&raw);
    if (rc == 0)
        rc = ospx_model_build(&raw, &symbols, &model, err);
    stage_done(&clock, "model");
    int kept_better = rc == 0 && options->keep_better && symbols.unresolved_images > 0 &&
                      outputs_exist(options->stem, mask);
    if (kept_better)
        mask = 0;
    /* The program is kept once the profile could be read, whether or not every output could
     * be written: the raw file is what a later `osprey report` reads it with. Before the
     * outputs, so that the pprof file names the copy (pprof.c), which outlives a scratch
     * build. */
    if (rc == 0 && options->keep_main_object)
        keep_main_objects(&raw);
    if (rc == 0)
        rc = write_outputs(&model, options, mask, kept_better, &clock, err);
    ospx_model_free(&model);
    ospx_symbols_free(&symbols);
    ospx_raw_free(&raw);
    return rc;
}

int ospx_export_files(const char *raw_path, const char *stem, const char *formats,
                      struct ospx_error *err)
{
    /* One process's file: its descendants may still be running (each exports its own). */
    struct ospx_process_options options = {
        .raw_path = raw_path, .stem = stem, .formats = formats, .no_siblings = 1};
    return ospx_process(&options, err);
}
