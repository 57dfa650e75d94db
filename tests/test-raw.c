/* test-raw.c — the raw profile reader: valid files read field by field, and one golden error
 * line for every kind of malformed input (tests/data/raw/<case>/{input,expected}). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospx.h"
#include "ospx_internal.h"
#include "suite.h"

#define RAW_DATA_DIR OSP_TEST_SOURCE_DIR "/data/raw"

static void read_case(const char *name, struct ospx_raw *raw, struct ospx_error *err, int *rc)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/input", RAW_DATA_DIR, name);
    memset(err, 0, sizeof *err);
    *rc = ospx_raw_read(path, raw, err);
}

/* The case `name` read whole: a failed check when it does not read. */
static void read_valid(const char *name, struct ospx_raw *raw)
{
    struct ospx_error err;
    int rc;
    read_case(name, raw, &err, &rc);
    ck_assert_msg(rc == 0, "%s: rc %d: %s", name, rc, err.text);
}
/* RAW_OF(name): the test's `raw`, the case `name` read whole. */
#define RAW_OF(name)                                                                               \
    struct ospx_raw raw;                                                                           \
    read_valid((name), &raw)

/* How the run ended: known, normally, by signal. */
static void expect_exit(const struct ospx_raw *raw, int known, int normal, int signal)
{
    ck_assert_int_eq(raw->exit.known, known);
    ck_assert_int_eq(raw->exit.normal, normal);
    ck_assert_int_eq(raw->exit.signal, signal);
}

/* How many images, threads, stacks and samples were read. */
static void expect_counts(const struct ospx_raw *raw, size_t images, size_t threads, size_t stacks,
                          size_t samples)
{
    ck_assert_uint_eq(raw->image_count, images);
    ck_assert_uint_eq(raw->thread_count, threads);
    ck_assert_uint_eq(raw->stack_count, stacks);
    ck_assert_uint_eq(raw->sample_count, samples);
}

/* A sample row: its time, thread, stack and state. */
static void expect_sample(const struct ospx_sample *sample, uint64_t t_rel_ns, uint32_t thread,
                          uint32_t stack, uint32_t state)
{
    ck_assert_uint_eq(sample->t_rel_ns, t_rel_ns);
    ck_assert_uint_eq(sample->thread, thread);
    ck_assert_uint_eq(sample->stack, stack);
    ck_assert_uint_eq(sample->state, state);
}

START_TEST(test_valid_fields)
{
    RAW_OF("valid");
    ck_assert_int_eq(raw.version, 1);
    ck_assert_int_eq(raw.pid, 4242);
    ck_assert_str_eq(raw.exe, "/home/u/hotspot");
    ck_assert_uint_eq(raw.rate_hz, 997);
    ck_assert_str_eq(raw.platform, "linux-x86_64");
    ck_assert_uint_eq(raw.start_unix_ns, 1764410000000000000ULL);
    ck_assert_uint_eq(raw.end_unix_ns, 1764410001830000000ULL);
    ck_assert_str_eq(raw.source_path, RAW_DATA_DIR "/valid/input");

    ck_assert_uint_eq(raw.image_count, 2);
    ck_assert_str_eq(raw.images[0].path, "/home/u/hotspot");
    ck_assert_uint_eq(raw.images[0].base, 93824992231424ULL);
    ck_assert_uint_eq(raw.images[0].slide, 93824992231424ULL);
    ck_assert_uint_eq(raw.images[0].text, 93824992235520ULL);
    ck_assert_uint_eq(raw.images[0].text_size, 2385);
    ck_assert_str_eq(raw.images[0].arch, "x86_64");
    ck_assert_str_eq(raw.images[1].path, "/lib/x86_64-linux-gnu/libc.so.6");
    ck_assert_uint_eq(raw.images[1].text_size, 1540096);

    ck_assert_uint_eq(raw.thread_count, 3);
    ck_assert_int_eq(raw.threads[0].fiber, 0);
    ck_assert_str_eq(raw.threads[0].label, "main");
    ck_assert_int_eq(raw.threads[1].fiber, 4243);
    ck_assert_str_eq(raw.threads[1].label, "thread");
    ck_assert_int_eq(raw.threads[2].fiber, -1);
    ck_assert_str_eq(raw.threads[2].label, "effect");

    ck_assert_uint_eq(raw.stack_count, 2);
    ck_assert_uint_eq(raw.stacks[0].depth, 3);
    ck_assert_uint_eq(raw.stacks[0].pcs[0], 93824992236001ULL);
    ck_assert_uint_eq(raw.stacks[0].pcs[1], 93824992236500ULL);
    ck_assert_uint_eq(raw.stacks[0].pcs[2], 139800000200000ULL);
    ck_assert_uint_eq(raw.stacks[1].depth, 1);
    ck_assert_uint_eq(raw.stacks[1].pcs[0], 93824992236100ULL);

    ck_assert_uint_eq(raw.sample_count, 3);
    expect_sample(&raw.samples[0], 1003000, 1, 0, 0);
    expect_sample(&raw.samples[1], 1004100, 0, 1, 1);
    ck_assert_uint_eq(raw.samples[2].thread, 2);

    ck_assert_uint_eq(raw.dropped, 7);
    expect_exit(&raw, 1, 1, 0);
    ospx_raw_free(&raw);
}
END_TEST

