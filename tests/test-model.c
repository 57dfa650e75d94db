/* test-model.c — the profile model: the state split per fiber, self/total per function (a
 * recursive function counts once per sample), samples/self per line, over on-CPU samples only,
 * and the orders the outputs rely on. Fixtures are built by hand (ospx-fixture.h). */
#include <check.h>
#include <string.h>

#include "ospx-fixture.h"
#include "ospx.h"
#include "suite.h"

static const struct ospx_function_stat *function_named(const struct ospx_model *model,
                                                       const char *name, const char *file)
{
    for (size_t i = 0; i < model->function_count; i++)
        if (strcmp(model->functions[i].name, name) == 0 &&
            strcmp(model->functions[i].file, file) == 0)
            return &model->functions[i];
    ck_abort_msg("no function %s (%s)", name, file);
    return NULL;
}

static const struct ospx_line_stat *line_at(const struct ospx_model *model, const char *file,
                                            int line)
{
    for (size_t i = 0; i < model->line_count; i++)
        if (strcmp(model->lines[i].file, file) == 0 && model->lines[i].line == line)
            return &model->lines[i];
    return NULL;
}

/* main → fib → fib → fib: fib recursive, three deep. */
/* MODEL_OF(text): `fixture` parsed from the text and its `model` built, for the test. */
#define MODEL_OF(text)                                                                             \
    struct fixture fixture;                                                                        \
    struct ospx_model model;                                                                       \
    fixture_model(&fixture, (text), &model)

/* MODEL_FREE(): what MODEL_OF made, freed. */
#define MODEL_FREE()                                                                               \
    ospx_model_free(&model);                                                                       \
    fixture_free(&fixture)

/* The model's samples: on-CPU, waiting and all. */
static void expect_samples(const struct ospx_model *model, uint64_t on_cpu, uint64_t waiting,
                           uint64_t total)
{
    ck_assert_uint_eq(model->on_cpu_samples, on_cpu);
    ck_assert_uint_eq(model->waiting_samples, waiting);
    ck_assert_uint_eq(model->total_samples, total);
}

static const char recursion[] = "rate 100\n"
                                "start 1000000000\n"
                                "end 3500000000\n"
                                "thread 0 main\n"
                                "frame main /w/a.c\n"
                                "frame fib /w/a.c\n"
                                "stack 1@12 1@14 1@14 0@61\n"
                                "stack 0@62\n"
                                "sample 10 0 0 0\n"
                                "sample 20 0 0 0\n"
                                "sample 30 0 0 0\n"
                                "sample 40 0 1 0\n"
                                "sample 50 0 1 1\n";

/* LOCATION is the hottest line: the most self time, else the most total; never merely the
 * lowest line sampled. */
static const char hot_lines[] = "rate 100\n"
                                "start 1000000000\n"
                                "end 3500000000\n"
                                "thread 0 main\n"
                                "frame outer /w/h.c\n"
                                "frame leaf /w/h.c\n"
                                "stack 1@5 0@30\n"
                                "stack 1@6 0@30\n"
                                "stack 1@6 0@31\n"
                                "stack 1@7 0@20\n"
                                "sample 10 0 0 0\n"
                                "sample 20 0 1 0\n"
                                "sample 30 0 2 0\n"
                                "sample 40 0 1 0\n"
                                "sample 50 0 3 1 40\n";

START_TEST(location_is_the_hottest_line)
{
    MODEL_OF(hot_lines);
    const struct ospx_function_stat *leaf = function_named(&model, "leaf", "/w/h.c");
    const struct ospx_function_stat *outer = function_named(&model, "outer", "/w/h.c");
    ck_assert_int_eq(leaf->line, 6);   /* 3 self samples; line 5 has 1, the waiting 7 none */
    ck_assert_int_eq(outer->line, 30); /* no self time: 3 samples pass line 30, 1 line 31 */
    MODEL_FREE();
}
END_TEST

START_TEST(recursive_function_counts_once_per_sample)
{
    MODEL_OF(recursion);
    const struct ospx_function_stat *fib = function_named(&model, "fib", "/w/a.c");
    const struct ospx_function_stat *main_fn = function_named(&model, "main", "/w/a.c");
    ck_assert_uint_eq(fib->self, 3);
    ck_assert_uint_eq(fib->total, 3); /* not 9: three frames, three samples */
    ck_assert_uint_eq(main_fn->self, 1);
    ck_assert_uint_eq(main_fn->total, 4); /* the waiting sample does not count */
    ck_assert_int_eq(fib->line, 12);      /* where its self time is */
    ck_assert_int_eq(main_fn->line, 62);  /* its self sample, not its call line's 3 */
    expect_samples(&model, 4, 1, 5);
    MODEL_FREE();
}
END_TEST

