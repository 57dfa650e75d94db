/* trace.c — `<stem>.trace.json`, the run as a timeline in the Chrome trace-event format, which
 * the DevTools Performance panel ("Load profile") and Perfetto (ui.perfetto.dev) open: one
 * thread track per fiber, named `fiber <id> (<label>)`, under its process (its real pid,
 * named by `process_name` metadata: a run of several processes is one trace), carrying
 *   - its samples on their real timestamps, as V8 writes them into a trace: one "Profile"
 *     event and "ProfileChunk" events holding a call tree (`cpuProfile.nodes`), the samples'
 *     leaf nodes and the gaps between them (`timeDeltas`, µs). Each on-CPU row lasts the CPU
 *     periods it paid for, ending at its time; the rest of the time (waits, and gaps where the
 *     thread was not on a CPU) is the thread's `(idle)` node, so the time a reader sums per
 *     function is the sampled CPU time, and a wait is never counted as CPU;
 *   - one complete event (`"ph":"X"`, category `osprey.waiting`) per wait, named
 *     `waiting in <function>` with its site (the raw stack's index) in its args, and the blocked
 *     stack there too the first time the track waits at that site: a weighted waiting row is one
 *     wait; consecutive waiting rows of weight 1 and one stack (a tick's each) are one wait.
 * Timestamps are µs after the run's start. Keys of the format: the Trace Event Format document
 * (docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_internal.h"
#include "ospx_version.h"

#define CHUNK_SAMPLES         10000
#define STACK_ARGUMENT_FRAMES 16

/* The sample's time in µs, never past the end of the run (a broken collector's time). */
static uint64_t sample_us(const struct ospx_model *model, const struct ospx_sample *sample)
{
    double limit_ns = model->wall_seconds * 1e9;
    double t = (double)sample->t_rel_ns;
    return (uint64_t)((t < limit_ns || limit_ns <= 0 ? t : limit_ns) / 1000.0);
}

/* The pid a process's events carry: its own (1 when the raw file has none: 0 is no process to
 * the readers). */
static uint64_t trace_pid(const struct ospx_raw *raw, uint32_t process)
{
    int64_t pid = ospx__process_pid(raw, process);
    return pid > 0 ? (uint64_t)pid : 1;
}

/* One process_name per pid (two images of one pid, it exec'd, are one process: the first
 * named, the run's order putting its last image first), then each thread's name and place. */
static void write_metadata(FILE *stream, const struct ospx_model *model)
{
    const struct ospx_raw *raw = model->raw;
    char name[600];
    for (uint32_t p = 0; p < ospx__process_count(raw); p++) {
        int named_before = ospx__process_row(raw, p) != p; /* merged into another: no threads */
        for (uint32_t q = 0; q < p; q++)
            named_before |= trace_pid(raw, q) == trace_pid(raw, p);
        if (named_before)
            continue;
        if (raw->merged_processes)
            snprintf(name, sizeof name, "%s (%u %s)", ospx__process_comm(raw, p),
                     raw->processes[p].merged_count,
                     raw->processes[p].merged_count == 1 ? "process" : "processes");
        else
            snprintf(name, sizeof name, "%s (pid %lld)", ospx__process_comm(raw, p),
                     (long long)ospx__process_pid(raw, p));
        char *quoted = ospx__json_quote(name);
        fprintf(stream,
                "%s{\"ph\":\"M\",\"pid\":%llu,\"tid\":0,\"name\":\"process_name\",\"args\":{"
                "\"name\":%s}}",
                p > 0 ? ",\n" : "", (unsigned long long)trace_pid(raw, p),
                quoted != NULL ? quoted : "\"\"");
        if (ospx__several_processes(raw))
            fprintf(stream,
                    ",\n{\"ph\":\"M\",\"pid\":%llu,\"tid\":0,\"name\":\"process_sort_index\","
                    "\"args\":{\"sort_index\":%u}}",
                    (unsigned long long)trace_pid(raw, p), p);
        free(quoted);
    }
    for (size_t t = 0; t < model->fiber_count; t++) {
        uint64_t pid = trace_pid(raw, raw->threads[t].process);
        snprintf(name, sizeof name, "fiber %lld (%s)", (long long)model->fibers[t].fiber,
                 ospx__fiber_label(model, t));
        char *quoted = ospx__json_quote(name);
        fprintf(stream,
                ",\n{\"ph\":\"M\",\"pid\":%llu,\"tid\":%zu,\"name\":\"thread_name\",\"args\":{"
                "\"name\":%s}},\n{\"ph\":\"M\",\"pid\":%llu,\"tid\":%zu,\"name\":"
                "\"thread_sort_index\",\"args\":{\"sort_index\":%zu}}",
                (unsigned long long)pid, t + 1, quoted != NULL ? quoted : "\"\"",
                (unsigned long long)pid, t + 1, t);
        free(quoted);
    }
}

