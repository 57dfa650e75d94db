/* daemon-fixture.h — what the daemon's tests share: the shim's ring writer
 * (proto/osp_ring_write.h) with the tests' defaults (test-daemon.c parses what it writes;
 * test-ospreyd.c hands it to the ospreyd binary in shared memory), scratch directories, and the raw
 * file read back as JSON. */
#ifndef OSP_TEST_DAEMON_FIXTURE_H
#define OSP_TEST_DAEMON_FIXTURE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "osp_ring.h"
#include "osp_ring_write.h"

void ring_put(struct osp_ring_cursor *r, const void *rec, uint32_t size);
void put_thread_start(struct osp_ring_cursor *r, uint32_t slot, uint32_t generation, int64_t fiber,
                      int32_t tid, const char *label);
void put_image(struct osp_ring_cursor *r, uint64_t base, uint64_t text, uint64_t text_size,
               uint32_t flags, const char *path);
struct osp_ring_cursor ring_new(uint64_t size, uint64_t start);
char *temp_dir(void);
char *join(const char *dir, const char *name);
int count_entries(const char *dir);
void remove_dir(char *dir);
json_t *load_json(const char *path);
json_int_t int_at(json_t *root, const char *key);

#endif
