/* symbolize_internal.h — what symbolize.c (the policy), its backends (symbolize-llvm.c,
 * symbolize-atos.c, symbolize-hex.c) and the child processes they run (child.c) share. A
 * backend is one small ops struct, chosen once per profile, that answers an image's file
 * addresses; everything else — which image a pc is in, unsliding, the -1 of return addresses,
 * batching, which object describes an image, interning frames, dropping the profiler's own —
 * is the policy's, the same whichever backend answers. */
#ifndef OSPX_SYMBOLIZE_INTERNAL_H
#define OSPX_SYMBOLIZE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "ospx_internal.h"

/* One source location of an answer: an inline level, innermost first. */
struct ospx__location {
    char *name; /* NULL when the symbolizer knew no function */
    char *file; /* "" when unknown */
    int line, column;
};

/* The answer for one file address: its inline chain, or count 0 when nothing is known. */
struct ospx__answer {
    struct ospx__location *chain;
    size_t count;
    /* per level, the interned frame (OSPX_SKIPPED_FRAME: the profiler's own) and its line, once
     * a stack has used the answer (interned_ready): in `one` for an answer of one level (most:
     * no inlining), so that a stack's slot reads the answer alone, not two arrays more (the
     * cache misses were most of building the stacks), else in `interned`. A level without a
     * name is named by the pc in hex: those frames hold for interned_pc only. */
    struct ospx__interned {
        uint32_t frame;
        int line;
    } * interned, one;
    uint64_t interned_pc;
    bool interned_ready;
    bool interned_named; /* every level has a name: the frames hold for any pc */
};
#define OSPX_SKIPPED_FRAME UINT32_MAX

/* Per image: the distinct file addresses asked for, sorted, and their answers. */
struct ospx__image_work {
    uint64_t *addresses;
    size_t count, capacity;
    struct ospx__answer *answers;
    bool running_vdso; /* described by a copy of the running kernel's vDSO */
    /* its object's function spans (spans.c), read when a frame of it is first unnamed */
    struct ospx__spans spans;
    bool spans_read;
};

/* A running tool (child.c): its pid, the socket its stdin reads (-1 for atos) and the pipe its
 * stdout writes. */
struct ospx__child {
    pid_t pid;
    int input; /* -1 when none */
    int output;
};

struct ospx__symbolizer {
    const struct ospx_raw *raw;
    const struct ospx_symbolize_options *options;
    const struct ospx__backend *backend; /* chosen once (ospx__choose_backend) */
    char *tool_path;                     /* the backend's tool; NULL for hex */
    struct ospx__image_work *work;       /* one per raw image */
    struct ospx__object *objects;        /* one per raw image: what describes it (objects.c) */
    struct image_ranges *ranges;         /* symbolize.c's, per process: which image a pc is in */
    /* progress */
    struct timespec started;
    size_t addresses_total, addresses_done, progress_shown;
    int progress_visible;
    /* the llvm backend's: the one llvm-symbolizer all images share (started on first use; each
     * line it reads names its object), and the address-space limit it runs under */
    struct ospx__child llvm;
    int llvm_running, llvm_bounded;
    uint64_t objects_size;
    /* objects that were not there, reported in one line at the end (by the backends) */
    size_t missing_objects;
    const char *first_missing_object;
};

/* ---- a backend ---- */

struct ospx__backend {
    const char *name;
    /* Answer every address of `work` (the image's file addresses, sorted) into work->answers,
     * reading `object` (the recorded path, or the object objects.c found); a missing or
     * unreadable object, or a tool that fails, is a warning and hex frames, never a failure.
     * Returns 0 or -ENOMEM. Counts state->addresses_done for every address. */
    int (*symbolize_image)(struct ospx__symbolizer *state, const struct ospx_image *image,
                           struct ospx__image_work *work, const char *object);
    /* Before the first image, once the objects are known (NULL: nothing to do). */
    void (*begin)(struct ospx__symbolizer *state);
    /* After the last image: tell what the backend kept running that nothing more comes, so
     * it ends while the stacks are built (NULL: nothing). */
    void (*close_input)(struct ospx__symbolizer *state);
    /* After the stacks are built: end what the backend kept running (NULL: nothing). */
    void (*finish)(struct ospx__symbolizer *state);
};

extern const struct ospx__backend ospx__backend_llvm; /* symbolize-llvm.c */
extern const struct ospx__backend ospx__backend_atos; /* symbolize-atos.c */
extern const struct ospx__backend ospx__backend_hex;  /* symbolize-hex.c: no tool */

/* ---- symbolize.c, for the backends ---- */

/* Choose the backend: the symbolizer the options name, else llvm-symbolizer (plain or
 * versioned) on PATH, else atos, else hex. Sets state->backend and state->tool_path. */
void ospx__choose_backend(struct ospx__symbolizer *state);
/* One "osprey: ..." warning line (control characters made printable). */
void ospx__symbolize_warn(struct ospx__symbolizer *state, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Called after each answer; redraws the progress line now and then when asked to. */
void ospx__symbolize_progress(struct ospx__symbolizer *state, int final);
/* Append one location to an answer; name may be NULL or "" (unknown), file NULL (""). 0 or
 * -ENOMEM. */
int ospx__answer_add(struct ospx__answer *answer, const char *name, const char *file, int line,
                     int column);
void ospx__answer_free(struct ospx__answer *answer);

/* ---- symbolize-llvm.c, for the policy ---- */

/* Take over a prestarted llvm-symbolizer when it is the one this run chose; else end it. */
void ospx__llvm_adopt_prestarted(struct ospx__symbolizer *state,
                                 struct ospx_prestarted_symbolizer *started);

/* ---- child.c: tools as child processes, with limits ---- */

/* A tool that says nothing for this long is presumed hung: it is killed and the image's
 * remaining addresses stay hex. Generous, because the first answer for a large binary waits
 * for llvm-symbolizer to index all of its DWARF. */
#define OSPX_CHILD_SILENCE_MS 300000

/* Start argv[0] with stdout on a pipe, stderr on /dev/null and stdin on a socket (with_input)
 * or /dev/null. Returns 0 or a negative errno. */
int ospx__child_start(char *const argv[], int with_input, struct ospx__child *child);
/* Close the pipes and reap the child; kill it first when `kill_it`, or when it has not exited
 * (its stdout reaching end of file) a while after its input closed. */
void ospx__child_finish(struct ospx__child *child, int kill_it);
/* Wait until fd has something to read. 1, or 0 when the tool stayed silent too long. */
int ospx__child_wait_readable(int fd);
/* Limits on a tool, so that no object, however odd, takes the machine: address space 2 GiB
 * plus four times the object (it maps the file and builds its indexes beside it), and 600 s of
 * CPU time. Best effort. */
void ospx__child_bound(pid_t pid, off_t object_size);

/* A growable buffer of a tool's output, consumed a line at a time. */
struct ospx__line_buffer {
    char *data;
    size_t length, capacity;
};
/* Read what is available from fd. Bytes read, 0 at end of file, or a negative errno. */
ssize_t ospx__line_buffer_fill(struct ospx__line_buffer *buffer, int fd);
/* Take the first complete line (NUL-terminated, without its newline). 1 when one was taken. */
int ospx__line_buffer_take(struct ospx__line_buffer *buffer, char **line, size_t *consumed);
/* Drop the consumed bytes from the front of the buffer. */
void ospx__line_buffer_compact(struct ospx__line_buffer *buffer, size_t *consumed);

#endif /* OSPX_SYMBOLIZE_INTERNAL_H */
