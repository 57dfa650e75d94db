/* hotspot.c — the bundled example: a worker thread spends its time in one known hot
 * function (checksum_block), the main thread mostly sleeps waiting for it. Prints a result
 * that does not depend on timing, so a profiled run and a plain run print the same thing. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BLOCK_WORDS 4096

/* The hot function: most of the program's CPU time is spent here. The mixing step is
 * written out in the loop (not a helper) so the time belongs to this function alone. */
static __attribute__((noinline)) uint64_t checksum_block(const uint64_t *block, uint64_t seed)
{
    uint64_t h = seed;
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < BLOCK_WORDS; i++) {
            h += block[i];
            h ^= h >> 33;
            h *= UINT64_C(0xff51afd7ed558ccd);
            h ^= h >> 33;
        }
    }
    return h;
}

/* A cooler function: a few percent of the time. */
static __attribute__((noinline)) void fill_block(uint64_t *block, uint64_t seed)
{
    for (int i = 0; i < BLOCK_WORDS; i++)
        block[i] = seed * (uint64_t)(i + 1);
}

struct job {
    int blocks;
    uint64_t result;
};

static void *worker(void *arg)
{
    struct job *job = arg;
    uint64_t *block = malloc(BLOCK_WORDS * sizeof *block);
    if (block == NULL)
        return NULL;
    uint64_t h = 0;
    for (int b = 0; b < job->blocks; b++) {
        fill_block(block, (uint64_t)b);
        h ^= checksum_block(block, h);
    }
    free(block);
    job->result = h;
    return NULL;
}

int main(int argc, char **argv)
{
    struct job job = {.blocks = argc > 1 ? atoi(argv[1]) : 25000, .result = 0};
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker, &job) != 0) {
        perror("pthread_create");
        return 1;
    }
    pthread_join(thread, NULL);
    printf("checksum of %d blocks: %016llx\n", job.blocks, (unsigned long long)job.result);
    return 0;
}
