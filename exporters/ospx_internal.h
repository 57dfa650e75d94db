/* ospx_internal.h — helpers shared by the model, the writers and the report; not part of the
 * library's public API (ospx.h). */
#ifndef OSPX_INTERNAL_H
#define OSPX_INTERNAL_H

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ospc.h"
#include "ospx.h"

/* The synthetic leaf frame the flame-graph exports give a waiting sample. */
#define OSPX_WAITING_FRAME "(waiting)"
#define OSPX_NO_FUNCTION   UINT32_MAX
/* A build id in hex, and its NUL (as common/'s OSPC_BUILD_ID_SIZE). */
#define OSPX_BUILD_ID_TEXT 129

/* NULL-tolerant view of a borrowed string. */
static inline const char *ospx__str(const char *s)
{
    return s != NULL ? s : "";
}

/* ---- processes (run.c merges a run's raw files into one struct ospx_raw) ---- */

/* How many processes the raw profile holds: 1 for one made by hand without processes. */
static inline size_t ospx__process_count(const struct ospx_raw *raw)
{
    return raw->process_count > 0 ? raw->process_count : 1;
}
/* The run's on-CPU periods and the CPU time measured for it (one process: its clock, else its
 * threads' sum; several: those with samples), from raw's rows as they are. 0 or -ENOMEM. */
int ospx__run_sampling(const struct ospx_raw *raw, struct ospx_run_sampling *out);
static inline int64_t ospx__process_pid(const struct ospx_raw *raw, uint32_t process)
{
    return process < raw->process_count ? raw->processes[process].pid : raw->pid;
}
static inline const char *ospx__process_exe(const struct ospx_raw *raw, uint32_t process)
{
    return ospx__str(process < raw->process_count ? raw->processes[process].exe : raw->exe);
}
/* The row process `process` is shown in: itself, or after ospx_run_merge_processes the first
 * of its command. */
static inline uint32_t ospx__process_row(const struct ospx_raw *raw, uint32_t process)
{
    return raw->merged_processes && process < raw->process_count
               ? raw->processes[process].merged_into
               : process;
}
/* The process's command, as perf's comm: the raw file's "comm" (the kernel's name: a link's
 * name, redis-server, where exe is the file it points to, redis-check-rdb), else its exe's base
 * name ("?" when none); `process` past the processes: the raw file's own. */
const char *ospx__process_comm(const struct ospx_raw *raw, uint32_t process);
/* The label a thread is shown by (the report's thread lines, the trace's tracks): its own, or,
 * for a thread that never named itself ("thread", the shim's word), its process's command, as
 * the kernel (its comm) and perf name it. A runtime's fiber keeps its label. */
const char *ospx__fiber_label(const struct ospx_model *model, size_t index);
/* 1 when the outputs name processes: the raw profile holds more than one. */
static inline int ospx__several_processes(const struct ospx_raw *raw)
{
    return raw->process_count > 1;
}
/* A process as the outputs name it: "<comm>-<pid>" as perf script's stacks folded with
 * --pid begin, or after ospx_run_merge_processes "<comm>" alone. */
void ospx__process_name(const struct ospx_raw *raw, uint32_t process, char *out, size_t size);
/* A thread's name where it is a root (folded stacks, speedscope profiles, the html page):
 * "<name>-<tid>" as perf names a thread, <name> its label when it has one of its own (a name
 * set with pthread_setname_np, a runtime's label), else its process's command; a runtime's
 * fiber, or a thread whose tid the raw file does not give, has its fiber id instead of the
 * tid ("hotspot-11512", "sieve-11513", "effect--1"). */
int ospx__thread_root(const struct ospx_raw *raw, size_t thread, char *out, size_t size);
/* (It returns 1 when the name is the process's command.) A thread's name in the outputs
 * (speedscope profiles, the .cpuprofile's fiber nodes, the html page's fiber selector): its
 * root name, followed by the label when the name is the command's ("hotspot-4242 (main)",
 * "hotspot-4243 (thread)", "worker-4244"), with several processes preceded by its process,
 * "<comm>-<pid>: <root>". */
void ospx__thread_title(const struct ospx_model *model, size_t thread, char *out, size_t size);

/* ---- raw-generations.c: which image a pc belongs to ---- */

/* The image raw pc `pc` of process `process` belongs to (among that process's images: the one
 * whose text range holds it, else among images with no range the greatest base at or below
 * it); UINT32_MAX when none. */
