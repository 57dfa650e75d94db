/* burst.c — sleeps 100 ms, then runs 100 ms of its CPU at a stack depth of argv[1] frames
 * (default 40); ten times: a thread that runs again after the tick has grown idle fills its
 * ring at the rate (`osprey burst --profile -- 60`, then `dropped`; daemon/README.md, "The
 * tick's pace"). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static volatile unsigned long sink;
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
__attribute__((noinline)) static void deep(int d)
{
    if (d) {
        deep(d - 1);
        sink++;
        return;
    }
    double start = cpu_s();
    while (cpu_s() - start < 0.1)
        for (int i = 0; i < 10000; i++)
            sink += (unsigned long)i;
}
int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 40;
    for (int k = 0; k < 10; k++) {
        usleep(100000);
        deep(depth);
    }
    puts("ok");
    return 0;
}
