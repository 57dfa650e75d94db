/* text.c — text for the terminal, shared by the report (report*.c, listing.c, diff.c) and
 * `osprey top`: display columns of UTF-8 text (one per code point), fitting text to a width with
 * `…` cut at its end, start or middle, the colour of a share, one line or a note of two parts
 * printed within a width, and durations in short form. */
#include <stdio.h>
#include <string.h>

#include "ospc.h"
#include "ospx_internal.h"

#define COLOR_HOT   "\033[1;31m"     /* self >= 5%: red, bold */
#define COLOR_WARM  OSPX__COLOR_WARN /* self >= 0.5%: yellow */
#define COLOR_RESET OSPX_COLOR_RESET

/* Display columns of UTF-8 text: one per code point. */
static size_t columns(const char *text)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

/* Byte offset where column `column` starts. */
static size_t column_offset(const char *text, size_t column)
{
    size_t n = 0, i = 0;
    for (; text[i] != '\0'; i++) {
        if (((unsigned char)text[i] & 0xC0) != 0x80) {
            if (n == column)
                return i;
            n++;
        }
    }
    return i;
}

enum cut { CUT_END, CUT_START, CUT_MIDDLE };

/* Copy `text` into `out` (size bytes) fitted to `width` columns: when too wide, cut with `…` at
 * the end, at the start (paths: the file name is the useful part) or in the middle (function
 * names: long names often differ only at their end). Control characters become spaces. */
static void fit(char *out, size_t size, const char *text, size_t width, enum cut cut)
{
    char clean[4096];
    snprintf(clean, sizeof clean, "%s", ospx__str(text));
    ospc_printable(clean);
    size_t have = columns(clean);
    if (have <= width) {
        snprintf(out, size, "%s", clean);
    } else if (width == 0) {
        out[0] = '\0';
    } else if (cut == CUT_START) {
        snprintf(out, size, "…%s", clean + column_offset(clean, have - (width - 1)));
    } else if (cut == CUT_MIDDLE && width >= 8) {
        size_t tail = (width - 1) / 3, head = width - 1 - tail;
        snprintf(out, size, "%.*s…%s", (int)column_offset(clean, head), clean,
                 clean + column_offset(clean, have - tail));
    } else {
        snprintf(out, size, "%.*s…", (int)column_offset(clean, width - 1), clean);
    }
}

size_t ospx_text_columns(const char *text)
{
    return columns(text);
}

void ospx_text_fit(char *out, size_t size, const char *text, size_t width, enum ospx_cut cut)
{
    fit(out, size, text, width,
        cut == OSPX_CUT_START    ? CUT_START
        : cut == OSPX_CUT_MIDDLE ? CUT_MIDDLE
                                 : CUT_END);
}

const char *ospx_share_color(double self_percent)
{
    return self_percent >= 5.0 ? COLOR_HOT : self_percent >= 0.5 ? COLOR_WARM : NULL;
}

/* Print one line, cut to the width, optionally coloured. */
void ospx__emit(FILE *out, size_t width, const char *color, const char *text)
{
    char line[4096];
    fit(line, sizeof line, text, width > 0 ? width : sizeof line, CUT_END);
    if (color != NULL)
        fprintf(out, "%s%s%s\n", color, line, COLOR_RESET);
    else
        fprintf(out, "%s\n", line);
}

/* `text` on as many lines as the width needs, wrapped after a separator so that nothing is
 * cut: after ", " or "; " where one fits (a list's entries stay whole), else after a space. The
 * first line starts with `lead`, the others are indented two columns. A word wider than the
 * line is cut as ospx__emit cuts. Width 0 (no terminal): one line. */
static void emit_wrapped(FILE *out, size_t width, const char *color, const char *lead,
                         const char *text)
{
    char line[4096];
    const char *p = text;
    while (*p != '\0') {
        size_t room = width > 2 ? width - columns(lead) : 1;
        size_t end = strlen(p);
        if (width > 0 && columns(p) > room) {
            size_t limit = column_offset(p, room), listed = 0, spaced = 0;
            for (size_t i = 1; i <= limit && p[i - 1] != '\0'; i++)
                if (p[i - 1] == ' ') {
                    spaced = i;
                    if (i >= 2 && (p[i - 2] == ',' || p[i - 2] == ';'))
                        listed = i;
                }
            end = listed > 0 ? listed : spaced > 0 ? spaced : limit;
        }
        size_t keep = end;
        while (keep > 0 && p[keep - 1] == ' ')
            keep--;
        snprintf(line, sizeof line, "%s%.*s", lead, (int)keep, p);
        ospx__emit(out, width, color, line);
        p += end;
        while (*p == ' ')
            p++;
        lead = "  ";
    }
}

/* Print "first; second" on one line, or on two (the second indented) when one would be wider
 * than the width; at a terminal, a part wider than the width goes on over more lines (see
 * emit_wrapped). Width 0: the output is no terminal: two lines past OSPX__DEFAULT_WIDTH,
 * neither cut nor wrapped (a log or a pipe keeps the whole note). */
void ospx__emit_pair(FILE *out, size_t width, const char *color, const char *first,
                     const char *second)
{
    char line[4096];
    snprintf(line, sizeof line, "%s; %s", first, second);
    if (columns(line) <= (width > 0 ? width : OSPX__DEFAULT_WIDTH)) {
        ospx__emit(out, width, color, line);
        return;
    }
    snprintf(line, sizeof line, "%s;", first);
    emit_wrapped(out, width, color, "", line);
    emit_wrapped(out, width, color, "  ", second);
}

void ospx__format_duration(char *out, size_t size, double seconds)
{
    if (seconds <= 0)
        snprintf(out, size, "0s");
    else if (seconds >= 100)
        snprintf(out, size, "%.0fs", seconds);
    else if (seconds >= 10)
        snprintf(out, size, "%.1fs", seconds);
    else if (seconds >= 0.9995)
        snprintf(out, size, "%.2fs", seconds);
    else if (seconds >= 0.00995)
        snprintf(out, size, "%.0fms", seconds * 1000);
    else
        snprintf(out, size, "%.1fms", seconds * 1000);
}
