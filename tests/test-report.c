/* test-report.c — the terminal report: no line wider than the width (display columns), the
 * eighth-block bars, colour only when asked, the low-confidence and dropped lines exactly when
 * they apply, the top-10 cap, the durations and the written paths. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osp_unwind_step.h"
#include "ospx-fixture.h"
#include "ospx.h"
#include "ospx_internal.h"
#include "scratch.h"
#include "suite.h"

/* A profile text: `count` functions, function i with self[i] on-CPU samples under main. */
static char *profile_text(const char *names_prefix, const char *file, size_t count,
                          const unsigned *self, unsigned rate, unsigned dropped)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    fprintf(out, "rate %u\nstart 0\nend 2500000000\ndropped %u\n", rate, dropped);
    fprintf(out, "thread 0 main\nthread 12 worker\nframe main /w/main.c\n");
    for (size_t i = 0; i < count; i++) {
        fprintf(out, "frame %s%zu %s\n", names_prefix, i, file);
        fprintf(out, "stack %zu@%zu 0@5\n", i + 1, 10 + i);
    }
    unsigned long long t = 0;
    for (size_t i = 0; i < count; i++)
        for (unsigned n = 0; n < self[i]; n++)
            fprintf(out, "sample %llu %zu %zu 0\n", t += 1000, i % 2, i);
    fprintf(out, "sample %llu 0 0 1\n", t + 1000); /* one waiting sample */
    fclose(out);
    return text;
}

/* The report as a string (malloc'd). Written through a temporary file, so the string never
 * aliases a stream's buffer. */
static char *render_with(const struct ospx_model *model, const struct ospx_report_options *options)
{
    FILE *out = tmpfile();
    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(ospx_report_print(model, options, out), 0);
    long size = ftell(out);
    ck_assert_int_ge(size, 0);
    char *text = malloc((size_t)size + 1);
    ck_assert_ptr_nonnull(text);
    rewind(out);
    ck_assert_uint_eq(fread(text, 1, (size_t)size, out), (size_t)size);
    text[size] = '\0';
    fclose(out);
    return text;
}

static char *render(const struct ospx_model *model, int color, int width)
{
    static const char *const paths[] = {"/tmp/out/hotspot.speedscope.json",
                                        "/tmp/out/hotspot.folded"};
    struct ospx_report_options options = {
        .color = color, .width = width, .written_paths = paths, .written_count = 2};
    return render_with(model, &options);
}

/* Display columns of one line: code points, not counting ANSI escape sequences. */
static size_t display_columns(const char *line, size_t length)
{
    size_t n = 0;
    for (size_t i = 0; i < length; i++) {
        if (line[i] == '\033') {
            while (i < length && line[i] != 'm')
                i++;
            continue;
        }
        n += ((unsigned char)line[i] & 0xC0) != 0x80;
    }
    return n;
}

static size_t widest_line(const char *text)
{
    size_t widest = 0;
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t length = end != NULL ? (size_t)(end - line) : strlen(line);
        size_t columns = display_columns(line, length);
        widest = columns > widest ? columns : widest;
        line += length + (end != NULL);
    }
    return widest;
}

/* The report line that mentions `needle`, copied (static buffer), or NULL. */
static const char *line_with(const char *text, const char *needle)
{
    static char line[4096];
    const char *at = strstr(text, needle);
    if (at == NULL)
        return NULL;
    const char *start = at;
    while (start > text && start[-1] != '\n')
        start--;
    const char *end = strchr(at, '\n');
    snprintf(line, sizeof line, "%.*s", (int)(end != NULL ? end - start : (long)strlen(start)),
             start);
    return line;
}

static size_t count_lines_with(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        n++;
    return n;
}

struct built {
    struct fixture fixture;
    struct ospx_model model;
};

static void build(struct built *built, char *text)
{
    fixture_model(&built->fixture, text, &built->model);
    free(text);
}

static void release(struct built *built)
{
    ospx_model_free(&built->model);
    fixture_free(&built->fixture);
}

/* The report of a profile text at `width` columns, without colour (malloc'd). */
static char *report_of(const char *profile, int width)
{
    struct built built;
    fixture_model(&built.fixture, profile, &built.model);
    char *text = render(&built.model, 0, width);
    release(&built);
    return text;
}

/* The same of a malloc'd profile text, freed. */
static char *report_taking(char *profile, int width)
{
    char *text = report_of(profile, width);
    free(profile);
    return text;
}

/* REPORT_OF(prefix, width, rate, dropped, self...): the report at `width` of a profile_text of
 * /w/x.c whose functions PREFIX0, PREFIX1... have the self counts listed. */
#define REPORT_OF(prefix, width, rate, dropped, ...)                                               \
    report_taking(profile_text((prefix), "/w/x.c",                                                 \
                               sizeof((unsigned[]){__VA_ARGS__}) / sizeof(unsigned),               \
                               (unsigned[]){__VA_ARGS__}, (rate), (dropped)),                      \
                  (width))

/* Each NULL-ended needle is in text (present) or none is (!present); text shown when not. */
static void expect_in(const char *text, int present, const char *const *needles)
{
    for (; *needles != NULL; needles++)
        ck_assert_msg((strstr(text, *needles) != NULL) == present, "%s \"%s\" in:\n%s",
                      present ? "no" : "unexpected", *needles, text);
}
#define HAS(text, ...)   expect_in((text), 1, (const char *const[]){__VA_ARGS__, NULL})
#define LACKS(text, ...) expect_in((text), 0, (const char *const[]){__VA_ARGS__, NULL})

/* EXPECT_REPORT(width, profile, needle...): the report of the profile text at `width` holds
 * each needle. */
#define EXPECT_REPORT(width, profile, ...)                                                         \
    do {                                                                                           \
        char *report_ = report_of((profile), (width));                                             \
        HAS(report_, __VA_ARGS__);                                                                 \
        free(report_);                                                                             \
    } while (0)

/* The line of text with `line_needle` holds `needle` (a failed check naming both when not). */
static void line_has(const char *text, const char *line_needle, const char *needle)
{
    const char *line = line_with(text, line_needle);
    ck_assert_msg(line != NULL && strstr(line, needle) != NULL,
                  "no \"%s\" on the line of \"%s\" in:\n%s", needle, line_needle, text);
}

static const int widths[] = {60, 80, 120};

START_TEST(no_line_is_wider_than_the_width)
{
    static const unsigned self[] = {400, 300, 120, 90, 40, 20, 9, 5, 3, 2, 1, 1};
    struct built built;
    build(&built,
          profile_text(
              "a_rather_long_function_name_with_template_arguments_and_a_namespace_prefix_number_",
              "/a/very/deeply/nested/source/tree/with/a/long/file_name.c", 12, self, 997, 4));
    for (int color = 0; color <= 1; color++) {
        char *text = render(&built.model, color, widths[_i]);
        if (getenv("OSPX_SHOW_REPORT") != NULL)
            fputs(text, stderr);
        ck_assert_msg(widest_line(text) <= (size_t)widths[_i], "width %d:\n%s", widths[_i], text);
        HAS(text, "…" /* names were cut, visibly */, "SELF%");
        free(text);
    }
    release(&built);
}
END_TEST

START_TEST(short_names_are_not_cut)
{
    char *text = REPORT_OF("f", 80, 100, 0, 150, 50);
    LACKS(text, "…");
    line_has(text, "f0 ", "x.c:10");
    free(text);
}
END_TEST

START_TEST(location_is_relative_to_the_working_directory_or_a_base_name)
{
    char cwd[512], inside[700];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(inside, sizeof inside, "%s/build/./../src/x.c", strcmp(cwd, "/") == 0 ? "" : cwd);
    static const unsigned self[] = {10};
    char *text = report_taking(profile_text("f", inside, 1, self, 100, 0), 200);
    line_has(text, "f0 ", "  src/x.c:10");
    free(text);
    text = report_taking(profile_text("f", "/nowhere/near/here/y.c", 1, self, 100, 0), 200);
    line_has(text, "f0 ", "  y.c:10");
    free(text);
}
END_TEST

START_TEST(header_names_the_columns_and_the_run)
{
    char *text = REPORT_OF("f", 100, 100, 0, 170, 35);
    const char *header = line_with(text, "osprey:");
    ck_assert_ptr_nonnull(header);
    HAS(header, "2.50s wall", "2.05s CPU", "206 samples (205 on-CPU)", "100 Hz", "2 threads");
    /* columns in order, no calls column */
    const char *columns = line_with(text, "SELF%");
    const char *order[] = {"SELF%", "TOTAL%", "SELF ", "TOTAL ", "FUNCTION", "LOCATION"};
    const char *at = columns;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        at = strstr(at, order[i]);
        ck_assert_msg(at != NULL, "column %s missing in: %s", order[i], columns);
    }
    LACKS(text, "CALLS");
    /* durations from samples / rate */
    line_has(text, "f0 ", "1.70s");
    line_has(text, "f1 ", "350ms");
    /* the state split */
    line_has(text, "thread 0 (main)", "waiting");
    line_has(text, "thread 12 (worker)", "running 100.0%");
    free(text);
}
END_TEST

