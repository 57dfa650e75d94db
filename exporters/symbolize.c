/* symbolize.c — turns the raw pcs of a profile into source-level frames: function, file, line,
 * column, with inlined calls expanded.
 *
 * It owns the mapping of a pc to its image (the image whose executable range [text,
 * text + text_size) holds it; the greatest base at or below the pc only among images that
 * reported no range), the unsliding (file address = pc - slide, after the -1 that moves a
 * return address back into its call instruction), and the conversation with the external
 * symbolizer: one long-lived `llvm-symbolizer` per image fed addresses through a socket and
 * answering one JSON line per address; `atos` (macOS) pinned to the image's recorded arch and
 * given the recorded path unchanged; raw hex addresses when neither can describe the image.
 * A missing tool or object is a warning line, never a failure. The "[vdso]" pseudo image has
 * no file; when the profile was recorded by the running kernel, a copy of this process's own
 * vDSO describes it (see local_vdso_copy). Separate debug information
 * (a .gnu_debuglink file beside the object, in its .debug/ folder or under
 * /usr/lib/debug/<dir>/, or /usr/lib/debug/.build-id/xx/rest.debug) is found by
 * llvm-symbolizer itself, the way gdb and perf find it.
 *
 * DESIGN: each distinct (image, file address) is asked once. Every stack position first
 * becomes a lookup (image, file address); per image the addresses are sorted and made unique,
 * symbolized in one pass, and the answers are found again by binary search. Frames are
 * interned in a hash table keyed by (name, file, line, column, image).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ospc.h"
#include "ospx_internal.h"

extern char **environ;

/* A symbolizer that says nothing for this long is presumed hung: it is killed and the
 * image's remaining addresses stay hex. Generous, because the first answer for a large
 * binary waits for llvm-symbolizer to index all of its DWARF. */
#define SYMBOLIZER_SILENCE_MS 300000
/* The symbolizer's limits (see bound_tool). */
#define SYMBOLIZER_MEMORY_BASE (UINT64_C(2) << 30)
#define SYMBOLIZER_CPU_SECONDS 600
/* How long a tool may take to exit once its input is closed. */
#define SYMBOLIZER_EXIT_MS 10000
/* atos takes its addresses as arguments; this many per invocation keeps argv small. */
#define ATOS_ADDRESSES_PER_RUN 256
/* No image: the lookup's image index. */
#define NO_IMAGE UINT32_MAX

/* One source location of an answer: an inline level, innermost first. */
struct symbol_location {
    char *name; /* NULL when the symbolizer knew no function */
    char *file; /* "" when unknown */
    int line, column;
};

/* The answer for one file address: its inline chain, or count 0 when nothing is known. */
struct symbol_answer {
    struct symbol_location *chain;
    size_t count;
    /* per level, the interned frame (SKIPPED_FRAME: the profiler's own), once a stack has used
     * the answer; NULL before. A level without a name is named by the pc in hex: those frames
     * hold for interned_pc only. */
    uint32_t *interned;
    uint64_t interned_pc;
    bool interned_named; /* every level has a name: the frames hold for any pc */
};
#define SKIPPED_FRAME UINT32_MAX

/* Per image: the distinct file addresses asked for, sorted, and their answers. */
struct image_work {
    uint64_t *addresses;
    size_t count, capacity;
    struct symbol_answer *answers;
    bool running_vdso; /* described by a copy of the running kernel's vDSO */
};

/* A running symbolizer: its pid, the socket its stdin reads (NULL for atos) and the pipe its
 * stdout writes. */
struct tool_process {
    pid_t pid;
    int input; /* -1 when none */
    int output;
};

enum symbolizer_kind { SYMBOLIZER_NONE, SYMBOLIZER_LLVM, SYMBOLIZER_ATOS };

struct symbolize_state {
    const struct ospx_raw *raw;
    const struct ospx_symbolize_options *options;
    enum symbolizer_kind kind;
    char *tool_path;
    struct image_work *work;      /* one per raw image */
    struct ospx__object *objects; /* one per raw image: what describes it (objects.c) */
    /* progress */
    struct timespec started;
    size_t addresses_total, addresses_done, progress_shown;
    int progress_visible;
    /* the one llvm-symbolizer all images share (started on first use; each line it reads
     * names its object), and the address-space limit it runs under */
    struct tool_process llvm;
    int llvm_running, llvm_bounded;
    uint64_t objects_size;
    /* objects that were not there, reported in one line at the end */
    size_t missing_objects;
    const char *first_missing_object;
};

/* Interned frames. */
struct frame_table {
    struct ospx_symbols *symbols;
    size_t frame_capacity;
    uint32_t *slots; /* open addressing: frame index + 1, 0 empty */
    size_t slot_count;
};

__attribute__((format(printf, 2, 3))) static void symbolize_warn(struct symbolize_state *state,
                                                                 const char *fmt, ...)
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
    ospx__printable(text); /* paths in warnings come from the profile */
    fprintf(out, "osprey: %s\n", text);
    fflush(out);
}

/* Called after each answer; redraws the progress line now and then when asked to. */
static void symbolize_progress(struct symbolize_state *state, int final)
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

/* ---- tools ---- */

/* The full path of an executable `name` (common/'s PATH search), malloc'd; NULL when none. */
static char *find_executable(const char *name)
{
    return ospc_find_on_path(name);
}

/* Choose the tool: the one the options name, else llvm-symbolizer (plain or versioned) on
 * PATH, else atos, else none. */
static void choose_symbolizer(struct symbolize_state *state)
{
    const char *requested = state->options != NULL ? state->options->symbolizer : NULL;
    if (requested != NULL) {
        state->tool_path = find_executable(requested);
        if (state->tool_path != NULL) {
            state->kind = SYMBOLIZER_LLVM;
            return;
        }
        symbolize_warn(state, "symbolizer %s not found; looking for llvm-symbolizer on PATH",
                       requested);
    }
    state->tool_path = find_executable("llvm-symbolizer");
    for (int version = 20; state->tool_path == NULL && version >= 10; version--) {
        char name[32];
        snprintf(name, sizeof name, "llvm-symbolizer-%d", version);
        state->tool_path = find_executable(name);
    }
    if (state->tool_path != NULL) {
        state->kind = SYMBOLIZER_LLVM;
        return;
    }
    state->tool_path = find_executable("atos");
    if (state->tool_path != NULL) {
        state->kind = SYMBOLIZER_ATOS;
        return;
    }
    state->kind = SYMBOLIZER_NONE;
}

/* Start argv[0] with stdout on a pipe, stderr on /dev/null and stdin on a socket (with_input)
 * or /dev/null. Returns 0 or a negative errno. */
