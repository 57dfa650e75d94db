/* html.c — `<stem>.html`: the flame graph and hot table as one offline page, for people without
 * VS Code. The page is viewer-template.html (the extension's own renderer and styles, inline,
 * under a policy that fetches nothing), generated at build time from vscode/src by
 * viewer-page.py and compiled in by embed.py; this file fills in its two
 * markers — the title, HTML-escaped, and the profile, a JSON object
 * {"title": …, "speedscope": <stem>.speedscope.json, "summary": <stem>.profile.json or null}
 * with every '<' written as \u003c so no file content can close the page's <script>. The files
 * are copied a megabyte at a time, never held whole (a long run's speedscope file is over a
 * hundred megabytes); files of unknown origin are parsed once first, to refuse one that is not
 * JSON, files the run has just written are not. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_html.h"
#include "ospx_internal.h"
#include "viewer_template.h"

#define DATA_MARKER  "@OSPREY_DATA@"
#define TITLE_MARKER "@OSPREY_TITLE@"

/* Opens a JSON file, after checking it parses when `check` (a file this process did not just
 * write). Returns 0, -ENOENT when it does not exist and `optional`, or -errno with `err`
 * filled. */
static int open_json_file(const char *path, int optional, int check, FILE **in,
                          struct ospx_error *err)
{
    *in = fopen(path, "rb");
    if (*in == NULL) {
        if (errno == ENOENT && optional)
            return -ENOENT;
        return ospx_error_set(err, errno, path, 0, 0, "%s", strerror(errno));
    }
    if (!check)
        return 0;
    json_error_t json_error;
    json_t *root = json_loadf(*in, JSON_DECODE_ANY, &json_error);
    if (root == NULL) {
        fclose(*in);
        *in = NULL;
        return ospx_error_set(err, EINVAL, path, json_error.line, json_error.column, "%s",
                              json_error.text);
    }
    json_decref(root);
    if (fseek(*in, 0, SEEK_SET) != 0) {
        int code = errno;
        fclose(*in);
        *in = NULL;
        return ospx_error_set(err, code, path, 0, 0, "%s", strerror(code));
    }
    return 0;
}

/* Where a JSON text being copied stands, from one chunk to the next. */
struct json_copy {
    int in_string; /* inside a string */
    int escaped;   /* after a backslash inside a string */
};

/* JSON text as the page holds it: '<' as \u003c (inside a string; outside strings JSON has no
 * '<', so this is always valid), and the whitespace between tokens left out — the summary file
 * is indented for people who read it, the page's parser needs none of it (the benchmark's
 * page: 4.44 -> 3.85 MB). A string's own spaces are kept. `text` ends with a NUL at
 * text[length] (JSON has none of its own: one inside is copied like any other byte). The bytes
 * between the ones that matter are found by strcspn, so the copy stays a block copy. */
static void put_script_safe(FILE *out, const char *text, size_t length, struct json_copy *state)
{
    const char *run = text, *end = text + length; /* run: the bytes not yet written */
    for (const char *p = text; p < end;) {
        if (state->escaped) { /* the byte after a backslash, whatever it is */
            state->escaped = 0;
            p++;
            continue;
        }
        p += strcspn(p, state->in_string ? "\\\"<" : "\" \n\r\t<");
        if (p >= end)
            break;
        const char *instead = NULL;
        if (*p == '<')
            instead = "\\u003c";
        else if (*p == '\\')
            state->escaped = 1;
        else if (*p == '"')
            state->in_string = !state->in_string;
        else if (*p != '\0') /* a NUL is not JSON's: copied */
            instead = "";    /* whitespace between tokens */
        if (instead != NULL) {
            fwrite(run, 1, (size_t)(p - run), out);
            fputs(instead, out);
            run = p + 1;
        }
        p++;
    }
    fwrite(run, 1, (size_t)(end - run), out);
}

/* A whole file through put_script_safe, a megabyte at a time (the speedscope file of a long
 * run is over a hundred). Returns 0 or -errno with `err` naming `path`. */
static int copy_script_safe(FILE *out, FILE *in, const char *path, struct ospx_error *err)
{
    enum { CHUNK = 1 << 20 };
    char *chunk = malloc(CHUNK + 1);
    if (chunk == NULL)
        return ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    size_t got;
    struct json_copy state = {0};
    while ((got = fread(chunk, 1, CHUNK, in)) > 0) {
        chunk[got] = '\0';
        put_script_safe(out, chunk, got, &state);
    }
    int failed = ferror(in);
    free(chunk);
    return failed ? ospx_error_set(err, EIO, path, 0, 0, "read error: %s", strerror(EIO)) : 0;
}

