/* test-writers.c — the four file outputs. Golden files per case
 * (tests/data/writers/<case>/expected.*; OSPX_UPDATE_GOLDEN=1 rewrites them), plus checks that
 * hold for every case whatever the golden files say: speedscope against the required keys and
 * types of its file-format schema, the V8 profile's tree and sample invariants, the folded
 * line grammar, and the atomic write (no temporary file left, the error names the path). */
#include <check.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <jansson.h>
#include <link.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "ospx-fixture.h"
#include "ospx.h"
#include "ospx_version.h"
#include "pprof_profile.pb-c.h"
#include "scratch.h"
#include "suite.h"

/* ospx_internal.h's thread grouping, which the cpuprofile writer orders its samples by. */
int ospx__samples_by_thread(const struct ospx_raw *raw, size_t **order, size_t **first);
#define ospx__samples_by_thread_for_test ospx__samples_by_thread
/* ospx_internal.h's frame → function map, made once for the writers and copied by each. */
uint32_t *ospx__frame_functions(const struct ospx_model *model);
int ospx__model_frame_functions(const struct ospx_model *model);

static const char *const cases[] = {"two-fibers", "recursion-inline", "odd-names",
                                    "weighted",   "processes",        "waiting-fiber"};
#define CASE_COUNT (sizeof cases / sizeof cases[0])

struct writer {
    const char *extension;
    int (*write)(const struct ospx_model *, const char *, struct ospx_error *);
};

static const struct writer writers[] = {
    {"speedscope.json", ospx_write_speedscope},
    {"cpuprofile", ospx_write_cpuprofile},
    {"folded", ospx_write_folded},
    {"profile.json", ospx_write_profile_json},
    {"offcpu.folded", ospx_write_offcpu_folded},
    {"pb.gz", ospx_write_pprof},
    {"trace.json", ospx_write_trace},
};
#define WRITER_COUNT (sizeof writers / sizeof writers[0])

/* A scratch directory per test, removed with everything in it. */
static char scratch[256];

static void make_scratch(void)
{
    scratch_make(scratch, sizeof scratch, "writers");
}

static void remove_scratch(void)
{
    scratch_remove(scratch);
}

/* NAME in the scratch directory, into path[size]. */
static void scratch_file(char *path, size_t size, const char *name)
{
    snprintf(path, size, "%s/%s", scratch, name);
}

static void load_case(const char *name, struct fixture *fixture, struct ospx_model *model)
{
    char path[512];
    snprintf(path, sizeof path, "%s/writers/%s/input", OSP_TEST_SOURCE_DIR "/data", name);
    fixture_load(fixture, path);
    struct ospx_error err = {0};
    ck_assert_msg(ospx_model_build(&fixture->raw, &fixture->symbols, model, &err) == 0, "%s: %s",
                  name, err.text);
}

/* Write one output of a case into the scratch directory; returns its path (static buffer). */
static const char *write_output(const struct ospx_model *model, const struct writer *writer)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/out.%s", scratch, writer->extension);
    struct ospx_error err = {0};
    int rc = writer->write(model, path, &err);
    ck_assert_msg(rc == 0, "%s: %s", path, err.text);
    return path;
}

static json_t *load_json(const char *path)
{
    json_error_t error;
    json_t *root = json_load_file(path, 0, &error);
    ck_assert_msg(root != NULL, "%s:%d: %s", path, error.line, error.text);
    return root;
}

/* OUTPUT_OF(case, writer): in a fresh scratch directory, the test's `fixture` and `model` of
 * the case and `root`, the JSON the writer wrote of it; OUTPUT_FREE() frees them all. */
#define OUTPUT_OF(name, writer)                                                                    \
    struct fixture fixture;                                                                        \
    struct ospx_model model;                                                                       \
    make_scratch();                                                                                \
    load_case((name), &fixture, &model);                                                           \
    json_t *root = load_json(write_output(&model, (writer)))
#define OUTPUT_FREE()                                                                              \
    json_decref(root);                                                                             \
    ospx_model_free(&model);                                                                       \
    fixture_free(&fixture);                                                                        \
    remove_scratch()

/* The .pb.gz, gunzipped and decoded with protobuf-c: its samples add up to the model's on-CPU
 * periods (and periods × 1e9 / rate nanoseconds), each function's self (the leaf location's
 * innermost line) is the model's, and every sample carries its fiber and thread labels. */
static Perftools__Profiles__Profile *load_pprof(const char *path)
{
    gzFile file = gzopen(path, "rb");
    ck_assert_ptr_nonnull(file);
    uint8_t *data = NULL;
    size_t size = 0;
    int n;
    uint8_t chunk[65536];
    while ((n = gzread(file, chunk, sizeof chunk)) > 0) {
        data = realloc(data, size + (size_t)n);
        memcpy(data + size, chunk, (size_t)n);
        size += (size_t)n;
    }
    ck_assert_int_eq(n, 0);
    gzclose(file);
    Perftools__Profiles__Profile *profile = perftools__profiles__profile__unpack(NULL, size, data);
    ck_assert_ptr_nonnull(profile);
    free(data);
    return profile;
}

/* The golden files name the exporter "osprey VERSION": the build's version (git describe)
 * changes with every commit, the outputs must not. Returns TEXT, which it frees, with each
 * exporter name replaced by that placeholder. */
static char *golden_version(char *text)
{
    const char *name = OSPX_EXPORTER_NAME, *placeholder = "osprey VERSION";
    size_t name_len = strlen(name), placeholder_len = strlen(placeholder), count = 0;
    for (const char *p = strstr(text, name); p != NULL; p = strstr(p + name_len, name))
        count++;
    char *out = malloc(strlen(text) + count * placeholder_len + 1);
    ck_assert_ptr_nonnull(out);
    char *o = out;
    const char *p = text;
    for (const char *hit = strstr(p, name); hit != NULL; hit = strstr(p, name)) {
        memcpy(o, p, (size_t)(hit - p));
        o += hit - p;
        memcpy(o, placeholder, placeholder_len);
        o += placeholder_len;
        p = hit + name_len;
    }
    strcpy(o, p);
    free(text);
    return out;
}

START_TEST(outputs_match_golden_files)
{
    const char *name = cases[_i];
    const char *update = getenv("OSPX_UPDATE_GOLDEN");
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    load_case(name, &fixture, &model);
    for (size_t w = 0; w < WRITER_COUNT; w++) {
        if (writers[w].write == ospx_write_pprof)
            continue; /* binary: pprof_agrees_with_the_model decodes it instead */
        const char *path = write_output(&model, &writers[w]);
        char *actual = scratch_read(path, NULL);
        ck_assert_ptr_nonnull(actual);
        actual = golden_version(actual);
        char golden[512];
        snprintf(golden, sizeof golden, "%s/writers/%s/expected.%s", OSP_TEST_SOURCE_DIR "/data",
                 name, writers[w].extension);
        if (update != NULL && strcmp(update, "1") == 0) {
            FILE *file = fopen(golden, "wb");
            ck_assert_ptr_nonnull(file);
            fputs(actual, file);
            fclose(file);
        }
        char *expected = scratch_read(golden, NULL);
        ck_assert_msg(expected != NULL, "missing %s (run with OSPX_UPDATE_GOLDEN=1)", golden);
        ck_assert_msg(strcmp(actual, expected) == 0, "%s differs from %s", path, golden);
        free(actual);
        free(expected);
    }
    ospx_model_free(&model);
    fixture_free(&fixture);
    remove_scratch();
}
END_TEST

