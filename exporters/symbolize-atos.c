/* symbolize-atos.c — the atos backend (macOS): the recorded path handed over unchanged (a
 * dylib of the shared cache has no file of its own), pinned to the image's recorded arch, with
 * the recorded load address, so atos slides the addresses itself; its addresses go as
 * arguments, ATOS_ADDRESSES_PER_RUN a run. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize_internal.h"

/* atos takes its addresses as arguments; this many per invocation keeps argv small. */
#define ATOS_ADDRESSES_PER_RUN 256

/* One line of atos output: "NAME (in IMAGE) (FILE:LINE)", "NAME (in IMAGE) + OFFSET", or a
 * bare hex address when atos knows nothing. */
static int parse_atos_answer(char *line, struct ospx__answer *answer)
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
    return ospx__answer_add(answer, line, file, line_number, 0);
}

/* Symbolize one image with atos: the recorded path handed over unchanged (a dylib of the
 * shared cache has no file of its own), pinned to the recorded arch, with the recorded load
 * address, so atos slides the addresses itself. */
static int atos_symbolize_image(struct ospx__symbolizer *state, const struct ospx_image *image,
                                struct ospx__image_work *work, const char *object)
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
        struct ospx__child process;
        int rc = ospx__child_start(argv, 0, &process);
        if (rc < 0) {
            ospx__symbolize_warn(state, "cannot run %s: %s; frames are shown as hex addresses",
                                 state->tool_path, strerror(-rc));
            state->addresses_done += work->count - first;
            return 0;
        }
        struct ospx__line_buffer buffer = {0};
        size_t consumed = 0, answered = 0;
        char *line;
        ssize_t got;
        while (answered < count && ospx__child_wait_readable(process.output) &&
               (got = ospx__line_buffer_fill(&buffer, process.output)) > 0) {
            while (answered < count && ospx__line_buffer_take(&buffer, &line, &consumed)) {
                rc = parse_atos_answer(line, &work->answers[first + answered]);
                if (rc < 0)
                    break;
                answered++;
            }
            if (rc < 0)
                break;
            ospx__line_buffer_compact(&buffer, &consumed);
        }
        free(buffer.data);
        ospx__child_finish(&process, answered < count);
        state->addresses_done += count;
        ospx__symbolize_progress(state, 0);
        if (rc < 0)
            return rc;
        if (answered < count)
            ospx__symbolize_warn(state, "%s: atos answered %zu of %zu addresses; the rest stay hex",
                                 object, answered, count);
    }
    return 0;
}

const struct ospx__backend ospx__backend_atos = {
    .name = "atos",
    .symbolize_image = atos_symbolize_image,
};
