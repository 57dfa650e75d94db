/* run.c — the run's process-wide state, which boot sets and every layer above this one reads.
 *
 * Owns whether the process is profiled now (on once boot succeeded; off after the exit handler
 * and in a forked child), whether the program entered a seccomp sandbox, the pid that booted, the
 * process's registry (the one the public API and the interposers register threads in), the shared
 * header, and the sampling period. Here, below the handler and boot, so that the code that reads
 * them never has to call up.
 */
#include "osp_core.h"

_Atomic int osp__active_flag;
_Atomic int osp__sandboxed;
pid_t osp__booted_pid;
struct osp__registry osp__the_registry;
struct osp_ring_header *osp__header;
uint64_t osp__period_ns = 1000000000u / OSP__DEFAULT_RATE;

int osp__is_active(void)
{
    return atomic_load_explicit(&osp__active_flag, memory_order_acquire);
}

pid_t osp__boot_pid(void)
{
    return osp__booted_pid;
}

void osp__set_period(uint32_t rate_hz)
{
    osp__period_ns = osp__period_of_rate(rate_hz);
}
