/* kinds.c — what a file given to `osprey` is when it is not what the command takes: a raw
 * profile given as a program (`osprey p.raw.json`), or one of osprey's outputs given to
 * `osprey report`. The file's first bytes say which (one table row per kind); the message
 * names the kind, what opens it, and the raw file beside it when there is one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "osprey_cli.h"

#define SNIFF_BYTES 4096

/* One kind: its name in a message, what opens it, a suffix osprey writes it under (a kind may
 * have several rows; the first names it). */
static const struct {
    enum osprey_profile_kind kind;
    const char *name, *opens, *suffix;
} kinds[] = {
    {OSPREY_KIND_SPEEDSCOPE, "a speedscope file",
     "open it in speedscope (https://www.speedscope.app)", ".speedscope.json"},
    {OSPREY_KIND_CPUPROFILE, "a Chrome .cpuprofile",
     "open it in Chrome DevTools (Performance, Load profile)", ".cpuprofile"},
    {OSPREY_KIND_TRACE, "a Chrome trace", "open it in https://ui.perfetto.dev or Chrome DevTools",
     ".trace.json"},
    {OSPREY_KIND_SUMMARY, "the summary JSON (profile.json)", "the VS Code extension reads it",
     ".profile.json"},
    {OSPREY_KIND_FOLDED, "a folded-stacks file",
     "draw it with flamegraph.pl or open it in speedscope", ".folded"},
    /* the waits' folded stacks: the same kind, a stem of their own */
    {OSPREY_KIND_FOLDED, "a folded-stacks file",
     "draw it with flamegraph.pl or open it in speedscope", ".offcpu.folded"},
    {OSPREY_KIND_PPROF, "a pprof profile", "open it with go tool pprof", ".pb.gz"},
    {OSPREY_KIND_HTML, "the offline flame-graph page", "open it in a browser", ".html"},
};

/* 1 when the JSON text has the key `"name"` (followed by optional blanks and a colon). */
static int has_key(const char *text, const char *name)
{
    size_t length = strlen(name);
    for (const char *at = strchr(text, '"'); at != NULL; at = strchr(at + 1, '"')) {
        if (strncmp(at + 1, name, length) != 0 || at[1 + length] != '"')
            continue;
        const char *after = at + 2 + length;
        while (*after == ' ' || *after == '\n' || *after == '\t' || *after == '\r')
            after++;
        if (*after == ':')
            return 1;
    }
    return 0;
}

/* Folded stacks: the first line is "frame;frame;... COUNT" with no JSON in it. */
static int looks_folded(const char *text)
{
    size_t line = strcspn(text, "\n");
    if (line < 3 || memchr(text, '{', line) != NULL || memchr(text, '"', line) != NULL)
        return 0;
    size_t digits = 0;
    while (digits < line && text[line - 1 - digits] >= '0' && text[line - 1 - digits] <= '9')
        digits++;
    return digits > 0 && digits < line && text[line - 1 - digits] == ' ';
}

enum osprey_profile_kind osprey_profile_kind(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return OSPREY_KIND_UNKNOWN;
    char text[SNIFF_BYTES + 1];
    ssize_t length = read(fd, text, SNIFF_BYTES);
    close(fd);
    if (length == 0) { /* empty (an off-CPU folded file of a busy run): its name says */
        size_t path_length = strlen(path);
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            size_t suffix = strlen(kinds[i].suffix);
            if (path_length > suffix && strcmp(path + path_length - suffix, kinds[i].suffix) == 0)
                return kinds[i].kind;
        }
    }
    if (length <= 0)
        return OSPREY_KIND_UNKNOWN;
    text[length] = '\0';
    if (length >= 2 && (unsigned char)text[0] == 0x1f && (unsigned char)text[1] == 0x8b)
        return OSPREY_KIND_PPROF;
    if (strlen(text) != (size_t)length)
        return OSPREY_KIND_UNKNOWN; /* binary: an executable, or anything else */
    const char *start = text + strspn(text, " \t\r\n");
    if (strncmp(start, "<!DOCTYPE html", 14) == 0 || strncmp(start, "<html", 5) == 0)
        return OSPREY_KIND_HTML;
    if (*start != '{' && *start != '[')
        return looks_folded(start) ? OSPREY_KIND_FOLDED : OSPREY_KIND_UNKNOWN;
    if (strstr(start, "speedscope.app/file-format-schema") != NULL)
        return OSPREY_KIND_SPEEDSCOPE;
    if (has_key(start, "traceEvents"))
        return OSPREY_KIND_TRACE;
    if (has_key(start, "nodes") && (has_key(start, "callFrame") || has_key(start, "startTime")))
        return OSPREY_KIND_CPUPROFILE;
    if (has_key(start, "totals") && has_key(start, "version"))
        return OSPREY_KIND_SUMMARY;
    if (has_key(start, "version") && has_key(start, "rate_hz"))
        return OSPREY_KIND_RAW;
    return OSPREY_KIND_UNKNOWN;
}

int osprey_describe_kind(const char *path, enum osprey_profile_kind kind, char *out, size_t size)
{
    size_t length = strlen(path);
    int found = -1;
    char raw[PATH_MAX] = "";
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (kinds[i].kind != kind)
            continue;
        if (found < 0)
            found = (int)i;
        /* the raw file beside it: the same stem with .raw.json */
        size_t suffix = strlen(kinds[i].suffix);
        if (length > suffix && strcmp(path + length - suffix, kinds[i].suffix) == 0 &&
            snprintf(raw, sizeof raw, "%.*s.raw.json", (int)(length - suffix), path) <
                (int)sizeof raw &&
            access(raw, R_OK) == 0)
            break;
        raw[0] = '\0';
    }
    if (found < 0)
        return -ENOENT;
    if (raw[0] != '\0')
        snprintf(out, size, "%s: this is %s; %s, or give osprey report the raw profile: %s", path,
                 kinds[found].name, kinds[found].opens, raw);
    else
        snprintf(out, size, "%s: this is %s; %s, or give osprey report the .raw.json", path,
                 kinds[found].name, kinds[found].opens);
    return 0;
}
