/* malloc_churn.c — allocator churn: a pool of 4096 live blocks, replaced one at a time with
 * blocks of pseudo-random size (16 B .. 8 KiB), each touched once. Time sits in malloc/free
 * (libc, no frame pointers) under churn(). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) uint64_t churn(void **pool, int slots, long rounds)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL, sum = 0;
    for (long r = 0; r < rounds; r++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int i = (int)(x % (uint64_t)slots);
        size_t size = 16 + (size_t)((x >> 20) % 8192);
        free(pool[i]);
        pool[i] = malloc(size);
        ((unsigned char *)pool[i])[0] = (unsigned char)r;
        ((unsigned char *)pool[i])[size - 1] = (unsigned char)(r >> 8);
        sum += size;
    }
    return sum;
}

int main(void)
{
    enum { SLOTS = 4096 };
    static void *pool[SLOTS];
    uint64_t sum = churn(pool, SLOTS, 8000000);
    for (int i = 0; i < SLOTS; i++)
        free(pool[i]);
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}
