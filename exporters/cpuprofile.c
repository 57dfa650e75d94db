/* cpuprofile.c — `<stem>.cpuprofile`, the V8/Chrome DevTools CPU profile: a call tree of nodes
 * (ids 1..N in pre-order, `(root)` first), each with its callFrame and hitCount (samples whose
 * leaf it is), then every sample's leaf node in time order across all fibers, with the gaps
 * between them in integer microseconds. Each fiber is a synthetic child of the root named
 * `fiber <id> (<label>)`; a waiting sample ends in a `(waiting)` leaf. Lines and columns are
 * 0-based (-1 unknown); scriptId is "0" for frames without a file, else the file's position in
 * the sorted list of files, so it is the same for the same profile every time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_internal.h"

enum node_kind { NODE_ROOT, NODE_FIBER, NODE_FUNCTION, NODE_WAITING };

#define NO_NODE UINT32_MAX

struct node {
    enum node_kind kind;
    uint32_t value; /* fiber index or function index */
    uint32_t first_child, last_child, next_sibling;
    uint64_t hits;
    uint32_t id; /* 1-based, pre-order */
};

struct tree {
    struct node *nodes;
    size_t count, capacity;
};

/* The child of `parent` for (kind, value), created when missing; NO_NODE when out of memory. */
static uint32_t child_of(struct tree *tree, uint32_t parent, enum node_kind kind, uint32_t value)
{
    for (uint32_t c = tree->nodes[parent].first_child; c != NO_NODE;
         c = tree->nodes[c].next_sibling)
        if (tree->nodes[c].kind == kind && tree->nodes[c].value == value)
            return c;
    if (tree->count == tree->capacity) {
        size_t capacity = tree->capacity * 2;
        struct node *nodes = realloc(tree->nodes, capacity * sizeof *nodes);
        if (nodes == NULL)
            return NO_NODE;
        tree->nodes = nodes;
        tree->capacity = capacity;
    }
    uint32_t c = (uint32_t)tree->count++;
    tree->nodes[c] = (struct node){kind, value, NO_NODE, NO_NODE, NO_NODE, 0, 0};
    if (tree->nodes[parent].last_child == NO_NODE)
        tree->nodes[parent].first_child = c;
    else
        tree->nodes[tree->nodes[parent].last_child].next_sibling = c;
    tree->nodes[parent].last_child = c;
    return c;
}

/* The leaf node of one sample, creating its path from the root. */
static uint32_t sample_leaf(struct tree *tree, const struct ospx_model *model,
                            const uint32_t *function_of, const struct ospx_sample *sample)
{
    uint32_t node = child_of(tree, 0, NODE_FIBER, sample->thread);
    size_t depth;
    const uint32_t *frames = ospx__stack_frames(model, sample->stack, &depth);
    for (size_t k = depth; k-- > 0 && node != NO_NODE;)
        node = child_of(tree, node, NODE_FUNCTION, function_of[frames[k]]);
    if (sample->state != 0 && node != NO_NODE)
        node = child_of(tree, node, NODE_WAITING, 0);
    return node;
}