/* The compatible extension: a 5th sample element (weight), "drops", cpu_ns, process_cpu_ns,
 * collector.unwind.ready_ns and stack_ends; a file without them reads as weight 1 and "not
 * recorded". */
START_TEST(test_valid_weighted)
{
    RAW_OF("valid-weighted");
    ck_assert_uint_eq(raw.sample_count, 3);
    static const uint64_t weights[] = {1990, 1, 3};
    for (size_t i = 0; i < 3; i++)
        ck_assert_uint_eq(raw.samples[i].weight, weights[i]);
    ck_assert_uint_eq(raw.samples[0].state, 1);
    ck_assert_int_eq(raw.process_cpu_ns, 1210000000);
    ck_assert_int_eq(raw.processes[0].unwind_ready_ns, 52512953);
    ck_assert_int_eq(raw.threads[0].cpu_ns, 10000000);
    ck_assert_int_eq(raw.threads[1].cpu_ns, 1200000000);
    ck_assert_uint_eq(raw.stacks[0].end, 1); /* the outermost frame */
    ck_assert_uint_eq(raw.stacks[1].end, 5); /* guessed */
    ck_assert_uint_eq(raw.drop_count, 2);
    uint64_t sum = 0;
    for (size_t i = 0; i < raw.drop_count; i++) {
        sum += raw.drops[i].count;
        ck_assert(strcmp(raw.drops[i].reason, "ring_full") == 0 ? raw.drops[i].count == 10
                                                                : raw.drops[i].count == 2);
    }
    ck_assert_uint_eq(sum, raw.dropped);
    ospx_raw_free(&raw);

    read_valid("valid", &raw);
    for (size_t i = 0; i < raw.sample_count; i++)
        ck_assert_uint_eq(raw.samples[i].weight, 1);
    ck_assert_int_eq(raw.process_cpu_ns, -1);
    ck_assert_int_eq(raw.processes[0].unwind_ready_ns, -1);
    ck_assert_int_eq(raw.threads[0].cpu_ns, -1);
    ck_assert_uint_eq(raw.stacks[0].end, 0); /* not said */
    ck_assert_uint_eq(raw.drop_count, 0);
    ospx_raw_free(&raw);
}
END_TEST

/* The sample rows are read by a fast path when plain (arrays of integers), by jansson
 * otherwise: both read the same rows. A key spelled with an escape ("sampl\u0065s") is the
 * same key to JSON, but only jansson sees it as such, so it takes the other path. */
