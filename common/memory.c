/* memory.c — the tables a reader or a writer built, freed in one call: each owner lists what
 * it holds (OSPC_FREE_ALL) instead of a line of free() per table; and a table of addresses
 * sorted with its repeats left out. */
#include <stdlib.h>

#include "ospc.h"

void ospc_free_all(void *const *pointers, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(pointers[i]);
}

static int compare_values(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t ospc_sort_unique(uint64_t *values, size_t count)
{
    if (count == 0)
        return 0;
    qsort(values, count, sizeof *values, compare_values);
    size_t unique = 1;
    for (size_t i = 1; i < count; i++)
        if (values[i] != values[unique - 1])
            values[unique++] = values[i];
    return unique;
}
