/* diff.c — `osprey diff BASE NEW`: two raw profiles of the same program side by side, each a
 * whole run (the file and its descendants' raw files beside it, merged). Prints the functions
 * (matched by name and object, see struct identity) whose self or total share of the CPU time
 * (of all on-CPU periods, so runs of different lengths compare) moved most, with each run's
 * time beside the share, and writes each profile as speedscope and pprof, to open side by side
 * (`go tool pprof -diff_base STEM.base.pb.gz STEM.new.pb.gz` reads the pair directly). */
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

/* A function of one run, as the other run knows it: its name and its object — the run's
 * program is one object whatever its file is called (a renamed source builds a renamed
 * scratch binary), any other object is its base name; unnamed code is already
 * "object+0xOFFSET", the object's own address — then its source file's base name, which only
 * tells apart distinct functions of one name in one object (two static functions). Never an
 * address of the run, a scratch directory's path or a build tree's: runs compare across ASLR,
 * rebuilds, moves and renamed files. */
struct identity {
    const struct ospx_function_stat *function;
    const char *object, *file;
};

static int compare_by_name_and_object(const struct identity *x, const struct identity *y)
{
    int c = strcmp(x->function->name, y->function->name);
    return c != 0 ? c : strcmp(x->object, y->object);
}

static int compare_by_identity(const void *a, const void *b)
{
    const struct identity *x = a, *y = b;
    int c = compare_by_name_and_object(x, y);
    return c != 0 ? c : strcmp(x->file, y->file);
}

/* The larger of a row's self and total moves, in percentage points. */
static double movement(const struct ospx__diff_row *row)
{
    double self = fabs(row->self_share[1] - row->self_share[0]);
    double total = fabs(row->total_share[1] - row->total_share[0]);
    return self > total ? self : total;
}

static int compare_by_movement(const void *a, const void *b)
{
    const struct ospx__diff_row *x = a, *y = b;
    double dx = movement(x), dy = movement(y);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : strcmp(x->file, y->file);
}

/* Whether an image is one of the run's programs (a process's executable), by base name. */
static int is_program(const struct ospx_raw *raw, const char *image)
{
    for (uint32_t p = 0; p < ospx__process_count(raw); p++)
        if (strcmp(ospx__basename(ospx__process_exe(raw, p)), image) == 0)
            return 1;
    return 0;
}

static struct identity *by_identity(const struct ospx_model *model)
{
    struct identity *sorted = malloc((model->function_count + 1) * sizeof *sorted);
    if (sorted == NULL)
        return NULL;
    for (size_t i = 0; i < model->function_count; i++) {
        const struct ospx_function_stat *function = &model->functions[i];
        const char *image =
            ospx__basename(ospx__str(model->symbols->frames[function->frame].image));
        sorted[i] = (struct identity){function, is_program(model->raw, image) ? "" : image,
                                      ospx__basename(ospx__str(function->file))};
    }
    qsort(sorted, model->function_count, sizeof *sorted, compare_by_identity);
    return sorted;
}

static double share(uint64_t periods, const struct ospx_model *model)
{
    return model->on_cpu_samples > 0 ? 100.0 * (double)periods / (double)model->on_cpu_samples : 0;
}

/* Adds a row of base's function (a, or NULL) and new's (b, or NULL), when either has time. */
static void add_row(struct ospx__diff_row *rows, size_t *count, const struct identity *a,
                    const struct identity *b, const struct ospx_model *base,
                    const struct ospx_model *new_model)
{
    struct ospx__diff_row row = {.name = (b != NULL ? b : a)->function->name,
                                 .file = (b != NULL ? b : a)->file};
    const struct identity *sides[2] = {a, b};
    const struct ospx_model *models[2] = {base, new_model};
    for (int side = 0; side < 2; side++) {
        if (sides[side] == NULL)
            continue;
        row.self[side] = sides[side]->function->self;
        row.total[side] = sides[side]->function->total;
        row.self_share[side] = share(row.self[side], models[side]);
        row.total_share[side] = share(row.total[side], models[side]);
    }
    if (row.total[0] > 0 || row.total[1] > 0)
        rows[(*count)++] = row;
}

/* One (name, object) group of each run: a[0..na) and b[0..nb), sorted by file. One on each
 * side is one function, whatever its file; among several, those of one file are matched, and
 * when one is left on each side they are one function whose file was renamed. */
