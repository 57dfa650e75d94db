/* run.c — a run is all of its processes. Each profiled process writes a raw file of its own:
 * the program's first one at the path asked for (P.json), every descendant that exec'd with
 * the profiler's environment, or was forked from a profiled process, beside it (P.<pid>.json,
 * P.<pid>-<hex>.json for a process image that exec'd). This file finds those siblings, reads
 * every file and merges them into one struct ospx_raw: images, threads and stacks keep the
 * index of the process they belong to, samples move onto one time axis (the run's earliest
 * start) in one rate (the first process's).
 *
 * Order of the processes: the program the user meant first. When the first file's process
 * replaced itself by exec (a launcher script, `env`), its images of one pid come newest first
 * (the last image is the program; the earlier ones are marked `execd`); then the other files
 * named, in their order; then the other siblings by start time. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ospc.h"
#include "ospx_internal.h"

void ospx_paths_free(char **paths, size_t count)
{
    for (size_t i = 0; paths != NULL && i < count; i++)
        free(paths[i]);
    free(paths);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when `name` is `prefix` then <digits>[-<hex>] then ".json". */
static int is_sibling_name(const char *name, const char *prefix, size_t prefix_length)
{
    if (strncmp(name, prefix, prefix_length) != 0)
        return 0;
    const char *at = name + prefix_length;
    size_t digits = strspn(at, "0123456789");
    if (digits == 0)
        return 0;
    at += digits;
    if (*at == '-') {
        size_t hex = strspn(at + 1, "0123456789abcdef");
        if (hex == 0)
            return 0;
        at += 1 + hex;
    }
    return strcmp(at, ".json") == 0;
}

int ospx_run_siblings(const char *path, char ***paths, size_t *count)
{
    *paths = NULL;
    *count = 0;
    size_t length = strlen(path);
    if (length <= 5 || strcmp(path + length - 5, ".json") != 0)
        return 0;
    char directory[4096], prefix[1024];
    const char *slash = strrchr(path, '/');
    if (slash != NULL)
        snprintf(directory, sizeof directory, "%.*s", (int)(slash - path), path);
    else
        snprintf(directory, sizeof directory, ".");
    if (slash == path)
        snprintf(directory, sizeof directory, "/");
    const char *base = slash != NULL ? slash + 1 : path;
    if (snprintf(prefix, sizeof prefix, "%.*s.", (int)(strlen(base) - 5), base) >=
        (int)sizeof prefix)
        return 0;
    size_t prefix_length = strlen(prefix);
    DIR *listing = opendir(directory);
    if (listing == NULL)
        return 0; /* the named file's own error says why, when it is read */
    size_t capacity = 0;
    int rc = 0;
    for (struct dirent *entry; rc == 0 && (entry = readdir(listing)) != NULL;) {
        if (!is_sibling_name(entry->d_name, prefix, prefix_length))
            continue;
        if (ospx__grow(paths, &capacity, *count, sizeof **paths, 16) != 0) {
            rc = -ENOMEM;
            break;
        }
        size_t size = strlen(directory) + strlen(entry->d_name) + 2;
        char *joined = malloc(size);
        if (joined == NULL) {
            rc = -ENOMEM;
            break;
        }
        if (slash != NULL)
            snprintf(joined, size, "%.*s%s", (int)(base - path), path, entry->d_name);
        else
            snprintf(joined, size, "%s", entry->d_name);
        (*paths)[(*count)++] = joined;
    }
    closedir(listing);
    if (rc != 0) {
        ospx_paths_free(*paths, *count);
        *paths = NULL;
        *count = 0;
        return rc;
    }
    if (*count > 1)
        qsort(*paths, *count, sizeof **paths, compare_names);
    return 0;
}

/* Grow *array (of `count` elements of `size` bytes) by `more`, zeroed; 0 or -ENOMEM. */
static int by_kernel_pc(const void *x, const void *y)
{
    const struct ospx_kernel_symbol *a = x, *b = y;
    return a->pc < b->pc ? -1 : a->pc > b->pc;
}

static int grow(void *array, size_t count, size_t more, size_t size)
{
    void **pointer = array;
    char *grown = realloc(*pointer, (count + more + 1) * size);
    if (grown == NULL)
        return -ENOMEM;
    memset(grown + count * size, 0, (more + 1) * size);
    *pointer = grown;
    return 0;
}

/* In ospx_raw_append: from's rows of `table` after into's, each row's process counted after
 * into's `processes`. */