START_TEST(test_fast_and_jansson_paths_agree)
{
    char plain_path[256], escaped_path[256];
    snprintf(plain_path, sizeof plain_path, "%s/valid-weighted/input", RAW_DATA_DIR);
    FILE *file = fopen(plain_path, "r");
    ck_assert_ptr_nonnull(file);
    char text[8192];
    size_t size = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[size] = '\0';
    /* Keys written with an escape are not seen by the fast path: jansson reads them. */
    char *key = strstr(text, "\"samples\"");
    ck_assert_ptr_nonnull(key);
    char once[8300], escaped[8400];
    snprintf(once, sizeof once, "%.*s\"sampl\\u0065s\"%s", (int)(key - text), text,
             key + strlen("\"samples\""));
    key = strstr(once, "\"stacks\"");
    ck_assert_ptr_nonnull(key);
    snprintf(escaped, sizeof escaped, "%.*s\"stack\\u0073\"%s", (int)(key - once), once,
             key + strlen("\"stacks\""));
    snprintf(escaped_path, sizeof escaped_path, "/tmp/ospx-raw-escaped-%d.json", (int)getpid());
    file = fopen(escaped_path, "w");
    ck_assert_ptr_nonnull(file);
    fputs(escaped, file);
    fclose(file);

    struct ospx_raw fast, slow;
    struct ospx_error err;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(ospx_raw_read(plain_path, &fast, &err), 0);
    ck_assert_msg(ospx_raw_read(escaped_path, &slow, &err) == 0, "%s", err.text);
    unlink(escaped_path);
    ck_assert_uint_eq(fast.sample_count, slow.sample_count);
    ck_assert_uint_gt(fast.sample_count, 0);
    for (size_t i = 0; i < fast.sample_count; i++) {
        ck_assert_uint_eq(fast.samples[i].t_rel_ns, slow.samples[i].t_rel_ns);
        ck_assert_uint_eq(fast.samples[i].thread, slow.samples[i].thread);
        ck_assert_uint_eq(fast.samples[i].stack, slow.samples[i].stack);
        ck_assert_uint_eq(fast.samples[i].state, slow.samples[i].state);
        ck_assert_uint_eq(fast.samples[i].weight, slow.samples[i].weight);
    }
    ck_assert_uint_eq(fast.stack_count, slow.stack_count);
    ck_assert_uint_gt(fast.stack_count, 0);
    for (size_t i = 0; i < fast.stack_count; i++) {
        ck_assert_uint_eq(fast.stacks[i].depth, slow.stacks[i].depth);
        for (size_t k = 0; k < fast.stacks[i].depth; k++)
            ck_assert_uint_eq(fast.stacks[i].pcs[k], slow.stacks[i].pcs[k]);
    }
    ospx_raw_free(&fast);
    ospx_raw_free(&slow);
}
END_TEST

/* Build ids and code offsets are read when present (a malformed id is no id), absent in older
 * files; a thread registered again under a new name (same fiber, same tid) is one thread with
 * its last name, its samples with it; entries without a tid stay apart. */
START_TEST(test_build_ids_and_renamed_threads)
{
    RAW_OF("renamed-and-build-ids");
    ck_assert_str_eq(raw.images[0].build_id, "2cdf9ab8ba1e3d48a446cce482ed888f7acd8bbd");
    ck_assert_int_eq(raw.images[0].has_text_offset, 1);
    ck_assert_uint_eq(raw.images[0].text_offset, 4096);
    ck_assert_str_eq(raw.images[1].build_id, "");
    ck_assert_int_eq(raw.images[1].has_text_offset, 0);
    ck_assert_str_eq(raw.images[2].build_id, "");

    ck_assert_uint_eq(raw.thread_count, 5);
    ck_assert_str_eq(raw.threads[1].label, "bio_close_file");
    ck_assert_int_eq(raw.threads[1].fiber, 78);
    ck_assert_int_eq(raw.threads[1].tid, 78);
    ck_assert_int_eq(raw.threads[2].fiber, 79);
    ck_assert_int_eq(raw.threads[3].fiber, 80);
    ck_assert_int_eq(raw.threads[4].fiber, 80);
    static const uint32_t thread_of_sample[] = {0, 1, 1, 2, 3, 4};
    ck_assert_uint_eq(raw.sample_count, 6);
    for (size_t i = 0; i < raw.sample_count; i++)
        ck_assert_uint_eq(raw.samples[i].thread, thread_of_sample[i]);
    ospx_raw_free(&raw);

    read_valid("valid", &raw); /* older: no build ids, no offsets */
    ck_assert_str_eq(raw.images[0].build_id, "");
    ck_assert_int_eq(raw.images[0].has_text_offset, 0);
    ospx_raw_free(&raw);
}
END_TEST

START_TEST(test_valid_minimal)
{
    RAW_OF("valid-minimal");
    ck_assert_int_eq(raw.pid, 0);
    ck_assert_uint_eq(raw.rate_hz, 10);
    expect_counts(&raw, 0, 0, 0, 0);
    ck_assert_int_eq(raw.exit.known, 0);
    ospx_raw_free(&raw);
}
END_TEST

