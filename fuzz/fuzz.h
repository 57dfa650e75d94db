/* fuzz.h — what the fuzz targets share: the libFuzzer entry point every target defines, the
 * check that turns a broken promise into a crash, and the raw-profile invariants.
 *
 * Each fuzz-<target>.c is built twice from the same source: with libFuzzer (clang
 * -fsanitize=fuzzer,address,undefined, meson option -Dfuzzing=true) to search for inputs, and
 * with the normal compiler into a replay runner (replay.c) that feeds it every file of
 * fuzz/corpus/<target>/ as part of the unit suite, so an input that crashed once stays fixed.
 */
#ifndef OSP_FUZZ_H
#define OSP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "ospx.h"

/* The libFuzzer entry point: returns 0 for every input; a bug aborts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Print "fuzz: check failed at FILE:LINE: what" and abort: the sanitizers and libFuzzer treat
 * the abort as a crash and save the input. */
#define FUZZ_CHECK(condition, ...)                                                                 \
    do {                                                                                           \
        if (!(condition))                                                                          \
            fuzz_fail(__FILE__, __LINE__, __VA_ARGS__);                                            \
    } while (0)

__attribute__((noreturn, format(printf, 3, 4))) void fuzz_fail(const char *file, int line,
                                                               const char *fmt, ...);

/* Put `size` bytes in an anonymous in-memory file and write a path that opens it
 * ("/proc/self/fd/N") into path. Returns the descriptor (close it when done) or -1. */
int fuzz_memory_file(const uint8_t *data, size_t size, char *path, size_t path_size);

/* What ospx_raw_read promises after reading `path`: rc is 0 or negative; on 0 every table is
 * there, every sample's thread and stack index is in range, every stack has depth >= 1 and
 * end >= start; on failure the error names the file in one line and *raw is left empty. */
void fuzz_check_raw_result(int rc, const struct ospx_raw *raw, const struct ospx_error *err,
                           const char *path);

#endif /* OSP_FUZZ_H */
