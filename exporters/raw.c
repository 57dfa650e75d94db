/* raw.c — the raw profile reader: one JSON file written by ospreyd (version 1, see
 * proto/raw-format.md) into a struct ospx_raw that the later stages trust.
 *
 * It owns every check on the file: a syntax error is reported with jansson's line and column,
 * a semantic error (a missing field, a wrong type, an index out of range, a negative time)
 * with the JSON path of the offending value, e.g. "samples[12][1]: thread index 7 out of
 * range (3 threads)". After ospx_raw_read() returns 0, every sample's thread and stack index
 * is in range, every stack has at least one pc and end_unix_ns >= start_unix_ns, so nothing
 * downstream checks again. Unknown fields are ignored, so writers may add fields.
 *
 * The file's text and its fast path for the plain sample rows and stacks are raw-scan.c's;
 * the stacks and the sample rows are read by raw-samples.c, each member checked through
 * raw_reader.h; folding a renamed thread's entries into one is raw-threads.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "osp_unwind_step.h"
#include "ospc.h"
#include "ospx.h"
#include "ospx_internal.h"
#include "raw_reader.h"

static int raw_read_image(struct raw_reader *reader, const json_t *entry, const char *path,
                          size_t i, struct ospx_raw *out)
{
    struct ospx_image *image = &out->images[i];
    json_int_t base = 0, slide = 0, text = 0, text_size = 0;
    int rc = raw_string(reader, entry, path, "path", 1, &image->path);
    if (rc == 0)
        rc = raw_integer(reader, entry, path, "base", 0, INT64_MAX, &base);
    /* The slide is an offset, not an address: a negative one is legal, and unsigned
     * arithmetic (pc - slide) gives the right file address either way. */
    if (rc == 0)
        rc = raw_integer(reader, entry, path, "slide", INT64_MIN, INT64_MAX, &slide);
    if (rc == 0)
        rc = raw_integer(reader, entry, path, "text", 0, INT64_MAX, &text);
    if (rc == 0)
        rc = raw_integer(reader, entry, path, "text_size", 0, INT64_MAX, &text_size);
    if (rc == 0)
        rc = raw_string(reader, entry, path, "arch", 0, &image->arch);
    if (rc == 0)
        rc = raw_string(reader, entry, path, "build_id", 0, &image->build_id);
    json_int_t text_offset = -1;
    if (rc == 0)
        rc = raw_optional_integer(reader, entry, path, "text_offset", &text_offset);
    if (rc < 0)
        return rc;
    json_int_t loaded_ns = 0, unloaded_ns = 0;
    if (rc == 0)
        rc = raw_optional_integer(reader, entry, path, "loaded_ns", &loaded_ns);
    if (rc == 0)
        rc = raw_optional_integer(reader, entry, path, "unloaded_ns", &unloaded_ns);
    if (rc < 0)
        return rc;
    image->loaded_ns = (uint64_t)loaded_ns;
    image->unloaded_ns = (uint64_t)unloaded_ns;
    image->has_text_offset = text_offset >= 0;
    image->text_offset = text_offset >= 0 ? (uint64_t)text_offset : 0;
    /* A build id is hex digits: anything else (a hand-edited file) is no build id. */
    for (char *c = image->build_id; *c != '\0'; c++) {
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))) {
            image->build_id[0] = '\0';
            break;
        }
    }
    if ((uint64_t)text + (uint64_t)text_size > (uint64_t)INT64_MAX)
        return raw_fail(reader, path, "text range 0x%" PRIx64 " + %" PRIu64 " overflows",
                        (uint64_t)text, (uint64_t)text_size);
    image->base = (uint64_t)base;
    image->slide = (uint64_t)slide;
    image->text = (uint64_t)text;
    image->text_size = (uint64_t)text_size;
    return 0;
}

