/* test-proto.c — the shared-memory ABI: sizes, offsets and the record-alignment helper are
 * what both sides of the ring compile against, so a change to them must be deliberate. */
#include <check.h>
#include <stddef.h>

#include "osp_ring.h"
#include "suite.h"

START_TEST(header_layout_is_stable)
{
    ck_assert_uint_eq(offsetof(struct osp_ring_header, magic), 0);
    ck_assert_uint_eq(offsetof(struct osp_ring_header, abi_version), 8);
    ck_assert_uint_eq(offsetof(struct osp_ring_header, header_size), 12);
    ck_assert_uint_eq(offsetof(struct osp_ring_header, data_offset), 16);
    ck_assert_uint_eq(offsetof(struct osp_ring_header, data_size), 24);
    ck_assert_uint_le(sizeof(struct osp_ring_header), OSP_RING_HEADER_SIZE);
    size_t head = offsetof(struct osp_ring_header, head);
    size_t tail = offsetof(struct osp_ring_header, tail);
    ck_assert_uint_eq(head / OSP_RING_CACHE_LINE == tail / OSP_RING_CACHE_LINE, 0);
}
END_TEST

START_TEST(records_round_up_to_eight_bytes)
{
    ck_assert_uint_eq(osp_rec_align(0), 0);
    ck_assert_uint_eq(osp_rec_align(1), 8);
    ck_assert_uint_eq(osp_rec_align(8), 8);
    ck_assert_uint_eq(osp_rec_align(sizeof(struct osp_rec_thread_start) + 5),
                      sizeof(struct osp_rec_thread_start) + 8);
    ck_assert_uint_eq(sizeof(struct osp_rec_sample) + OSP_MAX_DEPTH * 8, 32 + 1024);
}
END_TEST

START_TEST(magic_spells_the_ring_name)
{
    uint64_t magic = OSP_RING_MAGIC;
    ck_assert_mem_eq(&magic, "OSPRING1", 8);
}
END_TEST

Suite *proto_suite(void)
{
    Suite *s = suite_create("proto");
    SUITE_CASE(s, "abi", 0, header_layout_is_stable, records_round_up_to_eight_bytes,
               magic_spells_the_ring_name);
    return s;
}
