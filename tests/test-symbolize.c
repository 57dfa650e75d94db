/* test-symbolize.c — the symbolizer: pc-to-image mapping, unsliding, the -1 on return
 * addresses, inline expansion, --binary, the tool fallbacks and their warnings, all against
 * fake tools (tests/fake-tools/) that log what they were asked; then the real llvm-symbolizer
 * on programs compiled here, including split debug information. */
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "osp_unwind_step.h"
#include "ospc.h"
#include "ospx.h"
#include "ospx_internal.h"
#include "scratch.h"
#include "suite.h"

#define FAKE_TOOLS OSP_TEST_SOURCE_DIR "/fake-tools"

/* A scratch directory with a log file for the fake tools, PATH set for the test. */
struct fixture {
    char dir[64];
    char log[128];
    char *saved_path;
    char *warnings;
    size_t warnings_size;
    FILE *warnings_stream;
    struct ospx_symbolize_options options;
};

static void fixture_open(struct fixture *fixture, const char *path_variable)
{
    memset(fixture, 0, sizeof *fixture);
    snprintf(fixture->dir, sizeof fixture->dir, "/tmp/osprey-test-symbolize-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(fixture->dir));
    snprintf(fixture->log, sizeof fixture->log, "%s/tool.log", fixture->dir);
    setenv("OSPREY_FAKE_LOG", fixture->log, 1);
    unsetenv("OSPREY_FAKE_INLINE");
    unsetenv("OSPREY_FAKE_UNKNOWN");
    unsetenv("OSPREY_FAKE_GARBAGE");
    unsetenv("OSPREY_FAKE_EXIT_AFTER");
    unsetenv("OSPREY_FAKE_RENAME");
    const char *old_path = getenv("PATH");
    fixture->saved_path = strdup(old_path != NULL ? old_path : "");
    setenv("PATH", path_variable, 1);
    fixture->warnings_stream = open_memstream(&fixture->warnings, &fixture->warnings_size);
    fixture->options.warnings = fixture->warnings_stream;
}

/* A file standing for an object (the fake tools never read it). Returns its path. */
static const char *fixture_object(struct fixture *fixture, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", fixture->dir, name);
    FILE *file = fopen(buf, "w");
    ck_assert_ptr_nonnull(file);
    /* An ELF identification, which is all the symbolizer checks before it hands a path on. */
    static const unsigned char ident[16] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    fwrite(ident, 1, sizeof ident, file);
    fclose(file);
    return buf;
}

/* The fake tool's log so far (malloc'd, "" when it never ran). */
static char *fixture_log(const struct fixture *fixture)
{
    char *text = scratch_read(fixture->log, NULL);
    return text != NULL ? text : strdup("");
}

/* Check that the fake tool's log holds (present) or lacks (!present) a text, printf-style. */
__attribute__((format(printf, 3, 4))) static void fixture_log_has(const struct fixture *fixture,
                                                                  int present, const char *fmt, ...)
{
    char text[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    char *log = fixture_log(fixture);
    ck_assert_msg((strstr(log, text) != NULL) == present, "%s \"%s\" in the log:\n%s",
                  present ? "no" : "unexpected", text, log);
    free(log);
}

/* LOG_LACKS(fixture, text...): the fake tool's log holds none of the texts listed. */
#define LOG_LACKS(fixture, ...)                                                                    \
    do {                                                                                           \
        const char *const lacked_[] = {__VA_ARGS__};                                               \
        for (size_t i_ = 0; i_ < sizeof lacked_ / sizeof *lacked_; i_++)                           \
            fixture_log_has((fixture), 0, "%s", lacked_[i_]);                                      \
    } while (0)

/* Check that exactly `expected_lines` warning lines were written; returns them. */
static const char *fixture_warnings(struct fixture *fixture, int expected_lines)
{
    fflush(fixture->warnings_stream);
    int lines = 0;
    for (size_t i = 0; i < fixture->warnings_size; i++)
        lines += fixture->warnings[i] == '\n';
    ck_assert_msg(lines == expected_lines, "%d warning lines, not %d:\n%s", lines, expected_lines,
                  fixture->warnings);
    return fixture->warnings;
}

/* Check whether the fake tool's log holds `text` (printf-style). */
__attribute__((format(printf, 3, 4))) static void
fixture_log_has(const struct fixture *fixture, int present, const char *fmt, ...);

static void fixture_close(struct fixture *fixture)
{
    setenv("PATH", fixture->saved_path, 1);
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", fixture->dir);
    ck_assert_int_eq(system(command), 0);
    free(fixture->saved_path);
    fclose(fixture->warnings_stream);
    free(fixture->warnings);
    unsetenv("OSPREY_FAKE_LOG");
}

/* A raw profile built in memory: images and stacks given by the test. */
struct test_raw {
    struct ospx_raw raw;
    struct ospx_image images[4];
    struct ospx_stack stacks[4];
};

static void add_image(struct test_raw *test, const char *path, uint64_t base, uint64_t slide,
                      uint64_t text, uint64_t text_size, const char *arch)
{
    test->raw.images = test->images;
    test->images[test->raw.image_count++] = (struct ospx_image){.path = (char *)path,
                                                                .base = base,
                                                                .slide = slide,
                                                                .text = text,
                                                                .text_size = text_size,
                                                                .arch = (char *)arch};
}

static void add_stack(struct test_raw *test, uint64_t *pcs, size_t depth)
{
    test->raw.stacks = test->stacks;
    test->stacks[test->raw.stack_count++] = (struct ospx_stack){.pcs = pcs, .depth = depth};
}

static void init_raw(struct test_raw *test, const char *exe)
{
    memset(test, 0, sizeof *test);
    test->raw.version = 1;
    test->raw.exe = (char *)exe;
    test->raw.source_path = "test.raw.json";
    test->raw.rate_hz = 997;
}

static const struct ospx_frame *frame_at(const struct ospx_symbols *symbols, size_t stack,
                                         size_t position)
{
    ck_assert_uint_lt(stack, symbols->stack_count);
    ck_assert_uint_lt(position, symbols->stack_depths[stack]);
    return &symbols->frames[symbols->stack_slots[stack][position].frame];
}

static void run_symbolize(struct test_raw *test, struct fixture *fixture,
                          struct ospx_symbols *symbols)
{
    struct ospx_error err;
    memset(&err, 0, sizeof err);
    int rc = ospx_symbolize(&test->raw, &fixture->options, symbols, &err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err.text);
}

/* One stack of `depth` pcs added to the profile, then the profile symbolized. */
static void symbolize_stack(struct test_raw *test, struct fixture *fixture,
                            struct ospx_symbols *symbols, uint64_t *pcs, size_t depth)
{
    add_stack(test, pcs, depth);
    run_symbolize(test, fixture, symbols);
}
/* SYMBOLIZE(test, fixture, symbols, pc...): symbolize_stack of the pcs listed. */
#define SYMBOLIZE(test, fixture, symbols, ...)                                                     \
    symbolize_stack((test), (fixture), (symbols), (uint64_t[]){__VA_ARGS__},                       \
                    sizeof((uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

/* The names of stack `stack`'s frames from its leaf on, as many as given (NULL-ended). */
static void expect_names(const struct ospx_symbols *symbols, size_t stack, const char *const *names)
{
    for (size_t i = 0; names[i] != NULL; i++)
        ck_assert_msg(strcmp(frame_at(symbols, stack, i)->name, names[i]) == 0,
                      "stack %zu frame %zu: \"%s\", not \"%s\"", stack, i,
                      frame_at(symbols, stack, i)->name, names[i]);
}
#define EXPECT_NAMES(symbols, stack, ...)                                                          \
    expect_names((symbols), (stack), (const char *const[]){__VA_ARGS__, NULL})
/* EXPECT_STACK(symbols, stack, name...): the stack is exactly the frames named. */
#define EXPECT_STACK(symbols, stack, ...)                                                          \
    do {                                                                                           \
        const char *const names_[] = {__VA_ARGS__, NULL};                                          \
        ck_assert_uint_eq((symbols)->stack_depths[(stack)], sizeof names_ / sizeof *names_ - 1);   \
        expect_names((symbols), (stack), names_);                                                  \
    } while (0)

/* The frame at `position` of stack `stack`: its name, file, line (the slot's) and column. */
static void expect_frame(const struct ospx_symbols *symbols, size_t stack, size_t position,
                         const char *name, const char *file, int line, int column)
{
    const struct ospx_frame *frame = frame_at(symbols, stack, position);
    ck_assert_str_eq(frame->name, name);
    ck_assert_str_eq(frame->file, file);
    ck_assert_int_eq(symbols->stack_slots[stack][position].line, line);
    ck_assert_int_eq(frame->column, column);
}

/* The test's fixture with the real tools of PATH. */
static void fixture_open_real(struct fixture *fixture)
{
    const char *path = getenv("PATH");
    fixture_open(fixture, path != NULL ? path : "/usr/bin:/bin");
}

/* The fake llvm-symbolizer's fixture and a profile of /app/main with one object, libA.so, at
 * 0x1000 (its text 0x1000 bytes there, no slide), its path into a[size]. */
static void fixture_with_lib_a(struct fixture *fixture, struct test_raw *test, char *a, size_t size)
{
    fixture_open(fixture, FAKE_TOOLS "/llvm");
    init_raw(test, "/app/main");
    add_image(test, fixture_object(fixture, "libA.so", a, size), 0x1000, 0, 0x1000, 0x1000, "");
}

/* FAKE_LLVM_FIXTURE(): the test's `fixture`, opened on the fake llvm-symbolizer. */
#define FAKE_LLVM_FIXTURE()                                                                        \
    struct fixture fixture;                                                                        \
    fixture_open(&fixture, FAKE_TOOLS "/llvm")

/* WITH_LIB_A(): the test's `fixture` of the fake llvm-symbolizer, `test` (a profile of
 * /app/main with libA.so, its path in `a`) and its `symbols` to come. */
#define WITH_LIB_A()                                                                               \
    struct fixture fixture;                                                                        \
    char a[128];                                                                                   \
    struct test_raw test;                                                                          \
    fixture_with_lib_a(&fixture, &test, a, sizeof a);                                              \
    struct ospx_symbols symbols

static void fixture_and_symbols_close(struct fixture *fixture, struct ospx_symbols *symbols)
{
    ospx_symbols_free(symbols);
    fixture_close(fixture);
}

/* A profile of /app/main with libA.so (text 0x900000, 4 KiB, slide 0x1000) and libB.so (text
 * b_text, b_size bytes, slide 0x2000), stand-in objects of the fixture at paths a and b. */
static void two_libraries(struct fixture *fixture, struct test_raw *test, char *a, char *b,
                          size_t size, uint64_t b_text, uint64_t b_size)
{
    init_raw(test, "/app/main");
    add_image(test, fixture_object(fixture, "libA.so", a, size), 0x10000, 0x1000, 0x900000, 0x1000,
              "");
    add_image(test, fixture_object(fixture, "libB.so", b, size), 0x20000, 0x2000, b_text, b_size,
              "");
}

/* The dyld shared cache case: image A's header is below B's, but A's code is above B's. A pc
 * in A's text must go to A, unslid with A's slide — not to B, the greatest base below it. */
START_TEST(test_text_range_not_header_order)
{
    FAKE_LLVM_FIXTURE();
    char a[128], b[128];
    struct test_raw test;
    two_libraries(&fixture, &test, a, b, sizeof a, 0x800000, 0x1000);
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, 0x900010, 0x800101);

    /* leaf: 0x900010 - 0x1000; caller: 0x800101 - 1 - 0x2000 */
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "libA.so:0x8ff010");
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->image, a);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->file, "/src/libA.so.c");
    ck_assert_int_eq(frame_at(&symbols, 0, 0)->line, 0x8ff010 % 1000 + 1);
    ck_assert_int_eq(frame_at(&symbols, 0, 0)->column, 3);
    ck_assert_uint_eq(frame_at(&symbols, 0, 0)->address, 0x900010);
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->name, "libB.so:0x7fe100");
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->image, b);
    ck_assert_uint_eq(frame_at(&symbols, 0, 1)->address, 0x800101);

    fixture_log_has(&fixture, 1, "--obj=%s\naddress: 0x8ff010\n", a);
    fixture_log_has(&fixture, 1, "--output-style=JSON");
    fixture_log_has(&fixture, 1, "--inlining");
    /* one symbolizer process for both images (starting one costs half a second) */
    char *log = fixture_log(&fixture);
    ck_assert_ptr_null(strstr(strstr(log, "argv:") + 1, "argv:"));
    free(log);
    fixture_warnings(&fixture, 0);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* Two images whose text ranges overlap: a pc in both is the first image's (in the profile's
 * order), one in the second's alone the second's, one past both no image's — as where the
 * ranges are apart, which a binary search over them answers. */
