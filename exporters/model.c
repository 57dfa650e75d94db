/* model.c — the profile model every output is drawn from: per fiber, on-CPU against waiting
 * samples; per function (identity: name + file), self and total samples; per source line,
 * samples and self. Function and line figures count ON-CPU samples only, each sample at most
 * once per function and once per line, so a recursive function's total never exceeds the number
 * of samples. The small helpers the writers share (frame → function map, time order) are
 * writers.c's.
 *
 * DESIGN: the work is done per distinct raw stack, weighted by how many on-CPU samples landed
 * on it, not per sample: profiles repeat a few thousand stacks across many more samples. Frames
 * are grouped into functions by sorting frame indices on (name, file); lines by sorting every
 * (file, line, stack, position) occurrence; (function, line) pairs on common/'s hash index. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ospc.h"
#include "ospx_internal.h"

static int compare_name_file(const struct ospx_frame *a, const struct ospx_frame *b)
{
    int c = strcmp(ospx__str(a->name), ospx__str(b->name));
    return c != 0 ? c : strcmp(ospx__str(a->file), ospx__str(b->file));
}

static int compare_frame_indices(const void *a, const void *b, void *context)
{
    const struct ospx_frame *frames = context;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = compare_name_file(&frames[x], &frames[y]);
    return c != 0 ? c : (x > y) - (x < y);
}

static int compare_functions(const void *a, const void *b)
{
    const struct ospx_function_stat *x = a, *y = b;
    int c = ospc_larger_first_by(x->self, y->self, x->total, y->total);
    c = c != 0 ? c : strcmp(x->name, y->name);
    return c != 0 ? c : strcmp(x->file, y->file);
}

static int compare_lines(const void *a, const void *b)
{
    const struct ospx_line_stat *x = a, *y = b;
    int c = ospc_larger_first_by(x->samples, y->samples, x->self, y->self);
    c = c != 0 ? c : strcmp(x->file, y->file);
    return c != 0 ? c : (x->line > y->line) - (x->line < y->line);
}

/* One place a source line occurs: raw stack `stack`, position `position` (0 = leaf). */
struct line_occurrence {
    const char *file;
    int line;
    uint32_t stack;
    uint32_t position;
};

static int compare_occurrences(const void *a, const void *b)
{
    const struct line_occurrence *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    if (c != 0)
        return c;
    if (x->line != y->line)
        return (x->line > y->line) - (x->line < y->line);
    if (x->stack != y->stack)
        return (x->stack > y->stack) - (x->stack < y->stack);
    return (x->position > y->position) - (x->position < y->position);
}

/* Every index the model follows must be in range: a bad one is a bug upstream, reported rather
 * than read out of bounds. */
static int validate(const struct ospx_raw *raw, const struct ospx_symbols *symbols,
                    struct ospx_error *err)
{
    const char *source = ospx__str(raw->source_path);
    if (symbols->stack_count < raw->stack_count)
        return ospx_error_set(err, EINVAL, source, 0, 0,
                              "symbols cover %zu stacks but the profile has %zu",
                              symbols->stack_count, raw->stack_count);
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *sample = &raw->samples[i];
        if (sample->thread >= raw->thread_count || sample->stack >= raw->stack_count)
            return ospx_error_set(err, EINVAL, source, 0, 0,
                                  "sample %zu refers to thread %u / stack %u, out of range", i,
                                  sample->thread, sample->stack);
        if (sample->state > 1)
            return ospx_error_set(err, EINVAL, source, 0, 0, "sample %zu has unknown state %u", i,
                                  sample->state);
    }
    for (size_t s = 0; s < raw->stack_count; s++)
        for (size_t k = 0; k < symbols->stack_depths[s]; k++)
            if (symbols->stack_slots[s][k].frame >= symbols->frame_count)
                return ospx_error_set(err, EINVAL, source, 0, 0,
                                      "stack %zu refers to frame %u, out of range", s,
                                      symbols->stack_slots[s][k].frame);
    return 0;
}

