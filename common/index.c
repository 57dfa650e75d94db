/* index.c — the open-addressing hash index the interners and writers share: it holds entry
 * numbers of a caller's table, the caller keeps the keys and compares them (ospc.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospc.h"

int ospc_index_init(struct ospc_index *index, size_t expected)
{
    size_t count = 16;
    while (count < expected * 2 + 2)
        count *= 2;
    index->slots = calloc(count, sizeof *index->slots);
    index->slot_count = index->slots != NULL ? count : 0;
    index->used = 0;
    return index->slots != NULL ? 0 : -ENOMEM;
}

void ospc_index_free(struct ospc_index *index)
{
    free(index->slots);
    index->slots = NULL;
    index->slot_count = index->used = 0;
}

int ospc_index_insert(struct ospc_index *index, size_t slot, uint32_t entry,
                      uint64_t (*hash_of)(uint32_t entry, void *context), void *context)
{
    index->slots[slot] = entry + 1;
    index->used++;
    if (index->used * 2 <= index->slot_count)
        return 0;
    size_t count = index->slot_count * 2;
    uint32_t *slots = calloc(count, sizeof *slots);
    if (slots == NULL)
        return -ENOMEM;
    struct ospc_index grown = {slots, count, index->used};
    for (size_t i = 0; i < index->slot_count; i++) {
        if (index->slots[i] == 0)
            continue;
        size_t at = ospc_index_start(&grown, hash_of(index->slots[i] - 1, context));
        while (slots[at] != 0)
            at = ospc_index_next(&grown, at);
        slots[at] = index->slots[i];
    }
    free(index->slots);
    *index = grown;
    return 0;
}

uint64_t ospc_hash_bytes(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *bytes = data;
    for (size_t i = 0; i < size; i++) {
        hash ^= bytes[i];
        hash *= UINT64_C(1099511628211);
    }
    return hash;
}

/* Four lanes of 8-byte words, each multiplied in turn (the multiplications of one lane wait on
 * each other; four lanes keep the multiplier busy), folded together with the tail's bytes. */
uint64_t ospc_checksum(uint64_t seed, const void *data, size_t size)
{
    const uint64_t prime = UINT64_C(0x9e3779b97f4a7c15);
    const unsigned char *bytes = data;
    uint64_t lanes[4] = {seed, seed + prime, seed ^ prime, seed - prime};
    for (; size >= 32; bytes += 32, size -= 32)
        for (int i = 0; i < 4; i++) {
            uint64_t word;
            memcpy(&word, bytes + 8 * i, 8);
            lanes[i] = (lanes[i] ^ word) * prime;
            lanes[i] ^= lanes[i] >> 31;
        }
    uint64_t hash = ospc_hash_bytes(seed, lanes, sizeof lanes);
    return ospc_hash_bytes(hash, bytes, size);
}
