/* clock.c — the time in nanoseconds, read one way everywhere. */
#include "ospc.h"

uint64_t ospc_clock_ns(clockid_t clock)
{
    struct timespec now;
    if (clock_gettime(clock, &now) != 0)
        return 0;
    return (uint64_t)now.tv_sec * UINT64_C(1000000000) + (uint64_t)now.tv_nsec;
}

double ospc_seconds_between(uint64_t then, uint64_t now)
{
    return now >= then ? (double)(now - then) / 1e9 : -(double)(then - now) / 1e9;
}
