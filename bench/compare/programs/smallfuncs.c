/* smallfuncs.c — many small functions with known weights: step_a does 4 units of work per
 * call, step_b 3, step_c 2, step_d 1, all called the same number of times from a dispatcher.
 * Expected self shares ≈ 40 / 30 / 20 / 10 % (less the dispatcher's own share). */
#include <stdint.h>
#include <stdio.h>

#define WORK(n)                                                                                    \
    for (int k = 0; k < (n)*40; k++) {                                                             \
        x ^= x << 13;                                                                              \
        x ^= x >> 7;                                                                               \
        x ^= x << 17;                                                                              \
    }

static __attribute__((noinline)) uint64_t step_a(uint64_t x)
{
    WORK(4) return x;
}
static __attribute__((noinline)) uint64_t step_b(uint64_t x)
{
    WORK(3) return x;
}
static __attribute__((noinline)) uint64_t step_c(uint64_t x)
{
    WORK(2) return x;
}
static __attribute__((noinline)) uint64_t step_d(uint64_t x)
{
    WORK(1) return x;
}

static __attribute__((noinline)) uint64_t dispatch(uint64_t x, int i)
{
    switch (i & 3) {
    case 0:
        return step_a(x);
    case 1:
        return step_b(x);
    case 2:
        return step_c(x);
    default:
        return step_d(x);
    }
}

int main(void)
{
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 2000000 * 4; i++)
        x = dispatch(x, i);
    printf("%llu\n", (unsigned long long)x);
    return 0;
}
