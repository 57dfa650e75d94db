/* symbolize.c — turns the raw pcs of a profile into source-level frames: function, file, line,
 * column, with inlined calls expanded. This file is the policy; the tools that answer are
 * backends behind one ops struct (symbolize_internal.h: symbolize-llvm.c, symbolize-atos.c,
 * symbolize-hex.c), run as child processes by child.c; which object describes an image is
 * objects.c's, the vDSO copy elf.c's.
 *
 * It owns the mapping of a pc to its image (the image whose executable range [text,
 * text + text_size) holds it; the greatest base at or below the pc only among images that
 * reported no range), the unsliding (file address = pc - slide, after the -1 that moves a
 * return address back into its call instruction), choosing the backend (llvm-symbolizer,
 * else atos on macOS, else hex), the names of frames nothing names (object+0xOFFSET), and
 * leaving out the profiler's own frames. A missing tool or object is a warning line, never a
 * failure. Separate debug information
 * (a .gnu_debuglink file beside the object, in its .debug/ folder or under
 * /usr/lib/debug/<dir>/, or /usr/lib/debug/.build-id/xx/rest.debug) is found by
 * llvm-symbolizer itself, the way gdb and perf find it.
 *
 * DESIGN: each distinct (image, file address) is asked once. Every stack position first
 * becomes a lookup (image, file address); per image the addresses are sorted and made unique,
 * symbolized in one pass, and the answers are found again by binary search. Frames are
 * interned in a hash table keyed by (name, file, line, column, image).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "osp_python.h"
#include "osp_unwind_step.h"
#include "ospc.h"
#include "symbolize_internal.h"

/* No image: the lookup's image index. */
#define NO_IMAGE UINT32_MAX

/* Interned frames: common/'s hash index over symbols->frames. */
struct frame_table {
    struct ospx_symbols *symbols;
    size_t frame_capacity;
    struct ospc_index index;
};

void ospx__symbolize_warn(struct ospx__symbolizer *state, const char *fmt, ...)
{
    FILE *out = state->options != NULL && state->options->warnings != NULL
                    ? state->options->warnings
                    : stderr;
    if (state->progress_visible) {
        fprintf(stderr, "\r\033[K");
        state->progress_visible = 0;
    }
    char text[2048];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    ospc_printable(text); /* paths in warnings come from the profile */
    fprintf(out, "osprey: %s\n", text);
    fflush(out);
}

void ospx__symbolize_progress(struct ospx__symbolizer *state, int final)
{
    if (state->options == NULL || !state->options->progress || state->addresses_total == 0)
        return;
    if (!final && !state->progress_visible) {
        /* Only a wait worth saying: nothing for a profile symbolized in under a second. */
        int delay =
            state->options->progress_delay_ms == 0 ? 1000 : state->options->progress_delay_ms;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double elapsed_ms = (double)(now.tv_sec - state->started.tv_sec) * 1e3 +
                            (double)(now.tv_nsec - state->started.tv_nsec) / 1e6;
        if (delay > 0 && elapsed_ms < delay)
            return;
    }
    if (final) {
        if (state->progress_visible)
            fprintf(stderr, "\r\033[K");
        state->progress_visible = 0;
        return;
    }
    if (state->addresses_done - state->progress_shown < 500 &&
        state->addresses_done != state->addresses_total && state->progress_visible)
        return;
    state->progress_shown = state->addresses_done;
    fprintf(stderr, "\rosprey: symbolizing %zu/%zu addresses", state->addresses_done,
            state->addresses_total);
    fflush(stderr);
    state->progress_visible = 1;
}

/* ---- choosing the backend ---- */

/* The full path of an executable `name` (common/'s PATH search), malloc'd; NULL when none. */

/* The name /proc/kallsyms gave the kernel frame at pc (the raw file's kernel_symbols), or
 * NULL. */
static const char *kernel_name(const struct ospx_raw *raw, uint64_t pc)
{
    size_t at =
        ospc_rows_before(raw->kernel_symbols, raw->kernel_symbol_count, sizeof *raw->kernel_symbols,
                         offsetof(struct ospx_kernel_symbol, pc), pc, false);
    return at < raw->kernel_symbol_count && raw->kernel_symbols[at].pc == pc
               ? raw->kernel_symbols[at].name
               : NULL;
}
static char *find_executable(const char *name)
{
    return ospc_find_on_path(name);
}

