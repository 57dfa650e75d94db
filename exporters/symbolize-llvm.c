/* symbolize-llvm.c — the llvm-symbolizer backend: one long-lived llvm-symbolizer for every
 * image of a profile (it loads all of LLVM in half a second, so it may be started while the raw
 * file is read: ospx_symbolizer_prestart), fed "OBJECT" 0xADDRESS lines through a socket while
 * its JSON answers (one line per address, inline levels innermost first) are read back, so
 * neither side can fill a pipe and wait on the other. Answers are read by a small reader of
 * their own shape, jansson only for a line it does not know. The [vdso] image is described by
 * a copy of the running kernel's (elf.c) when the profile was recorded by this kernel. An
 * object whose answers would be its dynamic symbol table alone is answered in this process
 * (elf-symbols.c), as the tool would answer it; the tool then hears only of its addresses whose
 * names it would demangle. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "symbolize_internal.h"

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
static int answer_symbol(struct answer_reader *r, struct ospx__answer *answer, int *rc)
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
    *rc = ospx__answer_add(answer, name, file, line, column);
    return 1;
}

/* parse_llvm_answer without jansson: 1 when the line was read (*rc its result), 0 when it is
 * not in the shape this reader takes (nothing was added to the answer). */
static int parse_llvm_answer_fast(const char *line, uint64_t address, struct ospx__answer *answer,
                                  char *tool_error, size_t tool_error_size, int *rc)
{
    char *scratch = malloc(strlen(line) + 1);
    if (scratch == NULL)
        return 0;
    struct answer_reader r = {line, scratch};
    struct ospx__answer found = {0};
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
        *rc = ospx__answer_add(answer, found.chain[i].name, found.chain[i].file,
                               found.chain[i].line, found.chain[i].column);
done:
    if (!ok)
        *rc = 0;
    ospx__answer_free(&found);
    free(scratch);
    return ok;
}

/* One JSON line of llvm-symbolizer --output-style=JSON for `address`. A line about another
 * address means the conversation is out of step: returns -EPROTO. An "Error" answer, or no
 * function and no file, leaves the answer empty and sets *tool_error to the message. */
static int parse_llvm_answer(const char *line, uint64_t address, struct ospx__answer *answer,
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
        rc = ospx__answer_add(answer, name, file,
                              (int)json_integer_value(json_object_get(symbol, "Line")),
                              (int)json_integer_value(json_object_get(symbol, "Column")));
        if (rc < 0)
            break;
    }
    json_decref(root);
    return rc;
}

/* llvm-symbolizer writes each answer as soon as it is made, a write per line: a reader that
 * polls again right away wakes once per address, and each wake-up costs both processes a system
 * call and a switch (the benchmark's 27,736 addresses were 13,000-15,000 reads). After a read
 * that brought less than ANSWER_BATCH bytes, the reader waits ANSWER_WAIT_US before it polls
 * again, so the answers gather in the socket (about 350 reads; the process's CPU, llvm-symbolizer
 * included, 0.57 -> 0.42 s). The wait only delays reading: the tool writes into the socket's
 * buffer meanwhile, and a read that brings a batch is followed by no wait. */
#define ANSWER_BATCH   16384
#define ANSWER_WAIT_US 250

/* Ask a running llvm-symbolizer about every address of `work`, writing while it reads so
 * that neither side can fill a pipe and wait on the other. Answers go to work->answers.
 * Returns 0, or a negative errno with a warning already given for the image. */
