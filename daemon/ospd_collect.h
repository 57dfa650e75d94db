/* ospd_collect.h — what the collector's files share (collect.c, collector.c, ring-walk.c):
 * the first-reason-wins rejection, the span check of a walk, the bytes its tables hold and
 * the copy of a fixed-size ASCII field. Internal to daemon/.
 */
#ifndef OSPD_COLLECT_H
#define OSPD_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "ospd.h"

/* Record in error[size] why the ring is rejected (first reason wins) and return -EPROTO. */
__attribute__((format(printf, 3, 4))) int ospd_reject_into(char *error, size_t size,
                                                           const char *fmt, ...);
#define reject(c, ...) ospd_reject_into((c)->error, sizeof(c)->error, __VA_ARGS__)

/* The span data[tail .. head) a walk may read: head not behind tail, at most the data area
 * ahead, both 8-byte aligned. 0, or -EPROTO with the reason in error. */
int ospd_ring_check_span(uint64_t data_size, uint64_t tail, uint64_t head, char *error,
                         size_t error_size);

/* Bytes held by the growing tables: samples, and the interner's pool, index and hash table. */
uint64_t ospd_collector_table_bytes(const struct ospd_collector *c);

/* Copy a NUL-padded fixed-size field into dst as printable ASCII ('?' for anything else). */
void ospd_copy_ascii_field(char *dst, const char *src, size_t size);

#endif
