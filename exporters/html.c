/* html.c — `<stem>.html`: the flame graph and hot table as one offline page, for people without
 * VS Code. The page is viewer-template.html (the extension's own renderer and styles, inline,
 * under a policy that fetches nothing), compiled in by embed.py; this file fills in its two
 * markers — the title, HTML-escaped, and the profile, a JSON object
 * {"title": …, "speedscope": <stem>.speedscope.json, "summary": <stem>.profile.json or null}
 * with every '<' written as \u003c so no file content can close the page's <script>. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_html.h"
#include "ospx_internal.h"
#include "viewer_template.h"

#define DATA_MARKER  "@OSPREY_DATA@"
#define TITLE_MARKER "@OSPREY_TITLE@"

/* Reads a whole file after checking it is JSON. Returns 0, -ENOENT when it does not exist and
 * `optional`, or -errno with `err` filled. */
static int read_json_file(const char *path, int optional, char **text, size_t *length,
                          struct ospx_error *err)
{
    *text = NULL;
    FILE *in = fopen(path, "rb");
    if (in == NULL) {
        if (errno == ENOENT && optional)
            return -ENOENT;
        return ospx_error_set(err, errno, path, 0, 0, "%s", strerror(errno));
    }
    json_error_t json_error;
    json_t *root = json_loadf(in, JSON_DECODE_ANY, &json_error);
    if (root == NULL) {
        fclose(in);
        return ospx_error_set(err, EINVAL, path, json_error.line, json_error.column, "%s",
                              json_error.text);
    }
    json_decref(root);
    long size = fseek(in, 0, SEEK_END) == 0 ? ftell(in) : -1;
    if (size < 0 || fseek(in, 0, SEEK_SET) != 0) {
        int code = errno;
        fclose(in);
        return ospx_error_set(err, code, path, 0, 0, "%s", strerror(code));
    }
    *text = malloc((size_t)size + 1);
    if (*text == NULL) {
        fclose(in);
        return ospx_error_set(err, ENOMEM, path, 0, 0, "out of memory");
    }
    *length = fread(*text, 1, (size_t)size, in);
    fclose(in);
    return 0;
}

/* JSON text with '<' as \u003c (outside strings JSON has no '<', so this is always valid). */
static void put_script_safe(FILE *out, const char *text, size_t length)
{
    size_t start = 0;
    for (size_t i = 0; i < length; i++) {
        if (text[i] == '<') {
            fwrite(text + start, 1, i - start, out);
            fputs("\\u003c", out);
            start = i + 1;
        }
    }
    fwrite(text + start, 1, length - start, out);
}

static void put_html_escaped(FILE *out, const char *text)
{
    for (const char *p = text; *p != '\0'; p++) {
        switch (*p) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(*p, out);
        }
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

int ospx_html_write(const char *stem, struct ospx_error *err)
{
    size_t stem_length = strlen(stem);
    char *speedscope_path = malloc(stem_length + 32);
    char *summary_path = malloc(stem_length + 32);
    char *html_path = malloc(stem_length + 32);
    char *speedscope = NULL, *summary = NULL, *title_json = NULL;
    size_t speedscope_length = 0, summary_length = 0;
    int result;
    if (speedscope_path == NULL || summary_path == NULL || html_path == NULL) {
        result = ospx_error_set(err, ENOMEM, stem, 0, 0, "out of memory");
        goto done;
    }
    sprintf(speedscope_path, "%s.speedscope.json", stem);
    sprintf(summary_path, "%s.profile.json", stem);
    sprintf(html_path, "%s.html", stem);
    result = read_json_file(speedscope_path, 0, &speedscope, &speedscope_length, err);
    if (result != 0)
        goto done;
    result = read_json_file(summary_path, 1, &summary, &summary_length, err);
    if (result != 0 && result != -ENOENT)
        goto done;
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
    put_script_safe(file.stream, title_json, strlen(title_json));
    fputs(",\"speedscope\":", file.stream);
    put_script_safe(file.stream, speedscope, speedscope_length);
    fputs(",\"summary\":", file.stream);
    if (summary != NULL)
        put_script_safe(file.stream, summary, summary_length);
    else
        fputs("null", file.stream);
    fputs("}", file.stream);
    fputs(cursor, file.stream);
    result = ospx__atomic_commit(&file, err);

done:
    free(speedscope_path);
    free(summary_path);
    free(html_path);
    free(speedscope);
    free(summary);
    free(title_json);
    return result;
}
