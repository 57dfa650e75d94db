/* cfareg.c — main -> run_for -> cfareg_work (cfareg.S: its CFA in rax) -> cfareg_mix, or
 * cfaexpr_work (its CFA read from its frame) in its place, for tests/e2e-unwind-cfareg.sh.
 * Arguments: seconds of CPU time (default 2), the function (cfareg_work, the default, or
 * cfaexpr_work). Prints the checksum. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t cfareg_work(uint64_t rounds);
uint64_t cfaexpr_work(uint64_t rounds);

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static uint64_t run_for(double seconds, uint64_t (*work)(uint64_t))
{
    uint64_t sum = 0;
    double end = cpu_seconds() + seconds;
    while (cpu_seconds() < end)
        sum += work(100);
    return sum;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    int expr = argc > 2 && strcmp(argv[2], "cfaexpr_work") == 0;
    printf("%llx\n", (unsigned long long)run_for(seconds, expr ? cfaexpr_work : cfareg_work));
    return 0;
}
