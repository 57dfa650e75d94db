/* cpuprofile.c — `<stem>.cpuprofile`, the V8/Chrome DevTools CPU profile: a call tree of nodes
 * (ids 1..N in pre-order, `(root)` first), each with its callFrame and hitCount, then every
 * sample's leaf node with the gaps between samples in integer microseconds. Each fiber is a
 * synthetic child of the root named `fiber <id> (<label>)`; every waiting sample is the one
 * `(idle)` node under the root, V8's own name for time no code ran, which DevTools leaves out of
 * its CPU figures. Lines and columns are 0-based (-1 unknown; a column only beside a known
 * line); scriptId is "0" for frames without a file, else the file's position in the sorted
 * list of files, so it is the same for the same profile every time.
 *
 * DESIGN: every reader of this format (DevTools, speedscope, cpupro, flamebearer) gives a sample
 * the time up to the next sample, and DevTools' trees give a node hitCount times the profile's
 * mean interval. V8 profiles one thread; interleaving several fibers' samples by wall time would
 * make each one's time depend on the phase between the threads. So the time axis here is
 * sampling periods, not wall time: fiber after fiber (in raw-profile order), each sample
 * lasting its weight in periods (1/rate_hz s), and hitCount the sum of the weights. Every reader
 * then gives each function exactly its sampled time. The real timeline is `<stem>.trace.json`.
 *
 * Sized by what it shows: the samples are the call tree's, not the rows. Within its fiber a
 * node's rows are one sample lasting their weights (its hitCount in periods), the nodes in
 * pre-order, then the fiber's waits as one (idle) sample: a million rows over ten thousand
 * stacks are ten thousand samples, and every reader's time per node and per function is what
 * one sample per row gave. DevTools gives the last sample the mean interval and a node
 * hitCount × (endTime - startTime) ÷ the hitCounts' sum: the closing (idle) sample lasts that
 * mean interval, many periods now, in (idle)'s hitCount and before endTime, so the quotient
 * stays one period and the axis ends where DevTools ends it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_internal.h"

/* The leaf node of one sample, creating its path from the root. */
static uint32_t sample_leaf(struct ospx__tree *tree, const struct ospx_model *model,
                            const uint32_t *function_of, const struct ospx_sample *sample)
{
    if (sample->state != 0)
        return ospx__tree_child(tree, 0, OSPX_NODE_WAITING, 0);
    uint32_t node = ospx__tree_child(tree, 0, OSPX_NODE_FIBER, sample->thread);
    size_t depth;
    const struct ospx_slot *slots = ospx__stack_slots(model, sample->stack, &depth);
    for (size_t k = depth; k-- > 0 && node != OSPX_NO_NODE;)
        node = ospx__tree_child(tree, node, OSPX_NODE_FUNCTION, function_of[slots[k].frame]);
    return node;
}

/* Number the nodes 1..N in pre-order. */
static int number_nodes(struct ospx__tree *tree)
{
    uint32_t *pending = malloc(tree->count * sizeof *pending);
    if (pending == NULL)
        return -ENOMEM;
    size_t top = 0;
    uint32_t next_id = 1;
    pending[top++] = 0;
    while (top > 0) {
        uint32_t n = pending[--top];
        tree->nodes[n].id = next_id++;
        /* Push children in reverse so the first child is numbered first. */
        size_t first = top;
        for (uint32_t c = tree->nodes[n].first_child; c != OSPX_NO_NODE;
             c = tree->nodes[c].next_sibling)
            pending[top++] = c;
        for (size_t a = first, b = top; a + 1 < b; a++, b--) {
            uint32_t swap = pending[a];
            pending[a] = pending[b - 1];
            pending[b - 1] = swap;
        }
    }
    free(pending);
    return 0;
}

static int compare_files(const void *a, const void *b, void *context)
{
    const struct ospx_function_stat *functions = context;
    return strcmp(functions[*(const uint32_t *)a].file, functions[*(const uint32_t *)b].file);
}

