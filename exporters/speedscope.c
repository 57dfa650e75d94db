/* speedscope.c — `<stem>.speedscope.json` in speedscope's own file format
 * (https://www.speedscope.app/file-format-schema.json): one "sampled" profile per fiber over a
 * shared frame table, stacks root first, weights in milliseconds (a row's weight in sampling
 * periods times the period), each profile's axis its own weights' sum, opening on the busiest
 * fiber. A frame is a function (name, file, the function's hottest line); a waiting sample gets the
 * synthetic leaf
 * `(waiting)`, so blocked time shows in the flame graph without mixing with CPU time.
 *
 * Sized by what it shows, not by the samples: a fiber's rows are its distinct stacks, each once
 * with the sum of its rows' weights, in the order of their frames from the root (the call
 * tree's order), so a million samples over ten thousand stacks are ten thousand rows; every
 * view of speedscope's but Time Order is the same as with one row per sample, and Time Order
 * shows the tree. The run's time order is in `<stem>.trace.json`.
 *
 * The frame table is built with jansson; the rows are streamed straight to the file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_internal.h"
#include "ospx_version.h"

static json_t *frame_table(const struct ospx_model *model, int with_waiting)
{
    json_t *frames = json_array();
    for (size_t i = 0; i < model->function_count; i++) {
        const struct ospx_function_stat *fn = &model->functions[i];
        json_t *frame = json_object();
        json_object_set_new(frame, "name", ospx__json_string(fn->name));
        if (fn->file[0] != '\0')
            json_object_set_new(frame, "file", ospx__json_string(fn->file));
        if (fn->line > 0)
            json_object_set_new(frame, "line", json_integer(fn->line));
        json_array_append_new(frames, frame);
    }
    if (with_waiting) {
        json_t *frame = json_object();
        json_object_set_new(frame, "name", json_string(OSPX_WAITING_FRAME));
        json_array_append_new(frames, frame);
    }
    return frames;
}

/* The fiber speedscope opens on: the one with the most on-CPU time (the first on a tie), so
 * a program whose main thread only waits opens on the thread doing the work. */
static size_t busiest_fiber(const struct ospx_model *model)
{
    size_t busiest = 0;
    for (size_t t = 1; t < model->fiber_count; t++)
        if (model->fibers[t].on_cpu > model->fibers[busiest].on_cpu)
            busiest = t;
    return busiest;
}

/* Everything before the profiles' contents: `{"$schema":…,"shared":{"frames":[…]},"profiles":[`. */
static int write_head(FILE *stream, const struct ospx_model *model)
{
    json_t *shared = json_object();
    json_object_set_new(shared, "frames", frame_table(model, model->waiting_samples > 0));
    json_t *head = json_object();
    json_object_set_new(head, "$schema",
                        json_string("https://www.speedscope.app/file-format-schema.json"));
    json_object_set_new(head, "exporter", json_string(OSPX_EXPORTER_NAME));
    json_object_set_new(head, "name",
                        ospx__json_string(ospx__process_comm(model->raw, UINT32_MAX)));
    json_object_set_new(head, "activeProfileIndex", json_integer((json_int_t)busiest_fiber(model)));
    json_object_set_new(head, "shared", shared);
    char *text = json_dumps(head, JSON_COMPACT);
    json_decref(head);
    if (text == NULL)
        return -ENOMEM;
    /* Reopen the object: drop its closing brace and continue with the profiles. */
    text[strlen(text) - 1] = '\0';
    fprintf(stream, "%s,\"profiles\":[", text);
    free(text);
    return 0;
}

/* A JSON number for `value`, whatever LC_NUMERIC says the decimal separator is. */
static void format_number(char *out, size_t size, double value)
{
    snprintf(out, size, "%.15g", value);
    for (char *p = out; *p != '\0'; p++)
        if (*p == ',')
            *p = '.';
}

/* Each raw stack's frame list as speedscope wants it, root first and without brackets
 * ("12,7,3"), made once: a million samples repeat a few thousand stacks. */
static int stack_texts_make(struct ospx__texts *texts, const struct ospx_model *model,
                            const uint32_t *function_of)
{
    size_t count = model->raw->stack_count;
    texts->count = count;
    texts->text = calloc(count + 1, sizeof *texts->text);
    texts->length = calloc(count + 1, sizeof *texts->length);
    if (texts->text == NULL || texts->length == NULL)
        return -ENOMEM;
    for (uint32_t s = 0; s < count; s++) {
        size_t depth;
        const struct ospx_slot *slots = ospx__stack_slots(model, s, &depth);
        char *text = malloc(depth * 11 + 1), *at = text;
        if (text == NULL)
            return -ENOMEM;
        for (size_t k = depth; k-- > 0;)
            at += sprintf(at, k > 0 ? "%u," : "%u", function_of[slots[k].frame]);
        *at = '\0';
        texts->text[s] = text;
        texts->length[s] = (size_t)(at - text);
    }
    return 0;
}

/* One distinct stack of a fiber: its text (with the (waiting) frame when it waited) and the
 * sum of its rows' weights. */
struct path {
    const char *text;
    size_t length;
    uint32_t stack;
    uint8_t waiting;
    uint64_t weight;
};

static int compare_paths(const void *a, const void *b)
{
    const struct path *x = a, *y = b;
    size_t common = x->length < y->length ? x->length : y->length;
    int c = memcmp(x->text, y->text, common);
    if (c != 0)
        return c;
    if (x->length != y->length)
        return x->length < y->length ? -1 : 1;
    return x->waiting != y->waiting ? (x->waiting < y->waiting ? -1 : 1) : 0;
}