/* Wall-clock times after this (2100-01-01, in ns since the epoch) are no time a run ended at:
 * a collector that never learned the end writes such a value (2^63 - 1, say). */
#define LATEST_UNIX_NS UINT64_C(4102444800000000000)

/* The run's wall time: end - start, unless the end is not a plausible time; then how far the
 * samples reach (the last one, a waiting row's wait included). */
static double wall_seconds(const struct ospx_raw *raw)
{
    if (raw->end_unix_ns < LATEST_UNIX_NS && raw->start_unix_ns < raw->end_unix_ns)
        return (double)(raw->end_unix_ns - raw->start_unix_ns) / 1e9;
    double period_ns = raw->rate_hz > 0 ? 1e9 / raw->rate_hz : 0, reach = 0;
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *sample = &raw->samples[i];
        double end = (double)sample->t_rel_ns +
                     (sample->state != 0 ? (double)sample->weight * period_ns : 0);
        /* A sample time from a broken collector is no better than the end it replaces. */
        if (end < (double)(LATEST_UNIX_NS - raw->start_unix_ns) && end > reach)
            reach = end;
    }
    return reach / 1e9;
}

/* Per function group while counting. */
struct group_count {
    uint32_t frame; /* representative: the lowest frame index of the group */
    int used;       /* on some sampled stack, in any state */
    int line;       /* lowest sampled line, 0 unknown */
    uint64_t self, total;
    size_t stamp; /* stack index + 1 that last counted toward total */
    /* its hottest line: the most self periods at it, else (no self time) the most periods
     * with the function at it, once per sample; ties: the lowest line. 0 until one is seen */
    int hot_line;
    uint64_t hot_self, hot_periods;
};

/* On-CPU periods per (function group, line), each sample counted once per pair. */
struct group_lines {
    struct ospc_index index;
    uint32_t *groups;
    int *lines;
    uint64_t *periods, *self; /* on the stack (once per sample), and as the leaf */
    size_t *stamps;           /* stack index + 1 that last counted toward the pair */
    size_t count, capacity;
};

static uint64_t group_line_hash(uint32_t group, int line)
{
    uint64_t key = (uint64_t)group << 32 | (uint32_t)line;
    return ospc_hash_bytes(OSPC_HASH_SEED, &key, sizeof key);
}

static uint64_t group_line_hash_of(uint32_t entry, void *context)
{
    const struct group_lines *table = context;
    return group_line_hash(table->groups[entry], table->lines[entry]);
}

/* Add `weight` periods of stack s to (group, line), once per stack, and to its self periods
 * when it is the stack's leaf. 0 or -ENOMEM. */
static int group_lines_add(struct group_lines *table, uint32_t group, int line, size_t s,
                           uint64_t weight, int leaf)
{
    size_t slot = ospc_index_start(&table->index, group_line_hash(group, line));
    uint32_t entry;
    while ((entry = ospc_index_entry(&table->index, slot)) != UINT32_MAX) {
        if (table->groups[entry] == group && table->lines[entry] == line) {
            if (leaf)
                table->self[entry] += weight;
            if (table->stamps[entry] != s + 1) {
                table->stamps[entry] = s + 1;
                table->periods[entry] += weight;
            }
            return 0;
        }
        slot = ospc_index_next(&table->index, slot);
    }
    if (table->count == table->capacity) {
        size_t capacity = table->capacity != 0 ? table->capacity * 2 : 256;
        if (ospx__resize(&table->groups, capacity, sizeof *table->groups) != 0 ||
            ospx__resize(&table->lines, capacity, sizeof *table->lines) != 0 ||
            ospx__resize(&table->periods, capacity, sizeof *table->periods) != 0 ||
            ospx__resize(&table->stamps, capacity, sizeof *table->stamps) != 0 ||
            ospx__resize(&table->self, capacity, sizeof *table->self) != 0)
            return -ENOMEM;
        table->capacity = capacity;
    }
    entry = (uint32_t)table->count++;
    table->groups[entry] = group;
    table->lines[entry] = line;
    table->periods[entry] = weight;
    table->self[entry] = leaf ? weight : 0;
    table->stamps[entry] = s + 1;
    return ospc_index_insert(&table->index, slot, entry, group_line_hash_of, table);
}