START_TEST(test_overlapping_text_ranges_first_wins)
{
    FAKE_LLVM_FIXTURE();
    char a[128], b[128];
    struct test_raw test;
    two_libraries(&fixture, &test, a, b, sizeof a, 0x8ff000, 0x2000);
    struct ospx_symbols symbols;
    /* leaf in both; callers (one less looked up) in B's alone, then past both */
    SYMBOLIZE(&test, &fixture, &symbols, 0x900010, 0x8ff101, 0x902001);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->image, a);
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->image, b);
    ck_assert_str_eq(frame_at(&symbols, 0, 2)->name, "0x902001");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* The greatest base at or below the pc applies only among images that reported no text
 * range; a pc outside every range and below every such base has no image. */
START_TEST(test_text_size_zero_fallback)
{
    FAKE_LLVM_FIXTURE();
    char c[128], d[128];
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, fixture_object(&fixture, "libC.so", c, sizeof c), 0x500000, 0x500000, 0, 0,
              "");
    add_image(&test, fixture_object(&fixture, "libD.so", d, sizeof d), 0x400000, 0x400000, 0x400000,
              0x10, "");
    uint64_t in_c[] = {0x500100};
    add_stack(&test, in_c, sizeof in_c / sizeof *in_c);
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, 0x450000);

    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "libC.so:0x100");
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->image, c);
    /* D has a range that does not hold the pc, and is no fallback: no image, hex name. */
    ck_assert_str_eq(frame_at(&symbols, 1, 0)->name, "0x450000");
    ck_assert_str_eq(frame_at(&symbols, 1, 0)->image, "");
    ck_assert_str_eq(frame_at(&symbols, 1, 0)->file, "");
    ck_assert_int_eq(frame_at(&symbols, 1, 0)->line, 0);
    fixture_log_has(&fixture, 0, "libD.so");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* The marker of frames a walk deeper than its record left out (proto/osp_unwind_step.h) is one
 * frame "[… N frames]" in no object, even beside an image with no text range (whose fallback
 * takes every pc above its base), and no symbolizer is asked about it. */
START_TEST(test_frames_left_out_marker)
{
    FAKE_LLVM_FIXTURE();
    char c[128];
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, fixture_object(&fixture, "libC.so", c, sizeof c), 0x500000, 0x500000, 0, 0,
              "");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, 0x500100, osp_unwind_left_out_pc(182), 0x500201);
    EXPECT_STACK(&symbols, 0, "libC.so:0x100", "[\u2026 182 frames]", "libC.so:0x200");
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->image, "");
    LOG_LACKS(&fixture, "0x2000000000");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* The leaf is looked up as recorded; every return address one byte back. */
START_TEST(test_return_address_adjustment)
{
    WITH_LIB_A();
    SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x1200, 0x1300);
    EXPECT_STACK(&symbols, 0, "libA.so:0x1100", "libA.so:0x11ff", "libA.so:0x12ff");
    ck_assert_int_eq(symbols.stack_slots[0][1].line, 0x11ff % 1000 + 1);
    fixture_log_has(&fixture, 1, "address: 0x1100\naddress: 0x11ff\naddress: 0x12ff\n");
    LOG_LACKS(&fixture, "0x1200", "0x10ff");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* The profiler's own frames (functions named osp__* or osp_prof_*, anything in the preload
 * library libospreyprof*) are left out at every position, leaf included: a wrapper's time is
 * its caller's, and the shim's start-up is no frame of the program. */
START_TEST(test_profiler_frames_left_out)
{
    struct fixture fixture;
    char a[128], shim[128];
    struct test_raw test;
    fixture_with_lib_a(&fixture, &test, a, sizeof a);
    setenv("OSPREY_FAKE_PLUMBING", "0x11ff", 1);
    add_image(&test, fixture_object(&fixture, "libospreyprof.so", shim, sizeof shim), 0x9000, 0,
              0x9000, 0x1000, "");
    uint64_t through[] = {0x1100, 0x1200, 0x1300};
    uint64_t inside[] = {0x11ff, 0x1300};
    uint64_t wrapper[] = {0x9100, 0x9200, 0x1300}; /* libc call in a shim wrapper, say */
    add_stack(&test, through, 3);
    add_stack(&test, inside, 2);
    add_stack(&test, wrapper, 3);
    struct ospx_symbols symbols;
    run_symbolize(&test, &fixture, &symbols);
    unsetenv("OSPREY_FAKE_PLUMBING");
    EXPECT_STACK(&symbols, 0, "libA.so:0x1100", "libA.so:0x12ff");
    ck_assert_int_eq(symbols.stack_slots[0][1].line, 0x12ff % 1000 + 1);
    EXPECT_STACK(&symbols, 1, "libA.so:0x12ff");
    EXPECT_STACK(&symbols, 2, "libA.so:0x12ff");
    for (size_t f = 0; f < symbols.frame_count; f++)
        ck_assert_msg(strstr(symbols.frames[f].name, "osp") == NULL, "%s", symbols.frames[f].name);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* Linked into the program from the static archive, the shim's frames are in the program's
 * image and its wrappers carry libc's names (`nanosleep`): its own source files give it away. */
START_TEST(test_frames_from_shim_sources_left_out)
{
    FAKE_LLVM_FIXTURE();
    setenv("OSPREY_FAKE_SHIM_ADDRESS", "0x11ff", 1);
    /* as debug info often spells it: through the build directory */
    setenv("OSPREY_FAKE_SHIM_FILE", OSP_TEST_SOURCE_DIR "/../build/../shim/guard.c", 1);
    char a[128];
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, fixture_object(&fixture, "main", a, sizeof a), 0x1000, 0, 0x1000, 0x1000, "");
    struct ospx_symbols symbols; /* leaf, the wrapper, its caller */
    SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x1200, 0x1300);
    unsetenv("OSPREY_FAKE_SHIM_ADDRESS");
    unsetenv("OSPREY_FAKE_SHIM_FILE");
    EXPECT_STACK(&symbols, 0, "main:0x1100", "main:0x12ff");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* An image path from the profile goes to the symbolizer only when it names a regular ELF
 * file: a FIFO (which would block the tool), a device like /dev/zero (which never ends) and a
 * file of another kind get one warning each and hex frames, and the tool never sees them. */