/* The fiber's rows as its distinct stacks, each once with its rows' weights summed, in the
 * order of their frames' texts from the root: a stack and the stacks under it are neighbours,
 * as the call tree holds them (two raw stacks that name the same functions are one). Returns
 * the count. `slot` (stack_count × 2, all UINT32_MAX) is left so. */
static size_t fiber_paths(const struct ospx_model *model, const struct ospx__texts *texts,
                          const size_t *order, size_t count, uint32_t *slot, struct path *paths)
{
    const struct ospx_raw *raw = model->raw;
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        const struct ospx_sample *sample = &raw->samples[order[i]];
        uint32_t *at = &slot[2 * (size_t)sample->stack + (sample->state != 0)];
        if (*at == UINT32_MAX) {
            *at = (uint32_t)n;
            paths[n++] = (struct path){texts->text[sample->stack], texts->length[sample->stack],
                                       sample->stack, sample->state != 0, 0};
        }
        paths[*at].weight += sample->weight;
    }
    for (size_t k = 0; k < n; k++)
        slot[2 * (size_t)paths[k].stack + paths[k].waiting] = UINT32_MAX;
    qsort(paths, n, sizeof *paths, compare_paths);
    size_t kept = 0;
    for (size_t k = 0; k < n; k++) {
        if (kept > 0 && compare_paths(&paths[kept - 1], &paths[k]) == 0)
            paths[kept - 1].weight += paths[k].weight;
        else
            paths[kept++] = paths[k];
    }
    return kept;
}

static void write_profile(FILE *stream, const struct ospx_model *model, size_t thread,
                          const struct path *paths, size_t count)
{
    const struct ospx_raw *raw = model->raw;
    const struct ospx_fiber_stat *fiber = &model->fibers[thread];
    double period_ms = raw->rate_hz > 0 ? 1000.0 / raw->rate_hz : 0;
    /* Each fiber's axis is its own: speedscope lays a profile's samples end to end by weight,
     * so the axis ends where its weights do (a fiber that ran 1.4 s of a 3 s run on a 3 s
     * axis would seem to stop early). */
    double fiber_ms = (double)(fiber->on_cpu + fiber->waiting) * period_ms;
    char name[512];
    ospx__thread_title(model, thread, name, sizeof name);
    char *quoted = ospx__json_quote(name), end_value[64], weight_text[64];
    format_number(end_value, sizeof end_value, fiber_ms);
    fprintf(stream,
            "{\"type\":\"sampled\",\"name\":%s,\"unit\":\"milliseconds\",\"startValue\":0,"
            "\"endValue\":%s,\"samples\":[",
            quoted != NULL ? quoted : "\"fiber\"", end_value);
    free(quoted);
    for (size_t i = 0; i < count; i++) {
        fputs(i == 0 ? "[" : ",[", stream);
        fwrite_unlocked(paths[i].text, 1, paths[i].length, stream);
        if (paths[i].waiting) {
            fputs(paths[i].length > 0 ? "," : "", stream);
            ospx__put_uint(stream, model->function_count); /* the (waiting) frame */
        }
        putc_unlocked(']', stream);
    }
    fputs("],\"weights\":[", stream);
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            fputc(',', stream);
        format_number(weight_text, sizeof weight_text, (double)paths[i].weight * period_ms);
        fputs(weight_text, stream);
    }
    fputs("]}", stream);
}

int ospx_write_speedscope(const struct ospx_model *model, const char *path, struct ospx_error *err)
{
    const struct ospx_raw *raw = model->raw;
    uint32_t *function_of = ospx__frame_functions(model);
    const size_t *order = NULL, *first = NULL;
    struct ospx__texts texts = {0};
    uint32_t *slot = malloc((2 * raw->stack_count + 1) * sizeof *slot);
    size_t most = 0;
    struct path *paths = NULL;
    if (function_of == NULL || slot == NULL ||
        ospx__model_thread_order(model, &order, &first) != 0 ||
        stack_texts_make(&texts, model, function_of) != 0)
        goto no_memory;
    for (size_t t = 0; t < model->fiber_count; t++)
        if (first[t + 1] - first[t] > most)
            most = first[t + 1] - first[t];
    /* at most two paths per stack (on CPU, waiting), and one per row */
    if (most > 2 * raw->stack_count)
        most = 2 * raw->stack_count;
    paths = malloc((most + 1) * sizeof *paths);
    if (paths == NULL)
        goto no_memory;
    memset(slot, 0xff, 2 * raw->stack_count * sizeof *slot);
    struct ospx__atomic_file file;
    int rc = ospx__atomic_open(&file, path, err);
    if (rc == 0)
        rc = write_head(file.stream, model);
    if (rc == 0) {
        for (size_t t = 0; t < model->fiber_count; t++) {
            size_t count =
                fiber_paths(model, &texts, order + first[t], first[t + 1] - first[t], slot, paths);
            if (t > 0)
                fputc(',', file.stream);
            write_profile(file.stream, model, t, paths, count);
        }
        fputs("]}\n", file.stream);
        rc = ospx__atomic_commit(&file, err);
    } else if (file.stream != NULL) {
        ospx__atomic_abort(&file);
        rc = ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    }
    free(function_of);
    free(slot);
    free(paths);
    ospx__texts_free(&texts);
    return rc;
no_memory:
    free(function_of);
    free(slot);
    free(paths);
    ospx__texts_free(&texts);
    return ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
}