START_TEST(lines_count_once_per_sample_and_self_at_the_leaf)
{
    MODEL_OF(recursion);
    const struct ospx_line_stat *line12 = line_at(&model, "/w/a.c", 12);
    const struct ospx_line_stat *line14 = line_at(&model, "/w/a.c", 14);
    const struct ospx_line_stat *line62 = line_at(&model, "/w/a.c", 62);
    ck_assert_ptr_nonnull(line12);
    ck_assert_ptr_nonnull(line14);
    ck_assert_ptr_nonnull(line62);
    ck_assert_uint_eq(line12->samples, 3);
    ck_assert_uint_eq(line12->self, 3);
    ck_assert_uint_eq(line14->samples, 3); /* twice on the stack, three samples */
    ck_assert_uint_eq(line14->self, 0);
    ck_assert_uint_eq(line62->samples, 1); /* its waiting sample does not count */
    ck_assert_uint_eq(line62->self, 1);
    /* sorted by samples desc, then self desc */
    ck_assert_int_eq(model.lines[0].line, 12);
    ck_assert_int_eq(model.lines[model.line_count - 1].line, 62);
    MODEL_FREE();
}
END_TEST

START_TEST(wall_and_cpu_time)
{
    MODEL_OF(recursion);
    ck_assert_double_eq_tol(model.wall_seconds, 2.5, 1e-9);
    ck_assert_double_eq_tol(model.cpu_seconds, 0.04, 1e-9); /* 4 on-CPU samples at 100 Hz */
    MODEL_FREE();
}
END_TEST

START_TEST(fibers_split_running_and_waiting)
{
    struct fixture fixture;
    struct ospx_model model;
    fixture_model(&fixture,
                  "thread 0 main\nthread -1 effect\nthread 7 idle\n"
                  "frame work /w/a.c\nstack 0@3\n"
                  "sample 1 0 0 0\nsample 2 1 0 1\nsample 3 1 0 1\nsample 4 1 0 0\n",
                  &model);
    ck_assert_uint_eq(model.fiber_count, 3);
    ck_assert_int_eq(model.fibers[0].fiber, 0);
    ck_assert_str_eq(model.fibers[0].label, "main");
    ck_assert_uint_eq(model.fibers[0].on_cpu, 1);
    ck_assert_uint_eq(model.fibers[0].waiting, 0);
    ck_assert_int_eq(model.fibers[1].fiber, -1);
    ck_assert_uint_eq(model.fibers[1].on_cpu, 1);
    ck_assert_uint_eq(model.fibers[1].waiting, 2);
    ck_assert_uint_eq(model.fibers[2].on_cpu + model.fibers[2].waiting, 0);
    MODEL_FREE();
}
END_TEST

/* Fibers a runtime declared on a thread (their own entries, the thread's tid, no preempted_ns)
 * take their share of the thread's preempted periods, by their on-CPU samples. */
START_TEST(declared_fibers_share_their_threads_preemption)
{
    struct fixture fixture;
    struct ospx_model model;
    fixture_parse(&fixture, "rate 100\nthread 0 main -1 10\nthread 1 heavy -1 10\n"
                            "thread 2 light -1 10\nthread 11 other -1 11\n"
                            "frame work /w/a.c\nstack 0@3\n"
                            "sample 1 0 0 0\nsample 2 1 0 0 6\nsample 3 2 0 0 2\n"
                            "sample 4 3 0 0 5\n");
    fixture.raw.threads[0].preempted_ns = 90000000; /* 9 periods at 100 Hz */
    fixture.raw.threads[1].preempted_ns = fixture.raw.threads[2].preempted_ns = -1;
    fixture.raw.threads[3].preempted_ns = 20000000;
    struct ospx_error err = {0};
    ck_assert_int_eq(ospx_model_build(&fixture.raw, &fixture.symbols, &model, &err), 0);
    ck_assert_uint_eq(model.fibers[0].preempted, 1);
    ck_assert_uint_eq(model.fibers[1].preempted, 6);
    ck_assert_uint_eq(model.fibers[2].preempted, 2);
    ck_assert_uint_eq(model.fibers[3].preempted, 2); /* another thread's own, as it was */
    ospx_model_free(&model);
    fixture_free(&fixture);
}
END_TEST

