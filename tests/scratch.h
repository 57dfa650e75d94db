/* scratch.h — the tests' scratch directories and the files in them (scratch.c), built into
 * every test area. */
#ifndef OSP_TEST_SCRATCH_H
#define OSP_TEST_SCRATCH_H

#include <stddef.h>

/* A fresh directory $TMPDIR/osprey-test-NAME-XXXXXX (/tmp without TMPDIR) into dir[size];
 * a failed check when it cannot be made. */
void scratch_make(char *dir, size_t size, const char *name);
/* dir and everything in it (links not followed); a failed check when something is left. */
void scratch_remove(const char *dir);
/* `text` as the whole of the file at path (a failed check when it cannot be written). */
void scratch_write(const char *path, const char *text);
/* The whole file at path, NUL-terminated, its length into *length when not NULL (free it);
 * NULL when it cannot be opened. */
char *scratch_read(const char *path, size_t *length);

#endif
