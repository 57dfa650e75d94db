/* policy.c — the sampling policy: pure functions, no state (osp_policy.h).
 *
 * Owns the numbers the handler applies: the rate (OSPREY_PROFILE_HZ, clamped), the credit
 * rule that turns the CPU time a thread used into weighted ON_CPU samples (perf's cpu-clock
 * counting: one sample per period of the thread's CPU time, paid when the thread is found
 * running), the weight of a wait, and when the next sample of a thread with a given share of
 * a CPU will be due; and which collector a forked child greets. Every function here is
 * async-signal-safe (arithmetic only) except osp__parse_rate.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "osp_policy.h"

uint32_t osp__parse_rate(const char *text, int *bad)
{
    *bad = 0;
    if (text == NULL || text[0] == '\0')
        return OSP__DEFAULT_RATE;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    if (end == text || *end != '\0') {
        *bad = 1;
        return OSP__DEFAULT_RATE;
    }
    if (errno == ERANGE || v < OSP__MIN_RATE || v > OSP__MAX_RATE)
        *bad = 2;
    if (errno == ERANGE)
        v = v < 0 ? OSP__MIN_RATE : OSP__MAX_RATE;
    if (v < OSP__MIN_RATE)
        return OSP__MIN_RATE;
    if (v > OSP__MAX_RATE)
        return OSP__MAX_RATE;
    return (uint32_t)v;
}

uint64_t osp__period_of_rate(uint32_t rate_hz)
{
    return 1000000000u / (rate_hz ? rate_hz : OSP__DEFAULT_RATE);
}

uint64_t osp__credit_cap(uint64_t period)
{
    uint64_t cap = OSP__MAX_WEIGHT_NS / period;
    return cap < OSP__MAX_WEIGHT ? OSP__MAX_WEIGHT : cap;
}

uint64_t osp__credit_needed(const struct osp__credit *c, uint64_t cpu_ns, uint64_t period)
{
    /* The next sample is due when the credit reaches half a period again. */
    int64_t credit = (int64_t)(cpu_ns - c->paid_ns);
    int64_t needed = (int64_t)(period / 2) - credit;
    return needed > 0 ? (uint64_t)needed : 0;
}

uint32_t osp__credit_take(struct osp__credit *c, uint64_t cpu_ns, uint64_t period,
                          uint64_t *needed_ns)
{
    uint32_t weight = 0;
    int64_t credit = (int64_t)(cpu_ns - c->paid_ns);
    if (credit >= (int64_t)(period / 2)) {
        uint64_t w = ((uint64_t)credit + period / 2) / period;
        uint64_t cap = osp__credit_cap(period);
        if (w > cap) {
            /* Older CPU time than the cap: not this stack's. */
            c->paid_ns = cpu_ns - cap * period;
            w = cap;
        }
        weight = (uint32_t)w;
        c->paid_ns += w * period;
    }
    *needed_ns = osp__credit_needed(c, cpu_ns, period);
    return weight;
}

uint32_t osp__credit_take_recent(struct osp__credit *c, uint64_t cpu_ns, uint64_t ran_ns,
                                 uint64_t period, uint64_t *needed_ns)
{
    uint32_t weight = osp__credit_take(c, cpu_ns, period, needed_ns);
    uint64_t limit = (ran_ns + period / 2) / period;
    if (limit == 0)
        limit = 1;
    if (weight > limit) {
        c->paid_ns -= (weight - limit) * period;
        weight = (uint32_t)limit;
        *needed_ns = osp__credit_needed(c, cpu_ns, period);
    }
    return weight;
}

uint32_t osp__cpu_share(uint64_t wall_ns, uint64_t used_ns)
{
    return wall_ns > 0 && used_ns < wall_ns ? (uint32_t)(used_ns * 1024u / wall_ns) : 1024u;
}

uint64_t osp__due_time(uint64_t now_ns, uint64_t needed_ns, uint32_t share_1024)
{
    if (share_1024 == 0)
        share_1024 = 1;
    if (share_1024 > 1024)
        share_1024 = 1024;
    return now_ns + needed_ns * 1024u / share_1024;
}