/* The nodes of thread t's subtree (its fiber node stands as the profile's root), numbered
 * 1.. within it as they are written (`ids`, per tree node): a profile's ids are its own, so
 * each fiber's are as short as its subtree allows (the benchmark's trace 0.5 MB less than the
 * run's tree's numbers). */
static void write_nodes(FILE *stream, const struct ospx__tree *tree, uint32_t fiber_node,
                        const struct ospx__quoted_functions *quoted, uint32_t *ids)
{
    uint32_t *pending = malloc((tree->count + 1) * sizeof *pending);
    if (pending == NULL)
        return;
    size_t top = 0;
    uint32_t next_id = 1;
    pending[top++] = fiber_node;
    while (top > 0) {
        uint32_t n = pending[--top];
        const struct ospx__node *node = &tree->nodes[n];
        fputs_unlocked(next_id == 1 ? "{\"id\":" : ",{\"id\":", stream);
        ids[n] = next_id++;
        ospx__put_uint(stream, ids[n]);
        ospx__put_call_frame(stream, quoted, node,
                             node->kind == OSPX_NODE_WAITING ? "\"(idle)\"" : "\"(root)\"", 1);
        if (n != fiber_node) {
            fputs_unlocked(",\"parent\":", stream);
            ospx__put_uint(stream, ids[node->parent]); /* written before its children */
        }
        putc_unlocked('}', stream);
        for (uint32_t c = node->first_child; c != OSPX_NO_NODE; c = tree->nodes[c].next_sibling)
            pending[top++] = c;
    }
    free(pending);
}

/* One point of a thread's sample stream: from `at_us` on, the thread is in `node`. */
struct point {
    uint64_t at_us;
    uint32_t node;
};

/* Thread t's rows as a V8 sample stream on real time, where each sample lasts until the next:
 * an on-CPU row of weight w covers the w periods of CPU it paid for, ending at its time (from
 * max(t - w periods, the previous point)); the thread is (idle) from the end of that until
 * its next row, and from a waiting row until its next row. So the CPU time a reader sums per
 * function is the report's, and the gaps (preempted, blocked) are idle. Rows that follow each
 * other without a gap in one node are one point (a hot loop's ticks: one sample lasting them
 * all, as the `.cpuprofile`'s runs are). Returns the count. */
static size_t sample_points(const struct ospx_model *model, const size_t *order, size_t count,
                            const uint32_t *leaves, uint32_t idle, struct point *points)
{
    const struct ospx_raw *raw = model->raw;
    double period_ns = raw->rate_hz > 0 ? 1e9 / raw->rate_hz : 0;
    double limit_ns = model->wall_seconds > 0 ? model->wall_seconds * 1e9 : 0;
    double previous_ns = 0; /* where the last point's time ends */
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        const struct ospx_sample *sample = &raw->samples[order[i]];
        double t = (double)sample->t_rel_ns;
        if (limit_ns > 0 && t > limit_ns)
            t = limit_ns; /* a broken collector's time */
        if (sample->state != 0) {
            /* idle from the end of the last CPU sample on (the wait starts no earlier) */
            if (n == 0)
                previous_ns = t;
            if (n == 0 || points[n - 1].node != idle)
                points[n++] = (struct point){(uint64_t)llround(previous_ns / 1000.0), idle};
            continue;
        }
        double length = (double)sample->weight * period_ns;
        double start = t - length > previous_ns ? t - length : previous_ns;
        if (n > 0 && start > previous_ns && points[n - 1].node != idle)
            points[n++] = (struct point){(uint64_t)llround(previous_ns / 1000.0), idle};
        /* a row that goes on where the one before it ended, in the same node, goes on in its
         * point (a point lasts until the next one: the same time, a point less) */
        if (n == 0 || points[n - 1].node != leaves[i] || start > previous_ns)
            points[n++] = (struct point){(uint64_t)llround(start / 1000.0), leaves[i]};
        previous_ns = start + length;
    }
    if (n > 0 && points[n - 1].node != idle)
        points[n++] = (struct point){(uint64_t)llround(previous_ns / 1000.0), idle};
    return n;
}

