/* osp_ring_write.h — the one encoder of event-ring records (osp_ring.h): how a record's bytes
 * are laid out (its header, the fixed part, the bytes that follow, zero padding to 8) and where
 * it goes in a data area (a PAD record in front of one that would cross the end).
 *
 * The shim's writer (shim/event_ring.c) uses osp_ring_pad_before and osp_rec_encode between
 * its reserve and its head store; the tests' fixtures and the fuzz seed generator write whole
 * rings nobody reads concurrently through struct osp_ring_cursor and the typed osp_put_*.
 * osp_ring_pad_before and osp_rec_encode are async-signal-safe (plain stores only).
 */
#ifndef OSP_RING_WRITE_H
#define OSP_RING_WRITE_H

#include <stdint.h>
#include <string.h>

#include "osp_ring.h"

/* When a record of rec_size bytes written at counter `head` would cross the end of a data area
 * of `size` bytes (a power of two), write a PAD record over the rest of it. Returns the bytes
 * the pad takes (0: none needed). Async-signal-safe. */
static inline uint64_t osp_ring_pad_before(uint8_t *data, uint64_t size, uint64_t head,
                                           uint32_t rec_size)
{
    uint64_t offset = head & (size - 1);
    uint64_t to_end = size - offset;
    if (rec_size <= to_end)
        return 0;
    struct osp_rec_header pad = {.type = OSP_REC_PAD, .size = (uint32_t)to_end};
    memcpy(data + offset, &pad, sizeof pad);
    return to_end;
}

/* The header a ring starts with, as the shim fills it before it starts ospreyd: the identity
 * and the data area right after the header page, the rest zero (shim_state is the caller's
 * store, with the ordering it needs). `platform` is copied NUL-padded, cut to fit. One writer
 * for the shim, the daemon tests and the fuzz target. */
static inline void osp_ring_header_init(struct osp_ring_header *h, uint64_t data_size, int32_t pid,
                                        uint32_t rate_hz, uint64_t start_unix_ns,
                                        uint64_t start_mono_ns, const char *platform)
{
    memset(h, 0, OSP_RING_HEADER_SIZE);
    h->magic = OSP_RING_MAGIC;
    h->abi_version = OSP_RING_ABI_VERSION;
    h->header_size = OSP_RING_HEADER_SIZE;
    h->data_offset = OSP_RING_HEADER_SIZE;
    h->data_size = data_size;
    h->pid = pid;
    h->rate_hz = rate_hz;
    h->start_unix_ns = start_unix_ns;
    h->start_mono_ns = start_mono_ns;
    size_t n = strlen(platform);
    memcpy(h->platform, platform, n < sizeof h->platform - 1 ? n : sizeof h->platform - 1);
}

/* The whole record of `type` at dst: `body` (a record struct, whose header is set here) of
 * body_len bytes, then tail_len bytes of `tail` (label, path or pcs), then zeros up to the
 * 8-byte alignment. Returns its size, osp_rec_align(body_len + tail_len). Async-signal-safe. */
static inline uint32_t osp_rec_encode(void *dst, uint32_t type, const void *body, uint32_t body_len,
                                      const void *tail, uint32_t tail_len)
{
    uint8_t *rec = dst;
    uint32_t size = osp_rec_align(body_len + tail_len);
    memcpy(rec, body, body_len);
    if (tail_len)
        memcpy(rec + body_len, tail, tail_len);
    memset(rec + body_len + tail_len, 0, size - body_len - tail_len);
    struct osp_rec_header h = {.type = type, .size = size};
    memcpy(rec, &h, sizeof h);
    return size;
}

/* A data area written by one party while nobody reads it (no tail, no index stores). */
struct osp_ring_cursor {
    uint8_t *data;
    uint64_t size; /* power of two */
    uint64_t head; /* free-running byte counter */
};

/* Put one record at the cursor, a PAD first when it would cross the end. */
static inline void osp_ring_put(struct osp_ring_cursor *c, uint32_t type, const void *body,
                                uint32_t body_len, const void *tail, uint32_t tail_len)
{
    c->head += osp_ring_pad_before(c->data, c->size, c->head, osp_rec_align(body_len + tail_len));
    c->head +=
        osp_rec_encode(c->data + (c->head & (c->size - 1)), type, body, body_len, tail, tail_len);
}

