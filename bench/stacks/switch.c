/* switch.c — what osp_prof_fiber_switch costs a runtime that switches stacks itself: two
 * fibers declared alternately, 20 million switches, three rounds, the time per switch. Run under
 * `osprey` (the call is the preloaded shim's; without it the program says so and exits 1).
 * Built and run by run.sh. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "osprey_prof.h"

#pragma weak osp_prof_fiber_switch

static char stack_a[65536], stack_b[65536];

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(void)
{
    if (!osp_prof_fiber_switch) {
        puts("switch: osp_prof_fiber_switch is not there (run it under osprey)");
        return 1;
    }
    enum { N = 20000000 };
    for (int round = 0; round < 3; round++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < N; i += 2) {
            osp_prof_fiber_switch(1, "heavy", stack_a, sizeof stack_a);
            osp_prof_fiber_switch(2, "a longer label of a fiber", stack_b, sizeof stack_b);
        }
        printf("osp_prof_fiber_switch: %.2f ns a switch\n", (double)(now_ns() - t0) / N);
    }
    return 0;
}