static int converse_llvm(struct ospx__symbolizer *state, struct ospx__child *process,
                         struct ospx__image_work *work, const char *object)
{
    char pending[65536];
    size_t pending_length = 0, pending_sent = 0, next_to_write = 0, answered = 0;
    struct ospx__line_buffer buffer = {0};
    size_t consumed = 0;
    char tool_error[256] = "";
    int rc = 0;
    int input_open = 1;
    ssize_t last_read = ANSWER_BATCH;
    while (answered < work->count) {
        if (last_read < ANSWER_BATCH) {
            struct timespec wait = {0, ANSWER_WAIT_US * 1000L};
            nanosleep(&wait, NULL);
        }
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
        int ready = poll(fds, want_write ? 2 : 1, OSPX_CHILD_SILENCE_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            ospx__symbolize_warn(state,
                                 "%s: the symbolizer stopped answering; %zu addresses stay hex",
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
        ssize_t got = ospx__line_buffer_fill(&buffer, process->output);
        last_read = got;
        if (got < 0) {
            rc = (int)got;
            break;
        }
        if (got == 0) {
            ospx__symbolize_warn(state, "%s: the symbolizer exited early; %zu addresses stay hex",
                                 object, work->count - answered);
            rc = -EPIPE;
            break;
        }
        char *line;
        while (answered < work->count && ospx__line_buffer_take(&buffer, &line, &consumed)) {
            rc = parse_llvm_answer(line, work->addresses[answered], &work->answers[answered],
                                   tool_error, sizeof tool_error);
            if (rc < 0)
                break;
            answered++;
            state->addresses_done++;
            ospx__symbolize_progress(state, 0);
        }
        if (rc == -EPROTO)
            ospx__symbolize_warn(state,
                                 "%s: unexpected answer from the symbolizer; %zu addresses "
                                 "stay hex",
                                 object, work->count - answered);
        if (rc < 0)
            break;
        ospx__line_buffer_compact(&buffer, &consumed);
    }
    free(buffer.data);
    if (rc == 0 && tool_error[0] != '\0')
        ospx__symbolize_warn(state, "%s: %s; its frames are shown as hex addresses", object,
                             tool_error);
    state->addresses_done += work->count - answered;
    return rc;
}

static int llvm_symbolize_object(struct ospx__symbolizer *state, struct ospx__image_work *work,
                                 const char *object, int pseudo_image);

/* Symbolize one image with llvm-symbolizer: one process for all its addresses. */
static int llvm_symbolize_image(struct ospx__symbolizer *state, const struct ospx_image *image,
                                struct ospx__image_work *work, const char *object)
{
    /* A recorded path that is not absolute names a pseudo image ("[vdso]",
     * "linux-vdso.so.1"): no file describes it, and that is no news worth a warning —
     * except the vDSO of the running kernel, which a copy of our own can describe. */
    int pseudo_image = object[0] != '/' && object == image->path;
    char vdso_copy[4200] = "";
    if (pseudo_image &&
        (strcmp(image->path, "[vdso]") == 0 || strcmp(image->path, "linux-vdso.so.1") == 0)) {
        if (ospx__vdso_copy(state->raw, image, vdso_copy, sizeof vdso_copy) == 0) {
            object = vdso_copy;
            pseudo_image = 0;
            work->running_vdso = true;
        }
    }
    int rc = llvm_symbolize_object(state, work, object, pseudo_image);
    if (vdso_copy[0] != '\0')
        unlink(vdso_copy);
    return rc;
}

/* Start the one llvm-symbolizer: JSON answers with inline levels, each input line naming its
 * object. */
static int llvm_start(char *tool_path, struct ospx__child *process)
{
    char *argv[] = {
        tool_path, "--output-style=JSON", "--inlining", "--functions=linkage", "--demangle", NULL};
    return ospx__child_start(argv, 1, process);
}

struct ospx_prestarted_symbolizer {
    char *tool_path;
    struct ospx__child process;
};

struct ospx_prestarted_symbolizer *ospx_symbolizer_prestart(void)
{
    struct ospx__symbolizer probe = {0};
    ospx__choose_backend(&probe);
    struct ospx_prestarted_symbolizer *started = calloc(1, sizeof *started);
    if (probe.backend != &ospx__backend_llvm || started == NULL ||
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
    ospx__child_finish(&started->process, 1);
    free(started->tool_path);
    free(started);
}

void ospx__llvm_adopt_prestarted(struct ospx__symbolizer *state,
                                 struct ospx_prestarted_symbolizer *started)
{
    if (started == NULL)
        return;
    if (state->backend == &ospx__backend_llvm && state->tool_path != NULL && !state->llvm_running &&
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

static int ask_llvm(struct ospx__symbolizer *state, struct ospx__image_work *work,
                    const char *object, off_t object_size);

/* The answers of an object whose names are its dynamic symbol table's (elf-symbols.c), made
 * here as llvm-symbolizer makes them: a name and no file, put through ospx__answer_add twice
 * as parse_llvm_answer does. The addresses whose symbol llvm-symbolizer would demangle are
 * asked of it, those alone. 0 or -ENOMEM. */
static int answer_from_table(struct ospx__symbolizer *state, struct ospx__image_work *work,
                             const char *object, off_t object_size,
                             const struct ospx__elf_symbols *table)
{
    struct ospx__image_work asked = {0};
    size_t *positions = NULL;
    int rc = 0;
    for (size_t i = 0; i < work->count && rc == 0; i++) {
        const char *name = ospx__elf_symbols_name(table, work->addresses[i]);
        if (name != NULL && ospx__elf_symbols_mangled(name)) {
            if (positions == NULL) /* where each asked address's answer goes */
                positions = malloc(work->count * sizeof *positions);
            if (positions == NULL || ospx__grow(&asked.addresses, &asked.capacity, asked.count,
                                                sizeof *asked.addresses, 64) != 0) {
                rc = -ENOMEM;
                break;
            }
            positions[asked.count] = i;
            asked.addresses[asked.count++] = work->addresses[i];
            continue;
        }
        if (name != NULL && name[0] != '\0') {
            struct ospx__answer found = {0};
            rc = ospx__answer_add(&found, name, "", 0, 0);
            if (rc == 0)
                rc = ospx__answer_add(&work->answers[i], found.chain[0].name, "", 0, 0);
            ospx__answer_free(&found);
        }
        state->addresses_done++;
        ospx__symbolize_progress(state, 0);
    }
    if (rc == 0 && asked.count > 0) {
        asked.answers = calloc(asked.count, sizeof *asked.answers);
        rc = asked.answers != NULL ? ask_llvm(state, &asked, object, object_size) : -ENOMEM;
        for (size_t k = 0; asked.answers != NULL && k < asked.count; k++)
            work->answers[positions[k]] = asked.answers[k];
    }
    free(asked.answers);
    free(asked.addresses);
    free(positions);
    return rc;
}

/* llvm_symbolize_image for an object file (or a pseudo image: its addresses stay hex). */
static int llvm_symbolize_object(struct ospx__symbolizer *state, struct ospx__image_work *work,
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
        ospx__symbolize_warn(state, "%s: %s; its frames are shown as hex addresses", object, why);
        state->addresses_done += work->count;
        return 0;
    }
    /* The object is named on each input line, quoted: a path with a quote or a line break
     * cannot be said that way. */
    if (strpbrk(object, "\"\n\r") != NULL) {
        ospx__symbolize_warn(state,
                             "%s: a path with a quote or line break; its frames are shown as "
                             "hex addresses",
                             object);
        state->addresses_done += work->count;
        return 0;
    }
    struct ospx__elf_symbols table;
    int in_process = ospx__elf_symbols_read(object, &table);
    if (in_process < 0)
        return in_process;
    if (in_process > 0) {
        int rc = answer_from_table(state, work, object, object_size, &table);
        ospx__elf_symbols_free(&table);
        return rc;
    }
    return ask_llvm(state, work, object, object_size);
}

/* Start the shared llvm-symbolizer if it is not running, and bound it before it reads an
 * object. 0, or -1 with a warning given. */
static int llvm_ready(struct ospx__symbolizer *state, off_t object_size)
{
    if (!state->llvm_running) {
        /* Starting llvm-symbolizer costs about half a second here (it loads all of LLVM): one
         * process serves every image. */
        int rc = llvm_start(state->tool_path, &state->llvm);
        if (rc < 0) {
            ospx__symbolize_warn(state, "cannot run %s: %s; frames are shown as hex addresses",
                                 state->tool_path, strerror(-rc));
            return -1;
        }
        state->llvm_running = 1;
        state->llvm_bounded = 0;
    }
    if (!state->llvm_bounded) {
        /* Before the first address is sent, so before it reads an object: bound the tool. */
        ospx__child_bound(state->llvm.pid, (off_t)(state->objects_size > (uint64_t)object_size
                                                       ? state->objects_size
                                                       : (uint64_t)object_size));
        state->llvm_bounded = 1;
    }
    return 0;
}

/* Every address of `work` answered by the shared llvm-symbolizer. 0 or -ENOMEM. */
static int ask_llvm(struct ospx__symbolizer *state, struct ospx__image_work *work,
                    const char *object, off_t object_size)
{
    if (llvm_ready(state, object_size) != 0) {
        state->addresses_done += work->count;
        return 0;
    }
    int rc = converse_llvm(state, &state->llvm, work, object);
    if (rc < 0) { /* a tool that broke the conversation is not asked again */
        ospx__child_finish(&state->llvm, 1);
        state->llvm_running = 0;
    }
    return rc == -ENOMEM ? rc : 0;
}

/* The shared llvm-symbolizer maps every object it reads: its memory limit counts them all. */
static void llvm_begin(struct ospx__symbolizer *state)
{
    for (size_t i = 0; i < state->raw->image_count; i++) {
        char why[160];
        off_t size = 0;
        const char *object = state->objects[i].path;
        if (state->work[i].count > 0 && object != NULL &&
            ospx__elf_check(object, &size, why, sizeof why) == 0)
            state->objects_size += (uint64_t)size;
    }
}

/* llvm-symbolizer frees what it read of every object as it exits (6-22 ms for the benchmark's
 * 50 libraries): its input closed, it does so on the other CPU while the stacks are built. */
static void llvm_close_input(struct ospx__symbolizer *state)
{
    if (state->llvm_running && state->llvm.input >= 0) {
        close(state->llvm.input);
        state->llvm.input = -1;
    }
}

static void llvm_finish(struct ospx__symbolizer *state)
{
    if (state->llvm_running)
        ospx__child_finish(&state->llvm, 0);
    state->llvm_running = 0;
}

const struct ospx__backend ospx__backend_llvm = {
    .name = "llvm-symbolizer",
    .symbolize_image = llvm_symbolize_image,
    .begin = llvm_begin,
    .close_input = llvm_close_input,
    .finish = llvm_finish,
};
