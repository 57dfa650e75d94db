/* report-notes.c — the terminal report's notes under the table, each said only when it
 * applies: stacks that end before main or a thread's start (and how many came before the unwind
 * tables were ready), the sampling rate achieved against the one requested, and how to name
 * code that most of the CPU time went to unnamed. */
#include <stdlib.h>
#include <string.h>

#include "ospc.h"
#include "ospx_internal.h"

#define ACHIEVED_WARN  90.0 /* percent of the requested rate */
#define MOSTLY_UNNAMED 50.0 /* percent of CPU time in unnamed code: say how to name it */

/* Is `name` a root of stacks: the program's start (_start, the C library's start of main,
 * main itself) or a thread's (start_thread, clone3, clone); a makecontext coroutine's
 * (__start_context); Go's (a goroutine's runtime.goexit, the main goroutine's runtime.main,
 * a runtime thread's runtime.mstart, each also with Go's ".abi0" suffix); Rust's
 * (std::rt::lang_start and its closures)? */
static int is_root(const char *name)
{
    static const char *const roots[] = {
        "_start",       "__libc_start_main", "__libc_start_call_main",
        "main",         "start_thread",      "clone3",
        "clone",        "__clone",           "__clone3",
        "thread_start", "__start_context",   "runtime.goexit",
        "runtime.main", "runtime.mstart"};
    size_t len = strlen(name);
    if (len > 5 && strcmp(name + len - 5, ".abi0") == 0)
        len -= 5;
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (strlen(roots[i]) == len && strncmp(name, roots[i], len) == 0)
            return 1;
    return strncmp(name, "std::rt::lang_start", 19) == 0;
}

/* When sample s's process had the unwind rows of every object mapped at its start, on the
 * run's t_rel_ns axis: UINT64_MAX when they never were, 0 when the raw file does not say. */
static uint64_t unwind_ready(const struct ospx_raw *raw, const struct ospx_sample *s)
{
    if (raw->process_count == 0 || s->thread >= raw->thread_count)
        return 0;
    uint32_t p = raw->threads[s->thread].process;
    if (p >= raw->process_count)
        return 0;
    const struct ospx_process *process = &raw->processes[p];
    if (process->unwind_ready_ns < 0)
        return 0;
    if (process->unwind_ready_ns == 0)
        return UINT64_MAX;
    uint64_t offset = process->start_unix_ns > raw->start_unix_ns
                          ? process->start_unix_ns - raw->start_unix_ns
                          : 0;
    return offset + (uint64_t)process->unwind_ready_ns;
}

/* "stacks: N% of on-CPU samples end before main or a thread's start, in IMAGE (N%), ...":
 * where the code had neither unwind tables nor frame pointers (JIT code, an object without
 * .eh_frame, a frame the rows could not express), or a sample came before ospreyd had built
 * its object's rows (how many of them, when the raw file says when it had). Said when at
 * least CUT_SAY of the on-CPU samples are cut; --inverted shows where. */