static int is_speedscope_unit(const char *unit)
{
    static const char *const units[] = {"none",         "nanoseconds", "microseconds",
                                        "milliseconds", "seconds",     "bytes"};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(unit, units[i]) == 0)
            return 1;
    return 0;
}

/* The required keys and types of https://www.speedscope.app/file-format-schema.json for a
 * file of sampled profiles, and that every sample of the raw profile is there exactly once. */
START_TEST(speedscope_follows_the_file_format_schema)
{
    OUTPUT_OF(cases[_i], &writers[0]);

    ck_assert_str_eq(json_string_value(json_object_get(root, "$schema")),
                     "https://www.speedscope.app/file-format-schema.json");
    json_t *frames = json_object_get(json_object_get(root, "shared"), "frames");
    ck_assert(json_is_array(frames));
    size_t index;
    json_t *frame;
    json_array_foreach(frames, index, frame)
    {
        ck_assert(json_is_string(json_object_get(frame, "name")));
        json_t *file = json_object_get(frame, "file"), *line = json_object_get(frame, "line");
        ck_assert(file == NULL || json_is_string(file));
        ck_assert(line == NULL || (json_is_integer(line) && json_integer_value(line) >= 1));
    }
    json_t *profiles = json_object_get(root, "profiles");
    ck_assert(json_is_array(profiles));
    ck_assert_uint_eq(json_array_size(profiles), fixture.raw.thread_count);
    json_t *active = json_object_get(root, "activeProfileIndex");
    ck_assert(active == NULL || json_integer_value(active) < (json_int_t)json_array_size(profiles));

    size_t waiting_leaves = 0, p;
    double total_periods = 0;
    json_t *profile;
    json_array_foreach(profiles, p, profile)
    {
        ck_assert_str_eq(json_string_value(json_object_get(profile, "type")), "sampled");
        ck_assert(json_is_string(json_object_get(profile, "name")));
        ck_assert(is_speedscope_unit(json_string_value(json_object_get(profile, "unit"))));
        ck_assert(json_is_number(json_object_get(profile, "startValue")));
        ck_assert(json_is_number(json_object_get(profile, "endValue")));
        ck_assert(json_number_value(json_object_get(profile, "endValue")) >=
                  json_number_value(json_object_get(profile, "startValue")));
        json_t *samples = json_object_get(profile, "samples");
        json_t *weights = json_object_get(profile, "weights");
        ck_assert(json_is_array(samples) && json_is_array(weights));
        ck_assert_uint_eq(json_array_size(samples), json_array_size(weights));
        /* The axis is the fiber's own: it ends where its weights do (Time Order). */
        double weight_sum = 0;
        size_t w;
        json_t *weight;
        json_array_foreach(weights, w, weight) weight_sum += json_number_value(weight);
        double span = json_number_value(json_object_get(profile, "endValue")) -
                      json_number_value(json_object_get(profile, "startValue"));
        ck_assert_msg(span > weight_sum - 1e-6 && span < weight_sum + 1e-6,
                      "axis %.6f ms, weights %.6f ms", span, weight_sum);
        size_t s;
        json_t *stack;
        json_array_foreach(samples, s, stack)
        {
            ck_assert(json_is_array(stack));
            ck_assert(json_is_number(json_array_get(weights, s)));
            size_t k;
            json_t *frame_index;
            json_array_foreach(stack, k, frame_index)
            {
                ck_assert(json_is_integer(frame_index));
                json_int_t value = json_integer_value(frame_index);
                ck_assert(value >= 0 && value < (json_int_t)json_array_size(frames));
            }
            size_t depth = json_array_size(stack);
            json_t *leaf = json_array_get(
                frames, (size_t)json_integer_value(json_array_get(stack, depth - 1)));
            /* weights are milliseconds: the row's periods times 1000 / rate */
            double periods =
                json_number_value(json_array_get(weights, s)) * fixture.raw.rate_hz / 1000.0;
            if (strcmp(json_string_value(json_object_get(leaf, "name")), "(waiting)") == 0)
                waiting_leaves += (size_t)(periods + 0.5);
        }
        /* Sized by what it shows: each distinct stack once, its rows' weights summed. */
        for (size_t a = 0; a < json_array_size(samples); a++)
            for (size_t b = a + 1; b < json_array_size(samples); b++)
                ck_assert_msg(!json_equal(json_array_get(samples, a), json_array_get(samples, b)),
                              "rows %zu and %zu of profile %zu are one stack", a, b, p);
        total_periods += weight_sum * fixture.raw.rate_hz / 1000.0;
    }
    uint64_t periods = 0;
    for (size_t i = 0; i < fixture.raw.sample_count; i++)
        periods += fixture.raw.samples[i].weight;
    ck_assert_msg(total_periods > (double)periods - 1e-6 && total_periods < (double)periods + 1e-6,
                  "%.6f periods in the weights, %llu in the rows", total_periods,
                  (unsigned long long)periods);
    ck_assert_uint_eq(waiting_leaves, model.waiting_samples);
    OUTPUT_FREE();
}
END_TEST

/* Stacks are root first: the two-fibers worker's samples start at `worker`. */
START_TEST(speedscope_stacks_are_root_first)
{
    OUTPUT_OF("two-fibers", &writers[0]);
    json_t *frames = json_object_get(json_object_get(root, "shared"), "frames");
    json_t *worker = json_array_get(json_object_get(root, "profiles"), 1);
    ck_assert_str_eq(json_string_value(json_object_get(worker, "name")), "hotspot-4243 (thread)");
    /* rows in the call tree's order: [worker] before [worker, checksum_block] */
    json_t *first = json_array_get(json_object_get(worker, "samples"), 1);
    ck_assert_uint_eq(json_array_size(first), 2);
    json_t *frame = json_array_get(frames, (size_t)json_integer_value(json_array_get(first, 0)));
    ck_assert_str_eq(json_string_value(json_object_get(frame, "name")), "worker");
    frame = json_array_get(frames, (size_t)json_integer_value(json_array_get(first, 1)));
    ck_assert_str_eq(json_string_value(json_object_get(frame, "name")), "checksum_block");
    ck_assert_int_eq(json_integer_value(json_object_get(frame, "line")), 26); /* lowest line */
    OUTPUT_FREE();
}
END_TEST