void ospx__choose_backend(struct ospx__symbolizer *state)
{
    const char *requested = state->options != NULL ? state->options->symbolizer : NULL;
    if (requested != NULL) {
        state->tool_path = find_executable(requested);
        if (state->tool_path != NULL) {
            state->backend = &ospx__backend_llvm;
            return;
        }
        ospx__symbolize_warn(state, "symbolizer %s not found; looking for llvm-symbolizer on PATH",
                             requested);
    }
    state->tool_path = find_executable("llvm-symbolizer");
    for (int version = 20; state->tool_path == NULL && version >= 10; version--) {
        char name[32];
        snprintf(name, sizeof name, "llvm-symbolizer-%d", version);
        state->tool_path = find_executable(name);
    }
    if (state->tool_path != NULL) {
        state->backend = &ospx__backend_llvm;
        return;
    }
    state->tool_path = find_executable("atos");
    if (state->tool_path != NULL) {
        state->backend = &ospx__backend_atos;
        return;
    }
    state->backend = &ospx__backend_hex;
}

/* ---- answers ---- */

void ospx__answer_free(struct ospx__answer *answer)
{
    for (size_t i = 0; i < answer->count; i++)
        OSPC_FREE_ALL(answer->chain[i].name, answer->chain[i].file);
    OSPC_FREE_ALL(answer->chain, answer->interned);
    answer->chain = NULL;
    answer->interned = NULL;
    answer->interned_ready = false;
    answer->count = 0;
}

int ospx__answer_add(struct ospx__answer *answer, const char *name, const char *file, int line,
                     int column)
{
    struct ospx__location *chain =
        realloc(answer->chain, (answer->count + 1) * sizeof *answer->chain);
    if (chain == NULL)
        return -ENOMEM;
    answer->chain = chain;
    struct ospx__location *location = &chain[answer->count];
    char *demangled = ospx__demangle_leftover(name);
    location->name = demangled != NULL                 ? demangled
                     : name != NULL && name[0] != '\0' ? strdup(name)
                                                       : NULL;
    ospx__name_as_written(location->name);
    location->file = strdup(file != NULL ? file : "");
    location->line = line > 0 ? line : 0;
    location->column = column > 0 ? column : 0;
    answer->count++;
    if (location->file == NULL || (name != NULL && name[0] != '\0' && location->name == NULL))
        return -ENOMEM;
    return 0;
}

/* Which image a pc belongs to (ospx__image_of, ospx__stack_image): raw-generations.c. Its
 * search goes through a process's images in order, 189 M instructions of the benchmark's
 * run (50 images, twice 240,000 positions): where every image of a process has a text range
 * and no two ranges overlap, the image holding a pc is the one range holding it, found here
 * by a binary search over the ranges sorted once (the same image as that search's). */
struct image_range {
    uint64_t start, end;
    uint32_t image;
};
struct image_ranges {
    struct image_range *ranges;
    size_t count;
    bool built, usable;
};

static int compare_ranges(const void *a, const void *b)
{
    const struct image_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The sorted ranges of process `process`'s images (all the images' without processes). */
static void build_ranges(const struct ospx_raw *raw, uint32_t process, struct image_ranges *out)
{
    out->built = true;
    size_t first = 0, end = raw->image_count;
    if (process < raw->process_count) {
        first = raw->processes[process].first_image;
        end = first + raw->processes[process].image_count;
        end = end < raw->image_count ? end : raw->image_count;
    }
    out->ranges = malloc((end > first ? end - first : 1) * sizeof *out->ranges);
    if (out->ranges == NULL)
        return;
    for (size_t i = first; i < end; i++) {
        const struct ospx_image *image = &raw->images[i];
        if (image->text_size == 0 || image->text + image->text_size < image->text)
            return; /* the search's other rule (the greatest base) applies */
        out->ranges[out->count++] =
            (struct image_range){image->text, image->text + image->text_size, (uint32_t)i};
    }
    qsort(out->ranges, out->count, sizeof *out->ranges, compare_ranges);
    for (size_t i = 1; i < out->count; i++)
        if (out->ranges[i].start < out->ranges[i - 1].end)
            return; /* overlapping: the first in the images' order wins there */
    out->usable = true;
}

/* ospx__stack_image(raw, stack, k), by the ranges where they are usable. `ranges` holds one
 * slot per process and one more for stacks of no listed process. */
