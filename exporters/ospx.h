/* ospx.h — libospexport: raw profile → symbols → model → speedscope, cpuprofile, folded,
 * profile.json and the terminal report.
 *
 * Pipeline (each stage owns its output; free with the matching *_free):
 *   ospx_raw_read()      raw JSON file       → struct ospx_raw        (raw.c)
 *   ospx_symbolize()     struct ospx_raw     → struct ospx_symbols    (symbolize.c)
 *   ospx_model_build()   raw + symbols       → struct ospx_model      (model.c)
 *   ospx_write_*()       model               → files, written atomically (writers)
 *   ospx_report_print()  model               → terminal report        (report.c)
 *   ospx_process()       all of the above, as `osprey report` runs it  (process.c)
 *
 * Errors: functions return 0 or a negative errno; on failure they fill an optional
 * struct ospx_error (first error wins) that the CLI prints as "file:line:col: text" or
 * "file: text" when line is 0.
 */
#ifndef OSPX_H
#define OSPX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OSPX_RAW_VERSION 1

struct ospx_error {
    char file[1024]; /* file the error is about ("" when none) */
    int line;        /* 1-based; 0 when no position applies */
    int column;      /* 1-based; 0 when no position applies */
    char text[512];  /* what is wrong, one line, no trailing period needed */
};

/* Record an error unless one is already recorded (first error wins). err may be NULL.
 * Returns -code (code is a positive errno) so callers can `return ospx_error_set(...)`. */