/* V8 profile invariants: ids 1..N in pre-order with (root) first, children after their parent,
 * call frames with the fields their readers need and no more, hitCount = samples naming the
 * node (absent: 0), deltas non-negative and summing within the run. */
START_TEST(cpuprofile_tree_and_samples_are_consistent)
{
    OUTPUT_OF(cases[_i], &writers[1]);
    json_t *nodes = json_object_get(root, "nodes");
    size_t count = json_array_size(nodes);
    ck_assert_uint_gt(count, 0);
    json_t *first = json_array_get(nodes, 0);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(first, "callFrame"), "functionName")),
        "(root)");
    json_int_t *hits = calloc(count + 1, sizeof *hits);
    size_t i, fibers = 0;
    json_t *node;
    json_array_foreach(nodes, i, node)
    {
        ck_assert_int_eq(json_integer_value(json_object_get(node, "id")), (json_int_t)i + 1);
        json_t *call = json_object_get(node, "callFrame");
        ck_assert(json_is_string(json_object_get(call, "functionName")));
        ck_assert(json_is_string(json_object_get(call, "scriptId")));
        /* what the readers need (exporters/README.md): a url string on every frame (VS
         * Code's model calls url.startsWith), a lineNumber always (-1: VS Code's system
         * code), a columnNumber only beside a known line (18 bytes of every other node) */
        ck_assert(json_is_string(json_object_get(call, "url")));
        ck_assert(json_is_integer(json_object_get(call, "lineNumber")));
        json_int_t line = json_integer_value(json_object_get(call, "lineNumber"));
        ck_assert_int_ge(line, -1);
        if (line >= 0)
            ck_assert(json_is_integer(json_object_get(call, "columnNumber")));
        else
            ck_assert(json_object_get(call, "columnNumber") == NULL);
        /* V8's optional fields only when they say something: a hitCount when not 0 (the
         * root's always: DevTools counts samples instead when it has none), children when
         * there are some */
        json_t *hit_count = json_object_get(node, "hitCount");
        ck_assert(i == 0 ? json_is_integer(hit_count)
                         : hit_count == NULL || json_integer_value(hit_count) > 0);
        ck_assert(json_object_get(node, "children") == NULL ||
                  json_array_size(json_object_get(node, "children")) > 0);
        size_t c;
        json_t *child;
        json_array_foreach(json_object_get(node, "children"), c, child)
        {
            ck_assert_int_gt(json_integer_value(child), (json_int_t)i + 1);
            ck_assert_int_le(json_integer_value(child), (json_int_t)count);
            /* a fiber's node: the thread's name, "<name>-<tid>" (and its label when the name
             * is the command's), with several processes "<comm>-<pid>: <name>-<tid>"; the
             * root's other child is (idle) */
            if (i == 0) {
                const char *name = json_string_value(json_object_get(
                    json_object_get(json_array_get(nodes, json_integer_value(child) - 1),
                                    "callFrame"),
                    "functionName"));
                fibers += strcmp(name, "(idle)") != 0 && strchr(name, '-') != NULL &&
                          (fixture.raw.process_count <= 1 || strstr(name, ": ") != NULL);
            }
        }
    }
    /* The root's children: one node per fiber with on-CPU samples, and (idle) (the waits, and
     * the closing sample at endTime that keeps DevTools from cutting the last one short). */
    ck_assert_uint_eq(fibers + (fixture.raw.sample_count > 0),
                      json_array_size(json_object_get(first, "children")));

    json_t *samples = json_object_get(root, "samples"),
           *deltas = json_object_get(root, "timeDeltas");
    size_t sample_count = json_array_size(samples);
    /* Sized by the tree, not the rows: at most one sample per node, one (idle) per fiber and
     * the closing one. */
    ck_assert_uint_le(sample_count, count + fixture.raw.thread_count + 1);
    ck_assert_uint_gt(sample_count, 1);
    ck_assert_uint_eq(json_array_size(deltas), sample_count);
    json_int_t at = json_integer_value(json_object_get(root, "startTime"));
    /* A reader gives a sample the time up to the next: a node's samples last its hitCount
     * (sampling periods), to a microsecond per sample. The closing sample is (idle), at
     * endTime; DevTools gives it the mean interval, which (idle)'s hitCount counts too. */
    double period_us = 1e6 / fixture.raw.rate_hz, *lasting = calloc(count + 1, sizeof *lasting);
    for (i = 0; i < sample_count; i++) {
        json_int_t id = json_integer_value(json_array_get(samples, i));
        ck_assert(id >= 1 && id <= (json_int_t)count);
        ck_assert_int_ge(json_integer_value(json_array_get(deltas, i)), 0);
        at += json_integer_value(json_array_get(deltas, i));
        if (i + 1 < sample_count)
            lasting[id - 1] += (double)json_integer_value(json_array_get(deltas, i + 1));
        hits[id - 1]++; /* samples naming the node */
    }
    json_int_t closing = json_integer_value(json_array_get(samples, sample_count - 1));
    ck_assert_str_eq(
        json_string_value(json_object_get(
            json_object_get(json_array_get(nodes, closing - 1), "callFrame"), "functionName")),
        "(idle)");
    uint64_t periods = 0, hit_sum = 0;
    for (size_t k = 0; k < fixture.raw.sample_count; k++)
        periods += fixture.raw.samples[k].weight;
    uint64_t mean = (periods + (sample_count - 1) / 2) / (sample_count - 1);
    /* the closing sample lasts the mean interval to endTime, as DevTools gives it */
    json_int_t end = json_integer_value(json_object_get(root, "endTime"));
    ck_assert_int_eq(end - json_integer_value(json_object_get(root, "startTime")),
                     llround((double)(periods + mean) * period_us));
    ck_assert_int_le(llabs(end - at - llround((double)mean * period_us)), 1);
    json_array_foreach(nodes, i, node)
    {
        json_int_t hit_count = json_integer_value(json_object_get(node, "hitCount"));
        hit_sum += (uint64_t)hit_count;
        if ((json_int_t)i + 1 == closing)
            hit_count -= (json_int_t)mean;
        double want = (double)hit_count * period_us;
        ck_assert_msg(lasting[i] > want - (double)hits[i] - 1 &&
                          lasting[i] < want + (double)hits[i] + 1,
                      "node %zu: %lld periods, its samples last %.0f us", i + 1,
                      (long long)hit_count, lasting[i]);
    }
    ck_assert_uint_eq(hit_sum, periods + mean); /* sampleTime: (end - start) / hits, a period */
    free(lasting);
    free(hits);
    OUTPUT_FREE();
}
END_TEST

/* Each fiber's samples form one block of the time axis, in their own time order, and each
 * sample lasts its weight in sampling periods: whatever the phase between the threads, a
 * reader that gives a sample the time to the next one gives each fiber exactly its sampled
 * time. Waiting samples are V8's (idle). Lines 0-based; a scriptId per file. */