static uint32_t stack_image(const struct ospx_raw *raw, struct image_ranges *ranges,
                            const struct ospx_stack *stack, size_t k)
{
    uint64_t pc = ospx__lookup_pc(stack, k);
    if (stack->timed || osp_unwind_left_out_is(pc))
        return ospx__stack_image(raw, stack, k);
    uint32_t process =
        stack->process < raw->process_count ? stack->process : (uint32_t)raw->process_count;
    struct image_ranges *own = &ranges[process];
    if (!own->built)
        build_ranges(raw, process, own);
    if (!own->usable)
        return ospx__stack_image(raw, stack, k);
    size_t after = ospc_rows_before(own->ranges, own->count, sizeof *own->ranges,
                                    offsetof(struct image_range, start), pc, true);
    return after > 0 && pc < own->ranges[after - 1].end ? own->ranges[after - 1].image : NO_IMAGE;
}

/* Collect each image's distinct file addresses, sorted. */
static int collect_addresses(struct ospx__symbolizer *state)
{
    const struct ospx_raw *raw = state->raw;
    for (size_t i = 0; i < raw->stack_count; i++) {
        const struct ospx_stack *stack = &raw->stacks[i];
        for (size_t k = 0; k < stack->depth; k++) {
            uint64_t pc = ospx__lookup_pc(stack, k);
            uint32_t image = stack_image(raw, state->ranges, stack, k);
            if (image == NO_IMAGE)
                continue;
            struct ospx__image_work *work = &state->work[image];
            if (ospx__grow(&work->addresses, &work->capacity, work->count, sizeof *work->addresses,
                           64) != 0)
                return -ENOMEM;
            work->addresses[work->count++] = pc - raw->images[image].slide;
        }
    }
    for (size_t i = 0; i < raw->image_count; i++) {
        struct ospx__image_work *work = &state->work[i];
        if (work->count == 0)
            continue;
        size_t unique = work->count = ospc_sort_unique(work->addresses, work->count);
        work->answers = calloc(unique, sizeof *work->answers);
        if (work->answers == NULL)
            return -ENOMEM;
        state->addresses_total += unique;
    }
    return 0;
}

static struct ospx__answer *find_answer(struct ospx__image_work *work, uint64_t address)
{
    size_t at =
        ospc_rows_before(work->addresses, work->count, sizeof *work->addresses, 0, address, false);
    return at < work->count && work->addresses[at] == address ? &work->answers[at] : NULL;
}

/* ---- interning frames ---- */

static uint64_t hash_frame(const char *name, const char *file, int line, int column,
                           const char *image)
{
    uint64_t hash = OSPC_HASH_SEED;
    hash = ospc_hash_bytes(hash, name, strlen(name) + 1);
    hash = ospc_hash_bytes(hash, file, strlen(file) + 1);
    hash = ospc_hash_bytes(hash, image, strlen(image) + 1);
    hash = ospc_hash_bytes(hash, &line, sizeof line);
    return ospc_hash_bytes(hash, &column, sizeof column);
}

static uint64_t hash_of_frame(uint32_t entry, void *context)
{
    const struct ospx_frame *frame = &((const struct ospx_symbols *)context)->frames[entry];
    return hash_frame(frame->name, frame->file, frame->line, frame->column, frame->image);
}

/* The index of the frame (name, file, line, column, image), added when new. */
static int intern_frame(struct frame_table *table, const char *name, const char *file, int line,
                        int column, const char *image, uint64_t address, uint32_t *index)
{
    struct ospx_symbols *symbols = table->symbols;
    if (table->index.slots == NULL && ospc_index_init(&table->index, 1024) != 0)
        return -ENOMEM;
    size_t slot = ospc_index_start(&table->index, hash_frame(name, file, line, column, image));
    for (uint32_t entry; (entry = ospc_index_entry(&table->index, slot)) != UINT32_MAX;
         slot = ospc_index_next(&table->index, slot)) {
        const struct ospx_frame *frame = &symbols->frames[entry];
        if (frame->line == line && frame->column == column && strcmp(frame->name, name) == 0 &&
            strcmp(frame->file, file) == 0 && strcmp(frame->image, image) == 0) {
            *index = entry;
            return 0;
        }
    }
    if (ospx__grow(&symbols->frames, &table->frame_capacity, symbols->frame_count,
                   sizeof *symbols->frames, 256) != 0)
        return -ENOMEM;
    struct ospx_frame *frame = &symbols->frames[symbols->frame_count];
    *frame = (struct ospx_frame){.name = strdup(name),
                                 .file = strdup(file),
                                 .line = line,
                                 .column = column,
                                 .image = strdup(image),
                                 .address = address};
    symbols->frame_count++;
    if (frame->name == NULL || frame->file == NULL || frame->image == NULL)
        return -ENOMEM;
    *index = (uint32_t)symbols->frame_count - 1;
    return ospc_index_insert(&table->index, slot, *index, hash_of_frame, symbols);
}

