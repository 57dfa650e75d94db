/* libc_heavy.c — most time inside the C library (built without frame pointers on Debian):
 * qsort with a user comparator, memcpy of large blocks, strlen of long strings. The user
 * callers (sort_round, copy_round, measure_round) should still own the libc time as total. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned rng = 12345;
static unsigned next(void)
{
    return rng = rng * 1103515245u + 12345u;
}

static __attribute__((noinline)) int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static __attribute__((noinline)) long sort_round(int *v, int n)
{
    for (int i = 0; i < n; i++)
        v[i] = (int)(next() >> 1);
    qsort(v, (size_t)n, sizeof *v, compare_ints);
    return v[n / 2];
}

static __attribute__((noinline)) long copy_round(char *dst, const char *src, size_t n)
{
    long s = 0;
    for (int i = 0; i < 64; i++) {
        memcpy(dst, src, n);
        s += dst[i * 7];
    }
    return s;
}

static __attribute__((noinline)) long measure_round(const char *s)
{
    long t = 0;
    for (int i = 0; i < 64; i++)
        t += (long)strlen(s + i);
    return t;
}

int main(void)
{
    int n = 200000;
    int *v = malloc(sizeof *v * (size_t)n);
    size_t big = 8u << 20;
    char *a = malloc(big), *b = malloc(big);
    memset(a, 'x', big);
    a[big - 1] = 0;
    long acc = 0;
    for (int r = 0; r < 12; r++) {
        acc += sort_round(v, n);
        acc += copy_round(b, a, big);
        acc += measure_round(a);
    }
    printf("%ld\n", acc);
    free(v);
    free(a);
    free(b);
    return 0;
}
