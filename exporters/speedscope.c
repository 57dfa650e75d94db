/* speedscope.c — `<stem>.speedscope.json` in speedscope's own file format
 * (https://www.speedscope.app/file-format-schema.json): one "sampled" profile per fiber over a
 * shared frame table, stacks root first, weights in milliseconds. A frame is a function
 * (name, file, the function's lowest sampled line); a waiting sample gets the synthetic leaf
 * `(waiting)`, so blocked time shows in the flame graph without mixing with CPU time. */
#include <errno.h>
#include <stdlib.h>

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

/* The root-first stack of frame indices of one sample. */
static json_t *sample_stack(const struct ospx_model *model, const uint32_t *function_of,
                            const struct ospx_sample *sample)
{
    size_t depth;
    const uint32_t *frames = ospx__stack_frames(model, sample->stack, &depth);
    json_t *stack = json_array();
    for (size_t k = depth; k-- > 0;)
        json_array_append_new(stack, json_integer(function_of[frames[k]]));
    if (sample->state != 0)
        json_array_append_new(stack, json_integer((json_int_t)model->function_count));
    return stack;
}

int ospx_write_speedscope(const struct ospx_model *model, const char *path, struct ospx_error *err)
{
    const struct ospx_raw *raw = model->raw;
    uint32_t *function_of = ospx__frame_functions(model);
    size_t *order = ospx__samples_in_time_order(raw);
    if (function_of == NULL || (order == NULL && raw->sample_count > 0)) {
        free(function_of);
        free(order);
        return ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    }
    double weight = raw->rate_hz > 0 ? 1000.0 / raw->rate_hz : 0;
    double wall_ms = model->wall_seconds * 1000.0;

    json_t *profiles = json_array();
    for (size_t t = 0; t < model->fiber_count; t++) {
        const struct ospx_fiber_stat *fiber = &model->fibers[t];
        json_t *samples = json_array(), *weights = json_array();
        for (size_t i = 0; i < raw->sample_count; i++) {
            const struct ospx_sample *sample = &raw->samples[order[i]];
            if (sample->thread != t)
                continue;
            json_array_append_new(samples, sample_stack(model, function_of, sample));
            json_array_append_new(weights, json_real(weight));
        }
        /* The view spans the run; a fiber's samples never extend it past their own weight. */
        double fiber_ms = (double)(fiber->on_cpu + fiber->waiting) * weight;
        char name[512];
        snprintf(name, sizeof name, "fiber %lld (%s)", (long long)fiber->fiber, fiber->label);
        json_t *profile = json_object();
        json_object_set_new(profile, "type", json_string("sampled"));
        json_object_set_new(profile, "name", ospx__json_string(name));
        json_object_set_new(profile, "unit", json_string("milliseconds"));
        json_object_set_new(profile, "startValue", json_real(0));
        json_object_set_new(profile, "endValue",
                            json_real(ospx__round1(wall_ms > fiber_ms ? wall_ms : fiber_ms)));
        json_object_set_new(profile, "samples", samples);
        json_object_set_new(profile, "weights", weights);
        json_array_append_new(profiles, profile);
    }

    json_t *shared = json_object();
    json_object_set_new(shared, "frames", frame_table(model, model->waiting_samples > 0));
    json_t *root = json_object();
    json_object_set_new(root, "$schema",
                        json_string("https://www.speedscope.app/file-format-schema.json"));
    json_object_set_new(root, "exporter", json_string(OSPX_EXPORTER_NAME));
    json_object_set_new(root, "name", ospx__json_string(ospx__basename(raw->exe)));
    json_object_set_new(root, "activeProfileIndex", json_integer(0));
    json_object_set_new(root, "shared", shared);
    json_object_set_new(root, "profiles", profiles);
    free(function_of);
    free(order);
    return ospx__write_json(root, path, JSON_COMPACT | JSON_REAL_PRECISION(15), err);
}
