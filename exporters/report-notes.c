/* report-notes.c — the terminal report's notes under the table, each said only when it
 * applies: stacks that end before main or a thread's start (and how many came before the unwind
 * tables were ready), the sampling rate achieved against the one requested (and the CPU time of
 * threads never sampled, shown where they ended), how to name code that most of the CPU time
 * went to unnamed, and the share of on-CPU time inside system calls. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osp_ring.h"
#include "osp_unwind_step.h"
#include "ospc.h"
#include "ospx_internal.h"

#define ACHIEVED_WARN  90.0 /* percent of the requested rate */
#define MOSTLY_UNNAMED 50.0 /* percent of CPU time in unnamed code: say how to name it */

/* Is `name` a root of stacks: the program's start (_start, the C library's start of main,
 * main itself) or a thread's (start_thread, clone3, clone); a makecontext coroutine's
 * (__start_context); Go's (a goroutine's runtime.goexit, the main goroutine's runtime.main,
 * a runtime thread's runtime.mstart, and the stack switches a g0 stack's walk ends at,
 * runtime.mcall, runtime.systemstack and runtime.morestack, each also with Go's ".abi0" suffix);
 * Rust's (std::rt::lang_start and its closures)? For raw files that do not say why each stack's
 * walk ended (stack_ends, written since the walk says it): those that do are asked instead. */
static int is_root(const char *name)
{
    static const char *const roots[] = {"_start",
                                        "__libc_start_main",
                                        "__libc_start_call_main",
                                        "main",
                                        "start_thread",
                                        "clone3",
                                        "clone",
                                        "__clone",
                                        "__clone3",
                                        "thread_start",
                                        "__start_context",
                                        "runtime.goexit",
                                        "runtime.main",
                                        "runtime.mstart",
                                        "runtime.mcall",
                                        "runtime.systemstack",
                                        "runtime.morestack"};
    size_t len = strlen(name);
    if (len > 5 && strcmp(name + len - 5, ".abi0") == 0)
        len -= 5;
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (strlen(roots[i]) == len && strncmp(name, roots[i], len) == 0)
            return 1;
    return strncmp(name, "std::rt::lang_start", 19) == 0;
}

/* is_root of frame f, asked once per frame: stacks share their frames (ten thousand stacks of
 * a run are a few hundred thousand slots over tens of thousands of frames). `known` holds per
 * frame 0 (not asked yet), 1 (a root) or 2 (not one); without it, is_root is asked each time. */