uint32_t ospx__image_of(const struct ospx_raw *raw, uint32_t process, uint64_t pc);
/* The same at time t (the samples' t_rel_ns) when objects were replaced at pc's address:
 * among the images whose text range holds pc, those not gone by t; of these the latest seen
 * loaded by t, else the earliest seen loaded after it (an object is seen some time after its
 * load, never before). As ospx__image_of when none is left. */
uint32_t ospx__image_at(const struct ospx_raw *raw, uint32_t process, uint64_t pc, uint64_t t);
/* The image of position k of a stack (its pc, or a return address one byte back), at the
 * stack's time when it is timed. */
uint32_t ospx__stack_image(const struct ospx_raw *raw, const struct ospx_stack *stack, size_t k);
/* The address looked up for stack position k: return addresses (k >= 1) one byte back. */
uint64_t ospx__lookup_pc(const struct ospx_stack *stack, size_t k);

/* ---- objects.c: which object file describes an image ---- */

struct ospx__object {
    /* the object to read: the recorded path, --binary, or a copy found by build id (--symfs,
     * the build-id cache); NULL when the only file found is another object (mismatched) */
    const char *path;
    char *owned;            /* what path points to when it was found elsewhere; malloc'd */
    const char *mismatched; /* a file found that is not the object that ran, or NULL */
    int other_build;        /* 1: path is that file, used anyway (--ignore-build-id) */
    char mismatched_id[OSPX_BUILD_ID_TEXT];
};
/* The object for raw image `index` (objects.c explains the order). 0 or -ENOMEM. */
int ospx__find_object(const struct ospx_raw *raw, size_t index, const char *binary,
                      const char *symfs, int use_other_build, struct ospx__object *out);
void ospx__object_free(struct ospx__object *object);

/* ---- raw.c ---- */

/* ospx_raw_read of a file already open (a sibling opened by ospc_open_shared): `fd` is the
 * reader's from here on, closed whatever happens; `path` names it in errors. */
int ospx__raw_read_fd(int fd, const char *path, struct ospx_raw *out, struct ospx_error *err);
/* Free raw's tables and its own strings, not what their rows point at (freed, or moved into
 * another raw, by the caller), and zero it: the one list of what a raw holds. */
void ospx__raw_free_tables(struct ospx_raw *raw);

/* ---- elf.c ---- */

/* The vDSO has no file on disk, but every process of one running kernel maps the same one:
 * when the profile was recorded since this machine booted and our vDSO's executable span has
 * the recorded size, copy it into a temporary file at `path` (the caller unlinks it) for the
 * symbolizer. 0, -ENOENT when our vDSO cannot describe the image, or a negative errno. */
int ospx__vdso_copy(const struct ospx_raw *raw, const struct ospx_image *image, char *path,
                    size_t size);
/* 0 when `path` opens without blocking as a regular file that starts with an ELF
 * identification, and its size in *size; else -1 and why not, one short phrase, in `why`. */
int ospx__elf_check(const char *path, off_t *size, char *why, size_t why_size);
/* The regular file at `path` mapped read-only (opened without blocking), its size in *size;
 * NULL when it cannot be, or is empty. munmap frees it. */
void *ospx__map_file(const char *path, size_t *size);

/* ---- elf-symbols.c: an object's names from its dynamic symbol table, in this process ---- */

struct ospx__elf_symbol {
    uint64_t address, size;
    const char *name; /* in the mapped file */
    size_t row;       /* in the table */
};
struct ospx__elf_symbols {
    struct ospx__elf_symbol *symbols; /* one per address, sorted */
    size_t count;
    void *map; /* the object, mapped */
    size_t map_size;
};
/* The symbols llvm-symbolizer would name the addresses of the object at `path` by, when its
 * answers are those alone (no .symtab, no debug information anywhere llvm-symbolizer looks):
 * 1; 0 when llvm-symbolizer must answer (out empty); -ENOMEM. */
int ospx__elf_symbols_read(const char *path, struct ospx__elf_symbols *out);
/* llvm-symbolizer's symbol name for `address`, or NULL when it names none. */
const char *ospx__elf_symbols_name(const struct ospx__elf_symbols *symbols, uint64_t address);
/* Whether llvm-symbolizer might demangle `name` (its answer is then its own). */
bool ospx__elf_symbols_mangled(const char *name);
void ospx__elf_symbols_free(struct ospx__elf_symbols *symbols);

/* ---- spans.c: where an object's functions begin and end (its .eh_frame) ---- */

