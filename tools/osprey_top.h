/* osprey_top.h — `osprey top PID`, the live view: the hottest functions of the last seconds
 * of a running process, refreshed in place. The pure parts (the sliding window and what it
 * adds up to, the screen drawn from it: top-window.c; the stream's lines and the cache of
 * symbols: top-symbols.c) apart from the terminal and the child (top.c), so the unit suite
 * (tests/test-cli.c) drives them with hand-made samples.
 */
#ifndef OSPREY_TOP_H
#define OSPREY_TOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "osprey_cli.h"

#define OSPREY_TOP_WINDOW_NS (UINT64_C(5) * 1000000000u) /* the window: the last 5 s */

/* ---- the window (top-window.c) ---- */

struct osprey_top_sample {
    uint64_t t_ns;   /* since the attach (the stream's time) */
    uint32_t stack;  /* the stream's stack index */
    uint32_t weight; /* sampling periods it stands for */
    uint8_t state;   /* 0 on-CPU, 1 waiting */
    uint32_t thread; /* the stream's thread index */
};

struct osprey_top_window {
    uint64_t span_ns; /* samples of the last span_ns count */
    struct osprey_top_sample *samples;
    size_t count, capacity;
};

/* Keep one sample. 0 or -ENOMEM. */
int osprey_top_window_add(struct osprey_top_window *w, const struct osprey_top_sample *sample);
/* Forget the samples that have left the window at now_ns (t_ns <= now_ns - span_ns). */
void osprey_top_window_advance(struct osprey_top_window *w, uint64_t now_ns);
void osprey_top_window_free(struct osprey_top_window *w);

/* The functions of a stack, leaf first (inline levels expanded, innermost first): their
 * indices below function_count, in *functions; returns how many (0: not known yet). */
typedef size_t (*osprey_top_stack_functions)(void *context, uint32_t stack,
                                             const uint32_t **functions);

struct osprey_top_row {
    uint32_t function;
    uint64_t self;  /* on-CPU periods with it as the leaf */
    uint64_t total; /* on-CPU periods with it anywhere on the stack, once each */
};

struct osprey_top_totals {
    uint64_t on_cpu, waiting; /* periods in the window */
    uint64_t samples;         /* rows in the window */
};

/* Add up the window at now_ns (samples with now_ns - span_ns < t_ns <= now_ns): every
 * function with on-CPU time, sorted by self, then total, then index, into *rows (malloc'd);
 * totals for the header. 0 or -ENOMEM. */
int osprey_top_aggregate(const struct osprey_top_window *w, uint64_t now_ns, size_t function_count,
                         osprey_top_stack_functions stack_functions, void *context,
                         struct osprey_top_row **rows, size_t *row_count,
                         struct osprey_top_totals *totals);

enum osprey_top_sort {
    OSPREY_TOP_BY_SELF,  /* self, then total, then index (what osprey_top_aggregate gives) */
    OSPREY_TOP_BY_TOTAL, /* total, then self, then index */
};

/* Order rows again, by self or by total. */
void osprey_top_sort(struct osprey_top_row *rows, size_t count, enum osprey_top_sort by);

struct osprey_top_thread_row {
    uint32_t thread;          /* the stream's index */
    uint64_t on_cpu, waiting; /* periods in the window */
    uint32_t hottest;         /* its function with the most self time; UINT32_MAX: none */
};

/* Add up the window at now_ns per thread: every thread with a sample in it, by on-CPU time
 * (then waiting, then index), into *rows (malloc'd). 0 or -ENOMEM. */
int osprey_top_threads(const struct osprey_top_window *w, uint64_t now_ns, size_t function_count,
                       osprey_top_stack_functions stack_functions, void *context,
                       struct osprey_top_thread_row **rows, size_t *row_count);

/* ---- the screen (top-window.c) ---- */

enum osprey_top_view {
    OSPREY_TOP_FUNCTIONS, /* the hottest functions (the default) */
    OSPREY_TOP_THREADS,   /* a row per thread */
    OSPREY_TOP_HELP,      /* the keys */
};