static int match_group(struct ospx__diff_row *rows, size_t *count, const struct identity *a,
                       size_t na, const struct identity *b, size_t nb,
                       const struct ospx_model *base, const struct ospx_model *new_model)
{
    if (na == 1 && nb == 1) {
        add_row(rows, count, a, b, base, new_model);
        return 0;
    }
    uint8_t *used_a = calloc(na + nb + 1, 1), *used_b = used_a + na;
    if (used_a == NULL)
        return -ENOMEM;
    size_t matched = 0;
    for (size_t i = 0, j = 0; i < na && j < nb;) {
        int c = strcmp(a[i].file, b[j].file);
        if (c == 0) {
            add_row(rows, count, &a[i], &b[j], base, new_model);
            used_a[i++] = used_b[j++] = 1;
            matched++;
        } else if (c < 0) {
            i++;
        } else {
            j++;
        }
    }
    if (na - matched == 1 && nb - matched == 1) {
        size_t i = 0, j = 0;
        while (used_a[i])
            i++;
        while (used_b[j])
            j++;
        add_row(rows, count, &a[i], &b[j], base, new_model);
        used_a[i] = used_b[j] = 1;
    }
    for (size_t i = 0; i < na; i++)
        if (!used_a[i])
            add_row(rows, count, &a[i], NULL, base, new_model);
    for (size_t j = 0; j < nb; j++)
        if (!used_b[j])
            add_row(rows, count, NULL, &b[j], base, new_model);
    free(used_a);
    return 0;
}

long ospx__diff_rows(const struct ospx_model *base, const struct ospx_model *new_model,
                     struct ospx__diff_row **rows)
{
    size_t na = base->function_count, nb = new_model->function_count, count = 0;
    struct identity *a = by_identity(base), *b = by_identity(new_model);
    *rows = calloc(na + nb + 1, sizeof **rows);
    if (a == NULL || b == NULL || *rows == NULL) {
        free(a);
        free(b);
        free(*rows);
        *rows = NULL;
        return -ENOMEM;
    }
    int rc = 0;
    for (size_t i = 0, j = 0; rc == 0 && (i < na || j < nb);) {
        int c = i == na ? 1 : j == nb ? -1 : compare_by_name_and_object(&a[i], &b[j]);
        size_t i_end = i, j_end = j;
        while (c <= 0 && i_end < na && compare_by_name_and_object(&a[i_end], &a[i]) == 0)
            i_end++;
        while (c >= 0 && j_end < nb && compare_by_name_and_object(&b[j_end], &b[j]) == 0)
            j_end++;
        rc = match_group(*rows, &count, a + i, i_end - i, b + j, j_end - j, base, new_model);
        i = i_end;
        j = j_end;
    }
    free(a);
    free(b);
    if (rc != 0) {
        free(*rows);
        *rows = NULL;
        return rc;
    }
    qsort(*rows, count, sizeof **rows, compare_by_movement);
    return (long)count;
}

/* "75.0%  1.50s": a share and its time, in 14 columns. */
static void format_cell(char *out, size_t size, double percent, uint64_t periods, uint32_t rate)
{
    char time[32];
    ospx__format_duration(time, sizeof time, rate > 0 ? (double)periods / rate : 0);
    snprintf(out, size, "%6.1f%% %6s", percent, time);
}

void ospx__diff_print(FILE *out, const struct ospx_model *base, const struct ospx_model *new_model,
                      const struct ospx__diff_row *rows, size_t count, size_t top)
{
    fprintf(out, "%22s%42s\n", "SELF", "TOTAL");
    fprintf(out, "%14s  %14s  %6s    %14s  %14s  %6s  %s\n", "BASE", "NEW", "DELTA", "BASE", "NEW",
            "DELTA", "FUNCTION");
    for (size_t i = 0; i < count && i < top; i++) {
        const struct ospx__diff_row *row = &rows[i];
        char cells[4][48], line[1400], name[1024];
        ospx_short_name(name, sizeof name, row->name);
        const uint64_t *periods[2] = {row->self, row->total};
        const double *shares[2] = {row->self_share, row->total_share};
        for (int k = 0; k < 4; k++)
            format_cell(cells[k], sizeof cells[k], shares[k / 2][k % 2], periods[k / 2][k % 2],
                        (k % 2 == 0 ? base : new_model)->raw->rate_hz);
        /* where it is: its source file, else (unnamed code) nothing more: the name says its
         * object */
        snprintf(line, sizeof line, "%s  %s  %+6.1f    %s  %s  %+6.1f  %s%s%s%s", cells[0],
                 cells[1], row->self_share[1] - row->self_share[0], cells[2], cells[3],
                 row->total_share[1] - row->total_share[0], name, row->file[0] != '\0' ? " (" : "",
                 row->file, row->file[0] != '\0' ? ")" : "");
        ospc_printable(line);
        fprintf(out, "%s\n", line);
    }
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
    struct ospx__diff_row *rows = NULL;
    long count = rc == 0 ? ospx__diff_rows(&base.model, &new_profile.model, &rows) : 0;
    if (rc == 0 && count < 0)
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
        fputc('\n', out);
        ospx__diff_print(out, &base.model, &new_profile.model, rows, (size_t)count,
                         options->top > 0 ? options->top : DIFF_ROWS);
        fprintf(out, "\n(each run's share of its on-CPU time and that time: SELF in the function "
                     "itself,\n TOTAL with its callees; DELTA in percentage points)\nwritten:\n");
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