START_TEST(function_identity_is_name_and_file)
{
    struct fixture fixture;
    struct ospx_model model;
    /* frames 0 and 2 are the same function (say, inlined at two sites); frame 1 shares the
     * name but lives in another file. */
    fixture_model(&fixture,
                  "thread 0 main\n"
                  "frame helper /w/a.c\nframe helper /w/b.c\nframe helper /w/a.c\n"
                  "frame main /w/a.c\n"
                  "stack 0@5 3@40\nstack 2@7 3@41\nstack 1@9 3@42\n"
                  "sample 1 0 0 0\nsample 2 0 1 0\nsample 3 0 2 0\n",
                  &model);
    ck_assert_uint_eq(model.function_count, 3);
    const struct ospx_function_stat *a = function_named(&model, "helper", "/w/a.c");
    const struct ospx_function_stat *b = function_named(&model, "helper", "/w/b.c");
    ck_assert_uint_eq(a->self, 2);
    ck_assert_int_eq(a->line, 5);
    ck_assert_uint_eq(b->self, 1);
    ck_assert_uint_eq(model.functions[0].self, 2); /* sorted by self desc */
    ck_assert_str_eq(model.functions[0].file, "/w/a.c");
    MODEL_FREE();
}
END_TEST

START_TEST(inline_frames_take_self_at_the_innermost)
{
    struct fixture fixture;
    struct ospx_model model;
    /* mix (2) is inlined into hash (1), called from main (0): leaf first, innermost first */
    fixture_model(&fixture,
                  "thread 0 main\n"
                  "frame main /w/a.c\nframe hash /w/h.c\nframe mix /w/h.h\n"
                  "stack 2@4 1@20 0@30\nsample 1 0 0 0\nsample 2 0 0 0\n",
                  &model);
    ck_assert_uint_eq(function_named(&model, "mix", "/w/h.h")->self, 2);
    ck_assert_uint_eq(function_named(&model, "hash", "/w/h.c")->self, 0);
    ck_assert_uint_eq(function_named(&model, "hash", "/w/h.c")->total, 2);
    ck_assert_uint_eq(line_at(&model, "/w/h.c", 20)->samples, 2);
    ck_assert_uint_eq(line_at(&model, "/w/h.c", 20)->self, 0);
    ck_assert_uint_eq(line_at(&model, "/w/h.h", 4)->self, 2);
    MODEL_FREE();
}
END_TEST

START_TEST(frames_without_file_have_functions_but_no_lines)
{
    struct fixture fixture;
    struct ospx_model model;
    fixture_model(&fixture,
                  "thread 0 main\nframe 0x7f0012 - /lib/libc.so.6\nframe main /w/a.c\n"
                  "stack 0 1@9\nsample 1 0 0 0\n",
                  &model);
    ck_assert_uint_eq(function_named(&model, "0x7f0012", "")->self, 1);
    ck_assert_int_eq(function_named(&model, "0x7f0012", "")->line, 0);
    ck_assert_uint_eq(model.line_count, 1);
    ck_assert_int_eq(model.lines[0].line, 9);
    MODEL_FREE();
}
END_TEST

START_TEST(functions_sort_by_self_then_total_then_name)
{
    struct fixture fixture;
    struct ospx_model model;
    fixture_model(&fixture,
                  "thread 0 main\nframe b /w/a.c\nframe a /w/a.c\nframe c /w/a.c\n"
                  "frame top /w/a.c\n"
                  "stack 0@1 3@9\nstack 1@2 3@9\nstack 2@3 1@2 3@9\n"
                  "sample 1 0 0 0\nsample 2 0 1 0\nsample 3 0 2 0\n",
                  &model);
    /* c, b: self 1 total 1; a: self 1 total 2; top: self 0 total 3 */
    ck_assert_str_eq(model.functions[0].name, "a");
    ck_assert_str_eq(model.functions[1].name, "b");
    ck_assert_str_eq(model.functions[2].name, "c");
    ck_assert_str_eq(model.functions[3].name, "top");
    MODEL_FREE();
}
END_TEST

START_TEST(out_of_range_indices_are_an_error_naming_the_file)
{
    struct fixture fixture;
    fixture_parse(&fixture, "thread 0 main\nframe a /w/a.c\nstack 0@1\nsample 1 3 0 0\n");
    struct ospx_model model;
    struct ospx_error err = {0};
    ck_assert_int_lt(ospx_model_build(&fixture.raw, &fixture.symbols, &model, &err), 0);
    ck_assert_str_eq(err.file, "fixture.json");
    ck_assert_ptr_nonnull(strstr(err.text, "thread 3"));
    MODEL_FREE();
}
END_TEST

START_TEST(empty_profile_builds)
{
    MODEL_OF("thread 0 main\n");
    ck_assert_uint_eq(model.total_samples, 0);
    ck_assert_uint_eq(model.function_count, 0);
    ck_assert_uint_eq(model.line_count, 0);
    ck_assert_double_eq(model.cpu_seconds, 0);
    MODEL_FREE();
}
END_TEST

