/* scratch.c — the tests' scratch directories: made under $TMPDIR (or /tmp) with the test's
 * name in theirs, removed depth first without a shell (no quoting, no `rm` to find), so each
 * test file does not keep a copy of its own. */
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