uint32_t osp__wait_weight(uint64_t t0_ns, uint64_t t1_ns, uint64_t cpu0_ns, uint64_t cpu1_ns,
                          uint64_t period)
{
    int64_t none = 0;
    return osp__wait_weight_carry(t0_ns, t1_ns, cpu0_ns, cpu1_ns, period, &none);
}

uint32_t osp__wait_weight_carry(uint64_t t0_ns, uint64_t t1_ns, uint64_t cpu0_ns, uint64_t cpu1_ns,
                                uint64_t period, int64_t *carry_ns)
{
    uint64_t wall = t1_ns > t0_ns ? t1_ns - t0_ns : 0;
    uint64_t used = cpu1_ns > cpu0_ns ? cpu1_ns - cpu0_ns : 0;
    uint64_t waited = wall > used ? wall - used : 0;
    int64_t carry = *carry_ns;
    if (period == 0 || carry < -(int64_t)period || carry > (int64_t)period)
        carry = 0; /* never more than half a period: a slot's leftover, or a new period */
    if (waited / period >= UINT32_MAX) {
        *carry_ns = 0;
        return UINT32_MAX;
    }
    int64_t total = (int64_t)waited + carry;
    if (total < 0) {
        *carry_ns = total;
        return 0;
    }
    uint64_t weight = ((uint64_t)total + period / 2) / period;
    *carry_ns = total - (int64_t)(weight * period);
    return (uint32_t)weight;
}

uint32_t osp__call_wait_weight(uint64_t length_ns, uint64_t period, uint64_t *until_ns)
{
    if (period == 0)
        return 0;
    uint64_t until = *until_ns;
    if (until == 0 || until > period)
        until = period; /* a new site's is drawn by the caller; a stale one starts whole */
    if (length_ns < until) {
        *until_ns = until - length_ns;
        return 0;
    }
    uint64_t past = length_ns - until;
    if (past / period >= UINT32_MAX - 1) {
        *until_ns = period;
        return UINT32_MAX;
    }
    *until_ns = period - past % period;
    return (uint32_t)(1 + past / period);
}

const char *osp__fork_greets(const char *own, int own_attached, const char *greeted, int *attached)
{
    /* A collector greeted answers: it took the parent's greeting (waited for at the parent's
     * fork when it had not attached then, and answered), or the parent's own spawned one,
     * which is `own`. */
    if (own_attached || greeted == NULL || greeted[0] == '\0' || strcmp(greeted, own) == 0) {
        *attached = own_attached;
        return own;
    }
    *attached = 1;
    return greeted;
}

enum osp__collector_seen osp__collector_seen(const char *fields, uint64_t started, char *state,
                                             int *exit_code)
{
    *state = 0;
    *exit_code = -1;
    if (fields == NULL || fields[0] == '\0' || fields[1] != ' ' || started == 0)
        return OSP__COLLECTOR_UNKNOWN;
    *state = fields[0];
    uint64_t start = 0;
    int have_start = 0;
    /* fields is at field 3; each space begins the next field. */
    int field = 3;
    for (const char *p = fields; *p != '\0'; p++) {
        if (*p != ' ')
            continue;
        field++;
        if (field == 22 || field == 52) {
            uint64_t v = 0;
            const char *q = p + 1;
            for (; *q >= '0' && *q <= '9'; q++)
                v = v * 10 + (uint64_t)(*q - '0');
            if (q == p + 1)
                continue;
            if (field == 22) {
                start = v;
                have_start = 1;
            } else if (v <= 0xffff) {
                *exit_code = (int)v;
                break;
            }
        }
    }
    if (!have_start)
        return OSP__COLLECTOR_UNKNOWN;
    if (start != started)
        return OSP__COLLECTOR_ENDED; /* another process has the pid now */
    if (*state == 'Z' || *state == 'X')
        return OSP__COLLECTOR_ENDED;
    if (*state == 'T' || *state == 't')
        return OSP__COLLECTOR_STOPPED;
    return OSP__COLLECTOR_RUNNING;
}