START_TEST(cpuprofile_gives_each_fiber_its_own_time)
{
    OUTPUT_OF("two-fibers", &writers[1]);
    json_t *nodes = json_object_get(root, "nodes");
    size_t count = json_array_size(nodes);
    /* fiber_of[id - 1]: the name of the fiber subtree a node belongs to, or "(idle)" */
    const char **fiber_of = calloc(count + 1, sizeof *fiber_of);
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node)
    {
        json_t *call = json_object_get(node, "callFrame");
        const char *name = json_string_value(json_object_get(call, "functionName"));
        if (i > 0 && fiber_of[i] == NULL) /* pre-order: a child of the root, a fiber or (idle) */
            fiber_of[i] = name;
        if (strcmp(name, "(idle)") == 0)
            ck_assert_uint_eq(json_array_size(json_object_get(node, "children")), 0);
        size_t c;
        json_t *child;
        json_array_foreach(json_object_get(node, "children"), c, child)
            fiber_of[json_integer_value(child) - 1] = fiber_of[i];
        if (strcmp(name, "checksum_block") == 0) {
            ck_assert_int_eq(json_integer_value(json_object_get(call, "lineNumber")), 25);
            ck_assert_str_eq(json_string_value(json_object_get(call, "scriptId")), "1");
            ck_assert_str_eq(json_string_value(json_object_get(call, "url")), "/w/hotspot.c");
        }
        if (strncmp(name, "0x", 2) == 0) {
            ck_assert_int_eq(json_integer_value(json_object_get(call, "lineNumber")), -1);
            ck_assert_str_eq(json_string_value(json_object_get(call, "scriptId")), "0");
        }
    }
    /* Durations as every reader computes them: up to the next sample, the last up to endTime. */
    json_t *samples = json_object_get(root, "samples"),
           *deltas = json_object_get(root, "timeDeltas");
    size_t n = json_array_size(samples);
    json_int_t at = json_integer_value(json_object_get(root, "startTime"));
    json_int_t main_us = 0, thread_us = 0, idle_us = 0;
    const char *previous_fiber = NULL;
    int blocks = 0;
    for (i = 0; i < n; i++) {
        at += json_integer_value(json_array_get(deltas, i));
        json_int_t next = i + 1 < n ? at + json_integer_value(json_array_get(deltas, i + 1))
                                    : json_integer_value(json_object_get(root, "endTime"));
        const char *fiber = fiber_of[json_integer_value(json_array_get(samples, i)) - 1];
        ck_assert_ptr_nonnull(fiber);
        json_int_t duration = next - at;
        if (strcmp(fiber, "hotspot-4242 (main)") == 0)
            main_us += duration;
        else if (strcmp(fiber, "hotspot-4243 (thread)") == 0)
            thread_us += duration;
        else
            idle_us += duration;
        if (strcmp(fiber, "(idle)") != 0 &&
            (previous_fiber == NULL || strcmp(fiber, previous_fiber) != 0)) {
            blocks++;
            previous_fiber = fiber;
        }
    }
    ck_assert_int_eq(blocks, 2);
    double period_us = 1e6 / fixture.raw.rate_hz;
    ck_assert_int_eq(main_us, (json_int_t)(model.fibers[0].on_cpu * period_us));
    ck_assert_int_eq(thread_us, (json_int_t)(model.fibers[1].on_cpu * period_us));
    /* the closing (idle) sample lasts the mean interval to endTime, as DevTools gives it (in
     * whole periods) */
    json_int_t first_at = json_integer_value(json_object_get(root, "startTime"));
    json_int_t closing_us = json_integer_value(json_object_get(root, "endTime")) - at;
    ck_assert_int_le(llabs(closing_us - (at - first_at) / (json_int_t)(n - 1)),
                     (json_int_t)(period_us / 2) + 1);
    ck_assert_int_eq(idle_us - closing_us, (json_int_t)(model.waiting_samples * period_us));
    free(fiber_of);
    OUTPUT_FREE();
}
END_TEST

/* Every folded line is `<thread>-<id>;frame;… <count>` (the thread as perf names it) with no stray
 * `;` or newline from a name, and the counts add up to the samples. */
START_TEST(folded_lines_follow_the_grammar)
{
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    load_case(cases[_i], &fixture, &model);
    char *text = scratch_read(write_output(&model, &writers[2]), NULL);
    ck_assert_ptr_nonnull(text);
    unsigned long long total = 0;
    size_t expected_frames = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        /* with several processes, "<comm>-<pid>;" first */
        char *fiber = line;
        if (fixture.raw.process_count > 1) {
            char *semicolon = strchr(line, ';'), *dash = NULL;
            for (char *p = line; semicolon != NULL && p < semicolon; p++)
                dash = *p == '-' ? p : dash;
            ck_assert_msg(semicolon != NULL && dash != NULL &&
                              strspn(dash + 1, "0123456789") == (size_t)(semicolon - dash - 1),
                          "line without its process first: %s", line);
            fiber = semicolon + 1;
        }
        char *root_end = strchr(fiber, ';') != NULL ? strchr(fiber, ';') : strrchr(fiber, ' ');
        ck_assert_msg(strncmp(fiber, "fiber-", 6) != 0 && root_end != NULL, "line: %s", line);
        char *dash = root_end;
        while (dash > fiber && dash[-1] != '-')
            dash--;
        ck_assert_msg(dash > fiber + 1 && dash < root_end, "no <name>-<id> root: %s", line);
        char *space = strrchr(line, ' ');
        ck_assert_ptr_nonnull(space);
        char *end;
        unsigned long long count = strtoull(space + 1, &end, 10);
        ck_assert_msg(*end == '\0' && count > 0, "count in: %s", line);
        total += count;
        for (char *p = line; p < space; p++)
            expected_frames += *p == ';';
    }
    ck_assert_uint_eq(total, model.on_cpu_samples);
    ck_assert_uint_gt(expected_frames, 0);
    free(text);
    ospx_model_free(&model);
    fixture_free(&fixture);
    remove_scratch();
}
END_TEST

START_TEST(folded_names_lose_separators)
{
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    load_case("odd-names", &fixture, &model);
    char *text = scratch_read(write_output(&model, &writers[2]), NULL);
    ck_assert_ptr_nonnull(strstr(text, "odd-9;main;operator: weird 2\n"));
    ck_assert_ptr_nonnull(strstr(text, "effect--1;main;two lines 1\n"));
    ck_assert_ptr_null(strstr(text, "(waiting)"));
    free(text);
    /* The waiting sample is in the off-CPU file, the stack it blocked in without a marker. */
    text = scratch_read(write_output(&model, &writers[4]), NULL);
    ck_assert_str_eq(text, "effect--1;main;two lines 1\n");
    free(text);
    ospx_model_free(&model);
    fixture_free(&fixture);
    remove_scratch();
}
END_TEST

