/* ospd_ptrace_source.h — the attach's sampler where perf events are refused (ptrace-source.c):
 * each thread that ran since the last round is stopped for an instant by ptrace and its
 * registers and stack top read from outside; a blocked thread's stack is read once where it
 * blocks from /proc without stopping it. The same unwind rows walk the copies (stack-walk.c).
 * The blocked threads' sites are read the same way for the perf-event sampler too.
 */
#ifndef OSPD_PTRACE_SOURCE_H
#define OSPD_PTRACE_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ospd.h"

#define OSPD_PTRACE_MAX_HZ 100u /* the rate the ptrace sampler holds (daemon/README.md) */

/* One thread of the target, as the rounds have seen it. */
struct ospd_ptrace_thread {
    int32_t tid;
    int64_t thread;          /* the collector's, registered at its first sample; -1 before */
    uint64_t run_ns;         /* schedstat: CPU time so far */
    uint64_t delay_ns;       /* schedstat: time runnable, waiting for a CPU */
    uint64_t seen_ns;        /* when run_ns was read */
    uint64_t cpu_credit_ns;  /* CPU time not yet paid as on-CPU periods */
    int64_t sys_credit_ns;   /* the part of it spent in the kernel (paid at stops in a syscall) */
    uint64_t sys_ns;         /* its CPU time in the kernel so far, as the ticks split run_ns */
    uint64_t utime0, stime0; /* stat's user and system ticks when first seen (0: started later) */
    int64_t wait_credit_ns;  /* blocked time not yet paid as waiting periods */
    uint64_t site_run_ns;    /* run_ns when the site was read (it ran since: read again) */
    int64_t site;            /* the interned stack where it blocks, or -1 */
    int64_t last_stack;      /* its latest on-CPU stack in user code, or -1 */
    int64_t last_sys_stack;  /* its latest on-CPU stack stopped in a system call, or -1 */
    uint64_t start_run_ns;   /* run_ns when the window began (or 0 when it started later) */
    bool seen;               /* in /proc/PID/task at the latest round */
    bool blocked_at_start;   /* blocked when the window began, its site read then */
    bool interrupted;        /* seized and asked to stop: its stop not taken yet */
};

struct ospd_ptrace_source {
    int32_t pid;
    uint64_t period_ns;
    const void *tables; /* the unwind rows (proto/osp_unwind.h), or NULL */
    uint64_t tables_size;
    struct ospd_ptrace_thread *threads;
    uint32_t count, cap;
    uint8_t *stack;    /* one copy of a stack top, OSPD_PERF_STACK_BYTES */
    bool stop_threads; /* the ptrace sampler; false: the blocked threads' sites only */
    bool stop_all;     /* every thread at every round, as py-spy (OSPREYD_SAMPLER=ptrace-all) */
    timer_t guard;     /* ends a wait for a stop that does not come (SIGALRM to this thread) */
    bool has_guard, guard_armed;
    uint64_t start_ns;
    /* Figures for the raw file and the benchmarks. */
    uint64_t cpu_ns;     /* CPU time the threads used in the window (schedstat) */
    uint64_t stops;      /* threads stopped for a sample */
    uint64_t stopped_ns; /* their time stopped, summed, from the interrupt to the detach */
    uint64_t not_seized; /* a thread another tracer holds, or gone meanwhile */
    uint64_t rounds, sites;
};

/* Get ready to sample pid at rate_hz (stop_threads: stop the running threads by ptrace; else
 * read only the blocked threads' sites, beside the perf events). 0 or -ENOMEM. */
int ospd_ptrace_open(struct ospd_ptrace_source *s, int32_t pid, uint32_t rate_hz,
                     bool stop_threads);
/* The window begins: every thread's CPU time so far, and the site of each blocked one. */
void ospd_ptrace_begin(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns);
/* One round: the threads that ran sampled (stop_threads), the blocked ones paid as waiting at
 * their sites; new threads from /proc/PID/task followed. */
void ospd_ptrace_round(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns);
/* Beside perf events: each thread blocked since the window began, which no event sees,
 * waits at its site for the time since it was last paid (the stream calls it every batch,
 * the end once). A thread that has run since is the events' from then on. */
void ospd_ptrace_blocked(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns);
/* The window ends: the credit left paid (a thread that never ran, blocked all the window,
 * waits there at its site for the whole of it). */
void ospd_ptrace_end(struct ospd_ptrace_source *s, struct ospd_collector *c, uint64_t now_ns);
void ospd_ptrace_close(struct ospd_ptrace_source *s);

#endif /* OSPD_PTRACE_SOURCE_H */
