/* coroutines.c — a runtime that switches stacks itself: two coroutines on 256 KiB stacks from
 * the heap (makecontext/swapcontext), one doing three units of work for each unit the other
 * does, so coro_heavy holds 75% of the CPU time and coro_light 25%, both in burn().
 *
 * It tells the profiler which stack it switches to (osp_prof_fiber_switch, osprey_prof.h),
 * declared weak so that the program runs, and links, with or without the profiler's library
 * (LD_PRELOAD under `osprey`, or linked). `--no-api` leaves the calls out: the profiler then
 * finds the coroutine's stack by itself (shim/README.md, "Stacks that are not the thread's
 * own"). Usage: coroutines [SECONDS] [--no-api]. Prints the rounds run and the units each
 * coroutine did ("rounds N heavy 3N light N"); exits 1 if the split was not 3:1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "osprey_prof.h"

#pragma weak osp_prof_fiber_switch

#define STACK_SIZE (256u << 10)

static ucontext_t scheduler, heavy_ctx, light_ctx;
static char *heavy_stack, *light_stack;
static int use_api = 1;
static volatile int stopping;
static uint64_t units_heavy, units_light, sink;

/* One unit of work, about 0.1 ms. */
static __attribute__((noinline)) uint64_t burn(uint64_t seed)
{
    uint64_t h = seed;
    for (int i = 0; i < 40000; i++) {
        h ^= h >> 29;
        h *= UINT64_C(0xbf58476d1ce4e5b9);
    }
    return h;
}

/* Switch to a coroutine and back: the profiler is told before each switch. */
static void run(ucontext_t *to, int64_t id, const char *label, char *stack)
{
    if (use_api && osp_prof_fiber_switch)
        osp_prof_fiber_switch(id, label, stack, STACK_SIZE);
    swapcontext(&scheduler, to);
    if (use_api && osp_prof_fiber_switch)
        osp_prof_fiber_switch(0, "main", NULL, 0);
}

static __attribute__((noinline)) void coro_heavy(void)
{
    while (!stopping) {
        for (int i = 0; i < 3; i++)
            sink += burn(sink + (uint64_t)i);
        units_heavy += 3;
        swapcontext(&heavy_ctx, &scheduler);
    }
}

static __attribute__((noinline)) void coro_light(void)
{
    while (!stopping) {
        sink += burn(sink + 7);
        units_light += 1;
        swapcontext(&light_ctx, &scheduler);
    }
}

static char *coroutine(ucontext_t *ctx, void (*entry)(void))
{
    char *stack = malloc(STACK_SIZE);
    if (stack == NULL || getcontext(ctx) != 0) {
        perror("coroutines");
        exit(1);
    }
    ctx->uc_stack.ss_sp = stack;
    ctx->uc_stack.ss_size = STACK_SIZE;
    ctx->uc_link = &scheduler;
    makecontext(ctx, entry, 0);
    return stack;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-api") == 0)
            use_api = 0;
        else
            seconds = atof(argv[i]);
    }
    heavy_stack = coroutine(&heavy_ctx, coro_heavy);
    light_stack = coroutine(&light_ctx, coro_light);
    double end = now_s() + seconds;
    uint64_t rounds = 0;
    /* The CPU clock, not the wall clock, would make the count steadier; the split is what
     * matters, and each round is three units to one whatever the machine does. */
    while (now_s() < end) {
        run(&heavy_ctx, 1, "heavy", heavy_stack);
        run(&light_ctx, 2, "light", light_stack);
        rounds++;
    }
    stopping = 1; /* each coroutine returns to the scheduler through uc_link */
    run(&heavy_ctx, 1, "heavy", heavy_stack);
    run(&light_ctx, 2, "light", light_stack);
    printf("rounds %llu heavy %llu light %llu%s\n", (unsigned long long)rounds,
           (unsigned long long)units_heavy, (unsigned long long)units_light, sink == 42 ? "!" : "");
    free(heavy_stack);
    free(light_stack);
    return units_heavy == 3 * units_light ? 0 : 1;
}