static void group_lines_free(struct group_lines *table)
{
    ospc_index_free(&table->index);
    OSPC_FREE_ALL(table->groups, table->lines, table->periods, table->self, table->stamps);
}

static int build_functions(struct ospx_model *model, const uint64_t *on_cpu_per_stack,
                           const uint8_t *stack_used)
{
    const struct ospx_symbols *symbols = model->symbols;
    size_t frame_count = symbols->frame_count;
    uint32_t *order = malloc((frame_count + 1) * sizeof *order);
    uint32_t *group_of = malloc((frame_count + 1) * sizeof *group_of);
    struct group_count *groups = calloc(frame_count + 1, sizeof *groups);
    struct group_lines hot = {0};
    int rc = -ENOMEM;
    if (order == NULL || group_of == NULL || groups == NULL ||
        ospc_index_init(&hot.index, 1024) != 0)
        goto out;

    for (uint32_t f = 0; f < frame_count; f++)
        order[f] = f;
    qsort_r(order, frame_count, sizeof *order, compare_frame_indices, symbols->frames);
    size_t group_count = 0;
    for (size_t i = 0; i < frame_count; i++) {
        if (i == 0 ||
            compare_name_file(&symbols->frames[order[i - 1]], &symbols->frames[order[i]]) != 0)
            groups[group_count++].frame = order[i];
        group_of[order[i]] = (uint32_t)(group_count - 1);
    }

    for (uint32_t s = 0; s < model->raw->stack_count; s++) {
        if (!stack_used[s])
            continue;
        uint64_t weight = on_cpu_per_stack[s];
        for (size_t k = 0; k < symbols->stack_depths[s]; k++) {
            struct group_count *g = &groups[group_of[symbols->stack_slots[s][k].frame]];
            int line = symbols->stack_slots[s][k].line;
            g->used = 1;
            if (line > 0 && (g->line == 0 || line < g->line))
                g->line = line;
            if (weight == 0)
                continue;
            if (line > 0 && group_lines_add(&hot, group_of[symbols->stack_slots[s][k].frame], line,
                                            s, weight, k == 0) != 0)
                goto out;
            if (k == 0)
                g->self += weight;
            if (g->stamp != (size_t)s + 1) {
                g->total += weight;
                g->stamp = (size_t)s + 1;
            }
        }
    }

    for (size_t e = 0; e < hot.count; e++) {
        struct group_count *g = &groups[hot.groups[e]];
        int hotter = hot.self[e] != g->hot_self ? hot.self[e] > g->hot_self
                     : hot.periods[e] != g->hot_periods
                         ? hot.periods[e] > g->hot_periods
                         : g->hot_line == 0 || hot.lines[e] < g->hot_line;
        if (hotter) {
            g->hot_self = hot.self[e];
            g->hot_periods = hot.periods[e];
            g->hot_line = hot.lines[e];
        }
    }
    size_t used = 0;
    for (size_t i = 0; i < group_count; i++)
        used += groups[i].used != 0;
    model->functions = calloc(used + 1, sizeof *model->functions);
    if (model->functions == NULL)
        goto out;
    for (size_t i = 0; i < group_count; i++) {
        if (!groups[i].used)
            continue;
        struct ospx_function_stat *fn = &model->functions[model->function_count++];
        const struct ospx_frame *frame = &symbols->frames[groups[i].frame];
        fn->frame = groups[i].frame;
        fn->name = ospx__str(frame->name);
        fn->file = ospx__str(frame->file);
        /* Where its time went; a function only seen waiting: its lowest sampled line. */
        fn->line = groups[i].hot_line > 0 ? groups[i].hot_line : groups[i].line;
        fn->self = groups[i].self;
        fn->total = groups[i].total;
    }
    qsort(model->functions, model->function_count, sizeof *model->functions, compare_functions);
    rc = 0;
out:
    free(order);
    free(group_of);
    free(groups);
    group_lines_free(&hot);
    return rc;
}

