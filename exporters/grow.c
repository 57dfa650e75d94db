/* grow.c — the one way the exporters' tables grow: doubled when full, from a first size when
 * empty, left as they were when the memory is not there; tables that grow side by side
 * (parallel arrays under one count) are resized one by one to the same room. */
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

int ospx__grow(void *array, size_t *capacity, size_t count, size_t element_size, size_t initial)
{
    if (count < *capacity)
        return 0;
    size_t grown_capacity = *capacity > 0 ? *capacity * 2 : initial;
    if (ospx__resize(array, grown_capacity, element_size) != 0)
        return -ENOMEM;
    *capacity = grown_capacity;
    return 0;
}
