/* busy.c — one thread, a fixed amount of work (argv[1] rounds): bench/collector/run.sh. */
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void work(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i * i;
}
int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 600000000ul;
    work(n);
    printf("%lu\n", sink & 1);
    return 0;
}
