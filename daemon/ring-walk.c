/* ring-walk.c — the ring's one reader: a ring header checked before anything is read, and
 * the records between tail and head walked, each record header copied out and checked
 * (size >= 8, a multiple of 8, inside the data area, not past head) and each record copied
 * into a local buffer before a visitor sees it (ospd_parse's is the collector, collect.c).
 * The ring lives in memory the target can write at any time: nothing is read twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osp_unwind_step.h"
#include "ospd.h"
#include "ospd_collect.h"

/* The largest record body any valid type can have: an image with the longest path. */
#define RECORD_BUFFER_SIZE (sizeof(struct osp_rec_image) + OSP_MAX_PATH + 8)

int ospd_ring_validate(const struct osp_ring_header *h, uint64_t object_size, char *err,
                       size_t err_size)
{
    /* The caller mapped at least OSP_RING_HEADER_SIZE bytes; read each field once. */
    uint64_t magic = h->magic, data_offset = h->data_offset, data_size = h->data_size;
    uint32_t abi = h->abi_version, header_size = h->header_size, rate_hz = h->rate_hz;
    int32_t pid = h->pid;
    if (object_size < OSP_RING_HEADER_SIZE)
        snprintf(err, err_size, "shared memory is %" PRIu64 " bytes, smaller than a ring header",
                 object_size);
    else if (magic != OSP_RING_MAGIC)
        snprintf(err, err_size, "bad magic 0x%016" PRIx64 " (not an osprey ring)", magic);
    else if (abi != OSP_RING_ABI_VERSION)
        snprintf(err, err_size, "ring ABI version %" PRIu32 ", this ospreyd speaks %u", abi,
                 OSP_RING_ABI_VERSION);
    else if (header_size != OSP_RING_HEADER_SIZE)
        snprintf(err, err_size, "header_size %" PRIu32 ", expected %u", header_size,
                 OSP_RING_HEADER_SIZE);
    else if (data_offset != OSP_RING_HEADER_SIZE)
        snprintf(err, err_size, "data_offset %" PRIu64 ", expected %u", data_offset,
                 OSP_RING_HEADER_SIZE);
    else if (data_size < 64 || data_size > OSP_RING_MAX_DATA_SIZE ||
             (data_size & (data_size - 1)) != 0)
        snprintf(err, err_size, "data_size %" PRIu64 " is not a power of two in 64..%u", data_size,
                 OSP_RING_MAX_DATA_SIZE);
    else if (data_offset + data_size > object_size)
        snprintf(err, err_size,
                 "data area [%" PRIu64 ", %" PRIu64 ") exceeds the %" PRIu64
                 "-byte shared memory object",
                 data_offset, data_offset + data_size, object_size);
    else if (rate_hz == 0)
        snprintf(err, err_size, "rate_hz is 0");
    else if (h->slot_count > 0 &&
             (h->slot_count > OSPD_MAX_SLOTS || h->slot_count > OSP_ATTENTION_WORDS * 64 ||
              h->slot_ring_size < 64 || h->slot_ring_size > OSP_MAX_SLOT_RING ||
              (h->slot_ring_size & (h->slot_ring_size - 1)) != 0 ||
              h->slots_offset != data_offset + data_size ||
              h->slots_offset + (uint64_t)h->slot_count * osp_slot_stride(h->slot_ring_size) >
                  object_size))
        snprintf(err, err_size,
                 "slot table (%" PRIu32 " slots of %" PRIu32 " bytes at %" PRIu64
                 ") does not fit the %" PRIu64 "-byte shared memory object",
                 h->slot_count, h->slot_ring_size, h->slots_offset, object_size);
    else if (pid <= 0)
        snprintf(err, err_size, "target pid %" PRId32 " is not a process id", pid);
    else
        return 0;
    return -EPROTO;
}

__attribute__((format(printf, 3, 4))) int ospd_reject_into(char *error, size_t size,
                                                           const char *fmt, ...)
{
    if (error[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(error, size, fmt, ap);
        va_end(ap);
    }
    return -EPROTO;
}

int ospd_ring_check_span(uint64_t data_size, uint64_t tail, uint64_t head, char *error,
                         size_t error_size)
{
    if (head < tail)
        return ospd_reject_into(error, error_size, "head %" PRIu64 " is behind tail %" PRIu64, head,
                                tail);
    if (head - tail > data_size)
        return ospd_reject_into(error, error_size,
                                "head %" PRIu64 " is %" PRIu64 " bytes ahead of tail %" PRIu64
                                ", more than the %" PRIu64 "-byte data area",
                                head, head - tail, tail, data_size);
    if ((head | tail) % 8 != 0)
        return ospd_reject_into(error, error_size,
                                "head %" PRIu64 " or tail %" PRIu64 " is not 8-byte aligned", head,
                                tail);
    return 0;
}

int ospd_ring_walk(const uint8_t *data, uint64_t data_size, uint64_t tail, uint64_t head,
                   ospd_record_visitor visit, void *ctx, char *error, size_t error_size,
                   uint64_t *new_tail)
{
    _Alignas(8) uint8_t buffer[RECORD_BUFFER_SIZE];
    uint64_t mask = data_size - 1;
    *new_tail = tail;
    int rc = ospd_ring_check_span(data_size, tail, head, error, error_size);
    if (rc != 0)
        return rc;
    uint64_t pos = tail;
    while (pos < head) {
        uint64_t offset = pos & mask, to_end = data_size - offset;
        struct osp_rec_header rh;
        if (head - pos < sizeof rh) {
            rc = ospd_reject_into(error, error_size,
                                  "record at %" PRIu64 " is cut off by head %" PRIu64, pos, head);
            break;
        }
        memcpy(&rh, data + offset, sizeof rh); /* offset is 8-aligned, data_size >= 64 */
        if (rh.size < sizeof rh || rh.size % 8 != 0) {
            rc = ospd_reject_into(error, error_size,
                                  "record at %" PRIu64 " has size %" PRIu32
                                  " (not a multiple of 8 of at least 8)",
                                  pos, rh.size);
            break;
        }
        if (rh.size > to_end) {
            rc = ospd_reject_into(error, error_size,
                                  "record at %" PRIu64 " of %" PRIu32
                                  " bytes crosses the end of the "
                                  "data area",
                                  pos, rh.size);
            break;
        }
        if (rh.size > head - pos) {
            rc = ospd_reject_into(error, error_size,
                                  "record at %" PRIu64 " of %" PRIu32
                                  " bytes runs past head %" PRIu64,
                                  pos, rh.size, head);
            break;
        }
        const uint8_t *rec = buffer;
        if (rh.type == OSP_REC_PAD) {
            rec = (const uint8_t *)&rh; /* nothing past its header is read */
        } else if (rh.size > sizeof buffer) {
            rc = ospd_reject_into(error, error_size,
                                  "record at %" PRIu64 " of type %" PRIu32 " is %" PRIu32
                                  " bytes, larger than any valid record",
                                  pos, rh.type, rh.size);
            break;
        } else {
            /* Copy once, then work only on the copy: the writer may change the ring under us. */
            memcpy(buffer, data + offset, rh.size);
            memcpy(buffer, &rh, sizeof rh);
        }
        int v = visit(ctx, pos, rec, rh.type, rh.size);
        if (v < 0)
            rc = v;
        if (v < 0 || v == OSPD_VISIT_AGAIN)
            break;
        pos += rh.size;
        if (v == OSPD_VISIT_STOP)
            break;
    }
    *new_tail = pos;
    return rc;
}