struct ospx__span {
    uint64_t start, end; /* the object's own addresses, [start, end) */
};
struct ospx__spans {
    struct ospx__span *spans; /* sorted by start */
    size_t count;
    /* An executable's entry point (e_entry of ET_EXEC, or of ET_DYN with PT_INTERP): the C
     * runtime's `_start`, which a stripped executable keeps no symbol for; 0 for a library. */
    uint64_t entry;
};
/* The function spans of the ELF object at `path` from its .eh_frame_hdr table, and its entry
 * point if it is an executable: 0 (count 0 when the file is not there, not an ELF object this
 * reads, or has no table) or -ENOMEM. */
int ospx__spans_read(const char *path, struct ospx__spans *out);
/* The span holding `address`, or NULL. */
const struct ospx__span *ospx__spans_find(const struct ospx__spans *spans, uint64_t address);
void ospx__spans_free(struct ospx__spans *spans);

/* ---- listing.c: the report's --inverted and --list ---- */

struct ospx__callers;
/* One way a leaf function was reached: its callers from the nearest out to the stack's root
 * (model function indices; a run of one function — inline levels, direct recursion — once)
 * and the periods of the leaf's self time that came this way. */
struct ospx__chain {
    const uint32_t *functions;
    size_t length;
    uint64_t self;
};
/* The caller chains of every leaf function, per model. NULL when out of memory. */
struct ospx__callers *ospx__callers_build(const struct ospx_model *model);
/* The chains of model function `function` in process `process` (the model's row of processes
 * when more than one is sampled, else 0) (*out malloc'd, the caller frees it; the chains'
 * functions stay the callers'), sorted by their functions, nearest caller first, so chains
 * that share callers are adjacent and a chain that ends sooner comes before the longer ones
 * it is a prefix of. Returns their count (0: none, or out of memory). */
size_t ospx__callers_chains(const struct ospx__callers *callers, uint32_t function,
                            uint32_t process, struct ospx__chain **out);
void ospx__callers_free(struct ospx__callers *callers);
/* 0 when `expression` compiles as a POSIX extended regex; else -EINVAL with `err`. */
int ospx__listing_check(const char *expression, struct ospx_error *err);
/* pprof -list: the source lines of the functions matching `expression`, with their flat and
 * cumulative time. Returns 0 or a negative errno. */
int ospx__print_listing(FILE *out, size_t width, const struct ospx_model *model,
                        const char *expression);

/* ---- atomic_file.c ---- */

/* A file being written: `stream` writes common/'s atomic file (a temporary file beside
 * `path`); commit makes it `path` (fsync, rename, fsync of the directory), abort removes it.
 * The struct must stay where it is while open (the stream points at it). */
struct ospx__atomic_file {
    FILE *stream;
    struct ospc_atomic file;
    const char *path;       /* borrowed; must outlive the atomic file */
    off_t written, flushed; /* bytes written, and how far writeback has been started */
    char *buffer;           /* the stream's buffer (NULL: stdio's own) */
};

int ospx__atomic_open(struct ospx__atomic_file *file, const char *path, struct ospx_error *err);
/* Flush, fsync, close and rename into place. On failure the temporary file is removed. */
int ospx__atomic_commit(struct ospx__atomic_file *file, struct ospx_error *err);
/* Close and remove the temporary file; safe to call after a failed commit. */
void ospx__atomic_abort(struct ospx__atomic_file *file);
/* A JSON string for `text`; bytes that are not valid UTF-8 become '?' (jansson refuses them). */
json_t *ospx__json_string(const char *text);
/* `text` as a quoted, escaped JSON string (malloc'd), for writers that stream their output. */
char *ospx__json_quote(const char *text);
/* Unsigned integer `value` written in decimal, quickly (the big arrays are millions of them). */
void ospx__put_uint(FILE *stream, uint64_t value);
/* Dump `root` (stolen, even on failure) to `path` atomically, followed by a newline. */
int ospx__write_json(json_t *root, const char *path, size_t flags, struct ospx_error *err);

/* ---- calltree.c ---- */

enum ospx__node_kind { OSPX_NODE_ROOT, OSPX_NODE_FIBER, OSPX_NODE_FUNCTION, OSPX_NODE_WAITING };

#define OSPX_NO_NODE UINT32_MAX

struct ospx__node {
    enum ospx__node_kind kind;
    uint32_t value; /* fiber index or function index */
    uint32_t parent;
    uint32_t first_child, last_child, next_sibling;
    uint64_t hits;
    uint32_t id; /* 1-based, pre-order */
};