/* Number the nodes 1..N in pre-order. */
static int number_nodes(struct tree *tree)
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
        for (uint32_t c = tree->nodes[n].first_child; c != NO_NODE; c = tree->nodes[c].next_sibling)
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
static uint32_t *script_ids(const struct ospx_model *model)
{
    uint32_t *order = malloc((model->function_count + 1) * sizeof *order);
    uint32_t *ids = malloc((model->function_count + 1) * sizeof *ids);
    if (order == NULL || ids == NULL) {
        free(order);
        free(ids);
        return NULL;
    }
    for (uint32_t i = 0; i < model->function_count; i++)
        order[i] = i;
    qsort_r(order, model->function_count, sizeof *order, compare_files, model->functions);
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

static json_t *call_frame(const char *name, const char *file, uint32_t script, int line)
{
    char script_id[16];
    snprintf(script_id, sizeof script_id, "%u", script);
    json_t *frame = json_object();
    json_object_set_new(frame, "functionName", ospx__json_string(name));
    json_object_set_new(frame, "scriptId", json_string(script_id));
    json_object_set_new(frame, "url", ospx__json_string(file));
    json_object_set_new(frame, "lineNumber", json_integer(line > 0 ? line - 1 : -1));
    json_object_set_new(frame, "columnNumber", json_integer(-1));
    return frame;
}

static json_t *node_json(const struct tree *tree, const struct node *node,
                         const struct ospx_model *model, const uint32_t *scripts)
{
    json_t *frame;
    if (node->kind == NODE_ROOT) {
        frame = call_frame("(root)", "", 0, 0);
    } else if (node->kind == NODE_FIBER) {
        const struct ospx_fiber_stat *fiber = &model->fibers[node->value];
        char name[512];
        snprintf(name, sizeof name, "fiber %lld (%s)", (long long)fiber->fiber, fiber->label);
        frame = call_frame(name, "", 0, 0);
    } else if (node->kind == NODE_WAITING) {
        frame = call_frame(OSPX_WAITING_FRAME, "", 0, 0);
    } else {
        const struct ospx_function_stat *fn = &model->functions[node->value];
        frame = call_frame(fn->name, fn->file, scripts[node->value], fn->line);
    }
    json_t *children = json_array();
    for (uint32_t c = node->first_child; c != NO_NODE; c = tree->nodes[c].next_sibling)
        json_array_append_new(children, json_integer(tree->nodes[c].id));
    json_t *object = json_object();
    json_object_set_new(object, "id", json_integer(node->id));
    json_object_set_new(object, "callFrame", frame);
    json_object_set_new(object, "hitCount", json_integer((json_int_t)node->hits));
    json_object_set_new(object, "children", children);
    return object;
}

/* Append the nodes to `array` in pre-order (the order of their ids). */
static int append_nodes(json_t *array, const struct tree *tree, const struct ospx_model *model,
                        const uint32_t *scripts)
{
    uint32_t *by_id = malloc(tree->count * sizeof *by_id);
    if (by_id == NULL)
        return -ENOMEM;
    for (uint32_t n = 0; n < tree->count; n++)
        by_id[tree->nodes[n].id - 1] = n;
    for (size_t i = 0; i < tree->count; i++)
        json_array_append_new(array, node_json(tree, &tree->nodes[by_id[i]], model, scripts));
    free(by_id);
    return 0;
}

int ospx_write_cpuprofile(const struct ospx_model *model, const char *path, struct ospx_error *err)
{
    const struct ospx_raw *raw = model->raw;
    struct tree tree = {malloc(64 * sizeof(struct node)), 1, 64};
    uint32_t *function_of = ospx__frame_functions(model);
    uint32_t *scripts = script_ids(model);
    size_t *order = ospx__samples_in_time_order(raw);
    uint32_t *leaves = malloc((raw->sample_count + 1) * sizeof *leaves);
    /* Samples on the same stack, thread and state share a leaf: remember the last one per stack. */
    struct leaf_cache {
        uint32_t thread, node;
        uint8_t state;
    } *cache = calloc(raw->stack_count + 1, sizeof *cache);
    json_t *root = NULL, *nodes = NULL, *samples = NULL, *deltas = NULL;
    int rc = -ENOMEM;
    if (tree.nodes == NULL || function_of == NULL || scripts == NULL || leaves == NULL ||
        cache == NULL || (order == NULL && raw->sample_count > 0))
        goto out;
    tree.nodes[0] = (struct node){NODE_ROOT, 0, NO_NODE, NO_NODE, NO_NODE, 0, 0};
    for (size_t s = 0; s < raw->stack_count; s++)
        cache[s].node = NO_NODE;
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *sample = &raw->samples[order[i]];
        uint32_t leaf = cache[sample->stack].node;
        if (leaf == NO_NODE || cache[sample->stack].thread != sample->thread ||
            cache[sample->stack].state != sample->state) {
            leaf = sample_leaf(&tree, model, function_of, sample);
            if (leaf == NO_NODE)
                goto out;
            cache[sample->stack].thread = sample->thread;
            cache[sample->stack].state = sample->state;
            cache[sample->stack].node = leaf;
        }
        tree.nodes[leaf].hits++;
        leaves[i] = leaf;
    }
    if (number_nodes(&tree) != 0)
        goto out;

    nodes = json_array();
    samples = json_array();
    deltas = json_array();
    root = json_object();
    json_object_set_new(root, "nodes", nodes);
    if (append_nodes(nodes, &tree, model, scripts) != 0)
        goto out;
    /* Absolute microseconds per sample; each delta is the difference of two of them, so
     * rounding never accumulates. */
    uint64_t start_us = raw->start_unix_ns / 1000, previous_us = start_us;
    for (size_t i = 0; i < raw->sample_count; i++) {
        uint64_t at_us = (raw->start_unix_ns + raw->samples[order[i]].t_rel_ns) / 1000;
        json_array_append_new(samples, json_integer(tree.nodes[leaves[i]].id));
        json_array_append_new(deltas, json_integer((json_int_t)(at_us - previous_us)));
        previous_us = at_us;
    }
    uint64_t end_us = raw->end_unix_ns / 1000;
    if (end_us < previous_us)
        end_us = previous_us;
    json_object_set_new(root, "startTime", json_integer((json_int_t)start_us));
    json_object_set_new(root, "endTime", json_integer((json_int_t)end_us));
    json_object_set_new(root, "samples", samples);
    json_object_set_new(root, "timeDeltas", deltas);
    samples = deltas = NULL;
    rc = 0;
out:
    json_decref(samples);
    json_decref(deltas);
    free(cache);
    free(tree.nodes);
    free(function_of);
    free(scripts);
    free(order);
    free(leaves);
    if (rc != 0) {
        json_decref(root);
        return ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    }
    return ospx__write_json(root, path, JSON_COMPACT, err);
}