START_TEST(test_valid_killed)
{
    RAW_OF("valid-killed");
    expect_exit(&raw, 1, 0, 9);
    ck_assert_uint_eq(raw.start_unix_ns, 5);
    ck_assert_uint_eq(raw.end_unix_ns, 9);
    ospx_raw_free(&raw);
}
END_TEST

/* The optional "comm" and exit.sampling_ended (a program that entered a seccomp sandbox, run
 * through a link); the process and the report name it by its command. A file without them
 * reads as before (valid: no comm, no sampling_ended). */
START_TEST(test_comm_and_sampling_ended)
{
    RAW_OF("valid-sandboxed");
    ck_assert_str_eq(raw.comm, "redis-server");
    ck_assert_str_eq(raw.processes[0].comm, "redis-server");
    ck_assert_str_eq(ospx__process_comm(&raw, 0), "redis-server");
    expect_exit(&raw, 1, 1, 0);
    ck_assert_uint_eq(raw.exit.sampling_ended_ns, 313871296);
    ck_assert_str_eq(raw.exit.sampling_ended_reason, "seccomp");
    ospx_raw_free(&raw);

    read_valid("valid", &raw);
    ck_assert_str_eq(raw.comm, "");
    ck_assert_str_eq(ospx__process_comm(&raw, 0), "hotspot");
    ck_assert_uint_eq(raw.exit.sampling_ended_ns, 0);
    ospx_raw_free(&raw);
}
END_TEST

/* Read a golden file's first line without its newline. */
static void read_expected(const char *path, char *buf, size_t size)
{
    FILE *file = fopen(path, "r");
    ck_assert_msg(file != NULL, "cannot open %s", path);
    if (fgets(buf, (int)size, file) == NULL)
        buf[0] = '\0';
    fclose(file);
    buf[strcspn(buf, "\n")] = '\0';
}

/* Every tests/data/raw/<case>/ with an `expected` file: reading `input` fails with a negative
 * errno, leaves nothing allocated, and formats exactly the expected line (the input's path
 * written as "input"). */
START_TEST(test_golden_errors)
{
    DIR *dir = opendir(RAW_DATA_DIR);
    ck_assert_ptr_nonnull(dir);
    int cases = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.')
            continue;
        char expected_path[1024], input_path[1024];
        snprintf(expected_path, sizeof expected_path, "%s/%s/expected", RAW_DATA_DIR,
                 entry->d_name);
        snprintf(input_path, sizeof input_path, "%s/%s/input", RAW_DATA_DIR, entry->d_name);
        if (access(expected_path, R_OK) != 0)
            continue;
        char expected[1024];
        read_expected(expected_path, expected, sizeof expected);

        struct ospx_raw raw;
        struct ospx_error err;
        memset(&err, 0, sizeof err);
        int rc = ospx_raw_read(input_path, &raw, &err);
        ck_assert_msg(rc < 0, "%s: read succeeded", entry->d_name);
        ck_assert_ptr_null(raw.images);
        ck_assert_ptr_null(raw.exe);
        ck_assert_str_eq(err.file, input_path);
        char formatted[2048];
        ospx_error_format(&err, formatted, sizeof formatted);
        size_t prefix = strlen(input_path);
        ck_assert_msg(strncmp(formatted, input_path, prefix) == 0, "%s: %s", entry->d_name,
                      formatted);
        char actual[2048];
        snprintf(actual, sizeof actual, "input%s", formatted + prefix);
        ck_assert_msg(strcmp(actual, expected) == 0, "%s:\n  actual:   %s\n  expected: %s",
                      entry->d_name, actual, expected);
        cases++;
    }
    closedir(dir);
    ck_assert_int_ge(cases, 30);
}
END_TEST

START_TEST(test_error_codes)
{
    struct ospx_raw raw;
    struct ospx_error err;
    int rc;
    read_case("missing", &raw, &err, &rc);
    ck_assert_int_eq(rc, -ENOENT);
    read_case("directory", &raw, &err, &rc);
    ck_assert_int_eq(rc, -EISDIR);
    read_case("wrong-version", &raw, &err, &rc);
    ck_assert_int_eq(rc, -ENOTSUP);
    read_case("thread-out-of-range", &raw, &err, &rc);
    ck_assert_int_eq(rc, -EINVAL);
    /* A NULL error record is allowed. */
    char path[1024];
    snprintf(path, sizeof path, "%s/truncated/input", RAW_DATA_DIR);
    ck_assert_int_eq(ospx_raw_read(path, &raw, NULL), -EINVAL);
}
END_TEST

