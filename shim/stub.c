/* stub.c — the shim on platforms without a collector (Windows, Wasm): the same public API,
 * permanently inactive. Every call is a no-op and costs a function call. */
#include "osprey_prof.h"

void osp_prof_boot(void) {}

int osp_prof_active(void)
{
    return 0;
}

void osp_prof_thread_register(int64_t fiber_id, const char *label)
{
    (void)fiber_id;
    (void)label;
}

void osp_prof_thread_unregister(void) {}

void osp_prof_fiber_switch(int64_t fiber_id, const char *label, const void *stack,
                           size_t stack_size)
{
    (void)fiber_id;
    (void)label;
    (void)stack;
    (void)stack_size;
}