static int build_lines(struct ospx_model *model, const uint64_t *on_cpu_per_stack)
{
    const struct ospx_symbols *symbols = model->symbols;
    size_t count = 0;
    for (uint32_t s = 0; s < model->raw->stack_count; s++)
        if (on_cpu_per_stack[s] > 0)
            count += symbols->stack_depths[s];
    struct line_occurrence *occurrences = malloc((count + 1) * sizeof *occurrences);
    if (occurrences == NULL)
        return -ENOMEM;
    size_t n = 0;
    for (uint32_t s = 0; s < model->raw->stack_count; s++) {
        if (on_cpu_per_stack[s] == 0)
            continue;
        for (size_t k = 0; k < symbols->stack_depths[s]; k++) {
            const char *file = ospx__str(symbols->frames[symbols->stack_slots[s][k].frame].file);
            int line = symbols->stack_slots[s][k].line;
            if (file[0] == '\0' || line <= 0)
                continue;
            occurrences[n++] = (struct line_occurrence){file, line, s, (uint32_t)k};
        }
    }
    qsort(occurrences, n, sizeof *occurrences, compare_occurrences);

    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        distinct += i == 0 || strcmp(occurrences[i - 1].file, occurrences[i].file) != 0 ||
                    occurrences[i - 1].line != occurrences[i].line;
    model->lines = calloc(distinct + 1, sizeof *model->lines);
    if (model->lines == NULL) {
        free(occurrences);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct line_occurrence *o = &occurrences[i];
        int new_line = i == 0 || strcmp(occurrences[i - 1].file, o->file) != 0 ||
                       occurrences[i - 1].line != o->line;
        if (new_line) {
            struct ospx_line_stat *stat = &model->lines[model->line_count++];
            stat->file = o->file;
            stat->line = o->line;
        }
        struct ospx_line_stat *stat = &model->lines[model->line_count - 1];
        /* Occurrences of one line are sorted by stack, then position: the first one of each
         * stack counts the stack's samples once, and it is the leaf one if any is. */
        if (new_line || occurrences[i - 1].stack != o->stack) {
            stat->samples += on_cpu_per_stack[o->stack];
            if (o->position == 0)
                stat->self += on_cpu_per_stack[o->stack];
        }
    }
    free(occurrences);
    qsort(model->lines, model->line_count, sizeof *model->lines, compare_lines);
    return 0;
}

static int compare_process_functions(const void *a, const void *b)
{
    const struct ospx_process_function *x = a, *y = b;
    int c = ospc_hottest_first(x->self, y->self, x->total, y->total, x->function, y->function);
    return c != 0 ? c : ospc_smaller_first(x->process, y->process);
}

/* With several processes sampled: each function's self and total in each process, counted as
 * build_functions counts them (once per sample), over the stacks of that process. */