/* A file above the size limit is refused before jansson reads it; a sparse file stands in
 * for a real several-GiB profile. */
START_TEST(test_huge_file_refused)
{
    char dir_template[] = "/tmp/osprey-test-raw-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir_template));
    char path[256];
    snprintf(path, sizeof path, "%s/huge.json", dir_template);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, 5LL << 30), 0);
    close(fd);

    struct ospx_raw raw;
    struct ospx_error err;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(ospx_raw_read(path, &raw, &err), -EFBIG);
    char formatted[2048], expected[2048];
    ospx_error_format(&err, formatted, sizeof formatted);
    snprintf(expected, sizeof expected,
             "%s: file is 5.0 GiB (5368709120 bytes), above the reader's limit of 2 GiB", path);
    ck_assert_str_eq(formatted, expected);
    unlink(path);
    rmdir(dir_template);
}
END_TEST

/* A raw file of one process at `path`: pid, exe, start (ns), one thread with one on-CPU sample
 * of `weight` periods at pc `pc`, and `extra` top-level fields ("" for none). */
static void write_raw(const char *path, int pid, const char *exe, long long start, int weight,
                      long long pc, const char *extra)
{
    FILE *file = fopen(path, "w");
    ck_assert_ptr_nonnull(file);
    fprintf(
        file,
        "{\"version\":1,\"pid\":%d,\"exe\":\"%s\",\"rate_hz\":1000,\"platform\":\"linux-x86_64\","
        "\"start_unix_ns\":%lld,\"end_unix_ns\":%lld,%s"
        "\"images\":[{\"path\":\"%s\",\"base\":4096,\"slide\":0,\"text\":4096,"
        "\"text_size\":4096,\"arch\":\"x86_64\"}],"
        "\"threads\":[{\"fiber\":0,\"label\":\"main\",\"tid\":%d}],"
        "\"stacks\":[[%lld]],\"samples\":[[1000,0,0,0,%d]],\"dropped\":1,"
        "\"exit\":{\"status\":\"exited\"}}\n",
        pid, exe, start, start + 5000000, extra, exe, pid, pc, weight);
    fclose(file);
}

/* A run's raw files: the one named and its siblings (P.<pid>.json, P.<pid>-<hex>.json) are
 * read as one profile, the program's last image first; the new fields are read; a malformed
 * sibling, or one from an earlier run, is left out with one warning line; a malformed file
 * named is the error. */
