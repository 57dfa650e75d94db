/* plugin.c — a shared object loaded by dlplugin with dlopen; plugin_hot is its hot function. */
#include <stdint.h>

__attribute__((noinline)) uint64_t plugin_hot(uint64_t x, long n)
{
    for (long i = 0; i < n; i++)
        x = (x ^ (x >> 32)) * 0xd6e8feb86659fd93ULL;
    return x;
}
