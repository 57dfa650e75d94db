/* test-html.c — `<stem>.html` (exporters/html.c): the template's markers are filled with the
 * title and the profile, every '<' of the profile is written \u003c so it cannot close the
 * page's <script>, a missing profile.json is `null`, and a speedscope file that is not JSON is
 * one error naming it with nothing left behind; from a run's own files, its profile.json only
 * when the run wrote one; the whitespace between the JSON's tokens is left out, a string's kept.
 * The page itself is drawn in Chromium by vscode/test-browser/offline-page.test.mjs. */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ospx_html.h"
#include "scratch.h"
#include "suite.h"

static char dir[128];

static void setup(void)
{
    scratch_make(dir, sizeof dir, "html");
}

static void teardown(void)
{
    scratch_remove(dir);
}

/* The JSON object between the data script's tags. */
static json_t *embedded_data(const char *page)
{
    const char *open = "<script type=\"application/json\" id=\"osprey-data\">";
    const char *start = strstr(page, open);
    ck_assert_ptr_nonnull(start);
    start += strlen(open);
    const char *end = strstr(start, "</script>");
    ck_assert_ptr_nonnull(end);
    json_error_t error;
    json_t *data = json_loadb(start, (size_t)(end - start), 0, &error);
    ck_assert_msg(data != NULL, "embedded data: %s", error.text);
    return data;
}

static const char *const SPEEDSCOPE =
    "{\"shared\":{\"frames\":[{\"name\":\"</script><b>x\"}]},\"profiles\":[{\"type\":\"sampled\","
    "\"name\":\"fiber 1 (main)\",\"unit\":\"milliseconds\",\"samples\":[[0]],\"weights\":[1]}]}";

/* Writes `<dir>/<name>.speedscope.json` (and `.profile.json` unless NULL), makes the page and
 * returns its text. */
static char *page_for(const char *name, const char *speedscope, const char *summary)
{
    char stem[256], path[300];
    snprintf(stem, sizeof stem, "%s/%s", dir, name);
    snprintf(path, sizeof path, "%s.speedscope.json", stem);
    scratch_write(path, speedscope);
    if (summary != NULL) {
        snprintf(path, sizeof path, "%s.profile.json", stem);
        scratch_write(path, summary);
    }
    struct ospx_error error = {0};
    ck_assert_int_eq(ospx_html_write(stem, &error), 0);
    snprintf(path, sizeof path, "%s.html", stem);
    char *page = scratch_read(path, NULL);
    ck_assert_ptr_nonnull(page);
    return page;
}

START_TEST(fills_title_and_profile_with_no_raw_less_than)
{
    char *page = page_for("a&b", SPEEDSCOPE, "{\"version\":1,\"note\":\"<!--\"}");
    ck_assert_ptr_null(strstr(page, "@OSPREY_DATA@"));
    ck_assert_ptr_null(strstr(page, "@OSPREY_TITLE@"));
    ck_assert_ptr_nonnull(strstr(page, "<title>Osprey: a&amp;b</title>"));
    ck_assert_ptr_null(strstr(page, "</script><b>"));
    json_t *data = embedded_data(page);
    ck_assert_str_eq(json_string_value(json_object_get(data, "title")), "a&b");
    json_t *frame = json_array_get(
        json_object_get(json_object_get(json_object_get(data, "speedscope"), "shared"), "frames"),
        0);
    ck_assert_str_eq(json_string_value(json_object_get(frame, "name")), "</script><b>x");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(data, "summary"), "note")),
                     "<!--");
    json_decref(data);
    free(page);
}
END_TEST

START_TEST(no_profile_json_is_null)
{
    char *page = page_for("only", SPEEDSCOPE, NULL);
    json_t *data = embedded_data(page);
    ck_assert(json_is_null(json_object_get(data, "summary")));
    json_decref(data);
    free(page);
}
END_TEST

/* From the files a run has just written: profile.json only when this run wrote it (an older one
 * beside it is another run's), and the speedscope file copied as it is. */
START_TEST(fresh_page_takes_the_summary_only_when_written)
{
    char *page = page_for("fresh", SPEEDSCOPE, "{\"version\":1,\"note\":\"old\"}");
    free(page);
    char stem[256], path[300];
    snprintf(stem, sizeof stem, "%s/fresh", dir);
    snprintf(path, sizeof path, "%s.html", stem);
    struct ospx_error error = {0};
    ck_assert_int_eq(ospx_html_write_fresh(stem, 0, &error), 0);
    page = scratch_read(path, NULL);
    json_t *data = embedded_data(page);
    ck_assert(json_is_null(json_object_get(data, "summary")));
    json_t *frame = json_array_get(
        json_object_get(json_object_get(json_object_get(data, "speedscope"), "shared"), "frames"),
        0);
    ck_assert_str_eq(json_string_value(json_object_get(frame, "name")), "</script><b>x");
    json_decref(data);
    free(page);
    ck_assert_int_eq(ospx_html_write_fresh(stem, 1, &error), 0);
    page = scratch_read(path, NULL);
    data = embedded_data(page);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(data, "summary"), "note")),
                     "old");
    json_decref(data);
    free(page);
}
END_TEST

/* An indented summary (profile.json is written so, for people) goes into the page without the
 * whitespace between its tokens; its strings keep theirs, an escaped quote does not end one. */
START_TEST(indentation_is_left_out_strings_kept)
{
    char *page = page_for("indented", SPEEDSCOPE,
                          "{\n  \"version\": 1,\n  \"note\": \"a \\\" b  <c \",\n"
                          "  \"list\": [\n    1,\n    2\n  ]\n}\n");
    ck_assert_ptr_nonnull(strstr(page, "\"summary\":{\"version\":1,\"note\":\"a \\\" "
                                       "b  \\u003cc \",\"list\":[1,2]}}"));
    json_t *data = embedded_data(page);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(data, "summary"), "note")),
                     "a \" b  <c ");
    json_decref(data);
    free(page);
}
END_TEST

START_TEST(bad_speedscope_is_one_error_and_no_page)
{
    char stem[256], path[300];
    snprintf(stem, sizeof stem, "%s/bad", dir);
    snprintf(path, sizeof path, "%s.speedscope.json", stem);
    scratch_write(path, "{\"shared\": [1,\n 2,,]}");
    struct ospx_error error = {0};
    ck_assert_int_eq(ospx_html_write(stem, &error), -EINVAL);
    ck_assert_str_eq(error.file, path);
    ck_assert_int_eq(error.line, 2);
    ck_assert_ptr_null(strchr(error.text, '\n'));
    snprintf(path, sizeof path, "%s.html", stem);
    ck_assert_int_ne(access(path, F_OK), 0);
    /* And a missing one names the file too. */
    snprintf(stem, sizeof stem, "%s/none", dir);
    memset(&error, 0, sizeof error);
    ck_assert_int_eq(ospx_html_write(stem, &error), -ENOENT);
    ck_assert_ptr_nonnull(strstr(error.file, "none.speedscope.json"));
}
END_TEST

Suite *html_suite(void)
{
    Suite *s = suite_create("html");
    TCase *tc =
        SUITE_CASE(s, "html", 0, fills_title_and_profile_with_no_raw_less_than,
                   no_profile_json_is_null, fresh_page_takes_the_summary_only_when_written,
                   bad_speedscope_is_one_error_and_no_page, indentation_is_left_out_strings_kept);
    tcase_add_checked_fixture(tc, setup, teardown);
    return s;
}
