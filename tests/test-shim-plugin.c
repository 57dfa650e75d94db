/* test-shim-plugin.c — a module test-shim-target loads with dlopen, spins in, and unloads,
 * so the end-to-end tests can check that objects loaded after start reach the image list. */
#include <stdint.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((visibility("default"))) uint64_t plugin_spin(uint64_t ns)
{
    uint64_t end = now_ns() + ns, x = 1;
    while (now_ns() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}