static int frame_is_root(const struct ospx_symbols *sym, unsigned char *known, uint32_t f)
{
    if (known == NULL)
        return is_root(sym->frames[f].name);
    if (known[f] == 0)
        known[f] = is_root(sym->frames[f].name) ? 1 : 2;
    return known[f] == 1;
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

/* Cut stacks summed by a name (the object a cut stack ends in, or a process's command). */
struct cut_tally {
    const char *name;
    uint64_t weight;
    uint32_t members, of; /* processes: how many of the command's have cut stacks, of how many */
};

/* The entry for `name`, added when new; NULL when out of memory. */
static struct cut_tally *tally_at(struct cut_tally **list, size_t *count, size_t *cap,
                                  const char *name)
{
    for (size_t k = 0; k < *count; k++)
        if (strcmp((*list)[k].name, name) == 0)
            return &(*list)[k];
    if (*count == *cap) {
        size_t grown = *cap ? *cap * 2 : 16;
        struct cut_tally *bigger = realloc(*list, grown * sizeof **list);
        if (bigger == NULL)
            return NULL;
        *list = bigger;
        *cap = grown;
    }
    (*list)[*count] = (struct cut_tally){.name = name};
    return &(*list)[(*count)++];
}

static int heavier_first(const void *a, const void *b)
{
    const struct cut_tally *x = a, *y = b;
    if (x->weight != y->weight)
        return x->weight < y->weight ? 1 : -1;
    return strcmp(x->name, y->name);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Append "lead A 3.1%, B 2.0% (1 of 4), ..., elsewhere 0.4%" to `text` at *n: every entry
 * holding at least CUT_NAME percent of the cut samples, heaviest first, none hidden; the rest
 * summed. */
#define CUT_NAME 1.0
static void append_tally(char *text, size_t size, int *n, const char *lead, struct cut_tally *list,
                         size_t count, uint64_t cut, uint64_t on_cpu, int counts)
{
    qsort(list, count, sizeof *list, heavier_first);
    uint64_t rest = 0;
    int named = 0;
    for (size_t k = 0; k < count; k++) {
        if (*n < 0 || (size_t)*n >= size)
            return;
        if (100.0 * (double)list[k].weight < CUT_NAME * (double)cut) {
            rest += list[k].weight;
            continue;
        }
        *n += snprintf(text + *n, size - (size_t)*n, "%s %s %.1f%%", named ? "," : lead,
                       list[k].name, 100.0 * (double)list[k].weight / (double)on_cpu);
        if (counts && list[k].of > 1 && *n > 0 && (size_t)*n < size)
            *n +=
                snprintf(text + *n, size - (size_t)*n, " (%u of %u)", list[k].members, list[k].of);
        named = 1;
    }
    if (rest > 0 && *n >= 0 && (size_t)*n < size)
        *n += snprintf(text + *n, size - (size_t)*n, "%s elsewhere %.1f%%", named ? "," : lead,
                       100.0 * (double)rest / (double)on_cpu);
}

/* "stacks: N% of on-CPU samples end before main or a thread's start; they end in IMAGE (N%),
 * ...; in processes CMD N% (K of M), ...": where the code had neither unwind tables nor frame
 * pointers (JIT code, an object without .eh_frame, a frame the rows could not express), or a
 * sample came before ospreyd had built its object's rows (how many of them, when the raw file
 * says when it had). Every object holding at least CUT_NAME percent of the cut samples is
 * named, and for a run of several processes every command; the note wraps rather than cut
 * them. Said when at least CUT_SAY of the on-CPU samples are cut; --inverted shows where. */
#define CUT_SAY     1.0
#define JIT_CUT_SAY 5.0 /* percent of on-CPU samples cut in a JIT's code: say how to walk it */
void ospx__report_cut_stacks(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn)
{
    const struct ospx_raw *raw = model->raw;
    const struct ospx_symbols *sym = model->symbols;
    if (model->on_cpu_samples == 0 || sym == NULL)
        return;
    uint64_t cut = 0, early = 0, in_jit = 0, by_end[OSP_UNWIND_STOP_COUNT] = {0};
    /* Per stack: 0 not looked at, 1 whole, 2 cut; and the weight of its cut samples. */
    unsigned char *seen = calloc(sym->stack_count ? sym->stack_count : 1, 1);
    unsigned char *root_known = calloc(sym->frame_count ? sym->frame_count : 1, 1);
    uint64_t *stack_cut = calloc(sym->stack_count ? sym->stack_count : 1, sizeof *stack_cut);
    uint64_t *process_cut =
        calloc(raw->process_count ? raw->process_count : 1, sizeof *process_cut);
    struct cut_tally *images = NULL, *commands = NULL;
    size_t image_count = 0, image_cap = 0, command_count = 0, command_cap = 0;
    char *second = NULL;
    if (seen == NULL || stack_cut == NULL || process_cut == NULL)
        goto done;
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *s = &raw->samples[i];
        if (s->state != 0 || s->stack >= sym->stack_count || sym->stack_depths[s->stack] == 0)
            continue;
        size_t depth = sym->stack_depths[s->stack];
        unsigned end = s->stack < raw->stack_count ? raw->stacks[s->stack].end : 0;
        if (seen[s->stack] == 0 && end != 0) {
            /* The walker said why it stopped: whole when it reached the outermost frame, or
             * when it stopped there for want of a row or a frame record at a root by name (a Go
             * goroutine's runtime.goexit, whose caller neither names); a guess (frames skipped
             * while rows were being built) or the depth cap is cut however it ended. */
            int at_root =
                (end == OSP_UNWIND_NO_ROW || end == OSP_UNWIND_FAILED) &&
                frame_is_root(sym, root_known, sym->stack_slots[s->stack][depth - 1].frame);
            seen[s->stack] = end == OSP_UNWIND_OUTERMOST || at_root ? 1 : 2;
        } else if (seen[s->stack] == 0) {
            /* An older file: whole when any frame is a root. In a stripped executable, main
             * and _start have no names, but the C library's start of main does. */
            seen[s->stack] = 2;
            for (size_t k = depth; k-- > 0 && seen[s->stack] == 2;)
                if (frame_is_root(sym, root_known, sym->stack_slots[s->stack][k].frame))
                    seen[s->stack] = 1;
        }
        if (seen[s->stack] == 1)
            continue;
        cut += s->weight;
        stack_cut[s->stack] += s->weight;
        by_end[end < OSP_UNWIND_STOP_COUNT ? end : 0] += s->weight;
        if (s->t_rel_ns < unwind_ready(raw, s))
            early += s->weight;
        if (s->thread < raw->thread_count && raw->threads[s->thread].process < raw->process_count)
            process_cut[raw->threads[s->thread].process] += s->weight;
    }
    double share = 100.0 * (double)cut / (double)model->on_cpu_samples;
    if (cut == 0 || share < CUT_SAY)
        goto done;
    for (size_t st = 0; st < sym->stack_count; st++) {
        if (stack_cut[st] == 0)
            continue;
        const struct ospx_frame *outer =
            &sym->frames[sym->stack_slots[st][sym->stack_depths[st] - 1].frame];
        /* An address in no object: a JIT's code, unless a frame-pointer guess reached it
         * (then it is a word of the stack, not code). */
        unsigned end = st < raw->stack_count ? raw->stacks[st].end : 0;
        const char *image = outer->image[0]             ? base_name(outer->image)
                            : end == OSP_UNWIND_GUESSED ? "an address a guess reached"
                                                        : "code in no object (a JIT's)";
        struct cut_tally *at = tally_at(&images, &image_count, &image_cap, image);
        if (at == NULL)
            goto done;
        at->weight += stack_cut[st];
        if ((outer->image[0] == '\0' && end != OSP_UNWIND_GUESSED) ||
            strcmp(outer->image, "[jit]") == 0)
            in_jit += stack_cut[st];
    }
    if (raw->process_count > 1)
        for (size_t p = 0; p < raw->process_count; p++) {
            const char *exe = raw->processes[p].exe;
            struct cut_tally *at = tally_at(&commands, &command_count, &command_cap,
                                            base_name(exe && exe[0] ? exe : "?"));
            if (at == NULL)
                goto done;
            at->of++;
            at->members += process_cut[p] > 0;
            at->weight += process_cut[p];
        }
    size_t size = 512 + 96 * (image_count + command_count);
    second = malloc(size);
    if (second == NULL)
        goto done;
    char first[128];
    snprintf(first, sizeof first,
             "stacks: %.1f%% of on-CPU samples end before main or a thread's start", share);
    int n = 0;
    second[0] = '\0';
    append_tally(second, size, &n, "they end in", images, image_count, cut, model->on_cpu_samples,
                 0);
    if (command_count > 0 && n >= 0 && (size_t)n < size) {
        n += snprintf(second + n, size - (size_t)n, ";");
        append_tally(second, size, &n, " in processes", commands, command_count, cut,
                     model->on_cpu_samples, 1);
    }
    /* How the walks said they ended, where the raw file says (stack_ends). The depth cap: a
     * walk of OSP_UNWIND_MAX_STEPS frames (a shim before stacks deeper than a record were
     * walked on: of OSP_MAX_DEPTH). */
    char depth_cap[48];
    snprintf(depth_cap, sizeof depth_cap, "the depth cap (%u frames walked)", OSP_UNWIND_MAX_STEPS);
    const char *ends[OSP_UNWIND_STOP_COUNT] = {
        [OSP_UNWIND_NO_ROW] = "no unwind row and no frame pointer",
        [OSP_UNWIND_FAILED] = "a check that failed",
        [OSP_UNWIND_DEPTH] = depth_cap,
        [OSP_UNWIND_GUESSED] = "frame pointers guessed before the rows were ready"};
    const char *lead = "; walks ended at";
    for (unsigned e = 1; e < OSP_UNWIND_STOP_COUNT && n > 0 && (size_t)n < size; e++)
        if (by_end[e] > 0 && ends[e] != NULL) {
            n += snprintf(second + n, size - (size_t)n, "%s %s %.1f%%", lead, ends[e],
                          100.0 * (double)by_end[e] / (double)model->on_cpu_samples);
            lead = ",";
        }
    double early_share = 100.0 * (double)early / (double)model->on_cpu_samples;
    if (early_share >= 0.05 && n > 0 && (size_t)n < size) {
        /* In a profile of one process, when: the startup window a longer run outgrows. */
        char window[64] = "";
        const struct ospx_process *process = raw->process_count == 1 ? raw->processes : NULL;
        if (process != NULL && process->unwind_ready_ns > 0) {
            char duration[32];
            ospx__format_duration(duration, sizeof duration,
                                  (double)process->unwind_ready_ns / 1e9);
            snprintf(window, sizeof window, " in the first %s,", duration);
        }
        n += snprintf(second + n, size - (size_t)n,
                      "; %.1f%% came%s before the unwind tables were ready", early_share, window);
    }
    /* A JIT's code has no unwind rows: its own frame pointers are the walk's way through it
     * (a JVM's stacks, 43% cut without them, 1.9% with). */
    if (100.0 * (double)in_jit / (double)model->on_cpu_samples >= JIT_CUT_SAY && n > 0 &&
        (size_t)n < size)
        snprintf(second + n, size - (size_t)n,
                 "; a JIT's frames are walked through where it keeps frame pointers (java "
                 "-XX:+PreserveFramePointer)");
    ospx__emit_pair(out, width, warn, first, second);
done:
    free(second);
    free(images);
    free(commands);
    free(process_cut);
    free(stack_cut);
    free(root_known);
    free(seen);
}

/* An attach whose perf events counted CPU time (in the kernel too) but whose stacks hold no
 * kernel frame: the kernel left its frames out (not root, perf_event_paranoid >= 2), and with
 * them every sample that fell inside the kernel. The time in system calls is missing from the
 * profile then, not undercounted evenly (postgres attached as its own user: 52% of the rate). */
int ospx__kernel_samples_withheld(const struct ospx_model *model)
{
    if (model->raw->events_cpu_ns == 0 || model->symbols == NULL)
        return 0;
    for (size_t f = 0; f < model->symbols->frame_count; f++)
        if (strcmp(model->symbols->frames[f].image, "[kernel.kallsyms]") == 0)
            return 0;
    return 1;
}

/* The on-CPU periods of threads that were never sampled while they ran: every period of such a
 * thread is in one row of two periods or more, paid at one instant where the thread ended (the
 * shim pays a thread's CPU time its timers did not sample when it ends: a thread whose timers
 * could not be created, timer_create refused or RLIMIT_SIGPENDING spent, or one that ran in
 * bursts shorter than a period). A sampled thread has a row per period or so; a thread too
 * short for one has a single row of one period, which is no loss to say. Their count in
 * *threads, the thread with the most in *heaviest, its row's stack in *stack. None in a view
 * (--focus, --fiber, ...): the rows a view drops leave sampled threads with one; none in an
 * attach. */
static uint64_t unsampled_periods(const struct ospx_raw *raw, size_t *threads, size_t *heaviest,
                                  uint32_t *stack)
{
    *threads = 0;
    /* An attach samples each thread from outside (perf events, ptrace): no timer of its own. */
    if (raw->whole.view || raw->thread_count == 0 || raw->events_cpu_ns > 0)
        return 0;
    uint32_t *rows = calloc(raw->thread_count, sizeof *rows);
    uint64_t *periods = calloc(raw->thread_count, sizeof *periods);
    uint32_t *stacks = calloc(raw->thread_count, sizeof *stacks);
    /* when its on-CPU row was paid, and its latest row of either state */
    uint64_t *paid = calloc(raw->thread_count, sizeof *paid);
    uint64_t *last = calloc(raw->thread_count, sizeof *last);
    uint64_t total = 0, most = 0;
    if (rows != NULL && periods != NULL && stacks != NULL && paid != NULL && last != NULL) {
        for (size_t i = 0; i < raw->sample_count; i++) {
            const struct ospx_sample *s = &raw->samples[i];
            if (s->thread >= raw->thread_count)
                continue;
            if (s->t_rel_ns > last[s->thread])
                last[s->thread] = s->t_rel_ns;
            if (s->state != 0)
                continue;
            rows[s->thread] += rows[s->thread] < 2;
            periods[s->thread] += s->weight;
            stacks[s->thread] = s->stack;
            paid[s->thread] = s->t_rel_ns;
        }
        /* Paid at its end: no later row (a thread that ran a while, then only waited, as a
         * main thread joining its workers does, had its one row at a late tick, not its end). */
        for (size_t t = 0; t < raw->thread_count; t++)
            if (rows[t] == 1 && periods[t] >= 2 && paid[t] >= last[t]) {
                (*threads)++;
                total += periods[t];
                if (periods[t] > most) {
                    most = periods[t];
                    *heaviest = t;
                    *stack = stacks[t];
                }
            }
    }
    free(last);
    free(paid);
    free(stacks);
    free(periods);
    free(rows);
    return total;
}

/* "not sampled: 99ms of CPU time of 1 thread (main) is shown where it ended, at
 * __cxa_finalize; ...": the CPU time of threads never sampled while they ran (unsampled_periods),
 * which the table shows at the stack where each ended, not where the time was spent. Said when
 * it is at least UNSAMPLED_SAY percent of the on-CPU periods. */
#define UNSAMPLED_SAY 1.0
static void report_unsampled(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn, uint64_t periods, size_t threads, size_t heaviest,
                             uint32_t stack)
{
    const struct ospx_raw *raw = model->raw;
    const struct ospx_symbols *sym = model->symbols;
    if (periods == 0 || ospx__percent_of(periods, model->on_cpu_samples) < UNSAMPLED_SAY)
        return;
    char cpu[32], name[128] = "", at[160] = "", first[512];
    ospx__format_duration(cpu, sizeof cpu, (double)periods / raw->rate_hz);
    if (threads == 1) {
        const struct ospx_thread *t = &raw->threads[heaviest];
        const char *label = ospx__str(t->label);
        snprintf(name, sizeof name, " (%.100s)",
                 strcmp(label, "thread") == 0 ? ospx__process_comm(raw, t->process) : label);
        ospc_printable(name);
    }
    if (sym != NULL && stack < sym->stack_count && sym->stack_depths[stack] > 0) {
        char leaf[128];
        ospx_short_name(leaf, sizeof leaf, sym->frames[sym->stack_slots[stack][0].frame].name);
        snprintf(at, sizeof at, ", at %s", leaf);
        ospc_printable(at);
    }
    snprintf(first, sizeof first,
             "not sampled: %s of CPU time (%.1f%%) of %zu thread%s%s %s shown where %s ended%s",
             cpu, ospx__percent_of(periods, model->on_cpu_samples), threads,
             threads == 1 ? "" : "s", name, threads == 1 ? "is" : "are",
             threads == 1 ? "it" : "they", threads == 1 ? at : "");
    char second[256];
    snprintf(second, sizeof second,
             "no sample was taken while %s ran (a thread's sampling timers could not be created, "
             "or it ran in bursts shorter than a period): where that time went is not known",
             threads == 1 ? "it" : "they");
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
    /* CPU time of threads never sampled, shown where they ended: said under the line, and no
     * share holds for it. */
    size_t unsampled_threads = 0, heaviest = 0;
    uint32_t unsampled_stack = 0;
    uint64_t unsampled =
        unsampled_periods(model->raw, &unsampled_threads, &heaviest, &unsampled_stack);
    int unsampled_said =
        unsampled > 0 && ospx__percent_of(unsampled, model->on_cpu_samples) >= UNSAMPLED_SAY;
    /* Processes of a run whose CPU time was not read (killed first, or ended without an exit
     * record): left out of the rate, and said. */
    char left_out[256] = "", unread[192] = "";
    const struct ospx_raw *raw = model->raw;
    if (model->unmeasured_processes > 0 && model->unmeasured_first < raw->process_count) {
        const struct ospx_process *first = &raw->processes[model->unmeasured_first];
        char name[96], how[48] = "";
        snprintf(name, sizeof name, "%lld (%.40s)", (long long)first->pid,
                 ospx__process_comm(raw, model->unmeasured_first));
        ospc_printable(name);
        if (first->exit.signal > 0)
            snprintf(how, sizeof how, ", killed by signal %d", first->exit.signal);
        if (model->unmeasured_processes == 1)
            snprintf(unread, sizeof unread, "process %s%s", name, how);
        else
            snprintf(unread, sizeof unread, "%u processes (the first: %s%s)",
                     model->unmeasured_processes, name, how);
        snprintf(left_out, sizeof left_out, "not counted: %s, whose CPU time was not read", unread);
    }
    if (model->measured_cpu_ns <= 0 && unread[0] != '\0') {
        char line[320];
        snprintf(line, sizeof line, "sampling: not checked: the CPU time of %s was not read",
                 unread);
        ospx__emit(out, width, NULL, line);
    } else if (model->measured_cpu_ns <= 0 && model->raw->exit.signal > 0) {
        char line[128];
        snprintf(line, sizeof line,
                 "sampling: not checked: the program was killed by signal %d before the "
                 "collector read its CPU time",
                 model->raw->exit.signal);
        ospx__emit(out, width, NULL, line);
    } else if (model->measured_cpu_ns > 0 && model->raw->rate_hz > 0) {
        double cpu = (double)model->measured_cpu_ns / 1e9;
        double achieved = (double)model->sampled_on_cpu / cpu;
        double share = 100.0 * achieved / model->raw->rate_hz;
        char measured[32], line[512];
        ospx__format_duration(measured, sizeof measured, cpu);
        snprintf(line, sizeof line,
                 "sampling: achieved %.0f samples/s of %u requested (%.1f%%) over %s CPU "
                 "measured%s",
                 achieved, model->raw->rate_hz, share, measured, whole);
        if (share >= ACHIEVED_WARN && left_out[0] != '\0') {
            ospx__emit_pair(out, width, NULL, line, left_out);
        } else if (share >= ACHIEVED_WARN) {
            ospx__emit(out, width, NULL, line);
        } else {
            snprintf(line, sizeof line,
                     "warning: achieved %.0f samples/s of %u requested (%.1f%%)%s", achieved,
                     model->raw->rate_hz, share, whole);
            char second[640];
            /* With no on-CPU sample there is no share to hold. */
            snprintf(second, sizeof second, "CPU times undercount (%s measured)%s", measured,
                     model->sampled_on_cpu > 0 && !unsampled_said ? "; shares hold" : "");
            if (ospx__kernel_samples_withheld(model))
                snprintf(second, sizeof second,
                         "CPU times undercount (%s measured): the kernel gives an attach "
                         "without its frames (not root, kernel.perf_event_paranoid >= 2) no "
                         "sample inside a system call; shares are of the time outside the "
                         "kernel, as root they include it",
                         measured);
            if (left_out[0] != '\0')
                snprintf(second + strlen(second), sizeof second - strlen(second), "; %s", left_out);
            ospx__emit_pair(out, width, warn, line, second);
        }
    }
    if (unsampled_said)
        report_unsampled(out, width, model, warn, unsampled, unsampled_threads, heaviest,
                         unsampled_stack);
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

/* When most of the CPU time is in code nothing named, one line says how to get the names. In
 * objects (stripped: Debian's gzip, git, openssl) with no debuginfod server set: the objects'
 * -dbgsym packages, or DEBUGINFOD_URLS (llvm-symbolizer fetches debug information from it). In
 * no object (a JIT's code: a JVM without a map, a runtime that wrote none) neither helps: the
 * runtime's map for perf names it, so the line says how the common runtimes write one. */
void ospx__report_names_hint(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn)
{
    if (model->on_cpu_samples == 0)
        return;
    const char *urls = getenv("DEBUGINFOD_URLS");
    int debuginfod = urls != NULL && urls[0] != '\0';
    struct {
        const char *name;
        uint64_t self;
    } objects[3] = {{0}};
    uint64_t unnamed = 0, in_no_object = 0;
    for (size_t i = 0; i < model->function_count; i++) {
        const struct ospx_function_stat *fn = &model->functions[i];
        const struct ospx_frame *frame = &model->symbols->frames[fn->frame];
        if (fn->self == 0 || !frame_unnamed(frame))
            continue;
        const char *object = ospx__basename(frame->image);
        if (object[0] == '\0')
            in_no_object += fn->self;
        else if (debuginfod)
            continue; /* the server was asked: nothing more to say of objects */
        unnamed += fn->self;
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
                         objects[k].name[0] != '\0' ? objects[k].name : "no object: a JIT's");
    if (objects[0].name != NULL && used > 0 && (size_t)used < sizeof line)
        snprintf(line + used, sizeof line - (size_t)used, ")");
    /* Each way named when its code holds a tenth of the unnamed time or more. */
    char how[384] = "";
    if (10 * (unnamed - in_no_object) >= unnamed)
        snprintf(how, sizeof how, "install -dbgsym packages or set DEBUGINFOD_URLS");
    if (10 * in_no_object >= unnamed)
        snprintf(how + strlen(how), sizeof how - strlen(how),
                 "%sa JIT's code is named by the map its runtime writes for perf (java "
                 "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit, erl +JPperf map, node "
                 "--perf-basic-prof)",
                 how[0] != '\0' ? "; " : "");
    ospx__emit_pair(out, width, warn, line, how);
}

/* Reads `size` bytes of `path` at file offset `offset` into `code`: 0, or -1 when the file does
 * not open (as a regular path, without following a link or blocking) or is shorter. */
static int read_code(const char *path, uint64_t offset, unsigned char *code, size_t size)
{
    if (path == NULL || path[0] != '/')
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -1;
    ssize_t got = pread(fd, code, size, (off_t)offset);
    close(fd);
    return got == (ssize_t)size ? 0 : -1;
}

/* Is the instruction at code[at] a system call (x86_64's `syscall`, aarch64's `svc #0`)? */
static int is_system_call(const unsigned char *code, size_t at, int aarch64)
{
    return aarch64 ? code[at] == 0x01 && code[at + 1] == 0x00 && code[at + 2] == 0x00 &&
                         code[at + 3] == 0xd4
                   : code[at] == 0x0f && code[at + 1] == 0x05;
}

/* 1 when the instruction just before file offset `offset` of `path` is a system call: a thread
 * interrupted there was inside the kernel, and its user pc is the instruction after the call.
 * 0 when not or unreadable. */
static int after_syscall(const char *path, uint64_t offset, int aarch64)
{
    unsigned need = aarch64 ? 4 : 2;
    unsigned char code[4];
    if (offset < need || read_code(path, offset - need, code, need) != 0)
        return 0;
    return is_system_call(code, 0, aarch64);
}

/* 1 when the function that starts at file offset `offset` of `path` (`length` bytes, at most
 * WRAPPER_SCAN read) makes a system call itself: a C library's wrapper (`read`, `accept4`,
 * `epoll_wait`, `writev`, ... make theirs within their first 24 bytes, or a cancellable one
 * within 90). x86_64's instructions are not aligned, so a `0f 05` inside another instruction
 * would count too; only a sample at a function's first instruction is asked. */
#define WRAPPER_SCAN 256
static int wrapper_makes_system_call(const char *path, uint64_t offset, uint64_t length,
                                     int aarch64)
{
    unsigned char code[WRAPPER_SCAN];
    size_t size = length < sizeof code ? (size_t)length : sizeof code;
    if (size < 4 || read_code(path, offset, code, size) != 0)
        return 0;
    for (size_t at = 0; at + (aarch64 ? 4 : 2) <= size; at += aarch64 ? 4 : 1)
        if (is_system_call(code, at, aarch64))
            return 1;
    return 0;
}

/* Is an on-CPU sample of `stack` time inside a system call? Its leaf is right after a system
 * call instruction (the CPU-time timer fired in the kernel and the signal landed as the call
 * returned), or the first instruction of a function that makes one: the shim charges the CPU
 * time a call it wraps (poll, epoll_wait, accept, a timed socket's read and write, ...) spent
 * to the call's stack with the C library's function as its leaf, at its entry (lighttpd under
 * load: 162 periods at accept4's first instruction, 41 at epoll_wait's, of 376, where only the
 * first kind was counted: kernel 16.8%, perf 73.3%). `spans` caches each image's function
 * spans, read when first needed. */
static int in_system_call(const struct ospx_raw *raw, const struct ospx_stack *stack,
                          struct ospx__spans *spans, unsigned char *spans_read)
{
    uint32_t at = stack->depth > 0 ? ospx__stack_image(raw, stack, 0) : UINT32_MAX;
    const struct ospx_image *image = at < raw->image_count ? &raw->images[at] : NULL;
    if (image == NULL || !image->has_text_offset || stack->pcs[0] < image->text)
        return 0;
    int aarch64 = image->arch != NULL && strcmp(image->arch, "aarch64") == 0;
    uint64_t offset = image->text_offset + (stack->pcs[0] - image->text);
    if (after_syscall(image->path, offset, aarch64))
        return 1;
    if (!spans_read[at]) {
        spans_read[at] = 1;
        if (ospx__spans_read(image->path, &spans[at]) != 0)
            return 0;
    }
    uint64_t own = stack->pcs[0] - image->slide; /* the object's own address */
    const struct ospx__span *span = ospx__spans_find(&spans[at], own);
    return span != NULL && span->start == own &&
           wrapper_makes_system_call(image->path, offset, span->end - span->start, aarch64);
}

/* "kernel: N% of on-CPU time was inside system calls; ...": said when a profile without kernel
 * frames (a --profile run: the shim sees user space only; an attach the kernel refused them)
 * spent at least KERNEL_SAY of its on-CPU samples inside system calls (in_system_call), with
 * how to see the kernel's part (osprey attach where perf events with kernel call chains are
 * allowed). */
#define KERNEL_SAY 5.0
void ospx__report_kernel_hint(FILE *out, size_t width, const struct ospx_model *model)
{
    const struct ospx_raw *raw = model->raw;
    if (model->on_cpu_samples == 0 || raw->kernel_symbol_count > 0 || raw->stack_count == 0)
        return;
    /* Per stack: 0 not looked at, 1 in a system call, 2 not. */
    unsigned char *in_call = calloc(raw->stack_count, 1);
    unsigned char *spans_read = calloc(raw->image_count ? raw->image_count : 1, 1);
    struct ospx__spans *spans = calloc(raw->image_count ? raw->image_count : 1, sizeof *spans);
    uint64_t inside = 0;
    if (in_call == NULL || spans_read == NULL || spans == NULL)
        goto done;
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *s = &raw->samples[i];
        if (s->state != 0 || s->stack >= raw->stack_count)
            continue;
        if (in_call[s->stack] == 0)
            in_call[s->stack] =
                in_system_call(raw, &raw->stacks[s->stack], spans, spans_read) ? 1 : 2;
        if (in_call[s->stack] == 1)
            inside += s->weight;
    }
    double share = 100.0 * (double)inside / (double)model->on_cpu_samples;
    if (share >= KERNEL_SAY) {
        char first[128];
        snprintf(first, sizeof first, "kernel: %.1f%% of on-CPU time was inside system calls",
                 share);
        ospx__emit_pair(out, width, NULL, first,
                        "their kernel frames: `osprey attach PID` as root, or where "
                        "kernel.perf_event_paranoid <= 1 (or with CAP_PERFMON)");
    }
done:
    for (size_t k = 0; spans != NULL && k < raw->image_count; k++)
        ospx__spans_free(&spans[k]);
    free(spans);
    free(spans_read);
    free(in_call);
}
