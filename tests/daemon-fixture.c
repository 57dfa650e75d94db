/* daemon-fixture.c — the daemon tests' shared fixture (daemon-fixture.h): the ring writer,
 * scratch directories, the raw file read back. */
#include "daemon-fixture.h"
#include "scratch.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The ring writer is proto/osp_ring_write.h's, the shim's layout: these add the defaults the
 * tests share. */

/* A record already encoded (header included, `size` a multiple of 8), as the shim would place
 * it: a PAD record first when it would cross the end of the data area. */
void ring_put(struct osp_ring_cursor *r, const void *rec, uint32_t size)
{
    r->head += osp_ring_pad_before(r->data, r->size, r->head, size);
    memcpy(r->data + (r->head & (r->size - 1)), rec, size);
    r->head += size;
}

void put_thread_start(struct osp_ring_cursor *r, uint32_t slot, uint32_t generation, int64_t fiber,
                      int32_t tid, const char *label)
{
    osp_put_thread_start(r, slot, generation, fiber, tid, label, (uint32_t)strlen(label));
}

/* An x86_64 image loaded at `base`, its load bias. */
void put_image(struct osp_ring_cursor *r, uint64_t base, uint64_t text, uint64_t text_size,
               uint32_t flags, const char *path)
{
    osp_put_image(r, base, base, text, text_size, "x86_64", flags, path);
}

/* A heap ring of `size` bytes whose counters start at `start` (to exercise wrap-around and
 * free-running counters). */
struct osp_ring_cursor ring_new(uint64_t size, uint64_t start)
{
    struct osp_ring_cursor r = {.data = calloc(1, size), .size = size, .head = start};
    ck_assert_ptr_nonnull(r.data);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Scratch directories and the raw file read back. */

char *temp_dir(void)
{
    char *dir = malloc(256);
    ck_assert_ptr_nonnull(dir);
    scratch_make(dir, 256, "daemon");
    return dir;
}

char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

void remove_dir(char *dir)
{
    scratch_remove(dir);
    free(dir);
}

json_t *load_json(const char *path)
{
    json_error_t error;
    json_t *root = json_load_file(path, 0, &error);
    ck_assert_msg(root != NULL, "%s:%d:%d: %s", path, error.line, error.column, error.text);
    ck_assert(json_is_object(root));
    return root;
}

json_int_t int_at(json_t *root, const char *key)
{
    json_t *v = json_object_get(root, key);
    ck_assert_msg(json_is_integer(v), "%s is not an integer", key);
    return json_integer_value(v);
}