/* The call tree (calltree.c). */
struct ospx__tree {
    struct ospx__node *nodes;
    size_t count, capacity;
    struct ospc_index index; /* (parent, kind, value) -> node; the root is nobody's child */
};

/* An empty tree (its root) with room for `expected` nodes before it grows. */
int ospx__tree_init(struct ospx__tree *tree, size_t expected);
/* How many nodes a call tree of the model's samples may have: one per frame of every stack per
 * thread running it (usually each stack is one thread's), the fibers and their (idle) nodes. */
size_t ospx__tree_estimate(const struct ospx_model *model);
/* The child of `parent` for (kind, value), created when missing; OSPX_NO_NODE when out of
 * memory. */
uint32_t ospx__tree_child(struct ospx__tree *tree, uint32_t parent, enum ospx__node_kind kind,
                          uint32_t value);
void ospx__tree_free(struct ospx__tree *tree);

/* ---- cpuprofile.c ---- */

/* Per model function, its V8 scriptId: 0 without a file, else 1 + the file's rank among the
 * profile's sorted files. Caller frees; NULL when out of memory. */
uint32_t *ospx__script_ids(const struct ospx_model *model);
/* What the V8 writers (.cpuprofile, trace) build a model's nodes from (calltree.c): an empty
 * call tree sized for the model, each frame's function and each function's script id.
 * ospx__v8_tree_init returns 0 or -ENOMEM; free with ospx__v8_tree_free either way. */
struct ospx__v8_tree {
    struct ospx__tree tree;
    uint32_t *function_of;
    uint32_t *scripts;
};
int ospx__v8_tree_init(struct ospx__v8_tree *v8, const struct ospx_model *model);
void ospx__v8_tree_free(struct ospx__v8_tree *v8);
/* Quoted JSON strings per model function (name, file), and its whole callFrame text (the
 * `.cpuprofile`'s or the trace's form, with `scripts`' ids), made once: a function appears in
 * many nodes, each of which copies it. ospx__quote_functions returns 0 or -ENOMEM; free with
 * ospx__quoted_free either way. */
struct ospx__quoted_functions {
    char **names, **urls, **frames;
    size_t *name_lengths, *url_lengths, *frame_lengths;
    size_t count;
};
int ospx__quote_functions(const struct ospx_model *model, const uint32_t *scripts, int in_trace,
                          struct ospx__quoted_functions *quoted);
/* `,"callFrame":{…}` of a V8 profile node: a function node's name, file (its url), scriptId
 * and 0-based line (-1 unknown), as ospx__quote_functions made it; any other node's
 * `other_name` (quoted) with no script. The `.cpuprofile` and the trace write one per node. */
void ospx__put_call_frame(FILE *stream, const struct ospx__quoted_functions *quoted,
                          const struct ospx__node *node, const char *other_name, int in_trace);
void ospx__quoted_free(struct ospx__quoted_functions *quoted);

/* The table *array points to (any T **) given room for `capacity` elements of element_size
 * bytes (grow.c). 0, or -ENOMEM with *array as it was. */
int ospx__resize(void *array, size_t capacity, size_t element_size);
/* Room for element `count` in the table *array points to (any T **), which has room for
 * *capacity elements of element_size bytes: when full, its room doubled (`initial` when it had
 * none). 0, or -ENOMEM with *array and *capacity as they were. Inline: the scanner asks once
 * per value it reads. */
static inline int ospx__grow(void *array, size_t *capacity, size_t count, size_t element_size,
                             size_t initial)
{
    if (count < *capacity)
        return 0;
    size_t grown_capacity = *capacity > 0 ? *capacity * 2 : initial;
    if (ospx__resize(array, grown_capacity, element_size) != 0)
        return -ENOMEM;
    *capacity = grown_capacity;
    return 0;
}

/* ---- writers.c: what the writers share beside the model ---- */

/* A table of texts made once and written many times (a stack's frame list, a function's name
 * as a frame), each with its length. ospx__texts_free frees what was made, whole or not. */
struct ospx__texts {
    char **text;
    size_t *length;
    size_t count; /* made so far */
};
void ospx__texts_free(struct ospx__texts *texts);

/* For each frame of model->symbols, the index of its function in model->functions
 * (OSPX_NO_FUNCTION for frames no sample reached). Caller frees. NULL on allocation failure.
 * A copy of the model's own once ospx__model_frame_functions made it. */