/* Thread t's Profile and ProfileChunk events. */
static void write_samples(FILE *stream, size_t t, uint64_t pid, const struct ospx__tree *tree,
                          uint32_t fiber_node, const struct ospx__quoted_functions *quoted,
                          const struct point *points, size_t count, uint32_t *ids)
{
    if (count == 0)
        return;
    uint64_t start = points[0].at_us, previous = start;
    fprintf(stream,
            ",\n{\"ph\":\"P\",\"pid\":%llu,\"tid\":%zu,\"ts\":%llu,\"name\":\"Profile\",\"id\":"
            "\"0x%zx\",\"cat\":\"disabled-by-default-v8.cpu_profiler\",\"args\":{\"data\":{"
            "\"startTime\":%llu}}}",
            (unsigned long long)pid, t + 1, (unsigned long long)start, t + 1,
            (unsigned long long)start);
    for (size_t first = 0; first < count; first += CHUNK_SAMPLES) {
        size_t end = first + CHUNK_SAMPLES < count ? first + CHUNK_SAMPLES : count;
        fprintf(stream,
                ",\n{\"ph\":\"P\",\"pid\":%llu,\"tid\":%zu,\"ts\":%llu,\"name\":\"ProfileChunk\","
                "\"id\":\"0x%zx\",\"cat\":\"disabled-by-default-v8.cpu_profiler\",\"args\":{"
                "\"data\":{\"cpuProfile\":{",
                (unsigned long long)pid, t + 1, (unsigned long long)points[first].at_us, t + 1);
        if (first == 0) {
            fputs("\"nodes\":[", stream);
            write_nodes(stream, tree, fiber_node, quoted, ids);
            fputs("],", stream);
        }
        fputs("\"samples\":[", stream);
        for (size_t i = first; i < end; i++) {
            if (i > first)
                putc_unlocked(',', stream);
            ospx__put_uint(stream, ids[points[i].node]);
        }
        fputs("]},\"timeDeltas\":[", stream);
        for (size_t i = first; i < end; i++) {
            if (i > first)
                putc_unlocked(',', stream);
            ospx__put_uint(stream, points[i].at_us - previous);
            previous = points[i].at_us;
        }
        fputs("]}}}", stream);
    }
}

/* What a wait's event says after its times, per raw stack (made the first time a wait blocks
 * in it: a million rows wait in a few thousand stacks): `"name":"waiting in <leaf>",
 * "cat":"osprey.waiting","args":{"site":<the raw stack's index>,"stack":[<the innermost
 * frames, root first>]}}` for the first wait at that site on a track; the later ones there
 * end after the site (`"args":{"site":N}}`): the stack once per site and track, not once per
 * wait (the benchmark's trace: 41 MB of stacks in 99,845 waits at 9,009 sites). */
struct wait_texts {
    char **text;
    size_t *length;      /* the whole text */
    size_t *site_length; /* up to the end of `"site":N`: what a later wait at it says */
    uint32_t *track;     /* the last track (tid) whose wait at the stack carried it whole */
    size_t count;
};

static void put_wait_text(FILE *stream, struct wait_texts *texts, const struct ospx_model *model,
                          uint32_t stack, uint32_t tid, const uint32_t *function_of,
                          const struct ospx__quoted_functions *quoted)
{
    if (texts->text[stack] != NULL) {
        if (texts->track[stack] == tid) {
            fwrite_unlocked(texts->text[stack], 1, texts->site_length[stack], stream);
            fputs_unlocked("}}", stream);
        } else {
            fwrite_unlocked(texts->text[stack], 1, texts->length[stack], stream);
            texts->track[stack] = tid;
        }
        return;
    }
    size_t depth;
    const struct ospx_slot *slots = ospx__stack_slots(model, stack, &depth);
    char name[600];
    snprintf(name, sizeof name, "waiting in %s",
             depth > 0 ? model->functions[function_of[slots[0].frame]].name : "?");
    char *quoted_name = ospx__json_quote(name);
    /* root first, the innermost STACK_ARGUMENT_FRAMES at most (where it blocked) */
    size_t shown = depth < STACK_ARGUMENT_FRAMES ? depth : STACK_ARGUMENT_FRAMES;
    size_t length = strlen(quoted_name != NULL ? quoted_name : "\"waiting\"") + 80;
    for (size_t k = 0; k < shown; k++)
        length += quoted->name_lengths[function_of[slots[k].frame]] + 1;
    char *text = malloc(length), *at = text;
    if (text != NULL) {
        at += sprintf(at, "\"name\":%s,\"cat\":\"osprey.waiting\",\"args\":{\"site\":%u",
                      quoted_name != NULL ? quoted_name : "\"waiting\"", stack);
        texts->site_length[stack] = (size_t)(at - text);
        texts->track[stack] = tid;
        at = stpcpy(at, ",\"stack\":[");
        for (size_t k = shown; k-- > 0;) {
            uint32_t f = function_of[slots[k].frame];
            if (k + 1 < shown)
                *at++ = ',';
            at = mempcpy(at, quoted->names[f], quoted->name_lengths[f]);
        }
        at = stpcpy(at, "]}}");
        texts->length[stack] = (size_t)(at - text);
    }
    free(quoted_name);
    texts->text[stack] = text;
    fputs_unlocked(text != NULL ? text : "\"name\":\"waiting\",\"cat\":\"osprey.waiting\"}",
                   stream);
}