static int tool_start(char *const argv[], int with_input, struct tool_process *process)
{
    int output_pipe[2], input_pair[2] = {-1, -1};
    if (pipe2(output_pipe, O_CLOEXEC) != 0)
        return -errno;
    /* A socket rather than a pipe for the tool's stdin: send(MSG_NOSIGNAL) then reports a
     * dead tool as EPIPE instead of raising SIGPIPE in the caller's process. */
    if (with_input && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, input_pair) != 0) {
        int code = errno;
        close(output_pipe[0]);
        close(output_pipe[1]);
        return -code;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (with_input)
        posix_spawn_file_actions_adddup2(&actions, input_pair[1], STDIN_FILENO);
    else
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, output_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawn(&process->pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(output_pipe[1]);
    if (with_input)
        close(input_pair[1]);
    if (rc != 0) {
        close(output_pipe[0]);
        if (with_input)
            close(input_pair[0]);
        return -rc;
    }
    process->input = input_pair[0];
    process->output = output_pipe[0];
    return 0;
}

/* Close the pipes and reap the child; kill it first when `kill_it`, or when it has not
 * exited (its stdout reaching end of file) a while after its input closed: a tool must never
 * hang the caller. */
static void tool_finish(struct tool_process *process, int kill_it)
{
    if (process->input >= 0)
        close(process->input);
    struct pollfd poll_fd = {.fd = process->output, .events = POLLIN};
    char discard[4096];
    while (!kill_it) {
        int ready = poll(&poll_fd, 1, SYMBOLIZER_EXIT_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            kill_it = 1;
        else if (read(process->output, discard, sizeof discard) <= 0)
            break;
    }
    close(process->output);
    if (kill_it)
        kill(process->pid, SIGKILL);
    while (waitpid(process->pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* Wait until fd has something to read. Returns 1, or 0 when the tool stayed silent too long. */
static int tool_wait_readable(int fd)
{
    struct pollfd poll_fd = {.fd = fd, .events = POLLIN};
    int ready;
    while ((ready = poll(&poll_fd, 1, SYMBOLIZER_SILENCE_MS)) < 0 && errno == EINTR)
        ;
    return ready > 0;
}

/* A growable buffer of the tool's output, consumed a line at a time. */
struct line_buffer {
    char *data;
    size_t length, capacity;
};

/* Read what is available from fd into the buffer. Returns bytes read, 0 at end of file, or a
 * negative errno. */
static ssize_t line_buffer_fill(struct line_buffer *buffer, int fd)
{
    if (buffer->capacity - buffer->length < 4096) {
        size_t capacity = buffer->capacity > 0 ? buffer->capacity * 2 : 65536;
        char *data = realloc(buffer->data, capacity);
        if (data == NULL)
            return -ENOMEM;
        buffer->data = data;
        buffer->capacity = capacity;
    }
    ssize_t got = read(fd, buffer->data + buffer->length, buffer->capacity - buffer->length - 1);
    if (got < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : -errno;
    buffer->length += (size_t)got;
    return got;
}

/* Take the first complete line out of the buffer into line (NUL-terminated, without its
 * newline). Returns 1 when a line was taken, 0 when none is complete yet. */
static int line_buffer_take(struct line_buffer *buffer, char **line, size_t *consumed)
{
    char *start = buffer->data + *consumed;
    char *newline = memchr(start, '\n', buffer->length - *consumed);
    if (newline == NULL)
        return 0;
    *newline = '\0';
    *line = start;
    *consumed = (size_t)(newline - buffer->data) + 1;
    return 1;
}

/* Drop the consumed bytes from the front of the buffer. */
static void line_buffer_compact(struct line_buffer *buffer, size_t *consumed)
{
    memmove(buffer->data, buffer->data + *consumed, buffer->length - *consumed);
    buffer->length -= *consumed;
    *consumed = 0;
}

/* ---- answers ---- */

static void answer_free(struct symbol_answer *answer)
{
    for (size_t i = 0; i < answer->count; i++) {
        free(answer->chain[i].name);
        free(answer->chain[i].file);
    }
    free(answer->chain);
    free(answer->interned);
    answer->chain = NULL;
    answer->interned = NULL;
    answer->count = 0;
}

/* Append one location to an answer; name may be NULL or "" (unknown), file NULL (""). */
static int answer_add(struct symbol_answer *answer, const char *name, const char *file, int line,
                      int column)
{
    struct symbol_location *chain =
        realloc(answer->chain, (answer->count + 1) * sizeof *answer->chain);
    if (chain == NULL)
        return -ENOMEM;
    answer->chain = chain;
    struct symbol_location *location = &chain[answer->count];
    location->name = name != NULL && name[0] != '\0' ? strdup(name) : NULL;
    location->file = strdup(file != NULL ? file : "");
    location->line = line > 0 ? line : 0;
    location->column = column > 0 ? column : 0;
    answer->count++;
    if (location->file == NULL || (name != NULL && name[0] != '\0' && location->name == NULL))
        return -ENOMEM;
    return 0;
}

/* ---- llvm-symbolizer's answer lines, read without a JSON library ----
 * Tens of thousands of lines, each a small object whose names can be kilobytes long: jansson's
 * document per line was half of this process's time while symbolizing. The reader below takes
 * the answer's own shape (see parse_llvm_answer) and gives up — the line then goes to jansson —
 * on anything else. Strings are decoded into `scratch` (as long as the line, never longer). */
struct answer_reader {
    const char *p;
    char *scratch;
};

static void answer_skip_space(struct answer_reader *r)
{
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\r' || *r->p == '\n')
        r->p++;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p, or -1. */
static long hex4(const char *p)
{
    long value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(p[i]);
        if (digit < 0)
            return -1;
        value = value * 16 + digit;
    }
    return value;
}

/* A JSON string at r->p, decoded (UTF-8, NUL-terminated) into the scratch space; NULL when it
 * is none, or holds an escape this reader does not take (a NUL, a lone surrogate). */
static const char *answer_string(struct answer_reader *r)
{
    answer_skip_space(r);
    if (*r->p != '"')
        return NULL;
    const char *from = r->p + 1;
    char *start = r->scratch, *to = r->scratch;
    for (;;) {
        char c = *from++;
        if (c == '\0' || (unsigned char)c < 0x20)
            return NULL;
        if (c == '"')
            break;
        if (c != '\\') {
            *to++ = c;
            continue;
        }
        c = *from++;
        const char *simple = strchr("\"\\/bfnrt", c);
        if (c != '\0' && simple != NULL) {
            *to++ = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            continue;
        }
        if (c != 'u')
            return NULL;
        long code = hex4(from);
        if (code <= 0)
            return NULL;
        from += 4;
        if (code >= 0xd800 && code <= 0xdbff) { /* a surrogate pair */
            long low = from[0] == '\\' && from[1] == 'u' ? hex4(from + 2) : -1;
            if (low < 0xdc00 || low > 0xdfff)
                return NULL;
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
            from += 6;
        } else if (code >= 0xdc00 && code <= 0xdfff) {
            return NULL;
        }
        /* UTF-8 is never longer than the escape it came from */
        if (code < 0x80) {
            *to++ = (char)code;
        } else if (code < 0x800) {
            *to++ = (char)(0xc0 | code >> 6);
            *to++ = (char)(0x80 | (code & 0x3f));
        } else if (code < 0x10000) {
            *to++ = (char)(0xe0 | code >> 12);
            *to++ = (char)(0x80 | (code >> 6 & 0x3f));
            *to++ = (char)(0x80 | (code & 0x3f));
        } else {
            *to++ = (char)(0xf0 | code >> 18);
            *to++ = (char)(0x80 | (code >> 12 & 0x3f));
            *to++ = (char)(0x80 | (code >> 6 & 0x3f));
            *to++ = (char)(0x80 | (code & 0x3f));
        }
    }
    *to++ = '\0';
    r->scratch = to;
    r->p = from;
    return start;
}

/* A JSON integer that fits an int (what Line and Column are); 0 and r->p unmoved otherwise. */
static int answer_integer(struct answer_reader *r, int *value)
{
    answer_skip_space(r);
    const char *p = r->p;
    int negative = *p == '-';
    p += negative;
    if (*p < '0' || *p > '9')
        return 0;
    long long number = 0;
    while (*p >= '0' && *p <= '9' && number < INT32_MAX)
        number = number * 10 + (*p++ - '0');
    if (number >= INT32_MAX || *p == '.' || *p == 'e' || *p == 'E')
        return 0;
    *value = (int)(negative ? -number : number);
    r->p = p;
    return 1;
}

/* ':' after a key, or ',' / the closing `close` after a value: 1 for ',', 2 for the close,
 * 0 for anything else. */
static int answer_next(struct answer_reader *r, char close)
{
    answer_skip_space(r);
    if (*r->p == ',') {
        r->p++;
        return 1;
    }
    if (*r->p == close) {
        r->p++;
        return 2;
    }
    return 0;
}

static int answer_colon(struct answer_reader *r)
{
    answer_skip_space(r);
    return *r->p++ == ':';
}

/* One element of "Symbol": its names, line and column (other members: numbers and strings). */
static int answer_symbol(struct answer_reader *r, struct symbol_answer *answer, int *rc)
{
    answer_skip_space(r);
    if (*r->p++ != '{')
        return 0;
    const char *name = NULL, *file = NULL;
    int line = 0, column = 0;
    for (int more = 1; more == 1;) {
        const char *key = answer_string(r);
        if (key == NULL || !answer_colon(r))
            return 0;
        if (strcmp(key, "FunctionName") == 0 || strcmp(key, "FileName") == 0 ||
            strcmp(key, "StartFileName") == 0 || strcmp(key, "StartAddress") == 0) {
            const char *text = answer_string(r);
            if (text == NULL)
                return 0;
            if (key[0] == 'F' && key[1] == 'u')
                name = text;
            else if (key[0] == 'F')
                file = text;
        } else {
            int number = 0;
            if (!answer_integer(r, &number))
                return 0;
            if (strcmp(key, "Line") == 0)
                line = number;
            else if (strcmp(key, "Column") == 0)
                column = number;
        }
        more = answer_next(r, '}');
        if (more == 0)
            return 0;
    }
    if ((name == NULL || name[0] == '\0') && (file == NULL || file[0] == '\0'))
        return 1;
    *rc = answer_add(answer, name, file, line, column);
    return 1;
}

/* parse_llvm_answer without jansson: 1 when the line was read (*rc its result), 0 when it is
 * not in the shape this reader takes (nothing was added to the answer). */
static int parse_llvm_answer_fast(const char *line, uint64_t address, struct symbol_answer *answer,
                                  char *tool_error, size_t tool_error_size, int *rc)
{
    char *scratch = malloc(strlen(line) + 1);
    if (scratch == NULL)
        return 0;
    struct answer_reader r = {line, scratch};
    struct symbol_answer found = {0};
    const char *echoed = NULL, *error = NULL;
    int ok = 0;
    answer_skip_space(&r);
    if (*r.p++ != '{')
        goto done;
    for (int more = 1; more == 1;) {
        const char *key = answer_string(&r);
        if (key == NULL || !answer_colon(&r))
            goto done;
        if (strcmp(key, "Address") == 0 || strcmp(key, "ModuleName") == 0) {
            const char *text = answer_string(&r);
            if (text == NULL)
                goto done;
            if (key[0] == 'A')
                echoed = text;
        } else if (strcmp(key, "Error") == 0) {
            /* {"Message": "..."} */
            answer_skip_space(&r);
            if (*r.p++ != '{')
                goto done;
            const char *member = answer_string(&r);
            if (member == NULL || strcmp(member, "Message") != 0 || !answer_colon(&r) ||
                (error = answer_string(&r)) == NULL || answer_next(&r, '}') != 2)
                goto done;
        } else if (strcmp(key, "Symbol") == 0) {
            answer_skip_space(&r);
            if (*r.p++ != '[')
                goto done;
            answer_skip_space(&r);
            if (*r.p == ']') {
                r.p++;
            } else {
                for (int next = 1; next == 1;) {
                    if (!answer_symbol(&r, &found, rc) || *rc < 0)
                        goto done;
                    next = answer_next(&r, ']');
                    if (next == 0)
                        goto done;
                }
            }
        } else {
            goto done;
        }
        more = answer_next(&r, '}');
        if (more == 0)
            goto done;
    }
    answer_skip_space(&r);
    if (*r.p != '\0')
        goto done;
    ok = 1;
    if (echoed == NULL || strtoull(echoed, NULL, 16) != address) {
        *rc = -EPROTO;
        goto done;
    }
    if (error != NULL)
        snprintf(tool_error, tool_error_size, "%s", error);
    for (size_t i = 0; i < found.count && *rc == 0; i++)
        *rc = answer_add(answer, found.chain[i].name, found.chain[i].file, found.chain[i].line,
                         found.chain[i].column);
done:
    if (!ok)
        *rc = 0;
    answer_free(&found);
    free(scratch);
    return ok;
}

/* One JSON line of llvm-symbolizer --output-style=JSON for `address`. A line about another
 * address means the conversation is out of step: returns -EPROTO. An "Error" answer, or no
 * function and no file, leaves the answer empty and sets *tool_error to the message. */
static int parse_llvm_answer(const char *line, uint64_t address, struct symbol_answer *answer,
                             char *tool_error, size_t tool_error_size)
{
    int fast_rc = 0;
    if (parse_llvm_answer_fast(line, address, answer, tool_error, tool_error_size, &fast_rc))
        return fast_rc;
    json_t *root = json_loads(line, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return -EPROTO;
    }
    const char *echoed = json_string_value(json_object_get(root, "Address"));
    if (echoed == NULL || strtoull(echoed, NULL, 16) != address) {
        json_decref(root);
        return -EPROTO;
    }
    json_t *error = json_object_get(root, "Error");
    if (error != NULL) {
        const char *message = json_string_value(json_object_get(error, "Message"));
        snprintf(tool_error, tool_error_size, "%s", message != NULL ? message : "error");
    }
    int rc = 0;
    json_t *symbols = json_object_get(root, "Symbol");
    size_t index;
    json_t *symbol;
    json_array_foreach(symbols, index, symbol)
    {
        const char *name = json_string_value(json_object_get(symbol, "FunctionName"));
        const char *file = json_string_value(json_object_get(symbol, "FileName"));
        if ((name == NULL || name[0] == '\0') && (file == NULL || file[0] == '\0'))
            continue;
        rc =
            answer_add(answer, name, file, (int)json_integer_value(json_object_get(symbol, "Line")),
                       (int)json_integer_value(json_object_get(symbol, "Column")));
        if (rc < 0)
            break;
    }
    json_decref(root);
    return rc;
}

/* Ask a running llvm-symbolizer about every address of `work`, writing while it reads so
 * that neither side can fill a pipe and wait on the other. Answers go to work->answers.
 * Returns 0, or a negative errno with a warning already given for the image. */
static int converse_llvm(struct symbolize_state *state, struct tool_process *process,
                         struct image_work *work, const char *object)
{
    char pending[65536];
    size_t pending_length = 0, pending_sent = 0, next_to_write = 0, answered = 0;
    struct line_buffer buffer = {0};
    size_t consumed = 0;
    char tool_error[256] = "";
    int rc = 0;
    int input_open = 1;
    while (answered < work->count) {
        if (input_open && pending_sent == pending_length && next_to_write < work->count) {
            pending_length = 0;
            pending_sent = 0;
            /* One line per address, naming its object: "OBJECT" 0xADDRESS. */
            size_t line_size = strlen(object) + 24;
            while (next_to_write < work->count && pending_length + line_size < sizeof pending)
                pending_length += (size_t)snprintf(
                    pending + pending_length, sizeof pending - pending_length,
                    "\"%s\" 0x%" PRIx64 "\n", object, work->addresses[next_to_write++]);
        }
        int want_write = input_open && pending_sent < pending_length;
        struct pollfd fds[2] = {{.fd = process->output, .events = POLLIN},
                                {.fd = process->input, .events = POLLOUT}};
        int ready = poll(fds, want_write ? 2 : 1, SYMBOLIZER_SILENCE_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            symbolize_warn(state, "%s: the symbolizer stopped answering; %zu addresses stay hex",
                           object, work->count - answered);
            rc = -ETIMEDOUT;
            break;
        }
        if (want_write && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t sent = send(process->input, pending + pending_sent,
                                pending_length - pending_sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (sent > 0)
                pending_sent += (size_t)sent;
            else if (sent < 0 && errno != EAGAIN && errno != EINTR)
                input_open = 0; /* the tool is gone; its output will say how far it got */
        }
        if (fds[0].revents == 0)
            continue;
        ssize_t got = line_buffer_fill(&buffer, process->output);
        if (got < 0) {
            rc = (int)got;
            break;
        }
        if (got == 0) {
            symbolize_warn(state, "%s: the symbolizer exited early; %zu addresses stay hex", object,
                           work->count - answered);
            rc = -EPIPE;
            break;
        }
        char *line;
        while (answered < work->count && line_buffer_take(&buffer, &line, &consumed)) {
            rc = parse_llvm_answer(line, work->addresses[answered], &work->answers[answered],
                                   tool_error, sizeof tool_error);
            if (rc < 0)
                break;
            answered++;
            state->addresses_done++;
            symbolize_progress(state, 0);
        }
        if (rc == -EPROTO)
            symbolize_warn(state,
                           "%s: unexpected answer from the symbolizer; %zu addresses "
                           "stay hex",
                           object, work->count - answered);
        if (rc < 0)
            break;
        line_buffer_compact(&buffer, &consumed);
    }
    free(buffer.data);
    if (rc == 0 && tool_error[0] != '\0')
        symbolize_warn(state, "%s: %s; its frames are shown as hex addresses", object, tool_error);
    state->addresses_done += work->count - answered;
    return rc;
}

static int symbolize_object_llvm(struct symbolize_state *state, struct image_work *work,
                                 const char *object, int pseudo_image);

/* When this machine booted, in ns since the epoch (/proc/stat btime); 0 when unknown. */
static uint64_t boot_time_ns(void)
{
    FILE *stat_file = fopen("/proc/stat", "r");
    if (stat_file == NULL)
        return 0;
    char line[256];
    unsigned long long seconds = 0;
    while (fgets(line, sizeof line, stat_file) != NULL)
        if (sscanf(line, "btime %llu", &seconds) == 1)
            break;
    fclose(stat_file);
    return (uint64_t)seconds * 1000000000u;
}

/* The vDSO has no file on disk, but every process of one running kernel maps the same one.
 * When the profile was recorded since this machine booted (so by this kernel) and the
 * executable span of our own vDSO has the recorded size, copy our vDSO into a temporary file
 * at path (created with mkstemp; the caller unlinks it) so that llvm-symbolizer can name its
 * functions (__vdso_clock_gettime, ...), as perf does from its own copy. File addresses are
 * vDSO offsets on both sides (the recorded slide is its load address). Returns 0, or
 * -ENOENT when our vDSO cannot describe the image, or a negative errno. */
static int local_vdso_copy(const struct ospx_raw *raw, const struct ospx_image *image, char *path,
                           size_t size)
{
    uint64_t booted = boot_time_ns();
    const unsigned char *start = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (booted == 0 || raw->start_unix_ns < booted || start == NULL || image->text_size == 0)
        return -ENOENT;
    const ElfW(Ehdr) *header = (const ElfW(Ehdr) *)start;
    if (memcmp(header->e_ident, ELFMAG, SELFMAG) != 0)
        return -ENOENT;
    const ElfW(Phdr) *segments = (const ElfW(Phdr) *)(start + header->e_phoff);
    uint64_t text_lo = UINT64_MAX, text_hi = 0, length = 0;
    for (int i = 0; i < header->e_phnum; i++) {
        if (segments[i].p_type != PT_LOAD)
            continue;
        if (segments[i].p_offset + segments[i].p_filesz > length)
            length = segments[i].p_offset + segments[i].p_filesz;
        if ((segments[i].p_flags & PF_X) == 0)
            continue;
        if (segments[i].p_vaddr < text_lo)
            text_lo = segments[i].p_vaddr;
        if (segments[i].p_vaddr + segments[i].p_memsz > text_hi)
            text_hi = segments[i].p_vaddr + segments[i].p_memsz;
    }
    if (text_lo == UINT64_MAX || text_hi - text_lo != image->text_size)
        return -ENOENT; /* another kernel's vDSO, or a producer that measured differently */
    /* The section headers (the symbol table's way in) sit inside the mapped image too. */
    uint64_t sections_end = header->e_shoff + (uint64_t)header->e_shnum * header->e_shentsize;
    if (sections_end > length)
        length = sections_end;
    const char *tmp = getenv("TMPDIR");
    snprintf(path, size, "%s/osprey-vdso-XXXXXX", tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        path[0] = '\0';
        return -errno;
    }
    size_t written = 0;
    while (written < length) {
        ssize_t n = write(fd, start + written, length - written);
        if (n <= 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        written += (size_t)n;
    }
    int rc = written == length ? 0 : -EIO;
    if (close(fd) != 0 && rc == 0)
        rc = -EIO;
    if (rc != 0) {
        unlink(path);
        path[0] = '\0';
    }
    return rc;
}

/* Symbolize one image with llvm-symbolizer: one process for all its addresses. */
static int symbolize_image_llvm(struct symbolize_state *state, const struct ospx_image *image,
                                struct image_work *work, const char *object)
{
    /* A recorded path that is not absolute names a pseudo image ("[vdso]",
     * "linux-vdso.so.1"): no file describes it, and that is no news worth a warning —
     * except the vDSO of the running kernel, which a copy of our own can describe. */
    int pseudo_image = object[0] != '/' && object == image->path;
    char vdso_copy[4200] = "";
    if (pseudo_image &&
        (strcmp(image->path, "[vdso]") == 0 || strcmp(image->path, "linux-vdso.so.1") == 0)) {
        if (local_vdso_copy(state->raw, image, vdso_copy, sizeof vdso_copy) == 0) {
            object = vdso_copy;
            pseudo_image = 0;
            work->running_vdso = true;
        }
    }
    int rc = symbolize_object_llvm(state, work, object, pseudo_image);
    if (vdso_copy[0] != '\0')
        unlink(vdso_copy);
    return rc;
}

/* Limits on a symbolizer process, so that no object, however odd, takes the machine: address
 * space SYMBOLIZER_MEMORY_BASE plus four times the object (it maps the file and builds its
 * indexes beside it), and SYMBOLIZER_CPU_SECONDS of CPU time. */
static void bound_tool(pid_t pid, off_t object_size)
{
    uint64_t memory = SYMBOLIZER_MEMORY_BASE + 4 * (uint64_t)object_size;
    struct rlimit address_space = {memory, memory};
    struct rlimit cpu = {SYMBOLIZER_CPU_SECONDS, SYMBOLIZER_CPU_SECONDS};
    /* Best effort: without the limits the silence timeout still ends a hung tool. */
    (void)prlimit(pid, RLIMIT_AS, &address_space, NULL);
    (void)prlimit(pid, RLIMIT_CPU, &cpu, NULL);
}

/* Start the one llvm-symbolizer: JSON answers with inline levels, each input line naming its
 * object. */
static int llvm_start(char *tool_path, struct tool_process *process)
{
    char *argv[] = {
        tool_path, "--output-style=JSON", "--inlining", "--functions=linkage", "--demangle", NULL};
    return tool_start(argv, 1, process);
}

struct ospx_prestarted_symbolizer {
    char *tool_path;
    struct tool_process process;
};

struct ospx_prestarted_symbolizer *ospx_symbolizer_prestart(void)
{
    struct symbolize_state probe = {0};
    choose_symbolizer(&probe);
    struct ospx_prestarted_symbolizer *started = calloc(1, sizeof *started);
    if (probe.kind != SYMBOLIZER_LLVM || started == NULL ||
        llvm_start(probe.tool_path, &started->process) != 0) {
        free(probe.tool_path);
        free(started);
        return NULL;
    }
    started->tool_path = probe.tool_path;
    return started;
}

void ospx_symbolizer_prestart_free(struct ospx_prestarted_symbolizer *started)
{
    if (started == NULL)
        return;
    tool_finish(&started->process, 1);
    free(started->tool_path);
    free(started);
}

/* Take over a prestarted symbolizer when it is the one this run chose; else end it. */
static void adopt_prestarted(struct symbolize_state *state,
                             struct ospx_prestarted_symbolizer *started)
{
    if (started == NULL)
        return;
    if (state->kind == SYMBOLIZER_LLVM && state->tool_path != NULL && !state->llvm_running &&
        strcmp(state->tool_path, started->tool_path) == 0) {
        state->llvm = started->process;
        state->llvm_running = 1;
        state->llvm_bounded = 0;
        free(started->tool_path);
        free(started);
        return;
    }
    ospx_symbolizer_prestart_free(started);
}

/* symbolize_image_llvm for an object file (or a pseudo image: its addresses stay hex). */
static int symbolize_object_llvm(struct symbolize_state *state, struct image_work *work,
                                 const char *object, int pseudo_image)
{
    if (pseudo_image || access(object, R_OK) != 0) {
        if (!pseudo_image && state->missing_objects++ == 0)
            state->first_missing_object = object;
        state->addresses_done += work->count;
        return 0;
    }
    /* An image path comes from the profile, and a profile may come from anywhere: a FIFO
     * would block the tool, a device like /dev/zero would never end. */
    char why[160];
    off_t object_size = 0;
    if (ospx__elf_check(object, &object_size, why, sizeof why) != 0) {
        symbolize_warn(state, "%s: %s; its frames are shown as hex addresses", object, why);
        state->addresses_done += work->count;
        return 0;
    }
    /* The object is named on each input line, quoted: a path with a quote or a line break
     * cannot be said that way. */
    if (strpbrk(object, "\"\n\r") != NULL) {
        symbolize_warn(state,
                       "%s: a path with a quote or line break; its frames are shown as "
                       "hex addresses",
                       object);
        state->addresses_done += work->count;
        return 0;
    }
    if (!state->llvm_running) {
        /* Starting llvm-symbolizer costs about half a second here (it loads all of LLVM): one
         * process serves every image. */
        int rc = llvm_start(state->tool_path, &state->llvm);
        if (rc < 0) {
            symbolize_warn(state, "cannot run %s: %s; frames are shown as hex addresses",
                           state->tool_path, strerror(-rc));
            state->addresses_done += work->count;
            return 0;
        }
        state->llvm_running = 1;
        state->llvm_bounded = 0;
    }
    if (!state->llvm_bounded) {
        /* Before the first address is sent, so before it reads an object: bound the tool. */
        bound_tool(state->llvm.pid,
                   (off_t)(state->objects_size > (uint64_t)object_size ? state->objects_size
                                                                       : (uint64_t)object_size));
        state->llvm_bounded = 1;
    }
    int rc = converse_llvm(state, &state->llvm, work, object);
    if (rc < 0) { /* a tool that broke the conversation is not asked again */
        tool_finish(&state->llvm, 1);
        state->llvm_running = 0;
    }
    return rc == -ENOMEM ? rc : 0;
}

/* One line of atos output: "NAME (in IMAGE) (FILE:LINE)", "NAME (in IMAGE) + OFFSET", or a
 * bare hex address when atos knows nothing. */
static int parse_atos_answer(char *line, struct symbol_answer *answer)
{
    if (strncmp(line, "0x", 2) == 0 || line[0] == '\0')
        return 0;
    char *file = NULL;
    int line_number = 0;
    size_t length = strlen(line);
    if (length > 0 && line[length - 1] == ')') {
        char *open = strrchr(line, '(');
        char *colon = open != NULL ? strrchr(open, ':') : NULL;
        if (colon != NULL && open > line) {
            line_number = atoi(colon + 1);
            *colon = '\0';
            file = open + 1;
            open[-1] = '\0';
        }
    }
    char *in = strstr(line, " (in ");
    if (in != NULL)
        *in = '\0';
    else
        line[strcspn(line, " ")] = '\0';
    return answer_add(answer, line, file, line_number, 0);
}

/* Symbolize one image with atos: the recorded path handed over unchanged (a dylib of the
 * shared cache has no file of its own), pinned to the recorded arch, with the recorded load
 * address, so atos slides the addresses itself. */
static int symbolize_image_atos(struct symbolize_state *state, const struct ospx_image *image,
                                struct image_work *work, const char *object)
{
    for (size_t first = 0; first < work->count; first += ATOS_ADDRESSES_PER_RUN) {
        size_t count = work->count - first;
        if (count > ATOS_ADDRESSES_PER_RUN)
            count = ATOS_ADDRESSES_PER_RUN;
        char load_address[32];
        snprintf(load_address, sizeof load_address, "0x%" PRIx64, image->base);
        char *argv[ATOS_ADDRESSES_PER_RUN + 10];
        char addresses[ATOS_ADDRESSES_PER_RUN][24];
        size_t argc = 0;
        argv[argc++] = state->tool_path;
        argv[argc++] = "-o";
        argv[argc++] = (char *)object;
        if (image->arch != NULL && image->arch[0] != '\0') {
            argv[argc++] = "-arch";
            argv[argc++] = image->arch;
        }
        argv[argc++] = "-l";
        argv[argc++] = load_address;
        for (size_t i = 0; i < count; i++) {
            /* atos wants the address as it was in the process: file address + slide. */
            snprintf(addresses[i], sizeof addresses[i], "0x%" PRIx64,
                     work->addresses[first + i] + image->slide);
            argv[argc++] = addresses[i];
        }
        argv[argc] = NULL;
        struct tool_process process;
        int rc = tool_start(argv, 0, &process);
        if (rc < 0) {
            symbolize_warn(state, "cannot run %s: %s; frames are shown as hex addresses",
                           state->tool_path, strerror(-rc));
            state->addresses_done += work->count - first;
            return 0;
        }
        struct line_buffer buffer = {0};
        size_t consumed = 0, answered = 0;
        char *line;
        ssize_t got;
        while (answered < count && tool_wait_readable(process.output) &&
               (got = line_buffer_fill(&buffer, process.output)) > 0) {
            while (answered < count && line_buffer_take(&buffer, &line, &consumed)) {
                rc = parse_atos_answer(line, &work->answers[first + answered]);
                if (rc < 0)
                    break;
                answered++;
            }
            if (rc < 0)
                break;
            line_buffer_compact(&buffer, &consumed);
        }
        free(buffer.data);
        tool_finish(&process, answered < count);
        state->addresses_done += count;
        symbolize_progress(state, 0);
        if (rc < 0)
            return rc;
        if (answered < count)
            symbolize_warn(state, "%s: atos answered %zu of %zu addresses; the rest stay hex",
                           object, answered, count);
    }
    return 0;
}

/* ---- mapping pcs to images ---- */

/* The image a pc belongs to: the one whose text range holds it, else, among images with no
 * range, the one with the greatest base at or below it. NO_IMAGE when none. */
uint32_t ospx__image_of(const struct ospx_raw *raw, uint64_t pc)
{
    uint32_t fallback = NO_IMAGE;
    for (size_t i = 0; i < raw->image_count; i++) {
        const struct ospx_image *image = &raw->images[i];
        if (image->text_size > 0) {
            if (pc >= image->text && pc - image->text < image->text_size)
                return (uint32_t)i;
        } else if (image->base <= pc &&
                   (fallback == NO_IMAGE || image->base > raw->images[fallback].base)) {
            fallback = (uint32_t)i;
        }
    }
    return fallback;
}

/* The address looked up for stack position k: return addresses (k >= 1) point after their
 * call instruction, so one byte back lands in the call and attributes to the call's line. */
static uint64_t lookup_pc(const struct ospx_stack *stack, size_t k)
{
    return k > 0 && stack->pcs[k] > 0 ? stack->pcs[k] - 1 : stack->pcs[k];
}

static int compare_addresses(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Collect each image's distinct file addresses, sorted. */
static int collect_addresses(struct symbolize_state *state)
{
    const struct ospx_raw *raw = state->raw;
    for (size_t i = 0; i < raw->stack_count; i++) {
        const struct ospx_stack *stack = &raw->stacks[i];
        for (size_t k = 0; k < stack->depth; k++) {
            uint64_t pc = lookup_pc(stack, k);
            uint32_t image = ospx__image_of(raw, pc);
            if (image == NO_IMAGE)
                continue;
            struct image_work *work = &state->work[image];
            if (work->count == work->capacity) {
                size_t capacity = work->capacity > 0 ? work->capacity * 2 : 64;
                uint64_t *addresses = realloc(work->addresses, capacity * sizeof *addresses);
                if (addresses == NULL)
                    return -ENOMEM;
                work->addresses = addresses;
                work->capacity = capacity;
            }
            work->addresses[work->count++] = pc - raw->images[image].slide;
        }
    }
    for (size_t i = 0; i < raw->image_count; i++) {
        struct image_work *work = &state->work[i];
        if (work->count == 0)
            continue;
        qsort(work->addresses, work->count, sizeof *work->addresses, compare_addresses);
        size_t unique = 1;
        for (size_t k = 1; k < work->count; k++)
            if (work->addresses[k] != work->addresses[unique - 1])
                work->addresses[unique++] = work->addresses[k];
        work->count = unique;
        work->answers = calloc(unique, sizeof *work->answers);
        if (work->answers == NULL)
            return -ENOMEM;
        state->addresses_total += unique;
    }
    return 0;
}

static struct symbol_answer *find_answer(struct image_work *work, uint64_t address)
{
    size_t low = 0, high = work->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (work->addresses[middle] < address)
            low = middle + 1;
        else
            high = middle;
    }
    return low < work->count && work->addresses[low] == address ? &work->answers[low] : NULL;
}

/* ---- interning frames ---- */

static uint64_t hash_bytes(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *bytes = data;
    for (size_t i = 0; i < size; i++) {
        hash ^= bytes[i];
        hash *= 1099511628211ULL; /* FNV-1a */
    }
    return hash;
}

static uint64_t hash_frame(const char *name, const char *file, int line, int column,
                           const char *image)
{
    uint64_t hash = 14695981039346656037ULL;
    hash = hash_bytes(hash, name, strlen(name) + 1);
    hash = hash_bytes(hash, file, strlen(file) + 1);
    hash = hash_bytes(hash, image, strlen(image) + 1);
    hash = hash_bytes(hash, &line, sizeof line);
    return hash_bytes(hash, &column, sizeof column);
}

static int frame_table_grow(struct frame_table *table)
{
    size_t slot_count = table->slot_count > 0 ? table->slot_count * 2 : 1024;
    uint32_t *slots = calloc(slot_count, sizeof *slots);
    if (slots == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < table->symbols->frame_count; i++) {
        const struct ospx_frame *frame = &table->symbols->frames[i];
        uint64_t hash =
            hash_frame(frame->name, frame->file, frame->line, frame->column, frame->image);
        size_t slot = (size_t)hash & (slot_count - 1);
        while (slots[slot] != 0)
            slot = (slot + 1) & (slot_count - 1);
        slots[slot] = (uint32_t)i + 1;
    }
    free(table->slots);
    table->slots = slots;
    table->slot_count = slot_count;
    return 0;
}

/* The index of the frame (name, file, line, column, image), added when new. */
static int intern_frame(struct frame_table *table, const char *name, const char *file, int line,
                        int column, const char *image, uint64_t address, uint32_t *index)
{
    struct ospx_symbols *symbols = table->symbols;
    if ((symbols->frame_count + 1) * 2 > table->slot_count && frame_table_grow(table) < 0)
        return -ENOMEM;
    uint64_t hash = hash_frame(name, file, line, column, image);
    size_t slot = (size_t)hash & (table->slot_count - 1);
    while (table->slots[slot] != 0) {
        const struct ospx_frame *frame = &symbols->frames[table->slots[slot] - 1];
        if (frame->line == line && frame->column == column && strcmp(frame->name, name) == 0 &&
            strcmp(frame->file, file) == 0 && strcmp(frame->image, image) == 0) {
            *index = table->slots[slot] - 1;
            return 0;
        }
        slot = (slot + 1) & (table->slot_count - 1);
    }
    if (symbols->frame_count == table->frame_capacity) {
        size_t capacity = table->frame_capacity > 0 ? table->frame_capacity * 2 : 256;
        struct ospx_frame *frames = realloc(symbols->frames, capacity * sizeof *frames);
        if (frames == NULL)
            return -ENOMEM;
        symbols->frames = frames;
        table->frame_capacity = capacity;
    }
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
    table->slots[slot] = (uint32_t)symbols->frame_count;
    *index = (uint32_t)symbols->frame_count - 1;
    return 0;
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

/* Expand raw stack i into frames, leaf first, inline levels innermost first. */
static int build_stack(struct symbolize_state *state, struct frame_table *table, size_t i)
{
    const struct ospx_raw *raw = state->raw;
    const struct ospx_stack *stack = &raw->stacks[i];
    struct ospx_symbols *symbols = table->symbols;
    size_t capacity = stack->depth, count = 0;
    uint32_t *frames = malloc(capacity * sizeof *frames);
    int *lines = malloc(capacity * sizeof *lines);
    uint32_t *positions = malloc(capacity * sizeof *positions);
    symbols->stack_frames[i] = frames;
    symbols->stack_lines[i] = lines;
    symbols->stack_positions[i] = positions;
    if (frames == NULL || lines == NULL || positions == NULL)
        return -ENOMEM;
    for (size_t k = 0; k < stack->depth; k++) {
        uint64_t pc = lookup_pc(stack, k);
        uint32_t image = ospx__image_of(raw, pc);
        const char *image_path = image != NO_IMAGE ? raw->images[image].path : "";
        struct symbol_answer *answer =
            image != NO_IMAGE ? find_answer(&state->work[image], pc - raw->images[image].slide)
                              : NULL;
        size_t levels = answer != NULL && answer->count > 0 ? answer->count : 1;
        if (count + levels > capacity) {
            capacity = (count + levels) * 2;
            frames = realloc(symbols->stack_frames[i], capacity * sizeof *frames);
            if (frames != NULL)
                symbols->stack_frames[i] = frames;
            lines = realloc(symbols->stack_lines[i], capacity * sizeof *lines);
            if (lines != NULL)
                symbols->stack_lines[i] = lines;
            positions = realloc(symbols->stack_positions[i], capacity * sizeof *positions);
            if (positions != NULL)
                symbols->stack_positions[i] = positions;
            if (frames == NULL || lines == NULL || positions == NULL)
                return -ENOMEM;
        }
        /* An answer seen before gives the same frames (hundreds of stacks share a pc):
         * interned once, not hashed and compared again per stack. */
        if (answer != NULL && answer->interned != NULL &&
            (answer->interned_named || answer->interned_pc == stack->pcs[k])) {
            for (size_t level = 0; level < levels; level++) {
                if (answer->interned[level] == SKIPPED_FRAME)
                    continue;
                frames[count] = answer->interned[level];
                positions[count] = (uint32_t)k;
                lines[count++] = answer->count > 0 ? answer->chain[level].line : 0;
            }
            symbols->stack_frame_counts[i] = count;
            continue;
        }
        bool named = answer != NULL && answer->count > 0;
        for (size_t level = 0; named && level < levels; level++)
            named = answer->chain[level].name != NULL;
        uint32_t *interned = NULL;
        if (answer != NULL) {
            free(answer->interned);
            answer->interned = NULL;
            interned = malloc(levels * sizeof *interned);
        }
        /* A frame nothing names is its object and the object's own address, as perf prints
         * it ("libc.so.6+0x2ab18b", what addr2line -e takes), the same in every run whatever
         * the load address; the raw pc only when no image holds it. */
        char hex[300];
        if (image != NO_IMAGE && image_path[0] != '\0')
            snprintf(hex, sizeof hex, "%.256s+0x%" PRIx64, ospx__basename(image_path),
                     stack->pcs[k] - raw->images[image].slide);
        else
            snprintf(hex, sizeof hex, "0x%" PRIx64, stack->pcs[k]);
        for (size_t level = 0; level < levels; level++) {
            const struct symbol_location *location =
                answer != NULL && answer->count > 0 ? &answer->chain[level] : NULL;
            const char *name = location != NULL && location->name != NULL ? location->name : hex;
            /* Code of the running kernel's vDSO that no symbol covers (a local clock-read
             * helper): still the vDSO's time, named as perf names its module. */
            if (name == hex && image != NO_IMAGE && state->work[image].running_vdso)
                name = "[vdso]";
            /* The profiler's own frames are not the program's: left out at every position,
             * so a wrapper's time goes to its caller and the shim's start-up never shows. */
            if (is_profiler_frame(name, image_path, location != NULL ? location->file : NULL)) {
                if (interned != NULL)
                    interned[level] = SKIPPED_FRAME;
                continue;
            }
            const char *file = location != NULL ? location->file : "";
            int line = location != NULL ? location->line : 0;
            int column = location != NULL ? location->column : 0;
            int rc = intern_frame(table, name, file, line, column, image_path, stack->pcs[k],
                                  &frames[count]);
            if (rc < 0) {
                free(interned);
                return rc;
            }
            if (interned != NULL)
                interned[level] = frames[count];
            positions[count] = (uint32_t)k;
            lines[count++] = line;
        }
        if (interned != NULL) {
            answer->interned = interned;
            answer->interned_pc = stack->pcs[k];
            answer->interned_named = named;
        }
        symbols->stack_frame_counts[i] = count;
    }
    return 0;
}

static int build_symbols(struct symbolize_state *state, struct ospx_symbols *out)
{
    const struct ospx_raw *raw = state->raw;
    size_t stacks = raw->stack_count > 0 ? raw->stack_count : 1;
    out->stack_frames = calloc(stacks, sizeof *out->stack_frames);
    out->stack_frame_counts = calloc(stacks, sizeof *out->stack_frame_counts);
    out->stack_lines = calloc(stacks, sizeof *out->stack_lines);
    out->stack_positions = calloc(stacks, sizeof *out->stack_positions);
    if (out->stack_frames == NULL || out->stack_frame_counts == NULL || out->stack_lines == NULL ||
        out->stack_positions == NULL)
        return -ENOMEM;
    out->stack_count = raw->stack_count;
    struct frame_table table = {.symbols = out};
    int rc = 0;
    for (size_t i = 0; i < raw->stack_count && rc == 0; i++)
        rc = build_stack(state, &table, i);
    free(table.slots);
    return rc;
}

/* The object that describes image i (objects.c), found once per image that has addresses to
 * look up; NULL when the only file there is another object than the one that ran (said in one
 * line: its frames stay hex). */
static int find_objects(struct symbolize_state *state)
{
    const struct ospx_raw *raw = state->raw;
    const char *binary = state->options != NULL ? state->options->binary : NULL;
    const char *symfs = state->options != NULL ? state->options->symfs : NULL;
    for (size_t i = 0; i < raw->image_count; i++) {
        if (state->work[i].count == 0)
            continue;
        int rc = ospx__find_object(raw, i, binary, symfs, &state->objects[i]);
        if (rc < 0)
            return rc;
        const struct ospx__object *object = &state->objects[i];
        if (object->path == NULL)
            symbolize_warn(state,
                           "%s is not the object that ran (build id %s, the profile's %s): "
                           "rebuilt or replaced since; its frames are shown as hex addresses "
                           "(--symfs DIR finds the one that ran)",
                           object->mismatched, object->mismatched_id, raw->images[i].build_id);
    }
    return 0;
}

static const char *object_of(const struct symbolize_state *state, size_t i)
{
    return state->objects[i].path;
}

int ospx_symbolize(const struct ospx_raw *raw, const struct ospx_symbolize_options *options,
                   struct ospx_symbols *out, struct ospx_error *err)
{
    memset(out, 0, sizeof *out);
    struct symbolize_state state = {.raw = raw, .options = options};
    clock_gettime(CLOCK_MONOTONIC, &state.started);
    state.work = calloc(raw->image_count > 0 ? raw->image_count : 1, sizeof *state.work);
    state.objects = calloc(raw->image_count > 0 ? raw->image_count : 1, sizeof *state.objects);
    int rc = state.work != NULL && state.objects != NULL ? collect_addresses(&state) : -ENOMEM;
    if (rc == 0)
        rc = find_objects(&state);
    if (rc == 0 && state.addresses_total > 0) {
        choose_symbolizer(&state);
        if (state.kind == SYMBOLIZER_NONE)
            symbolize_warn(&state, "no llvm-symbolizer or atos found on PATH; frames are shown "
                                   "as hex addresses (install llvm to get names and lines)");
    }
    adopt_prestarted(&state, options != NULL ? options->prestarted : NULL);
    /* The shared llvm-symbolizer maps every object it reads: its memory limit counts them all. */
    for (size_t i = 0; rc == 0 && state.kind == SYMBOLIZER_LLVM && i < raw->image_count; i++) {
        char why[160];
        off_t size = 0;
        if (state.work[i].count > 0 && object_of(&state, i) != NULL &&
            ospx__elf_check(object_of(&state, i), &size, why, sizeof why) == 0)
            state.objects_size += (uint64_t)size;
    }
    for (size_t i = 0; rc == 0 && i < raw->image_count; i++) {
        if (state.work[i].count == 0)
            continue;
        if (object_of(&state, i) == NULL) { /* another object than the one that ran */
            state.addresses_done += state.work[i].count;
            continue;
        }
        if (state.kind == SYMBOLIZER_LLVM)
            rc =
                symbolize_image_llvm(&state, &raw->images[i], &state.work[i], object_of(&state, i));
        else if (state.kind == SYMBOLIZER_ATOS)
            rc =
                symbolize_image_atos(&state, &raw->images[i], &state.work[i], object_of(&state, i));
    }
    if (state.llvm_running)
        tool_finish(&state.llvm, 0);
    symbolize_progress(&state, 1);
    if (rc == 0 && state.missing_objects > 0)
        symbolize_warn(&state,
                       "%zu object file%s not found (first: %s); %s frames are shown as hex "
                       "addresses",
                       state.missing_objects, state.missing_objects == 1 ? "" : "s",
                       state.first_missing_object, state.missing_objects == 1 ? "its" : "their");
    if (rc == 0)
        rc = build_symbols(&state, out);

    for (size_t i = 0; state.work != NULL && i < raw->image_count; i++) {
        for (size_t k = 0; state.work[i].answers != NULL && k < state.work[i].count; k++)
            answer_free(&state.work[i].answers[k]);
        free(state.work[i].answers);
        free(state.work[i].addresses);
    }
    free(state.work);
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
    for (size_t i = 0; i < symbols->frame_count; i++) {
        free(symbols->frames[i].name);
        free(symbols->frames[i].file);
        free(symbols->frames[i].image);
    }
    for (size_t i = 0; i < symbols->stack_count; i++) {
        if (symbols->stack_frames != NULL)
            free(symbols->stack_frames[i]);
        if (symbols->stack_lines != NULL)
            free(symbols->stack_lines[i]);
        if (symbols->stack_positions != NULL)
            free(symbols->stack_positions[i]);
    }
    free(symbols->frames);
    free(symbols->stack_frames);
    free(symbols->stack_frame_counts);
    free(symbols->stack_lines);
    free(symbols->stack_positions);
    memset(symbols, 0, sizeof *symbols);
}