#define APPEND_SHIFTED(table, count)                                                               \
    do {                                                                                           \
        for (size_t i = 0; i < from->count; i++) {                                                 \
            into->table[into->count] = from->table[i];                                             \
            into->table[into->count++].process += (uint32_t)processes;                             \
        }                                                                                          \
    } while (0)

int ospx_raw_append(struct ospx_raw *into, struct ospx_raw *from, struct ospx_error *err)
{
    size_t processes = into->process_count, images = into->image_count;
    size_t threads = into->thread_count, stacks = into->stack_count;
    if (grow(&into->processes, processes, from->process_count, sizeof *into->processes) != 0 ||
        grow(&into->images, images, from->image_count, sizeof *into->images) != 0 ||
        grow(&into->threads, threads, from->thread_count, sizeof *into->threads) != 0 ||
        grow(&into->stacks, stacks, from->stack_count, sizeof *into->stacks) != 0 ||
        grow(&into->samples, into->sample_count, from->sample_count, sizeof *into->samples) != 0 ||
        grow(&into->escaped, into->escaped_count, from->escaped_count, sizeof *into->escaped) !=
            0 ||
        grow(&into->drops, into->drop_count, from->drop_count, sizeof *into->drops) != 0 ||
        grow(&into->jit, into->jit_count, from->jit_count, sizeof *into->jit) != 0 ||
        grow(&into->jit_notes, into->jit_note_count, from->jit_note_count,
             sizeof *into->jit_notes) != 0 ||
        grow(&into->kernel_symbols, into->kernel_symbol_count, from->kernel_symbol_count,
             sizeof *into->kernel_symbols) != 0)
        return ospx_error_set(err, ENOMEM, ospx__str(from->source_path), 0, 0, "out of memory");

    /* One time axis, from the earliest start. */
    if (from->start_unix_ns < into->start_unix_ns) {
        uint64_t shift = into->start_unix_ns - from->start_unix_ns;
        for (size_t i = 0; i < into->sample_count; i++)
            into->samples[i].t_rel_ns += shift;
        into->start_unix_ns = from->start_unix_ns;
    }
    uint64_t offset = from->start_unix_ns - into->start_unix_ns;
    if (from->end_unix_ns > into->end_unix_ns)
        into->end_unix_ns = from->end_unix_ns;

    for (size_t i = 0; i < from->process_count; i++) {
        struct ospx_process *process = &into->processes[into->process_count++];
        *process = from->processes[i];
        process->first_image += images;
    }
    APPEND_SHIFTED(images, image_count);
    APPEND_SHIFTED(threads, thread_count);
    APPEND_SHIFTED(stacks, stack_count);
    /* A process profiled at another rate (its environment changed OSPREY_PROFILE_HZ): its
     * periods in the run's, at least one a row. */
    double scale = from->rate_hz > 0 && into->rate_hz > 0 && from->rate_hz != into->rate_hz
                       ? (double)into->rate_hz / from->rate_hz
                       : 1.0;
    for (size_t i = 0; i < from->sample_count; i++) {
        struct ospx_sample sample = from->samples[i];
        sample.t_rel_ns += offset;
        sample.thread += (uint32_t)threads;
        sample.stack += (uint32_t)stacks;
        if (scale != 1.0) {
            double weight = round((double)sample.weight * scale);
            sample.weight = weight >= 1 ? (uint64_t)weight : 1;
        }
        into->samples[into->sample_count++] = sample;
    }
    APPEND_SHIFTED(escaped, escaped_count);
    APPEND_SHIFTED(jit, jit_count);
    for (size_t i = 0; i < from->jit_note_count; i++)
        into->jit_notes[into->jit_note_count++] = from->jit_notes[i];
    /* The kernel's names: one kernel, so one table, kept sorted by pc. */
    for (size_t i = 0; i < from->kernel_symbol_count; i++)
        into->kernel_symbols[into->kernel_symbol_count++] = from->kernel_symbols[i];
    if (from->kernel_symbol_count > 0)
        qsort(into->kernel_symbols, into->kernel_symbol_count, sizeof *into->kernel_symbols,
              by_kernel_pc);
    for (size_t i = 0; i < from->drop_count; i++) {
        size_t k = 0;
        while (k < into->drop_count && strcmp(into->drops[k].reason, from->drops[i].reason) != 0)
            k++;
        if (k < into->drop_count) {
            into->drops[k].count += from->drops[i].count;
            free(from->drops[i].reason);
        } else {
            into->drops[into->drop_count++] = from->drops[i];
        }
    }
    into->dropped += from->dropped;
    into->collector_cpu_ms += from->collector_cpu_ms;
    into->events_cpu_ns += from->events_cpu_ns;
    into->process_cpu_ns = into->process_cpu_ns >= 0 && from->process_cpu_ns >= 0
                               ? into->process_cpu_ns + from->process_cpu_ns
                               : -1;
    /* Everything is into's now: free only from's own tables and fields. */
    ospx__raw_free_tables(from);
    return 0;
}