#define CUT_SAY 1.0
void ospx__report_cut_stacks(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn)
{
    const struct ospx_raw *raw = model->raw;
    const struct ospx_symbols *sym = model->symbols;
    if (model->on_cpu_samples == 0 || sym == NULL)
        return;
    struct where {
        const char *image;
        uint64_t weight;
    } top[4] = {{0}};
    uint64_t cut = 0, elsewhere = 0, early = 0;
    /* Per stack: 0 not looked at, 1 whole, 2 cut. */
    unsigned char *seen = calloc(sym->stack_count ? sym->stack_count : 1, 1);
    if (seen == NULL)
        return;
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *s = &raw->samples[i];
        if (s->state != 0 || s->stack >= sym->stack_count || sym->stack_depths[s->stack] == 0)
            continue;
        size_t depth = sym->stack_depths[s->stack];
        const struct ospx_frame *outer = &sym->frames[sym->stack_slots[s->stack][depth - 1].frame];
        if (seen[s->stack] == 0) {
            /* Whole when any frame is a root: in a stripped executable, main and _start have
             * no names, but the C library's start of main does. */
            seen[s->stack] = 2;
            for (size_t k = depth; k-- > 0 && seen[s->stack] == 2;)
                if (is_root(sym->frames[sym->stack_slots[s->stack][k].frame].name))
                    seen[s->stack] = 1;
        }
        if (seen[s->stack] == 1)
            continue;
        cut += s->weight;
        if (s->t_rel_ns < unwind_ready(raw, s))
            early += s->weight;
        const char *image = outer->image[0] ? outer->image : "code in no object (a JIT's)";
        const char *slash = strrchr(image, '/');
        image = slash ? slash + 1 : image;
        size_t k = 0;
        while (k < 4 && top[k].image != NULL && strcmp(top[k].image, image) != 0)
            k++;
        if (k < 4 && top[k].image == NULL)
            top[k].image = image;
        if (k < 4)
            top[k].weight += s->weight;
        else
            elsewhere += s->weight;
    }
    free(seen);
    double share = 100.0 * (double)cut / (double)model->on_cpu_samples;
    if (cut == 0 || share < CUT_SAY)
        return;
    for (size_t a = 0; a < 4; a++) /* heaviest first */
        for (size_t b = a + 1; b < 4; b++)
            if (top[b].weight > top[a].weight) {
                struct where t = top[a];
                top[a] = top[b];
                top[b] = t;
            }
    char first[128], second[768];
    snprintf(first, sizeof first,
             "stacks: %.1f%% of on-CPU samples end before main or a thread's start", share);
    int n = snprintf(second, sizeof second, "they end in");
    for (size_t k = 0; k < 4 && top[k].image != NULL && n > 0 && (size_t)n < sizeof second; k++)
        n += snprintf(second + n, sizeof second - (size_t)n, "%s %s %.1f%%", k ? "," : "",
                      top[k].image, 100.0 * (double)top[k].weight / (double)model->on_cpu_samples);
    if (elsewhere > 0 && n > 0 && (size_t)n < sizeof second)
        n += snprintf(second + n, sizeof second - (size_t)n, ", elsewhere %.1f%%",
                      100.0 * (double)elsewhere / (double)model->on_cpu_samples);
    double early_share = 100.0 * (double)early / (double)model->on_cpu_samples;
    if (early_share >= 0.05 && n > 0 && (size_t)n < sizeof second) {
        /* In a profile of one process, when: the startup window a longer run outgrows. */
        char window[64] = "";
        const struct ospx_process *process = raw->process_count == 1 ? raw->processes : NULL;
        if (process != NULL && process->unwind_ready_ns > 0) {
            char duration[32];
            ospx__format_duration(duration, sizeof duration,
                                  (double)process->unwind_ready_ns / 1e9);
            snprintf(window, sizeof window, " in the first %s,", duration);
        }
        snprintf(second + n, sizeof second - (size_t)n,
                 "; %.1f%% came%s before the unwind tables were ready", early_share, window);
    }
    ospx__emit_pair(out, width, warn, first, second);
}

/* "sampling: achieved N samples/s of M requested": on-CPU periods over the CPU time the
 * collector measured, when it measured one. Below ACHIEVED_WARN of the rate asked for, a
 * warning: the CPU figures (times, not shares) then undercount. Always the whole run's: in a
 * view (--focus, --fiber, ...) the line says so, and a section of a view has none (the run's
 * line is above it). */
