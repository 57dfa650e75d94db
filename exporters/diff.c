/* diff.c — `osprey diff BASE NEW`: two raw profiles of the same program side by side, each a
 * whole run (the file and its descendants' raw files beside it, merged). Prints
 * the functions (matched by name and object, see struct identity) whose share of the CPU time
 * (self / all on-CPU periods, so runs of different lengths compare) moved most, and writes each
 * profile as speedscope and pprof, to open side by side (`go tool pprof -diff_base STEM.base.pb.gz
 * STEM.new.pb.gz` reads the pair directly). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ospc.h"
#include "ospx_internal.h"

#define DIFF_ROWS 10

struct loaded {
    struct ospx_raw raw;
    struct ospx_symbols symbols;
    struct ospx_model model;
};

static int load(const char *path, const struct ospx_diff_options *options, struct loaded *loaded,
                struct ospx_error *err)
{
    memset(loaded, 0, sizeof *loaded);
    /* A side is a whole run: the raw file and its descendants' beside it (run.c), so a
     * function's share is of every process's CPU time. */
    int rc = ospx_run_read(&path, 1, 0, stderr, &loaded->raw, err);
    struct ospx_symbolize_options symbolize = {.binary = options->binary,
                                               .symfs = options->symfs,
                                               .use_other_build = options->use_other_build};
    if (rc == 0)
        rc = ospx_symbolize(&loaded->raw, &symbolize, &loaded->symbols, err);
    if (rc == 0)
        rc = ospx_model_build(&loaded->raw, &loaded->symbols, &loaded->model, err);
    return rc;
}

static void unload(struct loaded *loaded)
{
    ospx_model_free(&loaded->model);
    ospx_symbols_free(&loaded->symbols);
    ospx_raw_free(&loaded->raw);
}

/* One function in either profile: its self share in each, in percent. */
struct moved {
    const char *name, *file;
    double base, new_share;
};

/* A function of one run, as the other run knows it: its name and its object's base name
 * (unnamed code is already "object+0xOFFSET", the object's own address), then its source
 * file's base name (two static functions of one name in one object). Never an address of the
 * run, a scratch directory's path or a build tree's: runs compare across ASLR, rebuilds and
 * moves. */
struct identity {
    const struct ospx_function_stat *function;
    const char *object, *file;
};

static int compare_by_identity(const void *a, const void *b)
{
    const struct identity *x = a, *y = b;
    int c = strcmp(x->function->name, y->function->name);
    if (c == 0)
        c = strcmp(x->object, y->object);
    return c != 0 ? c : strcmp(x->file, y->file);
}

static int compare_by_movement(const void *a, const void *b)
{
    const struct moved *x = a, *y = b;
    double dx = fabs(x->new_share - x->base), dy = fabs(y->new_share - y->base);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return strcmp(x->name, y->name);
}

static struct identity *by_identity(const struct ospx_model *model)
{
    struct identity *sorted = malloc((model->function_count + 1) * sizeof *sorted);
    if (sorted == NULL)
        return NULL;
    for (size_t i = 0; i < model->function_count; i++) {
        const struct ospx_function_stat *function = &model->functions[i];
        const struct ospx_frame *frame = &model->symbols->frames[function->frame];
        sorted[i] = (struct identity){function, ospx__basename(ospx__str(frame->image)),
                                      ospx__basename(ospx__str(function->file))};
    }
    qsort(sorted, model->function_count, sizeof *sorted, compare_by_identity);
    return sorted;
}

static double share(uint64_t self, const struct ospx_model *model)
{
    return model->on_cpu_samples > 0 ? 100.0 * (double)self / (double)model->on_cpu_samples : 0;
}

