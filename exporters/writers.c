/* writers.c — what the writers share beside the model: names (a path's base name, a process's
 * comm and name, a thread's root frame and title), paths made lexical, values rounded as every
 * output rounds them, the frame → function map, the samples in time order (all, or per thread,
 * kept in the model once made) and the rows grouped by (thread, raw stack), on common/'s hash
 * index. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ospc.h"
#include "ospx_internal.h"

double ospx__round1(double value)
{
    return round(value * 10.0) / 10.0;
}

const char *ospx__basename(const char *path)
{
    return ospc_basename(ospx__str(path));
}

/* A command name the kernel took from a path that does not name the program: `exe` (an exec of
 * /proc/self/exe, as a program that runs itself again does, or runc) or a number (fexecve's
 * /dev/fd/N). */
static int comm_names_no_program(const char *comm)
{
    if (strcmp(comm, "exe") == 0)
        return 1;
    size_t digits = strspn(comm, "0123456789");
    return digits > 0 && comm[digits] == '\0';
}

const char *ospx__process_comm(const struct ospx_raw *raw, uint32_t process)
{
    const char *comm = process < raw->process_count ? raw->processes[process].comm : raw->comm;
    const char *base = ospx__basename(ospx__process_exe(raw, process));
    /* An image that exec'd the next: its collector read the name once the process had exec'd,
     * so a name the next image of its pid has too is that image's (a sandbox's launcher,
     * `unshare`, `deny`, read `bc`): its own executable's name instead. */
    if (process < raw->process_count && raw->processes[process].execd && comm[0] != '\0')
        for (size_t next = 0; next < raw->process_count; next++)
            if (next != process && raw->processes[next].pid == raw->processes[process].pid &&
                raw->processes[next].start_unix_ns > raw->processes[process].start_unix_ns &&
                strcmp(raw->processes[next].comm, comm) == 0) {
                comm = base;
                break;
            }
    /* An older raw file, a name that says nothing, or the start of the executable's base name
     * (the kernel keeps 15 bytes: test-shim-target-static is test-shim-targe): that name. */
    if (comm[0] == '\0' || comm_names_no_program(comm) || strncmp(base, comm, strlen(comm)) == 0)
        comm = base;
    return comm[0] != '\0' ? comm : "?";
}

void ospx__process_name(const struct ospx_raw *raw, uint32_t process, char *out, size_t size)
{
    if (raw->merged_processes)
        snprintf(out, size, "%s", ospx__process_comm(raw, process));
    else
        snprintf(out, size, "%s-%lld", ospx__process_comm(raw, process),
                 (long long)ospx__process_pid(raw, process));
}

int ospx__thread_root(const struct ospx_raw *raw, size_t thread, char *out, size_t size)
{
    const struct ospx_thread *t = &raw->threads[thread];
    const char *label = ospx__str(t->label);
    int runtime_fiber = t->fiber != 0 && t->tid != 0 && t->fiber != t->tid;
    /* "main" and "thread" are the shim's words for a thread without a name of its own: such
     * a thread goes by its process's command, as the kernel names it. */
    int own_label = label[0] != '\0' && strcmp(label, "main") != 0 && strcmp(label, "thread") != 0;
    const char *name = own_label || runtime_fiber ? label : ospx__process_comm(raw, t->process);
    /* without a tid (an older raw file), the main thread's is its process's pid */
    long long id = runtime_fiber   ? (long long)t->fiber
                   : t->tid != 0   ? (long long)t->tid
                   : t->fiber == 0 ? (long long)ospx__process_pid(raw, t->process)
                                   : (long long)t->fiber;
    snprintf(out, size, "%s-%lld", name, id);
    return !(own_label || runtime_fiber);
}

void ospx__thread_title(const struct ospx_model *model, size_t thread, char *out, size_t size)
{
    const struct ospx_raw *raw = model->raw;
    char root[400], process[400] = "";
    /* named by its command, the label says which thread it is: (main), (thread) */
    int by_command = ospx__thread_root(raw, thread, root, sizeof root);
    if (ospx__several_processes(raw)) {
        ospx__process_name(raw, raw->threads[thread].process, process, sizeof process);
        snprintf(process + strlen(process), sizeof process - strlen(process), ": ");
    }
    snprintf(out, size, "%s%s%s%s%s", process, root, by_command ? " (" : "",
             by_command ? ospx__str(raw->threads[thread].label) : "", by_command ? ")" : "");
}