START_TEST(test_run_merges_siblings)
{
    char dir[] = "/tmp/ospx-run-XXXXXX", path[256], other[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.raw.json", dir);
    write_raw(path, 50, "/bin/sh", 1000000000, 1, 4100,
              "\"escaped\":[{\"pid\":60,\"exe\":\"/usr/bin/env\",\"reason\":\"environment "
              "cleared\"}],");
    snprintf(other, sizeof other, "%s/r.raw.50-1a2b.json", dir); /* the root exec'd */
    write_raw(other, 50, "/w/prog", 1001000000, 3, 4200, "");
    snprintf(other, sizeof other, "%s/r.raw.51.json", dir); /* a forked child */
    write_raw(other, 51, "/w/prog", 1002000000, 5, 4200, "\"parent_pid\":50,\"forked\":true,");
    snprintf(other, sizeof other, "%s/r.raw.52.json", dir); /* malformed */
    FILE *bad = fopen(other, "w");
    fputs("{\"version\":1,\n  \"pid\": }\n", bad);
    fclose(bad);
    snprintf(other, sizeof other, "%s/r.raw.49.json", dir); /* an earlier run's */
    write_raw(other, 49, "/w/old", 900000000, 7, 4200, "");
    snprintf(other, sizeof other, "%s/r.raw.x.json", dir); /* not a sibling's name */
    write_raw(other, 48, "/w/x", 1001000000, 9, 4200, "");

    char **siblings;
    size_t count;
    ck_assert_int_eq(ospx_run_siblings(path, &siblings, &count), 0);
    ck_assert_uint_eq(count, 4);
    ospx_paths_free(siblings, count);

    FILE *warnings = tmpfile();
    struct ospx_raw raw;
    struct ospx_error err = {0};
    const char *paths[] = {path};
    ck_assert_int_eq(ospx_run_read(paths, 1, 0, warnings, &raw, &err), 0);
    ck_assert_uint_eq(raw.process_count, 3);
    /* the last image first (the program), then the first image (marked), then the child */
    ck_assert_int_eq(raw.processes[0].pid, 50);
    ck_assert_str_eq(raw.processes[0].exe, "/w/prog");
    ck_assert_int_eq(raw.processes[0].execd, 0);
    ck_assert_str_eq(raw.processes[1].exe, "/bin/sh");
    ck_assert_int_eq(raw.processes[1].execd, 1);
    ck_assert_int_eq(raw.processes[2].pid, 51);
    ck_assert_int_eq(raw.processes[2].forked, 1);
    ck_assert_int_eq(raw.processes[2].parent_pid, 50);
    ck_assert_int_eq(raw.processes[1].parent_pid, -1);
    ck_assert_str_eq(raw.exe, "/w/prog");
    ck_assert_uint_eq(raw.start_unix_ns, 1000000000);
    ck_assert_uint_eq(raw.end_unix_ns, 1007000000);
    ck_assert_uint_eq(raw.dropped, 3);
    /* each process's image, thread and stack are its own; the samples on one time axis */
    expect_counts(&raw, 3, 3, 3, 3);
    for (uint32_t p = 0; p < 3; p++) {
        ck_assert_uint_eq(raw.processes[p].first_image, p);
        ck_assert_uint_eq(raw.images[p].process, p);
        ck_assert_uint_eq(raw.threads[p].process, p);
        ck_assert_uint_eq(raw.stacks[p].process, p);
        ck_assert_uint_eq(raw.samples[p].thread, p);
        ck_assert_uint_eq(raw.samples[p].stack, p);
    }
    ck_assert_uint_eq(raw.samples[0].t_rel_ns, 1001000);
    ck_assert_uint_eq(raw.samples[1].t_rel_ns, 1000);
    ck_assert_uint_eq(raw.samples[2].t_rel_ns, 2001000);
    ck_assert_uint_eq(raw.samples[2].weight, 5);
    ck_assert_uint_eq(raw.escaped_count, 1);
    ck_assert_int_eq(raw.escaped[0].pid, 60);
    ck_assert_str_eq(raw.escaped[0].reason, "environment cleared");
    ck_assert_uint_eq(raw.escaped[0].process, 1);
    ospx_raw_free(&raw);
    /* two warning lines: the malformed sibling with its position, the earlier run's */
    char text[2048] = "";
    rewind(warnings);
    size_t got = fread(text, 1, sizeof text - 1, warnings);
    text[got] = '\0';
    fclose(warnings);
    ck_assert_msg(strstr(text, "r.raw.52.json:2:10: ") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "r.raw.49.json is from an earlier run") != NULL, "%s", text);
    size_t lines = 0;
    for (char *c = text; *c != '\0'; c++)
        lines += *c == '\n';
    ck_assert_uint_eq(lines, 2);

    /* no siblings: the named file alone */
    ck_assert_int_eq(ospx_run_read(paths, 1, 1, NULL, &raw, &err), 0);
    ck_assert_uint_eq(raw.process_count, 1);
    ck_assert_str_eq(raw.exe, "/bin/sh");
    ospx_raw_free(&raw);
    /* a malformed file named is the error, with its position */
    snprintf(other, sizeof other, "%s/r.raw.52.json", dir);
    const char *both[] = {path, other};
    ck_assert_int_eq(ospx_run_read(both, 2, 0, NULL, &raw, &err), -EINVAL);
    ck_assert_str_eq(err.file, other);
    ck_assert_int_eq(err.line, 2);

    const char *names[] = {"r.raw.json",    "r.raw.50-1a2b.json", "r.raw.51.json",
                           "r.raw.52.json", "r.raw.49.json",      "r.raw.x.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(other, sizeof other, "%s/%s", dir, names[i]);
        unlink(other);
    }
    rmdir(dir);
}
END_TEST

/* A file older than the process fields reads as one process with none of them; a "forked"
 * that is not a boolean is an error. */
