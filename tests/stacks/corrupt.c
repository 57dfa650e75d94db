/* corrupt.c — hostile stacks for the walk, for tests/e2e-stacks.sh. The program spins with its
 * frame pointer set to chains that a walk must refuse (spin_on, in assembly with no unwind
 * rows, so the walk follows rbp): a record pointing at itself, chains going down, records
 * past a stack's end, random words; on the thread's stack, on a coroutine's heap stack (walked
 * from a copy), and on a stack whose neighbour page another thread maps and unmaps all the
 * while, the chain pointing into it. It must run to its end with its own output and status.
 * Usage: corrupt [SECONDS] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

/* spin_on(fp, n): n iterations with rbp = fp. No CFI: the walk takes rbp for a frame. */
uint64_t spin_on(uint64_t fp, uint64_t n);
__asm__(".text\n"
        ".globl spin_on\n"
        ".type spin_on, @function\n"
        "spin_on:\n"
        "  push %rbp\n"
        "  mov %rdi, %rbp\n"
        "1: dec %rsi\n"
        "  jnz 1b\n"
        "  pop %rbp\n"
        "  mov %rsi, %rax\n"
        "  ret\n"
        ".size spin_on, .-spin_on\n");

#define STACK_SIZE (64u << 10)
#define PAGE       4096u

static volatile int stop;
static char *region; /* a coroutine stack, then the page another thread maps and unmaps */
static uint64_t rng = 88172645463325252u;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Fill `words` words at `at` with a hostile chain of the given kind; returns the fp to use. */
static uint64_t hostile(uint64_t *at, size_t words, int kind, uint64_t beyond)
{
    for (size_t i = 0; i < words; i++)
        at[i] = next_random();
    uint64_t base = (uint64_t)(uintptr_t)at;
    switch (kind) {
    case 0: /* a record pointing at itself */
        at[0] = base;
        at[1] = base; /* a "return address" that is not code */
        return base;
    case 1: /* down: each record below the last */
        for (size_t i = 16; i + 2 <= words; i += 16) {
            at[i] = base + (i - 16) * 8;
            at[i + 1] = 0x401000;
        }
        return base + (words - 16) * 8;
    case 2: /* a chain into the page past the stack's end */
        at[words - 2] = beyond;
        at[words - 1] = 0x401000;
        return base + (words - 2) * 8;
    default: /* random words, rbp at one of them */
        return base + 8 * (next_random() % words);
    }
}

static void *flapper(void *arg)
{
    char *page = arg;
    while (!stop) { /* the neighbour of the coroutine stack comes and goes */
        munmap(page, PAGE);
        void *p = mmap(page, PAGE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != MAP_FAILED && p != page)
            munmap(p, PAGE);
        if (p == page)
            memset(page, 0x5a, 64);
    }
    return NULL;
}

static ucontext_t main_ctx, coro_ctx;
static uint64_t total;
static double seconds = 1.0;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void rounds(uint64_t *scratch, size_t words, uint64_t beyond, double until)
{
    for (int kind = 0; now_s() < until; kind = (kind + 1) % 4)
        total += spin_on(hostile(scratch, words, kind, beyond), 2000000) + 1;
}

static void coroutine(void)
{
    uint64_t scratch[1024]; /* on the coroutine's stack */
    rounds(scratch, 1024, (uint64_t)(uintptr_t)region + STACK_SIZE, now_s() + seconds / 2);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seconds = atof(argv[1]);
    uint64_t scratch[1024];
    rounds(scratch, 1024, 8, now_s() + seconds / 2); /* on the thread's stack */
    region =
        mmap(NULL, STACK_SIZE + PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_t t;
    if (region == MAP_FAILED || getcontext(&coro_ctx) != 0 ||
        pthread_create(&t, NULL, flapper, region + STACK_SIZE) != 0) {
        perror("corrupt");
        return 2;
    }
    coro_ctx.uc_stack.ss_sp = region;
    coro_ctx.uc_stack.ss_size = STACK_SIZE;
    coro_ctx.uc_link = &main_ctx;
    makecontext(&coro_ctx, coroutine, 0);
    swapcontext(&main_ctx, &coro_ctx);
    stop = 1;
    pthread_join(t, NULL);
    printf("done %d\n", total > 0);
    return 0;
}