static int build_process_functions(struct ospx_model *model, const uint64_t *on_cpu_per_stack)
{
    if (model->processes_sampled < 2)
        return 0;
    const struct ospx_raw *raw = model->raw;
    const struct ospx_symbols *symbols = model->symbols;
    size_t functions = model->function_count, capacity = 0;
    uint32_t *function_of = ospx__frame_functions(model);
    uint64_t *self = calloc(functions + 1, sizeof *self);
    uint64_t *total = calloc(functions + 1, sizeof *total);
    size_t *stamp = calloc(functions + 1, sizeof *stamp);
    int rc = function_of != NULL && self != NULL && total != NULL && stamp != NULL ? 0 : -ENOMEM;
    for (uint32_t p = 0; rc == 0 && p < model->process_count; p++) {
        if (model->processes[p].on_cpu == 0)
            continue;
        memset(self, 0, functions * sizeof *self);
        memset(total, 0, functions * sizeof *total);
        for (uint32_t s = 0; s < raw->stack_count; s++) {
            uint64_t weight = on_cpu_per_stack[s];
            if (weight == 0 || ospx__process_row(raw, raw->stacks[s].process) != p)
                continue;
            for (size_t k = 0; k < symbols->stack_depths[s]; k++) {
                uint32_t f = function_of[symbols->stack_slots[s][k].frame];
                if (f == OSPX_NO_FUNCTION)
                    continue;
                if (k == 0)
                    self[f] += weight;
                if (stamp[f] != (size_t)s + 1) {
                    stamp[f] = (size_t)s + 1;
                    total[f] += weight;
                }
            }
        }
        for (uint32_t f = 0; rc == 0 && f < functions; f++) {
            if (total[f] == 0)
                continue;
            if (ospx__grow(&model->process_functions, &capacity, model->process_function_count,
                           sizeof *model->process_functions, 256) != 0) {
                rc = -ENOMEM;
                break;
            }
            model->process_functions[model->process_function_count++] =
                (struct ospx_process_function){p, f, self[f], total[f]};
        }
    }
    if (rc == 0 && model->process_function_count > 1)
        qsort(model->process_functions, model->process_function_count,
              sizeof *model->process_functions, compare_process_functions);
    free(function_of);
    free(self);
    free(total);
    free(stamp);
    return rc;
}

int ospx__run_sampling(const struct ospx_raw *raw, struct ospx_run_sampling *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < raw->sample_count; i++)
        if (raw->samples[i].state == 0)
            out->on_cpu += raw->samples[i].weight;
    /* One process: its own clock, else the sum of its threads' when every thread has one. */
    out->measured_cpu_ns = raw->process_cpu_ns;
    if (out->measured_cpu_ns < 0 && raw->thread_count > 0) {
        int64_t sum = 0;
        for (size_t t = 0; t < raw->thread_count && sum >= 0; t++)
            sum = raw->threads[t].cpu_ns >= 0 ? sum + raw->threads[t].cpu_ns : -1;
        out->measured_cpu_ns = sum;
    }
    if (raw->process_count <= 1)
        return 0;
    /* Several: the processes that have samples, each by its own clock, else its threads'; one
     * whose CPU time was not measured (killed before the collector read it) is left out of both
     * sides, so the rest still say the rate achieved (a pipeline whose gzip died of SIGPIPE had
     * no sampling line at all). */
    size_t count = ospx__process_count(raw);
    int64_t *threads_cpu = calloc(count + 1, sizeof *threads_cpu);
    uint8_t *sampled = calloc(count + 1, 1);
    uint64_t *on_cpu = calloc(count + 1, sizeof *on_cpu);
    if (threads_cpu == NULL || sampled == NULL || on_cpu == NULL) {
        free(threads_cpu);
        free(sampled);
        free(on_cpu);
        return -ENOMEM;
    }
    for (size_t i = 0; i < raw->sample_count; i++) {
        uint32_t p = raw->threads[raw->samples[i].thread].process;
        sampled[p < count ? p : 0] = 1;
        if (raw->samples[i].state == 0)
            on_cpu[p < count ? p : 0] += raw->samples[i].weight;
    }
    for (size_t t = 0; t < raw->thread_count; t++) {
        uint32_t p = raw->threads[t].process < count ? raw->threads[t].process : 0;
        threads_cpu[p] = threads_cpu[p] >= 0 && raw->threads[t].cpu_ns >= 0
                             ? threads_cpu[p] + raw->threads[t].cpu_ns
                             : -1;
    }
    int64_t measured = 0;
    size_t processes = 0;
    for (uint32_t p = 0; p < count; p++) {
        if (!sampled[p])
            continue;
        int64_t own = p < raw->process_count ? raw->processes[p].process_cpu_ns : -1;
        int64_t cpu = own >= 0 ? own : threads_cpu[p];
        if (cpu < 0) {
            if (out->unmeasured++ == 0)
                out->unmeasured_first = p;
            out->on_cpu -= on_cpu[p];
            continue;
        }
        processes++;
        measured += cpu;
    }
    out->measured_cpu_ns = processes > 0 ? measured : -1;
    free(threads_cpu);
    free(sampled);
    free(on_cpu);
    return 0;
}

