/* grow.c — the one way the exporters' tables grow: ospx__resize, a realloc that leaves the table
 * as it was when the memory is not there; ospx__grow (inline in ospx_internal.h) doubles a full
 * table with it, from a first size when empty; tables that grow side by side (parallel arrays
 * under one count) are resized one by one to the same room. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_internal.h"

int ospx__resize(void *array, size_t capacity, size_t element_size)
{
    void *elements;
    memcpy(&elements, array, sizeof elements);
    void *resized = realloc(elements, capacity * element_size);
    if (resized == NULL)
        return -ENOMEM;
    memcpy(array, &resized, sizeof resized);
    return 0;
}
