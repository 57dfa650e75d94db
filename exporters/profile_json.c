/* profile_json.c — `<stem>.profile.json`, the summary editors read (schema in README.md):
 * totals, the per-fiber state split, hot functions (self/total) and hot lines. Keys keep the
 * documented order; percentages and milliseconds are rounded to 0.1; function and line figures
 * are over on-CPU samples. Functions that only ever waited (total 0) are left out. */
#include "ospx_internal.h"

static double percent(uint64_t part, uint64_t whole)
{
    return whole > 0 ? ospx__round1(100.0 * (double)part / (double)whole) : 0.0;
}

static json_t *totals(const struct ospx_model *model)
{
    json_t *object = json_object();
    json_object_set_new(object, "wall_ms", json_real(ospx__round1(model->wall_seconds * 1000.0)));
    json_object_set_new(object, "cpu_ms", json_real(ospx__round1(model->cpu_seconds * 1000.0)));
    json_object_set_new(object, "samples", json_integer((json_int_t)model->total_samples));
    json_object_set_new(object, "on_cpu", json_integer((json_int_t)model->on_cpu_samples));
    json_object_set_new(object, "waiting", json_integer((json_int_t)model->waiting_samples));
    json_object_set_new(object, "rate_hz", json_integer(model->raw->rate_hz));
    json_object_set_new(object, "dropped", json_integer((json_int_t)model->dropped));
    return object;
}

int ospx_write_profile_json(const struct ospx_model *model, const char *path,
                            struct ospx_error *err)
{
    json_t *fibers = json_array();
    for (size_t i = 0; i < model->fiber_count; i++) {
        const struct ospx_fiber_stat *fiber = &model->fibers[i];
        json_t *object =
            json_pack("{s:I, s:o, s:I, s:I}", "fiber", (json_int_t)fiber->fiber, "label",
                      ospx__json_string(fiber->label), "on_cpu", (json_int_t)fiber->on_cpu,
                      "waiting", (json_int_t)fiber->waiting);
        uint32_t process = model->raw->threads[i].process;
        if (ospx__several_processes(model->raw) && model->raw->merged_processes)
            json_object_set_new(object, "comm",
                                ospx__json_string(ospx__process_comm(model->raw, process)));
        else if (ospx__several_processes(model->raw))
            json_object_set_new(object, "pid",
                                json_integer(ospx__process_pid(model->raw, process)));
        json_array_append_new(fibers, object);
    }
    /* With several processes: one entry each (the run's order); functions and lines are
     * summed over them. Merged by command: one entry per command, its count of processes in
     * place of a pid. */
    json_t *processes = NULL;
    if (ospx__several_processes(model->raw)) {
        processes = json_array();
        for (size_t p = 0; p < model->process_count; p++) {
            const struct ospx_process_stat *process = &model->processes[p];
            if (ospx__process_row(model->raw, (uint32_t)p) != p)
                continue;
            json_t *object = json_object();
            if (model->raw->merged_processes)
                json_object_set_new(object, "processes", json_integer((json_int_t)process->merged));
            else
                json_object_set_new(object, "pid", json_integer(process->pid));
            json_object_set_new(object, "exe", ospx__json_string(process->exe));
            json_object_set_new(object, "comm", ospx__json_string(process->comm));
            json_object_set_new(object, "on_cpu", json_integer((json_int_t)process->on_cpu));
            json_object_set_new(object, "waiting", json_integer((json_int_t)process->waiting));
            json_array_append_new(processes, object);
        }
    }

    json_t *functions = json_array();
    for (size_t i = 0; i < model->function_count; i++) {
        const struct ospx_function_stat *fn = &model->functions[i];
        if (fn->total == 0)
            continue;
        json_array_append_new(
            functions,
            json_pack("{s:o, s:o, s:I, s:I, s:I, s:f, s:f}", "name", ospx__json_string(fn->name),
                      "file", ospx__json_string(fn->file), "line", (json_int_t)fn->line, "self",
                      (json_int_t)fn->self, "total", (json_int_t)fn->total, "self_pct",
                      percent(fn->self, model->on_cpu_samples), "total_pct",
                      percent(fn->total, model->on_cpu_samples)));
    }

    json_t *lines = json_array();
    for (size_t i = 0; i < model->line_count; i++) {
        const struct ospx_line_stat *line = &model->lines[i];
        json_array_append_new(
            lines, json_pack("{s:o, s:I, s:I, s:I, s:f}", "file", ospx__json_string(line->file),
                             "line", (json_int_t)line->line, "samples", (json_int_t)line->samples,
                             "self", (json_int_t)line->self, "percent",
                             percent(line->samples, model->on_cpu_samples)));
    }

    json_t *root = json_object();
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "exe", ospx__json_string(model->raw->exe));
    json_object_set_new(root, "pid", json_integer(model->raw->pid));
    json_object_set_new(root, "totals", totals(model));
    json_object_set_new(root, "fibers", fibers);
    if (processes != NULL)
        json_object_set_new(root, "processes", processes);
    json_object_set_new(root, "functions", functions);
    json_object_set_new(root, "lines", lines);
    /* Indented: people read this file too, and the golden tests diff it line by line. */
    return ospx__write_json(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(15), err);
}
