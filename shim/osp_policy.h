/* osp_policy.h — layer 2 of the shim (see osp_base.h for the list): the sampling policy, as
 * pure functions of their arguments (policy.c). What rate a run samples at, how many sampling
 * periods of CPU time a running instant pays for, how many periods a wait is worth, and when
 * a thread's next sample is due; which collector a forked child greets. No state, no system call:
 * unit-tested case by case (tests/test-shim.c). Uses nothing of the shim's.
 */
#ifndef OSP_POLICY_H
#define OSP_POLICY_H

#include <stdint.h>

/* OSPREY_PROFILE_HZ: the default, and the clamp. */
#define OSP__DEFAULT_RATE 997u
#define OSP__MIN_RATE     10u
#define OSP__MAX_RATE     10000u

/* Parse OSPREY_PROFILE_HZ: clamped to 10..10000, default 997; *bad 1 for a non-number (the
 * default is used), 2 for a number the clamp changed, else 0. */
uint32_t osp__parse_rate(const char *text, int *bad);
/* The sampling period in ns of a rate in Hz (0 stands for the default rate). */
uint64_t osp__period_of_rate(uint32_t rate_hz);

/* One ON_CPU sample per sampling period of the thread's CPU time, as perf's cpu-clock counts:
 * a credit of CPU time not yet paid for by samples. */
struct osp__credit {
    uint64_t paid_ns; /* CPU time covered by ON_CPU samples so far (the thread's CPU clock) */
};

/* Most CPU time one sample may stand for (in ns, and at least 16 periods); older CPU time
 * beyond it is dropped rather than charged to a stack that did not spend it. The CPU-time
 * timer catches a running thread within a few kernel ticks (4 ms each at 250 Hz), far inside
 * it, so this drops CPU time only after a stall. */
#define OSP__MAX_WEIGHT_NS 100000000u
#define OSP__MAX_WEIGHT    16u
/* The most periods one sample may stand for: OSP__MAX_WEIGHT_NS of CPU time, at least
 * OSP__MAX_WEIGHT periods. A pure function. */
uint64_t osp__credit_cap(uint64_t period_ns);
/* The credit rule: with the thread's CPU clock at cpu_ns, how many periods are due now (0 when
 * less than half a period is unpaid; rounding, so a thread that lives two periods gets two
 * samples on average). Pays them. *needed_ns receives the CPU time until the next one is due.
 * Async-signal-safe. */
uint32_t osp__credit_take(struct osp__credit *c, uint64_t cpu_ns, uint64_t period_ns,
                          uint64_t *needed_ns);
/* The credit rule at an instant the thread did not reach at random: the way out of a system
 * call, where signals that waited for the call land. Pays what osp__credit_take would, but at
 * most the periods of the ran_ns of CPU time used since the thread's clock was last read (at
 * least one): older credit was spent elsewhere, while the timers missed it (a reader whose
 * runs fell between the kernel's ticks for 30 ms under load paid 21 periods to read at once),
 * and stays for a sample at a running instant. *needed_ns is 0 when credit stays due.
 * Async-signal-safe. */
uint32_t osp__credit_take_recent(struct osp__credit *c, uint64_t cpu_ns, uint64_t ran_ns,
                                 uint64_t period_ns, uint64_t *needed_ns);
/* The CPU time until the next sample is due (the credit reaches half a period), paying
 * nothing: a CPU clock behind what is paid (a clock read before the payment) needs more.
 * Async-signal-safe. */
uint64_t osp__credit_needed(const struct osp__credit *c, uint64_t cpu_ns, uint64_t period_ns);
/* A thread's recent share of a CPU, in parts per 1024 (1024 when it used all of the wall
 * time, or when no wall time passed). Async-signal-safe. */
uint32_t osp__cpu_share(uint64_t wall_ns, uint64_t used_ns);
/* When a thread with this share of a CPU (parts per 1024, 1..1024) will have used needed_ns of
 * CPU time, from now_ns. Async-signal-safe. */