START_TEST(test_only_regular_elf_files_are_symbolized)
{
    FAKE_LLVM_FIXTURE();
    char fifo[160], text[160], good[128];
    snprintf(fifo, sizeof fifo, "%s/pipe.so", fixture.dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    snprintf(text, sizeof text, "%s/notes.so", fixture.dir);
    FILE *file = fopen(text, "w");
    fputs("not an object file at all\n", file);
    fclose(file);
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, fifo, 0x1000, 0, 0x1000, 0x1000, "");
    add_image(&test, "/dev/zero", 0x3000, 0, 0x3000, 0x1000, "");
    add_image(&test, text, 0x5000, 0, 0x5000, 0x1000, "");
    add_image(&test, fixture_object(&fixture, "libA.so", good, sizeof good), 0x7000, 0, 0x7000,
              0x1000, "");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x3100, 0x5100, 0x7100);
    EXPECT_NAMES(&symbols, 0, "pipe.so+0x1100", "zero+0x3100", "notes.so+0x5100", "libA.so:0x70ff");
    const char *warnings = fixture_warnings(&fixture, 3);
    for (const char *const *line =
             (const char *const[]){"pipe.so: not a regular file", "/dev/zero: not a regular file",
                                   "notes.so: not an ELF file", NULL};
         *line != NULL; line++)
        ck_assert_msg(strstr(warnings, *line) != NULL, "no \"%s\" in: %s", *line, warnings);
    LOG_LACKS(&fixture, "pipe.so", "/dev/zero", "notes.so");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* An address with an inlined call becomes two frames, innermost first, each with its own
 * line; equal frames are interned once; every distinct address is asked once. */
START_TEST(test_inline_expansion_and_interning)
{
    WITH_LIB_A();
    setenv("OSPREY_FAKE_INLINE", "0x1100", 1);
    uint64_t first[] = {0x1100, 0x1201};
    add_stack(&test, first, sizeof first / sizeof *first);
    SYMBOLIZE(&test, &fixture, &symbols, 0x1050, 0x1201);

    ck_assert_uint_eq(symbols.stack_count, 2);
    ck_assert_uint_eq(symbols.stack_depths[0], 3);
    expect_frame(&symbols, 0, 0, "inlined_0x1100", "/src/inline.h", 7, 9);
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->name, "libA.so:0x1100");
    ck_assert_int_eq(symbols.stack_slots[0][1].line, 0x1100 % 1000 + 1);
    ck_assert_str_eq(frame_at(&symbols, 0, 2)->name, "libA.so:0x1200");
    ck_assert_uint_eq(symbols.stack_depths[1], 2);
    ck_assert_str_eq(frame_at(&symbols, 1, 0)->name, "libA.so:0x1050");
    /* the shared caller is one frame */
    ck_assert_uint_eq(symbols.stack_slots[0][2].frame, symbols.stack_slots[1][1].frame);
    ck_assert_uint_eq(symbols.frame_count, 4);

    char *log = fixture_log(&fixture);
    const char *once = strstr(log, "address: 0x1200\n");
    ck_assert_ptr_nonnull(once);
    ck_assert_ptr_null(strstr(once + 1, "address: 0x1200\n"));
    /* one process for the image */
    ck_assert_ptr_null(strstr(strstr(log, "argv:") + 1, "argv:"));
    free(log);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* An answer of several levels used by a second stack gives it the same frames and lines as
 * the first (the answer's interned levels, kept with their lines); one of one level too. */
START_TEST(test_inline_answer_reused_with_its_lines)
{
    WITH_LIB_A();
    setenv("OSPREY_FAKE_INLINE", "0x1100", 1);
    uint64_t first[] = {0x1100, 0x1201};
    add_stack(&test, first, sizeof first / sizeof *first);
    SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x1301, 0x1201);

    ck_assert_uint_eq(symbols.stack_depths[0], 3);
    ck_assert_uint_eq(symbols.stack_depths[1], 4);
    for (size_t k = 0; k < 2; k++) {
        ck_assert_uint_eq(symbols.stack_slots[1][k].frame, symbols.stack_slots[0][k].frame);
        ck_assert_int_eq(symbols.stack_slots[1][k].line, symbols.stack_slots[0][k].line);
        ck_assert_uint_eq(symbols.stack_slots[1][k].position, 0);
    }
    ck_assert_int_eq(symbols.stack_slots[1][0].line, 7);
    ck_assert_int_eq(symbols.stack_slots[1][1].line, 0x1100 % 1000 + 1);
    ck_assert_str_eq(frame_at(&symbols, 1, 2)->name, "libA.so:0x1300");
    /* the one-level answer of 0x1201, at another position */
    ck_assert_uint_eq(symbols.stack_slots[1][3].frame, symbols.stack_slots[0][2].frame);
    ck_assert_int_eq(symbols.stack_slots[1][3].line, symbols.stack_slots[0][2].line);
    ck_assert_uint_eq(symbols.stack_slots[1][3].position, 2);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* The answer lines are read without jansson: escapes decode as JSON says (a surrogate pair to
 * one UTF-8 character), a line of another shape still reads (through jansson), and a pc the
 * symbolizer knows nothing about is its own hex frame for each pc, even when a leaf and a
 * return address look up the same address. */
START_TEST(test_answer_lines_read_exactly)
{
    WITH_LIB_A();
    setenv("OSPREY_FAKE_ESCAPED", "0x1100", 1);
    setenv("OSPREY_FAKE_EXTRA", "0x1200", 1);
    setenv("OSPREY_FAKE_UNKNOWN", "0x1300", 1);
    uint64_t first[] = {0x1100, 0x1201, 0x1300};
    add_stack(&test, first, sizeof first / sizeof *first);
    SYMBOLIZE(&test, &fixture, &symbols, 0x1300, 0x1301);
    unsetenv("OSPREY_FAKE_ESCAPED");
    unsetenv("OSPREY_FAKE_EXTRA");
    unsetenv("OSPREY_FAKE_UNKNOWN");

    ck_assert_uint_eq(symbols.stack_depths[0], 3);
    expect_frame(&symbols, 0, 0, "op<< \"q\" \\ \xc3\xa9 \xf0\x9f\x98\x80", "/src/\xc3\xa9.c", 5,
                 2);
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->name, "libA.so:0x1200");
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->file, "/src/libA.so.c");
    /* 0x1300 as a return address looks up 0x12ff; in the second stack, 0x1301 looks up 0x1300
     * like the leaf 0x1300 does, and is still named for itself */
    EXPECT_NAMES(&symbols, 1, "libA.so+0x1300", "libA.so+0x1301");
    ck_assert_uint_ne(symbols.stack_slots[1][0].frame, symbols.stack_slots[1][1].frame);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* --binary stands in for the main image only; another image is read from its own path,
 * and frames keep the recorded image path. */
START_TEST(test_binary_substitutes_main_image_only)
{
    FAKE_LLVM_FIXTURE();
    char main_path[128], moved[128], other[128];
    fixture_object(&fixture, "main", main_path, sizeof main_path);
    fixture_object(&fixture, "moved-main", moved, sizeof moved);
    fixture_object(&fixture, "other.so", other, sizeof other);
    struct test_raw test;
    init_raw(&test, main_path);
    add_image(&test, main_path, 0x1000, 0, 0x1000, 0x1000, "");
    add_image(&test, other, 0x9000, 0, 0x9000, 0x1000, "");
    uint64_t stack[] = {0x9100, 0x1201};
    add_stack(&test, stack, 2);
    fixture.options.binary = moved;
    struct ospx_symbols symbols;
    run_symbolize(&test, &fixture, &symbols);

    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "other.so:0x9100");
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->image, other);
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->name, "moved-main:0x1200");
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->image, main_path);
    fixture_log_has(&fixture, 1, "--obj=%s\n", moved);
    fixture_log_has(&fixture, 1, "--obj=%s\n", other);
    fixture_log_has(&fixture, 0, "--obj=%s\n", main_path);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* Without llvm-symbolizer, atos: pinned to each image's recorded arch, given the recorded
 * path unchanged although no such file exists here, with the load address; its answers
 * parsed into name, file and line; an address atos does not know stays hex. */
START_TEST(test_atos_arch_pinning)
{
    struct fixture fixture;
    fixture_open(&fixture, FAKE_TOOLS "/atos");
    setenv("OSPREY_FAKE_UNKNOWN", "0x180002010", 1);
    struct test_raw test;
    init_raw(&test, "/Users/u/app");
    add_image(&test, "/usr/lib/system/libsystem_kernel.dylib", 0x180000000, 0x100000, 0x180001000,
              0x8000, "arm64e");
    add_image(&test, "/Users/u/app", 0x100000000, 0x0, 0x100004000, 0x4000, "arm64");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, 0x180001100, 0x100004101, 0x180002011);

    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "atos_0x180001100");
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->file, "libsystem_kernel.dylib.c");
    ck_assert_int_eq(frame_at(&symbols, 0, 0)->line, 0x180001100 % 1000 + 1);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->image, "/usr/lib/system/libsystem_kernel.dylib");
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->name, "atos_0x100004100");
    ck_assert_str_eq(frame_at(&symbols, 0, 2)->name, "libsystem_kernel.dylib+0x17ff02011");
    ck_assert_str_eq(frame_at(&symbols, 0, 2)->image, "/usr/lib/system/libsystem_kernel.dylib");

    fixture_log_has(&fixture, 1,
                    "argv: -o /usr/lib/system/libsystem_kernel.dylib -arch arm64e "
                    "-l 0x180000000 0x180001100 0x180002010\n");
    fixture_log_has(&fixture, 1, "argv: -o /Users/u/app -arch arm64 -l 0x100000000 0x100004100\n");
    fixture_warnings(&fixture, 0);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* No symbolizer on PATH, and a profile of /app/main, its text 0x1000 bytes at 0x1000. */
