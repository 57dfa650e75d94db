/* grow.c — the one way the exporters' tables grow: doubled when full, from a first size when
 * empty, left as they were when the memory is not there. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_internal.h"

int ospx__grow(void *array, size_t *capacity, size_t count, size_t element_size, size_t initial)
{
    if (count < *capacity)
        return 0;
    size_t grown_capacity = *capacity > 0 ? *capacity * 2 : initial;
    void *elements;
    memcpy(&elements, array, sizeof elements);
    void *grown = realloc(elements, grown_capacity * element_size);
    if (grown == NULL)
        return -ENOMEM;
    memcpy(array, &grown, sizeof grown);
    *capacity = grown_capacity;
    return 0;
}