static inline void osp_put_thread_start(struct osp_ring_cursor *c, uint32_t slot,
                                        uint32_t generation, int64_t fiber, int32_t tid,
                                        const char *label, uint32_t label_len)
{
    struct osp_rec_thread_start rec = {
        .slot = slot, .generation = generation, .fiber = fiber, .tid = tid, .label_len = label_len};
    osp_ring_put(c, OSP_REC_THREAD_START, &rec, sizeof rec, label, label_len);
}

static inline void osp_put_thread_end(struct osp_ring_cursor *c, uint32_t slot, uint32_t generation)
{
    struct osp_rec_thread_end rec = {.slot = slot, .generation = generation};
    osp_ring_put(c, OSP_REC_THREAD_END, &rec, sizeof rec, NULL, 0);
}

static inline void osp_put_sample(struct osp_ring_cursor *c, uint64_t t_ns, uint32_t slot,
                                  uint32_t generation, uint32_t state, uint32_t depth,
                                  const uint64_t *pcs)
{
    struct osp_rec_sample rec = {
        .t_ns = t_ns, .slot = slot, .generation = generation, .state = state, .depth = depth};
    osp_ring_put(c, OSP_REC_SAMPLE, &rec, sizeof rec, pcs, depth * 8u);
}

/* A weighted sample, as the shim's handler writes them, with why its stack's walk ended. */
static inline void osp_put_sample_weighted(struct osp_ring_cursor *c, uint64_t t_ns, uint32_t slot,
                                           uint32_t generation, uint32_t state, uint32_t weight,
                                           uint32_t stop, uint32_t depth, const uint64_t *pcs)
{
    struct osp_rec_sample_weighted rec = {.t_ns = t_ns,
                                          .slot = slot,
                                          .generation = generation,
                                          .state = state,
                                          .depth = depth,
                                          .weight = weight,
                                          .stop = stop};
    osp_ring_put(c, OSP_REC_SAMPLE_WEIGHTED, &rec, sizeof rec, pcs, depth * 8u);
}

/* A sample with a copy of its stack (osp_ring.h, "Stack copies"): rec's fields from t_ns on
 * (its header is set here), then its pcs. */
static inline void osp_put_stack_copy(struct osp_ring_cursor *c,
                                      const struct osp_rec_stack_copy *rec, const uint64_t *pcs)
{
    osp_ring_put(c, OSP_REC_STACK_COPY, rec, sizeof *rec, pcs, rec->sample.depth * 8u);
}

static inline void osp_put_repeat(struct osp_ring_cursor *c, uint64_t t_ns, uint32_t slot,
                                  uint32_t generation)
{
    struct osp_rec_repeat rec = {
        .t_ns = t_ns, .slot = slot, .generation = generation, .state = OSP_STATE_WAITING};
    osp_ring_put(c, OSP_REC_REPEAT, &rec, sizeof rec, NULL, 0);
}

/* From here on the slot's samples are fiber `fiber`'s (0: the thread's own again). */
static inline void osp_put_fiber(struct osp_ring_cursor *c, uint32_t slot, uint32_t generation,
                                 int64_t fiber, const char *label, uint32_t label_len)
{
    struct osp_rec_fiber rec = {
        .slot = slot, .generation = generation, .fiber = fiber, .label_len = label_len};
    osp_ring_put(c, OSP_REC_FIBER, &rec, sizeof rec, label, label_len);
}

static inline void osp_put_image(struct osp_ring_cursor *c, uint64_t base, uint64_t slide,
                                 uint64_t text, uint64_t text_size, const char *arch,
                                 uint32_t flags, const char *path)
{
    struct osp_rec_image rec = {.base = base,
                                .slide = slide,
                                .text = text,
                                .text_size = text_size,
                                .flags = flags,
                                .path_len = (uint32_t)strlen(path)};
    memcpy(rec.arch, arch, strnlen(arch, sizeof rec.arch - 1));
    osp_ring_put(c, OSP_REC_IMAGE, &rec, sizeof rec, path, rec.path_len);
}

static inline void osp_put_exit(struct osp_ring_cursor *c, uint64_t end_unix_ns, uint64_t dropped)
{
    struct osp_rec_exit rec = {.end_unix_ns = end_unix_ns, .dropped = dropped};
    osp_ring_put(c, OSP_REC_EXIT, &rec, sizeof rec, NULL, 0);
}

#endif /* OSP_RING_WRITE_H */
