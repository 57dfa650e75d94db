/* intern.c — the stack interner: turns each sampled pc sequence into a small stack index, so
 * a profile stores every distinct stack once and every sample as a few integers.
 *
 * DESIGN. Keys are variable-length pc sequences, stored back to back in one growing pool of
 * uint64_t; `stacks[i]` says where stack i's pcs start, its depth and its 32-bit hash. The
 * lookup table is open addressing with linear probing over a power-of-two array of uint32_t
 * entries holding "stack index + 1" (0 marks an empty entry), kept at most half full so a
 * probe sequence stays short even for clustered hashes. An entry is 4 bytes, so the table
 * costs 8-16 bytes per distinct stack on top of the pcs themselves. The hash is cached in
 * `stacks[i]`: a probe compares hashes and depths before it touches the pool, and growing
 * the table (doubling, reinserting every index) never rereads a pc. Nothing is ever removed,
 * so there are no tombstones. Every allocation is checked; when one fails the interner is
 * left exactly as it was and the caller counts the sample as lost.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "osp_unwind_step.h"
#include "ospd.h"

void ospd_interner_init(struct ospd_interner *in)
{
    memset(in, 0, sizeof *in);
}

void ospd_interner_free(struct ospd_interner *in)
{
    free(in->pool);
    free(in->stacks);
    free(in->slots);
    memset(in, 0, sizeof *in);
}

/* A 64-bit multiply-xorshift mix per pc (the splitmix64 finalizer), folded into 32 bits.
 * Addresses differ mostly in their low and middle bits; the mix spreads them over all bits. */
static uint32_t hash_pcs(const uint64_t *pcs, uint32_t depth)
{
    uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ depth;
    for (uint32_t i = 0; i < depth; i++) {
        uint64_t x = pcs[i] + h;
        x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
        h = x ^ (x >> 31);
    }
    return (uint32_t)(h ^ (h >> 32));
}

/* Place index `index` (whose hash is `hash`) in the first empty entry of its probe sequence.
 * The table has an empty entry: it is never more than half full. */
static void table_place(uint32_t *slots, uint32_t cap, uint32_t hash, uint32_t index)
{
    uint32_t mask = cap - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
        if (slots[i] == 0) {
            slots[i] = index + 1;
            return;
        }
    }
}

/* Double the table (or create it), reinserting every stack by its cached hash. */
static int table_grow(struct ospd_interner *in)
{
    uint32_t cap = in->slots_cap ? in->slots_cap * 2 : 1024;
    if (cap == 0 || cap > (UINT32_C(1) << 31))
        return -ENOMEM;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < in->count; i++)
        table_place(slots, cap, in->stacks[i].hash, i);
    free(in->slots);
    in->slots = slots;
    in->slots_cap = cap;
    return 0;
}

int ospd_grow(void **array, uint64_t *cap, uint64_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint64_t n = *cap ? *cap : 256;
    while (n < need)
        n *= 2;
    if (n > SIZE_MAX / size)
        return -ENOMEM;
    void *p = realloc(*array, (size_t)n * size);
    if (p == NULL)
        return -ENOMEM;
    *array = p;
    *cap = n;
    return 0;
}

/* The index of the stack with this hash and these pcs, or -ENOENT. */
static int64_t find(const struct ospd_interner *in, uint32_t hash, const uint64_t *pcs,
                    uint32_t depth)
{
    if (in->slots_cap == 0)
        return -ENOENT;
    uint32_t mask = in->slots_cap - 1;
    for (uint32_t i = hash & mask; in->slots[i] != 0; i = (i + 1) & mask) {
        const struct ospd_stack *s = &in->stacks[in->slots[i] - 1];
        if (s->hash == hash && s->depth == depth &&
            memcmp(in->pool + s->first, pcs, (size_t)depth * sizeof *pcs) == 0)
            return in->slots[i] - 1;
    }
    return -ENOENT;
}

int64_t ospd_intern_lookup(const struct ospd_interner *in, const uint64_t *pcs, uint32_t depth)
{
    return find(in, hash_pcs(pcs, depth), pcs, depth);
}

int64_t ospd_intern(struct ospd_interner *in, const uint64_t *pcs, uint32_t depth)
{
    if (depth > UINT16_MAX)
        return -E2BIG;
    uint32_t hash = hash_pcs(pcs, depth);
    int64_t found = find(in, hash, pcs, depth);
    if (found >= 0)
        return found;

    /* New stack: make room everywhere first, so a failure changes nothing visible. */
    if (in->count >= OSPD_MAX_STACKS)
        return -ENOMEM;
    if ((uint64_t)(in->count + 1) * 2 > in->slots_cap && table_grow(in) != 0)
        return -ENOMEM;
    uint64_t stacks_cap = in->stacks_cap;
    if (ospd_grow((void **)&in->stacks, &stacks_cap, (uint64_t)in->count + 1, sizeof *in->stacks) !=
        0)
        return -ENOMEM;
    in->stacks_cap = (uint32_t)stacks_cap;
    if (ospd_grow((void **)&in->pool, &in->pool_cap, in->pool_len + depth, sizeof *in->pool) != 0)
        return -ENOMEM;

    uint32_t index = in->count++;
    in->stacks[index] =
        (struct ospd_stack){.first = in->pool_len, .depth = (uint16_t)depth, .hash = hash};
    memcpy(in->pool + in->pool_len, pcs, (size_t)depth * sizeof *pcs);
    in->pool_len += depth;
    table_place(in->slots, in->slots_cap, hash, index);
    return index;
}

const uint64_t *ospd_stack_pcs(const struct ospd_interner *in, uint32_t index, uint32_t *depth)
{
    const struct ospd_stack *s = &in->stacks[index];
    *depth = s->depth;
    return in->pool + s->first;
}

void ospd_stack_set_end(struct ospd_interner *in, uint32_t index, uint32_t stop)
{
    if (index >= in->count || stop == 0 || stop >= OSP_UNWIND_STOP_COUNT)
        return;
    struct ospd_stack *s = &in->stacks[index];
    if (s->end == 0 || (s->end == OSP_UNWIND_GUESSED && stop != OSP_UNWIND_GUESSED))
        s->end = (uint8_t)stop;
}

uint32_t ospd_stack_end(const struct ospd_interner *in, uint32_t index)
{
    return index < in->count ? in->stacks[index].end : 0;
}