/* `path` with "." and "dir/.." components removed, lexically (debug info often records
 * "/w/build/../src/x.c"); relative paths and ones that climb above the root stay as they are. */
void ospx__normalize_path(char *out, size_t size, const char *path)
{
    snprintf(out, size, "%s", path);
    if (path[0] != '/')
        return;
    size_t length = 0; /* of the normalized prefix in out, without a trailing slash */
    const char *component = path;
    while (*component != '\0') {
        while (*component == '/')
            component++;
        size_t n = strcspn(component, "/");
        if (n == 0)
            break;
        if (n == 1 && component[0] == '.') {
            /* skip */
        } else if (n == 2 && component[0] == '.' && component[1] == '.') {
            if (length == 0) {
                snprintf(out, size, "%s", path);
                return;
            }
            while (length > 0 && out[length] != '/')
                length--;
        } else if (length + 1 + n < size) {
            out[length++] = '/';
            memcpy(out + length, component, n);
            length += n;
        }
        out[length] = '\0';
        component += n;
    }
    if (length == 0)
        snprintf(out, size, "/");
}

static int compare_function_refs(const void *a, const void *b, void *context)
{
    const struct ospx_function_stat *functions = context;
    const struct ospx_function_stat *x = &functions[*(const uint32_t *)a];
    const struct ospx_function_stat *y = &functions[*(const uint32_t *)b];
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : strcmp(x->file, y->file);
}

uint32_t *ospx__functions_sorted(const struct ospx_model *model,
                                 int (*compare)(const void *, const void *, void *))
{
    uint32_t *order = malloc((model->function_count + 1) * sizeof *order);
    if (order == NULL)
        return NULL;
    for (uint32_t i = 0; i < model->function_count; i++)
        order[i] = i;
    qsort_r(order, model->function_count, sizeof *order, compare, model->functions);
    return order;
}

static uint32_t *frame_functions_made(const struct ospx_model *model);

uint32_t *ospx__frame_functions(const struct ospx_model *model)
{
    if (model->frame_function == NULL)
        return frame_functions_made(model);
    size_t size = model->symbols->frame_count * sizeof *model->frame_function;
    uint32_t *copy = malloc(size + sizeof *copy);
    return copy != NULL ? memcpy(copy, model->frame_function, size) : NULL;
}

int ospx__model_frame_functions(const struct ospx_model *model)
{
    struct ospx_model *cache = (struct ospx_model *)model; /* a cache, not a change */
    if (cache->frame_function == NULL)
        cache->frame_function = frame_functions_made(model);
    return cache->frame_function != NULL ? 0 : -ENOMEM;
}

static uint32_t *frame_functions_made(const struct ospx_model *model)
{
    const struct ospx_symbols *symbols = model->symbols;
    uint32_t *map = malloc((symbols->frame_count + 1) * sizeof *map);
    uint32_t *by_name = ospx__functions_sorted(model, compare_function_refs);
    if (map == NULL || by_name == NULL) {
        free(map);
        free(by_name);
        return NULL;
    }
    for (size_t f = 0; f < symbols->frame_count; f++) {
        const struct ospx_frame *frame = &symbols->frames[f];
        map[f] = OSPX_NO_FUNCTION;
        size_t lo = 0, hi = model->function_count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            const struct ospx_function_stat *fn = &model->functions[by_name[mid]];
            int c = strcmp(ospx__str(frame->name), fn->name);
            if (c == 0)
                c = strcmp(ospx__str(frame->file), fn->file);
            if (c == 0) {
                map[f] = by_name[mid];
                break;
            }
            if (c < 0)
                hi = mid;
            else
                lo = mid + 1;
        }
    }
    free(by_name);
    return map;
}

static int compare_sample_times(const void *a, const void *b, void *context)
{
    const struct ospx_sample *samples = context;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (samples[x].t_rel_ns != samples[y].t_rel_ns)
        return samples[x].t_rel_ns < samples[y].t_rel_ns ? -1 : 1;
    return (x > y) - (x < y);
}