static void no_tool_fixture(struct fixture *fixture, struct test_raw *test)
{
    fixture_open(fixture, "/nonexistent-osprey-test-dir");
    init_raw(test, "/app/main");
    add_image(test, "/app/main", 0x1000, 0, 0x1000, 0x1000, "");
}

/* No tool at all: hex names, the image still named, and exactly one warning line. */
START_TEST(test_no_tool_hex_and_one_warning)
{
    struct fixture fixture;
    struct test_raw test;
    no_tool_fixture(&fixture, &test);
    add_image(&test, "/lib/libz.so", 0x9000, 0, 0x9000, 0x1000, "");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x9201, 0x20000);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "main+0x1100");
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->image, "/app/main");
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->name, "libz.so+0x9201");
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->image, "/lib/libz.so");
    ck_assert_str_eq(frame_at(&symbols, 0, 2)->name, "0x20000");
    ck_assert_str_eq(frame_at(&symbols, 0, 2)->image, "");
    const char *warnings = fixture_warnings(&fixture, 1);
    ck_assert_msg(strncmp(warnings, "osprey: no llvm-symbolizer or atos", 34) == 0, "%s", warnings);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* A pc with the Python pseudo-pc's bit that no Python name covers reads "[py] 0x<code>" only in
 * a process the collector named Python frames of (a code object freed before it was read); in
 * another (bzip2's outermost word past its stack, 0x6964517257384266) it is no frame. */
START_TEST(test_python_mark_only_where_python_ran)
{
    struct fixture fixture;
    struct test_raw test;
    no_tool_fixture(&fixture, &test);
    struct ospx_jit_symbol named = {.start = 0x4000700000001000 - 1,
                                    .size = 2,
                                    .name = "work (/w/a.py:3)",
                                    .process = 1,
                                    .python = true};
    test.raw.jit = &named;
    test.raw.jit_count = 1;
    uint64_t plain[] = {0x1100, 0x6964517257384266};
    uint64_t python[] = {0x4000700000002000, 0x4000700000001000};
    add_stack(&test, plain, 2);
    add_stack(&test, python, 2);
    test.stacks[1].process = 1;
    struct ospx_symbols symbols;
    run_symbolize(&test, &fixture, &symbols);
    EXPECT_STACK(&symbols, 0, "main+0x1100");
    EXPECT_STACK(&symbols, 1, "[py] 0x700000002000", "work (/w/a.py:3) [py]");
    ck_assert_str_eq(frame_at(&symbols, 1, 0)->image, OSPX_PY_IMAGE);
    fixture_warnings(&fixture, 1);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* A return address above every user address space, no kernel frame and no Python frame (a Go
 * program's "gospincg", the strings above main's frame read as its return address) ends the
 * stack there: it and what the walk found past it are no frames. A kernel return address, a
 * leaf pc and a JIT's address are kept. */
START_TEST(test_words_past_the_frames_end_the_stack)
{
    struct fixture fixture;
    struct test_raw test;
    no_tool_fixture(&fixture, &test);
    uint64_t past[] = {0x1100, 0x1200, 0x67636e6970736f67, 0x1300};
    uint64_t kernel[] = {0x6964517257384266, 0xffffffff81000010, 0x7f0000001000, 0x1300};
    uint64_t low[] = {0x1100, 0x7, 0x1200}; /* the first page is never code */
    /* A word with the marker's bit 61 but not its high half: no marker of frames left out
     * (sha512's frame-pointer guesses once read "[… 1086792851 frames]"). */
    uint64_t marked[] = {0x1100, 0x2000abcd40c6d993, 0x1200};
    add_stack(&test, past, 4);
    add_stack(&test, kernel, 4);
    add_stack(&test, low, 3);
    add_stack(&test, marked, 3);
    struct ospx_symbols symbols;
    run_symbolize(&test, &fixture, &symbols);
    EXPECT_STACK(&symbols, 0, "main+0x1100", "main+0x1200");
    EXPECT_STACK(&symbols, 1, "0x6964517257384266", "[k] 0xffffffff81000010", "0x7f0000001000",
                 "main+0x1300");
    EXPECT_STACK(&symbols, 2, "main+0x1100");
    EXPECT_STACK(&symbols, 3, "main+0x1100");
    fixture_warnings(&fixture, 1);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* Go's stack switches (runtime.mcall, runtime.systemstack, runtime.morestack, ".abi0" or not)
 * end a stack as Go's own traceback ends there: past one on a g0 stack are the words above it
 * (runtime.newproc.abi0, then &runtime.g0 as a return address). */
START_TEST(test_go_stack_switches_end_the_stack)
{
    static const char *const switches[] = {"runtime.mcall", "runtime.systemstack.abi0",
                                           "runtime.morestack.abi0", "time.now",
                                           "runtime.nanotime1.abi0"};
    for (size_t i = 0; i < sizeof switches / sizeof *switches; i++) {
        WITH_LIB_A();
        char rename[64];
        snprintf(rename, sizeof rename, "0x11ff %s", switches[i]);
        setenv("OSPREY_FAKE_RENAME", rename, 1);
        SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x1200, 0x1300, 0x1400);
        EXPECT_STACK(&symbols, 0, "libA.so:0x1100", switches[i]);
        fixture_and_symbols_close(&fixture, &symbols);
    }
}
END_TEST

/* A leaf at Go's runtime.asyncPreempt is the preempted code's sample (Go pushed its pc and
 * resumed there; our signal came at that handler's return): left out, its caller the leaf. */
START_TEST(test_go_async_preempt_leaf_is_its_callers)
{
    WITH_LIB_A();
    setenv("OSPREY_FAKE_RENAME", "0x1100 runtime.asyncPreempt.abi0", 1);
    SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x1200, 0x1300);
    EXPECT_STACK(&symbols, 0, "libA.so:0x11ff", "libA.so:0x12ff");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* llvm-symbolizer present, objects missing: the tool is not asked about them, their frames
 * are hex, and one warning line covers them all. A pseudo image ([vdso]) is not warned of. */
START_TEST(test_missing_objects_one_warning)
{
    FAKE_LLVM_FIXTURE();
    char a[128];
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, "/nonexistent/one.so", 0x1000, 0, 0x1000, 0x1000, "");
    add_image(&test, "/nonexistent/two.so", 0x3000, 0, 0x3000, 0x1000, "");
    add_image(&test, "[vdso]", 0x5000, 0, 0x5000, 0x1000, "");
    add_image(&test, fixture_object(&fixture, "libA.so", a, sizeof a), 0x9000, 0, 0x9000, 0x1000,
              "");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x3201, 0x5001, 0x9101);
    EXPECT_NAMES(&symbols, 0, "one.so+0x1100", "two.so+0x3201", "[vdso]+0x5001");
    ck_assert_str_eq(frame_at(&symbols, 0, 2)->image, "[vdso]");
    ck_assert_str_eq(frame_at(&symbols, 0, 3)->name, "libA.so:0x9100");
    const char *warnings = fixture_warnings(&fixture, 1);
    ck_assert_str_eq(warnings, "osprey: 2 object files not found (first: /nonexistent/one.so); "
                               "their frames are shown as object+0xOFFSET (--binary or --symfs "
                               "DIR finds a moved one)\n");
    LOG_LACKS(&fixture, "nonexistent", "vdso");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* A symbolizer that dies, or answers with something that is not its JSON, costs the names of
 * the addresses it did not answer — hex, with one warning line — and nothing else. */
START_TEST(test_tool_failure_mid_image)
{
    for (int garbage = 0; garbage <= 1; garbage++) {
        struct fixture fixture;
        char a[128];
        struct test_raw test;
        fixture_with_lib_a(&fixture, &test, a, sizeof a);
        setenv(garbage ? "OSPREY_FAKE_GARBAGE" : "OSPREY_FAKE_EXIT_AFTER", garbage ? "0x1200" : "1",
               1);
        setenv("OSPREY_FAKE_UNKNOWN", "0x1100", 1);
        struct ospx_symbols symbols;
        SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x1201, 0x1301);
        /* 0x1100: answered, but nothing known */
        ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "libA.so+0x1100");
        ck_assert_str_eq(frame_at(&symbols, 0, 0)->image, a);
        ck_assert_str_eq(frame_at(&symbols, 0, 1)->name, "libA.so+0x1201");
        ck_assert_str_eq(frame_at(&symbols, 0, 2)->name, "libA.so+0x1301");
        const char *warnings = fixture_warnings(&fixture, 1);
        char expected[512];
        snprintf(expected, sizeof expected, "osprey: %s: %s; 2 addresses stay hex\n", a,
                 garbage ? "unexpected answer from the symbolizer" : "the symbolizer exited early");
        ck_assert_str_eq(warnings, expected);
        fixture_and_symbols_close(&fixture, &symbols);
    }
}
END_TEST

