/* process.c — the whole post-processing of a raw profile, as `osprey report`, `osprey FILE
 * --profile` and ospreyd (ospx_export_files) run it: read the raw file, symbolize it, build the
 * model, write the chosen outputs beside `stem` (each atomically), then print the terminal
 * report naming them.
 * The first failure stops the run and is returned through the error record; outputs already
 * written stay complete, nothing is ever half-written. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

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
};
#define OUTPUT_COUNT (sizeof outputs / sizeof outputs[0])

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
                         unsigned mask, struct ospx_error *err)
{
    char *paths[OUTPUT_COUNT] = {NULL};
    size_t written = 0;
    int rc = 0;
    size_t stem_length = strlen(options->stem);
    for (size_t i = 0; i < OUTPUT_COUNT && rc == 0; i++) {
        if ((mask & (1u << i)) == 0)
            continue;
        size_t size = stem_length + strlen(outputs[i].suffix) + 1;
        char *path = malloc(size);
        if (path == NULL)
            rc = ospx_error_set(err, ENOMEM, options->stem, 0, 0, "out of memory");
        else
            snprintf(path, size, "%s%s", options->stem, outputs[i].suffix);
        if (rc == 0)
            paths[written++] = path;
        if (rc == 0)
            rc = outputs[i].write(model, path, err);
    }
    if (rc == 0 && options->report != NULL) {
        struct ospx_report_options report = {options->color,
                                             report_width(options->report),
                                             (const char *const *)paths,
                                             written,
                                             options->top,
                                             options->inverted,
                                             options->list};
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

    unsigned mask;
    int rc = select_outputs(options->formats, &mask, err);
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

    rc = ospx_raw_read(options->raw_path, &raw, err);
    if (rc != 0)
        return rc;
    struct ospx_symbolize_options symbolize = {options->binary, NULL, options->progress, NULL};
    rc = ospx_symbolize(&raw, &symbolize, &symbols, err);
    if (rc == 0)
        rc = ospx_filter_samples(&raw, &symbols, &options->filter, err);
    if (rc == 0)
        rc = ospx_model_build(&raw, &symbols, &model, err);
    if (rc == 0)
        rc = write_outputs(&model, options, mask, err);
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