/* A frame of the profiler itself: a function of the shim (osp__* internals, the osp_prof_*
 * API) wherever it was linked, or anything in the preload library libospreyprof*. */
static int is_profiler_frame(const char *name, const char *image_path, const char *file)
{
    const char *slash = strrchr(image_path, '/');
    const char *base = slash != NULL ? slash + 1 : image_path;
    if (strncmp(name, "osp__", 5) == 0 || strncmp(name, "osp_prof_", 9) == 0 ||
        strncmp(base, "libospreyprof", 13) == 0)
        return 1;
#ifdef OSPX_SHIM_SOURCE_DIR
    /* Linked into the program (the static archive `osprey FILE.c` builds with), the shim's
     * frames are in the program's image, and its static helpers and interposed wrappers
     * (`nanosleep` at shim/guard.c) carry no prefix: its debug info names its own sources. */
    if (file != NULL && file[0] == '/') {
        char normalized[4096];
        ospx__normalize_path(normalized, sizeof normalized, file);
        size_t length = strlen(OSPX_SHIM_SOURCE_DIR);
        if (strncmp(normalized, OSPX_SHIM_SOURCE_DIR, length) == 0 && normalized[length] == '/')
            return 1;
    }
#else
    (void)file;
#endif
    return 0;
}

/* The span of the function holding file address `address` of image `image`, from its
 * object's unwind tables (read once per image, when first asked), or NULL. Not for the
 * running kernel's vDSO, whose unnamed code is "[vdso]". */
static const struct ospx__span *function_span(struct ospx__symbolizer *state, uint32_t image,
                                              uint64_t address)
{
    struct ospx__image_work *work = &state->work[image];
    if (work->running_vdso || state->objects == NULL)
        return NULL;
    if (!work->spans_read) {
        work->spans_read = true;
        if (ospx__spans_read(state->objects[image].path, &work->spans) != 0)
            return NULL; /* out of memory: the pc, as before */
    }
    return ospx__spans_find(&work->spans, address);
}

/* The JIT symbol of process `process` that holds `pc` (the raw file's "jit", by process then
 * start), or NULL. */
static const struct ospx_jit_symbol *jit_symbol(const struct ospx_raw *raw, uint32_t process,
                                                uint64_t pc)
{
    size_t low = 0, high = raw->jit_count;
    while (low < high) { /* the first symbol after (process, pc) */
        size_t middle = low + (high - low) / 2;
        const struct ospx_jit_symbol *s = &raw->jit[middle];
        if (s->process < process || (s->process == process && s->start <= pc))
            low = middle + 1;
        else
            high = middle;
    }
    /* Symbols may overlap (a map's later line for reused code): a few before it are looked at. */
    for (size_t k = low; k > 0 && low - k < 8; k--) {
        const struct ospx_jit_symbol *s = &raw->jit[k - 1];
        if (s->process != process)
            break;
        if (pc - s->start < s->size)
            return s;
    }
    return NULL;
}

/* Whether the collector named any Python frame of process `process`: only then is a pc with
 * the pseudo-pc's bit that no symbol names one of its Python frames (its code object freed
 * before it was read). Elsewhere it is a word a walk read past the stack's real end (bzip2's
 * outermost "return address" 0x6964517257384266, ASCII from its stack), shown as the number.
 * The Python names sort after every JIT symbol of their process (bit 62), so the process's
 * last symbol says. */
static bool process_has_python(const struct ospx_raw *raw, uint32_t process)
{
    size_t low = 0, high = raw->jit_count;
    while (low < high) { /* the first symbol of a later process */
        size_t middle = low + (high - low) / 2;
        if (raw->jit[middle].process <= process)
            low = middle + 1;
        else
            high = middle;
    }
    return low > 0 && raw->jit[low - 1].process == process && raw->jit[low - 1].python;
}

