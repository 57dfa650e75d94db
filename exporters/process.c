/* process.c — the whole post-processing of a raw profile, as `osprey report`, `osprey FILE
 * --profile` and ospreyd (ospx_export_files) run it: read the raw file, symbolize it, build the
 * model, write the chosen outputs beside `stem` (each atomically), then print the terminal
 * report naming them.
 * The first failure stops the run and is returned through the error record; outputs already
 * written stay complete, nothing is ever half-written. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "ospx_html.h"
#include "ospx_internal.h"

struct output {
    const char *format; /* its name in a formats list */
    const char *suffix;
    int (*write)(const struct ospx_model *, const char *, struct ospx_error *);
};

/* In the order they are written and listed. Two files make the "folded" format. */
static const struct output outputs[] = {
    {"speedscope", ".speedscope.json", ospx_write_speedscope},
    {"cpuprofile", ".cpuprofile", ospx_write_cpuprofile},
    {"folded", ".folded", ospx_write_folded},
    {"folded", ".offcpu.folded", ospx_write_offcpu_folded},
    {"profile", ".profile.json", ospx_write_profile_json},
    {"pprof", ".pb.gz", ospx_write_pprof},
    {"trace", ".trace.json", ospx_write_trace},
    /* last, once the others are on disk: it is made from the speedscope file (and
     * profile.json when written), so asking for it writes the speedscope file too */
    {"html", ".html", NULL},
};
#define OUTPUT_COUNT (sizeof outputs / sizeof outputs[0])
#define HTML_OUTPUT  (OUTPUT_COUNT - 1)
/* The order the writer threads take the outputs in: the longest first, so that two threads
 * finish close together; html last, as it reads the files of two others. */
static const size_t work_order[] = {6, 1, 0, 2, 3, 4, 5, HTML_OUTPUT};

/* Which outputs a formats list ("speedscope,pprof", "all"; NULL or "" is all) selects, as a
 * mask over outputs[]. Returns 0, or -EINVAL naming the first unknown format. */
static int select_outputs(const char *formats, unsigned *mask, struct ospx_error *err)
{
    *mask = 0;
    if (formats == NULL || formats[0] == '\0') {
        *mask = (1u << OUTPUT_COUNT) - 1;
        return 0;
    }
    const char *at = formats;
    while (*at != '\0') {
        size_t length = strcspn(at, ",");
        int known = 0;
        if (length == 3 && strncmp(at, "all", 3) == 0) {
            *mask = (1u << OUTPUT_COUNT) - 1;
            known = 1;
        }
        for (size_t i = 0; i < OUTPUT_COUNT; i++) {
            if (strlen(outputs[i].format) == length &&
                strncmp(at, outputs[i].format, length) == 0) {
                *mask |= 1u << i;
                known = 1;
                if (outputs[i].write == NULL) /* html: from the speedscope file */
                    *mask |= 1u << 0;
            }
        }
        if (!known && length > 0)
            return ospx_error_set(err, EINVAL, "", 0, 0, "unknown output format '%.*s' (known: %s)",
                                  (int)length, at, OSPX_FORMATS);
        at += length + (at[length] == ',');
    }
    if (*mask == 0)
        return ospx_error_set(err, EINVAL, "", 0, 0, "no output format in '%s'", formats);
    return 0;
}

/* OSPREY_TIMING=1: one stderr line per stage with its wall time, for the benchmarks. */
struct stage_clock {
    int on;
    struct timespec last, last_cpu; /* wall, and this thread's CPU time */
};

static double seconds_since(const struct timespec *then, const struct timespec *now)
{
    return (double)(now->tv_sec - then->tv_sec) + (double)(now->tv_nsec - then->tv_nsec) / 1e9;
}

static void stage_start(struct stage_clock *clock)
{
    const char *timing = getenv("OSPREY_TIMING");
    clock->on = timing != NULL && strcmp(timing, "1") == 0;
    clock_gettime(CLOCK_MONOTONIC, &clock->last);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &clock->last_cpu);
}

static void stage_done(struct stage_clock *clock, const char *stage)
{
    if (!clock->on)
        return;
    struct timespec now, now_cpu;
    clock_gettime(CLOCK_MONOTONIC, &now);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now_cpu);
    fprintf(stderr, "osprey: timing: %-18s %7.3f s  (this thread's CPU %.3f s)\n", stage,
            seconds_since(&clock->last, &now), seconds_since(&clock->last_cpu, &now_cpu));
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

/* What the writer threads share: the outputs to write, taken in work_order, and each one's
 * result. */
struct writers {
    const struct ospx_model *model;
    const char *stem;
    char *const *paths; /* per output index; NULL: not selected */
    int timing;
    pthread_mutex_t lock;
    pthread_cond_t finished_one;
    size_t next;          /* into work_order */
    unsigned finished;    /* mask over outputs[] */
    int rc[OUTPUT_COUNT]; /* each output's result */
    struct ospx_error errors[OUTPUT_COUNT];
};