/* A row of weight w counts as w rows of weight 1 everywhere in the model; a file without
 * weights reads as before. */
START_TEST(weights_count_as_repeated_rows)
{
#define COMMON                                                                                     \
    "rate 1000\nstart 1000000000\nend 1100000000\nthread 0 main\nthread 7 worker\n"                \
    "frame main /w/a.c\nframe spin /w/a.c\nstack 1@5 0@20\nstack 0@21\n"
    static const char weighted[] =
        COMMON "sample 1000 1 0 0 7\nsample 1000 0 1 1 30\nsample 9000 1 0 0\n";
    char expanded[4096];
    size_t used = (size_t)snprintf(expanded, sizeof expanded, "%s", COMMON);
#undef COMMON
    for (int i = 0; i < 8; i++)
        used += (size_t)snprintf(expanded + used, sizeof expanded - used, "sample %d 1 0 0\n",
                                 1000 + i);
    for (int i = 0; i < 30; i++)
        used += (size_t)snprintf(expanded + used, sizeof expanded - used, "sample %d 0 1 1\n",
                                 1000 + i * 1000);
    struct fixture a, b;
    struct ospx_model x, y;
    fixture_model(&a, weighted, &x);
    fixture_model(&b, expanded, &y);
    expect_samples(&x, 8, 30, y.total_samples);
    ck_assert_uint_eq(x.on_cpu_samples, y.on_cpu_samples);
    ck_assert_double_eq(x.cpu_seconds, y.cpu_seconds);
    for (size_t t = 0; t < 2; t++) {
        ck_assert_uint_eq(x.fibers[t].on_cpu, y.fibers[t].on_cpu);
        ck_assert_uint_eq(x.fibers[t].waiting, y.fibers[t].waiting);
    }
    ck_assert_uint_eq(x.function_count, y.function_count);
    for (size_t i = 0; i < x.function_count; i++) {
        ck_assert_str_eq(x.functions[i].name, y.functions[i].name);
        ck_assert_uint_eq(x.functions[i].self, y.functions[i].self);
        ck_assert_uint_eq(x.functions[i].total, y.functions[i].total);
    }
    ck_assert_uint_eq(x.line_count, y.line_count);
    for (size_t i = 0; i < x.line_count; i++)
        ck_assert_uint_eq(x.lines[i].samples, y.lines[i].samples);
    ck_assert_int_eq(x.measured_cpu_ns, -1);
    ospx_model_free(&x);
    ospx_model_free(&y);
    fixture_free(&a);
    fixture_free(&b);
}
END_TEST

/* The measured CPU time: the process's clock, else the sum of the threads' when all have one. */
START_TEST(measured_cpu_time)
{
    MODEL_OF("thread 0 main 3000\nthread 1 w 4000\n");
    ck_assert_int_eq(model.measured_cpu_ns, 7000);
    MODEL_FREE();
    fixture_model(&fixture, "thread 0 main 3000\nthread 1 w\n", &model);
    ck_assert_int_eq(model.measured_cpu_ns, -1);
    MODEL_FREE();
    fixture_model(&fixture, "process_cpu_ns 9000\nthread 0 main 3000\n", &model);
    ck_assert_int_eq(model.measured_cpu_ns, 9000);
    MODEL_FREE();
}
END_TEST

/* An end time no clock gives (2^63 - 1, from a collector that never learned the end) does not
 * make a nine-billion-second wall time: the samples' reach stands in for it. */
START_TEST(implausible_end_time_falls_back_to_the_samples)
{
    struct fixture fixture;
    struct ospx_model model;
    fixture_model(&fixture,
                  "rate 1000\nstart 1764410000000000000\nend 9223372036854775807\n"
                  "thread 0 main\nframe main /w/a.c\nstack 0@1\n"
                  "sample 1000000 0 0 0\nsample 2000000 0 0 1 500\n",
                  &model);
    ck_assert_double_eq_tol(model.wall_seconds, 0.502, 1e-9);
    MODEL_FREE();
}
END_TEST

Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    SUITE_CASE(s, "model", 0, recursive_function_counts_once_per_sample,
               location_is_the_hottest_line, lines_count_once_per_sample_and_self_at_the_leaf,
               wall_and_cpu_time, fibers_split_running_and_waiting,
               declared_fibers_share_their_threads_preemption, function_identity_is_name_and_file,
               inline_frames_take_self_at_the_innermost,
               frames_without_file_have_functions_but_no_lines,
               functions_sort_by_self_then_total_then_name,
               out_of_range_indices_are_an_error_naming_the_file, empty_profile_builds,
               weights_count_as_repeated_rows, measured_cpu_time,
               implausible_end_time_falls_back_to_the_samples);
    return s;
}