static void put_html_escaped(FILE *out, const char *text)
{
    static const char *const entities[UCHAR_MAX + 1] = {
        ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;"};
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
        if (entities[*p] != NULL)
            fputs(entities[*p], out);
        else
            fputc(*p, out);
    }
}

/* The template up to `marker` (from *cursor), leaving *cursor after it. */
static int put_until(FILE *out, const char **cursor, const char *marker)
{
    const char *found = strstr(*cursor, marker);
    if (found == NULL)
        return -1;
    fwrite(*cursor, 1, (size_t)(found - *cursor), out);
    *cursor = found + strlen(marker);
    return 0;
}

/* The page for `stem`. `check`: parse both JSON files first (they come from elsewhere);
 * `summary`: 1 embed `<stem>.profile.json` (it must exist), 0 embed null, -1 embed it when it
 * exists. */
static int html_write(const char *stem, int check, int summary, struct ospx_error *err)
{
    size_t stem_length = strlen(stem);
    char *speedscope_path = malloc(stem_length + 32);
    char *summary_path = malloc(stem_length + 32);
    char *html_path = malloc(stem_length + 32);
    char *title_json = NULL;
    FILE *speedscope = NULL, *summary_in = NULL;
    int result;
    if (speedscope_path == NULL || summary_path == NULL || html_path == NULL) {
        result = ospx_error_set(err, ENOMEM, stem, 0, 0, "out of memory");
        goto done;
    }
    sprintf(speedscope_path, "%s.speedscope.json", stem);
    sprintf(summary_path, "%s.profile.json", stem);
    sprintf(html_path, "%s.html", stem);
    result = open_json_file(speedscope_path, 0, check, &speedscope, err);
    if (result != 0)
        goto done;
    if (summary != 0) {
        result = open_json_file(summary_path, summary < 0, check, &summary_in, err);
        if (result != 0 && result != -ENOENT)
            goto done;
    }
    const char *slash = strrchr(stem, '/');
    const char *title = slash != NULL ? slash + 1 : stem;
    title_json = ospx__json_quote(title);
    if (title_json == NULL) {
        result = ospx_error_set(err, ENOMEM, stem, 0, 0, "out of memory");
        goto done;
    }

    struct ospx__atomic_file file;
    result = ospx__atomic_open(&file, html_path, err);
    if (result != 0)
        goto done;
    const char *cursor = ospx_viewer_template;
    if (put_until(file.stream, &cursor, TITLE_MARKER) != 0) {
        ospx__atomic_abort(&file);
        result =
            ospx_error_set(err, EINVAL, "viewer-template.html", 0, 0, "no %s marker", TITLE_MARKER);
        goto done;
    }
    put_html_escaped(file.stream, title);
    if (put_until(file.stream, &cursor, DATA_MARKER) != 0) {
        ospx__atomic_abort(&file);
        result =
            ospx_error_set(err, EINVAL, "viewer-template.html", 0, 0, "no %s marker", DATA_MARKER);
        goto done;
    }
    fputs("{\"title\":", file.stream);
    struct json_copy title_state = {0};
    put_script_safe(file.stream, title_json, strlen(title_json), &title_state);
    fputs(",\"speedscope\":", file.stream);
    result = copy_script_safe(file.stream, speedscope, speedscope_path, err);
    fputs(",\"summary\":", file.stream);
    if (result == 0 && summary_in != NULL)
        result = copy_script_safe(file.stream, summary_in, summary_path, err);
    else
        fputs("null", file.stream);
    if (result != 0) {
        ospx__atomic_abort(&file);
        goto done;
    }
    fputs("}", file.stream);
    fputs(cursor, file.stream);
    result = ospx__atomic_commit(&file, err);

done:
    if (speedscope != NULL)
        fclose(speedscope);
    if (summary_in != NULL)
        fclose(summary_in);
    free(speedscope_path);
    free(summary_path);
    free(html_path);
    free(title_json);
    return result;
}

int ospx_html_write(const char *stem, struct ospx_error *err)
{
    return html_write(stem, 1, -1, err);
}

int ospx_html_write_fresh(const char *stem, int with_summary, struct ospx_error *err)
{
    return html_write(stem, 0, with_summary ? 1 : 0, err);
}
