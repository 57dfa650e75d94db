/* raw-write.c — writes a collector as a version 1 raw profile (proto/raw-format.md).
 *
 * The small parts (identity fields, images, threads, the exit object) are built with jansson's
 * reference-stealing `_new` calls and dumped one value at a time; the big `stacks` and
 * `samples` arrays are streamed with fprintf straight from the collector's compact arrays (the
 * samples spilled to disk are rows of text already, copied in by the kernel, spill.c), so
 * writing costs no memory proportional to the profile beyond what the collector already holds.
 * The file appears atomically (common/'s ospc_atomic: a temp file beside the target path,
 * fsync, rename, fsync of the directory); on any failure the temp file is removed and nothing
 * is left half-written. Each image's identity (its GNU build id, the file offset of its code)
 * is read from its file now, while the run's objects are still on disk, and recorded only
 * when the file's code address agrees with where the image was mapped.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ospc.h"
#include "ospd.h"

/* A uint64 as a JSON integer; the values written are below 2^63 (addresses, nanoseconds),
 * anything larger is clamped rather than wrapped negative. */
static json_t *json_u64(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* Write `separator` then `"key":value` (or just the value when key is NULL), value stolen.
 * Returns 0 or -ENOMEM. */
static int put_json(FILE *f, const char *separator, const char *key, json_t *value)
{
    if (value == NULL)
        return -ENOMEM;
    char *text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(value);
    if (text == NULL)
        return -ENOMEM;
    if (key != NULL)
        fprintf(f, "%s\"%s\":%s", separator, key, text);
    else
        fprintf(f, "%s%s", separator, text);
    free(text);
    return 0;
}

/* Write one field of the top-level object. */
static int put_field(FILE *f, bool first, const char *key, json_t *value)
{
    return put_json(f, first ? "" : ",\n", key, value);
}

static int by_pc(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* `kernel_symbols`: [pc, name] for each distinct kernel pc of the stacks that
 * /proc/kallsyms names (pc as the stacks write it), or NULL when there is none. */
static json_t *kernel_symbols(const struct ospd_collector *c)
{
    uint64_t *pcs = NULL, count = 0, cap = 0;
    for (uint32_t i = 0; i < c->stacks.count; i++) {
        uint32_t depth;
        const uint64_t *stack = ospd_stack_pcs(&c->stacks, i, &depth);
        for (uint32_t k = 0; k < depth && stack[k] >= OSPD_KERNEL_PC; k++) {
            if (ospd_grow((void **)&pcs, &cap, count + 1, sizeof *pcs) != 0)
                break;
            pcs[count++] = stack[k];
        }
    }
    if (count == 0 || count > UINT32_MAX) {
        free(pcs);
        return NULL;
    }
    qsort(pcs, count, sizeof *pcs, by_pc);
    uint64_t distinct = 0;
    for (uint64_t i = 0; i < count; i++)
        if (distinct == 0 || pcs[distinct - 1] != pcs[i])
            pcs[distinct++] = pcs[i];
    char **names = calloc(distinct, sizeof *names);
    json_t *out = names != NULL ? json_array() : NULL;
    if (out != NULL && ospc_kallsyms_name("/proc/kallsyms", pcs, (uint32_t)distinct, names) == 0)
        for (uint64_t i = 0; i < distinct; i++)
            if (names[i] != NULL)
                json_array_append_new(out,
                                      json_pack("[I, s]", (json_int_t)(int64_t)pcs[i], names[i]));
    for (uint64_t i = 0; names != NULL && i < distinct; i++)
        free(names[i]);
    free(names);
    free(pcs);
    if (out != NULL && json_array_size(out) == 0) {
        json_decref(out);
        out = NULL;
    }
    return out;
}

/* Write one element of a streamed array. */
static int put_element(FILE *f, bool first, json_t *value)
{
    return put_json(f, first ? "\n" : ",\n", NULL, value);
}

/* Write v in decimal at p; returns the end (at most 20 digits, no NUL). */
static char *format_u64(char *p, uint64_t v)
{
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        *p++ = digits[--n];
    return p;
}

static const char *exe_path(const struct ospd_collector *c)
{
    for (uint32_t i = 0; i < c->image_count; i++)
        if (c->images[i].main)
            return c->images[i].path;
    return c->exe_fallback ? c->exe_fallback : "";
}

static json_t *exit_status_object(const struct ospd_collector *c);

/* The exit object, and when sampling ended before the program did, and why (a seccomp
 * sandbox: proto/raw-format.md, "exit"). */
static json_t *exit_object(const struct ospd_collector *c)
{
    json_t *o = exit_status_object(c);
    if (o != NULL && c->sandboxed_rel_ns != 0)
        json_object_set_new(
            o, "sampling_ended",
            json_pack("{s:o, s:s}", "at_ns", json_u64(c->sandboxed_rel_ns), "reason", "seccomp"));
    return o;
}

static json_t *exit_status_object(const struct ospd_collector *c)
{
    switch (c->exit_status) {
    case OSPD_EXIT_EXITED:
        return json_pack("{s:s}", "status", "exited");
    case OSPD_EXIT_KILLED:
        return json_pack("{s:s, s:i}", "status", "killed", "signal", c->exit_signal);
    case OSPD_EXIT_RING_REJECTED:
        return json_pack("{s:s, s:s}", "status", "ring-rejected", "error", c->error);
    case OSPD_EXIT_STOPPED:
        return json_pack("{s:s}", "status", "stopped");
    case OSPD_EXIT_LEFT_SESSION:
        return json_pack("{s:s}", "status", "left-session");
    case OSPD_EXIT_VANISHED:
    case OSPD_EXIT_UNKNOWN:
        break;
    }
    if (c->exit_code >= 0)
        return json_pack("{s:s, s:i}", "status", "vanished", "code", c->exit_code);
    return json_pack("{s:s}", "status", "vanished");
}

size_t ospd_sample_row(char *row, const struct ospd_sample *s, bool first)
{
    char *p = row;
    if (!first)
        *p++ = ',';
    *p++ = '\n';
    *p++ = '[';
    p = format_u64(p, s->t_rel_ns);
    *p++ = ',';
    p = format_u64(p, s->thread);
    *p++ = ',';
    p = format_u64(p, s->stack_state >> 1);
    *p++ = ',';
    *p++ = (char)('0' + (s->stack_state & 1));
    if (s->weight > 1) { /* raw v1's optional fifth column; absent means 1 */
        *p++ = ',';
        p = format_u64(p, s->weight);
    }
    *p++ = ']';
    return (size_t)(p - row);
}

/* The samples in the order they came: those spilled to disk (already rows of text, copied),
 * then those in memory. 0 or a negative errno. */
static int write_samples(FILE *f, const struct ospd_collector *c)
{
    if (c->spilled > 0) {
        int rc = ospd_spill_copy(c, f);
        if (rc != 0)
            return rc;
    }
    char row[OSPD_SAMPLE_ROW_MAX];
    for (uint64_t i = 0; i < c->sample_count; i++)
        fwrite(row, 1, ospd_sample_row(row, &c->samples[i], c->spilled + i == 0), f);
    return 0;
}

/* The "waits" object of a profile whose waits the shim timed because perf_event_open was
 * refused: {"timed_by":"shim","refused":"EACCES","refused_by":"seccomp",
 * "perf_event_paranoid":2} (the setting left out when it could not be read). */
static json_t *waits_refused(const struct ospd_waits *w)
{
    static const struct {
        int err;
        const char *name;
    } names[] = {{EACCES, "EACCES"}, {EPERM, "EPERM"},   {ENOSYS, "ENOSYS"}, {ENOENT, "ENOENT"},
                 {ENODEV, "ENODEV"}, {ENOMEM, "ENOMEM"}, {EINVAL, "EINVAL"}, {EMFILE, "EMFILE"}};
    char other[16];
    const char *name = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && name == NULL; i++)
        if (names[i].err == w->refused_errno)
            name = names[i].name;
    if (name == NULL) {
        snprintf(other, sizeof other, "%d", (int)w->refused_errno);
        name = other;
    }
    json_t *o = json_pack("{s:s, s:s, s:s}", "timed_by", "shim", "refused", name, "refused_by",
                          w->refused_by != NULL ? w->refused_by : "kernel");
    if (o != NULL && w->refused_paranoid != INT32_MIN)
        json_object_set_new(o, "perf_event_paranoid", json_integer(w->refused_paranoid));
    return o;
}

/* Stream the whole profile to f. Returns 0 or a negative errno (-ENOMEM, or a spilled
 * sample that could not be read back; I/O errors show in ferror(f)). */
static int write_profile(FILE *f, const struct ospd_collector *c)
{
    int rc = 0;
    fputc('{', f);
    rc = rc ? rc : put_field(f, true, "version", json_integer(1));
    rc = rc ? rc : put_field(f, false, "pid", json_integer(c->pid));
    rc = rc ? rc : put_field(f, false, "exe", json_string(exe_path(c)));
    if (c->comm != NULL)
        rc = rc ? rc : put_field(f, false, "comm", json_string(c->comm));
    if (c->parent_pid > 0)
        rc = rc ? rc : put_field(f, false, "parent_pid", json_integer(c->parent_pid));
    if (c->forked)
        rc = rc ? rc : put_field(f, false, "forked", json_true());
    rc = rc ? rc : put_field(f, false, "rate_hz", json_integer(c->rate_hz));
    rc = rc ? rc : put_field(f, false, "platform", json_string(c->platform));
    rc = rc ? rc : put_field(f, false, "start_unix_ns", json_u64(c->start_unix_ns));
    /* A wall clock stepped back during the run must not make the end precede the start. */
    uint64_t end = c->end_unix_ns < c->start_unix_ns ? c->start_unix_ns : c->end_unix_ns;
    rc = rc ? rc : put_field(f, false, "end_unix_ns", json_u64(end));
    if (rc != 0)
        return rc;

    fputs(",\n\"images\":[", f);
    for (uint32_t i = 0; i < c->image_count && rc == 0; i++) {
        const struct ospd_image *im = &c->images[i];
        json_t *o = json_object();
        if (o == NULL)
            return -ENOMEM;
        json_object_set_new(o, "path", json_string(im->path));
        json_object_set_new(o, "base", json_u64(im->base));
        /* The load bias may be negative (an image loaded below its link address). */
        json_object_set_new(o, "slide", json_integer((json_int_t)im->slide));
        json_object_set_new(o, "text", json_u64(im->text));
        json_object_set_new(o, "text_size", json_u64(im->text_size));
        json_object_set_new(o, "arch", json_string(im->arch));
        size_t fields = 6;
        if (im->loaded_ns != 0) {
            json_object_set_new(o, "loaded_ns", json_u64(im->loaded_ns));
            fields++;
        }
        if (im->unloaded_ns != 0) {
            json_object_set_new(o, "unloaded_ns", json_u64(im->unloaded_ns));
            fields++;
        }
        struct ospc_elf_identity identity;
        /* "[vdso]" and the like name no file. A file whose code is not where this image's
         * was (replaced during the run) is not described as this image. Read through the
         * process's root while it lives (an attached process in another mount namespace). */
        char rooted[OSP_MAX_PATH + 64];
        const char *file = ospc_path_in_root(c->proc_pid, im->path, rooted, sizeof rooted) == 0 &&
                                   access(rooted, F_OK) == 0
                               ? rooted
                               : im->path;
        if (im->path[0] != '[' && im->text_size > 0 &&
            ospc_elf_identity(file, &identity, NULL, 0) == 0 && identity.has_text &&
            identity.text_vaddr + im->slide == im->text) {
            json_object_set_new(o, "text_offset", json_u64(identity.text_offset));
            fields++;
            if (identity.build_id[0] != '\0') {
                json_object_set_new(o, "build_id", json_string(identity.build_id));
                fields++;
            }
        }
        if (json_object_size(o) != fields) {
            json_decref(o);
            return -ENOMEM;
        }
        rc = put_element(f, i == 0, o);
    }
    fputs("],\n\"threads\":[", f);
    for (uint32_t i = 0; i < c->thread_count && rc == 0; i++) {
        const struct ospd_thread *t = &c->threads[i];
        json_t *o = json_pack("{s:I, s:s, s:i}", "fiber", (json_int_t)t->fiber, "label", t->label,
                              "tid", t->tid);
        /* Timed from the kernel's switches: the thread's time off a CPU, blocked and runnable. */
        if (o != NULL && c->waits.since_ns != 0 && i < c->waits.cap && !t->declared) {
            json_object_set_new(o, "waited_ns", json_u64(c->waits.by_thread[i].waited_ns));
            json_object_set_new(o, "preempted_ns", json_u64(c->waits.by_thread[i].preempted_ns));
        }
        rc = put_element(f, i == 0, o);
    }
    if (rc != 0)
        return rc;

    /* The big arrays: straight from the compact tables, each row formatted into a small
     * buffer and written at once (printf per number costs more than the rest together). */
    fputs("],\n\"stacks\":[", f);
    char row[OSP_MAX_DEPTH * 21 + 8];
    for (uint32_t i = 0; i < c->stacks.count; i++) {
        uint32_t depth;
        const uint64_t *pcs = ospd_stack_pcs(&c->stacks, i, &depth);
        char *p = row;
        *p++ = i == 0 ? '\n' : ',';
        if (i != 0)
            *p++ = '\n';
        *p++ = '[';
        for (uint32_t k = 0; k < depth; k++) {
            if (k != 0)
                *p++ = ',';
            if (pcs[k] >= OSPD_KERNEL_PC) /* the negative number of the same 64 bits */
                *p++ = '-';
            p = format_u64(p, pcs[k] >= OSPD_KERNEL_PC ? 0 - pcs[k] : pcs[k]);
        }
        *p++ = ']';
        fwrite(row, 1, (size_t)(p - row), f);
    }
    fputs("]", f);
    /* Why each stack's walk ended, when a walker said so for any (proto/raw-format.md). */
    uint32_t said = 0;
    for (uint32_t i = 0; i < c->stacks.count && said == 0; i++)
        said = ospd_stack_end(&c->stacks, i);
    if (said != 0) {
        fputs(",\n\"stack_ends\":[", f);
        for (uint32_t i = 0; i < c->stacks.count; i++) {
            char end[4] = {i == 0 ? '\n' : ',', (char)('0' + ospd_stack_end(&c->stacks, i))};
            fwrite(end + (i == 0), 1, 2 - (i == 0), f);
        }
        fputs("]", f);
    }
    fputs(",\n\"samples\":[", f);
    rc = write_samples(f, c);
    fputs("]", f);
    json_t *kernel = kernel_symbols(c);
    if (kernel != NULL)
        rc = rc ? rc : put_field(f, false, "kernel_symbols", kernel);
    rc = rc ? rc : put_field(f, false, "dropped", json_u64(ospd_dropped_total(c)));
    if (ospd_dropped_total(c) > 0) {
        /* Why: the reasons add up to "dropped". */
        uint64_t ring = c->ring_full < c->shim_dropped ? c->ring_full : c->shim_dropped;
        json_t *drops = json_object();
        if (ring > 0)
            json_object_set_new(drops, "ring_full", json_u64(ring));
        if (c->shim_dropped > ring)
            json_object_set_new(drops, "target_other", json_u64(c->shim_dropped - ring));
        if (c->memory_lost > 0)
            json_object_set_new(drops, "collector_memory", json_u64(c->memory_lost));
        if (c->unknown_thread > 0)
            json_object_set_new(drops, "unknown_thread", json_u64(c->unknown_thread));
        if (c->orphan_repeats > 0)
            json_object_set_new(drops, "repeat_without_stack", json_u64(c->orphan_repeats));
        uint64_t other = c->lost - c->memory_lost - c->unknown_thread - c->orphan_repeats;
        if (other > 0)
            json_object_set_new(drops, "invalid_stack", json_u64(other));
        rc = rc ? rc : put_field(f, false, "drops", drops);
    }
    if (c->process_cpu_ns > 0)
        rc = rc ? rc : put_field(f, false, "process_cpu_ns", json_u64(c->process_cpu_ns));
    rc = rc ? rc : put_field(f, false, "exit", exit_object(c));
    if (c->escaped_count > 0) {
        json_t *escaped = json_array();
        for (uint32_t i = 0; escaped != NULL && i < c->escaped_count; i++) {
            const struct ospd_escaped *e = &c->escaped[i];
            const char *reason = e->reason == OSP_ESCAPE_ENVIRONMENT   ? "environment cleared"
                                 : e->reason == OSPD_ESCAPE_OTHER_USER ? "changed its user"
                                                                       : "LD_PRELOAD dropped";
            json_t *one =
                json_pack("{s:i, s:s, s:s}", "pid", e->pid, "exe", e->path, "reason", reason);
            if (one == NULL || json_array_append_new(escaped, one) != 0) {
                json_decref(escaped);
                escaped = NULL;
            }
        }
        rc = rc ? rc : put_field(f, false, "escaped", escaped);
    }
    if (c->jit_count > 0 || c->jit_map_count > 0 || c->jit_note_count > 0) {
        /* The JIT maps read, those refused, and the symbols of theirs a sampled pc fell in
         * (jit-map.c). */
        json_t *jit = json_pack("{s:[], s:[], s:[]}", "maps", "notes", "symbols");
        json_t *maps = json_object_get(jit, "maps"), *symbols = json_object_get(jit, "symbols");
        json_t *notes = json_object_get(jit, "notes");
        for (uint32_t i = 0; jit != NULL && i < c->jit_map_count; i++)
            if (json_array_append_new(maps, json_string(c->jit_maps[i])) != 0)
                rc = rc ? rc : -ENOMEM;
        for (uint32_t i = 0; jit != NULL && i < c->jit_note_count; i++)
            if (json_array_append_new(notes, json_string(c->jit_notes[i])) != 0)
                rc = rc ? rc : -ENOMEM;
        for (uint32_t i = 0; jit != NULL && i < c->jit_count; i++) {
            const struct ospd_jit_symbol *s = &c->jit[i];
            json_t *one = json_pack("{s:o, s:o, s:s}", "start", json_u64(s->start), "size",
                                    json_u64(s->size), "name", s->name);
            if (one == NULL || json_array_append_new(symbols, one) != 0)
                rc = rc ? rc : -ENOMEM;
        }
        if (rc != 0)
            json_decref(jit);
        else
            rc = put_field(f, false, "jit", jit);
    }
    if (c->py_count > 0) {
        /* The Python frames' names (python.c), by pseudo-pc. */
        json_t *py = json_pack("{s:[]}", "symbols");
        json_t *symbols = json_object_get(py, "symbols");
        for (uint32_t i = 0; py != NULL && i < c->py_count; i++) {
            if (c->py[i].name == NULL)
                continue;
            json_t *one = json_pack("{s:o, s:o, s:s}", "start", json_u64(c->py[i].start), "size",
                                    json_u64(c->py[i].size), "name", c->py[i].name);
            if (one == NULL || json_array_append_new(symbols, one) != 0)
                rc = rc ? rc : -ENOMEM;
        }
        if (py == NULL || rc != 0)
            json_decref(py);
        else
            rc = put_field(f, false, "python", py);
    }
    if (c->waits.since_ns != 0)
        rc = rc ? rc
                : put_field(f, false, "waits",
                            json_pack("{s:s, s:o, s:o, s:o, s:o}", "timed_by", "kernel", "blocks",
                                      json_u64(c->waits.blocks), "asked", json_u64(c->waits.asked),
                                      "lost_records", json_u64(c->waits.lost_records),
                                      "unattributed", json_u64(c->waits.unattributed)));
    else if (c->waits.refused_errno > 0) /* the shim timed them: why */
        rc = rc ? rc : put_field(f, false, "waits", waits_refused(&c->waits));
    if (c->peak_rss_kb > 0) {
        json_t *collector =
            json_pack("{s:o, s:o, s:o, s:o, s:{s:o, s:o, s:o, s:o, s:o, s:o, s:o}}", "peak_rss_kb",
                      json_u64(c->peak_rss_kb), "cpu_ms", json_u64(c->cpu_ms), "longest_late_us",
                      json_u64(c->longest_late_us), "longest_read_us", json_u64(c->longest_read_us),
                      "unwind", "images", json_u64(c->unwind_images), "cached",
                      json_u64(c->unwind_cached), "failed", json_u64(c->unwind_failed), "rows",
                      json_u64(c->unwind_rows), "bytes", json_u64(c->unwind_bytes), "longest_ms",
                      json_u64(c->unwind_longest_ms), "ready_ns", json_u64(c->unwind_ready_ns));
        if (collector != NULL && c->events_cpu_ns > 0)
            json_object_set_new(collector, "events_cpu_ns", json_u64(c->events_cpu_ns));
        if (collector != NULL && c->ptrace_rounds > 0)
            json_object_set_new(collector, "ptrace",
                                json_pack("{s:o, s:o, s:o}", "rounds", json_u64(c->ptrace_rounds),
                                          "stops", json_u64(c->ptrace_stops), "stopped_ns",
                                          json_u64(c->ptrace_stopped_ns)));
        if (collector != NULL && c->spilled > 0) /* of the samples, those kept on disk */
            json_object_set_new(collector, "spilled_samples", json_u64(c->spilled));
        if (collector != NULL && c->copies.taken + c->copies.refused > 0) /* copies.c */
            json_object_set_new(
                collector, "stack_copies",
                json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "taken", json_u64(c->copies.taken),
                          "walked", json_u64(c->copies.walked), "kept", json_u64(c->copies.kept),
                          "refused", json_u64(c->copies.refused), "read_on",
                          json_u64(c->copies.read_on), "moved", json_u64(c->copies.moved)));
        if (rc != 0)
            json_decref(collector);
        else
            rc = put_field(f, false, "collector", collector);
    }
    fputs("}\n", f);
    return rc;
}