START_TEST(pprof_agrees_with_the_model)
{
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    load_case(cases[_i], &fixture, &model);
    Perftools__Profiles__Profile *profile = load_pprof(write_output(&model, &writers[5]));
    char **strings = profile->string_table;
    ck_assert_str_eq(strings[0], "");
    ck_assert_uint_eq(profile->n_sample_type, 2);
    ck_assert_str_eq(strings[profile->sample_type[0]->type], "samples");
    ck_assert_str_eq(strings[profile->sample_type[0]->unit], "count");
    ck_assert_str_eq(strings[profile->sample_type[1]->type], "cpu");
    ck_assert_str_eq(strings[profile->sample_type[1]->unit], "nanoseconds");
    ck_assert_int_eq(profile->period, 1000000000 / fixture.raw.rate_hz);
    uint64_t *self = calloc(profile->n_function + 1, sizeof *self);
    int64_t periods = 0, nanoseconds = 0;
    for (size_t i = 0; i < profile->n_sample; i++) {
        const Perftools__Profiles__Sample *sample = profile->sample[i];
        ck_assert_uint_eq(sample->n_value, 2);
        periods += sample->value[0];
        nanoseconds += sample->value[1];
        /* with several processes also the process: pid (a number) and comm */
        ck_assert_uint_eq(sample->n_label, fixture.raw.process_count > 1 ? 4 : 2);
        ck_assert_str_eq(strings[sample->label[0]->key], "fiber");
        ck_assert_str_eq(strings[sample->label[1]->key], "thread");
        if (sample->n_label == 4) {
            ck_assert_str_eq(strings[sample->label[2]->key], "pid");
            ck_assert_int_gt(sample->label[2]->num, 0);
            ck_assert_str_eq(strings[sample->label[3]->key], "comm");
        }
        if (sample->n_location_id == 0)
            continue;
        uint64_t leaf = sample->location_id[0];
        ck_assert(leaf >= 1 && leaf <= profile->n_location);
        const Perftools__Profiles__Location *location = profile->location[leaf - 1];
        ck_assert_uint_eq(location->id, leaf);
        ck_assert_uint_gt(location->n_line, 0);
        self[location->line[0]->function_id - 1] += (uint64_t)sample->value[0];
    }
    ck_assert_int_eq(periods, (int64_t)model.on_cpu_samples);
    ck_assert_int_eq(nanoseconds, (int64_t)model.on_cpu_samples * profile->period);
    ck_assert_uint_eq(profile->n_function, model.function_count);
    for (size_t f = 0; f < profile->n_function; f++) {
        const Perftools__Profiles__Function *function = profile->function[f];
        ck_assert_uint_eq(function->id, f + 1);
        ck_assert_str_eq(strings[function->name], model.functions[f].name);
        ck_assert_str_eq(strings[function->filename], model.functions[f].file);
        ck_assert_uint_eq(self[f], model.functions[f].self);
    }
    free(self);
    perftools__profiles__profile__free_unpacked(profile, NULL);
    ospx_model_free(&model);
    fixture_free(&fixture);
    remove_scratch();
}
END_TEST

/* A run of several processes: every output holds every process. pprof: each sample's pid and
 * comm are its thread's process, the CPU per pid is the model's, and a pc of one process is
 * never another's location; speedscope: a profile per thread named with its process; the
 * trace: each thread's events under its process's real pid, each pid named once. */
START_TEST(every_output_holds_every_process)
{
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    load_case("processes", &fixture, &model);
    ck_assert_uint_eq(model.processes_sampled, 2);
    Perftools__Profiles__Profile *profile = load_pprof(write_output(&model, &writers[5]));
    char **strings = profile->string_table;
    int64_t cpu_of[2] = {0, 0};
    for (size_t i = 0; i < profile->n_sample; i++) {
        const Perftools__Profiles__Sample *sample = profile->sample[i];
        int64_t pid = sample->label[2]->num;
        const char *comm = strings[sample->label[3]->str];
        ck_assert_msg((pid == 300 && strcmp(comm, "sh") == 0) ||
                          (pid == 301 && strcmp(comm, "worker") == 0),
                      "pid %lld comm %s", (long long)pid, comm);
        cpu_of[pid - 300] += sample->value[0];
    }
    ck_assert_int_eq(cpu_of[0], 1);
    ck_assert_int_eq(cpu_of[1], 5);
    /* main and crunch in each process: a location of one process is never another's (with one
     * table for both there would be 2) */
    ck_assert_uint_eq(profile->n_location, 4);
    perftools__profiles__profile__free_unpacked(profile, NULL);

    json_t *speedscope = load_json(write_output(&model, &writers[0]));
    json_t *profiles = json_object_get(speedscope, "profiles");
    ck_assert_uint_eq(json_array_size(profiles), 3);
    static const char *const names[] = {"sh-300: sh-300 (main)", "worker-301: worker-301 (main)",
                                        "worker-301: worker-302 (thread)"};
    for (size_t i = 0; i < 3; i++)
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(profiles, i), "name")),
                         names[i]);
    json_decref(speedscope);

    json_t *trace = load_json(write_output(&model, &writers[6]));
    json_t *events = json_object_get(trace, "traceEvents"), *event;
    size_t index, named[2] = {0, 0}, thread_events[4] = {0, 0, 0, 0};
    json_array_foreach(events, index, event)
    {
        json_int_t pid = json_integer_value(json_object_get(event, "pid"));
        json_int_t tid = json_integer_value(json_object_get(event, "tid"));
        const char *name = json_string_value(json_object_get(event, "name"));
        ck_assert_msg(pid == 300 || pid == 301, "event of pid %lld", (long long)pid);
        if (strcmp(name, "process_name") == 0)
            named[pid - 300]++;
        ck_assert(tid >= 0 && tid <= 3);
        thread_events[tid]++;
        /* tid t + 1 is raw thread t: thread 0 is the shell's, 1 and 2 the worker's */
        if (tid > 0)
            ck_assert_int_eq(pid, tid == 1 ? 300 : 301);
    }
    ck_assert_uint_eq(named[0], 1);
    ck_assert_uint_eq(named[1], 1);
    ck_assert_uint_gt(thread_events[3], 2);
    json_decref(trace);
    ospx_model_free(&model);
    fixture_free(&fixture);
    remove_scratch();
}
END_TEST

/* trace.json: per fiber a Profile and ProfileChunks on the run's timeline, in which the time a
 * reader gives the non-idle samples (each lasting until the next) is the fiber's on-CPU
 * periods, consecutive rows in one node are one sample (two-fibers' worker: 9,9,9,9 was four
 * points of one tick each, now one of four), each fiber's nodes are numbered 1.. on their own,
 * and one "waiting in" complete event per wait,
 * their durations at most the waiting periods. */