static int raw_read_thread(struct raw_reader *reader, const json_t *entry, const char *path,
                           size_t i, struct ospx_raw *out)
{
    struct ospx_thread *thread = &out->threads[i];
    json_int_t fiber = 0, tid = 0, cpu_ns = -1, preempted_ns = -1;
    int rc = raw_integer(reader, entry, path, "fiber", INT64_MIN, INT64_MAX, &fiber);
    if (rc == 0)
        rc = raw_string(reader, entry, path, "label", 1, &thread->label);
    /* tid is optional and not kept, but a present one must still be a thread id. */
    if (rc == 0)
        rc = raw_optional_integer(reader, entry, path, "tid", &tid);
    if (rc == 0)
        rc = raw_optional_integer(reader, entry, path, "cpu_ns", &cpu_ns);
    if (rc == 0)
        rc = raw_optional_integer(reader, entry, path, "preempted_ns", &preempted_ns);
    if (rc < 0)
        return rc;
    thread->fiber = fiber;
    thread->cpu_ns = cpu_ns;
    thread->preempted_ns = preempted_ns;
    thread->tid = tid;
    return 0;
}

/* The optional "exit" object: {"status":"exited"} | {"status":"killed","signal":N} |
 * {"status":"vanished"} | {"status":"ring-rejected"} | {"status":"stopped"} (the profile's
 * duration ended, complete for its window) | {"status":"left-session"} (a forked child became
 * a daemon: profiled until then); a bare {"signal":N} also means killed. Any of them may say
 * when and why sampling ended before the program did: "sampling_ended":{"at_ns":N,
 * "reason":"seccomp"}.
 * A status this reader does not know is kept as "known, not normal": writers may add some. */
static int raw_read_exit(struct raw_reader *reader, const json_t *exit_object, struct ospx_raw *out)
{
    json_t *status = NULL, *signal_value = NULL;
    int rc = raw_member(reader, exit_object, "exit", "status", JSON_STRING, 0, &status);
    if (rc == 0)
        rc = raw_member(reader, exit_object, "exit", "signal", JSON_INTEGER, 0, &signal_value);
    if (rc < 0)
        return rc;
    out->exit.known = 1;
    if (signal_value != NULL) {
        json_int_t signal_number = 0;
        rc = raw_integer_value(reader, signal_value, "exit.signal", 1, 1024, &signal_number);
        if (rc < 0)
            return rc;
        out->exit.signal = (int)signal_number;
    }
    json_t *ended, *at = NULL, *reason = NULL;
    rc = raw_member(reader, exit_object, "exit", "sampling_ended", JSON_OBJECT, 0, &ended);
    if (rc == 0 && ended != NULL)
        rc = raw_member(reader, ended, "exit.sampling_ended", "at_ns", JSON_INTEGER, 1, &at);
    if (rc == 0 && ended != NULL)
        rc = raw_member(reader, ended, "exit.sampling_ended", "reason", JSON_STRING, 1, &reason);
    if (rc < 0)
        return rc;
    if (ended != NULL) {
        json_int_t at_ns = 0;
        rc = raw_integer_value(reader, at, "exit.sampling_ended.at_ns", 0, INT64_MAX, &at_ns);
        if (rc < 0)
            return rc;
        out->exit.sampling_ended_ns = at_ns > 0 ? (uint64_t)at_ns : 1;
        snprintf(out->exit.sampling_ended_reason, sizeof out->exit.sampling_ended_reason, "%s",
                 json_string_value(reason));
    }
    out->exit.left_session =
        status != NULL && strcmp(json_string_value(status), "left-session") == 0;
    if (status != NULL && (strcmp(json_string_value(status), "exited") == 0 ||
                           strcmp(json_string_value(status), "stopped") == 0)) {
        out->exit.normal = 1;
        out->exit.signal = 0;
    } else if (status != NULL && strcmp(json_string_value(status), "killed") == 0 &&
               signal_value == NULL) {
        return raw_fail(reader, "exit", "status \"killed\" without a \"signal\"");
    }
    return 0;
}

