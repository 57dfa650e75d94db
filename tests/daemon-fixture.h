/* daemon-fixture.h — what the daemon's tests share: a ring writer that lays records out the way
 * the shim does (test-daemon.c parses what it writes; test-ospreyd.c hands it to the ospreyd
 * binary in shared memory), scratch directories, and the raw file read back as JSON. */
#ifndef OSP_TEST_DAEMON_FIXTURE_H
#define OSP_TEST_DAEMON_FIXTURE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "osp_ring.h"

struct ring {
    uint8_t *data;
    uint64_t size; /* power of two */
    uint64_t head;
};

void ring_put(struct ring *r, const void *rec, uint32_t size);
void put_with_payload(struct ring *r, uint32_t type, void *rec, size_t rec_size,
                      const void *payload, size_t len);
void put_thread_start(struct ring *r, uint32_t slot, uint32_t generation, int64_t fiber,
                      int32_t tid, const char *label);
void put_thread_end(struct ring *r, uint32_t slot, uint32_t generation);
void put_sample(struct ring *r, uint64_t t_ns, uint32_t slot, uint32_t generation, uint32_t state,
                uint32_t depth, const uint64_t *pcs);
void put_repeat(struct ring *r, uint64_t t_ns, uint32_t slot, uint32_t generation);
void put_image(struct ring *r, uint64_t base, uint64_t text, uint64_t text_size, uint32_t flags,
               const char *path);
void put_exit(struct ring *r, uint64_t end_unix_ns, uint64_t dropped);
struct ring ring_new(uint64_t size, uint64_t start);
char *temp_dir(void);
char *join(const char *dir, const char *name);
int count_entries(const char *dir);
void remove_dir(char *dir);
json_t *load_json(const char *path);
json_int_t int_at(json_t *root, const char *key);

#endif