START_TEST(trace_puts_samples_on_real_time)
{
    OUTPUT_OF(cases[_i], &writers[6]);
    json_t *events = json_object_get(root, "traceEvents");
    ck_assert(json_is_array(events));
    double wait_us = 0, period_us = 1e6 / fixture.raw.rate_hz;
    size_t i, profiles = 0;
    json_t *event;
    for (size_t t = 0; t < fixture.raw.thread_count; t++) {
        json_int_t tid = (json_int_t)t + 1, at = -1, previous = -1, busy_us = 0, previous_id = -1;
        int previous_idle = 1;
        size_t points = 0, thread_names = 0;
        json_t *nodes = NULL;
        json_array_foreach(events, i, event)
        {
            if (json_integer_value(json_object_get(event, "tid")) != tid)
                continue;
            const char *name = json_string_value(json_object_get(event, "name"));
            json_t *data = json_object_get(json_object_get(event, "args"), "data");
            if (strcmp(name, "thread_name") == 0)
                thread_names++;
            if (strcmp(name, "Profile") == 0) {
                profiles++;
                at = json_integer_value(json_object_get(data, "startTime"));
            }
            if (strcmp(name, "ProfileChunk") == 0) {
                json_t *profile = json_object_get(data, "cpuProfile");
                if (json_object_get(profile, "nodes") != NULL) {
                    nodes = json_object_get(profile, "nodes");
                    /* a profile's own ids, 1.. as written: the shortest numbers it can have */
                    size_t n;
                    json_t *node;
                    json_array_foreach(nodes, n, node) ck_assert_int_eq(
                        json_integer_value(json_object_get(node, "id")), (json_int_t)n + 1);
                }
                json_t *samples = json_object_get(profile, "samples");
                json_t *deltas = json_object_get(data, "timeDeltas");
                ck_assert_uint_eq(json_array_size(samples), json_array_size(deltas));
                for (size_t k = 0; k < json_array_size(samples); k++) {
                    ck_assert_int_ge(json_integer_value(json_array_get(deltas, k)), 0);
                    at += json_integer_value(json_array_get(deltas, k));
                    if (!previous_idle)
                        busy_us += at - previous;
                    json_int_t id = json_integer_value(json_array_get(samples, k));
                    size_t n;
                    json_t *node;
                    int found = 0;
                    json_array_foreach(nodes, n, node)
                    {
                        if (json_integer_value(json_object_get(node, "id")) != id)
                            continue;
                        found = 1;
                        previous_idle =
                            strcmp(json_string_value(json_object_get(
                                       json_object_get(node, "callFrame"), "functionName")),
                                   "(idle)") == 0;
                    }
                    ck_assert(found);
                    /* rows going on in one node are one point: none repeats the one before */
                    ck_assert_msg(id != previous_id, "fiber %zu: node %lld twice in a row", t,
                                  (long long)id);
                    previous_id = id;
                    previous = at;
                    points++;
                }
            }
            if (strcmp(json_string_value(json_object_get(event, "ph")), "X") == 0) {
                ck_assert_str_eq(json_string_value(json_object_get(event, "cat")),
                                 "osprey.waiting");
                ck_assert(strncmp(name, "waiting in ", 11) == 0);
                wait_us += (double)json_integer_value(json_object_get(event, "dur"));
            }
        }
        ck_assert_uint_eq(thread_names, 1);
        ck_assert(previous_idle); /* every stream ends idle: the last sample has an end */
        /* each boundary is rounded to a whole µs */
        double expected_us = (double)model.fibers[t].on_cpu * period_us;
        ck_assert_msg(fabs((double)busy_us - expected_us) <= (double)points + 1,
                      "fiber %zu: %lld µs busy, %f expected", t, (long long)busy_us, expected_us);
    }
    ck_assert(wait_us <= model.waiting_samples * period_us + 1);
    if (model.waiting_samples > 0)
        ck_assert(wait_us > 0);
    ck_assert_uint_ge(profiles, 1);
    OUTPUT_FREE();
}
END_TEST

/* trace.json: a wait names its site (the raw stack); the stack it blocked in is written with the
 * first wait at that site on each track, the later ones there carry the site alone. */
START_TEST(trace_writes_a_wait_stack_once_per_site_and_track)
{
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    /* thread 0 waits at stack 1 three times (work between), thread 1 once; stack 2 once */
    fixture_parse(&fixture, "exe /w/w\npid 7\nrate 1000\nstart 1764410000000000000\n"
                            "end 1764410000009000000\nthread 0 main\nthread 1 worker\n"
                            "frame main /w/w.c\nframe work /w/w.c\nframe nanosleep -\n"
                            "stack 1@5 0@9\nstack 2 0@12\nstack 2 1@7 0@9\n"
                            "sample 1000000 0 0 0\nsample 2000000 0 1 1\nsample 3000000 0 0 0\n"
                            "sample 4000000 0 1 1\nsample 5000000 0 0 0\nsample 6000000 0 1 1\n"
                            "sample 7000000 0 2 1\nsample 1000000 1 1 1\nsample 2000000 1 0 0\n"
                            "dropped 0\n");
    struct ospx_error err = {0};
    ck_assert_msg(ospx_model_build(&fixture.raw, &fixture.symbols, &model, &err) == 0, "%s",
                  err.text);
    json_t *root = load_json(write_output(&model, &writers[6]));
    size_t i, carried[2][3] = {{0}}, waits[2][3] = {{0}};
    json_t *event;
    json_array_foreach(json_object_get(root, "traceEvents"), i, event)
    {
        if (strcmp(json_string_value(json_object_get(event, "ph")), "X") != 0)
            continue;
        json_int_t tid = json_integer_value(json_object_get(event, "tid"));
        json_t *args = json_object_get(event, "args");
        json_int_t site = json_integer_value(json_object_get(args, "site"));
        ck_assert(tid >= 1 && tid <= 2 && site >= 1 && site <= 2);
        json_t *stack = json_object_get(args, "stack");
        /* the first at a site on a track carries the stack, root first; the later ones not */
        ck_assert_int_eq(stack != NULL, waits[tid - 1][site] == 0);
        if (stack != NULL) {
            carried[tid - 1][site]++;
            ck_assert_str_eq(json_string_value(json_array_get(stack, 0)), "main");
            ck_assert_str_eq(json_string_value(json_array_get(stack, json_array_size(stack) - 1)),
                             "nanosleep");
        }
        waits[tid - 1][site]++;
    }
    ck_assert_uint_eq(waits[0][1], 3);
    ck_assert_uint_eq(carried[0][1], 1);
    ck_assert_uint_eq(waits[0][2], 1);
    ck_assert_uint_eq(carried[0][2], 1);
    ck_assert_uint_eq(waits[1][1], 1);
    ck_assert_uint_eq(carried[1][1], 1); /* another track: its own copy */
    OUTPUT_FREE();
}
END_TEST