START_TEST(test_process_fields_optional)
{
    char dir[] = "/tmp/ospx-run-XXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/old.json", dir);
    write_raw(path, 7, "/w/a", 10, 1, 4100, "");
    struct ospx_raw raw;
    struct ospx_error err = {0};
    ck_assert_int_eq(ospx_raw_read(path, &raw, &err), 0);
    ck_assert_uint_eq(raw.process_count, 1);
    ck_assert_int_eq(raw.processes[0].parent_pid, -1);
    ck_assert_int_eq(raw.processes[0].forked, 0);
    ck_assert_uint_eq(raw.escaped_count, 0);
    ospx_raw_free(&raw);
    write_raw(path, 7, "/w/a", 10, 1, 4100, "\"forked\":1,");
    ck_assert_int_eq(ospx_raw_read(path, &raw, &err), -EINVAL);
    ck_assert_msg(strstr(err.text, "forked: expected a boolean, found an integer") != NULL, "%s",
                  err.text);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* liba.so unloaded, then libb.so at its address (valid-reloaded): the samples of each
 * generation get their own stack, bound to a time at which the pcs resolve to that generation's
 * image; a stack outside the overlap is left alone. Without the times, as before. */
START_TEST(test_reloaded_images_split_stacks)
{
    struct ospx_raw raw;
    struct ospx_error err;
    int rc;
    read_case("valid-reloaded", &raw, &err, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(raw.images[1].loaded_ns, 100);
    ck_assert_uint_eq(raw.images[1].unloaded_ns, 2000);
    ck_assert_uint_eq(raw.images[2].loaded_ns, 2500);
    ck_assert_uint_eq(raw.images[0].loaded_ns, 0);
    ck_assert_uint_eq(raw.images[0].unloaded_ns, 0);
    ck_assert_uint_eq(raw.stack_count, 3);
    const uint32_t stacks[] = {0, 1, 0, 2, 2};
    for (size_t i = 0; i < 5; i++)
        ck_assert_uint_eq(raw.samples[i].stack, stacks[i]);
    ck_assert(raw.stacks[0].timed && raw.stacks[0].at_ns == 1000);
    ck_assert(raw.stacks[2].timed && raw.stacks[2].at_ns == 2200);
    ck_assert(!raw.stacks[1].timed);
    ck_assert_uint_eq(raw.stacks[2].depth, 2);
    ck_assert_uint_eq(raw.stacks[2].pcs[0], 69648);
    ck_assert_uint_eq(raw.stacks[2].pcs[1], 4352);
    ck_assert_uint_eq(ospx__stack_image(&raw, &raw.stacks[0], 0), 1); /* liba.so */
    ck_assert_uint_eq(ospx__stack_image(&raw, &raw.stacks[2], 0), 2); /* libb.so */
    ck_assert_uint_eq(ospx__stack_image(&raw, &raw.stacks[2], 1), 0); /* the executable */
    /* Before liba.so was seen: the earliest seen after (seen late, never early). */
    ck_assert_uint_eq(ospx__image_at(&raw, 0, 69648, 50), 1);
    /* Between liba.so's unload and libb.so's being seen: libb.so. */
    ck_assert_uint_eq(ospx__image_at(&raw, 0, 69648, 2200), 2);
    /* After both are gone: the first that held the address, as without times. */
    ck_assert_uint_eq(ospx__image_at(&raw, 0, 69648, 5000), 1);
    ospx_raw_free(&raw);

    read_case("valid-reloaded-untimed", &raw, &err, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(raw.stack_count, 2);
    for (size_t i = 0; i < 5; i++)
        ck_assert_uint_eq(raw.samples[i].stack, i == 1);
    ck_assert(!raw.stacks[0].timed);
    ck_assert_uint_eq(ospx__stack_image(&raw, &raw.stacks[0], 0), 1);
    ospx_raw_free(&raw);
}
END_TEST

Suite *raw_suite(void)
{
    Suite *s = suite_create("raw");
    SUITE_CASE(s, "reader", 0, test_valid_fields, test_valid_weighted,
               test_fast_and_jansson_paths_agree, test_valid_minimal,
               test_build_ids_and_renamed_threads, test_valid_killed, test_golden_errors,
               test_error_codes, test_huge_file_refused, test_run_merges_siblings,
               test_process_fields_optional, test_reloaded_images_split_stacks,
               test_comm_and_sampling_ended);
    return s;
}