/* Whether return address k of a stack is a word no walk should have taken for one: in the first
 * page, or above every user address space (2^56: x86_64's five-level tables, aarch64's 52 bits), no
 * kernel frame (bit 63), no marker of frames left out and no Python frame of a process with
 * Python. Seen: the strings above
 * main's frame read as its return address, bzip2's 0x6964517257384266 ("fB8WrQdi"), a Go program's
 * 0x67636e6970736f67 ("gospincg"). */
static bool past_the_frames(const struct ospx_raw *raw, const struct ospx_stack *stack, size_t k)
{
    uint64_t pc = stack->pcs[k];
    if (k > 0 && pc < 4096) /* the first page, never mapped for code: Go's sigreturn's "0x7" */
        return true;
    return k > 0 && (pc >> 56) != 0 && (pc >> 63) == 0 && !osp_unwind_left_out_is(pc) &&
           !(osp_py_pc_is(pc) && process_has_python(raw, stack->process));
}

/* Whether a frame is one of Go's stack switches, runtime.mcall, runtime.systemstack or
 * runtime.morestack, or of its vDSO calls, time.now and runtime.nanotime1 (".abi0" or not): they
 * write the stack pointer, and Go's own traceback ends at them (SPWRITE). What a walk found past
 * one on a thread's g0 stack is the words above it: runtime.newproc.abi0, then &runtime.g0 (a
 * data address) as a return address, in 0.7-2.2% of a Go program's stacks; past time.now, a
 * goroutine stack's word (`0xc000123380`: 0.6-1.0% of a net/http server's). */
static bool go_stack_switch(const char *name)
{
    size_t length = strlen(name);
    if (length > 5 && strcmp(name + length - 5, ".abi0") == 0)
        length -= 5;
    return (length == 13 && strncmp(name, "runtime.mcall", 13) == 0) ||
           (length == 19 && strncmp(name, "runtime.systemstack", 19) == 0) ||
           (length == 17 && strncmp(name, "runtime.morestack", 17) == 0) ||
           (length == 8 && strncmp(name, "time.now", 8) == 0) ||
           (length == 17 && strncmp(name, "runtime.nanotime1", 17) == 0);
}

/* Whether a leaf is Go's runtime.asyncPreempt (".abi0" or not). Go's SIGURG handler preempts a
 * goroutine by pushing the pc it interrupted and resuming at asyncPreempt; a SIGPROF that came
 * while that handler ran (every signal blocked) is delivered at its return, so the sample lands
 * on asyncPreempt's first instruction, and its time, the interrupted code's, with it. Such a
 * leaf is left out: the pc Go pushed is the sample's. (A cgo Go program at load 15: 9.8-14% of
 * its samples there, perf none in the same run.) */
static bool go_async_preempt(const char *name)
{
    return strcmp(name, "runtime.asyncPreempt") == 0 ||
           strcmp(name, "runtime.asyncPreempt.abi0") == 0;
}

/* Expand raw stack i into frames, leaf first, inline levels innermost first. A stack ends before
 * a return address that cannot be one (past_the_frames): the walk had left the frames there;
 * and after one of Go's stack switches (go_stack_switch), where Go's traceback ends too. */