uint32_t *ospx__frame_functions(const struct ospx_model *model);

/* Make the model's frame → function map once (a sort of the functions by name and a search per
 * frame, which six writers did each), so that ospx__frame_functions copies it. Before writers
 * share the model from several threads. Returns 0 or -ENOMEM. */
int ospx__model_frame_functions(const struct ospx_model *model);

/* The model's function indices (room for one more) sorted by `compare`, which qsort_r hands
 * model->functions. Caller frees. NULL on allocation failure. */
uint32_t *ospx__functions_sorted(const struct ospx_model *model,
                                 int (*compare)(const void *, const void *, void *));

/* The slots of raw stack `stack`, leaf first, and how many. */
static inline const struct ospx_slot *ospx__stack_slots(const struct ospx_model *model,
                                                        uint32_t stack, size_t *count)
{
    *count = model->symbols->stack_depths[stack];
    return model->symbols->stack_slots[stack];
}

/* Sample indices grouped by thread, each thread's ordered by t_rel_ns (ties keep file
 * order): thread t's samples are order[first[t]] .. order[first[t + 1] - 1]. `first` has
 * thread_count + 1 entries. Both malloc'd; returns 0 or -ENOMEM. */
int ospx__samples_by_thread(const struct ospx_raw *raw, size_t **order, size_t **first);

/* ospx__samples_by_thread's answer for the model's raw profile, made once and kept in the
 * model (borrowed: do not free). Returns 0 or -ENOMEM. */
int ospx__model_thread_order(const struct ospx_model *model, const size_t **order,
                             const size_t **first);

/* The rows in `state` grouped by (thread, raw stack), with their summed weights, in the order
 * each pair first appears. *groups is malloc'd. Returns 0 or -ENOMEM. */
struct ospx__group {
    uint32_t thread, stack;
    uint64_t periods;
};
int ospx__group_samples(const struct ospx_raw *raw, uint8_t state, struct ospx__group **groups,
                        size_t *count);

/* Round to one decimal, as every percentage and millisecond value in the outputs is. */
double ospx__round1(double value);

/* `path` with "." and "dir/.." components removed, lexically, into out (debug info often
 * records "/w/build/../src/x.c"); relative paths and ones that climb above the root are copied
 * as they are. */
void ospx__normalize_path(char *out, size_t size, const char *path);

/* The base name of a path ("" stays ""). */
const char *ospx__basename(const char *path);

/* A demangled name as its author wrote it, in place (names.c): a Rust legacy symbol's hash
 * component dropped and its escapes decoded ("rusty::main::{{closure}}" for
 * "rusty::main::_$u7b$$u7b$closure$u7d$$u7d$::h004013894672dc6a"); others unchanged. */
void ospx__name_as_written(char *name);
/* An Itanium name ("_Z...") the symbolizer left mangled, demangled by the C++ runtime's own
 * demangler (names.c; libstdc++'s __cxa_demangle, loaded when first needed); NULL when it is
 * no such name or cannot be demangled here. The caller frees it. */
char *ospx__demangle_leftover(const char *name);
/* ospx_short_name with the template and generic arguments kept: what tells apart the
 * instances of one generic function ("std::_Vector_base<int, std::allocator<int>
 * >::_M_allocate"). */
void ospx__short_name_with_arguments(char *out, size_t size, const char *name);

/* Seconds as a short duration: 12.3s, 1.70s, 350ms, 4.0ms (text.c). */
void ospx__format_duration(char *out, size_t size, double seconds);

/* ---- the terminal report's parts (report.c, report-header.c, report-notes.c, listing.c;
 * text.c's helpers) ---- */

#define OSPX__DEFAULT_WIDTH 100        /* columns of a table that goes to no terminal */
#define OSPX__BAR_CELLS     8          /* the self gutter; a full one is 100% */
#define OSPX__COLOR_WARN    "\033[33m" /* warnings; a self share >= 0.5% */

static inline double ospx__percent_of(uint64_t part, uint64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}
/* Print one line, cut to the width, optionally coloured (text.c). */
void ospx__emit(FILE *out, size_t width, const char *color, const char *text);
/* Print "first; second" on one line, or on two (the second indented, and wrapped over more
 * lines at a terminal when it alone is wider) when one would be wider than the width (text.c). */
void ospx__emit_pair(FILE *out, size_t width, const char *color, const char *first,
                     const char *second);