/* "waiting in <leaf>" spans of thread t: a weighted row is one wait, and consecutive waiting
 * rows of weight 1 and one stack are one wait,
 * from the first row's time to the last one's end (its weight in periods, cut at the thread's
 * next sample). */
static void write_waits(FILE *stream, const struct ospx_model *model, size_t t, uint64_t pid,
                        struct wait_texts *texts, const uint32_t *function_of,
                        const struct ospx__quoted_functions *quoted, const size_t *order,
                        size_t count)
{
    const struct ospx_raw *raw = model->raw;
    double period_us = raw->rate_hz > 0 ? 1e6 / raw->rate_hz : 0;
    for (size_t i = 0; i < count;) {
        const struct ospx_sample *sample = &raw->samples[order[i]];
        if (sample->state == 0) {
            i++;
            continue;
        }
        uint64_t begin = sample_us(model, sample), end = begin;
        size_t j = i;
        for (; j < count; j++) {
            const struct ospx_sample *row = &raw->samples[order[j]];
            uint64_t at = sample_us(model, row);
            /* A weighted row is one whole wait: never merged with its neighbours (two waits
             * at one site with 50 us of work between them are two slices). Rows of weight 1,
             * a tick's each, continue the wait of the row before them. */
            if (row->state == 0 || row->stack != sample->stack ||
                (j > i && ((double)at > (double)end + period_us / 2 || row->weight > 1 ||
                           raw->samples[order[j - 1]].weight > 1)))
                break;
            uint64_t row_end = at + (uint64_t)((double)row->weight * period_us);
            if (j + 1 < count) {
                uint64_t next = sample_us(model, &raw->samples[order[j + 1]]);
                if (next < row_end && next >= at)
                    row_end = next;
            }
            end = row_end > end ? row_end : end;
        }
        fputs_unlocked(",\n{\"ph\":\"X\",\"pid\":", stream);
        ospx__put_uint(stream, pid);
        fputs_unlocked(",\"tid\":", stream);
        ospx__put_uint(stream, t + 1);
        fputs_unlocked(",\"ts\":", stream);
        ospx__put_uint(stream, begin);
        fputs_unlocked(",\"dur\":", stream);
        ospx__put_uint(stream, end - begin);
        putc_unlocked(',', stream);
        put_wait_text(stream, texts, model, sample->stack, (uint32_t)t + 1, function_of, quoted);
        i = j > i ? j : i + 1;
    }
}