int ospx_error_set(struct ospx_error *err, int code, const char *file, int line, int column,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Format as "file:line:col: text" / "file: text" / "text" into buf. */
void ospx_error_format(const struct ospx_error *err, char *buf, size_t size);

/* ---- raw profile, version 1 (proto/raw-format.md) ---- */

struct ospx_image {
    char *path;
    uint64_t base, slide, text, text_size;
    char *arch; /* "" when not reported */
    /* the object's GNU build id (lowercase hex) as the collector read it during the run; ""
     * or NULL when not recorded (files older than build ids, objects without one) */
    char *build_id;
    /* file offset of the PF_X segment that starts at `text`; has_text_offset 0 when not
     * recorded */
    int has_text_offset;
    uint64_t text_offset;
    uint32_t process; /* index into ospx_raw.processes (0 in a profile of one process) */
    /* on the samples' t_rel_ns axis, 0 when not recorded: when the collector saw the object
     * appear (0 too: there from the start) and saw it gone (0: never) */
    uint64_t loaded_ns, unloaded_ns;
};

/* One thread of the profile. The raw file has one entry per registration; the reader makes
 * the entries of one kernel thread with one fiber id (a thread renamed after it started, which
 * the preload library registers again under its new name) one thread, with its last label. */
struct ospx_thread {
    int64_t fiber;
    char *label;
    int64_t cpu_ns; /* the thread's CPU time over the run; -1 when the raw file does not say */
    int64_t preempted_ns; /* runnable but not on a CPU (the kernel's records); -1 unknown */
    int64_t tid;          /* kernel thread id; 0 when the raw file does not say */
    uint32_t process;     /* index into ospx_raw.processes (0 in a profile of one process) */
};

struct ospx_stack {
    uint64_t *pcs; /* leaf first: pcs[0] is the precise pc, the rest return addresses */
    size_t depth;  /* >= 1 */
    /* index into ospx_raw.processes: whose address space its pcs are in (0 in a profile of
     * one process) */
    uint32_t process;
    /* timed: its pcs are looked up among the images mapped at at_ns (a time of its samples),
     * because objects were replaced at some of its addresses during the run; the reader gives
     * the samples of each generation of objects their own stack */
    int timed;
    uint64_t at_ns;
    /* why its walk ended: enum osp_unwind_stop (proto/osp_unwind_step.h) from the raw file's
     * stack_ends; 0 when the file does not say (an older one, or a walker that did not) */
    unsigned end;
};

struct ospx_sample {
    uint64_t t_rel_ns;
    uint32_t thread; /* index into threads */
    uint32_t stack;  /* index into stacks */
    uint8_t state;   /* 0 on-CPU, 1 waiting */
    /* sampling periods the row stands for (>= 1; 1 when the row has no 5th element). On-CPU:
     * that many periods of the thread's CPU time, paid at t_rel_ns with this stack. Waiting:
     * one wait of that many periods starting at t_rel_ns. Every count in every output sums
     * weights, never rows. */
    uint64_t weight;
};

/* Why samples were lost: one reason of the optional "drops" object. */
struct ospx_drop {
    char *reason; /* short snake_case word: "ring_full", "collector_memory", ... */
    uint64_t count;
};

/* How the target ended, from the optional "exit" object. */
struct ospx_exit {
    int known;  /* 0 when the raw file has no "exit" object */
    int normal; /* 1: the program exited through exit()/return from main */
    int signal; /* > 0: the program was killed by this signal */
    /* 1: a forked child that left the program's session (a daemon): profiled until then, it
     * ran on unprofiled ("left-session") */
    int left_session;
    /* "sampling_ended": sampling stopped for good before the program ended, at this time of the
     * profile (ns after its start; 0 not said), for `sampling_ended_reason` ("seccomp": the
     * program entered a seccomp sandbox; a reason this reader does not know kept as it is) */
    uint64_t sampling_ended_ns;
    char sampling_ended_reason[24];
};

/* A kernel frame's name (the raw file's optional "kernel_symbols", from /proc/kallsyms). */
struct ospx_kernel_symbol {
    uint64_t pc; /* as in the stacks: the kernel's address (upper half) */
    char *name;
};

/* A process this one started that ran unprofiled (the raw file's optional "escaped": its
 * environment dropped the profiler). */
struct ospx_escaped {
    int64_t pid;
    char *exe;        /* "" when not recorded */
    char *reason;     /* "environment cleared", ...; "" when not recorded */
    uint32_t process; /* index into ospx_raw.processes: the process that started it */
};

/* A JIT's function named by a map the program wrote for perf (the raw file's "jit": perf-PID.map,
 * a jitdump), kept by the collector for the pcs in no image. Frames it names are marked [jit]. */
#define OSPX_JIT_IMAGE "[jit]"  /* the image of a frame a JIT symbol names */
#define OSPX_JIT_MARK  " [jit]" /* and the end of its name */
/* A Python function (the raw file's "python", proto/osp_python.h) is kept among them: its
 * frames are marked [py]. */
#define OSPX_PY_IMAGE "[py]"
#define OSPX_PY_MARK  " [py]"
struct ospx_jit_symbol {
    uint64_t start, size;
    char *name;
    uint32_t process; /* index into ospx_raw.processes */
    bool python;      /* a Python frame's name: [py] */
};

/* Room for a process's command name (the kernel's are 15 bytes at most): a longer one in a
 * raw file is not cut (it could end inside a character) but left out. */
#define OSPX_COMM_SIZE 64

/* One process of a run: one raw file (run.c reads a run's files as one struct ospx_raw). The
 * images, threads and stacks of process p are those whose `process` is p. */
struct ospx_process {
    int64_t pid;
    char *exe;
    /* the raw file's "comm" (the kernel's name of the process); "" when not said */
    char comm[OSPX_COMM_SIZE];
    char *source_path;  /* the raw file it came from */
    int64_t parent_pid; /* the raw file's "parent_pid"; -1 when not recorded */
    int forked;         /* 1: forked from a profiled process and did not exec ("forked") */
    /* 1: this image of `pid` exec'd a later one that the run also holds (the later one comes
     * first in the processes) */
    int execd;
    uint64_t start_unix_ns, end_unix_ns;
    uint32_t rate_hz;       /* its own; the samples are in the run's rate (run.c rescales) */
    int64_t process_cpu_ns; /* -1 when not recorded */
    /* collector.unwind.ready_ns: when ospreyd had the unwind rows of every object mapped at
     * start, on the process's own t_rel_ns axis (its samples before then followed frame
     * pointers only); 0 never, -1 not recorded */
    int64_t unwind_ready_ns;
    uint64_t dropped;
    struct ospx_exit exit;
    /* "waits": timed by the shim because the kernel refused its records: what refused them
     * ("perf_event_paranoid", "seccomp", "kernel"; "" when timed by the kernel or not said),
     * the errno ("EACCES"), and kernel.perf_event_paranoid then (INT64_MIN: not said) */
    char waits_refused_by[24];
    char waits_refused[16];
    int64_t waits_paranoid;
    /* "waits"."lost_records": the kernel's context-switch records it could not write (ospreyd
     * fell behind reading them and their ring filled): some waits read shorter or not at all */
    uint64_t waits_lost;
    size_t first_image, image_count; /* its images: images[first_image ..] */
    /* after ospx_run_merge_processes: the process whose row this one's threads are shown in
     * (the first of its command), and in that one how many processes the row stands for */
    uint32_t merged_into, merged_count;
};

struct ospx_raw {
    char *source_path; /* the file it was read from */
    int version;
    int64_t pid;
    char *exe;
    /* the raw file's optional "comm"; "" when not said, or longer than fits (then the base
     * name of exe) */
    char comm[OSPX_COMM_SIZE];
    uint32_t rate_hz;
    char *platform;
    uint64_t start_unix_ns, end_unix_ns;
    struct ospx_image *images;
    size_t image_count;
    struct ospx_thread *threads;
    size_t thread_count;
    struct ospx_stack *stacks;
    size_t stack_count;
    struct ospx_sample *samples;
    size_t sample_count;
    uint64_t dropped;
    struct ospx_drop *drops;
    size_t drop_count;      /* optional breakdown of `dropped` */
    int64_t process_cpu_ns; /* the process's CPU time over the run; -1 when not recorded */
    /* collector.cpu_ms: ospreyd's own CPU time, summed over the run's processes; 0 when not
     * recorded */
    uint64_t collector_cpu_ms;
    /* collector.events_cpu_ns of an attach with perf events: the CPU time the kernel's events
     * counted, its time in system calls included, summed over the run's processes; 0 when not
     * recorded, or attached by ptrace */
    uint64_t events_cpu_ns;
    struct ospx_exit exit;
    /* The run's processes: one per raw file, the program the user meant first (for a program
     * that replaced itself by exec, its last image). The fields above are the first one's,
     * but for start/end (the run's span), dropped and drops (sums), process_cpu_ns (the sum,
     * -1 unless every process has one). process_count 0 (a profile built by hand) reads as
     * one process made of the fields above. */
    struct ospx_process *processes;
    size_t process_count;
    struct ospx_escaped *escaped; /* processes that ran unprofiled */
    size_t escaped_count;
    /* JIT symbols, by process then start (each file's sorted, the run's in process order) */
    struct ospx_jit_symbol *jit;
    size_t jit_count;
    char **jit_notes; /* the raw files' jit.notes: a JIT map refused or cut short */
    size_t jit_note_count;
    struct ospx_kernel_symbol *kernel_symbols; /* sorted by pc; the kernel frames' names */
    size_t kernel_symbol_count;
    /* Set by ospx_filter_samples when its rows are a view of the run (--fiber, --pid,
     * --focus, ...): the whole run's on-CPU periods and the CPU time measured for it, taken
     * before any row was dropped, so the sampling line speaks of the run, not of the view.
     * view 0: the rows are the whole run. */
    struct ospx_run_sampling {
        int view;
        uint64_t on_cpu;
        int64_t measured_cpu_ns;
        /* Of a run of several processes: those with samples whose CPU time was not measured
         * (killed before the collector read it), left out of on_cpu and measured_cpu_ns, and
         * the first of them (an index into processes) */
        uint32_t unmeasured, unmeasured_first;
    } whole;
    /* 1: ospx_run_merge_processes made each command one row: the threads of every process of
     * a command are its first process's; stacks keep their own (their addresses are theirs) */
    int merged_processes;
};

int ospx_raw_read(const char *path, struct ospx_raw *out, struct ospx_error *err);
void ospx_raw_free(struct ospx_raw *raw);

/* ---- a run: all of its processes (run.c) ---- */

/* The raw files of one run: each of `paths` and, unless no_siblings, the raw files its
 * descendants wrote beside it (for P.json: P.<pid>.json and P.<pid>-<hex>.json in the same
 * directory), read and merged into one struct ospx_raw (processes in the order
 * ospx_raw.processes says). A path named in `paths` that cannot be read is the error; a
 * sibling that cannot be read, or is from an earlier run (it started before the file it is
 * beside), gets one warning line on `warnings` (NULL: stderr) and is left out. */
int ospx_run_read(const char *const *paths, size_t count, int no_siblings, FILE *warnings,
                  struct ospx_raw *out, struct ospx_error *err);
/* The siblings of raw file `path` (see ospx_run_read), sorted by name; *paths malloc'd (free
 * with ospx_paths_free). 0 or a negative errno. */
int ospx_run_siblings(const char *path, char ***paths, size_t *count);
void ospx_paths_free(char **paths, size_t count);
/* --merge-processes: the processes of one command (a build's 26 `cc1`, 3 `gzip`) as one, as
 * `perf report --sort comm` shows them: each thread moves to the first process of its
 * command (ospx_process.merged_into), whose measured CPU time and drops become the sums.
 * After it, every per-process split (the report's PROCESS column and lines, folded roots,
 * pprof labels, profile.json, the trace's processes) is by command, without pids. Call it
 * after symbolizing and filtering (which go by the real processes). */
void ospx_run_merge_processes(struct ospx_raw *raw);
/* Append `from` (one process's raw profile, emptied and freed) to `into`: its images,
 * threads, stacks and samples, its samples on into's time axis and rate. 0 or -ENOMEM. */
int ospx_raw_append(struct ospx_raw *into, struct ospx_raw *from, struct ospx_error *err);

/* ---- symbols ---- */

/* One source-level frame. An address with inlined calls expands to several frames. */
struct ospx_frame {
    char *name;       /* function name; "0x7f12…" (hex address) when unknown */
    char *file;       /* source file; "" when unknown */
    int line;         /* 1-based; 0 when unknown */
    int column;       /* 1-based; 0 when unknown */
    char *image;      /* path of the image the address belongs to; "" when none */
    uint64_t address; /* the raw pc as recorded */
};

/* One position of a symbolized stack. */
struct ospx_slot {
    uint32_t frame;    /* index into ospx_symbols.frames */
    int line;          /* the source line at THIS position (one function is one frame; its
                          lines differ from stack to stack); 0 when unknown */
    uint32_t position; /* the index into raw stacks[i].pcs it came from (inline levels of one
                          pc share it); OSPX_NO_POSITION when unknown: then each slot counts
                          as its own position */
};
#define OSPX_NO_POSITION UINT32_MAX

/* Symbols for a raw profile: a table of distinct frames and, per raw stack, its slots. */
struct ospx_symbols {
    struct ospx_frame *frames;
    size_t frame_count; /* interned: equal frames share an index */
    /* stack_slots[i] lists raw stack i's slots, LEAF FIRST, inline frames expanded (innermost
     * inline first, as llvm-symbolizer prints them); stack_depths[i] of them */
    struct ospx_slot **stack_slots;
    size_t *stack_depths;
    size_t stack_count;
    /* images with sampled addresses that no object here described (missing, or another build
     * than the one that ran): their frames are object+0xOFFSET */
    size_t unresolved_images;
};

struct ospx_symbolize_options {
    const char *binary;     /* --binary: substitute for the main image only; NULL for none */
    const char *symbolizer; /* llvm-symbolizer to run; NULL: look on PATH */
    int progress;           /* 1: show progress on stderr (the CLI sets it on a tty) */
    FILE *warnings;         /* where one-line warnings go; NULL: stderr */
    int progress_delay_ms;  /* the progress line appears once symbolizing has taken this
                               long; 0: 1000 ms, negative: at once */
    /* an llvm-symbolizer started early (ospx_symbolizer_prestart), so that its start-up
     * (half a second: it loads all of LLVM) overlaps reading the raw file; ospx_symbolize
     * takes it over, or ends it when it chose another tool. NULL: none */
    struct ospx_prestarted_symbolizer *prestarted;
    /* --symfs: directories (colon-separated) where objects that moved are found, by build id
     * or by name; NULL for none. The build-id cache is searched after them. */
    const char *symfs;
    /* --ignore-build-id: an object of another build than the one that ran, found where no
     * right one is, is used anyway (one line says so) and every name from it is marked
     * " [other build]"; 0: never used */
    int use_other_build;
};

/* Start llvm-symbolizer (as found on PATH) now, for a later ospx_symbolize. NULL when there is
 * none or it cannot start (ospx_symbolize then starts its own). */
struct ospx_prestarted_symbolizer *ospx_symbolizer_prestart(void);
/* End a prestarted symbolizer that no ospx_symbolize took over (an error came first). */
void ospx_symbolizer_prestart_free(struct ospx_prestarted_symbolizer *started);

int ospx_symbolize(const struct ospx_raw *raw, const struct ospx_symbolize_options *options,
                   struct ospx_symbols *out, struct ospx_error *err);
void ospx_symbols_free(struct ospx_symbols *symbols);

/* ---- which samples to look at (filter.c) ---- */

struct ospx_filter {
    const char *fiber;  /* keep one fiber: its id ("0", "-1", "4243") or its label; NULL all */
    const char *pid;    /* keep these processes: a comma list of pids; NULL all */
    const char *comm;   /* keep these processes: a comma list of commands (exe base names) */
    const char *focus;  /* POSIX extended regex: keep rows with a matching function; NULL */
    const char *ignore; /* POSIX extended regex: drop rows with a matching function; NULL */
};

/* Keep only the rows of raw->samples the filter selects (in place, order kept). Returns 0, or
 * -EINVAL with `err` filled for a bad regular expression or a fiber the profile does not
 * have. */
int ospx_filter_samples(struct ospx_raw *raw, const struct ospx_symbols *symbols,
                        const struct ospx_filter *filter, struct ospx_error *err);

/* ---- model ---- */

struct ospx_function_stat {
    uint32_t frame; /* index into symbols.frames of a representative frame */
    const char *name;
    const char *file;
    int line;       /* the function's hottest line: the most self samples at it, else (no
                       self time) the most samples with the function at it; ties: the lowest;
                       for a function only seen waiting, its lowest sampled line; 0 unknown */
    uint64_t self;  /* samples with this function as leaf */
    uint64_t total; /* samples with this function anywhere on the stack, once each */
};

struct ospx_line_stat {
    const char *file;
    int line;
    uint64_t samples; /* samples attributing time to this line (self or on the path) */
    uint64_t self;    /* samples where this line is the leaf position */
};

struct ospx_fiber_stat {
    int64_t fiber;
    const char *label;
    uint64_t on_cpu;
    uint64_t waiting;
    uint64_t preempted; /* periods runnable but not on a CPU (raw preempted_ns), 0 unknown */
};

/* One process of the run. */
struct ospx_process_stat {
    int64_t pid;
    const char *comm; /* the exe's base name */
    const char *exe;
    uint64_t on_cpu, waiting;
    size_t threads; /* with samples */
    size_t merged;  /* processes this row stands for: 1, or a command's after merging */
};

/* One row of the (process, function) table: a function's self and total time in one
 * process. */
struct ospx_process_function {
    uint32_t process;  /* index into model.processes */
    uint32_t function; /* index into model.functions */
    uint64_t self, total;
};

struct ospx_model {
    const struct ospx_raw *raw;         /* borrowed; outlives the model */
    const struct ospx_symbols *symbols; /* borrowed; outlives the model */
    /* sums of sample weights (sampling periods), never of rows */
    uint64_t total_samples, on_cpu_samples, waiting_samples, dropped;
    double wall_seconds; /* end - start */
    double cpu_seconds;  /* on-CPU samples / rate */
    /* CPU time the collector measured (raw process_cpu_ns, else the sum of every thread's
     * cpu_ns; of a run of several processes, those with samples); -1 when the raw file does
     * not say. sampled_on_cpu / (this / 1e9) is the rate the sampling achieved. Both are the
     * whole run's, even when the rows are a view of it (raw->whole). */
    int64_t measured_cpu_ns;
    uint64_t sampled_on_cpu;
    /* processes left out of both (their CPU time not measured), and the first of them */
    uint32_t unmeasured_processes, unmeasured_first;
    struct ospx_fiber_stat *fibers;
    size_t fiber_count; /* one per raw thread */
    struct ospx_function_stat *functions;
    size_t function_count; /* sorted: self desc */
    struct ospx_line_stat *lines;
    size_t line_count; /* sorted: samples desc */
    /* one per raw process (1 for a profile of one process), in the raw file's order */
    struct ospx_process_stat *processes;
    size_t process_count;
    size_t processes_sampled; /* of those, how many have samples (after any filter) */
    /* with more than one process sampled: the functions per process, sorted as functions;
     * else none */
    struct ospx_process_function *process_functions;
    size_t process_function_count;
    /* the samples grouped by thread in time order, made on first use by the writers that
     * need it (ospx__model_thread_order); freed with the model */
    size_t *thread_order, *thread_first;
    /* each frame's function, made once for the writers (ospx__model_frame_functions), which
     * copy it; freed with the model */
    uint32_t *frame_function;
};

int ospx_model_build(const struct ospx_raw *raw, const struct ospx_symbols *symbols,
                     struct ospx_model *out, struct ospx_error *err);
void ospx_model_free(struct ospx_model *model);

/* ---- writers: each writes to a temporary file beside `path` and renames it ---- */

int ospx_write_speedscope(const struct ospx_model *model, const char *path, struct ospx_error *err);
int ospx_write_cpuprofile(const struct ospx_model *model, const char *path, struct ospx_error *err);
int ospx_write_folded(const struct ospx_model *model, const char *path, struct ospx_error *err);
int ospx_write_offcpu_folded(const struct ospx_model *model, const char *path,
                             struct ospx_error *err);
/* <stem>.trace.json: Chrome trace events, one thread track per fiber on real timestamps. */
int ospx_write_trace(const struct ospx_model *model, const char *path, struct ospx_error *err);
/* <stem>.pb.gz: the pprof profile (profile.proto, gzip), on-CPU samples only. */
int ospx_write_pprof(const struct ospx_model *model, const char *path, struct ospx_error *err);
int ospx_write_profile_json(const struct ospx_model *model, const char *path,
                            struct ospx_error *err);

struct ospx_report_options {
    int color; /* 1: ANSI colour (caller decides: tty and no NO_COLOR) */
    int width; /* terminal columns; 0: no terminal: a table of 100, notes never cut */
    const char *const *written_paths;
    size_t written_count; /* listed at the end */
    size_t top;           /* rows of the table; 0: 10 */
    int inverted;         /* 1: under each row, the callers its self time came from */
    const char *list;     /* regex: instead of the table, the source lines of the matching
                             functions with their self and total time (pprof -list) */
    int view_only;        /* 1: nothing was written on purpose (a view): the report says so */
    /* 1: nothing was written because objects are missing and the outputs there are better:
     * the report says so */
    int kept_better;
    /* outputs that could not be written (a full disk, a write error): one line names them and
     * the first error's text */
    const char *const *missing_paths;
    size_t missing_count;
    const char *missing_reason;
    size_t replaced_count; /* files of an earlier run at the stem the outputs replaced */
    /* 1: after the run's report, one section per process (its threads and functions) */
    int per_process;
    /* raw files of the run's other processes kept beside raw_written: listed as one line,
     * "N more raw files: <more_raw_pattern>" */
    size_t more_raw_count;
    const char *more_raw_pattern;
};
int ospx_report_print(const struct ospx_model *model, const struct ospx_report_options *options,
                      FILE *out);

/* The report's way with text (text.c), for other views of a profile (`osprey top`): display
 * columns of UTF-8 text (one per code point); text fitted to `width` columns, cut with `…` at
 * its end, its start (a location: the file name is the useful part) or its middle (a function
 * name), control characters made spaces; the colour of a row by its self share (NULL: none),
 * to be followed by OSPX_COLOR_RESET. */
enum ospx_cut { OSPX_CUT_END, OSPX_CUT_START, OSPX_CUT_MIDDLE };
size_t ospx_text_columns(const char *text);
void ospx_text_fit(char *out, size_t size, const char *text, size_t width, enum ospx_cut cut);
const char *ospx_share_color(double self_percent);
/* A function's name for a table, pprof's way (names.c): parameter lists, template arguments
 * and a template function's return type elided, a Rust qualified path (<T as Trait>) kept
 * with its inside shortened: "std::vector::push_back" for "std::vector<int,
 * std::allocator<int> >::push_back(int const&)". A C name is itself. */
void ospx_short_name(char *out, size_t size, const char *name);
#define OSPX_COLOR_RESET "\033[0m"

/* ---- the whole post-processing, as `osprey report` and `osprey FILE --profile` run it ---- */

/* The outputs (outputs.c), one row per file, looked up by format name: "speedscope"
 * <stem>.speedscope.json, "cpuprofile" <stem>.cpuprofile, "folded" <stem>.folded and
 * <stem>.offcpu.folded, "profile" <stem>.profile.json, "pprof" <stem>.pb.gz, "trace"
 * <stem>.trace.json, "html" <stem>.html (the offline flame-graph page, made from the speedscope
 * file, which it writes too); "all" is every one. */
struct ospx_output {
    const char *format; /* its name in a formats list; two rows may share one */
    const char *suffix; /* the file: <stem><suffix> */
    const char *opens;  /* what opens it, one line for --help */
    int (*write)(const struct ospx_model *, const char *, struct ospx_error *);
    /* an output made from others' files (write NULL): the format it needs (written with it)
     * and one it reads when that is written too */
    const char *made_from, *also_reads;
    unsigned rank; /* the writer threads take the lowest first */
};
/* The table, in listing order, and its length. */
const struct ospx_output *ospx_outputs(size_t *count);
/* 1 when `output` is of the format named by the `length` bytes at `format`. */
int ospx_output_is(const struct ospx_output *output, const char *format, size_t length);
/* "speedscope, cpuprofile, ..., all", from the table. */
void ospx_formats_list(char *out, size_t size);
/* One line per output file, "  STEM.suffix  what opens it", for the CLI's help. */
void ospx_outputs_help(FILE *out);

struct ospx_process_options {
    const char *raw_path;
    /* more raw files of the run (read with raw_path and merged: ospx_run_read), or NULL */
    const char *const *more_raw_paths;
    size_t more_raw_count;
    int no_siblings; /* 1: read only the files named, not their descendants' beside them */
    int per_process; /* report: a section per process after the run's */
    /* 1: the processes of one command are one (ospx_run_merge_processes), in the report and
     * every output */
    int merge_processes;
    /* the run's other raw files kept beside raw_written (the report's written list) */
    size_t raw_more_kept;
    const char *raw_more_pattern;
    const char *stem;    /* outputs: <stem> + the suffixes of the chosen formats */
    const char *binary;  /* --binary, or NULL */
    FILE *report;        /* the terminal report goes here; NULL: no report */
    int color;           /* for the report */
    int progress;        /* symbolization progress on stderr */
    const char *formats; /* comma-separated format names (ospx_formats_list); NULL or "": all */
    struct ospx_filter filter; /* which samples (every output and the report) */
    size_t top;                /* report: rows; 0: 10 */
    int inverted;              /* report: callers under each row */
    const char *list;          /* report: source listing of the matching functions */
    const char *symfs;         /* --symfs: where moved objects are found (colon list), or NULL */
    int use_other_build;       /* --ignore-build-id (ospx_symbolize_options) */
    /* 1: write no output, only the report (a view: `osprey report` with --fiber, --focus, ...
     * and neither -o nor --format); the report says nothing was written */
    int no_outputs;
    const char *raw_written; /* the raw file kept for this run, listed with the outputs; NULL */
    int raw_replaced;        /* 1: raw_written replaced one of an earlier run (the report says) */
    /* 1: when an image's object is not here (ospx_symbols.unresolved_images) and outputs of
     * the chosen formats exist at the stem already, write nothing over them: they were made
     * when the objects were there, and these would only be worse (`osprey report RAW` with
     * neither -o nor --format sets it); the report says so */
    int keep_better;
    /* 1: keep the run's main image in the build-id cache (common/buildid.c) when it is still
     * the object that ran (its build id is the raw file's), so that the profile can be
     * symbolized after it is deleted or rebuilt (`osprey FILE --profile` sets it) */
    int keep_main_object;
    /* when not NULL: set to 1 once the report is printed, which names the outputs that could
     * not be written, so that a caller need not say it again */
    int *reported;
};
int ospx_process(const struct ospx_process_options *options, struct ospx_error *err);

/* What ospreyd calls after a run (OSPREY_EXPORT): read the raw profile at raw_path, symbolize
 * it and write the outputs `formats` names (a comma list of ospx_formats_list names, or "all"; NULL
 * is all) beside `stem`, each atomically; no report, no progress line, nothing on stdout or
 * stderr but the symbolizer's one-line warnings. Returns 0, or a negative errno with `err`
 * filled ("unknown output format 'x'", the raw file's error, the output path that failed).
 * Not thread-safe with itself only through the warnings stream; it holds no global state. */
int ospx_export_files(const char *raw_path, const char *stem, const char *formats,
                      struct ospx_error *err);

/* ---- two profiles side by side (diff.c) ---- */

struct ospx_diff_options {
    const char *base_path, *new_path; /* raw profiles */
    const char *stem;                 /* writes <stem>.{base,new}.{speedscope.json,pb.gz} */
    const char *binary;               /* --binary for both, or NULL */
    FILE *report;                     /* the functions whose self share moved most; NULL: none */
    size_t top;                       /* rows; 0: 10 */
    const char *symfs;                /* --symfs for both, or NULL */
    int use_other_build;              /* --ignore-build-id for both */
};
int ospx_diff(const struct ospx_diff_options *options, struct ospx_error *err);

#endif /* OSPX_H */