/* How the waits were timed, in one line, when the kernel's records were refused (the raw
 * file's "waits"; `process` -1: any of the run's, else that one) (report-waits.c). */
void ospx__report_wait_source(FILE *out, size_t width, const struct ospx_model *model,
                              const char *warn, long process);
/* The kernel's context-switch records lost (the raw file's "waits"."lost_records"), in one
 * line, when any were (`process` -1: the run's, else that one's) (report-waits.c). */
void ospx__report_waits_lost(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn, long process);
/* On-CPU time paid late in rows of many periods, in one line, when it is a fifth of the
 * on-CPU time or more (report-late.c). */
void ospx__report_late_cpu(FILE *out, size_t width, const struct ospx_model *model,
                           const char *warn);
/* The terminal report in two parts (report.c), as ospx_report_print prints them: the body
 * (header, table, notes, per-process sections: the model's alone, so it may be made while
 * the outputs are written) and the outcome (what was written, what was not, what was
 * replaced). 0 or a negative errno. */
int ospx__report_print_body(const struct ospx_model *model,
                            const struct ospx_report_options *options, FILE *out);
int ospx__report_print_outcome(const struct ospx_report_options *options, FILE *out);
/* A function's LOCATION (report.c). */
void ospx__report_location(char *out, size_t size, const struct ospx_model *model,
                           const struct ospx_function_stat *fn, const char *cwd);
/* More than one process sampled (report-header.c). */
int ospx__report_several_processes(const struct ospx_model *model);
void ospx__report_header(FILE *out, size_t width, const struct ospx_model *model,
                         const char *title);
/* "pid comm" of one of the model's processes (report-header.c). */
void ospx__report_process_name(char *out, size_t size, const struct ospx_model *model,
                               uint32_t process);
void ospx__report_process_title(char *out, size_t size, const struct ospx_model *model,
                                uint32_t process);
void ospx__report_processes(FILE *out, size_t width, const struct ospx_model *model);
void ospx__report_left_session(FILE *out, size_t width, const struct ospx_model *model,
                               const char *warn);
/* "sampling stopped at 0.12 s: the program entered a seccomp sandbox": one line for the
 * profile (`process` >= 0: a --per-process section's), or each process whose sampling ended
 * before it did. Returns the lines said. */
int ospx__report_sampling_ended(FILE *out, size_t width, const struct ospx_model *model,
                                long process, const char *warn);
void ospx__report_escaped(FILE *out, size_t width, const struct ospx_model *model, long process,
                          const char *warn);
void ospx__report_fibers(FILE *out, size_t width, const struct ospx_model *model);
/* --inverted: the caller tree under a table row (listing.c). */
void ospx__report_callers(FILE *out, size_t width, const struct ospx_model *model,
                          const struct ospx__callers *callers, const struct ospx_function_stat *fn,
                          uint32_t process, uint64_t self, const char *here);
/* The notes under the table (report-notes.c). */
void ospx__report_cut_stacks(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn);
void ospx__report_achieved_rate(FILE *out, size_t width, const struct ospx_model *model,
                                const char *warn, long process);
/* "kernel: N% of on-CPU time was inside system calls" and how to see their kernel frames, when a
 * profile without kernel frames spent that much there (report-notes.c). */
void ospx__report_kernel_hint(FILE *out, size_t width, const struct ospx_model *model);
/* 1 for an attach with perf events whose profile has no kernel frame: the kernel refused them
 * (not root, kernel.perf_event_paranoid >= 2), and with them every sample inside the kernel. */
int ospx__kernel_samples_withheld(const struct ospx_model *model);
void ospx__report_names_hint(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn);

/* ---- two runs side by side (diff.c) ---- */

/* One function of either run: its self and total periods in each ([0] base, [1] new) and
 * their shares of that run's on-CPU periods, in percent. */
struct ospx__diff_row {
    const char *name, *file;
    uint64_t self[2], total[2];
    double self_share[2], total_share[2];
};
/* Both runs' functions matched (by name and object; the file only between distinct functions
 * of one name) into *rows, ordered by the larger move of self and total share. Returns the
 * count, or -ENOMEM. */
long ospx__diff_rows(const struct ospx_model *base, const struct ospx_model *new_model,
                     struct ospx__diff_row **rows);
/* The table of the first `top` rows. */
void ospx__diff_print(FILE *out, const struct ospx_model *base, const struct ospx_model *new_model,
                      const struct ospx__diff_row *rows, size_t count, size_t top);

#endif /* OSPX_INTERNAL_H */
