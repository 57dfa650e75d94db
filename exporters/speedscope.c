/* speedscope.c — `<stem>.speedscope.json` in speedscope's own file format
 * (https://www.speedscope.app/file-format-schema.json): one "sampled" profile per fiber over a
 * shared frame table, stacks root first, weights in milliseconds (a row's weight in sampling
 * periods times the period), opening on the busiest fiber. A frame is a function
 * (name, file, the function's lowest sampled line); a waiting sample gets the synthetic leaf
 * `(waiting)`, so blocked time shows in the flame graph without mixing with CPU time.
 *
 * The frame table is built with jansson; the per-sample arrays, which hold one number per frame
 * of every sample (tens of millions for a long run), are streamed straight to the file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_internal.h"

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
    json_object_set_new(head, "name", ospx__json_string(ospx__basename(model->raw->exe)));
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

static void write_profile(FILE *stream, const struct ospx_model *model, size_t thread,
                          const uint32_t *function_of, const size_t *order, size_t count)
{
    const struct ospx_raw *raw = model->raw;
    const struct ospx_fiber_stat *fiber = &model->fibers[thread];
    double period_ms = raw->rate_hz > 0 ? 1000.0 / raw->rate_hz : 0;
    /* The view spans the run; a fiber's samples never extend it past their own weight. */
    double wall_ms = model->wall_seconds * 1000.0,
           fiber_ms = (double)(fiber->on_cpu + fiber->waiting) * period_ms;
    char name[512];
    snprintf(name, sizeof name, "fiber %lld (%s)", (long long)fiber->fiber, fiber->label);
    char *quoted = ospx__json_quote(name), end_value[64], weight_text[64];
    uint64_t weight_shown = 1; /* the weight weight_text holds */
    format_number(end_value, sizeof end_value,
                  ospx__round1(wall_ms > fiber_ms ? wall_ms : fiber_ms));
    format_number(weight_text, sizeof weight_text, period_ms);
    fprintf(stream,
            "{\"type\":\"sampled\",\"name\":%s,\"unit\":\"milliseconds\",\"startValue\":0,"
            "\"endValue\":%s,\"samples\":[",
            quoted != NULL ? quoted : "\"fiber\"", end_value);
    free(quoted);
    for (size_t i = 0; i < count; i++) {
        const struct ospx_sample *sample = &raw->samples[order[i]];
        size_t depth;
        const uint32_t *frames = ospx__stack_frames(model, sample->stack, &depth);
        fputs(i == 0 ? "[" : ",[", stream);
        for (size_t k = depth; k-- > 0;) {
            ospx__put_uint(stream, function_of[frames[k]]);
            if (k > 0)
                fputc(',', stream);
        }
        if (sample->state != 0) {
            fputs(depth > 0 ? "," : "", stream);
            ospx__put_uint(stream, model->function_count); /* the (waiting) frame */
        }
        fputc(']', stream);
    }
    fputs("],\"weights\":[", stream);
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            fputc(',', stream);
        uint64_t weight = raw->samples[order[i]].weight;
        if (weight != weight_shown) {
            format_number(weight_text, sizeof weight_text, (double)weight * period_ms);
            weight_shown = weight;
        }
        fputs(weight_text, stream);
    }
    fputs("]}", stream);
}

int ospx_write_speedscope(const struct ospx_model *model, const char *path, struct ospx_error *err)
{
    uint32_t *function_of = ospx__frame_functions(model);
    size_t *order = NULL, *first = NULL;
    if (function_of == NULL || ospx__samples_by_thread(model->raw, &order, &first) != 0) {
        free(function_of);
        return ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    }
    struct ospx__atomic_file file;
    int rc = ospx__atomic_open(&file, path, err);
    if (rc == 0)
        rc = write_head(file.stream, model);
    if (rc == 0) {
        for (size_t t = 0; t < model->fiber_count; t++) {
            if (t > 0)
                fputc(',', file.stream);
            write_profile(file.stream, model, t, function_of, order + first[t],
                          first[t + 1] - first[t]);
        }
        fputs("]}\n", file.stream);
        rc = ospx__atomic_commit(&file, err);
    } else if (file.stream != NULL) {
        ospx__atomic_abort(&file);
        rc = ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    }
    free(function_of);
    free(order);
    free(first);
    return rc;
}