uint64_t osp__due_time(uint64_t now_ns, uint64_t needed_ns, uint32_t share_1024);
/* How many periods a wait from (t0_ns, cpu0_ns) to (t1_ns, cpu1_ns) stands for: its wall
 * time minus the CPU time used meanwhile, rounded to whole periods (0: too short to record);
 * clocks that went backwards count as no time. Async-signal-safe. */
uint32_t osp__wait_weight(uint64_t t0_ns, uint64_t t1_ns, uint64_t cpu0_ns, uint64_t cpu1_ns,
                          uint64_t period_ns);
/* The same, with the rounding carried from one wait of a thread to its next in *carry_ns
 * (start at 0; it stays within half a period either way): waits shorter than half a period
 * are counted, and a thread's waits add up to their length however each one rounds (100
 * naps of 15 ms at 100 Hz were 2 periods each, 2.0 s for 1.5 s). Async-signal-safe. */
uint32_t osp__wait_weight_carry(uint64_t t0_ns, uint64_t t1_ns, uint64_t cpu0_ns, uint64_t cpu1_ns,
                                uint64_t period_ns, int64_t *carry_ns);
/* The weight of a wait a call timed (osp__timed_call_end), in periods: the sampling points a
 * period apart that fall in it, along its site's own time line of waits (*until_ns: how long
 * until the site's next point, in (0, period]; a new site's drawn uniformly, so that each wait
 * has its length in periods in expectation whatever its order among the site's waits). A site's
 * waits add up to their length within a period, two sites of a thread are weighed apart (a
 * thread's carry rounded to the nearest period gave all the rounding of short waits
 * alternating between two sites to one of them), a wait of a period or more weighs one at
 * least, and most short waits weigh 0 and need no stack. Async-signal-safe. */
uint32_t osp__call_wait_weight(uint64_t length_ns, uint64_t period_ns, uint64_t *until_ns);

/* Which collector a forked child greets (shim/README.md, "Forked children"): the one whose ring
 * is `own` (its parent's) once that has attached (`own_attached`), or where the parent greeted
 * no other (`greeted`, the ring whose collector the parent's new images greet, NULL or `own`);
 * else `greeted`, the collector that took the parent's own greeting, which answers: a daemon's
 * grandchild, forked by a middle process whose collector has not started and never will (it
 * ends at once), is not left to that process's socket. *attached: whether the collector chosen
 * answers now (the child's answer is then looked for later, not waited for at the fork).
 * Async-signal-safe. */
const char *osp__fork_greets(const char *own, int own_attached, const char *greeted, int *attached);

/* What the exit finds of the collector it waits for (exit.c, shim/README.md "The exit's wait
 * for its collector"). */
enum osp__collector_seen {
    OSP__COLLECTOR_UNKNOWN = 0, /* nothing to go by: waited for as long as the limit */
    OSP__COLLECTOR_RUNNING,     /* there and not stopped */
    OSP__COLLECTOR_STOPPED,     /* stopped by a signal (SIGSTOP: state T) or a debugger (t) */
    OSP__COLLECTOR_ENDED,       /* gone: ended (a zombie too), or its pid another process's */
};
/* What /proc/PID/stat's fields after comm (`fields`, from the state, field 3, on) say of the
 * collector whose start time (field 22) is `started`: ENDED for a zombie, or when the start
 * time is another (the collector ended and its pid was taken since); else STOPPED or RUNNING
 * by the state. *state: the state letter; *exit_code: field 52 (a zombie's wait status), or
 * -1. UNKNOWN for fields that do not parse, or `started` 0 (a collector that does not say).
 * Async-signal-safe. */
enum osp__collector_seen osp__collector_seen(const char *fields, uint64_t started, char *state,
                                             int *exit_code);
/* How long the collector may stay stopped before the exit no longer waits for it (ns): a
 * stop that ends within it (a debugger's breakpoint, a checkpoint) is waited through. */
#define OSP__COLLECTOR_STOPPED_NS 1000000000ull

#endif /* OSP_POLICY_H */
