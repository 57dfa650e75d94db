/* sigalt.c — a signal handler on a sigaltstack doing measurable work, for tests/e2e-stacks.sh:
 * main_loop raises SIGUSR1 over and over; its handler (on a 256 KiB signal stack of the
 * program's own) spends three units of work in handler_work for each unit main_work spends on
 * the thread's stack. A sample in handler_work is walked through the kernel's signal frame onto
 * the interrupted stack, to main. With `coroutine`, main_loop runs on a makecontext stack from
 * the heap that nothing declares, entered by coro_entry: the walk copies that stack at the
 * signal frame and reaches coro_entry. Exits 1 if the handler did not run on its signal stack.
 * Usage: sigalt [SECONDS] [coroutine] */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#define ALT_SIZE (256u << 10)

static char *alt;
static volatile uint64_t sink;
static volatile int off_stack;

static __attribute__((noinline)) uint64_t burn(uint64_t seed, int n)
{
    uint64_t h = seed;
    for (int i = 0; i < n; i++) {
        h ^= h >> 29;
        h *= UINT64_C(0xbf58476d1ce4e5b9);
    }
    return h;
}

static __attribute__((noinline)) void handler_work(void)
{
    sink += burn(sink, 120000);
}

static void on_signal(int sig)
{
    (void)sig;
    char here;
    if (&here < alt || &here >= alt + ALT_SIZE)
        off_stack = 1;
    handler_work();
}

static __attribute__((noinline)) void main_work(void)
{
    sink += burn(sink + 1, 40000);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static __attribute__((noinline)) void main_loop(double seconds)
{
    double end = now_s() + seconds;
    while (now_s() < end) {
        main_work();
        raise(SIGUSR1);
    }
}

static ucontext_t main_ctx, coro_ctx;
static double seconds = 1.0;

static __attribute__((noinline)) void coro_entry(void)
{
    main_loop(seconds);
    sink += 1; /* not a tail call: coro_entry stays on the stack */
}

int main(int argc, char **argv)
{
    alt = malloc(ALT_SIZE);
    stack_t ss = {.ss_sp = alt, .ss_size = ALT_SIZE, .ss_flags = 0};
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_ONSTACK | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    if (alt == NULL || sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0) {
        perror("sigalt");
        return 2;
    }
    if (argc > 1)
        seconds = atof(argv[1]);
    if (argc > 2 && strcmp(argv[2], "coroutine") == 0) {
        char *stack = malloc(256u << 10);
        if (stack == NULL || getcontext(&coro_ctx) != 0)
            return 2;
        coro_ctx.uc_stack.ss_sp = stack;
        coro_ctx.uc_stack.ss_size = 256u << 10;
        coro_ctx.uc_link = &main_ctx;
        makecontext(&coro_ctx, coro_entry, 0);
        swapcontext(&main_ctx, &coro_ctx);
    } else {
        main_loop(seconds);
    }
    printf("done%s\n", sink == 42 ? "!" : "");
    return off_stack;
}