/* profile.json: figures over on-CPU samples, percentages rounded to 0.1, documented key order. */
START_TEST(profile_json_totals_and_percentages)
{
    OUTPUT_OF("two-fibers", &writers[3]);
    static const char *const keys[] = {"version", "exe",       "pid",  "totals",
                                       "fibers",  "functions", "lines"};
    size_t k = 0;
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value)
    {
        ck_assert_uint_lt(k, sizeof keys / sizeof keys[0]);
        ck_assert_str_eq(key, keys[k++]);
    }
    json_t *totals = json_object_get(root, "totals");
    ck_assert_int_eq(json_integer_value(json_object_get(totals, "samples")), 11);
    ck_assert_int_eq(json_integer_value(json_object_get(totals, "on_cpu")), 6);
    ck_assert_int_eq(json_integer_value(json_object_get(totals, "waiting")), 5);
    ck_assert_double_eq(json_real_value(json_object_get(totals, "wall_ms")), 12.0);
    ck_assert_double_eq(json_real_value(json_object_get(totals, "cpu_ms")), 6.0);
    json_t *hottest = json_array_get(json_object_get(root, "functions"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(hottest, "name")), "checksum_block");
    ck_assert_int_eq(json_integer_value(json_object_get(hottest, "self")), 4);
    ck_assert_double_eq(json_real_value(json_object_get(hottest, "self_pct")), 66.7);
    json_t *line = json_array_get(json_object_get(root, "lines"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(line, "line")), 40);
    ck_assert_double_eq(json_real_value(json_object_get(line, "percent")), 66.7);
    OUTPUT_FREE();
}
END_TEST

/* A run that ended before the first sample still gives four well-formed files. */
START_TEST(empty_profile_writes_valid_files)
{
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    fixture_model(&fixture, "thread 0 main\nthread 5 worker\n", &model);
    for (size_t w = 0; w < WRITER_COUNT; w++) {
        const char *path = write_output(&model, &writers[w]);
        if (writers[w].write == ospx_write_folded || writers[w].write == ospx_write_offcpu_folded) {
            char *text = scratch_read(path, NULL);
            ck_assert_str_eq(text, "");
            free(text);
        } else if (writers[w].write == ospx_write_pprof) {
            Perftools__Profiles__Profile *profile = load_pprof(path);
            ck_assert_uint_eq(profile->n_sample, 0);
            perftools__profiles__profile__free_unpacked(profile, NULL);
        } else {
            json_decref(load_json(path));
        }
    }
    json_t *root = load_json(write_output(&model, &writers[0]));
    ck_assert_uint_eq(json_array_size(json_object_get(root, "profiles")), 2);
    OUTPUT_FREE();
}
END_TEST

static size_t files_in_scratch(void)
{
    size_t n = 0;
    DIR *dir = opendir(scratch);
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL)
        n += entry->d_name[0] != '.';
    closedir(dir);
    return n;
}

START_TEST(failed_write_names_the_path_and_leaves_nothing)
{
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    load_case("two-fibers", &fixture, &model);
    for (size_t w = 0; w < WRITER_COUNT; w++) {
        /* The destination is a directory: the temporary file is written, the rename fails. */
        char path[512];
        snprintf(path, sizeof path, "%s/taken.%s", scratch, writers[w].extension);
        ck_assert_int_eq(mkdir(path, 0755), 0);
        struct ospx_error err = {0};
        ck_assert_int_lt(writers[w].write(&model, path, &err), 0);
        ck_assert_str_eq(err.file, path);
        ck_assert_uint_eq(files_in_scratch(), w + 1); /* only the directories */

        /* A directory that does not exist. */
        memset(&err, 0, sizeof err);
        snprintf(path, sizeof path, "%s/missing/out.%s", scratch, writers[w].extension);
        ck_assert_int_eq(writers[w].write(&model, path, &err), -ENOENT);
        ck_assert_str_eq(err.file, path);
        ck_assert_ptr_nonnull(strstr(err.text, "No such file"));
    }
    ospx_model_free(&model);
    fixture_free(&fixture);
    remove_scratch();
}
END_TEST

START_TEST(write_replaces_an_existing_file_whole)
{
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    load_case("odd-names", &fixture, &model);
    char path[512];
    scratch_file(path, sizeof path, "out.folded");
    FILE *old = fopen(path, "w");
    for (int i = 0; i < 1000; i++)
        fputs("an older and much longer profile line 1\n", old);
    fclose(old);
    struct ospx_error err = {0};
    ck_assert_int_eq(ospx_write_folded(&model, path, &err), 0);
    char *text = scratch_read(path, NULL);
    ck_assert_ptr_null(strstr(text, "older"));
    ck_assert_uint_eq(files_in_scratch(), 1);
    struct stat info;
    ck_assert_int_eq(stat(path, &info), 0);
    ck_assert_int_eq(info.st_mode & 0777, 0644);
    free(text);
    ospx_model_free(&model);
    fixture_free(&fixture);
    remove_scratch();
}
END_TEST

/* ---- ospx_process: the whole pipeline on a raw profile of this very test program ---- */

static __attribute__((noinline)) int process_hot_function(int x)
{
    return x * 3 + 1;
}

struct own_image {
    uintptr_t base, text, text_size;
};

static int find_own_text(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct own_image *image = data;
    uintptr_t hot = (uintptr_t)&process_hot_function;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + phdr->p_vaddr;
        if (phdr->p_type == PT_LOAD && (phdr->p_flags & PF_X) && hot >= start &&
            hot < start + phdr->p_memsz) {
            *image = (struct own_image){info->dlpi_addr, start, phdr->p_memsz};
            return 1;
        }
    }
    return 0;
}

/* A raw profile of this program: 150 on-CPU samples in process_hot_function. */
static void write_own_raw(const char *path)
{
    struct own_image image = {0};
    ck_assert_int_eq(dl_iterate_phdr(find_own_text, &image), 1);
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    FILE *raw = fopen(path, "w");
    ck_assert_ptr_nonnull(raw);
    fprintf(raw,
            "{\"version\":1,\"pid\":1,\"exe\":\"%s\",\"rate_hz\":1000,"
            "\"platform\":\"linux-x86_64\",\"start_unix_ns\":1000000000,"
            "\"end_unix_ns\":1200000000,\"images\":[{\"path\":\"%s\",\"base\":%llu,"
            "\"slide\":%llu,\"text\":%llu,\"text_size\":%llu,\"arch\":\"\"}],"
            "\"threads\":[{\"fiber\":0,\"label\":\"main\"}],\"stacks\":[[%llu]],\"samples\":[",
            exe, exe, (unsigned long long)image.base, (unsigned long long)image.base,
            (unsigned long long)image.text, (unsigned long long)image.text_size,
            (unsigned long long)(uintptr_t)&process_hot_function);
    for (int i = 0; i < 150; i++)
        fprintf(raw, "%s[%d,0,0,0]", i == 0 ? "" : ",", (i + 1) * 1000000);
    fprintf(raw, "],\"dropped\":0}\n");
    fclose(raw);
}

/* A scratch directory holding this program's own raw file, raw[size] its path and stem[size]
 * the outputs' stem beside it. */
static void own_run(char *raw, char *stem, size_t size)
{
    make_scratch();
    scratch_file(raw, size, "run.raw.json");
    scratch_file(stem, size, "run");
    write_own_raw(raw);
}