/* The optional "drops" object: {"<reason>": count, ...}, why samples were lost. */
static int raw_read_drops(struct raw_reader *reader, const json_t *drops, struct ospx_raw *out)
{
    size_t count = json_object_size(drops);
    out->drops = raw_table(reader, count, sizeof *out->drops);
    if (out->drops == NULL)
        return -ENOMEM;
    const char *reason;
    json_t *value;
    json_object_foreach((json_t *)drops, reason, value)
    {
        char path[160];
        snprintf(path, sizeof path, "drops.%.100s", reason);
        json_int_t number = 0;
        int rc = raw_integer_value(reader, value, path, 0, INT64_MAX, &number);
        if (rc < 0)
            return rc;
        struct ospx_drop *drop = &out->drops[out->drop_count];
        drop->reason = strdup(reason);
        if (drop->reason == NULL)
            return raw_out_of_memory(reader);
        drop->count = (uint64_t)number;
        out->drop_count++;
    }
    return 0;
}

/* An entry of the optional "escaped" array: [{"pid": N, "exe": "...", "reason": "..."}],
 * processes this one started that ran unprofiled. */
static int raw_read_escaped(struct raw_reader *reader, const json_t *entry, const char *path,
                            size_t i, struct ospx_raw *out)
{
    struct ospx_escaped *process = &out->escaped[i];
    json_int_t pid = 0;
    int rc = raw_integer(reader, entry, path, "pid", 0, INT64_MAX, &pid);
    if (rc == 0)
        rc = raw_string(reader, entry, path, "exe", 0, &process->exe);
    if (rc == 0)
        rc = raw_string(reader, entry, path, "reason", 0, &process->reason);
    if (rc < 0)
        return rc;
    process->pid = pid;
    return 0;
}