START_TEST(header_says_the_collectors_cpu_over_one_percent_of_a_core)
{
    static const unsigned self[] = {170, 35};
    struct built built;
    build(&built, profile_text("f", "/w/x.c", 2, self, 100, 0));
    built.fixture.raw.collector_cpu_ms = 25; /* 10 ms per second of the 2.5 s: not over 1% */
    char *text = render(&built.model, 0, 120);
    ck_assert_ptr_null(strstr(line_with(text, "osprey:"), "collector"));
    free(text);
    built.fixture.raw.collector_cpu_ms = 35; /* 14 ms per second */
    text = render(&built.model, 0, 120);
    line_has(text, "osprey:", ", 2 threads; collector 14 ms CPU/s");
    free(text);
    text = render(&built.model, 0, 60);
    ck_assert_str_eq(line_with(text, "collector"), "  collector 14 ms CPU/s");
    free(text);
    release(&built);
}
END_TEST

/* One process of 2.5 s, a sample on CPU and one waiting: the waits' lines' tests. */
static void waits_fixture(struct built *built)
{
    fixture_model(&built->fixture,
                  "rate 100\nstart 0\nend 2500000000\ndropped 0\nprocess 42 /w/demo\n"
                  "thread 0 main\nframe main /w/main.c\nstack 0@5\nsample 1000 0 0 0\n"
                  "sample 2000 0 0 1\n",
                  &built->model);
}

/* Waits the program's calls timed (the kernel's records refused): one line says so, what refused
 * them and how to allow them; none when the kernel timed them (or an older file does not say). */
START_TEST(the_waits_line_says_what_refused_the_kernels_records)
{
    struct built built;
    waits_fixture(&built);
    struct ospx_process *p = &built.fixture.raw.processes[0];
    char *text = render(&built.model, 0, 200);
    LACKS(text, "waits timed");
    free(text);
    strcpy(p->waits_refused_by, "seccomp");
    strcpy(p->waits_refused, "EACCES");
    p->waits_paranoid = 2;
    text = render(&built.model, 0, 200);
    ck_assert_str_eq(line_with(text, "waits timed"),
                     "waits timed by the program's calls: perf events refused by a seccomp filter "
                     "(EACCES); for the kernel's timing, allow perf_event_open (docker run "
                     "--cap-add PERFMON)");
    free(text);
    strcpy(p->waits_refused_by, "perf_event_paranoid");
    p->waits_paranoid = 3;
    text = render(&built.model, 0, 100); /* two lines: the setting, then how to change it */
    ck_assert_str_eq(line_with(text, "waits timed"),
                     "waits timed by the program's calls: perf "
                     "events refused by kernel.perf_event_paranoid=3;");
    HAS(text, "  for the kernel's timing: sudo sysctl kernel.perf_event_paranoid=2");
    free(text);
    release(&built);
}
END_TEST

/* The kernel's context-switch records lost (their ring full: ospreyd fell behind): one line
 * says how many, so that the waits are not read as whole; none when none were lost. */
START_TEST(lost_switch_records_are_told)
{
    struct built built;
    waits_fixture(&built);
    char *text = render(&built.model, 0, 200);
    LACKS(text, "context-switch records");
    free(text);
    built.fixture.raw.processes[0].waits_lost = 232;
    text = render(&built.model, 0, 200);
    ck_assert_str_eq(line_with(text, "waits:"),
                     "waits: 232 of the kernel's context-switch records lost (their ring was "
                     "full: the collector fell behind); some waits are shorter or missing");
    free(text);
    release(&built);
}
END_TEST

/* On-CPU time paid in rows of many periods (a thread's CPU time its timers missed, paid where
 * a later signal landed: SQLite's fsyncs, 88.7%): one line says how much and what it means;
 * none when such rows are a small part (a busy thread's reckoned clock pays up to 8). */
START_TEST(cpu_paid_late_is_told)
{
    char *text = report_of("rate 1000\nframe main /w/db.c\nframe step /w/db.c\n"
                           "process 7 /w/db\nthread 0 main\nstack 0\nstack 1 0\n"
                           "sample 1000000 0 0 0 40\nsample 2000000 0 1 0 99\n"
                           "sample 3000000 0 0 0 1\nsample 4000000 0 1 0 20\n",
                           200);
    ck_assert_str_eq(line_with(text, "sampling: "),
                     "sampling: 99.4% of on-CPU time was paid late, 16 periods or more at once "
                     "(up to 99);");
    HAS(text, "  CPU time the timers missed (inside system calls that blocked, or bursts shorter "
              "than a tick), paid where a later signal landed: self times there are not where "
              "it was spent");
    free(text);
    /* Rows of 8 (a busy thread's reckoned clock): nothing said. */
    text = report_of("rate 1000\nframe main /w/db.c\nprocess 7 /w/db\nthread 0 main\n"
                     "stack 0\nsample 1000000 0 0 0 8\nsample 2000000 0 0 0 8\n"
                     "sample 3000000 0 0 0 8\nsample 4000000 0 0 0 8\n"
                     "sample 5000000 0 0 0 8\nsample 6000000 0 0 0 8\n"
                     "sample 7000000 0 0 0 8\nsample 8000000 0 0 0 15\n",
                     200);
    ck_assert_ptr_null(line_with(text, "paid late"));
    free(text);
}
END_TEST

START_TEST(bars_are_eighth_blocks_proportional_to_self)
{
    /* 64 on-CPU samples: a full gutter (8 cells) is 100%, one eighth of a cell 1/64. */
    char *text = REPORT_OF("g", 100, 1000, 0, 32, 20, 8, 3, 1);
    static const char *const expected[] = {"████     ", "██▌      ", "█        ", "▍        ",
                                           "▏        "};
    for (size_t i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "g%zu ", i);
        const char *row = line_with(text, name);
        ck_assert_ptr_nonnull(row);
        ck_assert_msg(strncmp(row, expected[i], strlen(expected[i])) == 0, "row %zu: '%s'", i, row);
    }
    free(text);
}
END_TEST

START_TEST(colour_only_when_asked)
{
    /* g0 is 95% (hot), g1 4% (warm), g2 1 sample of 1000 = 0.1% (plain) */
    static const unsigned self[] = {950, 40, 1, 9};
    struct built built;
    build(&built, profile_text("g", "/w/x.c", 4, self, 1000, 0));
    char *plain = render(&built.model, 0, 100);
    ck_assert_ptr_null(strstr(plain, "\033["));
    char *coloured = render(&built.model, 1, 100);
    line_has(coloured, "g0 ", "\033[1;31m");
    line_has(coloured, "g1 ", "\033[33m");
    ck_assert_ptr_null(strstr(line_with(coloured, "g2 "), "\033["));
    line_has(coloured, "g0 ", "\033[0m");
    free(plain);
    free(coloured);
    release(&built);
}
END_TEST

START_TEST(low_confidence_below_one_hundred_samples)
{
    char *text = REPORT_OF("f", 100, 997, 0, 30, 7);
    line_has(text, "low confidence", "only 37 on-CPU samples");
    line_has(text, "low confidence", "raise the rate with -F N");
    free(text);
    text = REPORT_OF("f", 100, 997, 0, 60, 40);
    LACKS(text, "low confidence");
    free(text);
}
END_TEST

START_TEST(dropped_line_only_when_samples_were_dropped)
{
    char *text = REPORT_OF("f", 100, 997, 17, 100);
    HAS(text, "dropped: 17 samples");
    free(text);
    text = REPORT_OF("f", 100, 997, 0, 100);
    LACKS(text, "dropped");
    free(text);
}
END_TEST

/* The reasons the collector gave ride on the dropped line. */
START_TEST(dropped_line_names_the_reasons)
{
    static const unsigned self[] = {100};
    char *text = profile_text("f", "/w/x.c", 1, self, 997, 17);
    char *with_reasons = malloc(strlen(text) + 64);
    sprintf(with_reasons, "%sdrop ring_full 15\ndrop collector_memory 2\n", text);
    free(text);
    text = report_taking(with_reasons, 120);
    HAS(text, "dropped: 17 samples could not be recorded (ring_full 15, collector_memory 2)");
    free(text);
}
END_TEST

/* "achieved N samples/s of M requested" when the CPU time was measured; a warning below 90%. */
START_TEST(achieved_rate_against_the_measured_cpu_time)
{
    static const char profile[] = "rate 1000\nstart 0\nend 2000000000\n"
                                  "process_cpu_ns %s\nthread 0 main\n"
                                  "frame main /w/main.c\nstack 0@5\nsample 1000 0 0 0 950\n";
    char text[512];
    snprintf(text, sizeof text, profile, "1000000000");
    char *report = report_of(text, 120);
    HAS(report,
        "sampling: achieved 950 samples/s of 1000 requested (95.0%) over 1.00s CPU measured");
    LACKS(report, "warning");
    free(report);
    snprintf(text, sizeof text, profile, "2000000000"); /* half the periods were sampled */
    report = report_of(text, 120);
    HAS(report, "warning: achieved 475 samples/s of 1000 requested (47.5%)",
        "CPU times undercount (2.00s measured)");
    free(report);
    report = report_of(
        "rate 1000\nthread 0 main\nframe main /w/main.c\nstack 0@5\nsample 1000 0 0 0\n", 120);
    LACKS(report, "achieved");
    free(report);
}
END_TEST

/* A view (--focus, --ignore, --fiber, --pid) holds part of the samples and the run's CPU time:
 * the sampling line speaks of the whole run, and says so, never warning of the view's share. */
