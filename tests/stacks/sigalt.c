/* sigalt.c — a signal handler on a sigaltstack doing measurable work, for tests/e2e-stacks.sh:
 * main_loop raises SIGUSR1 over and over; its handler (on a 256 KiB signal stack of the
 * program's own) spends three units of work in handler_work for each unit main_work spends on
 * the thread's stack. A sample in handler_work is walked through the kernel's signal frame onto
 * the interrupted stack, to main. Exits 1 if the handler did not run on its signal stack.
 * Usage: sigalt [SECONDS] */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
    main_loop(argc > 1 ? atof(argv[1]) : 1.0);
    printf("done%s\n", sink == 42 ? "!" : "");
    return off_stack;
}