static int build_stack(struct ospx__symbolizer *state, struct frame_table *table, size_t i)
{
    const struct ospx_raw *raw = state->raw;
    const struct ospx_stack *stack = &raw->stacks[i];
    struct ospx_symbols *symbols = table->symbols;
    size_t capacity = stack->depth, count = 0;
    struct ospx_slot *slots = malloc(capacity * sizeof *slots);
    symbols->stack_slots[i] = slots;
    if (slots == NULL)
        return -ENOMEM;
    for (size_t k = 0; k < stack->depth && !past_the_frames(raw, stack, k); k++) {
        if (count > 0 && go_stack_switch(symbols->frames[slots[count - 1].frame].name))
            break;
        if (k == 1 && count == 1 && go_async_preempt(symbols->frames[slots[0].frame].name))
            count = 0;
        uint64_t pc = ospx__lookup_pc(stack, k);
        uint32_t image = stack_image(raw, state->ranges, stack, k);
        const char *image_path = image != NO_IMAGE     ? raw->images[image].path
                                 : stack->pcs[k] >> 63 ? "[kernel.kallsyms]" /* as perf names it */
                                                       : "";
        struct ospx__answer *answer =
            image != NO_IMAGE ? find_answer(&state->work[image], pc - raw->images[image].slide)
                              : NULL;
        size_t levels = answer != NULL && answer->count > 0 ? answer->count : 1;
        if (count + levels > capacity) {
            capacity = (count + levels) * 2;
            slots = realloc(symbols->stack_slots[i], capacity * sizeof *slots);
            if (slots == NULL)
                return -ENOMEM;
            symbols->stack_slots[i] = slots;
        }
        /* An answer seen before gives the same frames (hundreds of stacks share a pc):
         * interned once, not hashed and compared again per stack. */
        if (answer != NULL && answer->interned_ready &&
            (answer->interned_named || answer->interned_pc == stack->pcs[k])) {
            const struct ospx__interned *known = levels == 1 ? &answer->one : answer->interned;
            for (size_t level = 0; level < levels; level++) {
                if (known[level].frame == OSPX_SKIPPED_FRAME)
                    continue;
                slots[count++] =
                    (struct ospx_slot){known[level].frame, known[level].line, (uint32_t)k};
            }
            symbols->stack_depths[i] = count;
            continue;
        }
        bool named = answer != NULL && answer->count > 0;
        for (size_t level = 0; named && level < levels; level++)
            named = answer->chain[level].name != NULL;
        struct ospx__interned *interned = NULL;
        if (answer != NULL) {
            free(answer->interned);
            answer->interned = NULL;
            answer->interned_ready = false;
            interned = levels == 1 ? &answer->one : malloc(levels * sizeof *interned);
        }
        /* A frame nothing names is its object and the object's own address, as perf prints
         * it ("libc.so.6+0x2ab18b", what addr2line -e takes), the same in every run whatever
         * the load address; the raw pc only when no image holds it. The address is its
         * function's start when the object's unwind tables say where that is (a stripped
         * object's local functions), so that a function's pcs are one function. */
        char hex[1100];
        if (image != NO_IMAGE && image_path[0] != '\0') {
            uint64_t address = stack->pcs[k] - raw->images[image].slide;
            const struct ospx__span *span =
                named ? NULL : function_span(state, image, pc - raw->images[image].slide);
            snprintf(hex, sizeof hex, "%.256s+0x%" PRIx64, ospx__basename(image_path),
                     span != NULL ? span->start : address);
            /* A stripped program's entry point: the C runtime's `_start`, as it is named where
             * the symbols were kept (the root of every main thread's stack). */
            if (span != NULL && span->start != 0 && span->start == state->work[image].spans.entry)
                snprintf(hex, sizeof hex, "_start");
        } else if (stack->pcs[k] >> 63) { /* a kernel frame (an attach's), named as perf does */
            const char *kernel = kernel_name(raw, stack->pcs[k]);
            if (kernel != NULL)
                snprintf(hex, sizeof hex, "[k] %.250s", kernel);
            else
                snprintf(hex, sizeof hex, "[k] 0x%" PRIx64, stack->pcs[k]);
        } else {
            snprintf(hex, sizeof hex, "0x%" PRIx64, stack->pcs[k]);
            /* Code no object holds, named by the JIT's own map: marked so in every output,
             * its object "[jit]". */
            const struct ospx_jit_symbol *jit = jit_symbol(raw, stack->process, pc);
            if (jit != NULL) {
                snprintf(hex, sizeof hex, "%.1000s%s", jit->name,
                         jit->python ? OSPX_PY_MARK : OSPX_JIT_MARK);
                image_path = jit->python ? OSPX_PY_IMAGE : OSPX_JIT_IMAGE;
            } else if (osp_unwind_left_out_is(stack->pcs[k])) {
                /* The frames a walk deeper than its record left out, as one frame. */
                snprintf(hex, sizeof hex, "[\u2026 %" PRIu64 " frames]",
                         osp_unwind_left_out_count(stack->pcs[k]));
            } else if (osp_py_pc_is(stack->pcs[k]) && process_has_python(raw, stack->process)) {
                snprintf(hex, sizeof hex, "[py] 0x%" PRIx64, osp_py_pc_code(stack->pcs[k]));
                image_path = OSPX_PY_IMAGE;
            }
        }
        for (size_t level = 0; level < levels; level++) {
            const struct ospx__location *location =
                answer != NULL && answer->count > 0 ? &answer->chain[level] : NULL;
            const char *name = location != NULL && location->name != NULL ? location->name : hex;
            /* A name read from another build than the one that ran (--ignore-build-id) says
             * so wherever it is shown. */
            char marked[1100];
            if (name != hex && image != NO_IMAGE && state->objects[image].other_build) {
                snprintf(marked, sizeof marked, "%.1000s [other build]", name);
                name = marked;
            }
            /* Code of the running kernel's vDSO that no symbol covers (a local clock-read
             * helper): still the vDSO's time, named as perf names its module. */
            if (name == hex && image != NO_IMAGE && state->work[image].running_vdso)
                name = "[vdso]";
            /* The profiler's own frames are not the program's: left out at every position,
             * so a wrapper's time goes to its caller and the shim's start-up never shows. */
            if (is_profiler_frame(name, image_path, location != NULL ? location->file : NULL)) {
                if (interned != NULL)
                    interned[level] = (struct ospx__interned){OSPX_SKIPPED_FRAME, 0};
                continue;
            }
            const char *file = location != NULL ? location->file : "";
            int line = location != NULL ? location->line : 0;
            int column = location != NULL ? location->column : 0;
            uint32_t frame;
            int rc =
                intern_frame(table, name, file, line, column, image_path, stack->pcs[k], &frame);
            if (rc < 0) {
                if (answer != NULL && interned != &answer->one)
                    free(interned);
                return rc;
            }
            if (interned != NULL)
                interned[level] = (struct ospx__interned){frame, line};
            slots[count++] = (struct ospx_slot){frame, line, (uint32_t)k};
        }
        if (interned != NULL) {
            answer->interned = interned != &answer->one ? interned : NULL;
            answer->interned_ready = true;
            answer->interned_pc = stack->pcs[k];
            answer->interned_named = named;
        }
        symbols->stack_depths[i] = count;
    }
    return 0;
}