START_TEST(achieved_rate_of_a_view_is_the_whole_runs)
{
    static const char profile[] = "rate 1000\nstart 0\nend 1000000000\n"
                                  "process_cpu_ns 1000000000\nthread 0 main\nthread 1 w\n"
                                  "frame main /w/main.c\nframe hot /w/main.c\n"
                                  "frame cold /w/main.c\n"
                                  "stack 1@5 0@9\nstack 2@7 0@9\n"
                                  "sample 1000 0 0 0 700\nsample 1000 1 1 0 250\n";
    static const struct ospx_filter views[] = {
        {.focus = "^cold$"}, {.ignore = "^hot$"}, {.fiber = "1"}, {.fiber = "w"}};
    for (size_t v = 0; v < sizeof views / sizeof *views; v++) {
        struct fixture fixture;
        struct ospx_error err = {0};
        fixture_parse(&fixture, profile);
        ck_assert_int_eq(ospx_filter_samples(&fixture.raw, &fixture.symbols, &views[v], &err), 0);
        struct ospx_model model;
        ck_assert_int_eq(ospx_model_build(&fixture.raw, &fixture.symbols, &model, &err), 0);
        ck_assert_uint_eq(model.on_cpu_samples, 250);
        char *report = render(&model, 0, 120);
        HAS(report, "sampling: achieved 950 samples/s of 1000 requested (95.0%) over 1.00s CPU "
                    "measured (the whole run)");
        LACKS(report, "warning");
        /* a view of the view keeps the run's figures */
        ck_assert_int_eq(ospx_filter_samples(&fixture.raw, &fixture.symbols,
                                             &(struct ospx_filter){.ignore = "^nothing$"}, &err),
                         0);
        ck_assert_uint_eq(fixture.raw.whole.on_cpu, 950);
        free(report);
        ospx_model_free(&model);
        fixture_free(&fixture);
    }
}
END_TEST

/* The header's count and the low-confidence line say the same samples: all of them, and of
 * those the on-CPU ones the figures are over. */
START_TEST(header_and_low_confidence_count_the_same_samples)
{
    char *text = report_of("rate 1000\nthread 0 main\nframe main /w/main.c\nframe wait /w/main.c\n"
                           "stack 0@5\nstack 1@9\nsample 1000 0 0 0 10\nsample 2000 0 1 1 2\n",
                           120);
    line_has(text, "osprey:", "12 samples (10 on-CPU)");
    line_has(text, "low confidence", "only 10 on-CPU samples");
    free(text);
}
END_TEST

/* A runtime's own fibers (an id that is not the thread's tid) are fibers; threads are
 * threads. */
START_TEST(threads_and_runtime_fibers_are_named_apart)
{
    char *text = report_of("rate 1000\nthread 0 main -1 40\nthread 41 worker -1 41\n"
                           "thread 7 fiber -1 40\nthread -1 effect -1 42\nframe main /w/main.c\n"
                           "stack 0@5\nsample 1000 0 0 0 50\nsample 1000 1 0 0 40\n"
                           "sample 1000 2 0 0 30\nsample 1000 3 0 0 20\n",
                           120);
    line_has(text, "osprey:", "2 threads, 2 fibers");
    HAS(text, "  thread 0 (main)", "  thread 41 (worker)", "  fiber 7 (fiber)",
        "  fiber -1 (effect)");
    free(text);

    /* past eight lines, the rest share one, which says what they are */
    char many[4096] = "rate 1000\nframe main /w/main.c\nstack 0@5\n";
    for (int i = 0; i < 12; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "thread %d t -1 %d\n",
                 i < 10 ? 100 + i : 900 + i, 100 + i);
    for (int i = 0; i < 12; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "sample 1000 %d 0 0 %d\n", i,
                 50 - i);
    text = report_of(many, 120);
    line_has(text, "osprey:", "10 threads, 2 fibers");
    HAS(text, "  … 4 more (2 threads, 2 fibers): running 100.0%");
    free(text);
}
END_TEST

/* A thread that never named itself (the shim's "thread") goes by its process's command, as
 * perf names it (its comm); several are told apart by their ids; a name of its own and a
 * runtime's fiber labelled "thread" keep theirs. */
START_TEST(unnamed_threads_go_by_the_process_command)
{
    char *text = report_of("rate 1000\nprocess 40 /usr/bin/gzip\nthread 0 main -1 40\n"
                           "thread 41 thread -1 41\nthread 42 thread -1 42\n"
                           "thread 43 reader -1 43\nthread 7 thread -1 40\n"
                           "frame main /w/main.c\nstack 0@5\nsample 1000 0 0 0 50\n"
                           "sample 1000 1 0 0 40\nsample 1000 2 0 0 30\nsample 1000 3 0 0 20\n"
                           "sample 1000 4 0 0 10\n",
                           120);
    HAS(text, "  thread 0 (main)", "  thread 41 (gzip)", "  thread 42 (gzip)",
        "  thread 43 (reader)", "  fiber 7 (thread)");
    ck_assert_uint_eq(count_lines_with(text, "(thread)"), 1);
    free(text);
}
END_TEST

/* A thread never sampled while it ran (its sampling timers refused: timer_create EPERM,
 * RLIMIT_SIGPENDING spent) has its CPU time paid where it ended, in one row: the report says so
 * rather than show it as sampled there (and no share holds for it); a sampled thread, and one
 * too short for more than one period, say nothing. */
START_TEST(cpu_time_of_unsampled_threads_is_said_to_be_shown_where_they_ended)
{
    char *text = report_of("rate 1000\nprocess_cpu_ns 349000000\nthread 0 main -1 40\n"
                           "frame __cxa_finalize\nframe main /w/main.c\nstack 0 1@5\n"
                           "sample 2083361613 0 0 0 99\n",
                           300);
    line_has(text, "not sampled:",
             "not sampled: 99ms of CPU time (100.0%) of 1 thread (main) is shown where it ended, "
             "at __cxa_finalize; no sample was taken while it ran (a thread's sampling timers "
             "could not be created, or it ran in bursts shorter than a period): where that time "
             "went is not known");
    line_has(text, "warning: achieved", "CPU times undercount (349ms measured)");
    ck_assert_ptr_null(line_with(text, "shares hold"));
    free(text);
    /* three of them, beside a sampled worker */
    char profile[4096] = "rate 1000\nprocess_cpu_ns 400000000\nthread 0 main -1 40\n"
                         "thread 41 thread -1 41\nthread 42 thread -1 42\n"
                         "thread 43 worker -1 43\nframe work /w/w.c\nstack 0@5\n"
                         "sample 5000000 0 0 0 12\nsample 6000000 1 0 0 6\n"
                         "sample 7000000 2 0 0 9\n";
    for (int i = 0; i < 300; i++)
        snprintf(profile + strlen(profile), sizeof profile - strlen(profile), "sample %d 3 0 0\n",
                 1000000 + i * 1000);
    text = report_of(profile, 300);
    line_has(text, "not sampled:",
             "of 3 threads are shown where they ended; no sample was taken while they ran");
    line_has(text, "not sampled:", "not sampled: 27ms of CPU time (");
    free(text);
    /* sampled threads, a thread of one period, and one whose one row came before it waited
     * (a late tick, then a join), say nothing */
    text = report_of("rate 1000\nthread 0 main -1 40\nthread 41 thread -1 41\n"
                     "thread 42 thread -1 42\nframe work /w/w.c\nstack 0@5\n"
                     "sample 1000 0 0 0\nsample 2000 0 0 0 2\nsample 3000 1 0 0\n"
                     "sample 1000 2 0 0 3\nsample 2000 2 0 1 90\n",
                     300);
    ck_assert_ptr_null(line_with(text, "not sampled"));
    free(text);
}
END_TEST

/* A run of several processes, one of which ended before its CPU time was read (a pipeline's
 * gzip killed by SIGPIPE, a shell that ended without an exit record): the rate is the others',
 * and the line says which was left out (there was no sampling line at all); with none read, it
 * says it could not check. */
START_TEST(a_process_whose_cpu_time_was_not_read_is_left_out_of_the_rate)
{
    static const char two[] = "rate 1000\nstart 0\nend 2000000000\nframe work /w/w.c\n"
                              "process 100 /bin/xz\nthread 0 main %s 100\nstack 0@5\n"
                              "process 101 /bin/gzip\nthread 0 main -1 101\nstack 0@5\n"
                              "sample 1000 0 0 0 500\nsample 2000 0 0 0 500\n"
                              "sample 3000 1 1 0 300\nsample 4000 1 1 0 200\n";
    char *profile = NULL;
    ck_assert_int_gt(asprintf(&profile, two, "1000000000"), 0);
    char *text = report_taking(profile, 300);
    line_has(text, "sampling:",
             "sampling: achieved 1000 samples/s of 1000 requested (100.0%) over 1.00s CPU "
             "measured; not counted: process 101 (gzip), whose CPU time was not read");
    free(text);
    ck_assert_int_gt(asprintf(&profile, two, "-1"), 0);
    text = report_taking(profile, 300);
    line_has(text, "sampling:",
             "sampling: not checked: the CPU time of 2 processes (the first: 100 (xz)) was not "
             "read");
    free(text);
}
END_TEST

/* No "shares hold" without a sample to share; after a signal the sampling line says why it
 * cannot check the rate rather than vanishing. */
