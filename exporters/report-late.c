/* report-late.c — the terminal report's line on on-CPU time paid late: a sample row of many
 * periods is CPU time a thread's timers missed, paid at once where a later signal landed
 * (shim/README.md, "The handler"; its stack is that instant's, not where the time was spent).
 * A thread that blocks in system calls after working in the kernel (SQLite's fsync each
 * statement: 88.7% of its on-CPU periods in rows of 16 or more, up to 99, each at whichever
 * SQLite function the paying signal found, where perf gives 85% to the calls' user leaves) and
 * threads whose bursts are shorter than a tick are paid so. Said when such rows hold a fifth of
 * the on-CPU time or more; a busy thread's rows (the reckoned clock pays up to 8 periods late)
 * stay under the bar. */
#include <stdio.h>

#include "ospx_internal.h"

#define LATE_ROW_PERIODS 16   /* a row of this many periods or more was paid late */
#define LATE_SAY         20.0 /* percent of the on-CPU periods */
#define LATE_LEAST       50   /* on-CPU periods below which nothing is said */

void ospx__report_late_cpu(FILE *out, size_t width, const struct ospx_model *model,
                           const char *warn)
{
    const struct ospx_raw *raw = model->raw;
    uint64_t on_cpu = 0, late = 0, heaviest = 0;
    for (size_t i = 0; i < raw->sample_count; i++) {
        const struct ospx_sample *s = &raw->samples[i];
        if (s->state != 0)
            continue;
        on_cpu += s->weight;
        if (s->weight >= LATE_ROW_PERIODS)
            late += s->weight;
        if (s->weight > heaviest)
            heaviest = s->weight;
    }
    if (on_cpu < LATE_LEAST || 100.0 * (double)late / (double)on_cpu < LATE_SAY)
        return;
    char first[192];
    snprintf(first, sizeof first,
             "sampling: %.1f%% of on-CPU time was paid late, %d periods or more at once (up to "
             "%llu)",
             100.0 * (double)late / (double)on_cpu, LATE_ROW_PERIODS, (unsigned long long)heaviest);
    ospx__emit_pair(out, width, warn, first,
                    "CPU time the timers missed (inside system calls that blocked, or bursts "
                    "shorter than a tick), paid where a later signal landed: self times there "
                    "are not where it was spent");
}