struct osprey_top_screen {
    int32_t pid;
    const char *command; /* the process's comm */
    uint32_t rate_hz;
    double seconds; /* of the window covered so far (at most its span) */
    struct osprey_top_totals totals;
    const struct osprey_top_row *rows;
    size_t row_count;
    const char *const *names;     /* by function */
    const char *const *locations; /* by function: "file.c", else the object's name */
    size_t width, height;         /* the terminal's columns and rows */
    int color;                    /* 1: the report's colours */
    const char *line_end;         /* after each line: "\n", or "\033[K\n" to clear its rest */
    const char *hint;             /* at the end of the second line ("  (? help)"), or NULL */
    enum osprey_top_view view;
    enum osprey_top_sort sort;                   /* of rows, named in the first line */
    int paused;                                  /* 1: the first line says PAUSED */
    const struct osprey_top_thread_row *threads; /* the threads view's rows */
    size_t thread_row_count;
    const int32_t *tids;              /* by thread index */
    const char *const *thread_labels; /* by thread index */
    size_t thread_count;              /* of tids and thread_labels */
};

/* Draw the screen: a header (pid, command, rate, samples and CPU in the window, on-CPU vs
 * waiting; the order or view, PAUSED), then by the view a table of the top functions (SELF%,
 * TOTAL% of the on-CPU time, FUNCTION, LOCATION), of the threads (CPU% of a core, WAIT% of
 * the thread's time, TID, THREAD, its hottest function) or the keys, as many rows as the
 * height leaves; no line wider than `width` columns, at most
 * height - 1 lines (the last line of a terminal is left empty, so that it never scrolls).
 * Returns the lines drawn. */
size_t osprey_top_render(FILE *out, const struct osprey_top_screen *screen);

/* ---- the stream's lines and the symbols (top-symbols.c) ---- */

struct osprey_top_symbols; /* opaque */

struct osprey_top_symbols *osprey_top_symbols_new(void);
void osprey_top_symbols_free(struct osprey_top_symbols *symbols);
/* The process the stream is of: its objects are read through its root (/proc/PID/root), so
 * one in another mount namespace (a container's) is named; by build id. */
void osprey_top_symbols_target(struct osprey_top_symbols *symbols, int32_t pid);
/* Read one line of the stream (daemon/stream.c): an image, a stack or a thread is kept, a
 * sample is given to `window` (none: dropped); "flush" sets *now_ns (none: not); "end" sets
 * *ended and *how (the rest of its line, in a buffer of how_size). Unknown lines are
 * skipped. 0 or -ENOMEM. */
int osprey_top_symbols_line(struct osprey_top_symbols *symbols, const char *line,
                            struct osprey_top_window *window, uint64_t *now_ns, int *ended,
                            char *how, size_t how_size);
/* Symbolize every address of the stacks read since the last call that was not symbolized
 * before (one run of the report's symbolizer for all of them), then give those stacks their
 * functions. 0 or a negative errno. */
int osprey_top_symbols_resolve(struct osprey_top_symbols *symbols);
/* An osprey_top_stack_functions over `symbols`. */
size_t osprey_top_symbols_stack(void *symbols, uint32_t stack, const uint32_t **functions);
/* The threads known: their tids and labels, by the stream's index. */
size_t osprey_top_symbols_threads(const struct osprey_top_symbols *symbols, const int32_t **tids,
                                  const char *const **labels);
/* The functions known: their names and locations, by index. */
size_t osprey_top_symbols_functions(const struct osprey_top_symbols *symbols,
                                    const char *const **names, const char *const **locations);

/* How many stacks are known (the next "stack" line's index). */
size_t osprey_top_symbols_stack_count(const struct osprey_top_symbols *symbols);

/* ---- the commands (top.c, top-dump.c) ---- */

/* Start `ospreyd --attach-pid PID --stream --rate N [--duration S]` (duration 0: none): its
 * stdout (the stream) and stderr on pipes to us (*stream, *errors), in a process group of its
 * own (the terminal's Ctrl-C is ours to act on). Returns its pid, or -errno. */
pid_t osprey_top_start_daemon(const char *daemon, const struct osprey_options *options,
                              double duration, int *stream, int *errors);

/* `osprey top PID [-F N] [--interval SECONDS]`: exit status 0 (quit, or the process ended),
 * 1 when it could not attach. */
int osprey_top(const struct osprey_options *options, const char *daemon);

/* The command name of a process (tid 0) or of one of its threads, into command ("?" when it
 * cannot be read). */
void osprey_top_command(int32_t pid, int32_t tid, char *command, size_t size);
/* The one line for the process ending, from the stream's "end" line's rest (how). */
void osprey_top_say_end(int32_t pid, const char *command, const char *how);

/* `osprey dump PID [--duration S] [-F N]`: every thread's current stack, once, on stdout:
 * exit status 0, 1 when it could not attach. */
int osprey_dump(const struct osprey_options *options, const char *daemon);

#endif /* OSPREY_TOP_H */
