/* inline_heavy.c — static inline helpers at -O2: rotate/mix/round helpers are inlined into
 * hash_block, which is itself called from main's loop. Without inline expansion all time is
 * hash_block's; with it, the inlined helpers own their lines. */
#include <stdint.h>
#include <stdio.h>

static inline uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t mix_round(uint64_t acc, uint64_t input)
{
    acc += input * 0xc2b2ae3d27d4eb4fULL;
    acc = rotl(acc, 31);
    return acc * 0x9e3779b185ebca87ULL;
}

static inline uint64_t avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static __attribute__((noinline)) uint64_t hash_block(const uint64_t *v, int n, uint64_t seed)
{
    uint64_t acc = seed;
    for (int i = 0; i < n; i++) {
        acc = mix_round(acc, v[i]);
        if ((i & 7) == 7)
            acc = avalanche(acc);
    }
    return avalanche(acc);
}

int main(void)
{
    static uint64_t v[1024];
    for (int i = 0; i < 1024; i++)
        v[i] = (uint64_t)i * 0x2545F4914F6CDD1DULL;
    uint64_t h = 0;
    for (int r = 0; r < 400000; r++)
        h = hash_block(v, 1024, h);
    printf("%llx\n", (unsigned long long)h);
    return 0;
}
