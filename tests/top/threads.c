/* A process whose threads are in known places, for `osprey dump` (tests/e2e-dump.sh): the main
 * thread burns CPU in spin_here; "napper" sleeps 2 ms at a time in nap_here (it blocks and
 * wakes, over and over); "reader" blocks in read_here, reading stdin, until a line comes, which
 * it prints ("read: LINE"). It prints "ready" once the threads are in place and runs until
 * killed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long spin_sink;

__attribute__((noinline)) static void spin_here(void)
{
    for (unsigned long i = 0; i < 100000; i++)
        spin_sink = spin_sink * 6364136223846793005ul + i; /* volatile: every round is work */
}

__attribute__((noinline)) static void nap_here(void)
{
    struct timespec nap = {0, 2000000};
    nanosleep(&nap, NULL);
    __asm__ volatile("" ::: "memory"); /* not a tail call: nap_here stays on the stack */
}

static void *napper(void *unused)
{
    (void)unused;
    for (;;)
        nap_here();
    return NULL;
}

__attribute__((noinline)) static ssize_t read_here(char *line, size_t size)
{
    ssize_t n = read(STDIN_FILENO, line, size - 1);
    __asm__ volatile("" ::: "memory");
    return n;
}

static void *reader(void *unused)
{
    (void)unused;
    char line[256];
    ssize_t n;
    while ((n = read_here(line, sizeof line)) > 0) {
        line[n] = '\0';
        printf("read: %s", line);
        fflush(stdout);
    }
    return NULL;
}

int main(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, napper, NULL);
    pthread_setname_np(a, "napper");
    pthread_create(&b, NULL, reader, NULL);
    pthread_setname_np(b, "reader");
    usleep(100000); /* the reader in its read */
    printf("ready\n");
    fflush(stdout);
    for (;;)
        spin_here();
}