static int compare_jit(const void *a, const void *b)
{
    const struct ospx_jit_symbol *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Symbols [{"start": N, "size": N, "name": "..."}] appended to out->jit (sorted by start);
 * `python`: Python frames, each named at its pseudo-pc and at the pc one byte back. */
static int raw_read_symbols(struct raw_reader *reader, const json_t *symbols, const char *where,
                            bool python, struct ospx_raw *out)
{
    size_t count = json_array_size(symbols), had = out->jit_count;
    struct ospx_jit_symbol *grown = realloc(out->jit, (had + count + 1) * sizeof *grown);
    if (grown == NULL)
        return raw_out_of_memory(reader);
    out->jit = grown;
    memset(&out->jit[had], 0, (count + 1) * sizeof *grown);
    for (size_t i = 0; i < count; i++) {
        char path[64];
        json_t *entry;
        int rc = raw_entry(reader, symbols, where, i, JSON_OBJECT, path, sizeof path, &entry);
        if (rc < 0)
            return rc;
        struct ospx_jit_symbol *symbol = &out->jit[had + i];
        out->jit_count = had + i + 1;
        json_int_t start = 0, size = 0;
        rc = raw_integer(reader, entry, path, "start", python ? 1 : 0, INT64_MAX, &start);
        if (rc == 0)
            rc = raw_integer(reader, entry, path, "size", 1, INT64_MAX, &size);
        if (rc == 0)
            rc = raw_string(reader, entry, path, "name", 1, &symbol->name);
        if (rc < 0)
            return rc;
        if ((uint64_t)start + (uint64_t)size > (uint64_t)INT64_MAX)
            return raw_fail(reader, path, "range 0x%" PRIx64 " + %" PRIu64 " overflows",
                            (uint64_t)start, (uint64_t)size);
        symbol->start = (uint64_t)start - (python ? 1 : 0);
        symbol->size = (uint64_t)size + (python ? 1 : 0);
        symbol->python = python;
    }
    qsort(out->jit, out->jit_count, sizeof *out->jit, compare_jit);
    return 0;
}

/* The optional "jit" object: {"maps": [path, ...], "notes": [text, ...], "symbols": [{"start":
 * N, "size": N, "name": "..."}]}, the JIT symbols the collector kept (sorted by start here) and
 * what it could not read. */
static int raw_read_jit(struct raw_reader *reader, const json_t *jit, struct ospx_raw *out)
{
    json_t *symbols = NULL, *notes = NULL;
    int rc = raw_member(reader, jit, "jit", "notes", JSON_ARRAY, 0, &notes);
    size_t note_count = json_array_size(notes);
    if (rc == 0 && note_count > 0) {
        out->jit_notes = raw_table(reader, note_count, sizeof *out->jit_notes);
        if (out->jit_notes == NULL)
            return -ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < note_count; i++) {
        json_t *note = json_array_get(notes, i);
        if (!json_is_string(note))
            return raw_fail(reader, "jit.notes", "expected strings, found %s",
                            json_type_name(note));
        out->jit_notes[i] = strdup(json_string_value(note));
        if (out->jit_notes[i] == NULL)
            return raw_out_of_memory(reader);
        out->jit_note_count = i + 1;
    }
    if (rc == 0)
        rc = raw_member(reader, jit, "jit", "symbols", JSON_ARRAY, 0, &symbols);
    if (rc < 0 || symbols == NULL)
        return rc;
    return raw_read_symbols(reader, symbols, "jit.symbols", false, out);
}

/* The optional "python" object: {"symbols": [{"start": pseudo-pc, "size": 1, "name": "..."}]},
 * the Python frames' names (proto/osp_python.h), kept among the JIT symbols, marked [py]. */
static int raw_read_python(struct raw_reader *reader, const json_t *python, struct ospx_raw *out)
{
    json_t *symbols = NULL;
    int rc = raw_member(reader, python, "python", "symbols", JSON_ARRAY, 0, &symbols);
    if (rc < 0 || symbols == NULL)
        return rc;
    return raw_read_symbols(reader, symbols, "python.symbols", true, out);
}

static int by_kernel_pc(const void *x, const void *y)
{
    const struct ospx_kernel_symbol *a = x, *b = y;
    return a->pc < b->pc ? -1 : a->pc > b->pc;
}

/* One [pc, "name"] of "kernel_symbols". */
static int raw_read_kernel_symbol(struct raw_reader *reader, const json_t *entry, const char *path,
                                  size_t i, struct ospx_raw *out)
{
    struct ospx_kernel_symbol *symbol = &out->kernel_symbols[i];
    json_int_t pc = 0;
    const char *name = json_string_value(json_array_get(entry, 1));
    if (json_array_size(entry) != 2 || name == NULL)
        return raw_fail(reader, path, "expected [pc, \"name\"]");
    int rc = raw_integer_value(reader, json_array_get(entry, 0), path, INT64_MIN, -1, &pc);
    if (rc < 0)
        return rc;
    symbol->pc = (uint64_t)pc;
    symbol->name = strdup(name);
    return symbol->name == NULL ? raw_out_of_memory(reader) : 0;
}

/* The optional "kernel_symbols" array: [[pc, "name"], ...], the kernel frames' names, kept
 * sorted by pc. */
static int raw_read_kernel_symbols(struct raw_reader *reader, const json_t *symbols,
                                   struct ospx_raw *out)
{
    int rc = raw_read_rows(reader, symbols, "kernel_symbols", JSON_ARRAY, &out->kernel_symbols,
                           sizeof *out->kernel_symbols, &out->kernel_symbol_count,
                           raw_read_kernel_symbol, out);
    if (rc == 0)
        qsort(out->kernel_symbols, out->kernel_symbol_count, sizeof *out->kernel_symbols,
              by_kernel_pc);
    return rc;
}

/* The optional "waits" object: when its timed_by is "shim", what refused the kernel's records
 * (refused_by, refused, perf_event_paranoid) into process; when "kernel", how many of its
 * records were lost (lost_records). Older files have none. */
static int raw_read_waits(struct raw_reader *reader, const json_t *root,
                          struct ospx_process *process)
{
    process->waits_paranoid = INT64_MIN;
    json_t *waits = NULL, *timed_by = NULL, *by = NULL, *refused = NULL, *paranoid = NULL;
    int rc = raw_member(reader, root, "", "waits", JSON_OBJECT, 0, &waits);
    if (rc < 0)
        return rc;
    rc = waits == NULL ? 0
                       : raw_member(reader, waits, "waits", "timed_by", JSON_STRING, 0, &timed_by);
    if (rc == 0 && timed_by != NULL && strcmp(json_string_value(timed_by), "kernel") == 0) {
        json_t *lost = NULL;
        rc = raw_member(reader, waits, "waits", "lost_records", JSON_INTEGER, 0, &lost);
        if (rc == 0 && lost != NULL && json_integer_value(lost) > 0)
            process->waits_lost = (uint64_t)json_integer_value(lost);
        return rc;
    }
    if (rc < 0 || timed_by == NULL || strcmp(json_string_value(timed_by), "shim") != 0)
        return rc;
    rc = raw_member(reader, waits, "waits", "refused_by", JSON_STRING, 0, &by);
    if (rc == 0)
        rc = raw_member(reader, waits, "waits", "refused", JSON_STRING, 0, &refused);
    if (rc == 0)
        rc = raw_member(reader, waits, "waits", "perf_event_paranoid", JSON_INTEGER, 0, &paranoid);
    if (rc < 0)
        return rc;
    snprintf(process->waits_refused_by, sizeof process->waits_refused_by, "%s",
             by != NULL ? json_string_value(by) : "kernel");
    snprintf(process->waits_refused, sizeof process->waits_refused, "%s",
             refused != NULL ? json_string_value(refused) : "");
    if (paranoid != NULL)
        process->waits_paranoid = json_integer_value(paranoid);
    return 0;
}

/* The file's one process (run.c appends the run's others). */
static int raw_read_process(struct raw_reader *reader, const json_t *root, struct ospx_raw *out)
{
    json_t *forked = json_object_get(root, "forked"), *escaped;
    if (forked != NULL && !json_is_boolean(forked))
        return raw_fail(reader, "forked", "expected a boolean, found %s", json_type_name(forked));
    json_t *collector = NULL, *unwind = NULL;
    json_int_t parent_pid = -1, ready_ns = -1;
    int rc = raw_optional_integer(reader, root, "", "parent_pid", &parent_pid);
    if (rc == 0)
        rc = raw_member(reader, root, "", "collector", JSON_OBJECT, 0, &collector);
    json_int_t collector_cpu_ms = -1;
    if (rc == 0 && collector != NULL)
        rc = raw_member(reader, collector, "collector", "unwind", JSON_OBJECT, 0, &unwind);
    if (rc == 0 && collector != NULL)
        rc = raw_optional_integer(reader, collector, "collector", "cpu_ms", &collector_cpu_ms);
    out->collector_cpu_ms = collector_cpu_ms > 0 ? (uint64_t)collector_cpu_ms : 0;
    json_int_t events_cpu_ns = -1;
    if (rc == 0 && collector != NULL)
        rc = raw_optional_integer(reader, collector, "collector", "events_cpu_ns", &events_cpu_ns);
    /* An attach by ptrace counts the threads' schedstat there: its samples are not perf's. */
    out->events_cpu_ns = events_cpu_ns > 0 && json_object_get(collector, "ptrace") == NULL
                             ? (uint64_t)events_cpu_ns
                             : 0;
    if (rc == 0 && unwind != NULL)
        rc = raw_optional_integer(reader, unwind, "collector.unwind", "ready_ns", &ready_ns);
    json_t *jit = NULL;
    if (rc == 0)
        rc = raw_member(reader, root, "", "jit", JSON_OBJECT, 0, &jit);
    if (rc == 0 && jit != NULL)
        rc = raw_read_jit(reader, jit, out);
    json_t *python = NULL;
    if (rc == 0)
        rc = raw_member(reader, root, "", "python", JSON_OBJECT, 0, &python);
    if (rc == 0 && python != NULL)
        rc = raw_read_python(reader, python, out);
    if (rc == 0)
        rc = raw_member(reader, root, "", "escaped", JSON_ARRAY, 0, &escaped);
    if (rc == 0 && escaped != NULL)
        rc = raw_read_rows(reader, escaped, "escaped", JSON_OBJECT, &out->escaped,
                           sizeof *out->escaped, &out->escaped_count, raw_read_escaped, out);
    json_t *kernel = NULL;
    if (rc == 0)
        rc = raw_member(reader, root, "", "kernel_symbols", JSON_ARRAY, 0, &kernel);
    if (rc == 0 && kernel != NULL)
        rc = raw_read_kernel_symbols(reader, kernel, out);
    if (rc < 0)
        return rc;
    out->processes = raw_table(reader, 1, sizeof *out->processes);
    if (out->processes == NULL)
        return -ENOMEM;
    out->process_count = 1;
    struct ospx_process *process = &out->processes[0];
    process->exe = strdup(out->exe);
    memcpy(process->comm, out->comm, sizeof process->comm);
    process->source_path = strdup(reader->path);
    if (process->exe == NULL || process->source_path == NULL)
        return raw_out_of_memory(reader);
    process->pid = out->pid;
    process->parent_pid = parent_pid;
    process->forked = forked != NULL && json_is_true(forked);
    process->start_unix_ns = out->start_unix_ns;
    process->end_unix_ns = out->end_unix_ns;
    process->rate_hz = out->rate_hz;
    process->process_cpu_ns = out->process_cpu_ns;
    process->unwind_ready_ns = ready_ns;
    process->dropped = out->dropped;
    process->exit = out->exit;
    process->image_count = out->image_count;
    return raw_read_waits(reader, root, process);
}

/* Everything after parsing: the document's fields into *out. */
static int raw_read_document(struct raw_reader *reader, const json_t *root, struct ospx_raw *out)
{
    if (!json_is_object(root))
        return raw_fail(reader, "", "expected a JSON object at the top, found %s",
                        json_type_name(root));
    json_int_t version = 0, pid = 0, rate_hz = 0, start_ns = 0, end_ns = 0, dropped = 0;
    int rc = raw_integer(reader, root, "", "version", INT64_MIN, INT64_MAX, &version);
    if (rc < 0)
        return rc;
    if (version != OSPX_RAW_VERSION)
        return ospx_error_set(reader->err, ENOTSUP, reader->path, 0, 0,
                              "unsupported raw version %" JSON_INTEGER_FORMAT
                              " (this reader knows %d)",
                              version, OSPX_RAW_VERSION);
    out->version = (int)version;

    json_t *images = NULL, *threads = NULL, *stacks = NULL, *samples = NULL, *exit_object = NULL,
           *drops = NULL;
    json_int_t process_cpu_ns = -1;
    rc = raw_integer(reader, root, "", "pid", 0, INT64_MAX, &pid);
    if (rc == 0)
        rc = raw_string(reader, root, "", "exe", 1, &out->exe);
    json_t *comm;
    if (rc == 0)
        rc = raw_member(reader, root, "", "comm", JSON_STRING, 0, &comm);
    if (rc == 0 && comm != NULL && strlen(json_string_value(comm)) < sizeof out->comm)
        memcpy(out->comm, json_string_value(comm), strlen(json_string_value(comm)) + 1);
    if (rc == 0)
        rc = raw_integer(reader, root, "", "rate_hz", 1, UINT32_MAX, &rate_hz);
    if (rc == 0)
        rc = raw_string(reader, root, "", "platform", 1, &out->platform);
    if (rc == 0)
        rc = raw_integer(reader, root, "", "start_unix_ns", 0, INT64_MAX, &start_ns);
    if (rc == 0)
        rc = raw_integer(reader, root, "", "end_unix_ns", 0, INT64_MAX, &end_ns);
    if (rc == 0)
        rc = raw_member(reader, root, "", "images", JSON_ARRAY, 1, &images);
    if (rc == 0)
        rc = raw_member(reader, root, "", "threads", JSON_ARRAY, 1, &threads);
    if (rc == 0)
        rc = raw_member(reader, root, "", "stacks", JSON_ARRAY, 1, &stacks);
    if (rc == 0)
        rc = raw_member(reader, root, "", "samples", JSON_ARRAY, 1, &samples);
    if (rc == 0)
        rc = raw_integer(reader, root, "", "dropped", 0, INT64_MAX, &dropped);
    if (rc == 0)
        rc = raw_member(reader, root, "", "exit", JSON_OBJECT, 0, &exit_object);
    if (rc == 0)
        rc = raw_member(reader, root, "", "drops", JSON_OBJECT, 0, &drops);
    if (rc == 0)
        rc = raw_optional_integer(reader, root, "", "process_cpu_ns", &process_cpu_ns);
    out->process_cpu_ns = process_cpu_ns;
    if (rc < 0)
        return rc;
    if (end_ns < start_ns)
        return raw_fail(reader, "end_unix_ns",
                        "%" JSON_INTEGER_FORMAT " is before start_unix_ns %" JSON_INTEGER_FORMAT,
                        end_ns, start_ns);
    out->pid = pid;
    out->rate_hz = (uint32_t)rate_hz;
    out->start_unix_ns = (uint64_t)start_ns;
    out->end_unix_ns = (uint64_t)end_ns;
    out->dropped = (uint64_t)dropped;

    rc = raw_read_rows(reader, images, "images", JSON_OBJECT, &out->images, sizeof *out->images,
                       &out->image_count, raw_read_image, out);
    if (rc == 0)
        rc = raw_read_rows(reader, threads, "threads", JSON_OBJECT, &out->threads,
                           sizeof *out->threads, &out->thread_count, raw_read_thread, out);
    if (rc == 0)
        rc = ospx__raw_read_stacks(reader, stacks, out);
    if (rc == 0)
        rc = ospx__raw_read_stack_ends(reader, root, out);
    if (rc == 0)
        rc = ospx__raw_read_samples(reader, samples, out);
    if (rc == 0)
        rc = ospx__raw_merge_renamed_threads(out) == 0 ? 0 : raw_out_of_memory(reader);
    if (rc == 0)
        rc = ospx__raw_split_generations(out) == 0 ? 0 : raw_out_of_memory(reader);
    if (rc == 0 && exit_object != NULL)
        rc = raw_read_exit(reader, exit_object, out);
    if (rc == 0 && drops != NULL)
        rc = raw_read_drops(reader, drops, out);
    if (rc == 0)
        rc = raw_read_process(reader, root, out);
    return rc;
}

int ospx_raw_read(const char *path, struct ospx_raw *out, struct ospx_error *err)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int code = errno;
        return ospx_error_set(err, code, path, 0, 0, "%s", strerror(code));
    }
    return ospx__raw_read_fd(fd, path, out, err);
}