/* options->symbolizer names the tool to run, whatever PATH holds. */
START_TEST(test_explicit_symbolizer)
{
    struct fixture fixture;
    fixture_open(&fixture, "/nonexistent-osprey-test-dir");
    fixture.options.symbolizer = FAKE_TOOLS "/llvm/llvm-symbolizer";
    char a[128];
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, fixture_object(&fixture, "libA.so", a, sizeof a), 0x1000, 0, 0x1000, 0x1000,
              "");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, 0x1100);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "libA.so:0x1100");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* ---- the real llvm-symbolizer ---- */

/* Run a shell command and return the first line of its output (malloc'd), or NULL. */
static char *command_output(const char *command)
{
    FILE *pipe = popen(command, "r");
    ck_assert_ptr_nonnull(pipe);
    char line[1024];
    char *result = fgets(line, sizeof line, pipe) != NULL ? strdup(line) : NULL;
    pclose(pipe);
    if (result != NULL)
        result[strcspn(result, "\n")] = '\0';
    return result;
}

/* The address of a symbol in an ELF file, from nm. */
static uint64_t symbol_address(const char *object, const char *symbol)
{
    char command[1024];
    snprintf(command, sizeof command, "nm '%s' | awk '$3 == \"%s\" { print $1 }'", object, symbol);
    char *output = command_output(command);
    ck_assert_msg(output != NULL, "no %s in %s", symbol, object);
    uint64_t address = strtoull(output, NULL, 16);
    free(output);
    return address;
}

static const char known_program[] = "#include <stdio.h>\n"                           /* 1 */
                                    "\n"                                             /* 2 */
                                    "__attribute__((noinline)) int\n"                /* 3 */
                                    "known_function(int x)\n"                        /* 4 */
                                    "{\n"                                            /* 5 */
                                    "    return x * 7 + 1;\n"                        /* 6 */
                                    "}\n"                                            /* 7 */
                                    "\n"                                             /* 8 */
                                    "int main(int argc, char **argv)\n"              /* 9 */
                                    "{\n"                                            /* 10 */
                                    "    (void)argv;\n"                              /* 11 */
                                    "    printf(\"%d\\n\", known_function(argc));\n" /* 12 */
                                    "    return 0;\n"                                /* 13 */
                                    "}\n";

/* A program compiled here with clang -g: its function is named with file and line, through
 * a slide, with the real tool found on PATH. */
START_TEST(test_real_llvm_symbolizer)
{
    struct fixture fixture;
    fixture_open_real(&fixture);
    char source[128], program[128], command[512];
    snprintf(source, sizeof source, "%s/known.c", fixture.dir);
    snprintf(program, sizeof program, "%s/known", fixture.dir);
    scratch_write(source, known_program);
    snprintf(command, sizeof command, "clang -g -O0 -o '%s' '%s'", program, source);
    ck_assert_int_eq(system(command), 0);
    uint64_t function = symbol_address(program, "known_function");
    uint64_t slide = 0x555555554000ULL;

    struct test_raw test;
    init_raw(&test, program);
    add_image(&test, program, slide, slide, slide + (function & ~0xfffULL), 0x2000, "x86_64");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, slide + function);
    const struct ospx_frame *frame = frame_at(&symbols, 0, 0);
    ck_assert_str_eq(frame->name, "known_function");
    ck_assert_str_eq(frame->file, source);
    ck_assert_int_eq(frame->line, 5);
    ck_assert_str_eq(frame->image, program);
    fixture_warnings(&fixture, 0);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* A shared library whose debug information was split off (objcopy --only-keep-debug, strip,
 * --add-gnu-debuglink): its static function is named from the .debug file beside it, and
 * without that file by its start address. */
START_TEST(test_split_debug_info)
{
    struct fixture fixture;
    fixture_open_real(&fixture);
    char source[128], library[128], debug[128], command[1024];
    snprintf(source, sizeof source, "%s/split.c", fixture.dir);
    snprintf(library, sizeof library, "%s/libsplit.so", fixture.dir);
    snprintf(debug, sizeof debug, "%s/libsplit.so.debug", fixture.dir);
    scratch_write(source, "static int __attribute__((noinline)) hidden_helper(int x)\n"
                          "{\n"
                          "    return x * 3 + 1;\n"
                          "}\n"
                          "int exported_entry(int x) { return hidden_helper(x) + 2; }\n");
    snprintf(command, sizeof command,
             "cd '%s' && cc -g -O1 -fPIC -shared -o libsplit.so split.c && "
             "objcopy --only-keep-debug libsplit.so libsplit.so.debug && "
             "strip --strip-all libsplit.so && "
             "objcopy --add-gnu-debuglink=libsplit.so.debug libsplit.so",
             fixture.dir);
    ck_assert_int_eq(system(command), 0);
    uint64_t helper = symbol_address(debug, "hidden_helper");
    /* stripped: the object alone does not know the name */
    snprintf(command, sizeof command, "nm '%s' 2>/dev/null | grep -c hidden_helper", library);
    char *count = command_output(command);
    ck_assert_str_eq(count, "0");
    free(count);

    uint64_t base = 0x7f0000000000ULL;
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, library, base, base, base + (helper & ~0xfffULL), 0x1000, "x86_64");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, base + helper);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "hidden_helper");
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->file, source);
    /* lines 1-3 are the function; which one its first instruction carries is the
     * compiler's choice */
    ck_assert_int_ge(frame_at(&symbols, 0, 0)->line, 1);
    ck_assert_int_le(frame_at(&symbols, 0, 0)->line, 3);
    ospx_symbols_free(&symbols);

    /* Without it, the helper's code is named by the function's start, from the object's
     * unwind tables: every pc of it is one function (as a named one would be). */
    ck_assert_int_eq(unlink(debug), 0);
    uint64_t inside[] = {base + helper + 2};
    add_stack(&test, inside, 1);
    run_symbolize(&test, &fixture, &symbols);
    char start[64];
    snprintf(start, sizeof start, "libsplit.so+0x%" PRIx64, helper);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, start);
    ck_assert_str_eq(frame_at(&symbols, 1, 0)->name, start);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* A stripped program (Debian's unbound, memcached): its entry point is the C runtime's
 * `_start`, the outermost frame of its main thread, named so as an unstripped one is; its
 * other local functions keep their starts, and a library's e_entry names nothing. */
START_TEST(test_stripped_program_entry_is_start)
{
    struct fixture fixture;
    fixture_open_real(&fixture);
    char source[128], program[128], command[1024];
    snprintf(source, sizeof source, "%s/entry.c", fixture.dir);
    snprintf(program, sizeof program, "%s/entry", fixture.dir);
    scratch_write(source, "static int __attribute__((noinline)) helper(int x) { return x * 3; }\n"
                          "int main(int argc, char **argv) { (void)argv; return helper(argc); }\n");
    snprintf(command, sizeof command,
             "cd '%s' && cc -O1 -o entry entry.c && cp entry entry.unstripped && "
             "strip --strip-all entry && cc -O1 -fPIC -shared -o libentry.so entry.c && "
             "strip --strip-all libentry.so",
             fixture.dir);
    ck_assert_int_eq(system(command), 0);
    snprintf(command, sizeof command, "readelf -h '%s' | awk '/Entry point/ { print $4 }'",
             program);
    char *entry_text = command_output(command);
    uint64_t entry = strtoull(entry_text, NULL, 16);
    free(entry_text);
    snprintf(command, sizeof command, "%s.unstripped", program);
    uint64_t helper = symbol_address(command, "helper");
    ck_assert_uint_ne(entry, 0);
    ck_assert_uint_ne(helper, 0);

    uint64_t base = 0x555555554000ULL, library_base = 0x7f0000000000ULL;
    struct test_raw test;
    init_raw(&test, program);
    add_image(&test, program, base, base, base, 0x100000, "x86_64");
    char library[128];
    snprintf(library, sizeof library, "%s/libentry.so", fixture.dir);
    add_image(&test, library, library_base, library_base, library_base, 0x100000, "x86_64");
    /* helper, then _start's return address from __libc_start_main's call: a caller's pc. */
    uint64_t pcs[] = {base + helper + 1, base + entry + 0x10};
    add_stack(&test, pcs, 2);
    /* The library's own e_entry (0 for one built so) is no _start. */
    snprintf(command, sizeof command, "readelf -h '%s' | awk '/Entry point/ { print $4 }'",
             library);
    entry_text = command_output(command);
    uint64_t library_entry = strtoull(entry_text, NULL, 16);
    free(entry_text);
    uint64_t in_library[] = {library_base + library_entry + 1};
    add_stack(&test, in_library, 1);
    struct ospx_symbols symbols;
    run_symbolize(&test, &fixture, &symbols);
    char helper_name[64];
    snprintf(helper_name, sizeof helper_name, "entry+0x%" PRIx64, helper);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, helper_name);
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->name, "_start");
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->image, program);
    ck_assert_str_ne(frame_at(&symbols, 1, 0)->name, "_start");
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* llvm-symbolizer's own answer's function name for `address` of `object` ("" when none). */
static char *real_tool_name(const char *object, uint64_t address)
{
    char command[1024];
    snprintf(command, sizeof command,
             "printf '\"%%s\" 0x%%x\\n' '%s' %" PRIu64 " | llvm-symbolizer --output-style=JSON "
             "--inlining --functions=linkage --demangle | "
             "sed -n 's/.*\"FunctionName\":\"\\([^\"]*\\)\".*/\\1/p'",
             object, address);
    char *name = command_output(command);
    return name != NULL ? name : strdup("");
}