/* Writes output i (html: once the speedscope file and profile.json, when selected, are done). */
static int write_one(struct writers *writers, size_t i, struct ospx_error *err)
{
    if (outputs[i].write != NULL)
        return outputs[i].write(writers->model, writers->paths[i], err);
    unsigned needs = 1u << 0 | (writers->paths[4] != NULL ? 1u << 4 : 0);
    pthread_mutex_lock(&writers->lock);
    while ((writers->finished & needs) != needs)
        pthread_cond_wait(&writers->finished_one, &writers->lock);
    int ready = writers->rc[0] == 0 && writers->rc[4] == 0;
    pthread_mutex_unlock(&writers->lock);
    if (!ready) /* the failure is reported for that output */
        return ospx_error_set(err, EIO, writers->paths[i], 0, 0, "not written");
    return ospx_html_write_fresh(writers->stem, writers->paths[4] != NULL, err);
}

/* One writer thread: the next output not yet taken, until none is left or one failed. */
static void *run_writer(void *argument)
{
    struct writers *writers = argument;
    for (;;) {
        pthread_mutex_lock(&writers->lock);
        int failed = 0;
        for (size_t k = 0; k < OUTPUT_COUNT; k++)
            failed |= writers->rc[k] != 0;
        size_t i = OUTPUT_COUNT;
        while (!failed && writers->next < OUTPUT_COUNT && i == OUTPUT_COUNT) {
            size_t candidate = work_order[writers->next++];
            if (writers->paths[candidate] != NULL)
                i = candidate;
        }
        pthread_mutex_unlock(&writers->lock);
        if (i == OUTPUT_COUNT) /* none left, or one failed */
            return NULL;
        struct timespec start, end, start_cpu, end_cpu;
        clock_gettime(CLOCK_MONOTONIC, &start);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start_cpu);
        struct ospx_error err = {0};
        int rc = write_one(writers, i, &err);
        clock_gettime(CLOCK_MONOTONIC, &end);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end_cpu);
        if (writers->timing)
            fprintf(stderr, "osprey: timing: %-18s %7.3f s  (this thread's CPU %.3f s)\n",
                    outputs[i].suffix, seconds_since(&start, &end),
                    seconds_since(&start_cpu, &end_cpu));
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
                         unsigned mask, struct stage_clock *clock, struct ospx_error *err)
{
    char *paths[OUTPUT_COUNT] = {NULL};
    const char *listed[OUTPUT_COUNT + 1];
    size_t written = 0;
    size_t stem_length = strlen(options->stem);
    for (size_t i = 0; i < OUTPUT_COUNT; i++) {
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
        listed[written++] = paths[i];
    }
    /* What several writers share, made before they start: the model is read-only after. */
    const size_t *order, *first;
    int rc = ospx__model_thread_order(model, &order, &first) != 0
                 ? ospx_error_set(err, ENOMEM, options->stem, 0, 0, "out of memory")
                 : 0;
    if (rc == 0) {
        struct writers writers = {.model = model,
                                  .stem = options->stem,
                                  .paths = paths,
                                  .timing = clock->on,
                                  .lock = PTHREAD_MUTEX_INITIALIZER,
                                  .finished_one = PTHREAD_COND_INITIALIZER};
        pthread_t second;
        int threaded = pthread_create(&second, NULL, run_writer, &writers) == 0;
        run_writer(&writers);
        if (threaded)
            pthread_join(second, NULL);
        stage_done(clock, "outputs (both)");
        for (size_t i = 0; i < OUTPUT_COUNT && rc == 0; i++) {
            if (writers.rc[i] != 0) {
                rc = writers.rc[i];
                if (err != NULL)
                    *err = writers.errors[i];
            }
        }
    }
    if (options->raw_written != NULL)
        listed[written++] = options->raw_written;
    if (rc == 0 && options->report != NULL) {
        struct ospx_report_options report = {.color = options->color,
                                             .width = report_width(options->report),
                                             .written_paths = listed,
                                             .written_count = written,
                                             .top = options->top,
                                             .inverted = options->inverted,
                                             .list = options->list,
                                             .view_only = options->no_outputs};
        ospx_report_print(model, &report, options->report);
        fflush(options->report);
    }
    for (size_t i = 0; i < OUTPUT_COUNT; i++)
        free(paths[i]);
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
    rc = ospx_raw_read(options->raw_path, &raw, err);
    if (rc != 0) {
        ospx_symbolizer_prestart_free(prestarted);
        return rc;
    }
    stage_done(&clock, "read");
    struct ospx_symbolize_options symbolize = {.binary = options->binary,
                                               .progress = options->progress,
                                               .prestarted = prestarted,
                                               .symfs = options->symfs};
    rc = ospx_symbolize(&raw, &symbolize, &symbols, err);
    stage_done(&clock, "symbolize");
    if (rc == 0)
        rc = ospx_filter_samples(&raw, &symbols, &options->filter, err);
    if (rc == 0)
        rc = ospx_model_build(&raw, &symbols, &model, err);
    stage_done(&clock, "model");
    if (rc == 0)
        rc = write_outputs(&model, options, mask, &clock, err);
    ospx_model_free(&model);
    ospx_symbols_free(&symbols);
    ospx_raw_free(&raw);
    return rc;
}

int ospx_export_files(const char *raw_path, const char *stem, const char *formats,
                      struct ospx_error *err)
{
    struct ospx_process_options options = {.raw_path = raw_path, .stem = stem, .formats = formats};
    return ospx_process(&options, err);
}