static int build_symbols(struct ospx__symbolizer *state, struct ospx_symbols *out)
{
    const struct ospx_raw *raw = state->raw;
    size_t stacks = raw->stack_count > 0 ? raw->stack_count : 1;
    out->stack_slots = calloc(stacks, sizeof *out->stack_slots);
    out->stack_depths = calloc(stacks, sizeof *out->stack_depths);
    if (out->stack_slots == NULL || out->stack_depths == NULL)
        return -ENOMEM;
    out->stack_count = raw->stack_count;
    struct frame_table table = {.symbols = out};
    int rc = 0;
    for (size_t i = 0; i < raw->stack_count && rc == 0; i++)
        rc = build_stack(state, &table, i);
    ospc_index_free(&table.index);
    return rc;
}

/* The object that describes image i (objects.c), found once per image that has addresses to
 * look up; NULL when the only file there is another object than the one that ran (said in one
 * line: its frames stay hex). */
static int find_objects(struct ospx__symbolizer *state)
{
    const struct ospx_raw *raw = state->raw;
    const char *binary = state->options != NULL ? state->options->binary : NULL;
    const char *symfs = state->options != NULL ? state->options->symfs : NULL;
    for (size_t i = 0; i < raw->image_count; i++) {
        if (state->work[i].count == 0)
            continue;
        int use_other_build = state->options != NULL && state->options->use_other_build;
        int rc = ospx__find_object(raw, i, binary, symfs, use_other_build, &state->objects[i]);
        if (rc < 0)
            return rc;
        const struct ospx__object *object = &state->objects[i];
        if (object->other_build)
            ospx__symbolize_warn(
                state,
                "%s is not the object that ran (build id %s, the profile's %s), used anyway "
                "(--ignore-build-id): its names are marked [other build] and may be wrong",
                object->mismatched, object->mismatched_id, raw->images[i].build_id);
        else if (object->path == NULL)
            ospx__symbolize_warn(
                state,
                "%s is not the object that ran (build id %s, the profile's %s): "
                "rebuilt or replaced since; its frames are shown as object+0xOFFSET "
                "(--symfs DIR finds the one that ran)",
                object->mismatched, object->mismatched_id, raw->images[i].build_id);
    }
    return 0;
}

static const char *object_of(const struct ospx__symbolizer *state, size_t i)
{
    return state->objects[i].path;
}

