/* scratch.c — the tests' scratch directories: made under $TMPDIR (or /tmp) with the test's
 * name in theirs, removed depth first without a shell (no quoting, no `rm` to find); and a
 * file written or read whole. So each test file does not keep a copy of its own. */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include "scratch.h"

void scratch_make(char *dir, size_t size, const char *name)
{
    const char *tmpdir = getenv("TMPDIR");
    int n = snprintf(dir, size, "%s/osprey-test-%s-XXXXXX",
                     tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp", name);
    ck_assert_int_lt(n, (int)size);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void scratch_remove(const char *dir)
{
    ck_assert_int_eq(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

void scratch_write(const char *path, const char *text)
{
    FILE *out = fopen(path, "w");
    ck_assert_msg(out != NULL, "%s", path);
    fputs(text, out);
    ck_assert_int_eq(fclose(out), 0);
}

char *scratch_read(const char *path, size_t *length)
{
    FILE *in = fopen(path, "rb");
    if (in == NULL)
        return NULL;
    char *text = NULL;
    size_t size = 0;
    FILE *memory = open_memstream(&text, &size);
    ck_assert_ptr_nonnull(memory);
    char chunk[4096];
    for (size_t n; (n = fread(chunk, 1, sizeof chunk, in)) > 0;)
        fwrite(chunk, 1, n, memory);
    ck_assert_int_eq(fclose(memory), 0);
    fclose(in);
    if (length != NULL)
        *length = size;
    return text;
}