/* One file of the run while it is read. */
struct run_file {
    char *path;
    int named;    /* given by the caller (else a sibling) */
    uid_t owner;  /* a sibling's: the owner of the named file it was found beside */
    size_t order; /* as listed: the named files in their order, then the siblings */
    struct ospx_raw raw;
    int read;
};

/* The order described at the top: the first file's process images newest first, the other
 * named files in their order, the other siblings by start time (then pid). */
static int run_rank(const struct run_file *file, const struct run_file *first)
{
    if (file->raw.pid == first->raw.pid && !file->raw.processes[0].forked)
        return 0;
    return file->named ? 1 : 2;
}

static int compare_files(const void *a, const void *b, void *context)
{
    const struct run_file *x = a, *y = b, *first = context;
    int rx = run_rank(x, first), ry = run_rank(y, first);
    if (rx != ry)
        return rx - ry;
    if (rx == 0 && x->raw.start_unix_ns != y->raw.start_unix_ns)
        return x->raw.start_unix_ns > y->raw.start_unix_ns ? -1 : 1;
    if (rx == 2 && x->raw.start_unix_ns != y->raw.start_unix_ns)
        return x->raw.start_unix_ns < y->raw.start_unix_ns ? -1 : 1;
    if (rx == 2 && x->raw.pid != y->raw.pid)
        return x->raw.pid < y->raw.pid ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* 1 when `path` is the same file as one of files[0..count). */
static int already_listed(const struct run_file *files, size_t count, const char *path)
{
    struct stat info, other;
    if (stat(path, &info) != 0)
        return 0;
    for (size_t i = 0; i < count; i++)
        if (stat(files[i].path, &other) == 0 && other.st_dev == info.st_dev &&
            other.st_ino == info.st_ino)
            return 1;
    return 0;
}

static void warn_left_out(FILE *warnings, const char *what, const char *beside)
{
    char line[2400];
    snprintf(line, sizeof line, "osprey: warning: %s; left out (a raw file beside %s)", what,
             beside);
    ospc_printable(line);
    fprintf(warnings != NULL ? warnings : stderr, "%s\n", line);
}

int ospx_run_read(const char *const *paths, size_t count, int no_siblings, FILE *warnings,
                  struct ospx_raw *out, struct ospx_error *err)
{
    memset(out, 0, sizeof *out);
    if (count == 0)
        return ospx_error_set(err, EINVAL, "", 0, 0, "no raw profile given");
    struct run_file *files = NULL;
    size_t file_count = 0;
    int rc = grow(&files, 0, count, sizeof *files);
    for (size_t i = 0; rc == 0 && i < count; i++) {
        if (already_listed(files, file_count, paths[i]))
            continue;
        files[file_count].path = strdup(paths[i]);
        files[file_count].named = 1;
        files[file_count].order = file_count;
        if (files[file_count++].path == NULL)
            rc = -ENOMEM;
    }
    for (size_t i = 0; rc == 0 && !no_siblings && i < count; i++) {
        char **siblings;
        size_t sibling_count;
        struct stat named;
        if (stat(paths[i], &named) != 0)
            continue; /* its own read says why */
        rc = ospx_run_siblings(paths[i], &siblings, &sibling_count);
        for (size_t k = 0; rc == 0 && k < sibling_count; k++) {
            if (already_listed(files, file_count, siblings[k]))
                continue;
            rc = grow(&files, file_count, 1, sizeof *files);
            if (rc == 0) {
                files[file_count].path = siblings[k];
                files[file_count].owner = named.st_uid;
                files[file_count].order = file_count;
                siblings[k] = NULL;
                file_count++;
            }
        }
        ospx_paths_free(siblings, sibling_count);
    }
    if (rc != 0) {
        for (size_t i = 0; i < file_count; i++)
            free(files[i].path);
        free(files);
        return ospx_error_set(err, ENOMEM, paths[0], 0, 0, "out of memory");
    }
    /* The named files first: their errors are the caller's. */
    for (size_t i = 0; rc == 0 && i < file_count; i++) {
        if (!files[i].named)
            continue;
        rc = ospx_raw_read(files[i].path, &files[i].raw, err);
        files[i].read = rc == 0;
    }
    for (size_t i = 0; rc == 0 && i < file_count; i++) {
        if (files[i].named)
            continue;
        struct ospx_error sibling_err = {0};
        char text[2048];
        /* The directory may be /tmp: a sibling is the run's only when it is a regular file of
         * the named file's owner (or root's), opened without following a link or blocking. */
        int fd = ospc_open_shared(files[i].path, O_RDONLY, 0, files[i].owner);
        if (fd < 0) {
            snprintf(text, sizeof text, "%s %s", files[i].path, ospc_shared_strerror(fd));
            warn_left_out(warnings, text, files[0].path);
        } else if (ospx__raw_read_fd(fd, files[i].path, &files[i].raw, &sibling_err) != 0) {
            ospx_error_format(&sibling_err, text, sizeof text);
            warn_left_out(warnings, text, files[0].path);
        } else if (files[i].raw.start_unix_ns < files[0].raw.start_unix_ns) {
            snprintf(text, sizeof text, "%s is from an earlier run (it started before %s did)",
                     files[i].path, files[0].path);
            warn_left_out(warnings, text, files[0].path);
            ospx_raw_free(&files[i].raw);
        } else {
            files[i].read = 1;
        }
    }
    if (rc != 0) {
        for (size_t i = 0; i < file_count; i++) {
            if (files[i].read)
                ospx_raw_free(&files[i].raw);
            free(files[i].path);
        }
        free(files);
        return rc;
    }
    size_t kept = 0;
    for (size_t i = 0; i < file_count; i++) {
        if (files[i].read)
            files[kept++] = files[i];
        else
            free(files[i].path);
    }
    file_count = kept;
    struct run_file first = files[0];
    qsort_r(files, file_count, sizeof *files, compare_files, &first);
    *out = files[0].raw; /* moved: the others are appended to it */
    for (size_t i = 1; rc == 0 && i < file_count; i++)
        rc = ospx_raw_append(out, &files[i].raw, err);
    /* An image of a pid that a later image of the same pid replaced (it exec'd). */
    for (size_t i = 0; rc == 0 && i < out->process_count; i++)
        for (size_t k = 0; k < out->process_count; k++)
            if (k != i && out->processes[k].pid == out->processes[i].pid &&
                !out->processes[k].forked &&
                out->processes[k].start_unix_ns > out->processes[i].start_unix_ns)
                out->processes[i].execd = 1;
    for (size_t i = 0; i < file_count; i++) {
        if (i > 0) /* appended ones are empty: freeing them is nothing */
            ospx_raw_free(&files[i].raw);
        free(files[i].path);
    }
    if (rc != 0)
        ospx_raw_free(out);
    free(files);
    return rc;
}

void ospx_run_merge_processes(struct ospx_raw *raw)
{
    for (uint32_t p = 0; p < raw->process_count; p++) {
        struct ospx_process *process = &raw->processes[p];
        uint32_t first = 0;
        while (first < p && strcmp(ospx__process_comm(raw, first), ospx__process_comm(raw, p)) != 0)
            first++;
        process->merged_into = first;
        process->merged_count = 0;
        struct ospx_process *into = &raw->processes[first];
        into->merged_count++;
        if (first == p)
            continue;
        into->process_cpu_ns = into->process_cpu_ns >= 0 && process->process_cpu_ns >= 0
                                   ? into->process_cpu_ns + process->process_cpu_ns
                                   : -1;
        into->dropped += process->dropped;
        into->start_unix_ns = process->start_unix_ns < into->start_unix_ns ? process->start_unix_ns
                                                                           : into->start_unix_ns;
        into->end_unix_ns =
            process->end_unix_ns > into->end_unix_ns ? process->end_unix_ns : into->end_unix_ns;
    }
    for (size_t t = 0; t < raw->thread_count; t++)
        if (raw->threads[t].process < raw->process_count)
            raw->threads[t].process = raw->processes[raw->threads[t].process].merged_into;
    raw->merged_processes = raw->process_count > 0;
}
