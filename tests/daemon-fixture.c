/* daemon-fixture.c — the daemon tests' shared fixture (daemon-fixture.h): the ring writer,
 * scratch directories, the raw file read back. */
#include "daemon-fixture.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A ring writer that lays records out the way the shim does: 8-byte aligned, a PAD record
 * before a record that would cross the end of the data area. */

void ring_put(struct ring *r, const void *rec, uint32_t size)
{
    uint64_t offset = r->head & (r->size - 1);
    if (offset + size > r->size) {
        struct osp_rec_header pad = {.type = OSP_REC_PAD, .size = (uint32_t)(r->size - offset)};
        memcpy(r->data + offset, &pad, sizeof pad);
        r->head += pad.size;
        offset = 0;
    }
    memcpy(r->data + offset, rec, size);
    r->head += size;
}

/* Put a fixed record followed by `len` payload bytes, padded to 8; sets the record's header
 * (the first 8 bytes of `rec`) to `type` and the padded size. */
void put_with_payload(struct ring *r, uint32_t type, void *rec, size_t rec_size,
                      const void *payload, size_t len)
{
    static uint8_t buf[sizeof(struct osp_rec_image) + OSP_MAX_PATH + 8];
    struct osp_rec_header h = {type, osp_rec_align((uint32_t)(rec_size + len))};
    memcpy(rec, &h, sizeof h);
    memset(buf, 0, sizeof buf);
    memcpy(buf, rec, rec_size);
    memcpy(buf + rec_size, payload, len);
    ring_put(r, buf, h.size);
}

void put_thread_start(struct ring *r, uint32_t slot, uint32_t generation, int64_t fiber,
                      int32_t tid, const char *label)
{
    struct osp_rec_thread_start rec = {.slot = slot,
                                       .generation = generation,
                                       .fiber = fiber,
                                       .tid = tid,
                                       .label_len = (uint32_t)strlen(label)};
    put_with_payload(r, OSP_REC_THREAD_START, &rec, sizeof rec, label, rec.label_len);
}

void put_thread_end(struct ring *r, uint32_t slot, uint32_t generation)
{
    struct osp_rec_thread_end rec = {
        .h = {OSP_REC_THREAD_END, sizeof rec}, .slot = slot, .generation = generation};
    ring_put(r, &rec, sizeof rec);
}

void put_sample(struct ring *r, uint64_t t_ns, uint32_t slot, uint32_t generation, uint32_t state,
                uint32_t depth, const uint64_t *pcs)
{
    struct osp_rec_sample rec = {
        .t_ns = t_ns, .slot = slot, .generation = generation, .state = state, .depth = depth};
    put_with_payload(r, OSP_REC_SAMPLE, &rec, sizeof rec, pcs, depth * 8u);
}

void put_repeat(struct ring *r, uint64_t t_ns, uint32_t slot, uint32_t generation)
{
    struct osp_rec_repeat rec = {.h = {OSP_REC_REPEAT, sizeof rec},
                                 .t_ns = t_ns,
                                 .slot = slot,
                                 .generation = generation,
                                 .state = OSP_STATE_WAITING};
    ring_put(r, &rec, sizeof rec);
}

void put_image(struct ring *r, uint64_t base, uint64_t text, uint64_t text_size, uint32_t flags,
               const char *path)
{
    struct osp_rec_image rec = {.base = base,
                                .slide = base,
                                .text = text,
                                .text_size = text_size,
                                .arch = "x86_64",
                                .flags = flags,
                                .path_len = (uint32_t)strlen(path)};
    put_with_payload(r, OSP_REC_IMAGE, &rec, sizeof rec, path, rec.path_len);
}

void put_exit(struct ring *r, uint64_t end_unix_ns, uint64_t dropped)
{
    struct osp_rec_exit rec = {
        .h = {OSP_REC_EXIT, sizeof rec}, .end_unix_ns = end_unix_ns, .dropped = dropped};
    ring_put(r, &rec, sizeof rec);
}

/* A heap ring of `size` bytes whose counters start at `start` (to exercise wrap-around and
 * free-running counters). */
struct ring ring_new(uint64_t size, uint64_t start)
{
    struct ring r = {.data = calloc(1, size), .size = size, .head = start};
    ck_assert_ptr_nonnull(r.data);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Scratch directories and the raw file read back. */

char *temp_dir(void)
{
    char *dir = strdup("/tmp/osprey-test-daemon-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
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
    DIR *d = opendir(dir);
    if (d != NULL) {
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char *p = join(dir, e->d_name);
            unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
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
