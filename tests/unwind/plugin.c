/* plugin.c — a frameless module (gcc -O2 -shared -fPIC) that frameless.c dlopens mid-run:
 * plugin_work -> plugin_leaf for the CPU time asked. */
#include <time.h>

static volatile double sink;

__attribute__((noinline)) static double plugin_leaf(double x)
{
    for (int i = 0; i < 20000; i++)
        x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

double plugin_work(double x, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    double end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + seconds;
    for (;;) {
        x = plugin_leaf(x);
        sink = x;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        if ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 >= end)
            return x;
    }
}