/* Per process: its samples and threads. */
static int build_processes(struct ospx_model *out)
{
    const struct ospx_raw *raw = out->raw;
    size_t count = ospx__process_count(raw);
    out->processes = calloc(count + 1, sizeof *out->processes);
    if (out->processes == NULL)
        return -ENOMEM;
    out->process_count = count;
    for (uint32_t p = 0; p < count; p++) {
        out->processes[p].pid = ospx__process_pid(raw, p);
        out->processes[p].exe = ospx__process_exe(raw, p);
        out->processes[p].comm = ospx__process_comm(raw, p);
        out->processes[p].merged = raw->merged_processes ? raw->processes[p].merged_count : 1;
    }
    for (size_t t = 0; t < raw->thread_count; t++) {
        uint32_t p = raw->threads[t].process < count ? raw->threads[t].process : 0;
        struct ospx_process_stat *process = &out->processes[p];
        process->on_cpu += out->fibers[t].on_cpu;
        process->waiting += out->fibers[t].waiting;
        process->threads += out->fibers[t].on_cpu + out->fibers[t].waiting > 0;
    }
    for (uint32_t p = 0; p < count; p++)
        out->processes_sampled += out->processes[p].on_cpu + out->processes[p].waiting > 0;
    return 0;
}

/* A fiber its runtime declared on a thread (raw-format.md: an entry of its own with the thread's
 * tid and no preempted_ns) ran within the thread's time, and the kernel's records cannot say
 * which of them was preempted: the thread's preempted periods are shared among it and its
 * fibers in proportion to their on-CPU samples (all of them were the thread's: a thread that
 * ran two coroutines showed 83% preempted beside 2 samples of its own). 0 or -ENOMEM. */
static int share_preempted(const struct ospx_raw *raw, struct ospx_model *out)
{
    size_t n = raw->thread_count;
    uint32_t *owner = NULL;
    uint64_t *weight = NULL;
    for (size_t u = 0; u < n; u++) {
        const struct ospx_thread *f = &raw->threads[u];
        if (f->preempted_ns >= 0 || f->tid == 0 || f->fiber == 0 || f->fiber == f->tid ||
            out->fibers[u].on_cpu == 0)
            continue;
        if (owner == NULL) {
            owner = malloc(n * sizeof *owner);
            weight = calloc(n, sizeof *weight);
            if (owner == NULL || weight == NULL) {
                free(owner);
                free(weight);
                return -ENOMEM;
            }
            for (size_t t = 0; t < n; t++)
                owner[t] = UINT32_MAX;
        }
        for (size_t t = 0; t < n; t++) {
            const struct ospx_thread *thread = &raw->threads[t];
            if (thread->tid == f->tid && thread->process == f->process &&
                out->fibers[t].preempted > 0) {
                owner[u] = (uint32_t)t;
                weight[t] += out->fibers[u].on_cpu;
                break;
            }
        }
    }
    if (owner == NULL)
        return 0;
    for (size_t t = 0; t < n; t++)
        if (weight[t] > 0)
            weight[t] += out->fibers[t].on_cpu;
    for (size_t u = 0; u < n; u++) {
        if (owner[u] == UINT32_MAX)
            continue;
        struct ospx_fiber_stat *thread = &out->fibers[owner[u]];
        uint64_t on_cpu = out->fibers[u].on_cpu;
        uint64_t share =
            (uint64_t)((double)thread->preempted * (double)on_cpu / (double)weight[owner[u]] + 0.5);
        share = share < thread->preempted ? share : thread->preempted;
        out->fibers[u].preempted = share;
        thread->preempted -= share;
        weight[owner[u]] -= on_cpu;
    }
    free(owner);
    free(weight);
    return 0;
}

