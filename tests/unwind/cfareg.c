/* cfareg.c — main -> run_for -> cfareg_work (cfareg.S: its CFA in rax) -> cfareg_mix, for
 * tests/e2e-unwind-cfareg.sh. Argument: seconds of CPU time (default 2). Prints the checksum. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t cfareg_work(uint64_t rounds);

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static uint64_t run_for(double seconds)
{
    uint64_t sum = 0;
    double end = cpu_seconds() + seconds;
    while (cpu_seconds() < end)
        sum += cfareg_work(100);
    return sum;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    printf("%llx\n", (unsigned long long)run_for(seconds));
    return 0;
}
