/* memory.c — the tables a reader or a writer built, freed in one call: each owner lists what
 * it holds (OSPC_FREE_ALL) instead of a line of free() per table. */
#include <stdlib.h>

#include "ospc.h"

void ospc_free_all(void *const *pointers, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(pointers[i]);
}