START_TEST(sampling_line_without_samples_and_after_a_signal)
{
    char *text = report_of("rate 1000\nprocess_cpu_ns 20000000\nthread 0 main\n"
                           "frame wait /w/main.c\nstack 0@5\nsample 1000 0 0 1 3\n",
                           120);
    HAS(text, "warning: achieved 0 samples/s");
    LACKS(text, "shares hold");
    free(text);
    text = report_of("rate 1000\nkilled 9\nthread 0 main\nframe main /w/main.c\n"
                     "stack 0@5\nsample 1000 0 0 0 30\n",
                     120);
    HAS(text, "sampling: not checked: the program was killed by signal 9");
    free(text);
}
END_TEST

/* Outputs that could not be written are named on one line, after those that were; files of an
 * earlier run that were replaced are counted. */
START_TEST(missing_and_replaced_outputs_are_said)
{
    struct built built;
    build(&built, strdup("rate 1000\nthread 0 main\nframe main /w/main.c\n"
                         "stack 0@5\nsample 1000 0 0 0 300\n"));
    const char *written[] = {"out/p.speedscope.json", "out/p.raw.json"};
    const char *missing[] = {"out/p.pb.gz", "out/p.trace.json", "out/p.html"};
    struct ospx_report_options options = {.width = 120,
                                          .written_paths = written,
                                          .written_count = 2,
                                          .missing_paths = missing,
                                          .missing_count = 3,
                                          .missing_reason = "cannot write: No space left on device",
                                          .replaced_count = 2};
    char *text = render_with(&built.model, &options);
    HAS(text, "not written: out/p.pb.gz, .trace.json, .html; cannot write: No space left on device",
        "replaced 2 files from an earlier run at this stem", "  out/p.raw.json");
    free(text);
    options.missing_count = 0;
    options.replaced_count = 0;
    text = render_with(&built.model, &options);
    LACKS(text, "not written", "replaced");
    free(text);
    release(&built);
}
END_TEST

/* Names from the profile never put an escape sequence on the terminal. */
START_TEST(escape_sequences_in_names_are_not_printed)
{
    char *report = report_of("rate 1000\nthread 0 \033]0;owned\007\n"
                             "frame 0x1234 - /lib/\033[2Jevil.so\nstack 0\n"
                             "sample 1000 0 0 0\ndropped 1\ndrop \033[31mred 1\n",
                             120);
    LACKS(report, "\033", "\007");
    HAS(report, "?[2Jevil.so");
    free(report);
}
END_TEST