int ospx_model_build(const struct ospx_raw *raw, const struct ospx_symbols *symbols,
                     struct ospx_model *out, struct ospx_error *err)
{
    memset(out, 0, sizeof *out);
    out->raw = raw;
    out->symbols = symbols;
    int rc = validate(raw, symbols, err);
    if (rc != 0)
        return rc;

    uint64_t *on_cpu_per_stack = calloc(raw->stack_count + 1, sizeof *on_cpu_per_stack);
    uint8_t *stack_used = calloc(raw->stack_count + 1, 1);
    out->fibers = calloc(raw->thread_count + 1, sizeof *out->fibers);
    rc = -ENOMEM;
    if (on_cpu_per_stack == NULL || stack_used == NULL || out->fibers == NULL)
        goto out;

    out->fiber_count = raw->thread_count;
    for (size_t t = 0; t < raw->thread_count; t++) {
        out->fibers[t].fiber = raw->threads[t].fiber;
        out->fibers[t].label = ospx__str(raw->threads[t].label);
        if (raw->threads[t].preempted_ns > 0 && raw->rate_hz > 0)
            out->fibers[t].preempted =
                (uint64_t)(((double)raw->threads[t].preempted_ns * raw->rate_hz + 5e8) / 1e9);
    }
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *sample = &raw->samples[i];
        stack_used[sample->stack] = 1;
        if (sample->state == 0) {
            out->fibers[sample->thread].on_cpu += sample->weight;
            on_cpu_per_stack[sample->stack] += sample->weight;
            out->on_cpu_samples += sample->weight;
        } else {
            out->fibers[sample->thread].waiting += sample->weight;
            out->waiting_samples += sample->weight;
        }
    }
    out->total_samples = out->on_cpu_samples + out->waiting_samples;
    if (share_preempted(raw, out) != 0)
        goto out;
    /* The rate achieved is the whole run's: a view's share of the samples against the run's
     * CPU time would say the sampling fell short when it did not. */
    struct ospx_run_sampling run = raw->whole;
    if (!run.view && (rc = ospx__run_sampling(raw, &run)) != 0)
        goto out;
    rc = -ENOMEM;
    out->measured_cpu_ns = run.measured_cpu_ns;
    out->sampled_on_cpu = run.on_cpu;
    out->unmeasured_processes = run.unmeasured;
    out->unmeasured_first = run.unmeasured_first;
    out->dropped = raw->dropped;
    out->wall_seconds = wall_seconds(raw);
    out->cpu_seconds = raw->rate_hz > 0 ? (double)out->on_cpu_samples / raw->rate_hz : 0;

    rc = build_processes(out);
    if (rc == 0)
        rc = build_functions(out, on_cpu_per_stack, stack_used);
    if (rc == 0)
        rc = build_lines(out, on_cpu_per_stack);
    if (rc == 0)
        rc = build_process_functions(out, on_cpu_per_stack);
out:
    free(on_cpu_per_stack);
    free(stack_used);
    if (rc != 0) {
        ospx_model_free(out);
        out->raw = raw;
        out->symbols = symbols;
        if (rc == -ENOMEM)
            ospx_error_set(err, ENOMEM, ospx__str(raw->source_path), 0, 0,
                           "out of memory while building the profile model");
    }
    return rc;
}

void ospx_model_free(struct ospx_model *model)
{
    if (model == NULL)
        return;
    OSPC_FREE_ALL(model->fibers, model->functions, model->lines, model->processes,
                  model->process_functions, model->thread_order, model->thread_first,
                  model->frame_function);
    memset(model, 0, sizeof *model);
}