/* An object without debug information is named from its dynamic symbol table in this process,
 * as llvm-symbolizer names it (here: checked against the real tool's answers, of a zero-size
 * symbol written in assembly, two aliases of one function, and an address past a function's
 * end): the tool (a fake one here) is asked only of the addresses whose name it would demangle. */
START_TEST(test_symbol_table_names_without_the_tool)
{
    char dir[64] = "/tmp/osprey-test-symtab-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char source[128], library[160], command[1024];
    snprintf(source, sizeof source, "%s/table.c", dir);
    snprintf(library, sizeof library, "%s/libtable.so", dir);
    scratch_write(source, "int plain_one(int x) { return x * 3 + 1; }\n"
                          "int plain_two(int x) { return x * 5 + 2; }\n"
                          "int alias_of_two(int x) __attribute__((alias(\"plain_two\")));\n"
                          "int mangled(int x) __asm__(\"_Z7mangledi\");\n"
                          "int mangled(int x) { return x * 7 + 3; }\n"
                          "__asm__(\".text\\n.globl bare_entry\\nbare_entry:\\n"
                          "nop\\nnop\\nnop\\nret\\n\");\n");
    snprintf(command, sizeof command,
             "cd '%s' && cc -O1 -fPIC -shared -o libtable.so table.c && "
             "strip --strip-all libtable.so",
             dir);
    ck_assert_int_eq(system(command), 0);
    const char *symbols_wanted[] = {"plain_one", "plain_two", "bare_entry", "_Z7mangledi"};
    uint64_t at[4];
    for (size_t i = 0; i < 4; i++) {
        snprintf(command, sizeof command, "nm -D '%s' | awk '$3 == \"%s\" { print $1 }'", library,
                 symbols_wanted[i]);
        char *text = command_output(command);
        ck_assert_msg(text != NULL, "no %s in %s", symbols_wanted[i], library);
        at[i] = strtoull(text, NULL, 16);
        free(text);
    }
    /* leaf first (its pc as it is), then return addresses (one less is looked up) */
    uint64_t addresses[] = {at[0] + 1, at[1] + 2, at[2] + 3, at[3] + 2};
    char *expected[4];
    for (size_t i = 0; i < 4; i++)
        expected[i] = real_tool_name(library, addresses[i]);
    ck_assert_str_eq(expected[3], "mangled(int)");

    FAKE_LLVM_FIXTURE();
    uint64_t base = 0x7f0000000000ULL;
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, library, base, base, base, 0x100000, "x86_64");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, base + addresses[0], base + addresses[1] + 1,
              base + addresses[2] + 1, base + addresses[3] + 1);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_str_ne(expected[i], "");
        ck_assert_str_eq(frame_at(&symbols, 0, i)->name, expected[i]);
        ck_assert_str_eq(frame_at(&symbols, 0, i)->file, "");
        fixture_log_has(&fixture, 0, "address: 0x%" PRIx64 "\n", addresses[i]);
    }
    /* the mangled name is the tool's: the fake's made-up answer */
    char fake[64];
    snprintf(fake, sizeof fake, "libtable.so:0x%" PRIx64, addresses[3]);
    ck_assert_str_eq(frame_at(&symbols, 0, 3)->name, fake);
    fixture_log_has(&fixture, 1, "address: 0x%" PRIx64 "\n", addresses[3]);
    for (size_t i = 0; i < 4; i++)
        free(expected[i]);
    fixture_and_symbols_close(&fixture, &symbols);
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(command), 0);
}
END_TEST

/* The C library's internal functions, named from Debian's libc6-dbg through the build-id
 * tree in /usr/lib/debug. Skipped where that package is not installed. */
START_TEST(test_libc_debug_by_build_id)
{
    const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
    char *build_id = command_output(
        "readelf -n /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null | awk '/Build ID/ { print $3 }'");
    char debug[256] = "";
    if (build_id != NULL && strlen(build_id) > 2)
        snprintf(debug, sizeof debug, "/usr/lib/debug/.build-id/%.2s/%s.debug", build_id,
                 build_id + 2);
    free(build_id);
    if (debug[0] == '\0' || access(debug, R_OK) != 0)
        return; /* no libc6-dbg here: nothing to check */
    struct fixture fixture;
    fixture_open_real(&fixture);
    uint64_t cleanup = symbol_address(debug, "_IO_cleanup");
    uint64_t base = 0x7f1000000000ULL;
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, libc, base, base, base, 0x1000000, "x86_64");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, base + cleanup + 1);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "_IO_cleanup");
    ck_assert_int_gt(frame_at(&symbols, 0, 0)->line, 0);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* The running kernel's vDSO ([vdso]: no file on disk) is named from a copy of this process's
 * own, when the profile was recorded since boot and the executable span matches; a profile
 * from before this boot keeps hex addresses (another kernel's vDSO may differ). */
START_TEST(test_real_vdso)
{
    const unsigned char *vdso = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (vdso == NULL)
        return; /* no vDSO on this machine: nothing to name */
    const ElfW(Ehdr) *header = (const ElfW(Ehdr) *)vdso;
    const ElfW(Phdr) *segments = (const ElfW(Phdr) *)(vdso + header->e_phoff);
    uint64_t text_lo = UINT64_MAX, text_hi = 0;
    for (int i = 0; i < header->e_phnum; i++) {
        if (segments[i].p_type != PT_LOAD || (segments[i].p_flags & PF_X) == 0)
            continue;
        if (segments[i].p_vaddr < text_lo)
            text_lo = segments[i].p_vaddr;
        if (segments[i].p_vaddr + segments[i].p_memsz > text_hi)
            text_hi = segments[i].p_vaddr + segments[i].p_memsz;
    }
    ck_assert_uint_ne(text_lo, UINT64_MAX);
    struct fixture fixture;
    fixture_open_real(&fixture);
    uint64_t base = (uint64_t)(uintptr_t)vdso;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (int recent = 1; recent >= 0; recent--) {
        struct test_raw test;
        init_raw(&test, "/app/main");
        test.raw.start_unix_ns = recent ? (uint64_t)now.tv_sec * 1000000000u : 0;
        add_image(&test, "[vdso]", base, base, base + text_lo, text_hi - text_lo, "");
        /* the middle of the text: inside one of its functions */
        struct ospx_symbols symbols;
        SYMBOLIZE(&test, &fixture, &symbols, base + text_lo + (text_hi - text_lo) / 2);
        const struct ospx_frame *frame = frame_at(&symbols, 0, 0);
        ck_assert_str_eq(frame->image, "[vdso]");
        if (recent)
            ck_assert_msg(strstr(frame->name, "+0x") == NULL, "vdso frame: %s", frame->name);
        else
            ck_assert_msg(strncmp(frame->name, "[vdso]+0x", 9) == 0, "vdso frame: %s", frame->name);
        fixture_warnings(&fixture, 0);
        ospx_symbols_free(&symbols);
    }
    fixture_close(&fixture);
}
END_TEST

/* An object llvm-symbolizer cannot read: hex names and one warning naming it and the reason. */
START_TEST(test_real_unreadable_object)
{
    struct fixture fixture;
    fixture_open_real(&fixture);
    char object[128];
    snprintf(object, sizeof object, "%s/not-an-object.so", fixture.dir);
    scratch_write(object, "this is text, not ELF\n");
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, object, 0x1000, 0, 0x1000, 0x1000, "x86_64");
    struct ospx_symbols symbols;
    SYMBOLIZE(&test, &fixture, &symbols, 0x1100, 0x1201);
    EXPECT_NAMES(&symbols, 0, "not-an-object.so+0x1100", "not-an-object.so+0x1201");
    ck_assert_str_eq(frame_at(&symbols, 0, 1)->image, object);
    const char *warnings = fixture_warnings(&fixture, 1);
    char expected[256];
    snprintf(expected, sizeof expected, "osprey: %s: ", object);
    ck_assert_msg(strncmp(warnings, expected, strlen(expected)) == 0, "%s", warnings);
    ck_assert_msg(strstr(warnings, "frames are shown as hex addresses") != NULL, "%s", warnings);
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* ---- this process's own stack, described the way ospreyd describes a target ---- */

struct own_images {
    struct test_raw *test;
    char paths[4][PATH_MAX];
};

/* One loaded object as an images entry: base = the ELF load base, slide = the load bias,
 * text/text_size = the span of the executable PT_LOAD segments. */
static int add_own_image(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct own_images *own = data;
    struct test_raw *test = own->test;
    if (test->raw.image_count == 4)
        return 1;
    uint64_t lowest = UINT64_MAX, text_start = UINT64_MAX, text_end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type != PT_LOAD)
            continue;
        if (header->p_vaddr < lowest)
            lowest = header->p_vaddr;
        if (header->p_flags & PF_X) {
            if (header->p_vaddr < text_start)
                text_start = header->p_vaddr;
            if (header->p_vaddr + header->p_memsz > text_end)
                text_end = header->p_vaddr + header->p_memsz;
        }
    }
    if (text_end == 0)
        return 0;
    char *path = own->paths[test->raw.image_count];
    if (info->dlpi_name[0] == '\0') {
        ssize_t length = readlink("/proc/self/exe", path, PATH_MAX - 1);
        ck_assert_int_gt(length, 0);
        path[length] = '\0';
    } else {
        snprintf(path, PATH_MAX, "%s", info->dlpi_name);
    }
    add_image(test, path, info->dlpi_addr + lowest, info->dlpi_addr, info->dlpi_addr + text_start,
              text_end - text_start, "x86_64");
    return 0;
}