int ospx_symbolize(const struct ospx_raw *raw, const struct ospx_symbolize_options *options,
                   struct ospx_symbols *out, struct ospx_error *err)
{
    memset(out, 0, sizeof *out);
    struct ospx__symbolizer state = {.raw = raw, .options = options};
    clock_gettime(CLOCK_MONOTONIC, &state.started);
    state.work = calloc(raw->image_count > 0 ? raw->image_count : 1, sizeof *state.work);
    state.objects = calloc(raw->image_count > 0 ? raw->image_count : 1, sizeof *state.objects);
    state.ranges = calloc(raw->process_count + 1, sizeof *state.ranges);
    int rc = state.work != NULL && state.objects != NULL && state.ranges != NULL
                 ? collect_addresses(&state)
                 : -ENOMEM;
    if (rc == 0)
        rc = find_objects(&state);
    if (rc == 0 && state.addresses_total > 0) {
        ospx__choose_backend(&state);
        if (state.backend == &ospx__backend_hex)
            ospx__symbolize_warn(&state,
                                 "no llvm-symbolizer or atos found on PATH; frames are shown "
                                 "as hex addresses (install llvm to get names and lines)");
    }
    ospx__llvm_adopt_prestarted(&state, options != NULL ? options->prestarted : NULL);
    if (rc == 0 && state.backend != NULL && state.backend->begin != NULL)
        state.backend->begin(&state);
    for (size_t i = 0; rc == 0 && i < raw->image_count; i++) {
        if (state.work[i].count == 0)
            continue;
        if (object_of(&state, i) == NULL) { /* another object than the one that ran */
            state.addresses_done += state.work[i].count;
            continue;
        }
        rc = state.backend->symbolize_image(&state, &raw->images[i], &state.work[i],
                                            object_of(&state, i));
    }
    if (state.backend != NULL && state.backend->close_input != NULL)
        state.backend->close_input(&state);
    ospx__symbolize_progress(&state, 1);
    if (rc == 0 && state.missing_objects > 0)
        ospx__symbolize_warn(&state,
                             "%zu object file%s not found (first: %s); %s frames are shown as "
                             "object+0xOFFSET (--binary or --symfs DIR finds a moved one)",
                             state.missing_objects, state.missing_objects == 1 ? "" : "s",
                             state.first_missing_object,
                             state.missing_objects == 1 ? "its" : "their");
    if (rc == 0)
        rc = build_symbols(&state, out);
    if (state.backend != NULL && state.backend->finish != NULL)
        state.backend->finish(&state);
    out->unresolved_images = state.missing_objects;
    for (size_t i = 0; state.objects != NULL && i < raw->image_count; i++)
        out->unresolved_images += state.work[i].count > 0 && state.objects[i].path == NULL;

    for (size_t i = 0; state.work != NULL && i < raw->image_count; i++) {
        for (size_t k = 0; state.work[i].answers != NULL && k < state.work[i].count; k++)
            ospx__answer_free(&state.work[i].answers[k]);
        free(state.work[i].answers);
        free(state.work[i].addresses);
        ospx__spans_free(&state.work[i].spans);
    }
    free(state.work);
    for (size_t i = 0; state.ranges != NULL && i <= raw->process_count; i++)
        free(state.ranges[i].ranges);
    free(state.ranges);
    for (size_t i = 0; state.objects != NULL && i < raw->image_count; i++)
        ospx__object_free(&state.objects[i]);
    free(state.objects);
    free(state.tool_path);
    if (rc < 0) {
        ospx_symbols_free(out);
        return ospx_error_set(err, -rc, raw->source_path, 0, 0, "symbolizing: %s", strerror(-rc));
    }
    return 0;
}

void ospx_symbols_free(struct ospx_symbols *symbols)
{
    if (symbols == NULL)
        return;
    for (size_t i = 0; i < symbols->frame_count; i++)
        OSPC_FREE_ALL(symbols->frames[i].name, symbols->frames[i].file, symbols->frames[i].image);
    for (size_t i = 0; symbols->stack_slots != NULL && i < symbols->stack_count; i++)
        free(symbols->stack_slots[i]);
    OSPC_FREE_ALL(symbols->frames, symbols->stack_slots, symbols->stack_depths);
    memset(symbols, 0, sizeof *symbols);
}