/* Per function, its scriptId: 0 without a file, else 1 + the file's rank among the files. */
uint32_t *ospx__script_ids(const struct ospx_model *model)
{
    uint32_t *order = ospx__functions_sorted(model, compare_files);
    uint32_t *ids = malloc((model->function_count + 1) * sizeof *ids);
    if (order == NULL || ids == NULL) {
        free(order);
        free(ids);
        return NULL;
    }
    uint32_t rank = 0;
    for (size_t i = 0; i < model->function_count; i++) {
        const char *file = model->functions[order[i]].file;
        if (file[0] == '\0') {
            ids[order[i]] = 0;
            continue;
        }
        if (rank == 0 || strcmp(model->functions[order[i - 1]].file, file) != 0)
            rank++;
        ids[order[i]] = rank;
    }
    free(order);
    return ids;
}

void ospx__quoted_free(struct ospx__quoted_functions *quoted)
{
    for (size_t i = 0; i < quoted->count; i++)
        OSPC_FREE_ALL(quoted->names[i], quoted->urls[i], quoted->frames[i]);
    OSPC_FREE_ALL(quoted->names, quoted->urls, quoted->frames, quoted->name_lengths,
                  quoted->url_lengths, quoted->frame_lengths);
}

/* `value`'s decimal digits at `at`; returns their end. */
static char *put_decimal(char *at, uint64_t value)
{
    char digits[24];
    size_t n = sizeof digits;
    do {
        digits[--n] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    return mempcpy(at, digits + n, sizeof digits - n);
}

/* A node's callFrame. In a `.cpuprofile` the fields its readers need: `scriptId` a string ("0"
 * without a file: DevTools colours such a frame by its name and offers no source to jump to),
 * `url` always a string ("" unknown: VS Code's profile model calls `url.startsWith` on every
 * frame), `lineNumber` always (-1 unknown: VS Code files such a frame as system code), and
 * `columnNumber` -1 only beside a known line (where an editor opens it; every reader takes a
 * missing one: 18 bytes of each node without a line); `in_trace`: as V8 writes a
 * ProfileChunk's nodes into a trace (`scriptId` a number, `url` and `lineNumber` only when
 * known, no column), which DevTools' trace model reads — 43 bytes less per node of an object
 * without line tables, a tenth of a trace's size. */
void ospx__put_call_frame(FILE *stream, const struct ospx__quoted_functions *quoted,
                          const struct ospx__node *node, const char *other_name, int in_trace)
{
    if (node->kind == OSPX_NODE_FUNCTION) {
        fwrite_unlocked(quoted->frames[node->value], 1, quoted->frame_lengths[node->value], stream);
        return;
    }
    fputs_unlocked(",\"callFrame\":{\"functionName\":", stream);
    fputs_unlocked(other_name, stream);
    fputs_unlocked(in_trace ? ",\"scriptId\":0}"
                            : ",\"scriptId\":\"0\",\"url\":\"\",\"lineNumber\":-1}",
                   stream);
}

/* Function f's callFrame text (see ospx__put_call_frame), malloc'd, its length in *length. */
static char *format_call_frame(const struct ospx_model *model,
                               const struct ospx__quoted_functions *quoted, const uint32_t *scripts,
                               uint32_t f, int in_trace, size_t *length)
{
    char *text = malloc(quoted->name_lengths[f] + quoted->url_lengths[f] + 128), *at = text;
    if (text == NULL)
        return NULL;
    int line = model->functions[f].line - 1; /* 0-based; unknown (0) gives -1 */
    at = stpcpy(at, ",\"callFrame\":{\"functionName\":");
    at = mempcpy(at, quoted->names[f], quoted->name_lengths[f]);
    at = stpcpy(at, in_trace ? ",\"scriptId\":" : ",\"scriptId\":\"");
    at = put_decimal(at, scripts[f]);
    if (!in_trace || quoted->url_lengths[f] > 2) { /* "" is 2 bytes quoted */
        at = stpcpy(at, in_trace ? ",\"url\":" : "\",\"url\":");
        at = mempcpy(at, quoted->urls[f], quoted->url_lengths[f]);
    }
    if (in_trace && line < 0) {
        at = stpcpy(at, "}");
    } else {
        at = stpcpy(at, ",\"lineNumber\":");
        if (line < 0)
            *at++ = '-';
        at = put_decimal(at, line < 0 ? -(uint64_t)line : (uint64_t)line);
        at = stpcpy(at, in_trace || line < 0 ? "}" : ",\"columnNumber\":-1}");
    }
    *length = (size_t)(at - text);
    return text;
}

int ospx__quote_functions(const struct ospx_model *model, const uint32_t *scripts, int in_trace,
                          struct ospx__quoted_functions *quoted)
{
    quoted->count = 0;
    quoted->names = calloc(model->function_count + 1, sizeof *quoted->names);
    quoted->urls = calloc(model->function_count + 1, sizeof *quoted->urls);
    quoted->frames = calloc(model->function_count + 1, sizeof *quoted->frames);
    quoted->name_lengths = calloc(model->function_count + 1, sizeof *quoted->name_lengths);
    quoted->url_lengths = calloc(model->function_count + 1, sizeof *quoted->url_lengths);
    quoted->frame_lengths = calloc(model->function_count + 1, sizeof *quoted->frame_lengths);
    if (quoted->names == NULL || quoted->urls == NULL || quoted->frames == NULL ||
        quoted->name_lengths == NULL || quoted->url_lengths == NULL ||
        quoted->frame_lengths == NULL)
        return -ENOMEM;
    for (; quoted->count < model->function_count; quoted->count++) {
        const struct ospx_function_stat *fn = &model->functions[quoted->count];
        quoted->names[quoted->count] = ospx__json_quote(fn->name);
        quoted->urls[quoted->count] = ospx__json_quote(fn->file);
        if (quoted->names[quoted->count] == NULL || quoted->urls[quoted->count] == NULL) {
            quoted->count++;
            return -ENOMEM;
        }
        quoted->name_lengths[quoted->count] = strlen(quoted->names[quoted->count]);
        quoted->url_lengths[quoted->count] = strlen(quoted->urls[quoted->count]);
        quoted->frames[quoted->count] =
            format_call_frame(model, quoted, scripts, (uint32_t)quoted->count, in_trace,
                              &quoted->frame_lengths[quoted->count]);
        if (quoted->frames[quoted->count] == NULL) {
            quoted->count++;
            return -ENOMEM;
        }
    }
    return 0;
}

static void write_node(FILE *stream, const struct ospx__tree *tree, const struct ospx__node *node,
                       const struct ospx_model *model, const struct ospx__quoted_functions *quoted)
{
    char fiber_name[512], *fiber_quoted = NULL;
    const char *name = "\"(root)\"";
    if (node->kind == OSPX_NODE_FIBER) {
        ospx__thread_title(model, node->value, fiber_name, sizeof fiber_name);
        fiber_quoted = ospx__json_quote(fiber_name);
        name = fiber_quoted != NULL ? fiber_quoted : "\"fiber\"";
    } else if (node->kind == OSPX_NODE_WAITING) {
        name = "\"(idle)\"";
    }
    fputs_unlocked("{\"id\":", stream);
    ospx__put_uint(stream, node->id);
    ospx__put_call_frame(stream, quoted, node, name, 0);
    /* hitCount and children are optional in V8's ProfileNode: written when not 0 and not
     * empty, and the root's hitCount always (DevTools counts the samples instead when the
     * first node has none, which would make each node's hits its samples, not its periods). */
    if (node->hits > 0 || node->id == 1) {
        fputs_unlocked(",\"hitCount\":", stream);
        ospx__put_uint(stream, node->hits);
    }
    if (node->first_child != OSPX_NO_NODE) {
        fputs_unlocked(",\"children\":[", stream);
        for (uint32_t c = node->first_child; c != OSPX_NO_NODE; c = tree->nodes[c].next_sibling) {
            ospx__put_uint(stream, tree->nodes[c].id);
            if (tree->nodes[c].next_sibling != OSPX_NO_NODE)
                putc_unlocked(',', stream);
        }
        putc_unlocked(']', stream);
    }
    putc_unlocked('}', stream);
    free(fiber_quoted);
}

/* One sample of the file: a node, lasting `periods` sampling periods. */
struct run {
    uint32_t node;
    uint64_t periods;
};

/* The samples, fiber after fiber (the root's fiber children, in raw-profile order): each node
 * of the fiber's subtree with hits, in pre-order (the order of the ids), then the fiber's
 * waiting periods on (idle); then the closing (idle) sample. Returns the count, or 0 when out
 * of memory. */
static size_t tree_runs(const struct ospx__tree *tree, const struct ospx_model *model,
                        uint32_t idle, struct run *runs)
{
    uint32_t *by_id = malloc((tree->count + 1) * sizeof *by_id);
    if (by_id == NULL)
        return 0;
    for (uint32_t k = 0; k < tree->count; k++)
        by_id[tree->nodes[k].id - 1] = k;
    size_t n = 0, next = 0; /* the fibers before `next` have had their waits */
    for (size_t i = 0; i < tree->count; i++) {
        const struct ospx__node *node = &tree->nodes[by_id[i]];
        /* a fiber's node comes after the previous fiber's subtree; a fiber that only waited
         * has none, and its waits come at its place */
        for (; node->kind == OSPX_NODE_FIBER && next < node->value; next++)
            if (model->fibers[next].waiting > 0)
                runs[n++] = (struct run){idle, model->fibers[next].waiting};
        if (node->kind != OSPX_NODE_WAITING && node->hits > 0)
            runs[n++] = (struct run){by_id[i], node->hits};
    }
    for (; next < model->fiber_count; next++)
        if (model->fibers[next].waiting > 0)
            runs[n++] = (struct run){idle, model->fibers[next].waiting};
    free(by_id);
    runs[n++] = (struct run){idle, 0};
    return n;
}

/* The whole profile: nodes in pre-order (the order of their ids), then the samples. */
static int write_profile(FILE *stream, const struct ospx__tree *tree,
                         const struct ospx_model *model, const uint32_t *scripts,
                         const struct run *runs, size_t run_count)
{
    const struct ospx_raw *raw = model->raw;
    struct ospx__quoted_functions quoted;
    uint32_t *by_id = malloc(tree->count * sizeof *by_id);
    int rc = ospx__quote_functions(model, scripts, 0, &quoted);
    if (by_id == NULL || rc != 0) {
        free(by_id);
        ospx__quoted_free(&quoted);
        return -ENOMEM;
    }
    for (uint32_t n = 0; n < tree->count; n++)
        by_id[tree->nodes[n].id - 1] = n;
    fputs("{\"nodes\":[", stream);
    for (size_t i = 0; i < tree->count; i++) {
        if (i > 0)
            fputc(',', stream);
        write_node(stream, tree, &tree->nodes[by_id[i]], model, &quoted);
    }
    free(by_id);
    ospx__quoted_free(&quoted);

    /* The time axis counts sampling periods (see DESIGN): sample i starts after the periods of
     * samples 0..i-1. Positions are rounded to whole microseconds from the exact sum, so the
     * rounding never accumulates. The closing (idle) sample at endTime keeps the last real
     * one whole (DevTools gives the last sample the mean interval, not the time to endTime). */
    double period_us = raw->rate_hz > 0 ? 1e6 / raw->rate_hz : 0;
    uint64_t start_us = raw->start_unix_ns / 1000, periods = 0;
    for (size_t i = 0; i < run_count; i++)
        periods += runs[i].periods;
    fputs("],\"startTime\":", stream);
    ospx__put_uint(stream, start_us);
    fputs(",\"endTime\":", stream);
    ospx__put_uint(stream, start_us + (uint64_t)llround((double)periods * period_us));
    fputs(",\"samples\":[", stream);
    for (size_t i = 0; i < run_count; i++) {
        if (i > 0)
            fputc(',', stream);
        ospx__put_uint(stream, tree->nodes[runs[i].node].id);
    }
    fputs("],\"timeDeltas\":[", stream);
    uint64_t previous_us = 0;
    periods = 0;
    for (size_t i = 0; i < run_count; i++) {
        uint64_t at_us = (uint64_t)llround((double)periods * period_us);
        if (i > 0)
            fputc(',', stream);
        ospx__put_uint(stream, at_us - previous_us);
        previous_us = at_us;
        periods += runs[i].periods;
    }
    fputs("]}\n", stream);
    return 0;
}

int ospx_write_cpuprofile(const struct ospx_model *model, const char *path, struct ospx_error *err)
{
    const struct ospx_raw *raw = model->raw;
    struct ospx__v8_tree v8;
    int tree_rc = ospx__v8_tree_init(&v8, model);
    const size_t *order = NULL, *first = NULL;
    int order_rc = ospx__model_thread_order(model, &order, &first);
    /* On-CPU samples on the same stack and thread share a leaf: remember the last one per
     * stack (waiting samples all hit the one (idle) node and leave it alone). */
    struct leaf_cache {
        uint32_t thread, node;
    } *cache = calloc(raw->stack_count + 1, sizeof *cache);
    struct run *runs = NULL;
    size_t run_count = 0;
    int rc = -ENOMEM;
    if (tree_rc != 0 || order_rc != 0 || cache == NULL)
        goto out;
    for (size_t s = 0; s < raw->stack_count; s++)
        cache[s].node = OSPX_NO_NODE;
    uint32_t idle = OSPX_NO_NODE;
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *sample = &raw->samples[order[i]];
        uint32_t leaf = sample->state != 0 ? idle : cache[sample->stack].node;
        if (leaf == OSPX_NO_NODE ||
            (sample->state == 0 && cache[sample->stack].thread != sample->thread)) {
            leaf = sample_leaf(&v8.tree, model, v8.function_of, sample);
            if (leaf == OSPX_NO_NODE)
                goto out;
            if (sample->state != 0)
                idle = leaf;
            else
                cache[sample->stack] = (struct leaf_cache){sample->thread, leaf};
        }
        v8.tree.nodes[leaf].hits += sample->weight;
    }
    /* The closing sample (see write_profile): the (idle) node, made if no wait made it. */
    idle = ospx__tree_child(&v8.tree, 0, OSPX_NODE_WAITING, 0);
    if (idle == OSPX_NO_NODE || number_nodes(&v8.tree) != 0)
        goto out;
    /* at most one sample per node, one (idle) per fiber and the closing one */
    runs = malloc((v8.tree.count + model->fiber_count + 1) * sizeof *runs);
    run_count = runs != NULL ? tree_runs(&v8.tree, model, idle, runs) : 0;
    if (run_count == 0)
        goto out;
    /* The closing sample lasts DevTools' mean interval, which it gives the last sample: in
     * (idle)'s hits and before endTime, so hitCount × (the axis ÷ the hits) is one period. */
    uint64_t all = 0;
    for (size_t i = 0; i < run_count; i++)
        all += runs[i].periods;
    if (run_count > 1) {
        runs[run_count - 1].periods = (all + (run_count - 1) / 2) / (run_count - 1);
        v8.tree.nodes[idle].hits += runs[run_count - 1].periods;
    }

    struct ospx__atomic_file file;
    rc = ospx__atomic_open(&file, path, err);
    if (rc != 0)
        goto out;
    rc = write_profile(file.stream, &v8.tree, model, v8.scripts, runs, run_count);
    if (rc == 0)
        rc = ospx__atomic_commit(&file, err);
    else
        ospx__atomic_abort(&file);
out:
    if (rc == -ENOMEM)
        ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    free(cache);
    ospx__v8_tree_free(&v8);
    free(runs);
    return rc;
}