/* Read at run time, so the compiler cannot specialise capture_stack_here into a clone with
 * another name. */
static volatile size_t capture_capacity = 32;
/* Written by capture_stack_here, so that its call is a statement of its own whose next
 * instruction belongs to the next line: unadjusted, the return address names that line. */
static volatile size_t captured_depth;
static uint64_t captured_pcs[32];

/* The return addresses above this call, leaf first, as a frame-pointer walk would record. */
static __attribute__((noinline)) void capture_stack_here(size_t capacity)
{
    void *frames[32];
    int depth = backtrace(frames, 32);
    size_t count = 0;
    for (int i = 0; i < depth && count < capacity && count < 32; i++)
        captured_pcs[count++] = (uint64_t)(uintptr_t)frames[i];
    captured_depth = count;
}

/* This test's own stack, captured live with a load bias, symbolized with the real tool:
 * the caller's frame is this function, at the line of the call (the return address moved
 * back into the call instruction), in this file. */
START_TEST(test_real_own_stack)
{
    struct fixture fixture;
    fixture_open_real(&fixture);
    int call_line = __LINE__ + 1;
    capture_stack_here(capture_capacity);
    size_t depth = captured_depth;
    ck_assert_uint_ge(depth, 2);

    struct test_raw test;
    struct own_images own = {.test = &test};
    init_raw(&test, "");
    dl_iterate_phdr(add_own_image, &own);
    test.raw.exe = own.paths[0];
    add_stack(&test, captured_pcs, depth);
    struct ospx_symbols symbols;
    run_symbolize(&test, &fixture, &symbols);
    ck_assert_str_eq(frame_at(&symbols, 0, 0)->name, "capture_stack_here");
    const struct ospx_frame *caller = frame_at(&symbols, 0, 1);
    ck_assert_str_eq(caller->name, "test_real_own_stack_fn");
    ck_assert_str_eq(caller->image, own.paths[0]);
    /* A build without -g (buildtype=release) has symbols but no line table to check. */
    if (caller->line != 0) {
        const char *file = strrchr(caller->file, '/');
        ck_assert_str_eq(file != NULL ? file + 1 : caller->file, "test-symbolize.c");
        ck_assert_int_eq(symbols.stack_slots[0][1].line, call_line);
    }
    fixture_and_symbols_close(&fixture, &symbols);
}
END_TEST

/* Symbolize a two-address profile with the fixture's options and return what went to stderr
 * (malloc'd). */
static char *stderr_of_symbolizing(struct fixture *fixture)
{
    char a[128], captured[128];
    struct test_raw test;
    init_raw(&test, "/app/main");
    add_image(&test, fixture_object(fixture, "libA.so", a, sizeof a), 0x1000, 0, 0x1000, 0x1000,
              "");
    uint64_t stack[] = {0x1100, 0x1201};
    add_stack(&test, stack, 2);
    snprintf(captured, sizeof captured, "%s/stderr", fixture->dir);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    ck_assert(freopen(captured, "w", stderr) != NULL);
    struct ospx_symbols symbols;
    struct ospx_error err;
    memset(&err, 0, sizeof err);
    int rc = ospx_symbolize(&test.raw, &fixture->options, &symbols, &err);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ck_assert_int_eq(rc, 0);
    ospx_symbols_free(&symbols);
    FILE *file = fopen(captured, "r");
    ck_assert_ptr_nonnull(file);
    char *text = calloc(1, 512);
    size_t got = fread(text, 1, 511, file);
    text[got] = '\0';
    fclose(file);
    return text;
}

/* Progress goes to stderr only when asked for, and is cleared at the end. */
START_TEST(test_progress_only_when_asked)
{
    for (int progress = 0; progress <= 1; progress++) {
        struct fixture fixture;
        fixture_open(&fixture, FAKE_TOOLS "/llvm");
        fixture.options.progress = progress;
        fixture.options.progress_delay_ms = -1; /* at once: this one takes milliseconds */
        char *text = stderr_of_symbolizing(&fixture);
        size_t got = strlen(text);
        if (progress) {
            ck_assert_msg(strstr(text, "\rosprey: symbolizing 2/2 addresses") != NULL, "%s", text);
            ck_assert_msg(got >= 4 && strcmp(text + got - 4, "\r\033[K") == 0, "not cleared");
        } else {
            ck_assert_uint_eq(got, 0);
        }
        free(text);
        fixture_close(&fixture);
    }
}
END_TEST

/* With the default delay, a symbolization that takes milliseconds says nothing. */
START_TEST(test_no_progress_for_a_quick_run)
{
    FAKE_LLVM_FIXTURE();
    fixture.options.progress = 1;
    char *text = stderr_of_symbolizing(&fixture);
    ck_assert_str_eq(text, "");
    free(text);
    fixture_close(&fixture);
}
END_TEST

/* Which object describes an image (objects.c), with this test's own executable as the object
 * that ran: by the recorded path when its build id agrees; else by build id in a --symfs
 * directory (DIR/<id>/NAME, DIR/.build-id/xx/rest) or by name (DIR/NAME); never a file of
 * another build, which is only named (mismatched); and, without a build id in the profile, the
 * recorded path as before. */
START_TEST(test_objects_found_by_build_id_only)
{
    char self[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(length, 0);
    self[length] = '\0';
    struct ospc_elf_identity identity;
    ck_assert_int_eq(ospc_elf_identity(self, &identity, NULL, 0), 0);
    ck_assert_str_ne(identity.build_id, "");
    char dir[] = "/tmp/osprey-objects.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    setenv("OSPREY_BUILDID_CACHE", dir, 1); /* an empty cache: only --symfs can find it */

    struct test_raw test;
    init_raw(&test, "/gone/test-symbolize");
    add_image(&test, "/gone/test-symbolize", 0x1000, 0, 0x1000, 0x1000, "");
    test.images[0].build_id = identity.build_id;
    struct ospx__object object;
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, NULL, NULL, 0, &object), 0);
    ck_assert_str_eq(object.path, "/gone/test-symbolize"); /* missing: reported as missing */
    ck_assert_ptr_null(object.mismatched);
    ospx__object_free(&object);

    char path[PATH_MAX + 300], symfs[PATH_MAX + 64];
    snprintf(symfs, sizeof symfs, "%s/symfs", dir);
    /* DIR/<id>/NAME */
    snprintf(path, sizeof path, "%s/%s", symfs, identity.build_id);
    ck_assert_int_eq(ospc_make_directories(path, 0755), 0);
    snprintf(path, sizeof path, "%s/%s/test-symbolize", symfs, identity.build_id);
    ck_assert_int_eq(ospc_copy_file(self, path), 0);
    char list[sizeof symfs + 16];
    snprintf(list, sizeof list, "/nonexistent:%s", symfs);
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, NULL, list, 0, &object), 0);
    ck_assert_str_eq(object.path, path);
    ospx__object_free(&object);
    unlink(path);
    /* DIR/.build-id/xx/rest */
    snprintf(path, sizeof path, "%s/.build-id/%.2s", symfs, identity.build_id);
    ck_assert_int_eq(ospc_make_directories(path, 0755), 0);
    snprintf(path, sizeof path, "%s/.build-id/%.2s/%s", symfs, identity.build_id,
             identity.build_id + 2);
    ck_assert_int_eq(ospc_copy_file(self, path), 0);
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, NULL, symfs, 0, &object), 0);
    ck_assert_str_eq(object.path, path);
    ospx__object_free(&object);
    unlink(path);
    /* DIR/NAME, its build id checked: another object of that name is not it */
    snprintf(path, sizeof path, "%s/test-symbolize", symfs);
    ck_assert_int_eq(ospc_copy_file("/bin/sh", path), 0);
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, NULL, symfs, 0, &object), 0);
    ck_assert_str_eq(object.path, "/gone/test-symbolize");
    ospx__object_free(&object);
    ck_assert_int_eq(ospc_copy_file(self, path), 0);
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, NULL, symfs, 0, &object), 0);
    ck_assert_str_eq(object.path, path);
    ospx__object_free(&object);

    /* At the recorded path, another build: named, never used */
    char other[PATH_MAX + 64];
    snprintf(other, sizeof other, "%s/rebuilt", dir);
    ck_assert_int_eq(ospc_copy_file("/bin/sh", other), 0);
    test.images[0].path = other;
    test.raw.exe = other;
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, NULL, NULL, 0, &object), 0);
    ck_assert_ptr_null(object.path);
    ck_assert_str_eq(object.mismatched, other);
    ck_assert_str_ne(object.mismatched_id, identity.build_id);
    ospx__object_free(&object);
    /* ... unless asked (--ignore-build-id): then used, and said to be another build */
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, NULL, NULL, 1, &object), 0);
    ck_assert_str_eq(object.path, other);
    ck_assert_int_eq(object.other_build, 1);
    ospx__object_free(&object);
    /* ... nor --binary of another build; the right one is taken */
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, "/bin/sh", NULL, 0, &object), 0);
    ck_assert_ptr_null(object.path);
    ospx__object_free(&object);
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, self, NULL, 0, &object), 0);
    ck_assert_str_eq(object.path, self);
    ospx__object_free(&object);
    /* the cache, last */
    ck_assert_int_eq(ospc_cache_add(self, identity.build_id), 0);
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, NULL, NULL, 0, &object), 0);
    ck_assert_ptr_nonnull(object.path);
    ck_assert_ptr_nonnull(strstr(object.path, identity.build_id));
    ospx__object_free(&object);

    /* No build id in the profile: the recorded path, whatever it holds, as before */
    test.images[0].build_id = NULL;
    ck_assert_int_eq(ospx__find_object(&test.raw, 0, NULL, NULL, 0, &object), 0);
    ck_assert_str_eq(object.path, other);
    ospx__object_free(&object);

    unsetenv("OSPREY_BUILDID_CACHE");
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(command), 0);
}
END_TEST

