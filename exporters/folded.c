/* folded.c — `<stem>.folded` and `<stem>.offcpu.folded`, collapsed stacks as flamegraph.pl and
 * inferno read them: one line per distinct stack, root first, frames joined by `;`, then a
 * space and the count in sampling periods (the sum of the rows' weights). `.folded` holds the
 * on-CPU samples only, so a flame graph drawn from it is a CPU flame graph whose widths match
 * the report; `.offcpu.folded` holds the waiting ones (the stack each wait blocked in), the
 * off-CPU flame graph of the same run. The thread is a synthetic root frame named as perf names
 * it, `<name>-<tid>` (ospx__thread_root: `hotspot-11512`; with several processes after a frame
 * `<comm>-<pid>` for its process). In names, `;` becomes `:` and line
 * breaks become spaces, so a name can never split a frame or a line. Lines are sorted bytewise,
 * so the same profile always gives the same file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_internal.h"

struct buffer {
    char *data;
    size_t length, capacity;
};

/* In names, ';' becomes ':' and line breaks become spaces (in place). */
static void sanitize(char *text, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        if (text[i] == ';')
            text[i] = ':';
        else if (text[i] == '\n' || text[i] == '\r')
            text[i] = ' ';
    }
}

static int buffer_put(struct buffer *buffer, const char *text, size_t length, int sanitized)
{
    if (buffer->length + length + 1 > buffer->capacity) {
        size_t capacity = buffer->capacity * 2 + length + 64;
        char *data = realloc(buffer->data, capacity);
        if (data == NULL)
            return -ENOMEM;
        buffer->data = data;
        buffer->capacity = capacity;
    }
    memcpy(buffer->data + buffer->length, text, length);
    if (sanitized)
        sanitize(buffer->data + buffer->length, length);
    buffer->length += length;
    buffer->data[buffer->length] = '\0';
    return 0;
}

static int buffer_append(struct buffer *buffer, const char *text, int sanitized)
{
    return buffer_put(buffer, text, strlen(text), sanitized);
}

/* Each function's name as a line's frame, made once (a name is in thousands of lines of the
 * benchmark's profile: measured and sanitized per line, it was half of the writer's time). */
static int frame_names_make(const struct ospx_model *model, struct ospx__texts *names)
{
    names->count = 0;
    names->text = calloc(model->function_count + 1, sizeof *names->text);
    names->length = calloc(model->function_count + 1, sizeof *names->length);
    if (names->text == NULL || names->length == NULL)
        return -ENOMEM;
    for (; names->count < model->function_count; names->count++) {
        char *text = strdup(model->functions[names->count].name);
        if (text == NULL)
            return -ENOMEM;
        names->text[names->count] = text;
        names->length[names->count] = strlen(text);
        sanitize(text, names->length[names->count]);
    }
    return 0;
}

/* One distinct (thread, stack, state) and how many samples it had. */
struct folded_line {
    char *text; /* the stack, without the count */
    uint64_t count;
};

static int compare_folded(const void *a, const void *b)
{
    return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

static char *fold(const struct ospx_model *model, const uint32_t *function_of,
                  const struct ospx__texts *names, const struct ospx_sample *sample)
{
    struct buffer buffer = {NULL, 0, 0};
    int rc = 0;
    /* With several processes, a first frame per process, "<comm>-<pid>" as perf script's
     * stacks folded by stackcollapse-perf.pl --pid begin; merged by command, "<comm>", and
     * the threads of the command's processes merged under it (no thread frame). */
    const struct ospx_raw *raw = model->raw;
    if (ospx__several_processes(raw)) {
        char process[400];
        ospx__process_name(raw, raw->threads[sample->thread].process, process, sizeof process);
        rc = buffer_append(&buffer, process, 1);
    }
    if (!(raw->merged_processes && ospx__several_processes(raw))) {
        char root[400];
        ospx__thread_root(raw, sample->thread, root, sizeof root);
        if (rc == 0 && buffer.length > 0)
            rc = buffer_append(&buffer, ";", 0);
        if (rc == 0)
            rc = buffer_append(&buffer, root, 1);
    }
    size_t depth;
    const struct ospx_slot *slots = ospx__stack_slots(model, sample->stack, &depth);
    for (size_t k = depth; k-- > 0 && rc == 0;) {
        uint32_t f = function_of[slots[k].frame];
        rc = buffer_put(&buffer, ";", 1, 0);
        if (rc == 0)
            rc = buffer_put(&buffer, names->text[f], names->length[f], 0);
    }
    if (rc != 0) {
        free(buffer.data);
        return NULL;
    }
    return buffer.data;
}

/* The folded stacks of the samples in `state` (0 on-CPU, 1 waiting). */
static int write_folded(const struct ospx_model *model, const char *path, uint8_t state,
                        struct ospx_error *err)
{
    const struct ospx_raw *raw = model->raw;
    uint32_t *function_of = ospx__frame_functions(model);
    /* Group the rows by (thread, stack) first: the lines are built once per group. */
    struct ospx__group *groups = NULL;
    size_t group_count = 0;
    struct folded_line *lines = NULL;
    size_t line_count = 0;
    int rc = -ENOMEM;
    struct ospx__texts names = {0};
    if (function_of == NULL || frame_names_make(model, &names) != 0 ||
        ospx__group_samples(raw, state, &groups, &group_count) != 0)
        goto out;
    lines = calloc(group_count + 1, sizeof *lines);
    if (lines == NULL)
        goto out;
    for (size_t g = 0; g < group_count; g++) {
        struct ospx_sample row = {.thread = groups[g].thread, .stack = groups[g].stack};
        lines[line_count].text = fold(model, function_of, &names, &row);
        if (lines[line_count].text == NULL)
            goto out;
        lines[line_count++].count = groups[g].periods;
    }
    /* Different raw stacks can fold to the same text (the same functions at other addresses). */
    qsort(lines, line_count, sizeof *lines, compare_folded);

    struct ospx__atomic_file file;
    rc = ospx__atomic_open(&file, path, err);
    if (rc != 0)
        goto out;
    for (size_t i = 0; i < line_count; i++) {
        uint64_t count = lines[i].count;
        while (i + 1 < line_count && strcmp(lines[i].text, lines[i + 1].text) == 0)
            count += lines[++i].count;
        fprintf(file.stream, "%s %llu\n", lines[i].text, (unsigned long long)count);
    }
    rc = ospx__atomic_commit(&file, err);
out:
    if (rc == -ENOMEM)
        ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    for (size_t i = 0; i < line_count; i++)
        free(lines[i].text);
    free(lines);
    free(groups);
    free(function_of);
    ospx__texts_free(&names);
    return rc;
}

int ospx_write_folded(const struct ospx_model *model, const char *path, struct ospx_error *err)
{
    return write_folded(model, path, 0, err);
}

int ospx_write_offcpu_folded(const struct ospx_model *model, const char *path,
                             struct ospx_error *err)
{
    return write_folded(model, path, 1, err);
}