START_TEST(table_stops_at_ten_functions)
{
    char *text = REPORT_OF("fn_", 100, 997, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
    ck_assert_uint_eq(count_lines_with(text, "x.c:"), 10);
    HAS(text, "fn_9 ");
    LACKS(text, "fn_10 ");
    free(text);
}
END_TEST

START_TEST(written_paths_come_last)
{
    char *text = REPORT_OF("f", 100, 997, 0, 100);
    const char *speedscope = strstr(text, "/tmp/out/hotspot.speedscope.json");
    ck_assert_ptr_nonnull(speedscope);
    HAS(speedscope, "/tmp/out/hotspot.folded\n");
    ck_assert_ptr_nonnull(strstr(text, "x.c:10") < speedscope ? speedscope : NULL);
    free(text);
}
END_TEST

/* --list counts the function's time that has no line (addresses outside the line table)
 * and says how much it is, instead of leaving it out. */
START_TEST(listing_says_how_much_time_had_no_line)
{
    struct built built;
    fixture_model(&built.fixture,
                  "rate 1000\nthread 0 main\nframe leaf /w/l.c\nframe main /w/l.c\n"
                  "stack 0@5 1@20\nstack 0@0 1@20\n"
                  "sample 1 0 0 0 3\nsample 2 0 1 0 1\n",
                  &built.model);
    struct ospx_report_options options = {.width = 100, .list = "^leaf$"};
    char *text = render_with(&built.model, &options);
    HAS(text, "ROUTINE ======================== leaf in /w/l.c");
    line_has(text, "(no line: 25.0% of this function's time)", "1ms        1ms      ?:");
    free(text);
    release(&built);
    /* a function whose every sample has a line says nothing of the kind */
    fixture_model(&built.fixture,
                  "rate 1000\nthread 0 main\nframe leaf /w/l.c\nstack 0@5\nsample 1 0 0 0\n",
                  &built.model);
    text = render_with(&built.model, &options);
    LACKS(text, "no line");
    free(text);
    release(&built);
}
END_TEST

/* A view writes nothing and the report says so; a report that wrote files lists them. */
START_TEST(a_view_says_nothing_was_written)
{
    static const unsigned self[] = {100};
    struct built built;
    build(&built, profile_text("f", "/w/x.c", 1, self, 997, 0));
    struct ospx_report_options options = {.width = 100, .view_only = 1};
    char *text = render_with(&built.model, &options);
    HAS(text,
        "written: nothing (a view of the profile); -o STEM or --format LIST writes its outputs");
    free(text);
    text = render(&built.model, 0, 100);
    LACKS(text, "written: nothing");
    free(text);
    release(&built);
}
END_TEST

START_TEST(only_waiting_samples_says_so)
{
    char *text = report_of(
        "thread 0 main\nthread 3 idle\nframe wait /w/x.c\nstack 0@3\nsample 1 0 0 1\n", 80);
    line_has(text, "thread 0 (main)", "waiting 100.0%");
    line_has(text, "thread 3 (idle)", "no samples");
    HAS(text, "no on-CPU samples");
    LACKS(text, "FUNCTION");
    free(text);
}
END_TEST

/* CPU time measured and no on-CPU sample: the sampling stopped (a seccomp sandbox entered at
 * the start of main), which is not a program that waited. */
START_TEST(unsampled_cpu_is_not_waiting)
{
    struct built built;
    fixture_model(&built.fixture,
                  "rate 997\nprocess_cpu_ns 444000000\nthread 0 main\nframe wait /w/x.c\n"
                  "stack 0\nsample 1 0 0 1\n",
                  &built.model);
    char *text = render(&built.model, 0, 200);
    ck_assert_msg(strstr(text, "no on-CPU samples, though the collector measured 444ms of CPU; "
                               "sampling stopped early") != NULL,
                  "%s", text);
    ck_assert_ptr_null(line_with(text, "the program waited all the time"));
    free(text);
    release(&built);
}
END_TEST

/* An attach as a user the kernel shows no kernel frames: its events counted 460ms of CPU, the
 * samples outside the kernel are 216 periods of the 410ms measured. The line says the time in
 * system calls is what is missing, not that shares hold; with a kernel frame, they hold. */
static char *attach_report(const char *leaf)
{
    char *profile = NULL;
    ck_assert_int_gt(asprintf(&profile,
                              "rate 1000\nprocess_cpu_ns 410000000\nevents_cpu_ns 460000000\n"
                              "frame %s\nframe main /w/pg.c\nthread 0 main\nstack 0 1\n"
                              "sample 1000000 0 0 0 216\n",
                              leaf),
                     0);
    return report_taking(profile, 300);
}

START_TEST(an_attach_without_kernel_frames_says_their_samples_are_missing)
{
    char *text = attach_report("parse /w/pg.c");
    ck_assert_ptr_nonnull(line_with(text, "warning: achieved 527 samples/s of 1000 requested"));
    line_has(text, "CPU times undercount",
             "CPU times undercount (410ms measured): the kernel gives an attach without its frames "
             "(not root, kernel.perf_event_paranoid >= 2) no sample inside a system call; shares "
             "are of the time outside the kernel, as root they include it");
    free(text);
    text = attach_report("do_sys_poll - [kernel.kallsyms]");
    line_has(text, "CPU times undercount", "CPU times undercount (410ms measured); shares hold");
    free(text);
}
END_TEST

/* The same attach records no waits: its thread is not said to have waited 0.0% of the time
 * (an nginx worker attached by its own user read "running 100.0%  waiting 0.0%", where root's
 * attach of it waited 53.8%); an attach with the kernel's frames has its thread line as before. */
START_TEST(an_attach_without_kernel_records_says_its_waits_are_not_recorded)
{
    char *text = attach_report("parse /w/pg.c");
    line_has(text, "thread 0 (main)", "  thread 0 (main)  on-CPU samples only  (216 samples)");
    line_has(text, "waits:",
             "  waits: not recorded without the kernel's records (not root, perf_event_paranoid "
             ">= 2)");
    free(text);
    text = attach_report("do_sys_poll - [kernel.kallsyms]");
    ck_assert_ptr_nonnull(line_with(text, "running 100.0%"));
    ck_assert_ptr_null(line_with(text, "waits: not recorded"));
    free(text);
}
END_TEST

/* A server whose five children each left its session (postgres calls setsid in every one):
 * three named, the other two counted, not left unsaid. */
START_TEST(every_process_that_left_the_session_is_told)
{
    char profile[2048] = "rate 1000\nframe main /w/pg.c\n";
    for (int p = 1; p <= 6; p++) {
        size_t used = strlen(profile);
        snprintf(profile + used, sizeof profile - used,
                 "process %d /w/pg\n%sthread 0 main\nstack 0\nsample 1000000 0 0 0 %d\n", 100 + p,
                 p > 1 ? "left_session\n" : "", 10 * p);
    }
    char *text = report_of(profile, 200);
    ck_assert_ptr_nonnull(line_with(text, "process 102 (pg) left the session (a daemon)"));
    ck_assert_ptr_nonnull(line_with(text, "process 104 (pg) left the session (a daemon)"));
    ck_assert_ptr_null(line_with(text, "process 105 (pg) left the session"));
    ck_assert_ptr_nonnull(line_with(text, "… and 2 more processes left the session, likewise"));
    free(text);
}
END_TEST

/* A sandbox's launcher (deny: a seccomp filter, then exec bc): its image's sampling stopped at
 * the filter, and its pid's next image, bc, was profiled from its start. The launcher's image is
 * named by its own executable, not by the name its collector read after the exec. */
START_TEST(an_image_that_execs_after_its_sandbox_is_named_and_told)
{
    char *text = report_of("rate 1000\nframe main /w/bc.c\n"
                           "process 31 /w/deny\ncomm bc\nstart_ns 1000\nsandboxed 40000000\n"
                           "execd\nthread 0 main\nstack 0\nsample 1000000 0 0 0 2\n"
                           "process 31 /w/bc\ncomm bc\nstart_ns 2000\nthread 0 main\nstack 0\n"
                           "sample 2000000 0 0 0 500\n",
                           200);
    line_has(text,
             "process 31 (deny): sampling stopped at 0.04 s: the program entered a seccomp "
             "sandbox",
             "the program it exec'd next was profiled anew");
    ck_assert_ptr_null(line_with(text, "process 31 (bc): sampling stopped"));
    free(text);
}
END_TEST

/* A program whose stacks are cut (crunch alone, not under main) in 40 of its 240 on-CPU
 * periods, 30 of them in the first 50 ms; the unwind tables' readiness as the raw file said. */
static char *cut_stacks_report(const char *ready_line)
{
    char text[1024];
    snprintf(text, sizeof text,
             "rate 1000\nstart 0\nend 1000000000\n"
             "frame main /w/w.c /w/demo\nframe crunch /w/w.c /w/demo\n"
             "process 42 /w/demo\n%s"
             "thread 0 main\nstack 1@10 0@3\nstack 1@10\n"
             "sample 60000000 0 0 0 200\n"
             "sample 10000000 0 1 0 30\n"
             "sample 70000000 0 1 0 10\n",
             ready_line);
    return report_of(text, 200);
}

START_TEST(cut_stacks_say_how_many_came_before_the_unwind_tables)
{
    char *text = cut_stacks_report("unwind_ready_ns 50000000\n");
    line_has(text, "stacks: 16.7% of on-CPU samples end before main",
             "they end in demo 16.7%; 12.5% came in the first 50ms, before the unwind tables were "
             "ready");
    free(text);
    /* Never ready: every cut stack came before them, and no window is named. */
    text = cut_stacks_report("unwind_ready_ns 0\n");
    LACKS(text, "; 16.7% came, before");
    HAS(text, "; 16.7% came before the unwind tables were ready");
    free(text);
    /* Not recorded (an older raw file): nothing said of them. */
    text = cut_stacks_report("");
    HAS(text, "stacks: 16.7%");
    LACKS(text, "unwind tables");
    free(text);
}
END_TEST

/* Every object holding 1% or more of the cut samples is named, heaviest first, however many
 * there are, and at a terminal the note wraps instead of cutting them; in a run of several
 * processes, the commands whose stacks are cut, with how many of their processes. */
START_TEST(cut_stacks_name_every_object_and_process)
{
    struct built built;
    fixture_model(&built.fixture,
                  "rate 1000\nstart 0\nend 1000000000\n"
                  "frame main /w/w.c /w/make\nframe a - /usr/lib/libaaaa.so\n"
                  "frame b - /usr/lib/libbbbb.so\nframe c - /usr/lib/libcccc.so\n"
                  "frame d - /usr/lib/libdddd.so\nframe e - /usr/lib/libeeee.so\n"
                  "frame f - /usr/lib/libffff.so\nframe g - /usr/lib/libgggg.so\n"
                  "process 40 /usr/bin/make\nthread 0 main\n"
                  "stack 0\nsample 1000 0 0 0 500\n"
                  "process 41 /usr/lib/gcc/cc1\nthread 1 main\n"
                  "stack 1\nstack 2\nstack 3\nstack 4\nstack 5\nstack 6\n"
                  "sample 1000 1 1 0 60\nsample 1000 1 2 0 50\nsample 1000 1 3 0 40\n"
                  "sample 1000 1 4 0 30\nsample 1000 1 5 0 20\n"
                  "process 42 /usr/lib/gcc/cc1\nthread 2 main\nstack 0\n"
                  "sample 1000 2 7 0 300\n"
                  "process 43 /usr/bin/as\nthread 3 main\nstack 7\n"
                  "sample 1000 3 8 0 1\n",
                  &built.model);
    char *text = render(&built.model, 0, 200);
    HAS(text, "stacks: 20.1% of on-CPU samples end before main",
        "they end in libaaaa.so 6.0%, libbbbb.so 5.0%, libcccc.so 4.0%, libdddd.so 3.0%, "
        "libeeee.so 2.0%, elsewhere 0.1%",
        "in processes cc1 20.0% (1 of 2), elsewhere 0.1%");
    free(text);
    /* At a terminal 60 columns wide: every object still there, on lines of their own. */
    text = render(&built.model, 0, 60);
    for (const char *o = "abcde"; *o; o++) {
        char name[32];
        snprintf(name, sizeof name, "lib%c%c%c%c.so", *o, *o, *o, *o);
        HAS(text, name);
    }
    /* The note's lines, from "stacks:" to the next line not indented, each within 60. */
    const char *line = strstr(text, "stacks:");
    ck_assert_msg(line != NULL, "%s", text);
    while (line > text && line[-1] != '\n')
        line--;
    int lines = 0;
    do {
        ck_assert_msg(strcspn(line, "\n") <= 60, "%s", text);
        lines++;
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    } while (line != NULL && line[0] == ' ' && line[1] == ' ');
    ck_assert_msg(lines >= 3, "%s", text);
    free(text);
    release(&built);
}
END_TEST

/* osprey diff's table of two fixture runs. */
static char *diff_text(const char *base_text, const char *new_text, struct ospx__diff_row **rows,
                       long *count)
{
    struct built base, new_run;
    fixture_model(&base.fixture, base_text, &base.model);
    fixture_model(&new_run.fixture, new_text, &new_run.model);
    *count = ospx__diff_rows(&base.model, &new_run.model, rows);
    ck_assert_int_ge(*count, 0);
    FILE *out = tmpfile();
    ospx__diff_print(out, &base.model, &new_run.model, *rows, (size_t)*count, 10);
    long size = ftell(out);
    char *text = calloc((size_t)size + 1, 1);
    rewind(out);
    ck_assert_uint_eq(fread(text, 1, (size_t)size, out), (size_t)size);
    fclose(out);
    /* the rows point into the models' names: keep the names, drop the rest */
    for (long i = 0; i < *count; i++) {
        (*rows)[i].name = strdup((*rows)[i].name);
        (*rows)[i].file = strdup((*rows)[i].file);
    }
    release(&base);
    release(&new_run);
    return text;
}

static void free_rows(struct ospx__diff_row *rows, long count)
{
    for (long i = 0; i < count; i++) {
        free((void *)rows[i].name);
        free((void *)rows[i].file);
    }
    free(rows);
}

static const struct ospx__diff_row *row_named(const struct ospx__diff_row *rows, long count,
                                              const char *name)
{
    for (long i = 0; i < count; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    return NULL;
}

/* A 3:1 split between part_a and part_b, both calling spin, becoming 1:3: spin's self share
 * is unchanged, and the diff shows part_a and part_b by their total, first, with the time. */
START_TEST(diff_shows_total_and_self_with_times)
{
    static const char run[] = "rate 1000\nstart 0\nend 1000000000\n"
                              "frame spin /w/split.c /w/split\nframe part_a /w/split.c /w/split\n"
                              "frame part_b /w/split.c /w/split\nframe main /w/split.c /w/split\n"
                              "process 42 /w/split\nthread 0 main\n"
                              "stack 0@3 1@4 3@8\nstack 0@3 2@5 3@8\n"
                              "sample 1000 0 0 0 %d\nsample 2000 0 1 0 %d\n";
    char base_text[1024], new_text[1024];
    snprintf(base_text, sizeof base_text, run, 750, 250);
    snprintf(new_text, sizeof new_text, run, 250, 750);
    struct ospx__diff_row *rows;
    long count;
    char *text = diff_text(base_text, new_text, &rows, &count);
    if (getenv("OSPX_SHOW") != NULL)
        fputs(text, stderr);
    const struct ospx__diff_row *a = row_named(rows, count, "part_a");
    const struct ospx__diff_row *b = row_named(rows, count, "part_b");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(a->total[0], 750);
    ck_assert_uint_eq(a->total[1], 250);
    ck_assert_double_eq_tol(b->total_share[1] - b->total_share[0], 50.0, 1e-9);
    /* the moved ones first */
    ck_assert_msg(strcmp(rows[0].name, "part_a") == 0 || strcmp(rows[0].name, "part_b") == 0, "%s",
                  text);
    HAS(text, "  75.0%  750ms    25.0%  250ms   -50.0  part_a (split.c)",
        "100.0%  1.00s   100.0%  1.00s    +0.0  spin (split.c)");
    free(text);
    free_rows(rows, count);
}
END_TEST

/* A function whose file was renamed (its program's too: a C file's scratch build is named
 * after it) is one row; two static functions of one name are told apart by their files, and
 * when one of them is renamed the one left on each side is matched. */
START_TEST(diff_matches_a_function_across_a_renamed_file)
{
    static const char run[] = "rate 1000\nstart 0\nend 1000000000\n"
                              "frame cmp /w/%s.c /w/%s\nframe main /w/main.c /w/%s\n"
                              "process 42 /w/%s\nthread 0 main\nstack 0@3 1@8\nstack 1@9\n"
                              "sample 1000 0 0 0 %d\nsample 2000 0 1 0 100\n";
    char base_text[1024], new_text[1024];
    snprintf(base_text, sizeof base_text, run, "sort", "sort", "sort", "sort", 300);
    snprintf(new_text, sizeof new_text, run, "order", "order", "order", "order", 200);
    struct ospx__diff_row *rows;
    long count;
    char *text = diff_text(base_text, new_text, &rows, &count);
    long cmp_rows = 0;
    for (long i = 0; i < count; i++)
        cmp_rows += strcmp(rows[i].name, "cmp") == 0;
    ck_assert_msg(cmp_rows == 1, "%s", text);
    const struct ospx__diff_row *cmp = row_named(rows, count, "cmp");
    ck_assert_uint_eq(cmp->self[0], 300);
    ck_assert_uint_eq(cmp->self[1], 200);
    ck_assert_str_eq(cmp->file, "order.c");
    free(text);
    free_rows(rows, count);

    static const char statics[] =
        "rate 1000\nstart 0\nend 1000000000\n"
        "frame helper /w/a.c /w/demo\nframe helper /w/%s.c /w/demo\nframe main /w/main.c /w/demo\n"
        "process 42 /w/demo\nthread 0 main\nstack 0@3 2@8\nstack 1@4 2@9\n"
        "sample 1000 0 0 0 %d\nsample 2000 0 1 0 100\n";
    snprintf(base_text, sizeof base_text, statics, "b", 300);
    snprintf(new_text, sizeof new_text, statics, "b", 100);
    text = diff_text(base_text, new_text, &rows, &count);
    ck_assert_msg(count == 3, "%s", text);
    for (long i = 0; i < count; i++)
        if (strcmp(rows[i].file, "a.c") == 0)
            ck_assert_uint_eq(rows[i].self[0], 300);
    free(text);
    free_rows(rows, count);
    snprintf(new_text, sizeof new_text, statics, "c", 100); /* b.c renamed c.c */
    text = diff_text(base_text, new_text, &rows, &count);
    ck_assert_msg(count == 3, "%s", text);
    for (long i = 0; i < count; i++)
        if (strcmp(rows[i].file, "c.c") == 0)
            ck_assert_msg(rows[i].self[0] == 100 && rows[i].self[1] == 100, "%s", text);
    free(text);
    free_rows(rows, count);
}
END_TEST

/* Output that is no terminal (width 0) keeps the notes whole: the stacks: line's images and
 * its startup share are not cut at 100 columns; a terminal's 100 columns are still kept. */
START_TEST(notes_are_whole_when_the_output_is_no_terminal)
{
    struct built built;
    fixture_model(
        &built.fixture,
        "rate 1000\nstart 0\nend 1000000000\n"
        "frame main /w/w.c /w/demo\nframe crunch /w/w.c /w/demo\n"
        "frame a_fairly_long_leaf_name - /usr/lib/x86_64-linux-gnu/libsomething-long.so.1\n"
        "frame another_leaf - /usr/lib/x86_64-linux-gnu/libanother-long-name.so.7\n"
        "frame third_leaf - /usr/lib/x86_64-linux-gnu/libthird-library-name.so.2\n"
        "process 42 /w/demo\nunwind_ready_ns 50000000\n"
        "thread 0 main\nstack 1@10 0@3\nstack 2\nstack 3\nstack 4\n"
        "sample 60000000 0 0 0 200\nsample 10000000 0 1 0 30\n"
        "sample 10000000 0 2 0 20\nsample 70000000 0 3 0 10\n",
        &built.model);
    static const char whole[] =
        "they end in libsomething-long.so.1 11.5%, libanother-long-name.so.7 "
        "7.7%, libthird-library-name.so.2 3.8%; 19.2% came in the first "
        "50ms, before the unwind tables were ready";
    char *text = render(&built.model, 0, 0);
    HAS(text, whole);
    LACKS(text, "…");
    free(text);
    text = render(&built.model, 0, 100);
    LACKS(text, whole);
    ck_assert_msg(widest_line(text) <= 100, "%s", text);
    free(text);
    release(&built);
}
END_TEST

/* A stripped executable's stacks (Debian's xz): main and _start have no names, the C
 * library's start of main does; they are whole, and no stacks: line is said. */
START_TEST(a_stripped_programs_stacks_are_whole)
{
    EXPECT_REPORT(200,
                  "rate 1000\nstart 0\nend 1000000000\n"
                  "frame xz+0x3ae1 - /usr/bin/xz\nframe __libc_start_main - /lib/libc.so.6\n"
                  "frame __libc_start_call_main - /lib/libc.so.6\nframe xz+0x37e7 - /usr/bin/xz\n"
                  "frame lzma_code - /lib/liblzma.so.5\n"
                  "process 42 /usr/bin/xz\nthread 0 main\n"
                  "stack 4 3 2 1 0\nstack 4\n"
                  "sample 1000 0 0 0 990\nsample 2000 0 1 0 10\n",
                  "stacks: 1.0% of on-CPU samples end before main",
                  "they end in liblzma.so.5 1.0%");
}
END_TEST

/* A raw file that says why each stack's walk ended is asked instead of the names: a stack
 * through main that was guessed (the frame pointer followed while rows were being built) is
 * cut; one that reached its outermost frame without a root's name (a Go program's
 * runtime.goexit) is whole; one that says nothing falls back to the names. A walk that found
 * no row or frame record past its last frame is whole when that frame is a root by name (a
 * goroutine's runtime.goexit, walked from a stack copy) and cut anywhere else. */
START_TEST(cut_stacks_are_told_by_how_their_walks_ended)
{
    /* The note says how the walks that said so ended (the one that said nothing is in neither). */
    EXPECT_REPORT(
        200,
        "rate 1000\nstart 0\nend 1000000000\n"
        "frame main /w/w.c /w/demo\nframe crunch /w/w.c /w/demo\n"
        "frame runtime.goexit - /w/demo\nframe hot /w/w.c /w/demo\n"
        "process 42 /w/demo\nthread 0 main\n"
        "stack 1 0\nstack_end 5\n"
        "stack 1 2\nstack_end 1\n"
        "stack 1\n"
        "stack 3 2\nstack_end 2\n"
        "stack 3\nstack_end 2\n"
        "sample 1000 0 0 0 30\nsample 2000 0 1 0 60\nsample 3000 0 2 0 10\n"
        "sample 4000 0 3 0 80\nsample 5000 0 4 0 20\n",
        "stacks: 30.0% of on-CPU samples end before main",
        "walks ended at no unwind row and no frame pointer 10.0%, frame pointers guessed before "
        "the rows were ready 15.0%");
}
END_TEST

/* Go's roots (a goroutine's runtime.goexit, a runtime thread's runtime.mstart, with Go's
 * ".abi0" suffix or without), Rust's (std::rt::lang_start's closure) and a makecontext
 * coroutine's (__start_context) are roots: only the stack that reaches none is cut. */
START_TEST(go_rust_and_coroutine_roots_are_roots)
{
    EXPECT_REPORT(200,
                  "rate 1000\nstart 0\nend 1000000000\n"
                  "frame runtime.goexit.abi0 - /w/goprog\nframe main.run /w/main.go\n"
                  "frame main.spin /w/main.go\nframe runtime.mstart - /w/goprog\n"
                  "frame runtime.sysmon - /w/goprog\n"
                  "frame std::rt::lang_start::{{closure}} - /w/rustprog\n"
                  "frame rust_hot - /w/rustprog\nframe __start_context - /lib/libc.so.6\n"
                  "frame coro_heavy /w/coro.c\n"
                  "process 42 /w/goprog\nthread 0 main\n"
                  "stack 2 1 0\nstack 4 3\nstack 6 5\nstack 8 7\nstack 2 1\n"
                  "sample 1000 0 0 0 400\nsample 2000 0 1 0 300\nsample 3000 0 2 0 200\n"
                  "sample 4000 0 3 0 90\nsample 5000 0 4 0 10\n",
                  "stacks: 1.0% of on-CPU samples end before main");
}
END_TEST

/* A run of three processes: a shell (pid 100) that waits, and two workers (101, 102) of one
 * program, `crunch` hot in 101 and `hash` in 102, both with `main` under them; the shell
 * started one more that ran unprofiled, and 102 four more. */
static const char three_processes[] = "rate 1000\nstart 0\nend 1000000000\n"
                                      "frame main /w/w.c\nframe crunch /w/w.c\nframe hash /w/w.c\n"
                                      "frame wait4 -\n"
                                      "process 100 /bin/sh\nthread 0 main 0 100\n"
                                      "stack 3 0@2\n"
                                      "escaped 200 /usr/bin/env environment\\scleared\n"
                                      "process 101 /w/worker\nthread 0 main -1 101\n"
                                      "stack 1@10 0@3\n"
                                      "process 102 /w/worker\nthread 0 main -1 102\n"
                                      "stack 2@20 0@3\n"
                                      "stack 1@10 0@3\n"
                                      "escaped 201 /bin/a -\nescaped 202 /bin/b -\n"
                                      "escaped 203 /bin/c -\nescaped 204 /bin/d -\n"
                                      "sample 1000 0 0 1 900\n"
                                      "sample 1000 1 1 0 300\n"
                                      "sample 1500 1 1 0 300\n"
                                      "sample 1000 2 2 0 300\n"
                                      "sample 2000 2 3 0 100\n";

START_TEST(several_processes_get_a_process_column_and_lines)
{
    struct fixture fixture;
    struct ospx_model model;
    fixture_model(&fixture, three_processes, &model);
    ck_assert_uint_eq(model.process_count, 3);
    ck_assert_uint_eq(model.processes_sampled, 3);
    ck_assert_uint_eq(model.processes[1].on_cpu, 600);
    ck_assert_uint_eq(model.processes[2].on_cpu, 400);
    char *text = render(&model, 0, 120);
    if (getenv("OSPX_SHOW") != NULL)
        fputs(text, stderr);
    ck_assert_msg(strstr(text, "osprey: 3 processes, ") == text, "header: %s", text);
    LACKS(text, "1000 samples (1000 on-CPU)");
    /* the column, and one row per (process, function): crunch in 101, then hash in 102, then
     * crunch in 102 */
    HAS(text, "1900 samples (1000 on-CPU)", "  process 100 (sh) ", "  process 101 (worker) ",
        "  101 thread 0 (main)", "PROCESS");
    const char *first = strstr(text, "101 worker  crunch");
    const char *second = strstr(text, "102 worker  hash");
    const char *third = strstr(text, "102 worker  crunch");
    ck_assert_msg(first != NULL && second != NULL && third != NULL, "%s", text);
    ck_assert_msg(first < second && second < third, "rows out of order: %s", text);
    /* the processes that ran unprofiled: three named, the rest counted */
    HAS(text, " 60.0%  60.0%  600ms  600ms  101 worker  crunch",
        "process 200 (/usr/bin/env) ran unprofiled: environment cleared\n",
        "process 201 (/bin/a) ran unprofiled\n", "process 202 (/bin/b) ran unprofiled\n",
        "… and 2 more processes ran unprofiled\n");
    LACKS(text, "process 203");
    free(text);
    ospx_model_free(&model);
    fixture_free(&fixture);
}
END_TEST

START_TEST(one_process_kept_by_pid_looks_like_a_profile_of_one)
{
    struct fixture fixture;
    fixture_parse(&fixture, three_processes);
    struct ospx_error err = {0};
    struct ospx_filter filter = {.pid = "102"};
    ck_assert_int_eq(ospx_filter_samples(&fixture.raw, &fixture.symbols, &filter, &err), 0);
    struct ospx_model model;
    ck_assert_int_eq(ospx_model_build(&fixture.raw, &fixture.symbols, &model, &err), 0);
    ck_assert_uint_eq(model.processes_sampled, 1);
    ck_assert_uint_eq(model.on_cpu_samples, 400);
    char *text = render(&model, 0, 120);
    ck_assert_msg(strstr(text, "osprey: 1.00s wall, 400ms CPU, 400 samples (400 on-CPU)") == text,
                  "%s", text);
    LACKS(text, "PROCESS");
    HAS(text, "  thread 0 (main) ", "1 thread\n" /* not other processes' */,
        " 75.0%  75.0%  300ms  300ms  hash");
    free(text);
    ospx_model_free(&model);
    /* a pid or command the run does not have names the ones it has */
    ck_assert_int_eq(ospx_filter_samples(&fixture.raw, &fixture.symbols,
                                         &(struct ospx_filter){.comm = "nginx"}, &err),
                     -EINVAL);
    ck_assert_msg(strstr(err.text, "--comm nginx: no such process (the profile has: 100 (sh), "
                                   "101 (worker), 102 (worker))") != NULL,
                  "%s", err.text);
    fixture_free(&fixture);
}
END_TEST

START_TEST(per_process_sections_follow_the_run)
{
    struct fixture fixture;
    struct ospx_model model;
    fixture_model(&fixture, three_processes, &model);
    static const char *const paths[] = {"/tmp/out/w.raw.json"};
    struct ospx_report_options options = {.width = 120,
                                          .per_process = 1,
                                          .written_paths = paths,
                                          .written_count = 1,
                                          .more_raw_count = 2,
                                          .more_raw_pattern = "/tmp/out/w.raw.<pid>….json"};
    char *text = render_with(&model, &options);
    const char *run = strstr(text, "osprey: 3 processes");
    const char *sh = strstr(text, "\nprocess 100 (sh): ");
    const char *one = strstr(text, "\nprocess 101 (worker): ");
    const char *two = strstr(text, "\nprocess 102 (worker): ");
    const char *written = strstr(text, "written:\n  /tmp/out/w.raw.json\n  2 more raw files: "
                                       "/tmp/out/w.raw.<pid>….json\n");
    ck_assert_msg(run == text && sh != NULL && one != NULL && two != NULL && written != NULL, "%s",
                  text);
    ck_assert_msg(sh < one && one < two && two < written, "%s", text);
    /* a section is its process alone: its own samples, no PROCESS column, its escapes */
    HAS(two, "400 samples (400 on-CPU)", "… and 1 more processes ran unprofiled");
    LACKS(sh, "PROCESS");
    ck_assert_msg(strstr(sh, "no on-CPU samples") != NULL && strstr(sh, "no on-CPU") < one, "%s",
                  sh);
    free(text);
    ospx_model_free(&model);
    fixture_free(&fixture);
}
END_TEST

/* --inverted: whole caller chains as a tree under each row. hot's 100 periods: 50 through
 * mid ← a ← main, 30 through mid ← b ← main, 10 through mid ← main, and 4, 3, 2, 1 straight
 * from c, d, e, f (each called by main). */
START_TEST(inverted_shows_whole_caller_chains_as_a_tree)
{
    static const char text[] = "rate 1000\nstart 0\nend 1000000000\nthread 0 main\n"
                               "frame main /w/w.c\nframe a /w/w.c\nframe b /w/w.c\n"
                               "frame mid /w/w.c\nframe hot /w/w.c\nframe c /w/w.c\n"
                               "frame d /w/w.c\nframe e /w/w.c\nframe f /w/w.c\n"
                               "stack 4@50 3@40 1@10 0@3\n"
                               "stack 4@50 3@40 2@20 0@3\n"
                               "stack 4@50 3@40 0@3\n"
                               "stack 4@50 5@60 0@3\nstack 4@50 6@70 0@3\n"
                               "stack 4@50 7@80 0@3\nstack 4@50 8@90 0@3\n"
                               "sample 1000 0 0 0 50\nsample 2000 0 1 0 30\n"
                               "sample 3000 0 2 0 10\nsample 4000 0 3 0 4\n"
                               "sample 5000 0 4 0 3\nsample 6000 0 5 0 2\n"
                               "sample 7000 0 6 0 1\n";
    struct fixture fixture;
    struct ospx_model model;
    fixture_model(&fixture, text, &model);
    struct ospx_report_options options = {.width = 120, .inverted = 1, .top = 1};
    char *out = render_with(&model, &options);
    if (getenv("OSPX_SHOW") != NULL)
        fputs(out, stderr);
    const char *row = strstr(out, "  hot  ");
    ck_assert_msg(row != NULL, "%s", out);
    const char *mid = strstr(row, "\n         ←  90.0%  mid  w.c:40\n");
    const char *a = strstr(row, "\n            ←  50.0%  a  w.c:10  ← main\n");
    const char *b = strstr(row, "\n            ←  30.0%  b  w.c:20  ← main\n");
    const char *direct = strstr(row, "\n            ←  10.0%  main  w.c:3\n");
    ck_assert_msg(mid != NULL && a != NULL && b != NULL && direct != NULL, "%s", out);
    ck_assert_msg(mid < a && a < b && b < direct, "%s", out);
    /* every share is of the row's self time; past three callers the rest summed */
    const char *c = strstr(row, "\n         ←   4.0%  c  w.c:60  ← main\n");
    const char *d = strstr(row, "\n         ←   3.0%  d  w.c:70  ← main\n");
    const char *more = strstr(row, "\n         ←   3.0%  … 2 more callers\n");
    ck_assert_msg(c != NULL && d != NULL && more != NULL && direct < c && c < d && d < more, "%s",
                  out);
    free(out);
    ospx_model_free(&model);
    fixture_free(&fixture);
}
END_TEST

/* --merge-processes: the two workers are one command, one row per function (crunch 600 +
 * 100), named without pids in the report and in the outputs. */
START_TEST(merged_processes_are_one_row_per_command)
{
    struct fixture fixture;
    fixture_parse(&fixture, three_processes);
    ospx_run_merge_processes(&fixture.raw);
    struct ospx_model model;
    struct ospx_error err = {0};
    ck_assert_int_eq(ospx_model_build(&fixture.raw, &fixture.symbols, &model, &err), 0);
    char *text = render(&model, 0, 120);
    if (getenv("OSPX_SHOW") != NULL)
        fputs(text, stderr);
    ck_assert_msg(strstr(text, "osprey: 3 processes of 2 commands, ") == text, "%s", text);
    HAS(text, "  worker (2 processes) ", "  sh (1 process) ",
        " 70.0%  70.0%  700ms  700ms  worker   crunch",
        " 30.0%  30.0%  300ms  300ms  worker   hash");
    ck_assert_uint_eq(count_lines_with(text, "crunch"), 1);
    LACKS(text, "102" /* a merged pid */);
    free(text);

    /* folded: the command, then the stack (its processes' threads merged); profile.json: one
     * entry per command */
    char folded[] = "/tmp/ospx-merged-XXXXXX";
    int fd = mkstemp(folded);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(ospx_write_folded(&model, folded, &err), 0);
    char *lines = scratch_read(folded, NULL);
    ck_assert_str_eq(lines, "worker;main;crunch 700\nworker;main;hash 300\n");
    free(lines);
    ck_assert_int_eq(ospx_write_profile_json(&model, folded, &err), 0);
    lines = scratch_read(folded, NULL);
    unlink(folded);
    HAS(lines, "\"processes\": 2,\n      \"exe\": \"/w/worker\"");
    ck_assert_msg(strstr(lines, "\"pid\": 10") == strstr(lines, "\"pid\": 100,"), "%s", lines);
    free(lines);
    ospx_model_free(&model);
    fixture_free(&fixture);
}
END_TEST

/* Most of the CPU time in code nothing named: in a stripped object the line asks for its
 * -dbgsym package or a debuginfod server; in no object (a JIT's) for the runtime's map for perf,
 * which a debuginfod server set does not replace. */
static const char names_profile[] =
    "rate 1000\nstart 0\nend 1000000000\n"
    "frame main /w/w.c /w/demo\nframe 0x7f0000001234 - -\nframe demo+0x10 - /w/demo\n"
    "process 42 /w/demo\nthread 0 main\n"
    "stack 1 0\nstack 2 0\nstack 0\n"
    "sample 1000 0 0 0 %d\nsample 2000 0 1 0 %d\nsample 3000 0 2 0 10\n";

/* The report of names_profile with `jit` samples in no object, `stripped` in demo+0x10. */
static char *names_report(int jit, int stripped)
{
    char profile[sizeof names_profile + 16];
    snprintf(profile, sizeof profile, names_profile, jit, stripped);
    return report_of(profile, 200);
}

START_TEST(unnamed_code_in_no_object_asks_for_the_runtimes_map)
{
    unsetenv("DEBUGINFOD_URLS");
    char *text = names_report(85, 5);
    HAS(text, "names: 90% of CPU time without symbols (no object: a JIT's, demo)",
        "java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit", "erl +JPperf map");
    LACKS(text, "dbgsym");
    free(text);
    /* Both kinds, each a tenth or more of the unnamed time: both ways are said. */
    text = names_report(40, 45);
    HAS(text, "names: 89% of CPU time without symbols (demo, no object: a JIT's)",
        "install -dbgsym packages or set DEBUGINFOD_URLS; a JIT's code is named by the map");
    free(text);
    /* A stripped object's code: the same line as before. */
    text = names_report(5, 85);
    HAS(text, "names: 90% of CPU time without symbols (demo, no object: a JIT's)",
        "install -dbgsym packages or set DEBUGINFOD_URLS");
    LACKS(text, "DumpPerfMapAtExit");
    free(text);
    /* A debuginfod server set names the objects' code, not the JIT's. */
    setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
    text = names_report(85, 5);
    HAS(text, "names: 85% of CPU time without symbols (no object: a JIT's)", "DumpPerfMapAtExit");
    free(text);
    text = names_report(5, 85);
    LACKS(text, "names:");
    free(text);
    unsetenv("DEBUGINFOD_URLS");
}
END_TEST

/* Stacks cut in a JIT's code (in no object, or named by its map: "[jit]") say how the walk
 * gets through it; cut elsewhere, or a frame-pointer guess's word, they do not. */
START_TEST(stacks_cut_in_a_jits_code_say_how_to_walk_it)
{
    static const char profile[] =
        "rate 1000\nstart 0\nend 1000000000\n"
        "frame main /w/w.c /w/demo\nframe 0x7f0000001234 - -\nframe hot - [jit]\n"
        "frame work /w/w.c /w/demo\n"
        "process 42 /w/demo\nthread 0 main\n"
        "stack 3 0\nstack_end 1\nstack 3 1\nstack_end %d\nstack 3 2\nstack_end 2\nstack 3\n"
        "stack_end 2\n"
        "sample 1000 0 0 0 80\nsample 2000 0 1 0 %d\nsample 3000 0 2 0 %d\n"
        "sample 4000 0 3 0 %d\n";
    char text[sizeof profile + 32];
    snprintf(text, sizeof text, profile, 2, 10, 5, 5);
    char *report = report_of(text, 200);
    HAS(report, "they end in code in no object (a JIT's) 10.0%, [jit] 5.0%, demo 5.0%",
        "a JIT's frames are walked through where it keeps frame pointers (java "
        "-XX:+PreserveFramePointer)");
    free(report);
    /* Cut in the program's own code, and a guess that reached a word in no object: no hint. */
    snprintf(text, sizeof text, profile, 5, 10, 0, 10);
    report = report_of(text, 200);
    HAS(report, "they end in an address a guess reached");
    LACKS(report, "PreserveFramePointer");
    free(report);
}
END_TEST

/* The marker of frames a deep walk left out is one frame in no object: its caller line under
 * --inverted shows no location for it (it showed "?", as for code in no object, which stays). */
START_TEST(the_marker_of_left_out_frames_has_no_location)
{
    static const char text[] =
        "rate 1000\nstart 0\nend 1000000000\nthread 0 main\n"
        "frame hot /w/d.c\nframe [\u2026\\s150\\sframes]\nframe main /w/d.c\n"
        "frame 0x7f0000001000\n"
        "stack 0@5 1@0 2@9\nstack 0@5 3@0\n"
        "sample 1000 0 0 0 60\nsample 2000 0 1 0 40\n";
    struct fixture fixture;
    struct ospx_model model;
    fixture_model(&fixture, text, &model);
    fixture.symbols.frames[1].address = osp_unwind_left_out_pc(150);
    struct ospx_report_options options = {.width = 120, .inverted = 1, .top = 1};
    char *out = render_with(&model, &options);
    ck_assert_msg(strstr(out, "\n         ←  60.0%  [\u2026 150 frames]  ← main\n") != NULL, "%s",
                  out);
    ck_assert_msg(strstr(out, "\n         ←  40.0%  0x7f0000001000  ?\n") != NULL, "%s", out);
    free(out);
    ospx_model_free(&model);
    fixture_free(&fixture);
}
END_TEST

Suite *report_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = SUITE_CASE(
        s, "report", 0, short_names_are_not_cut,
        location_is_relative_to_the_working_directory_or_a_base_name,
        header_says_the_collectors_cpu_over_one_percent_of_a_core,
        the_waits_line_says_what_refused_the_kernels_records, header_names_the_columns_and_the_run,
        bars_are_eighth_blocks_proportional_to_self, colour_only_when_asked,
        low_confidence_below_one_hundred_samples, dropped_line_only_when_samples_were_dropped,
        dropped_line_names_the_reasons, achieved_rate_against_the_measured_cpu_time,
        achieved_rate_of_a_view_is_the_whole_runs, notes_are_whole_when_the_output_is_no_terminal,
        diff_shows_total_and_self_with_times, diff_matches_a_function_across_a_renamed_file,
        escape_sequences_in_names_are_not_printed, table_stops_at_ten_functions,
        written_paths_come_last, header_and_low_confidence_count_the_same_samples,
        threads_and_runtime_fibers_are_named_apart,
        sampling_line_without_samples_and_after_a_signal, missing_and_replaced_outputs_are_said,
        only_waiting_samples_says_so, unsampled_cpu_is_not_waiting,
        listing_says_how_much_time_had_no_line, a_view_says_nothing_was_written,
        several_processes_get_a_process_column_and_lines,
        one_process_kept_by_pid_looks_like_a_profile_of_one, per_process_sections_follow_the_run,
        merged_processes_are_one_row_per_command, inverted_shows_whole_caller_chains_as_a_tree,
        cut_stacks_say_how_many_came_before_the_unwind_tables, a_stripped_programs_stacks_are_whole,
        cut_stacks_name_every_object_and_process, cut_stacks_are_told_by_how_their_walks_ended,
        go_rust_and_coroutine_roots_are_roots,
        an_attach_without_kernel_frames_says_their_samples_are_missing,
        every_process_that_left_the_session_is_told,
        an_attach_without_kernel_records_says_its_waits_are_not_recorded,
        unnamed_code_in_no_object_asks_for_the_runtimes_map,
        stacks_cut_in_a_jits_code_say_how_to_walk_it,
        an_image_that_execs_after_its_sandbox_is_named_and_told,
        the_marker_of_left_out_frames_has_no_location, unnamed_threads_go_by_the_process_command,
        cpu_time_of_unsampled_threads_is_said_to_be_shown_where_they_ended,
        a_process_whose_cpu_time_was_not_read_is_left_out_of_the_rate, lost_switch_records_are_told,
        cpu_paid_late_is_told);
    tcase_add_loop_test(tc, no_line_is_wider_than_the_width, 0, 3);
    return s;
}
