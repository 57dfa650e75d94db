/* leafloop.c — a leaf-heavy hot loop: scan_buffer calls the tiny leaf mix_word in a tight
 * loop. The leaf owns the self time; its caller scan_buffer must still appear on the stack
 * (total ≈ 100%), which needs a frame pointer in the leaf (-mno-omit-leaf-frame-pointer). */
#include <stdint.h>
#include <stdio.h>

static __attribute__((noinline)) uint64_t mix_word(uint64_t h, uint64_t w)
{
    h ^= w;
    h *= 0x100000001b3ULL;
    return h ^ (h >> 29);
}

static __attribute__((noinline)) uint64_t scan_buffer(const uint64_t *buf, int n, uint64_t h)
{
    for (int i = 0; i < n; i++)
        h = mix_word(h, buf[i]);
    return h;
}

int main(void)
{
    static uint64_t buf[4096];
    for (int i = 0; i < 4096; i++)
        buf[i] = (uint64_t)i * 2654435761u;
    uint64_t h = 1469598103934665603ULL;
    for (int r = 0; r < 80000; r++)
        h = scan_buffer(buf, 4096, h);
    printf("%llx\n", (unsigned long long)h);
    return 0;
}