void ospx__report_achieved_rate(FILE *out, size_t width, const struct ospx_model *model,
                                const char *warn, long process)
{
    const char *whole = model->raw->whole.view ? " (the whole run)" : "";
    if (process >= 0 && model->raw->whole.view)
        return;
    if (model->measured_cpu_ns <= 0 && model->raw->exit.signal > 0) {
        char line[128];
        snprintf(line, sizeof line,
                 "sampling: not checked: the program was killed by signal %d before the "
                 "collector read its CPU time",
                 model->raw->exit.signal);
        ospx__emit(out, width, NULL, line);
        return;
    }
    if (model->measured_cpu_ns <= 0 || model->raw->rate_hz == 0)
        return;
    double cpu = (double)model->measured_cpu_ns / 1e9;
    double achieved = (double)model->sampled_on_cpu / cpu;
    double share = 100.0 * achieved / model->raw->rate_hz;
    char measured[32], line[512];
    ospx__format_duration(measured, sizeof measured, cpu);
    snprintf(line, sizeof line,
             "sampling: achieved %.0f samples/s of %u requested (%.1f%%) over %s CPU measured%s",
             achieved, model->raw->rate_hz, share, measured, whole);
    if (share >= ACHIEVED_WARN) {
        ospx__emit(out, width, NULL, line);
        return;
    }
    snprintf(line, sizeof line, "warning: achieved %.0f samples/s of %u requested (%.1f%%)%s",
             achieved, model->raw->rate_hz, share, whole);
    char second[256];
    /* With no on-CPU sample there is no share to hold. */
    snprintf(second, sizeof second, "CPU times undercount (%s measured)%s", measured,
             model->sampled_on_cpu > 0 ? "; shares hold" : "");
    ospx__emit_pair(out, width, warn, line, second);
}

/* 1 when the symbolizer named nothing at the frame: `object+0xOFFSET`, or the raw pc. */
static int frame_unnamed(const struct ospx_frame *frame)
{
    const char *object = ospx__basename(frame->image);
    size_t length = strlen(object);
    return strncmp(frame->name, "0x", 2) == 0 ||
           (length > 0 && strncmp(frame->name, object, length) == 0 &&
            strncmp(frame->name + length, "+0x", 3) == 0);
}

/* When most of the CPU time is in code nothing named (stripped objects: Debian's gzip, git,
 * openssl) and no debuginfod server is set, one line says how to get the names: the objects'
 * -dbgsym packages, or DEBUGINFOD_URLS (llvm-symbolizer fetches debug information from it). */
void ospx__report_names_hint(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (model->on_cpu_samples == 0 || (urls != NULL && urls[0] != '\0'))
        return;
    struct {
        const char *name;
        uint64_t self;
    } objects[3] = {{0}};
    uint64_t unnamed = 0;
    for (size_t i = 0; i < model->function_count; i++) {
        const struct ospx_function_stat *fn = &model->functions[i];
        const struct ospx_frame *frame = &model->symbols->frames[fn->frame];
        if (fn->self == 0 || !frame_unnamed(frame))
            continue;
        unnamed += fn->self;
        const char *object = ospx__basename(frame->image);
        size_t k = 0;
        while (k < 3 && objects[k].name != NULL && strcmp(objects[k].name, object) != 0)
            k++;
        if (k < 3) {
            objects[k].name = object;
            objects[k].self += fn->self;
        }
    }
    double share = ospx__percent_of(unnamed, model->on_cpu_samples);
    if (share < MOSTLY_UNNAMED)
        return;
    char line[512];
    int used = snprintf(line, sizeof line, "names: %.0f%% of CPU time without symbols", share);
    for (size_t k = 0; k < 3 && objects[k].name != NULL && used > 0 && (size_t)used < sizeof line;
         k++)
        used += snprintf(line + used, sizeof line - (size_t)used, "%s%s", k == 0 ? " (" : ", ",
                         objects[k].name[0] != '\0' ? objects[k].name : "no object");
    if (objects[0].name != NULL && used > 0 && (size_t)used < sizeof line)
        snprintf(line + used, sizeof line - (size_t)used, ")");
    ospx__emit_pair(out, width, warn, line, "install -dbgsym packages or set DEBUGINFOD_URLS");
}