START_TEST(process_writes_four_files_and_the_report)
{
    char raw[512], stem[512], path[600];
    own_run(raw, stem, sizeof raw);
    char *report = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&report, &size);
    struct ospx_process_options options = {.raw_path = raw, .stem = stem, .report = out};
    struct ospx_error err = {0};
    int rc = ospx_process(&options, &err);
    fclose(out);
    ck_assert_msg(rc == 0, "%s: %s", err.file, err.text);
    for (size_t w = 0; w < WRITER_COUNT; w++) {
        snprintf(path, sizeof path, "%s.%s", stem, writers[w].extension);
        ck_assert_msg(access(path, R_OK) == 0, "%s missing", path);
        ck_assert_ptr_nonnull(strstr(report, path));
    }
    ck_assert_ptr_nonnull(strstr(report, "150 samples"));
    ck_assert_ptr_nonnull(strstr(report, "100.0%"));
    ck_assert_ptr_null(strstr(report, "low confidence"));
    snprintf(path, sizeof path, "%s.folded", stem);
    char *folded = scratch_read(path, NULL);
    ck_assert_str_eq(folded, "test-writers-1;process_hot_function 150\n");
    free(folded);
    free(report);
    remove_scratch();
}
END_TEST

/* The daemon's entry point: exactly the formats asked for, nothing on an unknown one. */
START_TEST(export_files_writes_the_formats_asked_for)
{
    char raw[512], stem[512], path[600];
    own_run(raw, stem, sizeof raw);
    struct ospx_error err = {0};
    ck_assert_int_eq(ospx_export_files(raw, stem, "speedscope,pprof", &err), 0);
    for (size_t w = 0; w < WRITER_COUNT; w++) {
        snprintf(path, sizeof path, "%s.%s", stem, writers[w].extension);
        int wanted =
            writers[w].write == ospx_write_speedscope || writers[w].write == ospx_write_pprof;
        ck_assert_msg((access(path, F_OK) == 0) == wanted, "%s", path);
    }
    /* html is made from the speedscope file: asking for it alone writes both */
    snprintf(path, sizeof path, "%s.speedscope.json", stem);
    unlink(path);
    ck_assert_int_eq(ospx_export_files(raw, stem, "html", &err), 0);
    ck_assert_int_eq(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s.html", stem);
    ck_assert_int_eq(access(path, F_OK), 0);
    ck_assert_int_eq(ospx_export_files(raw, stem, "folded,bogus", &err), -EINVAL);
    /* the list comes from the registry: every format once, "folded" for its two files */
    ck_assert_str_eq(err.text, "unknown output format 'bogus' (known: speedscope, cpuprofile, "
                               "folded, profile, pprof, trace, html, all)");
    snprintf(path, sizeof path, "%s.folded", stem);
    ck_assert_int_ne(access(path, F_OK), 0);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(ospx_export_files(raw, stem, "all", &err), 0);
    for (size_t w = 0; w < WRITER_COUNT; w++) {
        snprintf(path, sizeof path, "%s.%s", stem, writers[w].extension);
        ck_assert_msg(access(path, F_OK) == 0, "%s", path);
    }
    remove_scratch();
}
END_TEST

START_TEST(process_stops_at_the_first_error)
{
    make_scratch();
    char raw[512], stem[512];
    scratch_file(raw, sizeof raw, "missing.raw.json");
    scratch_file(stem, sizeof stem, "run");
    struct ospx_process_options options = {.raw_path = raw, .stem = stem};
    struct ospx_error err = {0};
    ck_assert_int_lt(ospx_process(&options, &err), 0);
    ck_assert_str_eq(err.file, raw);

    /* a good raw file, an output directory that does not exist */
    scratch_file(raw, sizeof raw, "run.raw.json");
    write_own_raw(raw);
    scratch_file(stem, sizeof stem, "no/such/dir/run");
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(ospx_process(&options, &err), -ENOENT);
    /* the outputs are written two at a time, longest first: it names the first that failed */
    ck_assert_ptr_nonnull(strstr(err.file, "/no/such/dir/run."));
    ck_assert_ptr_nonnull(strstr(err.text, "No such file or directory"));
    remove_scratch();
}
END_TEST

/* The frame → function map made once for the writers (before they share the model) is the
 * one each writer made for itself, and every writer's copy is its own. */
START_TEST(frame_functions_made_once_are_each_writers)
{
    struct fixture fixture;
    struct ospx_model model;
    make_scratch();
    load_case(cases[_i], &fixture, &model);
    uint32_t *own = ospx__frame_functions(&model);
    ck_assert_ptr_nonnull(own);
    ck_assert_ptr_null(model.frame_function);
    ck_assert_int_eq(ospx__model_frame_functions(&model), 0);
    uint32_t *copy = ospx__frame_functions(&model), *kept = model.frame_function;
    ck_assert_ptr_nonnull(copy);
    ck_assert_ptr_ne(copy, kept);
    for (size_t f = 0; f < fixture.symbols.frame_count; f++) {
        ck_assert_uint_eq(copy[f], own[f]);
        ck_assert_uint_eq(kept[f], own[f]);
    }
    ck_assert_int_eq(ospx__model_frame_functions(&model), 0);
    ck_assert_ptr_eq(model.frame_function, kept); /* made once */
    free(own);
    free(copy);
    ospx_model_free(&model);
    fixture_free(&fixture);
    remove_scratch();
}
END_TEST

Suite *writers_suite(void)
{
    Suite *s = suite_create("writers");
    TCase *tc = SUITE_CASE(
        s, "writers", 0, every_output_holds_every_process, speedscope_stacks_are_root_first,
        cpuprofile_gives_each_fiber_its_own_time, trace_writes_a_wait_stack_once_per_site_and_track,
        folded_names_lose_separators, profile_json_totals_and_percentages,
        empty_profile_writes_valid_files, failed_write_names_the_path_and_leaves_nothing,
        write_replaces_an_existing_file_whole);
    tcase_add_loop_test(tc, outputs_match_golden_files, 0, CASE_COUNT);
    tcase_add_loop_test(tc, speedscope_follows_the_file_format_schema, 0, CASE_COUNT);
    tcase_add_loop_test(tc, cpuprofile_tree_and_samples_are_consistent, 0, CASE_COUNT);
    tcase_add_loop_test(tc, folded_lines_follow_the_grammar, 0, CASE_COUNT);
    tcase_add_loop_test(tc, pprof_agrees_with_the_model, 0, CASE_COUNT);
    tcase_add_loop_test(tc, trace_puts_samples_on_real_time, 0, CASE_COUNT);
    tcase_add_loop_test(tc, frame_functions_made_once_are_each_writers, 0, CASE_COUNT);
    SUITE_CASE(s, "process", 60, process_writes_four_files_and_the_report,
               process_stops_at_the_first_error, export_files_writes_the_formats_asked_for);
    return s;
}