/* The profile into `file` (opened on path), then committed (pending == NULL) or published,
 * its fsync left to the caller's ospc_atomic_sync(pending). */
static int raw_write(const struct ospd_collector *c, const char *path, struct ospc_atomic *pending,
                     char *err, size_t err_size)
{
    struct ospc_atomic file;
    int rc = ospc_atomic_open(&file, path);
    if (rc != 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(-rc));
        return rc;
    }
    int fd = dup(file.fd);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        rc = -errno;
        if (fd >= 0)
            close(fd);
    } else {
        rc = write_profile(f, c);
        if (rc == 0 && fflush(f) != 0)
            rc = -errno;
        if (rc == 0 && ferror(f))
            rc = -EIO;
        if (fclose(f) != 0 && rc == 0)
            rc = -errno;
    }
    const char *step = NULL;
    if (rc == 0 && pending != NULL) {
        rc = ospc_atomic_publish(&file, &step);
        if (rc == 0)
            *pending = file;
    } else if (rc == 0) {
        rc = ospc_atomic_commit(&file, &step);
    } else {
        ospc_atomic_abort(&file);
    }
    if (rc != 0 && step != NULL && strcmp(step, "rename") == 0)
        snprintf(err, err_size, "%s: cannot rename the temp file into place: %s", path,
                 strerror(-rc));
    else if (rc != 0)
        snprintf(err, err_size, "%s: %s", path, strerror(-rc));
    return rc;
}

int ospd_raw_write(const struct ospd_collector *c, const char *path, char *err, size_t err_size)
{
    return raw_write(c, path, NULL, err, err_size);
}

int ospd_raw_publish(const struct ospd_collector *c, const char *path, struct ospc_atomic *pending,
                     char *err, size_t err_size)
{
    return raw_write(c, path, pending, err, err_size);
}
