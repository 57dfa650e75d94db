/* mixed.c — an example with some shape to its profile: the main thread sorts records with a
 * recursive quicksort and counts them in a hash table, while a second thread sieves primes
 * and a third sleeps between small jobs. Output does not depend on timing. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECORDS    400000
#define TABLE_SIZE (1 << 18) /* above the 100000 possible keys */

struct record {
    uint32_t key;
    uint32_t value;
};

static uint32_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    return (uint32_t)(*state >> 33);
}

static __attribute__((noinline)) void make_records(struct record *records, int count, uint64_t seed)
{
    for (int i = 0; i < count; i++) {
        records[i].key = next_random(&seed) % 100000;
        records[i].value = (uint32_t)i;
    }
}

static __attribute__((noinline)) int partition(struct record *r, int lo, int hi)
{
    uint32_t pivot = r[(lo + hi) / 2].key;
    int i = lo - 1, j = hi + 1;
    for (;;) {
        do
            i++;
        while (r[i].key < pivot);
        do
            j--;
        while (r[j].key > pivot);
        if (i >= j)
            return j;
        struct record t = r[i];
        r[i] = r[j];
        r[j] = t;
    }
}

static __attribute__((noinline)) void quicksort(struct record *r, int lo, int hi)
{
    if (lo < hi) {
        int p = partition(r, lo, hi);
        quicksort(r, lo, p);
        quicksort(r, p + 1, hi);
    }
}

static __attribute__((noinline)) uint32_t hash_key(uint32_t key)
{
    uint32_t h = key * 2654435761u;
    for (int i = 0; i < 16; i++)
        h = (h ^ (h >> 15)) * 2246822519u;
    return h & (TABLE_SIZE - 1);
}

static __attribute__((noinline)) unsigned count_distinct(const struct record *r, int count)
{
    static uint32_t table[TABLE_SIZE];
    memset(table, 0, sizeof table);
    unsigned distinct = 0;
    for (int i = 0; i < count; i++) {
        uint32_t slot = hash_key(r[i].key);
        while (table[slot] != 0 && table[slot] != r[i].key + 1)
            slot = (slot + 1) & (TABLE_SIZE - 1);
        if (table[slot] == 0) {
            table[slot] = r[i].key + 1;
            distinct++;
        }
    }
    return distinct;
}

static __attribute__((noinline)) int sieve(int limit)
{
    char *composite = calloc((size_t)limit + 1, 1);
    int primes = 0;
    for (int n = 2; n <= limit; n++) {
        if (composite[n])
            continue;
        primes++;
        for (long m = (long)n * n; m <= limit; m += n)
            composite[m] = 1;
    }
    free(composite);
    return primes;
}

static void *prime_worker(void *arg)
{
    int *result = arg;
    for (int round = 0; round < 40; round++)
        *result = sieve(4000000);
    return NULL;
}

static void *sleepy_worker(void *arg)
{
    unsigned *jobs = arg;
    for (int i = 0; i < 20; i++) {
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
        *jobs += (unsigned)sieve(20000) > 0;
    }
    return NULL;
}

int main(void)
{
    int primes = 0;
    unsigned jobs = 0;
    pthread_t primes_thread, sleepy_thread;
    pthread_create(&primes_thread, NULL, prime_worker, &primes);
    pthread_create(&sleepy_thread, NULL, sleepy_worker, &jobs);

    struct record *records = malloc(RECORDS * sizeof *records);
    unsigned distinct = 0;
    for (int round = 0; round < 24; round++) {
        make_records(records, RECORDS, (uint64_t)round + 1);
        quicksort(records, 0, RECORDS - 1);
        distinct += count_distinct(records, RECORDS);
    }
    free(records);
    pthread_join(primes_thread, NULL);
    pthread_join(sleepy_thread, NULL);
    printf("distinct keys %u, primes below 4000000: %d, sleepy jobs %u\n", distinct, primes, jobs);
    return 0;
}