int ospx__samples_by_thread(const struct ospx_raw *raw, size_t **order, size_t **first)
{
    *order = malloc((raw->sample_count + 1) * sizeof **order);
    *first = calloc(raw->thread_count + 2, sizeof **first);
    if (*order == NULL || *first == NULL) {
        free(*order);
        free(*first);
        *order = *first = NULL;
        return -ENOMEM;
    }
    /* A counting sort by thread keeps the file order within each thread, which is the time
     * order the collector writes; a thread whose rows are not in time order (ties keep file
     * order) is then sorted on its own. */
    for (size_t i = 0; i < raw->sample_count; i++)
        (*first)[raw->samples[i].thread + 2]++;
    for (size_t t = 2; t < raw->thread_count + 2; t++)
        (*first)[t] += (*first)[t - 1];
    for (size_t i = 0; i < raw->sample_count; i++)
        (*order)[(*first)[raw->samples[i].thread + 1]++] = i;
    for (size_t t = 0; t < raw->thread_count; t++) {
        size_t *slice = *order + (*first)[t], count = (*first)[t + 1] - (*first)[t];
        for (size_t i = 1; i < count; i++) {
            if (raw->samples[slice[i]].t_rel_ns < raw->samples[slice[i - 1]].t_rel_ns) {
                qsort_r(slice, count, sizeof *slice, compare_sample_times, raw->samples);
                break;
            }
        }
    }
    return 0;
}

int ospx__model_thread_order(const struct ospx_model *model, const size_t **order,
                             const size_t **first)
{
    struct ospx_model *cache = (struct ospx_model *)model; /* a cache, not a change */
    if (cache->thread_order == NULL &&
        ospx__samples_by_thread(model->raw, &cache->thread_order, &cache->thread_first) != 0)
        return -ENOMEM;
    *order = cache->thread_order;
    *first = cache->thread_first;
    return 0;
}

static uint64_t group_key_hash(uint32_t thread, uint32_t stack)
{
    return ((uint64_t)thread << 32 | stack) * UINT64_C(0x9e3779b97f4a7c15) >> 20;
}

static uint64_t group_hash_of(uint32_t entry, void *context)
{
    const struct ospx__group *group = &((const struct ospx__group *)context)[entry];
    return group_key_hash(group->thread, group->stack);
}

int ospx__group_samples(const struct ospx_raw *raw, uint8_t state, struct ospx__group **groups,
                        size_t *count)
{
    /* common/'s hash index on (thread, stack): a profile has millions of rows over a few
     * thousand distinct stacks, so grouping costs one probe a row, not a sort. */
    struct ospc_index index = {0};
    size_t capacity = 256, n = 0;
    struct ospx__group *out = malloc(capacity * sizeof *out);
    int rc = out != NULL && ospc_index_init(&index, raw->stack_count + raw->thread_count) == 0
                 ? 0
                 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < raw->sample_count; i++) {
        const struct ospx_sample *sample = &raw->samples[i];
        if (sample->state != state)
            continue;
        size_t slot = ospc_index_start(&index, group_key_hash(sample->thread, sample->stack));
        uint32_t entry;
        while ((entry = ospc_index_entry(&index, slot)) != UINT32_MAX &&
               (out[entry].thread != sample->thread || out[entry].stack != sample->stack))
            slot = ospc_index_next(&index, slot);
        if (entry != UINT32_MAX) {
            out[entry].periods += sample->weight;
            continue;
        }
        if (ospx__grow(&out, &capacity, n, sizeof *out, 256) != 0) {
            rc = -ENOMEM;
            break;
        }
        out[n] = (struct ospx__group){sample->thread, sample->stack, sample->weight};
        rc = ospc_index_insert(&index, slot, (uint32_t)n++, group_hash_of, out);
    }
    ospc_index_free(&index);
    if (rc != 0) {
        free(out);
        out = NULL;
        n = 0;
    }
    *groups = out;
    *count = n;
    return rc;
}

void ospx__texts_free(struct ospx__texts *texts)
{
    for (size_t i = 0; texts->text != NULL && i < texts->count; i++)
        free(texts->text[i]);
    free(texts->text);
    free(texts->length);
    texts->text = NULL;
    texts->length = NULL;
    texts->count = 0;
}
