/* error.c — the exporters' error record: the first error wins, and it carries the file and,
 * where one applies, the line and column the CLI prints as "file:line:col: text". Also the one
 * rule for text that reaches a terminal: names and paths come from the profiled program (an
 * image path, a thread label), so their control characters are made visible, never sent. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ospc.h"
#include "ospx_internal.h"

int ospx_error_set(struct ospx_error *err, int code, const char *file, int line, int column,
                   const char *fmt, ...)
{
    if (code <= 0)
        code = EINVAL;
    if (err == NULL || err->text[0] != '\0')
        return -code;
    snprintf(err->file, sizeof err->file, "%s", file != NULL ? file : "");
    err->line = line;
    err->column = column;
    va_list args;
    va_start(args, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, args);
    va_end(args);
    /* One line: a message that carried a newline would break the "file:line:col: text" form;
     * and no escape sequence from a name in the profile reaches the terminal. */
    for (char *p = err->text; *p != '\0'; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    ospc_printable(err->text);
    ospc_printable(err->file);
    return -code;
}

void ospx_error_format(const struct ospx_error *err, char *buf, size_t size)
{
    if (size == 0)
        return;
    if (err->file[0] == '\0')
        snprintf(buf, size, "%s", err->text);
    else if (err->line > 0 && err->column > 0)
        snprintf(buf, size, "%s:%d:%d: %s", err->file, err->line, err->column, err->text);
    else if (err->line > 0)
        snprintf(buf, size, "%s:%d: %s", err->file, err->line, err->text);
    else
        snprintf(buf, size, "%s: %s", err->file, err->text);
}