/* Names as their authors wrote them: a Rust legacy symbol as rustc-demangle prints it (no
 * hash, no escapes), an OCaml one as perf prints it; anything else as the demangler gave it. */
START_TEST(test_rust_legacy_names_as_rustc_prints_them)
{
    static const char *const cases[][2] = {
        {"rusty::churn::churn::h52f7c96816b1231b", "rusty::churn::churn"},
        {"rusty::main::_$u7b$$u7b$closure$u7d$$u7d$::h004013894672dc6a",
         "rusty::main::{{closure}}"},
        {"_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$::drop::"
         "h0123456789abcdef",
         "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop"},
        {"core::ops::function::FnOnce::call_once$u7b$$u7b$vtable.shim$u7d$$u7d$::h0123456789abcdef",
         "core::ops::function::FnOnce::call_once{{vtable.shim}}"},
        /* renamed by link-time optimization: the suffix goes with the hash, as rustc-demangle
         * drops it (Debian's Rust 1.63 standard library has such names) */
        {"std::rt::lang_start::_$u7b$$u7b$closure$u7d$$u7d$::h4f5c4a3e8b86da84 "
         "(.llvm.1935446563477025507)",
         "std::rt::lang_start::{{closure}}"},
        {"foo(int) (.llvm.123)", "foo(int) (.llvm.123)"},
        /* not a rustc hash: left alone */
        {"ns::h0123", "ns::h0123"},
        {"h0123456789abcdef", "h0123456789abcdef"},
        {"std::vector<int, std::allocator<int> >::push_back(int const&)",
         "std::vector<int, std::allocator<int> >::push_back(int const&)"},
        {"a::$bogus$::h0123456789abcdef", "a::$bogus$"},
        {"main", "main"},
        /* OCaml native symbols, as perf's demangler writes them; its C runtime's names kept */
        {"camlStdlib__Hashtbl__find_996", "Stdlib.Hashtbl.find_996"},
        {"camlSpin__collatz_81", "Spin.collatz_81"},
        {"camlSpin__fun_1234", "Spin.fun_1234"},
        {"camlStdlib__$5e_136", "Stdlib.^_136"},
        {"camlSpin__entry", "Spin.entry"},
        {"caml_c_call", "caml_c_call"},
        {"caml_page_table_lookup", "caml_page_table_lookup"},
        {"camlfoo(int)", "camlfoo(int)"},
        {"camlX::y::h0123456789abcdef", "camlX::y"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s", cases[i][0]);
        ospx__name_as_written(name);
        ck_assert_str_eq(name, cases[i][1]);
    }
}
END_TEST

/* A name llvm-symbolizer 14 leaves mangled is demangled as c++filt does; others are not
 * touched. */
START_TEST(test_leftover_mangled_names)
{
    void *runtime = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (runtime == NULL)
        return; /* no C++ runtime here (a cross-built suite under qemu): nothing to load */
    dlclose(runtime);
    char *name = ospx__demangle_leftover("_ZSt9__fill_a1IPiiEN9__gnu_cxx11__enable_ifIXsrSt11__"
                                         "is_scalarIT0_E7__valueEvE6__typeET_S8_RKS4_");
    ck_assert_ptr_nonnull(name);
    ck_assert_str_eq(name, "__gnu_cxx::__enable_if<std::__is_scalar<int>::__value, void>::__type "
                           "std::__fill_a1<int*, int>(int*, int*, int const&)");
    char short_name[256];
    ospx_short_name(short_name, sizeof short_name, name);
    ck_assert_str_eq(short_name, "std::__fill_a1");
    free(name);
    ck_assert_ptr_null(ospx__demangle_leftover("checksum_block"));
    ck_assert_ptr_null(ospx__demangle_leftover("_Znot a name"));
    ck_assert_ptr_null(ospx__demangle_leftover(NULL));
}
END_TEST

/* Short names for tables, pprof's way: parameters, template arguments and return types
 * elided; a Rust qualified path kept, its inside shortened; a C name itself. */
START_TEST(test_short_names_for_tables)
{
    static const char *const cases[][2] = {
        {"std::vector<int, std::allocator<int> >::push_back(int const&)", "std::vector::push_back"},
        {"void std::__introsort_loop<__gnu_cxx::__normal_iterator<int*, std::vector<int, "
         "std::allocator<int> > >, long, __gnu_cxx::__ops::_Iter_less_iter>(__gnu_cxx::__normal_"
         "iterator<int*, std::vector<int, std::allocator<int> > >, long, "
         "__gnu_cxx::__ops::_Iter_less_iter)",
         "std::__introsort_loop"},
        {"<&dyn core::ops::function::Fn<(), Output = i32> + core::marker::Sync as "
         "core::ops::function::FnOnce<()>>::call_once",
         "<&dyn core::ops::function::Fn + core::marker::Sync as "
         "core::ops::function::FnOnce>::call_once"},
        {"<fn() -> u64 as core::ops::function::FnOnce<()>>::call_once",
         "<fn() -> u64 as core::ops::function::FnOnce>::call_once"},
        {"rusty::apply::<rusty::main::{closure#0}>", "rusty::apply"},
        {"<u64>::wrapping_add", "<u64>::wrapping_add"},
        {"main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()"},
        {"std::map<int, int>::operator[](int const&)", "std::map::operator[]"},
        {"__gnu_cxx::__normal_iterator<int*, std::vector<int> >::operator--()",
         "__gnu_cxx::__normal_iterator::operator--"},
        {"Callback::operator()", "Callback::operator()"},
        {"Callback::operator()()", "Callback::operator()"},
        {"Foo::operator bool() const", "Foo::operator bool"},
        {"operator new(unsigned long)", "operator new"},
        {"(anonymous namespace)::helper(int)", "(anonymous namespace)::helper"},
        {"foo(int) [clone .cold]", "foo [clone .cold]"},
        {"std::__introsort_loop<int*, long>(int*, int*, long) (.isra.0)",
         "std::__introsort_loop (.isra.0)"},
        {"checksum_block", "checksum_block"},
        {"liblzma.so.5+0x168b0", "liblzma.so.5+0x168b0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[512];
        ospx_short_name(name, sizeof name, cases[i][0]);
        ck_assert_str_eq(name, cases[i][1]);
    }
    /* the instances of one generic told apart: arguments kept, parameters not */
    char name[512];
    ospx__short_name_with_arguments(name, sizeof name,
                                    "std::_Vector_base<long, std::allocator<long> "
                                    ">::_M_allocate(unsigned long)");
    ck_assert_str_eq(name, "std::_Vector_base<long, std::allocator<long> >::_M_allocate");
    ospx__short_name_with_arguments(name, sizeof name,
                                    "std::panic::catch_unwind::<std::rt::lang_start_internal::{"
                                    "closure#0}, isize>");
    ck_assert_str_eq(
        name, "std::panic::catch_unwind::<std::rt::lang_start_internal::{closure#0}, isize>");
}
END_TEST

Suite *symbolize_suite(void)
{
    Suite *s = suite_create("symbolize");
    SUITE_CASE(s, "fake-tools", 0, test_text_range_not_header_order,
               test_overlapping_text_ranges_first_wins, test_text_size_zero_fallback,
               test_return_address_adjustment, test_inline_expansion_and_interning,
               test_answer_lines_read_exactly, test_profiler_frames_left_out,
               test_only_regular_elf_files_are_symbolized, test_frames_from_shim_sources_left_out,
               test_binary_substitutes_main_image_only, test_atos_arch_pinning,
               test_no_tool_hex_and_one_warning, test_missing_objects_one_warning,
               test_explicit_symbolizer, test_tool_failure_mid_image, test_progress_only_when_asked,
               test_no_progress_for_a_quick_run, test_objects_found_by_build_id_only,
               test_rust_legacy_names_as_rustc_prints_them, test_short_names_for_tables,
               test_leftover_mangled_names, test_inline_answer_reused_with_its_lines,
               test_python_mark_only_where_python_ran, test_words_past_the_frames_end_the_stack,
               test_go_stack_switches_end_the_stack, test_go_async_preempt_leaf_is_its_callers,
               test_frames_left_out_marker);
    SUITE_CASE(s, "llvm-symbolizer", 120, test_real_llvm_symbolizer, test_split_debug_info,
               test_libc_debug_by_build_id, test_real_own_stack, test_real_unreadable_object,
               test_real_vdso, test_stripped_program_entry_is_start,
               test_symbol_table_names_without_the_tool);
    return s;
}
