/* exit_code.c — work, then exit(3) from inside a function (not a return from main). The
 * profile must still be written; the exit status must stay 3. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noinline)) uint64_t work(long n)
{
    uint64_t x = 1;
    for (long i = 0; i < n; i++)
        x = (x ^ (x >> 31)) * 3935559000370003845ULL + 2691343689449507681ULL;
    return x;
}

static __attribute__((noinline)) void finish(uint64_t r)
{
    printf("%llx\n", (unsigned long long)r);
    exit(3);
}

int main(void)
{
    finish(work(300000000L));
}
