/* scratch.h — the tests' scratch directories (scratch.c), built into every test area. */
#ifndef OSP_TEST_SCRATCH_H
#define OSP_TEST_SCRATCH_H

#include <stddef.h>

/* A fresh directory $TMPDIR/osprey-test-NAME-XXXXXX (/tmp without TMPDIR) into dir[size];
 * a failed check when it cannot be made. */
void scratch_make(char *dir, size_t size, const char *name);
/* dir and everything in it (links not followed); a failed check when something is left. */
void scratch_remove(const char *dir);

#endif
