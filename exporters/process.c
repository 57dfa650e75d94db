/* process.c — the whole post-processing of a raw profile, as `osprey report` and
 * `osprey FILE --profile` run it: read the raw file, symbolize it, build the model, write the
 * four outputs beside `stem` (each atomically), then print the terminal report naming them.
 * The first failure stops the run and is returned through the error record; outputs already
 * written stay complete, nothing is ever half-written. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ospx_internal.h"

struct output {
    const char *suffix;
    int (*write)(const struct ospx_model *, const char *, struct ospx_error *);
};

static const struct output outputs[] = {
    {".speedscope.json", ospx_write_speedscope},
    {".cpuprofile", ospx_write_cpuprofile},
    {".folded", ospx_write_folded},
    {".offcpu.folded", ospx_write_offcpu_folded},
    {".profile.json", ospx_write_profile_json},
    {".pb.gz", ospx_write_pprof},
    {".trace.json", ospx_write_trace},
};
#define OUTPUT_COUNT (sizeof outputs / sizeof outputs[0])

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

static int write_outputs(const struct ospx_model *model, const struct ospx_process_options *options,
                         struct ospx_error *err)
{
    char *paths[OUTPUT_COUNT] = {NULL};
    int rc = 0;
    size_t stem_length = strlen(options->stem);
    for (size_t i = 0; i < OUTPUT_COUNT && rc == 0; i++) {
        size_t size = stem_length + strlen(outputs[i].suffix) + 1;
        paths[i] = malloc(size);
        if (paths[i] == NULL)
            rc = ospx_error_set(err, ENOMEM, options->stem, 0, 0, "out of memory");
        else
            snprintf(paths[i], size, "%s%s", options->stem, outputs[i].suffix);
        if (rc == 0)
            rc = outputs[i].write(model, paths[i], err);
    }
    if (rc == 0 && options->report != NULL) {
        struct ospx_report_options report = {options->color, report_width(options->report),
                                             (const char *const *)paths, OUTPUT_COUNT};
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

    struct ospx_raw raw;
    struct ospx_symbols symbols;
    struct ospx_model model;
    memset(&raw, 0, sizeof raw);
    memset(&symbols, 0, sizeof symbols);
    memset(&model, 0, sizeof model);

    int rc = ospx_raw_read(options->raw_path, &raw, err);
    if (rc != 0)
        return rc;
    struct ospx_symbolize_options symbolize = {options->binary, NULL, options->progress, NULL};
    rc = ospx_symbolize(&raw, &symbolize, &symbols, err);
    if (rc == 0)
        rc = ospx_model_build(&raw, &symbols, &model, err);
    if (rc == 0)
        rc = write_outputs(&model, options, err);
    ospx_model_free(&model);
    ospx_symbols_free(&symbols);
    ospx_raw_free(&raw);
    return rc;
}