int ospx__raw_read_fd(int fd, const char *path, struct ospx_raw *out, struct ospx_error *err)
{
    memset(out, 0, sizeof *out);
    struct raw_reader reader = {.path = path, .err = err};
    json_t *root;
    int rc = ospx__raw_parse(fd, path, &reader.fast, &root, err);
    if (rc < 0)
        return rc;
    out->source_path = strdup(path);
    rc = out->source_path != NULL ? raw_read_document(&reader, root, out)
                                  : raw_out_of_memory(&reader);
    json_decref(root);
    ospx__raw_fast_free(&reader.fast);
    if (rc < 0)
        ospx_raw_free(out);
    return rc;
}

void ospx_raw_free(struct ospx_raw *raw)
{
    if (raw == NULL)
        return;
    for (size_t i = 0; i < raw->image_count; i++)
        OSPC_FREE_ALL(raw->images[i].path, raw->images[i].arch, raw->images[i].build_id);
    for (size_t i = 0; i < raw->thread_count; i++)
        free(raw->threads[i].label);
    for (size_t i = 0; i < raw->stack_count; i++)
        free(raw->stacks[i].pcs);
    for (size_t i = 0; i < raw->drop_count; i++)
        free(raw->drops[i].reason);
    for (size_t i = 0; i < raw->process_count; i++)
        OSPC_FREE_ALL(raw->processes[i].exe, raw->processes[i].source_path);
    for (size_t i = 0; i < raw->escaped_count; i++)
        OSPC_FREE_ALL(raw->escaped[i].exe, raw->escaped[i].reason);
    for (size_t i = 0; i < raw->jit_count; i++)
        free(raw->jit[i].name);
    for (size_t i = 0; i < raw->jit_note_count; i++)
        free(raw->jit_notes[i]);
    for (size_t i = 0; i < raw->kernel_symbol_count; i++)
        free(raw->kernel_symbols[i].name);
    ospx__raw_free_tables(raw);
}

void ospx__raw_free_tables(struct ospx_raw *raw)
{
    OSPC_FREE_ALL(raw->jit, raw->jit_notes, raw->kernel_symbols, raw->processes, raw->images,
                  raw->threads, raw->stacks, raw->samples, raw->escaped, raw->drops,
                  raw->source_path, raw->exe, raw->platform);
    memset(raw, 0, sizeof *raw);
}