/* Both function tables merged on (name, file). */
static size_t merge(const struct ospx_model *base, const struct ospx_model *new_model,
                    struct moved **out)
{
    struct identity *a = by_identity(base), *b = by_identity(new_model);
    *out = calloc(base->function_count + new_model->function_count + 1, sizeof **out);
    size_t i = 0, j = 0, n = 0;
    while (a != NULL && b != NULL && *out != NULL &&
           (i < base->function_count || j < new_model->function_count)) {
        int c = i == base->function_count        ? 1
                : j == new_model->function_count ? -1
                                                 : compare_by_identity(&a[i], &b[j]);
        const struct identity *fn = c <= 0 ? &a[i] : &b[j];
        struct moved row = {fn->function->name, fn->file, 0, 0};
        if (c <= 0)
            row.base = share(a[i++].function->self, base);
        if (c >= 0)
            row.new_share = share(b[j++].function->self, new_model);
        if (row.base > 0 || row.new_share > 0)
            (*out)[n++] = row;
    }
    free(a);
    free(b);
    if (*out == NULL)
        return 0;
    qsort(*out, n, sizeof **out, compare_by_movement);
    return n;
}

static int write_pair(const struct ospx_model *model, const char *stem, const char *side,
                      char paths[2][1200], struct ospx_error *err)
{
    snprintf(paths[0], sizeof paths[0], "%s.%s.speedscope.json", stem, side);
    snprintf(paths[1], sizeof paths[1], "%s.%s.pb.gz", stem, side);
    int rc = ospx_write_speedscope(model, paths[0], err);
    return rc == 0 ? ospx_write_pprof(model, paths[1], err) : rc;
}

int ospx_diff(const struct ospx_diff_options *options, struct ospx_error *err)
{
    struct loaded base, new_profile;
    int rc = load(options->base_path, options, &base, err);
    if (rc == 0)
        rc = load(options->new_path, options, &new_profile, err);
    else
        memset(&new_profile, 0, sizeof new_profile);
    char paths[4][1200];
    if (rc == 0)
        rc = write_pair(&base.model, options->stem, "base", paths, err);
    if (rc == 0)
        rc = write_pair(&new_profile.model, options->stem, "new", paths + 2, err);
    struct moved *rows = NULL;
    size_t count = rc == 0 ? merge(&base.model, &new_profile.model, &rows) : 0;
    if (rc == 0 && rows == NULL)
        rc = ospx_error_set(err, ENOMEM, options->new_path, 0, 0, "out of memory");
    FILE *out = options->report;
    if (rc == 0 && out != NULL) {
        char line[1400];
        for (int side = 0; side < 2; side++) {
            const struct ospx_model *model = side == 0 ? &base.model : &new_profile.model;
            snprintf(line, sizeof line, "%s %s: %.2fs CPU, %llu samples",
                     side == 0 ? "base" : "new ",
                     side == 0 ? options->base_path : options->new_path, model->cpu_seconds,
                     (unsigned long long)model->total_samples);
            ospc_printable(line);
            fprintf(out, "%s\n", line);
        }
        fprintf(out, "\n%7s %7s %8s  %s\n", "BASE", "NEW", "DELTA", "FUNCTION");
        size_t top = options->top > 0 ? options->top : DIFF_ROWS;
        for (size_t i = 0; i < count && i < top; i++) {
            /* where it is: its source file, else (unnamed code) nothing more: the name says
             * its object */
            const char *where = rows[i].file[0] != '\0' ? rows[i].file : "";
            snprintf(line, sizeof line, "%6.1f%% %6.1f%% %+7.1f%%  %s%s%s%s", rows[i].base,
                     rows[i].new_share, rows[i].new_share - rows[i].base, rows[i].name,
                     where[0] != '\0' ? " (" : "", where, where[0] != '\0' ? ")" : "");
            ospc_printable(line);
            fprintf(out, "%s\n", line);
        }
        fprintf(out, "\n(shares of each run's CPU time; DELTA in percentage points)\nwritten:\n");
        for (int i = 0; i < 4; i++)
            fprintf(out, "  %s\n", paths[i]);
        fprintf(out, "compare: go tool pprof -diff_base %s %s\n", paths[1], paths[3]);
        fflush(out);
    }
    free(rows);
    unload(&base);
    unload(&new_profile);
    return rc;
}