int ospx_write_trace(const struct ospx_model *model, const char *path, struct ospx_error *err)
{
    const struct ospx_raw *raw = model->raw;
    struct ospx__v8_tree v8;
    int tree_rc = ospx__v8_tree_init(&v8, model);
    uint32_t *fiber_nodes = malloc((raw->thread_count + 1) * sizeof *fiber_nodes);
    uint32_t *leaves = malloc((raw->sample_count + 1) * sizeof *leaves);
    uint32_t *idle_nodes = malloc((raw->thread_count + 1) * sizeof *idle_nodes);
    struct wait_texts waits = {calloc(raw->stack_count + 1, sizeof(char *)),
                               calloc(raw->stack_count + 1, sizeof(size_t)),
                               calloc(raw->stack_count + 1, sizeof(size_t)),
                               calloc(raw->stack_count + 1, sizeof(uint32_t)), raw->stack_count};
    const size_t *order = NULL, *first = NULL;
    int rc = ospx__model_thread_order(model, &order, &first);
    /* One thread's points at a time: at most two per row (a sample and the idle gap before
     * it), and a last idle (sized by the largest thread, not the run: 32 MB of pages to fault
     * in for the benchmark's million rows, 4 MB so). */
    size_t most_rows = 0;
    for (size_t t = 0; rc == 0 && t < raw->thread_count; t++)
        most_rows = first[t + 1] - first[t] > most_rows ? first[t + 1] - first[t] : most_rows;
    struct point *points = malloc((2 * most_rows + 1) * sizeof *points);
    struct ospx__quoted_functions quoted = {0};
    if (tree_rc != 0 || ospx__quote_functions(model, v8.scripts, 1, &quoted) != 0)
        rc = -ENOMEM;
    if (tree_rc != 0 || fiber_nodes == NULL || leaves == NULL || idle_nodes == NULL ||
        points == NULL || waits.text == NULL || waits.length == NULL || waits.site_length == NULL ||
        waits.track == NULL)
        rc = -ENOMEM;
    /* The tree: root → one node per fiber → its functions, and its (idle). */
    for (size_t t = 0; rc == 0 && t < raw->thread_count; t++) {
        fiber_nodes[t] = ospx__tree_child(&v8.tree, 0, OSPX_NODE_FIBER, (uint32_t)t);
        idle_nodes[t] = fiber_nodes[t] != OSPX_NO_NODE
                            ? ospx__tree_child(&v8.tree, fiber_nodes[t], OSPX_NODE_WAITING, 0)
                            : OSPX_NO_NODE;
        if (idle_nodes[t] == OSPX_NO_NODE)
            rc = -ENOMEM;
    }
    /* A stack's leaf is found once per thread that ran it: remember the last one per stack. */
    struct leaf_cache {
        uint32_t thread, node;
    } *cache = calloc(raw->stack_count + 1, sizeof *cache);
    if (cache == NULL)
        rc = -ENOMEM;
    for (size_t s = 0; rc == 0 && s < raw->stack_count; s++)
        cache[s].node = OSPX_NO_NODE;
    for (size_t i = 0; rc == 0 && i < raw->sample_count; i++) {
        const struct ospx_sample *sample = &raw->samples[order[i]];
        uint32_t node = fiber_nodes[sample->thread];
        if (sample->state != 0) {
            node = idle_nodes[sample->thread];
        } else if (cache[sample->stack].node != OSPX_NO_NODE &&
                   cache[sample->stack].thread == sample->thread) {
            node = cache[sample->stack].node;
        } else {
            size_t depth;
            const struct ospx_slot *slots = ospx__stack_slots(model, sample->stack, &depth);
            for (size_t k = depth; k-- > 0 && node != OSPX_NO_NODE;)
                node = ospx__tree_child(&v8.tree, node, OSPX_NODE_FUNCTION,
                                        v8.function_of[slots[k].frame]);
            cache[sample->stack] = (struct leaf_cache){sample->thread, node};
        }
        if (node == OSPX_NO_NODE)
            rc = -ENOMEM;
        leaves[i] = node;
    }
    uint32_t *ids = rc == 0 ? malloc((v8.tree.count + 1) * sizeof *ids) : NULL;
    if (rc == 0 && ids == NULL)
        rc = -ENOMEM;
    if (rc == 0) {
        struct ospx__atomic_file file;
        rc = ospx__atomic_open(&file, path, err);
        if (rc == 0) {
            fputs("{\"traceEvents\":[\n", file.stream);
            write_metadata(file.stream, model);
            for (size_t t = 0; t < raw->thread_count; t++) {
                uint64_t pid = trace_pid(raw, raw->threads[t].process);
                size_t n = sample_points(model, order + first[t], first[t + 1] - first[t],
                                         leaves + first[t], idle_nodes[t], points);
                write_samples(file.stream, t, pid, &v8.tree, fiber_nodes[t], &quoted, points, n,
                              ids);
                write_waits(file.stream, model, t, pid, &waits, v8.function_of, &quoted,
                            order + first[t], first[t + 1] - first[t]);
            }
            char *exe = ospx__json_quote(raw->exe);
            fprintf(file.stream,
                    "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"exporter\":\"%s\","
                    "\"exe\":%s,\"rate_hz\":%u,\"start_unix_ns\":%llu}}\n",
                    OSPX_EXPORTER_NAME, exe != NULL ? exe : "\"\"", raw->rate_hz,
                    (unsigned long long)raw->start_unix_ns);
            free(exe);
            rc = ospx__atomic_commit(&file, err);
        }
    } else {
        ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    }
    ospx__v8_tree_free(&v8);
    ospx__quoted_free(&quoted);
    for (size_t k = 0; waits.text != NULL && k < waits.count; k++)
        free(waits.text[k]);
    OSPC_FREE_ALL(fiber_nodes, leaves, idle_nodes, points, cache, waits.text, waits.length,
                  waits.site_length, waits.track, ids);
    return rc;
}
